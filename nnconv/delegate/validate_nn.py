"""The delegate's checks of arithmetic, activation, convolution, pooling and normalization builtins
(`NNAPIDelegateKernel::Validate`, one case each). Messages are the delegate's, verbatim, typos included."""

from __future__ import annotations

from nnconv.delegate.failures import QUANT8, FailureType, NodeCheck, is_float, is_quantized
from nnconv.delegate.node_facts import is_hybrid
from nnconv.delegate.setup import FL6, FL7, SDK_28, SDK_29, SDK_30
from nnconv.delegate.validator_registry import validator
from nnconv.tflite.schema_enums import ActivationFunctionType as Act
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

F = FailureType


def _no_activation_for_int32(c: NodeCheck) -> None:
    if c.in_type(0) == T.INT32:
        c.expect(c.option("fused_activation_function") == Act.NONE, F.NO_ACTIVATION_EXPECTED,
                 "No activation function supported")


def _add_or_mul_types(c: NodeCheck) -> None:
    """ADD's and MUL's operand checks, the same in the delegate: int32 from SDK 30, without activation."""
    if c.sdk >= SDK_30:
        c.float_quant8_or_int32_op()
        _no_activation_for_int32(c)
    else:
        c.float_or_quant8_op()
    c.input_ranks_at_most_4()


@validator(B.ADD)
def _add(c: NodeCheck) -> None:
    c.max_version(2)
    _add_or_mul_types(c)


@validator(B.MUL)
def _mul(c: NodeCheck) -> None:
    c.max_version(3 if c.accelerator else 2)
    _add_or_mul_types(c)


@validator(B.SUB)
def _sub(c: NodeCheck) -> None:
    c.max_version(3)
    x = c.in_type(0)
    c.expect((c.sdk >= SDK_28 and is_float(x)) or (c.sdk >= SDK_29 and is_quantized(x))
             or (c.sdk >= SDK_30 and x == T.INT32), F.UNSUPPORTED_INPUT_TYPE, "NNAPI only support float sub.")
    _no_activation_for_int32(c)
    c.input_ranks_at_most_4()


@validator(B.DIV)
def _div(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_28)
    c.expect(c.in_type(0) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "NNAPI only support float div.")
    c.input_ranks_at_most_4()


@validator(B.SQUARED_DIFFERENCE)
def _squared_difference(c: NodeCheck) -> None:
    c.op_version(2)
    c.min_sdk(SDK_28)
    if c.sdk >= SDK_30:
        c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8, T.INT32))
    elif c.sdk >= SDK_29:
        c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8))
    else:
        c.type_in(c.in_type(0), (T.FLOAT32,))
    c.input_ranks_at_most_4("NNAPI does not support input rank greater than 4")


@validator(B.AVERAGE_POOL_2D)
def _average_pool(c: NodeCheck) -> None:
    c.max_version(2)
    c.float_or_quant8_op()
    if is_quantized(c.in_type(0)):
        # the reference CPU's quantized path overflows on large windows (upstream b/138756912)
        window = int(c.option("filter_width")) * int(c.option("filter_height"))
        c.expect(c.accelerator or window <= 256, F.UNSUPPORTED_OPERAND_SIZE,
                 "Large filter window would overflow on the reference CPU path")


@validator(B.MAX_POOL_2D)
def _max_pool(c: NodeCheck) -> None:
    c.max_version(2)
    c.float_or_quant8_op()


@validator(B.L2_POOL_2D)
def _l2_pool(c: NodeCheck) -> None:
    c.op_version(1)
    c.float_op()
    if c.sdk < SDK_29:
        c.expect(c.option("fused_activation_function") == Act.NONE, F.UNSUPPORTED_OPERAND_VALUE,
                 "Before NNAPI 1.2 fused activation for l2_pool may not be supported.")


def _dilated(c: NodeCheck) -> bool:
    return c.option("dilation_w_factor", 1) != 1 or c.option("dilation_h_factor", 1) != 1


