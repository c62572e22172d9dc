"""TFLite side: reader (flatbuffer -> IR), IR dataclasses, typed builtin options and a test-model builder."""

from nnconv.tflite.ir import Operator, Quantization, Subgraph, Tensor, TfliteModel
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import ActivationFunctionType, BuiltinOperator, Padding, TensorType

__all__ = ["ActivationFunctionType", "BuiltinOperator", "Operator", "Padding", "Quantization", "Subgraph",
           "Tensor", "TensorType", "TfliteModel", "read_model"]
