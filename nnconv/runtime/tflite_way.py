"""TFLite's own int8 arithmetic for a composite lowering, as one executor step: what `verify` runs to prove
that a difference is arithmetic only (`ExecutionOptions.tflite_squared_difference`), never NNAPI semantics.

int8 SQUARED_DIFFERENCE lowers as DEQUANTIZE(x), DEQUANTIZE(y) -> SUB -> MUL(d, d) -> QUANTIZE: the exact
square rounded once. TFLite's int8 kernel works in fixed point instead: each input offset and shifted
left 7, scaled by MultiplyByQuantizedMultiplierSmallerThanOneExp with s_i / (2 max(s_x, s_y)), the integer
difference squared, then scaled by (2 max)^2 / (2^14 s_out) the same way, plus the output zero point.
Measured on vit (AI Edge Quantizer static int8): 1-4 of 544 values per op 1 LSB apart alone; computed
this way, 0 at each of its four SQUARED_DIFFERENCEs and 0 LSB at the model output.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Subgraph
from nnconv.nnapi.quantization import (is_quant8, multiply_by_quantized_multiplier_smaller_than_one_exp, qrange,
                                       quantize_multiplier_smaller_than_one_exp)
from nnconv.runtime.fusion import Fusion
from nnconv.runtime.kernels.registry import KernelCall

LEFT_SHIFT = 7
_COMPOSITE = (OperationType.DEQUANTIZE, OperationType.DEQUANTIZE, OperationType.SUB, OperationType.MUL,
              OperationType.QUANTIZE)


def tflite_squared_difference(x: np.ndarray, y: np.ndarray, ox: Operand, oy: Operand, out: Operand) -> np.ndarray:
    """TFLite's int8 SQUARED_DIFFERENCE of storage values x, y (broadcasting) into `out`'s quantization. The
    same arithmetic serves int8 carried as uint8 (+128 on values and zero points, below API 30): only
    differences from the zero points enter it, and the carrier's range is int8's shifted (TFLite has no
    uint8 SQUARED_DIFFERENCE)."""
    twice_max = 2.0 * float(max(np.float32(ox.scale), np.float32(oy.scale)))
    scaled = []
    for v, o in ((x, ox), (y, oy)):
        m, s = quantize_multiplier_smaller_than_one_exp(float(np.float32(o.scale)) / twice_max)
        scaled.append(multiply_by_quantized_multiplier_smaller_than_one_exp(
            (v.astype(np.int64) - o.zero_point) * (1 << LEFT_SHIFT), m, s))
    diff = scaled[0] - scaled[1]
    m, s = quantize_multiplier_smaller_than_one_exp(twice_max * twice_max
                                                    / ((1 << 2 * LEFT_SHIFT) * float(np.float32(out.scale))))
    lo, hi = qrange(out.type)
    return np.clip(multiply_by_quantized_multiplier_smaller_than_one_exp(diff * diff, m, s) + out.zero_point,
                   lo, hi).astype(out.dtype)


def _squared_difference_step(call: KernelCall) -> list[np.ndarray]:
    return [tflite_squared_difference(call.tensor(0), call.tensor(1), call.in_operands[0], call.in_operands[1],
                                      call.out_operands[0])]


def squared_difference_fusions(sg: Subgraph, source_ops: frozenset[int]) -> list[Fusion]:
    """One step per int8 SQUARED_DIFFERENCE composite whose TFLite operator is in `source_ops`: its five
    operations, consecutive as the lowering emits them, at the QUANTIZE's place, reading x and y."""
    ops = sg.operations
    fusions = []
    for k in range(len(ops) - len(_COMPOSITE) + 1):
        group = ops[k:k + len(_COMPOSITE)]
        if tuple(op.type for op in group) != _COMPOSITE or group[0].source_op not in source_ops \
                or any(op.source_op != group[0].source_op for op in group):
            continue
        dq_x, dq_y, sub, mul, quantize = group
        if sub.inputs[:2] != [dq_x.outputs[0], dq_y.outputs[0]] or mul.inputs[:2] != [sub.outputs[0]] * 2 \
                or quantize.inputs[0] != mul.outputs[0] \
                or not is_quant8(sg.operands[quantize.outputs[0]].type):
            continue
        fusions.append(Fusion(absorbed=tuple(range(k, k + 4)), at=k + 4, inputs=(dq_x.inputs[0], dq_y.inputs[0]),
                              fn=_squared_difference_step, name="SQUARED_DIFFERENCE (TFLite's arithmetic)"))
    return fusions
