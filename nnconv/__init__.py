"""nnconv: TFLite models to Android NNAPI graphs, offline compatibility reports and numerical parity.

    import nnconv
    model, report = nnconv.convert("model.tflite", api_level=30)
    outputs = nnconv.Executor(model).run({"input": x})

    prepared = nnconv.prepare("model.tflite", api_level=30)   # read and rewritten once
    prepared.report, prepared.plan(), prepared.whole()         # checked, planned, lowered on demand
"""

from nnconv.errors import ConversionError, InputDataError, ModelFormatError, NnconvError
from nnconv.runtime.executor import Executor
from nnconv.lowering.convert import ConversionOptions, ConversionResult, Report
from nnconv.nnapi.levels import DEFAULT_API_LEVEL
from nnconv.pipeline import PreparedConversion, check_model, convert, prepare
from nnconv.version import __version__


def verify(model, api_level: int = DEFAULT_API_LEVEL, **options):
    """Verifies one model as `nnconv verify` does and returns its report (`.passed`, `.to_json()`).
    `options` are the fields of `nnconv.parity.session.VerifyOptions` (seed, inputs, image, input_range,
    kernels, per_op, relax_fp16, allow_partial, overrides, reference, conversion, executor_options)."""
    from nnconv.parity.session import VerifyOptions, verify as verify_one
    return verify_one(model, VerifyOptions(api_level=api_level, **options))


__all__ = ["ConversionError", "ConversionOptions", "ConversionResult", "Executor", "InputDataError",
           "ModelFormatError", "NnconvError", "PreparedConversion", "Report", "check_model", "convert", "prepare",
           "verify", "__version__"]
