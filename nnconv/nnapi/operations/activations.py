"""The activations and normalizations: RELU, RELU1, RELU6, LOGISTIC, TANH, HARD_SWISH, ELU, PRELU, SOFTMAX,
LOG_SOFTMAX, L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION and INSTANCE_NORMALIZATION, with the
validate/prepare-time rules of Softmax.cpp, Activation.cpp, HardSwish.cpp and L2Normalization.cpp of the
NNAPI reference operations: RELU / RELU1 / RELU6, whose quantized output keeps the input's quantization,
and those with a quantized fixed-point path, SOFTMAX, LOGISTIC, TANH, HARD_SWISH and L2_NORMALIZATION,
whose quantized outputs are fixed or bounded by the multipliers of `nnapi/quant_limits.py`, the same values
the kernels quantize."""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from nnconv.nnapi.enums import FuseCode, OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import Operand
from nnconv.nnapi.operations.spec import AxisParam, SampleAxis, declare, operation
from nnconv.nnapi.operations.view import OperationView, check_fixed_output
from nnconv.nnapi.quantization import is_quant8, qrange
from nnconv.nnapi.quant_limits import (hard_swish_output_multiplier, sigmoid_input_multiplier,
                                       softmax_input_multiplier)


_T = OperationType


class SoftmaxSlot(IntEnum):
    """SOFTMAX's and LOG_SOFTMAX's inputs; SOFTMAX's AXIS from feature level 3."""
    INPUT = 0
    BETA = 1
    AXIS = 2


class UnarySlot(IntEnum):
    """LOGISTIC, TANH, HARD_SWISH: one tensor input."""
    INPUT = 0


class ReluSlot(IntEnum):
    """RELU, RELU1, RELU6: one tensor input."""
    INPUT = 0


# RELU / RELU1 / RELU6 input types and the feature level each needs (Activation.cpp's validate)
RELU_INPUT_LEVELS = {OperandType.TENSOR_FLOAT32: 1, OperandType.TENSOR_FLOAT16: 3,
                     OperandType.TENSOR_QUANT8_ASYMM: 1, OperandType.TENSOR_QUANT8_ASYMM_SIGNED: 4}
RELU_MAX_RANK = 4


class L2NormalizationSlot(IntEnum):
    """L2_NORMALIZATION's inputs; AXIS from feature level 3."""
    INPUT = 0
    AXIS = 1


@operation(_T.SOFTMAX, level=1, inputs=SoftmaxSlot, same_type_output=True,
           sample_axis=AxisParam(SoftmaxSlot.AXIS, -1))
def validate_softmax(view: OperationView, feature_level: int) -> int:
    """Softmax.cpp's validate and the constant checks of its prepare: rank 1..4, beta > 0, and for a
    quantized input the output (1/256, type minimum) and an input multiplier above 1. A non-default axis
    (or rank other than 2 / 4) needs feature level 3."""
    x, beta = view.input(SoftmaxSlot.INPUT), view.scalar(SoftmaxSlot.BETA)
    needed = 1
    if x is not None and x.dimensions and not 1 <= len(x.dimensions) <= 4:
        raise view.refuse(f"{view.describe(SoftmaxSlot.INPUT)} has rank {len(x.dimensions)}, outside 1..4")
    if beta is not None and not beta > 0:
        raise view.refuse(f"{view.describe(SoftmaxSlot.BETA)} is {beta}, it must be positive")
    if view.input(SoftmaxSlot.AXIS) is not None or (x is not None and x.dimensions
                                                    and len(x.dimensions) not in (2, 4)):
        needed = 3
    if x is not None and x.type.is_quantized and beta is not None:
        check_fixed_output(view, 1.0 / 256, qrange(x.type)[0], "1/256")
        real = softmax_input_multiplier(float(beta), x.scale)
        if not real > 1.0:
            raise view.refuse(f"{view.describe(SoftmaxSlot.INPUT)} scale {x.scale:g} with beta {beta:g} gives the "
                              f"fixed-point multiplier beta * scale * 2^26 = {real:.3g}, which the reference's "
                              "prepare needs greater than 1 (QuantizeMultiplierGreaterThanOne)")
    return needed


