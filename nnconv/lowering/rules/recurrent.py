"""Recurrent and sequence ops: LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM, RNN,
UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN, SVDF, LSH_PROJECTION.

State tensors. TFLite keeps an RNN's recurrent state in *variable* tensors (`is_variable`): an op input
that is not a model input, zeroed when the interpreter allocates its tensors and updated in place by each
invocation. TFLite's NNAPI delegate turns each into an extra NNAPI model input (fed from the variable) and an
extra model output (copied back into the variable after every run), so the NNAPI model stays stateless
while the delegate carries the state between invocations.

nnconv converts a model for one inference from its initial state, the way the interpreter runs it right
after `allocate_tensors()`: a variable state input becomes a zero-filled NNAPI constant of its shape and
type, and the state outputs NNAPI requires (output_state_out, cell_state_out, the LSTM scratch buffer,
RNN's hidden_state_out, SVDF's state_out) become temporaries that nothing reads. The converted model then
keeps exactly the TFLite model's inputs and outputs, a variable never leaks into the I/O signature, and
parity with the interpreter holds by construction. The cost is that streaming use (carrying state across
invocations) needs the caller to run the whole sequence in one call, i.e. to use the sequence ops.
(TFLite's kernels insist on variable state tensors; should a state input be an ordinary tensor anyway, it
is passed through as one.)

Fused activations: the recurrent kernels take TFLite's activation codes as they are (NONE, RELU,
RELU_N1_TO_1, RELU6, TANH; the delegate passes them untranslated). SIGMOID (6) is a special case: TFLite's
`ApplyActivationToVector` in these kernels applies nothing for it (measured against the interpreter for RNN,
sequence RNN and SVDF), so it is lowered as NONE to keep parity with what the model computes under TFLite.
The LSTM kernels compute something else again for it, neither a sigmoid nor any other NNAPI activation
(measured), so the LSTM rules refuse it. SIGN_BIT is refused.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from nnconv.lowering.common import FLOAT
from nnconv.lowering.context import INT8_SHIFT, CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import quant_params
from nnconv.lowering.rules._weights import folding_weights, weights_operand
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.model import STORAGE_DTYPE
from nnconv.tflite.ir import Tensor
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

RECURRENT_ACTIVATIONS = (0, 1, 2, 3, 4, 6)  # NONE, RELU, RELU_N1_TO_1, RELU6, TANH, SIGMOID


# -- shared checks ----------------------------------------------------------------------------------
def activation_code(act: int) -> int:
    """The NNAPI activation operand for a TFLite activation (SIGMOID acts as NONE, module docstring)."""
    return 0 if act == 6 else act


def check_activation(c: CheckContext, act: int, lstm: bool = False) -> None:
    """Refuses the activation codes the recurrent kernels have no NNAPI equivalent for (module docstring)."""
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
            c.refuse(Code.DTYPE, f"{what} '{t.name}' is {t.type.name.lower()}; this lowering takes float32",
                     hint)
    for t in c.outputs:
        if t.type != TensorType.FLOAT32:
            c.refuse(Code.DTYPE, f"output '{t.name}' is {t.type.name.lower()}; this lowering takes float32")


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
    if not folding_weights(c):
        c.require_api(29, f"dynamic-range (hybrid) {what}: DEQUANTIZE of the weights",
                      hint="raise --api-level to 29, or pass --fold-weights to dequantize the weights into "
                           "float32 constants at conversion time")


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
                     f"{list(t.shape_signature or t.shape)}", "give the model static input shapes")
            return


# -- shared lowering --------------------------------------------------------------------------------
def opt_in(c: LowerContext, i: int) -> int:
    """NNAPI operand of optional input i, or an omitted (NO_VALUE) operand."""
    return c.in_(i) if c.input(i) is not None else c.no_value(OperandType.TENSOR_FLOAT32)


def state_in(c: LowerContext, i: int) -> int:
    """A variable state input becomes a zero constant of its shape (see the module docstring)."""
    t = c.input(i)
    if t is None or not t.is_variable:
        return c.in_(i)
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
# NNAPI has the sequence ops from API 29. Below, a sequence of T steps becomes T single-step cells chained
# through their state outputs: STRIDED_SLICE (API 28, with shrink_axis_mask) cuts each step's [B, I] input
# out of the sequence, and one CONCATENATION + RESHAPE stacks the [B, U] step outputs back into the
# [B, T, U] / [T, B, U] sequence. The arithmetic per step is the sequence op's, so results are identical.
UNROLL_OPS = (OperationType.STRIDED_SLICE, OperationType.CONCATENATION, OperationType.RESHAPE)


class _UnrolledSequence(Rule):
    """A sequence op NNAPI has from API 29 and that is unrolled into `cell_op` steps at API 28."""

    cell_op: ClassVar[OperationType]
    native_ops: ClassVar[tuple[OperationType, ...]]
    min_api_level = 28

    def describe_lowering(self, api_level: int) -> tuple[OperationType, ...]:
        if api_level < 29:
            return (OperationType.STRIDED_SLICE, self.cell_op, OperationType.CONCATENATION, OperationType.RESHAPE)
        return self.native_ops


def unroll_inputs(c: LowerContext, time_major: bool, slot: int = 0) -> list[int]:
    """Each time step's [B, I] operand, sliced out of the sequence held by input `slot`."""
    return unroll_operand(c, c.in_(slot), [int(d) for d in c.input(slot).shape], time_major)


