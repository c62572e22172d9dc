"""What the recurrent rules share: the activation mapping, the state, dtype and hybrid-weight checks,
and the state operands (a variable state input becomes a zero constant; see the package docstring)."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.common import FLOAT
from nnconv.lowering.context import (INT8_SHIFT, STATIC_SHAPES_HINT, CheckContext, LowerContext, dtype_description,
                                     dtype_hint)
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.rules._arith import quant_params
from nnconv.lowering.rules._weights import require_weight_dequantize
from nnconv.nnapi.enums import OperandType
from nnconv.nnapi.model import STORAGE_DTYPE
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import TensorType


RECURRENT_ACTIVATIONS = (0, 1, 2, 3, 4, 6)  # NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGMOID


# -- shared checks ----------------------------------------------------------------------------------
def activation_code(act: int) -> int:
    """The NNAPI activation operand for a TFLite activation (SIGMOID acts as NONE: the package docstring)."""
    return 0 if act == 6 else act


def check_activation(c: CheckContext, act: int, lstm: bool = False) -> None:
    """Refuses the activation codes the recurrent kernels have no NNAPI equivalent for (package docstring)."""
    if act not in RECURRENT_ACTIVATIONS:
        c.refuse(Code.OPTION, f"activation code {act} (SIGN_BIT or unknown) has no NNAPI equivalent here")
    elif lstm and act == 6:
        c.refuse(Code.OPTION, "a SIGMOID cell activation: TFLite's LSTM kernels do not compute a plain sigmoid "
                 "for it, so no NNAPI activation reproduces the model")


def check_clips(c: CheckContext) -> None:
    """NNAPI's LSTMs reject a negative cell_clip / proj_clip (0 disables clipping); so do TFLite's kernels,
    at prepare time. Refusing here reports it instead of emitting a model NNAPI would not run."""
    o = c.options
    if o is None:
        return
    for what in ("cell_clip", "proj_clip"):
        value = float(getattr(o, what))
        if not value >= 0.0:  # also catches NaN
            c.refuse(Code.OPTION, f"{what} {value} must be >= 0 (0 disables clipping)")


def check_float_operands(c: CheckContext, slots: range | list[int], state_slots: tuple[int, ...] = (),
                         hybrid_slots: tuple[int, ...] = ()) -> None:
    """Every present input in `slots` (the state inputs among them named as such) and every output must be
    float32: NNAPI's float recurrent ops have no hybrid or quantized variant. Slots in `hybrid_slots` may
    hold constant int8 / uint8 (dynamic-range) weights, dequantized as `check_hybrid_weights` says."""
    for i in slots:
        t = c.input(i)
        if t is None:
            continue
        if i in hybrid_slots and t.type == TensorType.INT8:
            continue
        if t.type != TensorType.FLOAT32:
            what = "state" if i in state_slots else f"input {i}"
            hint = ("dynamic-range (hybrid) weights are not lowered for this op; keep float weights"
                    if i not in state_slots and t.type in (TensorType.INT8, TensorType.UINT8) else "")
            c.refuse(Code.DTYPE, f"{what} '{t.name}' is {dtype_description(t)}; this lowering takes float32",
                     dtype_hint(t, hint))
    for t in c.outputs:
        if t.type != TensorType.FLOAT32:
            c.refuse(Code.DTYPE, f"output '{t.name}' is {dtype_description(t)}; this lowering takes float32",
                     dtype_hint(t))


def check_hybrid_weights(c: CheckContext, slots: tuple[int, ...], what: str) -> None:
    """Dynamic-range (hybrid) weights: constant int8 / uint8 tensors that the lowering dequantizes to
    float32, by DEQUANTIZE operations from API 29 (as TFLite's delegate does) or, with the
    `fold_dynamic_range_weights` option, into float32 constants at conversion time at any level. NNAPI then
    computes in float, while TFLite's hybrid kernel quantizes the activations on the fly (asymmetrically
    with the option `asymmetric_quantize_inputs`, which therefore selects nothing in NNAPI), so the two agree
    only to within that quantization error. The other rules refuse hybrid weights as a dtype, which also
    covers their `asymmetric_quantize_inputs`. Only int8 weights: TFLite's hybrid LSTM computes something else
    for uint8 weights with a zero point (measured), so those stay refused as a dtype."""
    hybrid = [c.input(i) for i in slots if c.input(i) is not None and c.input(i).type == TensorType.INT8]
    if not hybrid:
        return
    for t in hybrid:
        c.require_const(t, f"dynamic-range (hybrid) {what} weight '{t.name}'")
    require_weight_dequantize(c, what)


def check_state_inputs(c: CheckContext, slots: tuple[int, ...]) -> None:
    """Each state input must be present and read by this op only (it becomes a zero constant)."""
    for i in slots:
        t = c.input(i)
        if t is None:
            c.refuse(Code.MISSING_OPERAND, f"state input {i} is missing; NNAPI needs the initial state")
        elif t.is_variable and sum(t.index in op.inputs for op in c.subgraph.operators) > 1:
            # Each op updates its variable in place, so a second reader would see the first one's result,
            # not the zero initial state this lowering gives every state input.
            c.refuse(Code.OPTION, f"state variable '{t.name}' is shared with another op; its updated value "
                     "cannot be carried between NNAPI operations")


def check_state_cell(c: CheckContext, rank: int) -> bool:
    """The checks RNN, UNIDIRECTIONAL_SEQUENCE_RNN and SVDF share: five inputs (slot 4 the state, from
    zero), float32 throughout, an input of `rank`, static shapes, the activation. False when the input count
    is wrong (nothing else was checked)."""
    if not c.require_inputs(5):
        return False
    x = c.input(0)
    c.require_dtype(x, FLOAT)
    c.require_rank(x, rank, rank)
    check_float_operands(c, range(5), (4,))
    check_state_inputs(c, (4,))
    check_static(c)
    if c.options is not None:
        check_activation(c, c.options.fused_activation_function)
    return True


def check_static(c: CheckContext) -> None:
    """Static shapes on every non-variable tensor (variables get their declared shape as a constant)."""
    for t in [*c.inputs, *c.outputs]:
        if t is None or t.is_variable or c.is_const(t):
            continue
        if t.has_dynamic_shape or 0 in t.shape:
            c.refuse(Code.DYNAMIC_SHAPE, f"tensor '{t.name}' has a dynamic or zero-sized shape "
                     f"{list(t.shape_signature or t.shape)}", STATIC_SHAPES_HINT)
            return


# -- shared lowering --------------------------------------------------------------------------------
def opt_in(c: LowerContext, i: int) -> int:
    """NNAPI operand of optional input i, or an omitted (NO_VALUE) operand."""
    return c.input_operand(i) if c.input(i) is not None else c.no_value(OperandType.TENSOR_FLOAT32)


def state_in(c: LowerContext, i: int) -> int:
    """A variable state input becomes a zero constant of its shape (see the package docstring)."""
    t = c.input(i)
    if t is None or not t.is_variable:
        return c.input_operand(i)
    ntype = c.nnapi_type(t) or OperandType.TENSOR_FLOAT32
    dims = t.shape if t.shape else (1,)
    scale, zp = quant_params(t)
    if c.int8_shifted(t):
        zp += INT8_SHIFT
    zeros = np.full(dims, zp, dtype=STORAGE_DTYPE[ntype]) if ntype.is_quantized else \
        np.zeros(dims, dtype=STORAGE_DTYPE[ntype])
    return c.constant(ntype, zeros, scale=scale, zero_point=zp, name=f"{t.name}/initial_zero")


def unread(c: LowerContext, like: int, dims: tuple[int, ...], name: str) -> int:
    """A state output NNAPI requires but nothing reads."""
    return c.temp_like(like, dims, name=f"op{c.op.index}_{name}")


def dim(t: Tensor | None, axis: int) -> int:
    """Extent of `axis` of a tensor (0 when it is absent or has no such axis)."""
    return int(t.shape[axis]) if t is not None and t.rank > axis else 0


# -- unrolling a sequence op below API 29 -----------------------------------------------------------