# The (scale, zero point) quantized LOGISTIC / TANH prescribe for their output, per type.
LOGISTIC_OUTPUT = {OperandType.TENSOR_QUANT8_ASYMM: (1.0 / 256, 0),
                   OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 256, -128)}
TANH_OUTPUT = {OperandType.TENSOR_QUANT8_ASYMM: (1.0 / 128, 128),
               OperandType.TENSOR_QUANT8_ASYMM_SIGNED: (1.0 / 128, 0)}


def validate_q4_activation(view: OperationView, fixed_output: dict) -> int:
    """Validation of quantized LOGISTIC / TANH (Activation.cpp): the output has the (scale, zero point) the
    operation prescribes for its type (`fixed_output`: type -> (scale, zero point)), and the input scale is
    large enough for the Q4.27 rescaling (its multiplier input_scale * 2^27 must exceed 1 in prepare)."""
    x = view.input(UnarySlot.INPUT)
    if x is None or not x.type.is_quantized:
        return 1
    if x.dimensions and len(x.dimensions) > 4:
        raise view.refuse(f"{view.describe(UnarySlot.INPUT)} has rank {len(x.dimensions)}, NNAPI takes rank <= 4")
    expected = fixed_output.get(x.type)
    if expected is None:
        raise view.refuse(f"{view.describe(UnarySlot.INPUT)} has unsupported type {x.type.name}")
    check_fixed_output(view, *expected)
    real = sigmoid_input_multiplier(x.scale)
    if not real > 1.0:
        raise view.refuse(f"{view.describe(UnarySlot.INPUT)} scale {x.scale:g} gives the fixed-point multiplier "
                          f"scale * 2^27 = {real:.3g}, which the reference's prepare needs greater than 1")
    return 1


# A standalone clamp: its spec's facts but the fused activation code that computes the same.
_CLAMP = dict(level=1, inputs=ReluSlot, input_levels=RELU_INPUT_LEVELS, same_type_output=True, byte_op=True,
              sample_axis=SampleAxis.FIRST_ONLY, float_batched=True)


@operation(_T.RELU, fused_as=FuseCode.RELU, **_CLAMP)
@operation(_T.RELU1, fused_as=FuseCode.RELU1, **_CLAMP)
@operation(_T.RELU6, fused_as=FuseCode.RELU6, **_CLAMP)
def validate_relu(view: OperationView, feature_level: int) -> int:
    """Activation.cpp: float32 / quant8 from feature level 1, float16 from 3, quant8 signed from 4
    (`RELU_INPUT_LEVELS`); rank <= 4.

    A quantized output must have the input's scale and zero point: the spec says so at every feature level
    (HAL 1.0 to 1.3 and the AIDL / NDK levels after it; HAL 1.3's "can be different" wording is ADD's, SUB's,
    CONCATENATION's, not RELU's), and no level of the reference CPU requantizes: its prepare gives the output
    the input's parameters. The runtime's validate does not check them, so a graph that breaks the rule is
    built and compiled; what happens then depends on where the output goes:
    - a model output: CpuExecutor's setInfoAndAllocateIfNeeded compares the prepared parameters with the
      output's declared ones and fails the execution ("Invalid scale for model output", OP_FAILED). Refused
      here, at every level, as the other output parameters the reference's prepare prescribes are (LOGISTIC,
      TANH, SOFTMAX);
    - a temporary: the reference overwrites its parameters with the input's and runs; the kernel carries the
      clamped values into the declared parameters instead (runtime/kernels/_activation.py says why)."""
    x, out = view.input(ReluSlot.INPUT), view.out_operands[0]
    if x is None:
        return 1
    if x.dimensions and len(x.dimensions) > RELU_MAX_RANK:
        raise view.refuse(f"{view.describe(ReluSlot.INPUT)} has rank {len(x.dimensions)}, NNAPI takes rank <= "
                          f"{RELU_MAX_RANK}")
    if is_quant8(x.type) and out.lifetime is OperandLifeTime.SUBGRAPH_OUTPUT and not same_quantization(x, out):
        raise view.refuse(
            f"output 0 is a model output with scale {out.scale:g} and zero point {out.zero_point}, "
            f"{view.describe(ReluSlot.INPUT)} has {x.scale:g} and {x.zero_point}: the spec requires the input's at "
            "every feature level, and the reference CPU, whose prepare gives the output the input's parameters, "
            "fails the execution ('Invalid scale for model output')")
    return 1