def unroll_operand(c: LowerContext, x: int, shape: list[int], time_major: bool) -> list[int]:
    """Each time step's [B, I] operand, sliced out of the sequence operand `x` of `shape`."""
    axis = 0 if time_major else 1
    batch, n_in = shape[1 - axis], shape[2]
    strides = c.i32_vector([1, 1, 1])
    steps = []
    for t in range(shape[axis]):
        begin, end = [0, 0, 0], list(shape)
        begin[axis], end[axis] = t, t + 1
        step = c.temp_like(x, (batch, n_in), name=f"op{c.op.index}_x{x}_t{t}")
        c.emit(OperationType.STRIDED_SLICE, [x, c.i32_vector(begin), c.i32_vector(end), strides, c.i32(0),
                                             c.i32(0), c.i32(1 << axis)], [step])
        steps.append(step)
    return steps


def cross_linked_steps(c: LowerContext, time_major: bool, aux_slot: int) -> list[int]:
    """Per-step [B, I + A] slices of the input and aux sequences joined on the last axis: with weights
    joined as [W | W_aux], one cell input computes x W^T + aux W_aux^T (cross-linking without aux slots)."""
    shape = [int(d) for d in c.input(0).shape]
    shape[2] += int(c.input(aux_slot).shape[2])
    joined = c.temp_like(c.in_(0), shape, name=f"op{c.op.index}_input_and_aux")
    c.emit(OperationType.CONCATENATION, [c.in_(0), c.in_(aux_slot), c.i32(2)], [joined])
    return unroll_operand(c, joined, shape, time_major)


def joined_weight(c: LowerContext, w_slot: int, aux_slot: int) -> int:
    """The constant [W | W_aux] for a cross-linked cell (an omitted W stays omitted: the CIFG input gate)."""
    w, a = c.input(w_slot), c.input(aux_slot)
    if w is None:
        return c.no_value(OperandType.TENSOR_FLOAT32)
    value = np.concatenate([np.asarray(c.const_value(w), np.float32), np.asarray(c.const_value(a), np.float32)],
                           axis=1)
    return c.constant(OperandType.TENSOR_FLOAT32, value, name=f"{w.name}|{a.name}")


def stack_outputs(c: LowerContext, steps: list[int], time_major: bool, out: int | None = None) -> int:
    """Stacks per-step [B, U] outputs (in time order) into a [B, T, U] / [T, B, U] sequence, written to
    `out` (default: the op's output 0, else a new temporary); returns the sequence operand."""
    batch, units = c.info(steps[0]).dimensions
    shape = [len(steps), batch, units] if time_major else [batch, len(steps), units]
    if out is None:
        out = c.temp_like(steps[0], shape, name=f"op{c.op.index}_seq")
    if len(steps) == 1:
        joined = steps[0]
    else:
        dims = (len(steps) * batch, units) if time_major else (batch, len(steps) * units)
        joined = c.temp_like(steps[0], dims, name=f"op{c.op.index}_steps")
        c.emit(OperationType.CONCATENATION, [*steps, c.i32(0 if time_major else 1)], [joined])
    c.emit(OperationType.RESHAPE, [joined, c.i32_vector(shape)], [out])
    return out


def emit_bidirectional_outputs(c: LowerContext, fw: list[int], bw: list[int], time_major: bool,
                               merge: bool) -> None:
    """The op's outputs from the forward and backward per-step outputs (both in time order): two sequences,
    or one concatenated on the last axis when merging."""
    if not merge:
        stack_outputs(c, fw, time_major, c.out(0))
        stack_outputs(c, bw, time_major, c.out(1))
        return
    fw_seq, bw_seq = stack_outputs(c, fw, time_major), stack_outputs(c, bw, time_major)
    c.emit(OperationType.CONCATENATION, [fw_seq, bw_seq, c.i32(2)], [c.out(0)])


def unrolled_lstm(c: LowerContext, xs: list[int], weights: list[int], h: int, cell: int, params: list[int],
                  cifg: bool, reverse: bool = False) -> list[int]:
    """One NNAPI LSTM per step of `xs`, chained through the state outputs; the outputs in time order."""
    batch, n_out = c.info(h).dimensions
    n_cell = c.info(cell).dimensions[1]
    outs: dict[int, int] = {}
    for t in (reversed(range(len(xs))) if reverse else range(len(xs))):
        tag = f"{'bw' if reverse else 'fw'}{t}"
        step = [unread(c, h, (batch, (3 if cifg else 4) * n_cell), f"scratch_{tag}"),
                unread(c, h, (batch, n_out), f"h_{tag}"), unread(c, cell, (batch, n_cell), f"c_{tag}"),
                unread(c, h, (batch, n_out), f"y_{tag}")]
        c.emit(OperationType.LSTM, [xs[t], *weights, h, cell, *params], step)
        h, cell = step[1], step[2]
        outs[t] = step[3]
    return [outs[t] for t in range(len(xs))]


def unrolled_rnn(c: LowerContext, xs: list[int], weights: list[int], h: int, act: int,
                 reverse: bool = False) -> list[int]:
    """One NNAPI RNN per step of `xs`, chained through the hidden state; the outputs in time order."""
    outs: dict[int, int] = {}
    for t in (reversed(range(len(xs))) if reverse else range(len(xs))):
        tag = f"{'bw' if reverse else 'fw'}{t}"
        h_next = unread(c, h, c.info(h).dimensions, f"h_{tag}")
        y_t = unread(c, h, c.info(h).dimensions, f"y_{tag}")
        c.emit(OperationType.RNN, [xs[t], *weights, h, act], [h_next, y_t])
        h = h_next
        outs[t] = y_t
    return [outs[t] for t in range(len(xs))]


