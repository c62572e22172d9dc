"""Operation validation in the NNAPI stage (nnconv/nnapi/operations/): each validator says what
feature level an operation needs with its operands, or refuses it naming the slot, as the NNAPI reference
operations' validate and the constant checks of their prepare do. The model validator and the executor
run the same checks."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.errors import EXIT_INTERNAL, OperationsRefusedError
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.model import Model
from nnconv.nnapi.validate import operation_refusals, validate_model
from nnconv.runtime.executor import Executor
from nnconv.nnapi.operations import (SPECS, OperationRefused, OperationView, default_feature_level, operation_level,
                                     validate_operation)

F32 = OperandType.TENSOR_FLOAT32
U8 = OperandType.TENSOR_QUANT8_ASYMM
I8 = OperandType.TENSOR_QUANT8_ASYMM_SIGNED
SHAPE = (2, 5)


def unary(op: OperationType, in_type: OperandType, in_q: tuple[float, int], out_type: OperandType,
          out_q: tuple[float, int], *scalars, shape: tuple[int, ...] = SHAPE) -> Model:
    """One operation: a tensor input, constant scalar parameters, one output."""
    mb = ModelBuilder()
    x = mb.main.add_tensor(in_type, shape, scale=in_q[0], zero_point=in_q[1])
    y = mb.main.add_tensor(out_type, shape, scale=out_q[0], zero_point=out_q[1])
    params = [mb.main.add_scalar(s) for s in scalars]
    mb.main.add_operation(op, [x, *params], [y])
    mb.main.set_io([x], [y])
    return mb.finish()


def binary(op: OperationType, t: OperandType, s1: float, s2: float, s_out: float) -> Model:
    mb = ModelBuilder()
    a = mb.main.add_tensor(t, SHAPE, scale=s1, zero_point=3)
    b = mb.main.add_tensor(t, SHAPE, scale=s2, zero_point=-2 if t is I8 else 7)
    y = mb.main.add_tensor(t, SHAPE, scale=s_out, zero_point=1)
    mb.main.add_operation(op, [a, b, mb.main.add_scalar(0)], [y])
    mb.main.set_io([a, b], [y])
    return mb.finish()


def conv(in_scale: float, filter_scale: float, out_scale: float, op: OperationType = OperationType.CONV_2D
         ) -> Model:
    """uint8 CONV_2D / DEPTHWISE_CONV_2D 1x1 (implicit padding) or FULLY_CONNECTED."""
    mb = ModelBuilder()
    fc = op is OperationType.FULLY_CONNECTED
    x = mb.main.add_tensor(U8, (1, 4) if fc else (1, 3, 3, 4), scale=in_scale, zero_point=128)
    w = mb.main.add_constant(U8, np.full((4, 4) if fc else (1, 1, 1, 4) if op is OperationType.DEPTHWISE_CONV_2D
                                         else (4, 1, 1, 4), 130, np.uint8), scale=filter_scale, zero_point=128)
    b = mb.main.add_constant(OperandType.TENSOR_INT32, np.zeros(4, np.int32),
                             scale=float(np.float32(in_scale) * np.float32(filter_scale)))
    y = mb.main.add_tensor(U8, (1, 4) if fc else (1, 3, 3, 4), scale=out_scale, zero_point=128)
    if fc:
        params = [mb.main.add_scalar(0)]
    elif op is OperationType.DEPTHWISE_CONV_2D:
        params = [mb.main.add_scalar(v) for v in (1, 1, 1, 1, 0)]  # SAME, strides, multiplier 1, NONE
    else:
        params = [mb.main.add_scalar(v) for v in (1, 1, 1, 0)]
    mb.main.add_operation(op, [x, w, b, *params], [y])
    mb.main.set_io([x], [y])
    return mb.finish()


def needed(model: Model, level: int = 8) -> int:
    return validate_operation(OperationView.of(model, 0, model.main.operations[0]), level)


def refusal(model: Model, level: int = 8) -> str:
    with pytest.raises(OperationRefused) as e:
        needed(model, level)
    return str(e.value)


# -- the generic default -------------------------------------------------------------------------------
def test_default_level_is_that_of_the_operation_and_its_operand_types():
    assert needed(unary(OperationType.RELU, F32, (0, 0), F32, (0, 0))) == 1
    assert needed(unary(OperationType.RELU, I8, (0.1, 3), I8, (0.1, 3))) == 4  # the signed type is FL4
    model = unary(OperationType.ABS, F32, (0, 0), F32, (0, 0))  # ABS arrived with feature level 3
    assert default_feature_level(OperationView.of(model, 0, model.main.operations[0])) == 3
    assert "needs NNAPI feature level 3 (API 29)" in refusal(model, 2)


def test_pack_is_a_feature_level_6_operation():
    assert operation_level(OperationType.PACK) == 6 and operation_level(OperationType.BATCH_MATMUL) == 6
    assert operation_level(OperationType.MIRROR_PAD) == 7 and operation_level(OperationType.REVERSE) == 7


def test_validators_are_declared_apart_from_kernels():
    from nnconv.runtime.kernels import KERNELS
    validated = {op for op, spec in SPECS.items() if spec.validator is not None}
    assert {OperationType.SOFTMAX, OperationType.LOGISTIC, OperationType.ADD} <= validated
    assert all(op in KERNELS for op in validated)  # every validated operation has a kernel


# -- SOFTMAX: the multiplier its prepare quantizes must exceed 1 ----------------------------------------------
@pytest.mark.parametrize("t, zp", [(U8, 0), (I8, -128)], ids=["uint8", "int8"])
def test_softmax_tiny_input_scale_is_refused(t, zp):
    # beta * scale * 2^26 = 1.0 * 7.8e-9 * 2^26 = 0.526: the case of a real TensorFlow-converted classifier.
    tiny = unary(OperationType.SOFTMAX, t, (7.84e-9, 0), t, (1 / 256, zp), 1.0)
    reason = refusal(tiny)
    assert "input 0 (input)" in reason and "0.526" in reason and "greater than 1" in reason
    assert needed(unary(OperationType.SOFTMAX, t, (0.1, 0), t, (1 / 256, zp), 1.0)) in (1, 4)


def test_softmax_output_and_beta():
    assert "output 0 must have scale 1/256" in refusal(
        unary(OperationType.SOFTMAX, U8, (0.1, 0), U8, (1 / 128, 0), 1.0))
    assert "input 1 (beta)" in refusal(unary(OperationType.SOFTMAX, F32, (0, 0), F32, (0, 0), -1.0))
    assert needed(unary(OperationType.SOFTMAX, F32, (0, 0), F32, (0, 0), 1.0)) == 1
    assert needed(unary(OperationType.SOFTMAX, F32, (0, 0), F32, (0, 0), 1.0, shape=(2, 3, 4))) == 3  # rank 3


# -- LOGISTIC / TANH: Q4.27 input multiplier and fixed outputs ----------------------------------------------
@pytest.mark.parametrize("op, out_q", [(OperationType.LOGISTIC, (1 / 256, 0)), (OperationType.TANH, (1 / 128, 128))],
                         ids=["logistic", "tanh"])
def test_logistic_tanh_validation(op, out_q):
    assert needed(unary(op, U8, (0.05, 128), U8, out_q)) == (3 if op is OperationType.TANH else 1)
    reason = refusal(unary(op, U8, (1e-9, 128), U8, out_q))  # 1e-9 * 2^27 = 0.134
    assert "input 0 (input) scale 1e-09" in reason and "greater than 1" in reason
    assert "output 0 must have scale" in refusal(unary(op, U8, (0.05, 128), U8, (0.1, 0)))


def test_hard_swish_output_multiplier_must_not_exceed_one():
    assert needed(unary(OperationType.HARD_SWISH, U8, (0.05, 128), U8, (0.02, 10))) == 4  # the operation's own
    reason = refusal(unary(OperationType.HARD_SWISH, U8, (0.05, 128), U8, (1e-4, 10)))  # 0.05/128 > 1e-4
    assert "output 0 scale 0.0001 is too small" in reason


# -- ADD / SUB / MUL ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("op, level", [(OperationType.ADD, 1), (OperationType.SUB, 3)])
def test_add_sub_output_multiplier_below_one(op, level):
    # SUB itself is feature level 2, its quant8 form 3 (Broadcast.cpp)
    assert needed(binary(op, U8, 0.1, 0.2, 0.3)) == level
    reason = refusal(binary(op, U8, 0.1, 0.2, 1e-7))  # 2 * 0.2 / (2^20 * 1e-7) = 3.8
    assert "output 0 scale 1e-07 is too small" in reason


def test_mul_needs_output_scale_above_the_product():
    assert needed(binary(OperationType.MUL, U8, 0.1, 0.2, 0.03)) == 1
    assert needed(binary(OperationType.MUL, I8, 0.1, 0.2, 0.03)) == 4
    reason = refusal(binary(OperationType.MUL, U8, 0.1, 0.2, 0.01))
    assert "output 0 scale 0.01 must exceed input1_scale * input2_scale" in reason


# -- scale relations below API 29 -----------------------------------------------------------------------------
@pytest.mark.parametrize("op", [OperationType.CONV_2D, OperationType.DEPTHWISE_CONV_2D, OperationType.FULLY_CONNECTED])
def test_conv_scale_relation_raises_the_level_to_29(op):
    assert needed(conv(0.5, 0.5, 0.3, op)) == 1  # 0.3 > 0.25
    assert needed(conv(0.5, 0.5, 0.2, op)) == 3  # output_scale <= input_scale * filter_scale
    assert "needs NNAPI feature level 3 (API 29)" in refusal(conv(0.5, 0.5, 0.2, op), 2)


def test_l2_normalization_concatenation_resize():
    assert needed(unary(OperationType.L2_NORMALIZATION, U8, (0.1, 128), U8, (1 / 128, 128), shape=(1, 2, 2, 3))) == 3
    assert "output 0 must have scale 1/128 and zero point 128" in refusal(
        unary(OperationType.L2_NORMALIZATION, U8, (0.1, 128), U8, (1 / 128, 0), shape=(1, 2, 2, 3)))
    mb = ModelBuilder()
    a = mb.main.add_tensor(U8, (1, 2), scale=0.1, zero_point=3)
    b = mb.main.add_tensor(U8, (1, 2), scale=0.2, zero_point=3)
    y = mb.main.add_tensor(U8, (2, 2), scale=0.1, zero_point=3)
    mb.main.add_operation(OperationType.CONCATENATION, [a, b, mb.main.add_scalar(0)], [y])
    mb.main.set_io([a, b], [y])
    assert needed(mb.finish()) == 3  # input 1's quantization differs from the output's
    shape = (1, 2, 2, 3)
    resize = unary(OperationType.RESIZE_BILINEAR, F32, (0, 0), F32, (0, 0), 2, 2, False, True, True, shape=shape)
    assert "input 4 (align_corners) and input 5 (half_pixel_centers)" in refusal(resize)
    assert needed(unary(OperationType.RESIZE_BILINEAR, F32, (0, 0), F32, (0, 0), 2, 2, False, False, True,
                        shape=shape)) == 4


# -- the model validator and the executor run the same checks -------------------------------------------------
def test_model_validator_and_executor_refuse_what_validate_refuses():
    tiny = unary(OperationType.SOFTMAX, U8, (7.84e-9, 0), U8, (1 / 256, 0), 1.0)
    (r,) = operation_refusals(tiny, 8)
    assert r.index == 0 and r.type is OperationType.SOFTMAX and "0.526" in r.reason
    with pytest.raises(OperationsRefusedError) as e:
        validate_model(tiny, 8)
    assert e.value.exit_code == EXIT_INTERNAL and "please report this bug" in str(e.value)
    validate_model(tiny)  # structurally valid: without a feature level only the HAL's structure is checked
    with pytest.raises(OperationsRefusedError):
        Executor(tiny)
    ok = unary(OperationType.SOFTMAX, U8, (0.1, 0), U8, (1 / 256, 0), 1.0)
    x = np.arange(10, dtype=np.uint8).reshape(SHAPE)
    assert Executor(ok).run([x])["out_0"].shape == SHAPE


def test_run_of_a_file_the_runtime_refuses_is_bad_input_and_executing_it_a_bug(tmp_path):
    """What the runtime validates before compiling is checked where each model comes from. nnconv's own
    lowering validates what it emits (`lower_ops`; check refuses such ops first), so an in-memory model the
    executor refuses is nnconv's bug: exit 4 with a request for a report. A `.nnapi` file is input like any
    other (a hand-made or corrupt one, say): its loader refuses such an operation with exit 2, naming it."""
    from dataclasses import replace

    from click.testing import CliRunner

    from nnconv.cli import main
    from nnconv.errors import EXIT_BAD_INPUT, OperationsRefusedError
    from nnconv.nnapi import serialize
    from nnconv.runtime.executor import _bare
    tiny = replace(_bare(unary(OperationType.SOFTMAX, U8, (7.84e-9, 0), U8, (1 / 256, 0), 1.0)), api_level=30)
    with pytest.raises(OperationsRefusedError) as e:
        Executor(tiny)
    assert e.value.exit_code == EXIT_INTERNAL and "please report this bug" in str(e.value)
    serialize.save(tmp_path / "tiny.nnapi", [tiny])
    np.savez(tmp_path / "x.npz", arr_0=np.zeros(SHAPE, np.uint8))
    result = CliRunner().invoke(main, ["run", str(tmp_path / "tiny.nnapi"), "--inputs", str(tmp_path / "x.npz"),
                                       "-o", str(tmp_path / "y.npz")])
    assert result.exit_code == EXIT_BAD_INPUT, result.output
    errors = [ln for ln in result.stderr.splitlines() if ln.startswith("nnconv: error:")]
    assert len(errors) == 1 and "partition 0: the NNAPI runtime refuses operation 0 SOFTMAX" in errors[0] \
        and "greater than 1" in errors[0], result.stderr


def pool(op: OperationType, t: OperandType, *scalars) -> Model:
    mb = ModelBuilder()
    x = mb.main.add_tensor(t, (1, 6, 5, 3), scale=0.1 if t is U8 else 0.0, zero_point=3 if t is U8 else 0)
    y = mb.main.add_tensor(t, (1, 3, 3, 3), scale=0.1 if t is U8 else 0.0, zero_point=3 if t is U8 else 0)
    mb.main.add_operation(op, [x, *(mb.main.add_scalar(s) for s in scalars)], [y])
    mb.main.set_io([x], [y])
    return mb.finish()


@pytest.mark.parametrize("op", [OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D, OperationType.L2_POOL_2D])
def test_pooling_parameters(op):
    assert needed(pool(op, F32, 1, 2, 2, 2, 2, 0)) == 1  # implicit: SAME, strides 2, filter 2x2
    assert needed(pool(op, F32, 1, 2, 2, 2, 2, 0, True)) == 3  # the NCHW flag
    assert "input 3 (stride_height) is 0" in refusal(pool(op, F32, 1, 2, 0, 2, 2, 0))
    # explicit: pads (left, right, top, bottom), strides, filter 2x2: a padding of 2 is not inside the filter
    assert needed(pool(op, F32, 1, 1, 0, 1, 2, 2, 2, 2, 0)) == 1
    assert "input 2 (padding_right) 2 is not smaller than input 7 (filter_width) 2" in refusal(
        pool(op, F32, 1, 2, 0, 1, 2, 2, 2, 2, 0))


def test_l2_pool_is_float_only():
    assert "L2_POOL_2D takes float tensors only" in refusal(pool(OperationType.L2_POOL_2D, U8, 1, 2, 2, 2, 2, 0))
    assert needed(pool(OperationType.MAX_POOL_2D, U8, 1, 2, 2, 2, 2, 0)) == 1


# -- QUANTIZED_LSTM: every slot's type (omitted ones too) and the shapes its prepare derives --------------
def quantized_lstm(omitted_type: OperandType = OperandType.TENSOR_QUANT16_SYMM, recurrent_cols: int = 4) -> Model:
    """A QUANTIZED_LSTM step (batch 2, input 5, 4 units, no projection) whose omitted peepholes and layer-norm
    weights are declared `omitted_type`, and whose recurrent-to-cell weights have `recurrent_cols` columns."""
    mb = ModelBuilder()
    g = mb.main
    q8s, q16s, i32 = OperandType.TENSOR_QUANT8_SYMM, OperandType.TENSOR_QUANT16_SYMM, OperandType.TENSOR_INT32
    x = g.add_tensor(I8, (2, 5), scale=1 / 128, zero_point=0)

    def weights(cols: int) -> int:
        return g.add_constant(q8s, np.ones((4, cols), np.int8), scale=0.01)
    ins = [x] + [weights(5) for _ in range(4)] + [weights(4), weights(4), weights(recurrent_cols), weights(4)]
    ins += [g.add_no_value(omitted_type) for _ in range(3)]
    ins += [g.add_constant(i32, np.zeros(4, np.int32), scale=1e-4) for _ in range(4)]
    ins += [g.add_no_value(q8s), g.add_no_value(i32)]
    ins += [g.add_constant(I8, np.zeros((2, 4), np.int8), scale=1 / 128),
            g.add_constant(q16s, np.zeros((2, 4), np.int16), scale=2 ** -11)]
    ins += [g.add_no_value(omitted_type) for _ in range(4)]
    ins += [g.add_scalar(0.0), g.add_scalar(0.0)] + [g.add_scalar(2.0 ** -12) for _ in range(4)]
    ins += [g.add_scalar(0), g.add_scalar(2.0 ** -7)]
    outs = [g.add_tensor(I8, (2, 4), scale=1 / 128), g.add_tensor(q16s, (2, 4), scale=2 ** -11),
            g.add_tensor(I8, (2, 4), scale=1 / 128)]
    g.add_operation(OperationType.QUANTIZED_LSTM, ins, outs)
    g.set_io([x], [outs[2]])
    return mb.finish()


def test_quantized_lstm_slot_types_and_shapes():
    assert needed(quantized_lstm()) == 4
    assert "input 9 is TENSOR_FLOAT32, the slot takes TENSOR_QUANT16_SYMM" in refusal(
        quantized_lstm(omitted_type=F32))
    assert "input 7 has dimensions [4, 3], expected [4, 4]" in refusal(quantized_lstm(recurrent_cols=3))


def control_flow(op: OperationType, case: str = "") -> Model:
    """IF(cond, then, else, x) with branches x -> RELU -> y, or WHILE(cond, body, x) with cond x -> LESS(x, 0)
    and body x -> RELU; `case` breaks one rule of nnapi/operations/control_flow.py."""
    mb = ModelBuilder()
    refs = []
    for role in ("first", "second"):
        k, sg = mb.add_referenced()
        x_type = I8 if case == "branch-input-type" and role == "second" else F32
        x = sg.add_tensor(x_type, SHAPE, scale=0.1 if x_type is I8 else 0.0)
        extra = [sg.add_tensor(F32, SHAPE)] if case == "branch-input-count" and role == "first" else []
        if op is OperationType.WHILE and role == "first":  # the condition
            out_type = F32 if case == "condition-output-type" else OperandType.TENSOR_BOOL8
            y = sg.add_tensor(out_type, (1,))
            r = sg.add_tensor(F32, (1,))
            sg.add_operation(OperationType.MEAN, [x, sg.add_constant(OperandType.TENSOR_INT32,
                                                                     np.array([0, 1], np.int32)),
                                                  sg.add_scalar(0)], [r])
            sg.add_operation(OperationType.LESS, [r, sg.add_constant(F32, np.zeros(1, np.float32))], [y])
        else:
            y = sg.add_tensor(F32, (2, 4) if case == "body-output-dims" else SHAPE)
            sg.add_operation(OperationType.RELU, [x], [y])
        sg.set_io([x, *extra], [y])
        refs.append(k)
    sg = mb.main
    x = sg.add_tensor(F32, SHAPE)
    y = sg.add_tensor(F32, SHAPE)
    if op is OperationType.IF:
        cond = sg.add_tensor(OperandType.TENSOR_BOOL8, (2,) if case == "condition-shape" else (1,))
        sg.add_operation(op, [cond, *(sg.add_subgraph_ref(r) for r in refs), x], [y])
        sg.set_io([cond, x], [y])
    else:
        sg.add_operation(op, [*(sg.add_subgraph_ref(r) for r in refs), x], [y])
        sg.set_io([x], [y])
    return mb.finish()


@pytest.mark.parametrize("op,case,message", [
    (OperationType.IF, "condition-shape", "input 0 (condition) must be a TENSOR_BOOL8 of shape [1], got "
                                          "TENSOR_BOOL8[2]"),
    (OperationType.IF, "branch-input-count", "input 1 (then) takes 2 inputs and returns 1 values; the operation "
                                             "passes 1 and needs 1"),
    (OperationType.IF, "branch-input-type", "input 2 (else) input 0 (TENSOR_QUANT8_ASYMM_SIGNED[2x5] scale=0.1 "
                                            "zp=0) does not match the operation's input 3 (TENSOR_FLOAT32[2x5]): "
                                            "another type"),
    (OperationType.WHILE, "condition-output-type", "input 0 (condition) output 0 must be a TENSOR_BOOL8 of shape "
                                                   "[1], got TENSOR_FLOAT32[1]"),
    (OperationType.WHILE, "body-output-dims", "input 1 (body) output 0 (TENSOR_FLOAT32[2x4]) does not match the "
                                              "operation's output 0 (TENSOR_FLOAT32[2x5]): other dimensions"),
])
def test_control_flow_operands_must_match_the_referenced_subgraphs(op, case, message):
    """What Android checks of IF / WHILE against their subgraphs (the kernels take it for granted: a branch
    declared int8 runs int8 kernels on what the IF passes it)."""
    assert needed(control_flow(op)) == 4
    assert refusal(control_flow(op, case)) == message
