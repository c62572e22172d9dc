"""Float tensors that are a DEQUANTIZE of a quantized one: their values are whole steps of the quantized
tensor's scale, so a difference there is a difference in that tensor, and `verify` judges it in its LSB.

A full-integer model with float inputs and outputs (`QUANTIZE -> int8 ops -> DEQUANTIZE`) ends in such an
output. Every 1 LSB step of the int8 tensor before the DEQUANTIZE (TFLite's optimized kernels rounding a
value one step differently, NNAPI's own arithmetic) becomes a float difference of one scale, far beyond the
float tolerance (1e-4 of the output's magnitude) yet within the quantized one: the same pool with an int8
output passes. So the tolerance of such a tensor is the quantized tolerance in steps of that scale, plus
the float tolerance for the DEQUANTIZE's own float32 rounding (parity/tolerances.py `Tolerance.lsb_scale`).
"""

from __future__ import annotations

from dataclasses import dataclass

from nnconv.tflite.ir import Subgraph
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

_QUANTIZED = {TensorType.INT8: "int8", TensorType.UINT8: "uint8", TensorType.INT16: "int16"}


@dataclass(frozen=True)
class DequantizedFrom:
    """The quantized tensor a float tensor is the DEQUANTIZE of, and the op that computed it."""

    tensor: str
    dtype: str
    scale: float
    producer: str  # "#1 AVERAGE_POOL_2D", or "the model input"

    def describe(self) -> str:
        return f"{self.dtype} '{self.tensor}' ({self.producer}, scale {self.scale:.4g})"


def dequantized_sources(sg: Subgraph) -> dict[int, DequantizedFrom]:
    """Per float tensor index of `sg` computed by a DEQUANTIZE of a per-tensor quantized activation (not a
    constant: dequantized weights are not judged per LSB), what it dequantizes."""
    producer = {t: op for op in sg.operators for t in op.outputs if t >= 0}
    out: dict[int, DequantizedFrom] = {}
    for op in sg.operators:
        if op.builtin is not BuiltinOperator.DEQUANTIZE or not op.inputs or op.inputs[0] < 0 or not op.outputs:
            continue
        src = sg.tensors[op.inputs[0]]
        q = src.quantization
        if src.type not in _QUANTIZED or src.data is not None or q is None or len(q.scale) != 1 or \
                not q.scale[0] > 0:
            continue
        made_by = producer.get(src.index)
        out[op.outputs[0]] = DequantizedFrom(src.name or f"tensor{src.index}", _QUANTIZED[src.type],
                                             float(q.scale[0]),
                                             f"#{made_by.index} {made_by.name}" if made_by else "the model input")
    return out