def check_unrolled_bidirectional(c: CheckContext, pairs: list[tuple[int, int]], op_name: str) -> None:
    """Below API 29 a bidirectional op is unrolled into single-step cells, which have no aux input: with aux
    weights (cross-linking), each (weight slot, aux weight slot) pair in `pairs` is joined into one constant
    matrix, so both must be constant and given together."""
    if c.api_level >= 29:
        return
    c.require_api(28, f"{op_name} (unrolled into single-step cells below API 29)")
    if all(c.input(a) is None for _, a in pairs):
        return
    for w_slot, a_slot in pairs:
        w, a = c.input(w_slot), c.input(a_slot)
        if (w is None) != (a is None):
            c.refuse(Code.MISSING_OPERAND, f"inputs {w_slot} and {a_slot}: a weight and its aux weight must be "
                     "both given or both omitted")
        elif w is not None and not (c.is_const(w) and c.is_const(a)):
            c.refuse(Code.NON_CONSTANT, f"cross-linked {op_name} below API 29 joins weights {w_slot} and "
                     f"{a_slot} into one constant; both must be constant", "raise --api-level to 29")


# -- LSTM family ------------------------------------------------------------------------------------
LSTM_WEIGHT_SLOTS = range(1, 18)
LSTM_STATE_SLOTS = (18, 19)
LSTM_HYBRID_SLOTS = (*range(1, 12), 16)  # the weight matrices and peepholes a dynamic-range LSTM quantizes


def lstm_weight(c: LowerContext, i: int) -> int:
    """Weight slot i: omitted, float32, or hybrid int8 / uint8 dequantized to float32 (_weights policy)."""
    if c.input(i) is None:
        return c.no_value(OperandType.TENSOR_FLOAT32)
    return weights_operand(c, i) if i in LSTM_HYBRID_SLOTS else c.in_(i)


def check_lstm_weights(c: CheckContext, first: int) -> None:
    """The all-or-none rules of the 17 weight slots starting at `first` (TFLite layout = NNAPI's)."""
    def has(k: int) -> bool:
        return c.input(first + k) is not None
    for k, what in ((1, "input-to-forget"), (2, "input-to-cell"), (3, "input-to-output"),
                    (5, "recurrent-to-forget"), (6, "recurrent-to-cell"), (7, "recurrent-to-output"),
                    (12, "forget gate bias"), (13, "cell gate bias"), (14, "output gate bias")):
        if not has(k):
            c.refuse(Code.MISSING_OPERAND, f"{what} weights (input {first + k}) are required")
    if has(0) != has(4):
        c.refuse(Code.MISSING_OPERAND, "input-to-input and recurrent-to-input weights must be both given "
                 "or both omitted (CIFG)")
    if not has(15) and has(16):
        c.refuse(Code.MISSING_OPERAND, "a projection bias needs projection weights")


def check_layer_norm(c: CheckContext, slots: range, cifg: bool) -> bool:
    """Whether the op has layer-norm weights (`slots`); refuses a partial set (with CIFG the input gate's
    is omitted)."""
    present = [c.input(i) is not None for i in slots]
    if not any(present):
        return False
    needed = present[1:] if cifg else present
    if not all(needed):
        c.refuse(Code.MISSING_OPERAND, "layer-norm weights must be all given or all omitted")
    return True