def same_quantization(a: Operand, b: Operand) -> bool:
    """Whether two quantized operands share their scale (compared as the float32 the runtime holds) and
    zero point."""
    return np.float32(a.scale) == np.float32(b.scale) and a.zero_point == b.zero_point


# LOGISTIC, TANH and HARD_SWISH: elementwise, the input's shape, byte-table members
_UNARY = dict(inputs=UnarySlot, same_type_output=True, byte_op=True, sample_axis=SampleAxis.FIRST_ONLY)


@operation(_T.LOGISTIC, level=1, **_UNARY)
def validate_logistic(view: OperationView, feature_level: int) -> int:
    return validate_q4_activation(view, LOGISTIC_OUTPUT)


@operation(_T.TANH, level=1, **_UNARY)
def validate_tanh(view: OperationView, feature_level: int) -> int:
    # Quantized TANH arrived with feature level 3 (Android 10); float TANH is in the first one.
    x = view.input(UnarySlot.INPUT)
    needed = 3 if x is not None and x.type.is_quantized else 1
    return max(needed, validate_q4_activation(view, TANH_OUTPUT))


@operation(_T.HARD_SWISH, level=4, **_UNARY)
def validate_hard_swish(view: OperationView, feature_level: int) -> int:
    """HardSwish.cpp: a quantized output of the input's type whose multiplier (input_scale / 128) /
    output_scale does not exceed 1 (prepare refuses a positive exponent)."""
    x, out = view.input(UnarySlot.INPUT), view.out_operands[0]
    if x is None or not is_quant8(x.type):
        return 1
    if out.type is not x.type:
        raise view.refuse(f"output 0 is {out.type.name}, {view.describe(UnarySlot.INPUT)} is {x.type.name}")
    _m, exponent = hard_swish_output_multiplier(x.scale, out.scale)
    if exponent > 0:
        raise view.refuse(f"output 0 scale {out.scale:g} is too small for {view.describe(UnarySlot.INPUT)} scale "
                          f"{x.scale:g}: the output multiplier (input_scale / 128) / output_scale exceeds 1")
    return 1


@operation(_T.L2_NORMALIZATION, level=1, inputs=L2NormalizationSlot, same_type_output=True,
           sample_axis=AxisParam(L2NormalizationSlot.AXIS, -1))
def validate_l2_normalization(view: OperationView, feature_level: int) -> int:
    """L2Normalization.cpp: quantized from feature level 3, onto the fixed output (1/128, 128 or 0 signed);
    a rank other than 4 or an axis needs feature level 3 too."""
    x = view.input(L2NormalizationSlot.INPUT)
    if x is None:
        return 1
    needed = 3 if view.input(L2NormalizationSlot.AXIS) is not None or (x.dimensions and len(x.dimensions) != 4) \
        else 1
    if x.type.is_quantized:
        zero_point = 0 if x.type is OperandType.TENSOR_QUANT8_ASYMM_SIGNED else 128
        check_fixed_output(view, 1.0 / 128, zero_point, "1/128")
        needed = 3
    return needed


# ELU's alpha is a scalar, PRELU's a tensor broadcast against the input
declare(_T.ELU, level=4, inputs="INPUT ALPHA", same_type_output=True, sample_axis=SampleAxis.FIRST_ONLY)
declare(_T.PRELU, level=3, inputs="INPUT ALPHA", same_type_output=True, sample_axis=SampleAxis.BROADCAST,
        float_batched=True)
declare(_T.LOG_SOFTMAX, level=3, inputs=SoftmaxSlot, same_type_output=True,
        sample_axis=AxisParam(SoftmaxSlot.AXIS, -1))
# the axis from feature level 3
declare(_T.LOCAL_RESPONSE_NORMALIZATION, level=1, inputs="INPUT RADIUS BIAS ALPHA BETA AXIS", same_type_output=True,
        sample_axis=AxisParam("AXIS", -1))
declare(_T.INSTANCE_NORMALIZATION, level=3, inputs="INPUT GAMMA BETA EPSILON NCHW", sample_axis=SampleAxis.FIRST_ONLY)
