"""Options `check` and `verify` share for many models: `--shard K/N` (this CI job's share of the models),
`--junit FILE` (a JUnit XML report beside the usual output), `--scheduler ADDRESS` (the work as one task per
model and level on a Dask distributed cluster, nnconv/parallel.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import click

from nnconv.errors import NnconvError


def _shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, int] | None:
    from nnconv.tflite.model_paths import parse_shard
    if value is None:
        return None
    try:
        return parse_shard(value)
    except NnconvError as e:
        raise click.BadParameter(str(e).split(": ", 1)[-1], param_hint="--shard") from None


def scale_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`--shard K/N` (read back as a (K, N) tuple or None), `--junit FILE` and `--scheduler ADDRESS`."""
    fn = click.option("--scheduler", "scheduler", default=None, metavar="ADDRESS",
                      help="Run the models (one task per model and level) on the Dask distributed cluster whose "
                           "scheduler is at ADDRESS (tcp://host:8786; pip install 'nnconv[distributed]'); the "
                           "report equals a local run's.")(fn)
    fn = click.option("--junit", "junit", type=click.Path(), default=None,
                      help="Also write a JUnit XML report: one testcase per model (and level), failed or in "
                           "error with the one-line reason.")(fn)
    return click.option("--shard", "shard", default=None, metavar="K/N", callback=_shard,
                        help="Take only shard K of N of the models (1 <= K <= N): a split by path stable "
                             "across runs and machines, for CI jobs sharing a folder.")(fn)


@dataclass(frozen=True)
class Batch:
    """What `--shard` and `--junit` asked of one run."""

    shard: tuple[int, int] | None = None
    junit: str | None = None
    scheduler: str | None = None

    def write_junit(self, suite: str, cases: Sequence[Any]) -> None:
        if self.junit is not None:
            from nnconv.report.junit import write_junit
            write_junit(self.junit, suite, cases)
