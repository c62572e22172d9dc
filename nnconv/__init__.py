"""nnconv: TFLite models to Android NNAPI graphs, offline compatibility reports and numerical parity.

    import nnconv
    model, report = nnconv.convert("model.tflite", api_level=30)
    outputs = nnconv.Executor(model).run({"input": x})
    outputs = nnconv.Executor(model).run_batch({"input": xs})  # xs: (N, *input shape); == N runs, bit for bit

    prepared = nnconv.prepare("model.tflite", api_level=30)   # read once; TFLite's NNAPI delegate's decisions
    prepared.report, prepared.plan(), prepared.whole()         # checked, planned, lowered on demand
    nnconv.prepare("model.tflite", 30, nnconv.ConversionOptions(target=nnconv.Target.NNCONV))  # nnconv's own
    on_device = nnconv.check_devices("model.tflite", ["armnn-hal1.3"], api_level=29)  # check --device
    result = nnconv.rewrite_model("model.tflite", api_level=30)  # nnconv rewrite: result.data, result.after

The converter and the executor are imported on first use (module `__getattr__`), so that `import nnconv`
stays instant: the command line's entry (`nnconv.__main__`) must be running its Ctrl-C handler before
numpy and the rules load.
"""

from __future__ import annotations

from typing import Any

from nnconv.errors import ConversionError, InputDataError, ModelFormatError, NnconvError
from nnconv.nnapi.levels import DEFAULT_API_LEVEL
from nnconv.targets import Target
from nnconv.version import __version__


def verify(model, api_level: int = DEFAULT_API_LEVEL, **options):
    """Verifies one model as `nnconv verify` does and returns its report (`.passed`, `.to_json()`).
    `options` are the fields of `nnconv.parity.session.VerifyOptions` (seed, inputs, image, input_range,
    kernels, per_op, relax_fp16, allow_partial, overrides, reference, conversion, executor_options)."""
    from nnconv.parity.session import VerifyOptions, verify as verify_one
    return verify_one(model, VerifyOptions(api_level=api_level, **options))


def check_devices(model, devices, api_level: int = DEFAULT_API_LEVEL, options=None):
    """`nnconv check --device` as a function. `model`: a path or the .tflite bytes; `devices`: shipped profile
    names (`nnconv devices`), profile files or folders of them. Returns a `DeviceModelCheck`: `.check` is
    the spec report, and per profile `.devices[i].ops` gives each TFLite op's status on that device
    ("taken", "refused by device" with `.reason`, "not lowered" at this level, "folded") and
    `.devices[i].plan` the partitions TFLite's delegate would form there with NNAPI's CPU fallback
    disallowed; `.to_json()` is the object `check --device --format json` prints. `options`: a
    `ConversionOptions`."""
    from nnconv.devices.device_check import check_with_devices
    from nnconv.devices.profile import resolve_profiles
    from nnconv.lowering.convert import target_level
    return check_with_devices(model, target_level(api_level), resolve_profiles(list(devices)), options)


def rewrite_model(model, api_level: int = DEFAULT_API_LEVEL, input_shapes=(), seed: int = 0, inputs=None):
    """`nnconv rewrite` as a function: the model (a path or the .tflite bytes) rewritten so TFLite's NNAPI
    delegate takes more of it at `api_level`. Returns a `RewriteResult`: `.before` / `.after` (the delegate's
    view), `.steps`, `.changes` (op by op), `.proof` (TFLite's outputs compared) and `.data`, the rewritten
    model's bytes (None when nothing helps); write `.data` only when `.passed`. `input_shapes`: (name, shape)
    pairs as `--input-shape`; `inputs`: arrays by input name for the proof instead of seeded ones."""
    from nnconv.retarget.engine import rewrite_model as run
    return run(model, int(api_level), tuple(input_shapes), seed, inputs)


__all__ = ["ConversionError", "ConversionOptions", "ConversionResult", "Executor", "InputDataError",
           "ModelFormatError", "NnconvError", "PreparedConversion", "Report", "Target", "check_devices", "check_model",
           "convert", "prepare", "rewrite_model", "verify", "__version__"]


def __getattr__(name: str) -> Any:
    """The converter's and the executor's names, imported on first use (see the module docstring)."""
    if name == "Executor":
        from nnconv.runtime.executor import Executor
        return Executor
    if name in ("ConversionOptions", "ConversionResult", "Report"):
        from nnconv.lowering.check_report import ConversionResult, Report
        from nnconv.lowering.convert import ConversionOptions
        return {"ConversionOptions": ConversionOptions, "ConversionResult": ConversionResult, "Report": Report}[name]
    if name in ("PreparedConversion", "check_model", "convert", "prepare"):
        from nnconv.pipeline import PreparedConversion, check_model, convert, prepare
        return {"PreparedConversion": PreparedConversion, "check_model": check_model, "convert": convert,
                "prepare": prepare}[name]
    raise AttributeError(f"module 'nnconv' has no attribute {name!r}")
