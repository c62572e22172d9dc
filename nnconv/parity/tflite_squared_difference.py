"""TFLite's int8 SQUARED_DIFFERENCE, as one step in place of the five NNAPI operations nnconv lowers it to:
what `verify`'s rerun computes to prove that a difference is arithmetic only (tflite_arithmetic.py), never an
NNAPI semantics.

int8 SQUARED_DIFFERENCE lowers as DEQUANTIZE(x), DEQUANTIZE(y) -> SUB -> MUL(d, d) -> QUANTIZE: the exact
square rounded once (`SquaredDifference.lower`, nnconv/lowering/rules/elementwise/binary.py). TFLite's int8
kernel works in fixed point instead: each input offset and shifted left 7, scaled by
MultiplyByQuantizedMultiplierSmallerThanOneExp with s_i / (2 max(s_x, s_y)), the integer difference squared,
then scaled by (2 max)^2 / (2^14 s_out) the same way, plus the output zero point. Measured on vit (AI Edge
Quantizer static int8): 1-4 of 544 values per op 1 LSB apart alone; computed this way, 0 at each of its four
SQUARED_DIFFERENCEs and 0 LSB at the model output.

The step is found by the lowering's dataflow, not its order: a QUANTIZE of MUL(d, d), d = SUB of two
DEQUANTIZEs, all five from one TFLite operator, each intermediate read inside the group alone. Another form
(TFLite's NNAPI delegate lowers it otherwise) keeps NNAPI's kernels; `verify` then names the op without
having recomputed it (tests/parity/test_tflite_arithmetic_ops.py checks that the rule's form is found).
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
STEP_NAME = "SQUARED_DIFFERENCE (TFLite's arithmetic)"


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


def _step(call: KernelCall) -> list[np.ndarray]:
    return [tflite_squared_difference(call.tensor(0), call.tensor(1), call.in_operands[0], call.in_operands[1],
                                      call.out_operands[0])]


def squared_difference_steps(sg: Subgraph, source_ops: frozenset[int]) -> list[Fusion]:
    """One step per int8 SQUARED_DIFFERENCE of `source_ops` (TFLite operator indexes) lowered in nnconv's
    float form (the module docstring), at its QUANTIZE's place, reading x and y."""
    if not source_ops:
        return []
    ops = sg.operations
    producer = {o: k for k, op in enumerate(ops) for o in op.outputs}
    readers: dict[int, set[int]] = {}
    for k, op in enumerate(ops):
        for i in op.inputs:
            readers.setdefault(i, set()).add(k)
    keep = set(sg.output_indexes)

    def made_by(operand: int, op_type: OperationType, source: int) -> int | None:
        """The operation writing `operand` when it is `op_type` from TFLite operator `source`."""
        k = producer.get(operand)
        return k if k is not None and ops[k].type is op_type and ops[k].source_op == source else None

    steps = []
    for q, quantize in enumerate(ops):
        source = quantize.source_op
        if quantize.type is not OperationType.QUANTIZE or source not in source_ops or not quantize.inputs \
                or not is_quant8(sg.operands[quantize.outputs[0]].type):
            continue
        mul = made_by(quantize.inputs[0], OperationType.MUL, source)
        if mul is None or len(set(ops[mul].inputs[:2])) != 1:
            continue
        sub = made_by(ops[mul].inputs[0], OperationType.SUB, source)
        if sub is None:
            continue
        dq_x, dq_y = (made_by(i, OperationType.DEQUANTIZE, source) for i in ops[sub].inputs[:2])
        if dq_x is None or dq_y is None or dq_x == dq_y:
            continue
        group = {dq_x, dq_y, sub, mul, q}
        inner = [ops[k].outputs[0] for k in (dq_x, dq_y, sub, mul)]
        if any(t in keep or not readers.get(t, set()) <= group for t in inner):
            continue  # an intermediate someone else reads must exist: left to NNAPI's kernels
        steps.append(Fusion(absorbed=tuple(sorted((dq_x, dq_y, sub, mul))), at=q,
                            inputs=(ops[dq_x].inputs[0], ops[dq_y].inputs[0]), fn=_step, name=STEP_NAME))
    return steps