def _dim(c: NodeCheck, i: int, axis: int) -> int | None:
    t = c.input(i)
    return t.dims[axis] if t is not None and len(t.dims) > axis else None


@validator(B.CONV_2D)
def _conv(c: NodeCheck) -> None:
    c.max_version(5)
    filt = c.input(1)
    if c.sdk < SDK_29:
        c.expect(not is_hybrid(c.graph, c.node), F.UNSUPPORTED_HYBRID_OPERATOR,
                 "Hybrid operators not supported before NNAPI 1.2")
        c.float_or_uint8_op()
        if filt is not None and filt.affine:
            c.expect(len(filt.quant.scale) <= 1, F.UNSUPPORTED_QUANTIZATION_TYPE,
                     "Per-channel quantized convolution not supported before NNAPI 1.2.")
    if c.sdk < SDK_29 and c.in_type(0) == T.UINT8:
        c.restricted_scales()
    c.expect(c.n_inputs == 3, F.MISSING_REQUIRED_OPERAND, "Conv2D with omitted bias not supported")
    if _dilated(c):
        c.expect(c.sdk >= SDK_29, F.UNSUPPORTED_OPERAND_VALUE, "NNAPI supports dilated Conv2D since NNAPI 1.2.")
    if c.sdk < SDK_29:
        c.expect(_dim(c, 0, 3) == _dim(c, 1, 3), F.UNSUPPORTED_OPERAND_VALUE,
                 "Grouped convolution not supported before NNAPI < 1.2")


@validator(B.DEPTHWISE_CONV_2D)
def _depthwise(c: NodeCheck) -> None:
    c.max_version(3)
    if c.sdk < SDK_29:
        c.float_or_uint8_op()
        if c.in_type(0) == T.UINT8:
            c.restricted_scales()
        c.expect(not _dilated(c), F.UNSUPPORTED_OPERAND_VALUE,
                 "dilation_width_factor and dilation_height_factor expected to be equal to 1")


@validator(B.FULLY_CONNECTED)
def _fully_connected(c: NodeCheck) -> None:
    c.max_version(5)
    out = c.output(0)
    c.expect(out is None or out.type != T.INT16, F.UNSUPPORTED_OUTPUT_TYPE, "Unsupported output of type kTfLiteInt16")
    if c.sdk < SDK_29:
        c.expect(not is_hybrid(c.graph, c.node), F.UNSUPPORTED_HYBRID_OPERATOR,
                 "Hybrid operators not supported before NNAPI 1.2")
        c.float_or_uint8_op()
    if c.sdk < SDK_29 and c.in_type(0) == T.UINT8:
        c.restricted_scales()
    if c.option("keep_num_dims", False):
        c.min_sdk(SDK_30)


@validator(B.TRANSPOSE_CONV)
def _transpose_conv(c: NodeCheck) -> None:
    c.max_version(4)
    c.min_sdk(SDK_29)
    c.expect(c.n_inputs > 1 and c.constant_input(0) and c.constant_input(1),
             F.INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE, "Dynamically-sized tensors not supported.")


@validator(B.HARD_SWISH)
def _hard_swish(c: NodeCheck) -> None:
    # no version or level check: below API 30 the delegate builds it from MUL and ADD
    c.float_or_quant8_op()


@validator(B.SOFTMAX)
def _softmax(c: NodeCheck) -> None:
    c.op_version(2)
    c.float_or_quant8_op()
    out = c.output(0)
    c.expect(out is not None and out.type in (T.FLOAT32, *QUANT8), F.UNSUPPORTED_OUTPUT_TYPE,
             "Output type should be one of kTfLiteFloat32, kTfLiteUInt8, kTfLiteInt8.")
    rank = c.rank(0)
    c.expect(rank <= 4, F.UNSUPPORTED_OPERAND_RANK, "Input rank should be <= 4")
    if c.sdk < SDK_29:
        c.expect(rank in (2, 4), F.UNSUPPORTED_OPERAND_RANK,
                 "Before API level 29 only 2D and 4D input tensors were supported.")


