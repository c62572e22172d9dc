"""What `nnconv verify` was asked, parsed once into a `VerifyCommand` (`from_params`, the command's `parsed`
builder): the models, what each model's verify is asked (`VerifyOptions`, nnconv/parity/session.py), and
what the command does around them (format, processes, JUnit report, files it writes). Options that do not go
together are refused by the one list of them (nnconv/parity/conflicts.py) before any file is read."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

import click
from click.core import ParameterSource

from nnconv.cli.common import (conversion_options, resolve_api_level, resolve_max_memory, warn_deprecated,
                               warn_inapplicable)
from nnconv.cli.image_options import image_preprocessing
from nnconv.cli.npz_io import load_npz
from nnconv.cli.scale import Batch

if TYPE_CHECKING:  # the parity stage is imported when verify runs
    from nnconv.parity.session import VerifyOptions


@dataclass(frozen=True)
class VerifyCommand:
    """Everything one `nnconv verify` does, parsed and checked against each other."""

    models: tuple[tuple[str, str], ...]  # (path, name): named relative to the folder given
    several: bool  # a row per model: several models, a folder, a shard or a cluster (else one model's report)
    options: "VerifyOptions"  # what each model's verify is asked, with the files it compares on read
    fmt: str
    jobs: int
    batch: Batch
    save_reference: str | None = None
    node_data: str | None = None

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> "VerifyCommand":
        """The command's click parameters, in the order their errors are reported: the level, the conflicts
        (before any file is read), the models, the warnings, then the files the options name."""
        from nnconv.parity.conflicts import SEVERAL_MODELS, option_conflicts
        from nnconv.parity.session import VerifyOptions
        from nnconv.parity.tolerances import ToleranceOverrides
        from nnconv.tflite.model_paths import named_models
        level = resolve_api_level(params["api_level"], params["feature_level"])
        preprocessing = image_preprocessing()
        given = given_options(click.get_current_context())
        _refuse(option_conflicts(given))
        shard, scheduler = params["shard"], params["scheduler"]
        models = tuple(named_models(params["models"], shard))
        several = len(models) != 1 or shard is not None or scheduler is not None or \
            any(os.path.isdir(m) for m in params["models"])
        if several:
            _refuse(option_conflicts(given | {SEVERAL_MODELS}))
        warn_deprecated(level)
        warn_inapplicable(level, relax_fp16=params["relax_fp16"])
        tolerances = (params["atol"], params["rtol"], params["max_lsb"])
        overrides = ToleranceOverrides(*tolerances) if tolerances != (None, None, None) else None
        limit = resolve_max_memory(params["max_memory"])
        conversion = conversion_options(params["fold_weights"], params["relax_fp16"], params["input_shapes"],
                                        params["target"])
        inputs_path, reference_path = params["inputs_path"], params["reference_path"]
        inputs = load_npz(inputs_path, limit) if inputs_path else None
        reference = load_npz(reference_path, limit) if reference_path else None
        options = VerifyOptions(
            api_level=level, conversion=conversion, kernels=params["kernels"], seed=params["seed"],
            input_range=params["input_range"], inputs=inputs, inputs_source=inputs_path or "", image=params["image"],
            reference=reference, reference_source=reference_path or "", per_op=params["per_op"],
            relax_fp16=params["relax_fp16"], allow_partial=params["allow_partial"], overrides=overrides,
            threads=params["threads"], executor_options={"max_memory": limit}, dataset=params["dataset"],
            samples=params["samples"], max_bytes=limit, save_repro=params["save_repro"],
            fail_on_uninformative=params["fail_on"] == "uninformative", preprocessing=preprocessing)
        return cls(models, several, options, params["fmt"], params["jobs"], Batch(shard, params["junit"], scheduler),
                   params["save_reference"], params["node_data"])


def given_options(ctx: click.Context) -> set[str]:
    """The options given on the command line, by their long names (`--inputs`), whether or not the command's
    function receives their value (`--input-mean` is gathered elsewhere)."""
    return {next((o for o in p.opts if o.startswith("--")), p.opts[0]) for p in ctx.command.params
            if isinstance(p, click.Option) and ctx.get_parameter_source(p.name) is ParameterSource.COMMANDLINE}


def _refuse(conflicts: list[str]) -> None:
    if conflicts:
        raise click.UsageError(conflicts[0])
