"""Operations TFLite's NNAPI delegate builds in ways nnconv's own lowering never does (found by
scripts/sweep_delegate_graphs.py): quantized RSQRT (feature level 7), RELU / RELU1 / RELU6 whose quantized
output declares other parameters than the input's, and STRIDED_SLICE with a shrunk axis given TFLite's way
(end ignored). Each is checked against the NNAPI spec and reference CPU (Elementwise.cpp, Activation.cpp,
StridedSlice.cpp, CpuExecutor.cpp), with expected values worked out here from the spec's formulas."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from nnconv.errors import OperationsRefusedError
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.model import Model, Operand, Operation
from nnconv.nnapi.operations import OperationRefused, OperationView, validate_operation
from nnconv.runtime.executor import Executor, _bare
from nnconv.runtime.kernels import KERNELS, KernelCall

F32 = OperandType.TENSOR_FLOAT32
F16 = OperandType.TENSOR_FLOAT16
I32 = OperandType.TENSOR_INT32
U8 = OperandType.TENSOR_QUANT8_ASYMM
I8 = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
STORAGE = {U8: np.uint8, I8: np.int8}


def one_op(op: OperationType, x_type: OperandType, x_q: tuple[float, int], y_type: OperandType,
           y_q: tuple[float, int], shape: tuple[int, ...], out_shape: tuple[int, ...] | None = None,
           constants: tuple = (), scalars: tuple = ()) -> Model:
    """x -> op(x, constant int32 vectors, int32 scalars) -> y, y the model output."""
    mb = ModelBuilder()
    x = mb.main.add_tensor(x_type, shape, scale=x_q[0], zero_point=x_q[1])
    y = mb.main.add_tensor(y_type, out_shape or shape, scale=y_q[0], zero_point=y_q[1])
    ins = [x, *(mb.main.add_constant(I32, np.asarray(c, np.int32)) for c in constants),
           *(mb.main.add_scalar(int(s)) for s in scalars)]
    mb.main.add_operation(op, ins, [y])
    mb.main.set_io([x], [y])
    return mb.finish()


def needed(model: Model, level: int) -> int:
    return validate_operation(OperationView.of(model, 0, model.main.operations[0]), level)


def refusal(model: Model, level: int) -> str:
    with pytest.raises(OperationRefused) as e:
        needed(model, level)
    return str(e.value)


def kernel(op: OperationType, x: np.ndarray, x_type: OperandType, x_q: tuple[float, int],
           y_q: tuple[float, int]) -> np.ndarray:
    """The kernel alone (no validation): the one output of `op` on `x`."""
    ods = [Operand(type=x_type, dimensions=x.shape, scale=x_q[0], zero_point=x_q[1])]
    out = Operand(type=x_type, dimensions=x.shape, scale=y_q[0], zero_point=y_q[1])
    return KERNELS[op](KernelCall(Operation(op, [0], [1]), [x], ods, [out]))[0]


# -- RSQRT ---------------------------------------------------------------------------------------------
def rsqrt_reference(q: int, in_q: tuple[float, int], out_q: tuple[float, int], t: OperandType) -> int:
    """Elementwise.cpp's makeQuantized(1 / sqrt) for one value, each step a float32 operation as the
    reference's C++ does it, one scalar at a time: NaN and inf end at the type's maximum."""
    info = np.iinfo(STORAGE[t])
    with np.errstate(all="ignore"):
        x = np.float32(q - in_q[1]) * np.float32(in_q[0])
        y = np.float32(1.0) / np.sqrt(x)
        v = y / np.float32(out_q[0])
    if not np.isfinite(v):
        return int(info.max)
    rounded = math.floor(float(v) + 0.5)  # std::round of a positive value: exact in double
    return min(max(out_q[1] + rounded, int(info.min)), int(info.max))


# in (0.1456, 41) -> out (0.0871, 1): the one uint8 value (186) where the float32 steps and exact real
# arithmetic round apart (4 here, 3 from 1 / sqrt((186 - 41) * s_in) / s_out in double precision)
FLOAT32_SENSITIVE = ((0.14555850625038147, 41), (0.08706773072481155, 1))


@pytest.mark.parametrize("t", [U8, I8])
def test_quantized_rsqrt_is_the_references_float32_pipeline_on_every_value(t):
    shift = 0 if t is U8 else -128
    (s_in, zp_in), (s_out, zp_out) = FLOAT32_SENSITIVE
    in_q, out_q = (s_in, zp_in + shift), (s_out, zp_out + shift)
    x = np.arange(256).astype(np.int64) + shift
    got = kernel(OperationType.RSQRT, x.astype(STORAGE[t]), t, in_q, out_q)
    want = [rsqrt_reference(int(v), in_q, out_q, t) for v in x]
    assert got.dtype == STORAGE[t] and got.tolist() == want
    # the corners: zero (1 / 0 = inf) and every negative value (sqrt -> NaN) give the type's maximum
    below_zero = x <= zp_in + shift
    assert below_zero.sum() == zp_in + 1 and set(got[below_zero].tolist()) == {np.iinfo(STORAGE[t]).max}
    # and the value where float32 matters: exact arithmetic would give one step less
    k = 186 + shift
    assert got[x == k].tolist() == [4 + shift]
    assert round(1 / math.sqrt((186 - zp_in) * s_in) / s_out) + zp_out + shift == 3 + shift


# AIDL_V3/rsqrt_quant8.mod.py (Android 14's CTS): reciprocal square roots 2, 1, 0.5, 0.25 of 0.25, 1, 4, 16
# at two input and two output quantizations, the values kept in [0, 128) so that QuantizationCouplingTest's
# signed twin (every value and zero point - 128) is valid too.
RSQRT_QUANT8_CTS = [
    ((0.25, 0), (0.25, 0), [1, 4, 16, 64], [8, 4, 2, 1]),
    ((0.25, 0), (0.01, 75), [16, 64], [125, 100]),
    ((0.125, 10), (0.25, 0), [12, 18, 42], [8, 4, 2]),
    ((0.125, 10), (0.01, 75), [42], [125]),
]


@pytest.mark.parametrize("t", [U8, I8])
@pytest.mark.parametrize("in_q, out_q, x, y", RSQRT_QUANT8_CTS)
def test_quantized_rsqrt_cts_vectors(t, in_q, out_q, x, y):
    shift = 0 if t is U8 else -128
    in_q, out_q = (in_q[0], in_q[1] + shift), (out_q[0], out_q[1] + shift)
    model = one_op(OperationType.RSQRT, t, in_q, t, out_q, (len(x),))
    got = Executor(model).run([(np.asarray(x) + shift).astype(STORAGE[t])])["out_0"]
    assert got.tolist() == [v + shift for v in y]


def test_rsqrt_validation_levels():
    """validateRsqrt: float from feature level 3, quant8 from 7; SQRT and its siblings take float only."""
    assert needed(one_op(OperationType.RSQRT, F32, (0, 0), F32, (0, 0), (4,)), 8) == 3
    for t, zp in ((U8, 0), (I8, -128)):
        quant = one_op(OperationType.RSQRT, t, (0.25, zp), t, (0.01, zp + 75), (4,))
        assert needed(quant, 7) == 7
        assert "needs NNAPI feature level 7" in refusal(quant, 6)
        assert "SQRT takes TENSOR_FLOAT16, TENSOR_FLOAT32" in refusal(
            one_op(OperationType.SQRT, t, (0.25, zp), t, (0.25, zp), (4,)), 8)
    assert needed(one_op(OperationType.ABS, I32, (0, 0), I32, (0, 0), (4,)), 8) == 4
    assert "rank 5" in refusal(one_op(OperationType.FLOOR, F32, (0, 0), F32, (0, 0), (1, 1, 1, 1, 2)), 8)
    # the executor validates at the model's level before it runs: API 33 is feature level 6
    quant = one_op(OperationType.RSQRT, U8, (0.25, 0), U8, (0.25, 0), (4,))
    with pytest.raises(OperationsRefusedError):
        Executor(replace(_bare(quant), api_level=33))
    assert Executor(replace(_bare(quant), api_level=34)).run([np.array([1, 4, 16, 0], np.uint8)])[
        "out_0"].tolist() == [8, 4, 2, 255]


# -- RELU / RELU1 / RELU6 ------------------------------------------------------------------------------
RELU_BOUNDS = {OperationType.RELU: (0.0, math.inf), OperationType.RELU1: (-1.0, 1.0), OperationType.RELU6: (0.0, 6.0)}


def relu_reference(q: np.ndarray, op: OperationType, in_q: tuple[float, int], t: OperandType) -> np.ndarray:
    """Activation.cpp's reluXQuant8: the storage values clamped at the bounds quantized with the input's
    scale and zero point (zp + round(bound / scale), within the type)."""
    info = np.iinfo(STORAGE[t])
    lo_real, hi_real = RELU_BOUNDS[op]
    lo = max(int(info.min), in_q[1] + round(lo_real / in_q[0]))
    hi = int(info.max) if math.isinf(hi_real) else min(int(info.max), in_q[1] + round(hi_real / in_q[0]))
    return np.clip(q.astype(np.int64), lo, hi)


# powers of two: every real value involved is exact, so the expected requantization needs no rounding rule
RELU_IN, RELU_OUT = (0.5, 100), (0.125, 20)


@pytest.mark.parametrize("op", list(RELU_BOUNDS))
@pytest.mark.parametrize("t", [U8, I8])
def test_relu_into_other_parameters_carries_the_clamped_values_over(op, t):
    """A temporary declared with other parameters than the input's: the reference clamps in the input's
    and its readers see those values; ours carry them into the declared parameters, exactly here."""
    shift = 0 if t is U8 else -128
    in_q, out_q = (RELU_IN[0], RELU_IN[1] + shift), (RELU_OUT[0], RELU_OUT[1] + shift)
    x = (np.arange(256) + shift).astype(STORAGE[t])
    got = kernel(op, x, t, in_q, out_q).astype(np.int64)
    real = (relu_reference(x, op, in_q, t) - in_q[1]) * in_q[0]
    info = np.iinfo(STORAGE[t])
    want = np.clip(real / out_q[0] + out_q[1], info.min, info.max)  # exact: multiples of 0.125 by 0.125
    assert np.array_equal(got, want)
    same = kernel(op, x, t, in_q, in_q)  # declared as the input: the clamp alone, values untouched
    assert np.array_equal(same.astype(np.int64), relu_reference(x, op, in_q, t))
    assert not np.array_equal(got, same.astype(np.int64))  # the test tells the two apart


def relu_model(op: OperationType, t: OperandType, relu_out_q: tuple[float, int], output: bool) -> Model:
    """x -> op -> r; r is the model output (`output`) or a temporary copied out by CONCATENATION."""
    mb = ModelBuilder()
    shift = 0 if t is U8 else -128
    x = mb.main.add_tensor(t, (2, 128), scale=RELU_IN[0], zero_point=RELU_IN[1] + shift)
    r = mb.main.add_tensor(t, (2, 128), scale=relu_out_q[0], zero_point=relu_out_q[1])
    mb.main.add_operation(op, [x], [r])
    if output:
        mb.main.set_io([x], [r])
    else:
        y = mb.main.add_tensor(t, (2, 128), scale=relu_out_q[0], zero_point=relu_out_q[1])
        mb.main.add_operation(OperationType.CONCATENATION, [r, mb.main.add_scalar(0)], [y])
        mb.main.set_io([x], [y])
    return mb.finish()


@pytest.mark.parametrize("op", list(RELU_BOUNDS))
@pytest.mark.parametrize("t, first_level", [(U8, 1), (I8, 4)])
def test_relu_output_parameters_by_level(op, t, first_level):
    """The spec wants the input's parameters on a quantized output at every feature level; the runtime's
    validate does not check them, the reference's execution fails on a model output declared otherwise
    (CpuExecutor's 'Invalid scale for model output') and runs a temporary. No level requantizes."""
    shift = 0 if t is U8 else -128
    other = (RELU_OUT[0], RELU_OUT[1] + shift)
    own = (RELU_IN[0], RELU_IN[1] + shift)
    for level in range(first_level, 9):
        view = lambda m: OperationView.of(m, 0, m.main.operations[0])  # noqa: E731
        assert validate_operation(view(relu_model(op, t, own, output=True)), level) == first_level
        assert validate_operation(view(relu_model(op, t, other, output=False)), level) == first_level
        with pytest.raises(OperationRefused, match="Invalid scale for model output"):
            validate_operation(view(relu_model(op, t, other, output=True)), level)
    x = (np.arange(256) + shift).astype(STORAGE[t]).reshape(2, 128)
    with pytest.raises(OperationsRefusedError):
        Executor(relu_model(op, t, other, output=True))
    through = Executor(relu_model(op, t, other, output=False)).run([x])["out_0"]
    assert np.array_equal(through, kernel(op, x, t, own, other))


def test_relu_types():
    assert needed(one_op(OperationType.RELU, F16, (0, 0), F16, (0, 0), (4,)), 8) == 3
    assert "RELU6 takes TENSOR_FLOAT32" in refusal(one_op(OperationType.RELU6, I32, (0, 0), I32, (0, 0), (4,)), 8)
    assert "rank 5" in refusal(one_op(OperationType.RELU, F32, (0, 0), F32, (0, 0), (1, 1, 1, 2, 2)), 8)


# -- STRIDED_SLICE -------------------------------------------------------------------------------------
def strided_slice(shape, begin, end, strides, begin_mask, end_mask, shrink, out_shape) -> Model:
    return one_op(OperationType.STRIDED_SLICE, F32, (0, 0), F32, (0, 0), shape, out_shape,
                  constants=(begin, end, strides), scalars=(begin_mask, end_mask, shrink))


def test_shrunk_axis_given_tflites_way_is_refused_at_every_level():
    """Keras' GRU reads its last output as TFLite's STRIDED_SLICE(begin -1, end 0, shrink): TFLite ignores
    end on a shrunk axis, NNAPI's spec and prepare do not (ceil((0 - 0) / 1) = 0 elements, not 1)."""
    gru = strided_slice((1, 1, 8), [-1, 0, 0], [0, 1, 8], [1, 1, 1], 6, 6, 1, (1, 8))
    for level in range(2, 9):
        message = refusal(gru, level)
        assert "axis 0 is shrunk" in message and "select 0 elements" in message
    with pytest.raises(OperationsRefusedError):
        Executor(gru)
    # the same slice written as the spec asks (begin x, end x + 1), or with end_mask, selects begin's element
    x = np.arange(24, dtype=np.float32).reshape(3, 1, 8)
    for end, end_mask in (([3, 1, 8], 6), ([0, 1, 8], 7)):
        last = strided_slice((3, 1, 8), [-1, 0, 0], end, [1, 1, 1], 6, end_mask, 1, (1, 8))
        assert needed(last, 2) == 2
        assert np.array_equal(Executor(last).run([x])["out_0"], x[2])


@pytest.mark.parametrize("begin, end, stride, size", [
    (-1, 0, 1, 0),  # TFLite's way: end ignored there, counted here
    (1, 3, 1, 2),   # two elements
    (2, 1, -1, 1),  # one element, but backwards
    (5, 9, 1, 0),   # begin past the extent: clamped to 4, nothing left
])
def test_shrunk_axis_must_select_one_element_forwards(begin, end, stride, size):
    model = strided_slice((4, 2), [begin, 0], [end, 2], [stride, 1], 2, 2, 1, (2,))
    message = refusal(model, 8)
    assert f"select {size} element" in message
    with pytest.raises(Exception, match="shrunk axis"):  # the kernel agrees where the validator cannot see
        KERNELS[OperationType.STRIDED_SLICE](KernelCall(
            model.main.operations[0],
            [np.zeros((4, 2), np.float32), *(np.asarray(v, np.int32) for v in ([begin, 0], [end, 2], [stride, 1])),
             np.int32(2), np.int32(2), np.int32(1)],
            [model.main.operands[i] for i in model.main.operations[0].inputs], [model.main.operands[1]]))


def test_strided_slice_types():
    assert "STRIDED_SLICE takes" in refusal(one_op(OperationType.STRIDED_SLICE, I32, (0, 0), I32, (0, 0), (4,),
                                                   constants=([0], [4], [1]), scalars=(0, 0, 0)), 8)
    assert needed(one_op(OperationType.STRIDED_SLICE, I8, (0.5, 1), I8, (0.5, 1), (4,), (2,),
                         constants=([0], [4], [2]), scalars=(0, 0, 0)), 8) == 4


# -- QUANTIZE ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("t, zp", [(U8, 10), (I8, -3)])
def test_quantize_takes_nan_to_the_types_maximum(t, zp):
    """Quantize.cpp clamps as std::max<float>(min, std::min<float>(max, zp + round(x / scale))): std::min
    returns its first argument when the comparison with NaN is false, so NaN becomes the maximum. TFLite's
    float FLOOR_MOD of x by 0 hands the delegate's QUANTIZE exactly such a NaN."""
    info = np.iinfo(STORAGE[t])
    x = np.array([np.nan, np.inf, -np.inf, -0.0, 1.2, -1e9], np.float32)
    got = Executor(one_op(OperationType.QUANTIZE, F32, (0, 0), t, (0.5, zp), (6,))).run([x])["out_0"]
    assert got.tolist() == [info.max, info.max, info.min, zp, zp + 2, info.min]


# -- FULLY_CONNECTED and UNIDIRECTIONAL_SEQUENCE_LSTM: operand types the delegate emits, NNAPI refuses -------
def fully_connected(t: OperandType, weights: OperandType) -> Model:
    """[1, 4] x weights [3, 4] (per-tensor or per-channel), int32 bias, activation NONE."""
    from nnconv.nnapi.model import SymmPerChannelQuantParams
    mb = ModelBuilder()
    zp = 0 if t is I8 else 128
    x = mb.main.add_tensor(t, (1, 4), scale=0.5, zero_point=zp)
    per_channel = weights is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL
    w = mb.main.add_constant(weights, np.array([[1, 2, 3, 4], [0, 1, 0, 1], [-1, 0, 1, 0]]).astype(
        np.int8 if weights is not U8 else np.uint8) + (128 if weights is U8 else 0),
        scale=0.0 if per_channel else 0.25, zero_point=128 if weights is U8 else 0,
        channel_quant=SymmPerChannelQuantParams([0.25, 0.5, 1.0], 0) if per_channel else None)
    b = mb.main.add_constant(OperandType.TENSOR_INT32, np.zeros(3, np.int32), scale=0.0 if per_channel else 0.125)
    y = mb.main.add_tensor(t, (1, 3), scale=1.0, zero_point=zp)
    mb.main.add_operation(OperationType.FULLY_CONNECTED, [x, w, b, mb.main.add_scalar(0)], [y])
    mb.main.set_io([x], [y])
    return mb.finish()


@pytest.mark.parametrize("t", [U8, I8])
def test_fully_connected_takes_no_per_channel_weights(t):
    """FullyConnected.cpp's validate expects the input's type in the weights slot: TFLite's NNAPI delegate
    hands it TFLite's per-channel int8 weights as TENSOR_QUANT8_SYMM_PER_CHANNEL from API 29, which the
    runtime refuses (the executor computed the zero point everywhere: a per-channel operand's scale is 0)."""
    assert needed(fully_connected(t, t), 8) == (4 if t is I8 else 1)
    per_channel = fully_connected(t, OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL)
    for level in range(3, 9):
        assert "got TENSOR_QUANT8_SYMM_PER_CHANNEL" in refusal(per_channel, level)
    other = I8 if t is U8 else U8  # nor the other 8-bit type: uint8 weights for an int8 input
    assert f"needs a {t.name} filter" in refusal(fully_connected(t, other), 8)
    call_ods = [per_channel.main.operands[i] for i in per_channel.main.operations[0].inputs]
    with pytest.raises(Exception, match="weights of the input's type"):
        KERNELS[OperationType.FULLY_CONNECTED](KernelCall(
            per_channel.main.operations[0], [np.zeros((1, 4), STORAGE[t]), per_channel.constant_value(call_ods[1]),
                                             np.zeros(3, np.int32), np.int32(0)], call_ods,
            [per_channel.main.operands[per_channel.main.operations[0].outputs[0]]]))


def sequence_lstm(t: OperandType, weight_type: OperandType | None = None) -> Model:
    """A one-step, one-unit UNIDIRECTIONAL_SEQUENCE_LSTM (no CIFG, peepholes, projection or layer norm) of
    type `t` (its input-to-input weights of `weight_type`), the omitted operands declared TENSOR_FLOAT32 as
    TFLite's NNAPI delegate declares them (also for its int8 LSTM; float16 ones as float16)."""
    mb = ModelBuilder()
    none = F16 if t is F16 else F32
    q = dict(scale=0.5, zero_point=0) if t is I8 else {}
    dt = STORAGE.get(t, np.float32)
    x = mb.main.add_tensor(t, (1, 1, 1), **q)
    w_types = [weight_type or t] + [t] * 7
    weights = [mb.main.add_constant(wt, np.ones((1, 1), STORAGE.get(wt, np.float32)), **(
        dict(scale=0.5, zero_point=0) if wt is I8 else {})) for wt in w_types]
    bias_type = I32 if t is I8 else t
    biases = [mb.main.add_constant(bias_type, np.zeros(1, np.int32 if t is I8 else dt)) for _ in range(4)]
    h, c = mb.main.add_tensor(t, (1, 1), **q), mb.main.add_tensor(t, (1, 1), **q)
    clip = OperandType.FLOAT16 if t is F16 else OperandType.FLOAT32
    ins = [x, *weights, *(mb.main.add_no_value(none) for _ in range(3)), *biases,
           *(mb.main.add_no_value(none) for _ in range(2)), h, c, mb.main.add_scalar(4),
           mb.main.add_scalar(0.0, clip), mb.main.add_scalar(0.0, clip), mb.main.add_scalar(True),
           *(mb.main.add_no_value(none) for _ in range(4))]
    y = mb.main.add_tensor(t, (1, 1, 1), **q)
    mb.main.add_operation(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [y])
    mb.main.set_io([x, h, c], [y])
    return mb.finish()


def test_sequence_lstm_is_a_float_operation():
    """UnidirectionalSequenceLSTM.cpp takes float32 / float16 only (an 8-bit LSTM step is QUANTIZED_LSTM): the
    delegate's int8 sequence LSTM is refused at every level, where the executor ran the float cell on the
    int8 storage values (60 to 110 LSB from TFLite's integer LSTM)."""
    float_lstm = sequence_lstm(F32)
    assert needed(float_lstm, 8) == 3
    x = np.array([[[0.5]]], np.float32)
    zeros = np.zeros((1, 1), np.float32)
    y = Executor(float_lstm).run([x, zeros, zeros])["out_0"]
    # one step from zero state, every weight 1, biases 0: gates sigmoid(0.5), cell tanh(0.5) * sigmoid(0.5)
    s, g = 1 / (1 + math.exp(-0.5)), math.tanh(0.5)
    assert y.shape == (1, 1, 1) and abs(float(y[0, 0, 0]) - s * math.tanh(s * g)) < 1e-6
    int8_lstm = sequence_lstm(I8)
    for level in range(3, 9):
        assert "takes TENSOR_FLOAT32 or TENSOR_FLOAT16 only" in refusal(int8_lstm, level)
    assert "input 1 is TENSOR_QUANT8_ASYMM_SIGNED" in refusal(sequence_lstm(F32, I8), 8)
    assert needed(sequence_lstm(F16), 8) == 3
    op = int8_lstm.main.operations[0]
    ods = [int8_lstm.main.operands[i] for i in op.inputs]
    values = [np.zeros((1, 1, 1), np.int8), *(None for _ in op.inputs[1:])]
    with pytest.raises(Exception, match="TENSOR_FLOAT32 or TENSOR_FLOAT16"):
        KERNELS[OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM](KernelCall(op, values, ods, [int8_lstm.main.operands[
            op.outputs[0]]]))