@validator(B.LOG_SOFTMAX)
def _log_softmax(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    c.expect(c.in_type(0) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "Input should be Float32.")


@validator(B.L2_NORMALIZATION)
def _l2_norm(c: NodeCheck) -> None:
    c.max_version(2)
    if c.sdk < SDK_29:
        c.float_op()
        c.expect(c.rank(0) == 4, F.UNSUPPORTED_OPERATOR_VARIANT, "Expected 4 inputs")
    c.expect(c.option("fused_activation_function") == Act.NONE, F.NO_ACTIVATION_EXPECTED, "Expected no activation")


@validator(B.LOCAL_RESPONSE_NORMALIZATION)
def _lrn(c: NodeCheck) -> None:
    c.op_version(1)


@validator(B.RELU, B.RELU_N1_TO_1, B.RELU6, B.LOGISTIC)
def _relu_family(c: NodeCheck) -> None:
    c.max_version(2)
    c.float_or_quant8_op()


@validator(B.TANH)
def _tanh(c: NodeCheck) -> None:
    c.max_version(2)
    x = c.in_type(0)
    c.expect(is_float(x) or (is_quantized(x) and c.sdk >= SDK_29), F.UNSUPPORTED_INPUT_TYPE,
             " NNAPI only support float tanh.")


@validator(B.ELU)
def _elu(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_30)
    c.expect(c.in_type(0) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "NNAPI only supports floating point input.")


@validator(B.LEAKY_RELU, B.PRELU)
def _prelu(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8))


@validator(B.ABS, B.EXP, B.LOG, B.POW, B.SQRT, B.SIN, B.COS)
def _float_unary(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    c.float_op()


@validator(B.RSQRT)
def _rsqrt(c: NodeCheck) -> None:
    c.op_version(2)
    c.min_sdk(SDK_29)
    if c.sdk < FL7:
        c.float_op()
    else:
        c.float_or_quant8_op()


@validator(B.FLOOR)
def _floor(c: NodeCheck) -> None:
    c.op_version(1)


@validator(B.NEG)
def _neg(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.INT32))


@validator(B.MAXIMUM, B.MINIMUM)
def _maximum(c: NodeCheck) -> None:
    c.max_version(3)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8, T.INT32))
    for i in (0, 1):
        t = c.input(i)
        if t is not None and t.rank == 0:
            c.expect(t.constant, F.UNSUPPORTED_INPUT_TYPE, "Scalar operand should be constant")


@validator(B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL, B.EQUAL, B.NOT_EQUAL)
def _comparison(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8, T.BOOL, T.INT32))


@validator(B.LOGICAL_OR, B.LOGICAL_AND, B.LOGICAL_NOT)
def _logical(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    c.expect(c.in_type(0) == T.BOOL, F.UNSUPPORTED_INPUT_TYPE, "Input should be bool")


@validator(B.BATCH_MATMUL)
def _batch_matmul(c: NodeCheck) -> None:
    c.op_version(2)
    c.min_sdk(FL6)
    a, b = c.input(0), c.input(1)
    c.type_in(c.in_type(0), (T.FLOAT32, T.INT32, T.INT8))
    c.expect(c.in_type(0) == c.in_type(1), F.UNSUPPORTED_HYBRID_OPERATOR, "NNAPI does not support hybrid batch matmul")
    rank = c.rank(0)
    c.expect(2 <= rank <= 4, F.UNSUPPORTED_OPERAND_RANK,
             "NNAPI does not support input rank greater than 4 or less than 2")
    broadcast = a is None or b is None or a.rank != b.rank or a.dims[:-2] != b.dims[:-2]
    c.expect(not broadcast, F.UNSUPPORTED_INPUT_TYPE, "NNAPI does not support broadcast batch matmul")
