"""The operations of one converted model that `verify`'s rerun computes with TFLite's arithmetic instead of
NNAPI's, as the executor's replacements (nnconv/runtime/replacements.py): the executor itself runs NNAPI
and nothing else, and this is how verify tells a rounding difference from a conversion error
(parity/settle.py finds the TFLite operators concerned; the table of differences is its docstring's).

Which operation gets which kernel:

| NNAPI operation (quantized input) | when | computed with |
| --- | --- | --- |
| CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, TRANSPOSE_CONV_2D, GROUPED_CONV_2D, BATCH_MATMUL | always | NNAPI's kernel with TFLite's multipliers, and one rounding when lowered from a FULLY_CONNECTED (`tflite_requantizing`) |
| RESIZE_BILINEAR | the model has a quantized RESIZE_BILINEAR | TFLite's Q10 integer interpolation (`tflite_resize.py`) |
| ADD | lowered from a requantizing QUANTIZE | TFLite's one multiplier (`requantize`) |
| AVERAGE_POOL_2D | lowered from an int8 MEAN | TFLite's int8 mean (`int8_mean`) |
| AVERAGE_POOL_2D, uint8 output | lowered from an int8 AVERAGE_POOL_2D (carried as uint8) | NNAPI's int8 average (`signed_average`) |
| DEQUANTIZE x2, SUB, MUL, QUANTIZE | lowered from an int8 SQUARED_DIFFERENCE | one step in TFLite's fixed point (`tflite_squared_difference.py`) |
"""

from __future__ import annotations

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.model import Operation, Subgraph
from nnconv.nnapi.quantization import is_quant8
from nnconv.parity.tflite_kernels import CONV_REQUANTIZING, int8_mean, requantize, signed_average, tflite_requantizing
from nnconv.parity.tflite_resize import resize_bilinear_integer_kernel
from nnconv.parity.tflite_squared_difference import squared_difference_steps
from nnconv.runtime.fusion import Fusion
from nnconv.runtime.kernels import KERNELS
from nnconv.runtime.kernels.registry import KernelFn


class TfliteArithmetic:
    """The replacements of one converted model. Each set holds TFLite operator indexes (`Operation.source_op`)
    of the model's subgraph: `fully_connected` quantized FULLY_CONNECTEDs, `requantize` QUANTIZEs between
    quantized types, `signed_average` int8 AVERAGE_POOL_2Ds, `squared_difference` int8 SQUARED_DIFFERENCEs,
    `mean` int8 MEANs; `resize`: the model has a quantized RESIZE_BILINEAR."""

    def __init__(self, fully_connected: frozenset[int] = frozenset(), resize: bool = False,
                 requantize: frozenset[int] = frozenset(), signed_average: frozenset[int] = frozenset(),
                 squared_difference: frozenset[int] = frozenset(), mean: frozenset[int] = frozenset()) -> None:
        self.fully_connected = fully_connected
        self.resize = resize
        self.requantize = requantize
        self.signed_average = signed_average
        self.squared_difference = squared_difference
        self.mean = mean

    def kernel(self, sg: Subgraph, op: Operation) -> KernelFn | None:
        """The kernel computing `op` TFLite's way (the module docstring's table), None where NNAPI's is."""
        if not op.inputs or not is_quant8(sg.operands[op.inputs[0]].type):
            return None
        source = op.source_op
        if op.type in CONV_REQUANTIZING and op.type in KERNELS:
            return tflite_requantizing(KERNELS[op.type], source in self.fully_connected)
        if op.type is OperationType.RESIZE_BILINEAR:
            return resize_bilinear_integer_kernel if self.resize else None
        if op.type is OperationType.ADD:
            return requantize if source in self.requantize else None
        if op.type is OperationType.AVERAGE_POOL_2D:
            if source in self.mean:
                return int8_mean
            carried = sg.operands[op.outputs[0]].type is OperandType.TENSOR_QUANT8_ASYMM
            return signed_average if source in self.signed_average and carried else None
        return None

    def fusions(self, sg: Subgraph) -> list[Fusion]:
        """The int8 SQUARED_DIFFERENCEs of nnconv's float form, each one step."""
        return squared_difference_steps(sg, self.squared_difference)