@lowering_rule(BuiltinOperator.LSTM)
class Lstm(Rule):
    """TFLite LSTM (full kernel, 20 or 24 inputs) -> NNAPI LSTM (float32) or QUANTIZED_LSTM (int8).

    Float32: TFLite inputs 0..17 (input, 4 input-to-gate weights, 4 recurrent weights, 3 peephole,
    4 biases, projection weights and bias; optional ones -1) map to NNAPI slots 0..17 one to one;
    18 output state and 19 cell state (variables -> zero constants) to slots 18, 19; then NNAPI
    20 activation, 21 cell_clip, 22 proj_clip from the options; TFLite 20..23 layer-norm weights -> NNAPI
    23..26 (the 27-input form of API 29). NNAPI outputs: scratch buffer, output_state_out, cell_state_out
    (unread temporaries) and output (TFLite's output 0).

    Dynamic-range (hybrid) float LSTMs, with int8 constant weight matrices and peepholes, get
    those weights dequantized (`check_hybrid_weights`: DEQUANTIZE from API 29 as TFLite's delegate does, or
    float32 constants with `fold_dynamic_range_weights`). The BASIC kernel (uint8, 5 inputs) is refused:
    see the comment in `check`.

    Int8 (TFLite's 8x8_16 integer kernel, API 30, as TFLite's NNAPI delegate): TFLite inputs 0..19 map to
    QUANTIZED_LSTM slots 0..19 (the int8 weights become TENSOR_QUANT8_SYMM constants, the int16 peephole
    and layer-norm weights TENSOR_QUANT16_SYMM), layer norm 20..23 to 20..23, then 24 cell_clip,
    25 proj_clip, 26..29 the scales of the op's four gate intermediates, 30/31 the zero point and scale of
    its fifth (hidden state) intermediate. NNAPI outputs: output_state_out and cell_state_out (unread
    temporaries) and output.
    """

    nnapi_ops = (OperationType.LSTM, OperationType.QUANTIZED_LSTM, OperationType.DEQUANTIZE)
    min_api_level = 28
    dtypes = ("float32", "int8")
    constraints = ("full kernel; float32 (layer norm and hybrid weights need API 29) or int8 with layer "
                   "norm (API 30); state from zero (variables)")

    def check(self, c: CheckContext) -> None:
        c.require_api(28, "LSTM (as TFLite's NNAPI delegate)")
        o = c.options
        if o is not None and o.kernel_type == 1:
            # The uint8 basic kernel would map to QUANTIZED_16BIT_LSTM, but NNAPI's reference (and its CTS
            # vectors) multiply the concatenation [input, previous output] by weight columns ordered
            # [recurrent | input]; with TFLite's weights split as the delegate does, that disagrees with
            # TFLite's kernel (measured), so parity cannot hold.
            c.refuse(Code.OPTION, "the BASIC (uint8, 5-input) LSTM kernel is not lowered: NNAPI's "
                     "QUANTIZED_16BIT_LSTM reference pairs its weights differently from TFLite's kernel",
                     "convert the model with the full LSTM kernel")
            return
        if not c.require_inputs(20, 24):
            return
        x = c.input(0)
        c.require_rank(x, 2, 2)
        if x is not None and x.type == TensorType.INT8:
            self._check_int8(c)
        else:
            c.require_dtype(x, FLOAT)
            check_float_operands(c, range(0, len(c.op.inputs)), LSTM_STATE_SLOTS, LSTM_HYBRID_SLOTS)
            check_hybrid_weights(c, LSTM_HYBRID_SLOTS, "LSTM")
            if len(c.op.inputs) == 24 and check_layer_norm(c, range(20, 24), c.input(1) is None):
                c.require_api(29, "layer-normalized LSTM (27-input NNAPI LSTM)")
        check_lstm_weights(c, 1)
        check_state_inputs(c, LSTM_STATE_SLOTS)
        check_static(c)
        if o is not None:
            check_activation(c, o.fused_activation_function, lstm=True)
            check_clips(c)

    @staticmethod
    def _check_int8(c: CheckContext) -> None:
        c.require_api(30, "int8 LSTM (QUANTIZED_LSTM)")
        check_int8_output_matches_state(c)
        n = len(c.op.inputs)
        if n != 24 or not check_layer_norm(c, range(20, 24), c.input(1) is None):
            c.refuse(Code.OPTION, "an int8 LSTM without layer normalization runs TFLite's 8x8_8 kernel, which "
                     "NNAPI has no equivalent of")
        expected = {0: TensorType.INT8, 18: TensorType.INT8, 19: TensorType.INT16, 17: TensorType.INT32}
        expected.update({i: TensorType.INT8 for i in (*range(1, 9), 16)})
        expected.update({i: TensorType.INT16 for i in (9, 10, 11, 20, 21, 22, 23)})
        expected.update({i: TensorType.INT32 for i in range(12, 16)})
        for i, tt in expected.items():
            t = c.input(i)
            if t is not None and t.type != tt:
                c.refuse(Code.DTYPE, f"input {i} '{t.name}' is {t.type.name.lower()}; the int8 LSTM takes "
                         f"{tt.name.lower()} there")
        for i in (*range(1, 9), 16):
            t = c.input(i)
            if t is None:
                continue
            c.require_const(t, f"int8 LSTM weight {i}")
            q = t.quantization
            if q.is_per_channel or any(z != 0 for z in q.zero_point):
                c.refuse(Code.QUANTIZATION, f"weight '{t.name}' must be per-tensor symmetric (zero point 0)")
        cell = c.input(19)
        if cell is not None and cell.quantization.scale:
            log2 = float(np.log2(cell.quantization.scale[0]))
            if abs(log2 - round(log2)) >= 1e-3 or round(log2) > -9:
                c.refuse(Code.QUANTIZATION, f"the cell state scale {cell.quantization.scale[0]} must be a power "
                         "of two no larger than 2^-9")
        if c.output(0).type != TensorType.INT8:
            c.refuse(Code.DTYPE, "the int8 LSTM's output must be int8")
        inter = [c.tensor(i) for i in c.op.intermediates]
        if len(inter) != 5 or any(not t.quantization.scale for t in inter):
            c.refuse(Code.QUANTIZATION, "the int8 LSTM needs its 5 quantized intermediates (gate and hidden "
                     "state scales)")
        elif c.input(16) is None and any(inter[4].quantization.zero_point):
            # NNAPI's reference stores the hidden state as q - zp (its projection bias compensates), TFLite as
            # q + zp; without a projection that value is the output, so the two differ by 2 * zp (measured).
            c.refuse(Code.QUANTIZATION, "an int8 LSTM without projection whose hidden state has a nonzero zero "
                     "point: NNAPI's QUANTIZED_LSTM offsets it the other way from TFLite's kernel")

    def lower(self, c: LowerContext) -> None:
        if c.input(0).type == TensorType.INT8:
            self._lower_int8(c)
            return
        o = c.options
        ins = [c.in_(0)] + [lstm_weight(c, i) for i in LSTM_WEIGHT_SLOTS] + [state_in(c, 18), state_in(c, 19)]
        ins += [c.i32(activation_code(o.fused_activation_function)), c.f32(o.cell_clip), c.f32(o.proj_clip)]
        layer_norm = len(c.op.inputs) == 24 and any(c.input(i) is not None for i in range(20, 24))
        if layer_norm:
            ins += [opt_in(c, i) for i in range(20, 24)]
        out = c.out(0)
        batch = dim(c.input(0), 0)
        n_cell = dim(c.input(4), 0)
        n_out = dim(c.output(0), 1)
        gates = 3 if c.input(1) is None else 4
        outs = [unread(c, out, (batch, gates * n_cell), "scratch"), unread(c, out, (batch, n_out), "h_out"),
                unread(c, out, (batch, n_cell), "c_out"), out]
        c.emit(OperationType.LSTM, ins, outs)

    @staticmethod
    def _lower_int8(c: LowerContext) -> None:
        emit_quantized_lstm(c, quantized_lstm_operands(c), c.in_(0), state_in(c, 18), state_in(c, 19),
                            c.out(0))


