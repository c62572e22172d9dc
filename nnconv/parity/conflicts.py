"""Options of `nnconv verify` that do not go together: one table of rules by command-line name, which the
command line reads from the options it was given (before it reads any file, and again once it has listed
the models) and `VerifyOptions.check` from its fields (library callers)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import AbstractSet


# Not an option: the command line verifies several models (several given, a folder, a shard, a cluster).
SEVERAL_MODELS = "MODELS..."


@dataclass(frozen=True)
class _Rule:
    """Options that do not go together: when any of `given` is set, none of `excludes` may be, and one of
    `needs` must be (when there are any)."""

    given: frozenset[str]
    message: str
    excludes: frozenset[str] = frozenset()
    needs: frozenset[str] = frozenset()

    def broken(self, options: AbstractSet[str]) -> bool:
        return bool(self.given & options) and bool(self.excludes & options or self.needs and
                                                   not self.needs & options)


def _rule(given: str, message: str, excludes: str = "", needs: str = "") -> _Rule:
    """A rule whose option names are written apart by spaces."""
    return _Rule(frozenset(given.split()), message, frozenset(excludes.split()), frozenset(needs.split()))


# Every pair of `verify` options that exclude each other; the first broken rule is the one reported.
VERIFY_RULES = (
    _rule("--inputs", "--inputs and --seed exclude each other: the inputs are given, nothing is random",
          excludes="--seed"),
    _rule("--image", "--image excludes --inputs and --seed", excludes="--inputs --seed"),
    _rule("--inputs", "--input-range applies to random inputs, not to --inputs", excludes="--input-range"),
    _rule("--reference", "--reference compares outputs only: it excludes --per-op and --relax-fp16",
          excludes="--per-op --relax-fp16"),
    _rule("--node-data", "--node-data needs --per-op (the overlay shows each op's error)", needs="--per-op"),
    _rule("--dataset", "--dataset gives the inputs: it excludes --inputs, --image, --seed, --reference and "
                       "--relax-fp16", excludes="--inputs --image --seed --reference --relax-fp16"),
    _rule("--samples", "--samples needs --dataset", needs="--dataset"),
    _rule("--save-repro", "--save-repro needs --per-op (the repro is the first divergent op)", needs="--per-op"),
    _rule("--input-layout --input-mean --input-std", "--input-layout, --input-mean and --input-std say how "
          "images become inputs: they need --image or --dataset", needs="--image --dataset"),
    _rule(SEVERAL_MODELS, "--inputs, --image, --reference, --save-reference, --save-repro and --node-data take "
                          "one model",
          excludes="--inputs --image --reference --save-reference --save-repro --node-data"),
)


def option_conflicts(given: AbstractSet[str]) -> list[str]:
    """What `VERIFY_RULES` says of the options `given` (command-line names), first broken rule first."""
    return [rule.message for rule in VERIFY_RULES if rule.broken(given)]
