"""Helpers shared by the shape, slicing, reduction, gather and lookup rules (no rules here).

Data-movement ops copy stored values, so NNAPI (whose reference forces the output's quantization to the
input's for most of them) and TFLite agree only when the input and output share scale and zero point;
`check_same_quant` refuses otherwise, except for the rules whose TFLite kernel copies the bytes whatever
the output's parameters (`Rule.stored_values_from`: a CAST carries them). `const_ints` reads a constant or
folded integer tensor.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from nnconv.lowering.common import BOOL, F32, I8, I32, I64, U8, check_int8  # noqa: F401 (re-exported)
from nnconv.lowering.context import CheckContext
from nnconv.lowering.diagnostics import Code
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import TensorType

BASIC = (F32, U8, I8)
BASIC_I32 = (F32, U8, I8, I32)
INDEX_TYPES = (I32, I64)
# dtype names for `Rule.dtypes` (what `nnconv ops` lists)
FS = ("float32", "uint8", "int8")
FSI = ("float32", "uint8", "int8", "int32")


def quant_params(t: Tensor) -> tuple[float, int]:
    q = t.quantization
    return (q.scale[0] if q.scale else 0.0, q.zero_point[0] if q.zero_point else 0)


def same_quant(a: Tensor, b: Tensor) -> bool:
    return quant_params(a) == quant_params(b)


def check_same_quant(c: CheckContext, a: Tensor | None, b: Tensor | None, what: str = "output",
                     bitcast: bool = False) -> bool:
    """Quantized data-movement: TFLite copies stored values, so the parameters must match, unless `bitcast`
    (the rule's `stored_values_from`): then a same-type CAST carries the values (API 29: FL3 casts
    TENSOR_QUANT8_ASYMM, which carries int8 there; FL4 TENSOR_QUANT8_ASYMM_SIGNED from API 30)."""
    if a is None or b is None or a.type not in (U8, I8):
        return True
    if same_quant(a, b):
        return True
    if bitcast and b.type == a.type:
        return c.require_operation(OperationType.CAST, f"{what} '{b.name}' quantized differently from the input whose "
                                   "stored values it takes (carried over by a CAST)")
    c.refuse(Code.QUANTIZATION, f"{what} '{b.name}' has scale/zero point {quant_params(b)} but input "
             f"'{a.name}' has {quant_params(a)}; the op copies stored values, so they must match")
    return False


def check_data_movement(c: CheckContext, dtypes: Sequence[TensorType], max_rank: int = 4,
                        data: int = 0, bitcast: bool = False) -> Tensor | None:
    """The common checks of a data-movement op whose data input is `data`: dtype, rank, static shapes,
    int8 policy, and input/output quantization equality on every output (or, with `bitcast`, a level where
    a CAST can carry the stored values to an output quantized differently)."""
    x = c.input(data)
    if not c.require_dtype(x, dtypes):
        return None
    c.require_rank(x, max_rank)
    for o in c.outputs:
        c.require_rank(o, max_rank, what="output")
        check_same_quant(c, x, o, bitcast=bitcast)
    c.require_static_shapes()
    check_int8(c)
    return x


def const_ints(c: CheckContext, t: Tensor) -> list[int]:
    """A constant (or folded) integer tensor as a flat list."""
    return [int(v) for v in np.asarray(c.const_value(t)).reshape(-1)]


def require_const_ints(c: CheckContext, i: int, what: str) -> list[int] | None:
    """Input `i` as constant integers (int32, or int64 fitting int32), recording a refusal otherwise."""
    t = c.input(i)
    if not c.require_dtype(t, INDEX_TYPES, what) or not c.require_const(t, what):
        return None
    values = const_ints(c, t)
    if any(v < -2**31 or v >= 2**31 for v in values):
        c.refuse(Code.OPERAND_VALUE, f"{what} holds values outside int32")
        return None
    return values


def out_dims(t: Tensor) -> list[int]:
    """The NNAPI dimensions of a tensor: rank 0 becomes [1]."""
    return list(t.shape) if t.shape else [1]