def quantized_lstm_operands(c: LowerContext) -> tuple[list[int], list[int]]:
    """The step-independent QUANTIZED_LSTM operands of an int8 TFLite LSTM: (slots 1..17, slots 20..31).
    The int8 weights become TENSOR_QUANT8_SYMM constants (the operand policy would make them ASYMM)."""
    o = c.options

    def symm_weight(i: int) -> int:
        t = c.input(i)
        if t is None:
            return c.no_value(OperandType.TENSOR_QUANT8_SYMM)
        return c.constant(OperandType.TENSOR_QUANT8_SYMM, np.asarray(c.const_value(t), dtype=np.int8),
                          scale=t.quantization.scale[0], name=t.name)

    weights = [symm_weight(i) for i in range(1, 9)] + [opt_in(c, i) for i in range(9, 16)]
    weights += [symm_weight(16), opt_in(c, 17)]
    inter = [c.tensor(i).quantization for i in c.op.intermediates]
    tail = [opt_in(c, i) for i in range(20, 24)]
    tail += [c.f32(o.cell_clip), c.f32(o.proj_clip)] + [c.f32(q.scale[0]) for q in inter[:4]]
    tail += [c.i32(inter[4].zero_point[0] if inter[4].zero_point else 0), c.f32(inter[4].scale[0])]
    return weights, tail


def emit_quantized_lstm(c: LowerContext, parts: tuple[list[int], list[int]], x: int, h: int, cell: int,
                        y: int | None = None) -> tuple[int, int, int]:
    """One QUANTIZED_LSTM step; returns (output state, cell state, output) operands (`y` if given)."""
    weights, tail = parts
    h_out = c.temp_like(h, name=f"op{c.op.index}_h_out")
    c_out = c.temp_like(cell, name=f"op{c.op.index}_c_out")
    y = c.temp_like(h, name=f"op{c.op.index}_y") if y is None else y
    c.emit(OperationType.QUANTIZED_LSTM, [x, *weights, h, cell, *tail], [h_out, c_out, y])
    return h_out, c_out, y


def check_int8_output_matches_state(c: CheckContext) -> None:
    """QUANTIZED_LSTM's output shares the output state's quantization."""
    h, y = c.input(18), c.output(0)
    if h is not None and y.type == TensorType.INT8 and (h.quantization.scale, h.quantization.zero_point) != \
            (y.quantization.scale, y.quantization.zero_point):
        c.refuse(Code.QUANTIZATION, f"output '{y.name}' is quantized differently from the output state "
                 f"'{h.name}'; QUANTIZED_LSTM writes both with the state's parameters")


@lowering_rule(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM)
class UnidirectionalSequenceLstm(_UnrolledSequence):
    """TFLite UNIDIRECTIONAL_SEQUENCE_LSTM (20 or 24 inputs) -> NNAPI UNIDIRECTIONAL_SEQUENCE_LSTM.

    Inputs 0..19 map one to one (18/19 the variable states -> zero constants); NNAPI 20 activation,
    21 cell_clip, 22 proj_clip, 23 time_major from the options; TFLite 20..23 layer-norm weights -> NNAPI
    24..27 (omitted operands when absent). One NNAPI output (the sequence output), as in feature level 3;
    the state outputs of feature level 4 are not requested since nothing reads them.

    At API 28 (where TFLite's delegate stops, while NNAPI already has LSTM and STRIDED_SLICE) the sequence
    is unrolled into one NNAPI LSTM per time step sharing the weight operands, each step's output and cell
    state outputs feeding the next (see "unrolling" above); layer normalization still needs API 29.

    Int8 (TFLite's 8x8_16 kernel): NNAPI's sequence op has no quantized form, so from API 30 the sequence
    is unrolled into QUANTIZED_LSTM steps, each mapped as the LSTM rule maps an int8 LSTM (beyond TFLite's
    delegate, which rejects it).
    """

    nnapi_ops = (OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, OperationType.LSTM, OperationType.QUANTIZED_LSTM,
                 *UNROLL_OPS)
    dtypes = ("float32", "int8")
    constraints = ("float32 (hybrid refused; unrolled into LSTM steps at API 28) or int8 with layer norm "
                   "(unrolled into QUANTIZED_LSTM steps, API 30); rank-3 input")

    cell_op = OperationType.LSTM
    native_ops = (OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, OperationType.QUANTIZED_LSTM)

    def check(self, c: CheckContext) -> None:
        c.require_api(28, "UNIDIRECTIONAL_SEQUENCE_LSTM (unrolled into LSTM steps below API 29)")
        if not c.require_inputs(20, 24):
            return
        x = c.input(0)
        c.require_rank(x, 3, 3)
        if x is not None and x.type == TensorType.INT8:
            Lstm._check_int8(c)
        else:
            c.require_dtype(x, FLOAT)
            check_float_operands(c, range(0, len(c.op.inputs)), LSTM_STATE_SLOTS)
            if len(c.op.inputs) == 24 and check_layer_norm(c, range(20, 24), c.input(1) is None):
                c.require_api(29, "a layer-normalized UNIDIRECTIONAL_SEQUENCE_LSTM")
        check_lstm_weights(c, 1)
        check_state_inputs(c, LSTM_STATE_SLOTS)
        check_static(c)
        o = c.options
        if o is not None:
            check_activation(c, o.fused_activation_function, lstm=True)
            check_clips(c)
            if o.diagonal_recurrent_tensors:
                c.refuse(Code.OPTION, "diagonal recurrent weights have no NNAPI equivalent")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        if c.input(0).type == TensorType.INT8:
            parts = quantized_lstm_operands(c)
            h, cell = state_in(c, 18), state_in(c, 19)
            outs = []
            for x_t in unroll_inputs(c, o.time_major):
                h, cell, y_t = emit_quantized_lstm(c, parts, x_t, h, cell)
                outs.append(y_t)
            stack_outputs(c, outs, o.time_major, c.out(0))
            return
        if c.api_level < 29:
            self._lower_unrolled(c)
            return
        ins = [c.in_(0)] + [opt_in(c, i) for i in LSTM_WEIGHT_SLOTS] + [state_in(c, 18), state_in(c, 19)]
        ins += [c.i32(activation_code(o.fused_activation_function)), c.f32(o.cell_clip), c.f32(o.proj_clip),
                c.boolean(o.time_major)]
        ins += [opt_in(c, i) for i in range(20, 24)]
        c.emit(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [c.out(0)])

    @staticmethod
    def _lower_unrolled(c: LowerContext) -> None:
        o = c.options
        weights = [opt_in(c, i) for i in LSTM_WEIGHT_SLOTS]
        params = [c.i32(activation_code(o.fused_activation_function)), c.f32(o.cell_clip), c.f32(o.proj_clip)]
        outs = unrolled_lstm(c, unroll_inputs(c, o.time_major), weights, state_in(c, 18), state_in(c, 19),
                             params, cifg=c.input(1) is None)
        stack_outputs(c, outs, o.time_major, c.out(0))


