"""ATAN2: no NNAPI operation; a range-reduced odd polynomial of elementwise operations."""

from __future__ import annotations

import math

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import F32, check_common, scalar_tensor
from nnconv.nnapi.enums import FuseCode, OperandType, OperationType
from nnconv.tflite.schema_enums import BuiltinOperator

# atan(u) ~ u + u * z * (C1 + z * (C2 + z * (C3 + z * C4))), z = u^2, for |u| <= tan(pi / 8): the float32
# minimax coefficients of the Cephes library's atanf (relative error ~1e-7 on that interval).
ATAN_COEFFICIENTS = (-3.33329491539e-1, 1.99777106478e-1, -1.38776856032e-1, 8.05374449538e-2)
TAN_PI_8 = math.tan(math.pi / 8)


@lowering_rule(BuiltinOperator.ATAN2)
class Atan2(Rule):
    """TFLite ATAN2(y, x) -> a composition of NNAPI elementwise operations (API 29); NNAPI has no atan.

    With t = min(|x|, |y|) / max(|x|, |y|) in [0, 1] (max floored at the smallest float, so that
    atan2(0, 0) computes t = 0), atan(t) comes from the polynomial above, on t itself or, for
    t > tan(pi/8), as pi/4 + atan((t - 1) / (t + 1)). The octant is then restored as std::atan2 does:
    pi/2 - a where |y| > |x|, pi - a where x < 0, -a where y < 0. Tolerance: within 3e-7 rad of TFLite's
    std::atan2 (measured over every octant, 0 and the axes; the float policy allows 1e-5 + 1e-4 * pi).
    Signed zeros are not told apart (atan2(+0, -0) is pi in IEEE and 0 here; atan2(-0, -1) is -pi and pi
    here): NNAPI's comparisons treat -0 as 0. The int8 form TensorFlow emits is DEQUANTIZE -> float ATAN2
    -> QUANTIZE, each op lowered on its own; dequantized zeros are +0.
    """

    nnapi_ops = (OperationType.ADD, OperationType.ABS, OperationType.MINIMUM, OperationType.MAXIMUM,
                 OperationType.DIV, OperationType.SUB, OperationType.MUL, OperationType.GREATER,
                 OperationType.LESS, OperationType.SELECT, OperationType.NEG)
    min_api_level = 29
    dtypes = ("float32",)
    constraints = "float32; rank <= 4; within 3e-7 rad (signed zeros as +0)"
    beyond_delegate = True

    def check(self, c: CheckContext) -> None:
        if not check_common(c, 2, (F32,)):
            return
        c.require_operation((OperationType.ABS, OperationType.MINIMUM, OperationType.MAXIMUM, OperationType.SELECT),
                            "ATAN2 (polynomial of ABS / MINIMUM / MAXIMUM / SELECT)")
        y, x = c.input(0), c.input(1)
        if y.shape != x.shape:  # TFLite's kernel refuses it too (its Prepare); SELECT would need equal shapes
            c.refuse(Code.MALFORMED, f"ATAN2 of shapes {list(y.shape)} and {list(x.shape)}: TFLite's kernel "
                     "takes equal shapes only")

    def lower(self, c: LowerContext) -> None:
        out = c.output_operand(0)
        dims = list(c.info(out).dimensions)
        none = c.i32(FuseCode.NONE)

        def binary(op: OperationType, a: int, b: int) -> int:
            r = c.temp_like(out)
            c.emit(op, [a, b, none] if op in (OperationType.ADD, OperationType.SUB, OperationType.MUL,
                                             OperationType.DIV) else [a, b], [r])
            return r

        def unary(op: OperationType, a: int) -> int:
            r = c.temp_like(out)
            c.emit(op, [a], [r])
            return r

        def test(op: OperationType, a: int, b: int) -> int:
            r = c.temp(OperandType.TENSOR_BOOL8, dims)
            c.emit(op, [a, b], [r])
            return r

        def select(cond: int, a: int, b: int) -> int:
            r = c.temp_like(out)
            c.emit(OperationType.SELECT, [cond, a, b], [r])
            return r

        def const(v: float) -> int:
            return scalar_tensor(c, v)

        y, x = c.input_operand(0), c.input_operand(1)
        ay, ax = unary(OperationType.ABS, y), unary(OperationType.ABS, x)
        low, high = binary(OperationType.MINIMUM, ax, ay), binary(OperationType.MAXIMUM, ax, ay)
        high = binary(OperationType.MAXIMUM, high, const(float(np.finfo(np.float32).smallest_subnormal)))
        t = binary(OperationType.DIV, low, high)
        # range reduction: atan(t) = pi/4 + atan((t - 1) / (t + 1)) puts the argument in [-tan(pi/8), tan(pi/8)]
        big = test(OperationType.GREATER, t, const(TAN_PI_8))
        reduced = binary(OperationType.DIV, binary(OperationType.SUB, t, const(1.0)),
                         binary(OperationType.ADD, t, const(1.0)))
        u = select(big, reduced, t)
        z = binary(OperationType.MUL, u, u)
        acc = const(ATAN_COEFFICIENTS[-1])
        for coefficient in reversed(ATAN_COEFFICIENTS[:-1]):  # Horner
            acc = binary(OperationType.ADD, binary(OperationType.MUL, acc, z), const(coefficient))
        a = binary(OperationType.ADD, binary(OperationType.MUL, binary(OperationType.MUL, acc, z), u), u)
        a = select(big, binary(OperationType.ADD, a, const(math.pi / 4)), a)
        # the octant, as std::atan2 resolves it
        a = select(test(OperationType.GREATER, ay, ax), binary(OperationType.SUB, const(math.pi / 2), a), a)
        a = select(test(OperationType.LESS, x, const(0.0)), binary(OperationType.SUB, const(math.pi), a), a)
        negative_y = test(OperationType.LESS, y, const(0.0))
        c.emit(OperationType.SELECT, [negative_y, unary(OperationType.NEG, a), a], [out])
