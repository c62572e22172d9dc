"""nnconv: TFLite models to Android NNAPI graphs, offline compatibility reports and numerical parity.

    import nnconv
    model, report = nnconv.convert("model.tflite", api_level=30)
    outputs = nnconv.Executor(model).run({"input": x})
"""

from nnconv.errors import ConversionError, InputDataError, ModelFormatError, NnconvError
from nnconv.runtime.executor import Executor
from nnconv.lowering.convert import ConversionOptions, ConversionResult, Report, check_model, convert

__version__ = "0.1.0"

__all__ = ["ConversionError", "ConversionOptions", "ConversionResult", "Executor", "InputDataError",
           "ModelFormatError", "NnconvError", "Report", "check_model", "convert", "__version__"]