@lowering_rule(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM)
class BidirectionalSequenceLstm(_UnrolledSequence):
    """TFLite BIDIRECTIONAL_SEQUENCE_LSTM (48 inputs) -> NNAPI BIDIRECTIONAL_SEQUENCE_LSTM (61 inputs).

    TFLite 0..47 map one to one: input, forward weights 1..17, backward weights 18..34, forward output and
    cell state 35/36 and backward ones 37/38 (variables -> zero constants), aux input 39, forward aux
    weights 40..43, backward aux weights 44..47; then NNAPI 48 activation, 49 cell_clip, 50 proj_clip,
    51 merge_outputs, 52 time_major, and 53..60 layer-norm weights as omitted operands (TFLite's op has
    none). Outputs: forward and (unless merged) backward sequence outputs.

    At API 28 (beyond TFLite's delegate) both directions are unrolled into single-step NNAPI LSTMs, the
    backward chain walking the steps in reverse (and reading the aux input when given without aux
    weights); merged outputs are concatenated on the last axis. With constant aux weights (cross-linking)
    each cell reads the input and aux sequences joined on the last axis against [W | W_aux].
    """

    nnapi_ops = (OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, OperationType.LSTM, *UNROLL_OPS)
    dtypes = ("float32",)
    constraints = "float32 (hybrid refused); rank-3 input; unrolled into LSTM steps at API 28"

    cell_op = OperationType.LSTM
    native_ops = (OperationType.BIDIRECTIONAL_SEQUENCE_LSTM,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(48):
            return
        check_unrolled_bidirectional(c, [(1 + k, 40 + k) for k in range(4)] + [(18 + k, 44 + k) for k in range(4)],
                                     "BIDIRECTIONAL_SEQUENCE_LSTM")
        x = c.input(0)
        c.require_dtype(x, FLOAT)
        c.require_rank(x, 3, 3)
        states = (35, 36, 37, 38)
        check_float_operands(c, range(0, 48), states)
        check_lstm_weights(c, 1)
        check_lstm_weights(c, 18)
        check_state_inputs(c, states)
        aux_w = [c.input(i) is not None for i in range(40, 48)]
        if any(aux_w) and c.input(39) is None:
            c.refuse(Code.MISSING_OPERAND, "aux input weights without an aux input")
        check_static(c)
        o = c.options
        if o is not None:
            check_activation(c, o.fused_activation_function, lstm=True)
            check_clips(c)
            if o.merge_outputs and not o.time_major:
                # Measured: the interpreter's merged output for batch-major input misplaces the forward
                # half for every batch after the first, while NNAPI concatenates correctly.
                c.refuse(Code.OPTION, "merge_outputs with batch-major input: TFLite's kernel lays out the "
                         "merged forward output differently from NNAPI, so parity cannot hold",
                         "use time-major input, or separate outputs and a CONCATENATION")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        if c.api_level < 29:
            params = [c.i32(activation_code(o.fused_activation_function)), c.f32(o.cell_clip),
                      c.f32(o.proj_clip)]
            fw_w = [opt_in(c, i) for i in range(1, 18)]
            bw_w = [opt_in(c, i) for i in range(18, 35)]
            if c.input(41) is not None:  # cross-linking: joined inputs and [W | W_aux] weights
                xs = bw_xs = cross_linked_steps(c, o.time_major, 39)
                fw_w[0:4] = [joined_weight(c, 1 + k, 40 + k) for k in range(4)]
                bw_w[0:4] = [joined_weight(c, 18 + k, 44 + k) for k in range(4)]
            else:
                xs = unroll_inputs(c, o.time_major)
                bw_xs = unroll_inputs(c, o.time_major, 39) if c.input(39) is not None else xs  # parallel
            fw = unrolled_lstm(c, xs, fw_w, state_in(c, 35), state_in(c, 36), params, cifg=c.input(1) is None)
            bw = unrolled_lstm(c, bw_xs, bw_w, state_in(c, 37), state_in(c, 38), params,
                               cifg=c.input(18) is None, reverse=True)
            emit_bidirectional_outputs(c, fw, bw, o.time_major, o.merge_outputs)
            return
        ins = [c.in_(0)] + [opt_in(c, i) for i in range(1, 35)]
        ins += [state_in(c, i) for i in (35, 36, 37, 38)]
        ins += [opt_in(c, i) for i in range(39, 48)]
        ins += [c.i32(activation_code(o.fused_activation_function)), c.f32(o.cell_clip), c.f32(o.proj_clip),
                c.boolean(o.merge_outputs), c.boolean(o.time_major)]
        ins += [c.no_value(OperandType.TENSOR_FLOAT32) for _ in range(8)]
        outs = [c.out(0)] if o.merge_outputs else [c.out(0), c.out(1)]
        c.emit(OperationType.BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs)


# -- RNN family -------------------------------------------------------------------------------------
@lowering_rule(BuiltinOperator.RNN)
class Rnn(Rule):
    """TFLite RNN(input, weights, recurrent weights, bias, hidden state) -> NNAPI RNN slots 0..4 (the
    variable hidden state -> a zero constant) + 5 activation. NNAPI outputs: hidden_state_out (an unread
    temporary) and output (TFLite's output 0)."""

    nnapi_ops = (OperationType.RNN,)
    dtypes = ("float32",)
    constraints = "float32 weights (hybrid refused); rank-2 input; state from zero (variables)"

    def check(self, c: CheckContext) -> None:
        check_state_cell(c, 2)

    def lower(self, c: LowerContext) -> None:
        out = c.out(0)
        act = c.i32(activation_code(c.options.fused_activation_function))
        ins = [c.in_(0), c.in_(1), c.in_(2), c.in_(3), state_in(c, 4), act]
        c.emit(OperationType.RNN, ins, [unread(c, out, tuple(c.output(0).shape), "h_out"), out])


@lowering_rule(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN)
class UnidirectionalSequenceRnn(_UnrolledSequence):
    """TFLite UNIDIRECTIONAL_SEQUENCE_RNN(input, weights, recurrent weights, bias, hidden state) -> NNAPI
    slots 0..4 (the variable hidden state -> a zero constant), 5 activation, 6 time_major (INT32).
    One output (the feature level 3 form). At API 28 (beyond TFLite's delegate) the sequence is unrolled
    into one NNAPI RNN per time step, each step's hidden state output feeding the next (see "unrolling")."""

    nnapi_ops = (OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, OperationType.RNN, *UNROLL_OPS)
    dtypes = ("float32",)
    constraints = "float32 (hybrid refused); rank-3 input; unrolled into RNN steps at API 28"

    cell_op = OperationType.RNN
    native_ops = (OperationType.UNIDIRECTIONAL_SEQUENCE_RNN,)

    def check(self, c: CheckContext) -> None:
        c.require_api(28, "UNIDIRECTIONAL_SEQUENCE_RNN (unrolled into RNN steps below API 29)")
        check_state_cell(c, 3)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        act = c.i32(activation_code(o.fused_activation_function))
        if c.api_level < 29:
            outs = unrolled_rnn(c, unroll_inputs(c, o.time_major), [c.in_(1), c.in_(2), c.in_(3)],
                                state_in(c, 4), act)
            stack_outputs(c, outs, o.time_major, c.out(0))
            return
        ins = [c.in_(0), c.in_(1), c.in_(2), c.in_(3), state_in(c, 4), act, c.i32(int(o.time_major))]
        c.emit(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN, ins, [c.out(0)])


@lowering_rule(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN)
class BidirectionalSequenceRnn(_UnrolledSequence):
    """TFLite BIDIRECTIONAL_SEQUENCE_RNN (12 inputs) -> NNAPI BIDIRECTIONAL_SEQUENCE_RNN (15 inputs).

    TFLite 0..11 map one to one: input, forward weights/recurrent/bias/hidden state 1..4, backward ones
    5..8 (variable hidden states -> zero constants), aux input 9, forward and backward aux weights 10, 11;
    then NNAPI 12 activation, 13 time_major, 14 merge_outputs. Outputs: forward and (unless merged)
    backward. TFLite's NNAPI delegate does not lower this op; NNAPI has it from API 29. At API 28 both
    directions are unrolled into single-step NNAPI RNNs, as BIDIRECTIONAL_SEQUENCE_LSTM's.
    """

    nnapi_ops = (OperationType.BIDIRECTIONAL_SEQUENCE_RNN, OperationType.RNN, *UNROLL_OPS)
    dtypes = ("float32",)
    constraints = "float32; rank-3 input; unrolled into RNN steps at API 28"
    beyond_delegate = True

    cell_op = OperationType.RNN
    native_ops = (OperationType.BIDIRECTIONAL_SEQUENCE_RNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(12):
            return
        check_unrolled_bidirectional(c, [(1, 10), (5, 11)], "BIDIRECTIONAL_SEQUENCE_RNN")
        x = c.input(0)
        c.require_dtype(x, FLOAT)
        c.require_rank(x, 3, 3)
        check_float_operands(c, range(12), (4, 8))
        check_state_inputs(c, (4, 8))
        if (c.input(10) is None) != (c.input(11) is None):
            c.refuse(Code.MISSING_OPERAND, "forward and backward aux weights must be both given or both omitted")
        if c.input(10) is not None and c.input(9) is None:
            c.refuse(Code.MISSING_OPERAND, "aux weights without an aux input")
        o = c.options
        if o is not None and c.input(9) is not None and c.input(10) is None and not o.time_major:
            # Measured: with batch-major input, the interpreter's backward cell does not read the aux input
            # the way it does time-major (and as NNAPI specifies), so parity cannot hold.
            c.refuse(Code.OPTION, "an aux input without aux weights (backward cell reads the aux input) with "
                     "batch-major input: TFLite's kernel differs from NNAPI here", "use time-major input")
        check_static(c)
        if c.options is not None:
            check_activation(c, c.options.fused_activation_function)

    def lower(self, c: LowerContext) -> None:
        o = c.options
        if c.api_level < 29:
            act = c.i32(activation_code(o.fused_activation_function))
            fw_w, bw_w = [c.in_(1), c.in_(2), c.in_(3)], [c.in_(5), c.in_(6), c.in_(7)]
            if c.input(10) is not None:  # cross-linking: joined inputs and [W | W_aux] weights
                xs = bw_xs = cross_linked_steps(c, o.time_major, 9)
                fw_w[0], bw_w[0] = joined_weight(c, 1, 10), joined_weight(c, 5, 11)
            else:
                xs = unroll_inputs(c, o.time_major)
                bw_xs = unroll_inputs(c, o.time_major, 9) if c.input(9) is not None else xs  # parallel
            fw = unrolled_rnn(c, xs, fw_w, state_in(c, 4), act)
            bw = unrolled_rnn(c, bw_xs, bw_w, state_in(c, 8), act, reverse=True)
            emit_bidirectional_outputs(c, fw, bw, o.time_major, o.merge_outputs)
            return
        ins = [c.in_(i) for i in range(4)] + [state_in(c, 4)] + [c.in_(i) for i in range(5, 8)]
        ins += [state_in(c, 8)] + [opt_in(c, i) for i in (9, 10, 11)]
        ins += [c.i32(activation_code(o.fused_activation_function)), c.boolean(o.time_major),
                c.boolean(o.merge_outputs)]
        outs = [c.out(0)] if o.merge_outputs else [c.out(0), c.out(1)]
        c.emit(OperationType.BIDIRECTIONAL_SEQUENCE_RNN, ins, outs)


# -- SVDF, LSH_PROJECTION ---------------------------------------------------------------------------
@lowering_rule(BuiltinOperator.SVDF)
class Svdf(Rule):
    """TFLite SVDF(input, weights_feature, weights_time, bias?, activation state) -> NNAPI SVDF slots 0..4
    (an omitted bias stays omitted; the variable state -> a zero constant) + 5 rank, 6 activation.
    NNAPI outputs: state_out (an unread temporary) and output. From a zero state both runtimes compute the
    same first output (they differ only in when the state history is shifted, which nothing reads here)."""

    nnapi_ops = (OperationType.SVDF,)
    min_api_level = 28
    dtypes = ("float32",)
    constraints = "float32 weights (hybrid refused); rank-2 input; API 28 as the delegate"

    def check(self, c: CheckContext) -> None:
        c.require_api(28, "SVDF (as TFLite's NNAPI delegate)")
        if not check_state_cell(c, 2):
            return
        o = c.options
        if o is not None:
            wf = c.input(1)
            if o.rank < 1 or (wf is not None and wf.rank == 2 and wf.shape[0] % o.rank):
                c.refuse(Code.OPTION, f"rank {o.rank} does not divide the number of filters")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        out = c.out(0)
        state_t = c.input(4)
        ins = [c.in_(0), c.in_(1), c.in_(2), opt_in(c, 3), state_in(c, 4), c.i32(o.rank),
               c.i32(activation_code(o.fused_activation_function))]
        c.emit(OperationType.SVDF, ins, [unread(c, out, tuple(state_t.shape), "state_out"), out])


@lowering_rule(BuiltinOperator.LSH_PROJECTION)
class LshProjection(Rule):
    """TFLite LSH_PROJECTION(hash [H, B], input [N, ...], weight [N]?) -> NNAPI LSH_PROJECTION slots
    0..2 + 3 type. TFLite's SPARSE (1) adds i * 2^B to hash i's code, which is NNAPI's type 3 (API 29);
    NNAPI's type 1 is the deprecated variant without the offset, so sparse needs API 29. DENSE is 2 in both.
    """

    nnapi_ops = (OperationType.LSH_PROJECTION,)
    dtypes = ("float32", "int32", "uint8", "int8")
    constraints = "float32 hash; sparse projection needs API 29; dense needs the weight; int8 input needs API 30"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2, 3):
            return
        h, x, w = c.input(0), c.input(1), c.input(2)
        c.require_dtype(h, FLOAT, "hash")
        c.require_rank(h, 2, 2, "hash")
        if h is not None and h.rank == 2 and h.shape[1] > 32:
            c.refuse(Code.OPERAND_VALUE, f"{h.shape[1]} bits per hash; NNAPI takes at most 32")
        if x is None or c.nnapi_type(x) is None:
            c.refuse(Code.DTYPE, "the input's type has no NNAPI operand type")
        elif c.int8_shifted(x):
            # The projection hashes raw bytes, so the +128 shift of int8 carried as uint8 would change them.
            c.require_api(30, "an int8 LSH_PROJECTION input (hashed as raw bytes, so it cannot be shifted to uint8)")
        elif x.rank < 1:
            c.refuse(Code.RANK, "input must have at least one dimension")
        if w is not None:
            c.require_dtype(w, FLOAT, "weight")
        kind = c.options.type if c.options is not None else 0
        if kind == 1:
            c.require_api(29, "sparse LSH_PROJECTION (NNAPI type 3)")
            if w is not None:  # NNAPI's sparse projection takes exactly hash, input and type (as the delegate)
                c.refuse(Code.OPERAND_VALUE, "NNAPI's sparse LSH_PROJECTION takes no weight tensor")
        elif kind == 2:
            c.require(w is not None, Code.MISSING_OPERAND, "the dense projection needs a weight tensor")
        else:
            c.refuse(Code.OPTION, f"unknown projection type {kind}")
        check_static(c)

    def lower(self, c: LowerContext) -> None:
        kind = 3 if c.options.type == 1 else 2
        ins = [c.in_(0), c.in_(1), opt_in(c, 2), c.i32(kind)]
        c.emit(OperationType.LSH_PROJECTION, ins, [c.out(0)])
