"""The delegate's checks of tensor-manipulation, reduction, quantization and indexing builtins
(`NNAPIDelegateKernel::Validate`, one case each). Messages are the delegate's, verbatim."""

from __future__ import annotations

import numpy as np

from nnconv.delegate.failures import QUANT8, FailureType, NodeCheck, is_quantized
from nnconv.delegate.setup import FL6, FL7, SDK_28, SDK_29, SDK_30
from nnconv.delegate.validator_registry import validator
from nnconv.tflite.schema_enums import ActivationFunctionType as Act
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

F = FailureType
_INT32_MIN, _INT32_MAX = -2 ** 31, 2 ** 31 - 1


def _fits_int32(values: np.ndarray) -> bool:
    return bool(values.size == 0 or (values.min() >= _INT32_MIN and values.max() <= _INT32_MAX))


@validator(B.RESHAPE)
def _reshape(c: NodeCheck) -> None:
    c.op_version(1)
    if c.sdk < FL6:
        c.float_or_quant8_op()
    else:
        c.float_quant8_or_int32_op()
    c.expect(c.rank(0) <= 4, F.UNSUPPORTED_OPERAND_RANK, "Input rank should be <= 4")
    out = c.output(0)
    c.expect(out is None or out.rank <= 4, F.UNSUPPORTED_OPERAND_RANK, "Output rank should be <= 4")
    if c.n_inputs >= 2:
        c.expect(c.constant_input(1), F.INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE,
                 "The shape input tensor must be constant.")
    if c.n_inputs == 1:
        shape = tuple(c.option("new_shape", None) or ())
        # legacy models write a scalar's new shape as [0]
        count = 0 if shape == (0,) else len(shape)
        c.expect(count > 0, F.UNSUPPORTED_OPERAND_RANK, "New shape rank should be > 0")


def _size_input_checks(c: NodeCheck) -> None:
    c.expect(c.n_inputs >= 2, F.UNSUPPORTED_OPERATOR_VARIANT, "Expected at least 2 inputs")
    if c.n_inputs >= 2:
        c.expect(c.constant_input(1), F.INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE,
                 "The size input tensor must be constant.")


def _no_corner_options(c: NodeCheck) -> None:
    if c.sdk <= SDK_29:
        c.expect(not c.option("align_corners", False), F.UNSUPPORTED_OPERAND_VALUE,
                 "NNAPI does not support align_corners == true.")
        c.expect(not c.option("half_pixel_centers", False), F.UNSUPPORTED_OPERAND_VALUE,
                 "NNAPI does not support half_pixel_centers == true.")


@validator(B.RESIZE_BILINEAR)
def _resize_bilinear(c: NodeCheck) -> None:
    c.max_version(3)
    c.expect(c.rank(0) == 4, F.UNSUPPORTED_OPERAND_RANK, "Input should have rank 4")
    c.float_or_quant8_op()
    _size_input_checks(c)
    if c.sdk < SDK_29:
        out = c.output(0)
        dims = out.dims if out is not None else ()
        c.expect(len(dims) > 2 and dims[1] == dims[2], F.UNSUPPORTED_OPERAND_VALUE,
                 "Require width == height due to driver differences in NNAPI < 1.2")
    _no_corner_options(c)
    if c.sdk < SDK_29:
        c.expect(c.in_type(0) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "NNAPI 1.0 & 1.1 only supports float input.")


@validator(B.RESIZE_NEAREST_NEIGHBOR)
def _resize_nearest(c: NodeCheck) -> None:
    c.max_version(3)
    c.min_sdk(SDK_29)
    c.float_or_quant8_op()
    _size_input_checks(c)
    _no_corner_options(c)


@validator(B.SQUEEZE)
def _squeeze(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_28)
    if c.sdk == SDK_28:
        c.expect(bool(c.option("squeeze_dims", None)), F.UNSUPPORTED_OPERAND_VALUE,
                 "NNAPI 1.1 does not support null squeeze_dims properly.")


@validator(B.CONCATENATION)
def _concatenation(c: NodeCheck) -> None:
    c.max_version(2)
    c.expect(c.option("fused_activation_function") == Act.NONE, F.NO_ACTIVATION_EXPECTED,
             "No activation function supported")
    c.expect(c.rank(0) <= 4, F.UNSUPPORTED_OPERAND_RANK, "Input rank should be less than 4")
    x = c.in_type(0)
    c.type_in(x, (T.FLOAT16, T.FLOAT32, T.UINT8, T.INT8))
    if x == T.UINT8 and c.sdk < SDK_29:
        first = c.input(0)
        for i in range(1, c.n_inputs):
            t = c.input(i)
            same = t is not None and first is not None and t.scale == first.scale and t.zero_point == first.zero_point
            if not c.expect(same, F.UNSUPPORTED_OPERAND_VALUE, "NNAPI 1.0-1 only supported concatenating quantized "
                            "tensor of the same scale and offset."):
                break


@validator(B.DEQUANTIZE)
def _dequantize(c: NodeCheck) -> None:
    x = c.input(0)
    if c.sdk >= SDK_30 and x is not None and x.type == T.FLOAT16 and not x.constant:
        return  # float16 -> float32 of a computed tensor: taken whatever its version
    c.expect(c.version in (1, 2), F.UNSUPPORTED_OPERATOR_VERSION, "Supported op versions are 1 and 2 only")
    t = x.type if x is not None else None
    if c.sdk < SDK_29:
        c.type_in(t, (T.UINT8,))
    else:
        c.type_in(t, (T.UINT8, T.INT8))
        if c.sdk == SDK_29 and t == T.INT8:
            c.expect(x.zero_point == 0, F.UNSUPPORTED_INPUT_TYPE,
                     "NN API supports int8 type since version 1.2 but only for symmetric quantization.")


@validator(B.DENSIFY)
def _densify(c: NodeCheck) -> None:
    # sparse weights are densified at build time from feature level 4; otherwise refused without a word
    if not (c.sdk >= SDK_30 and c.constant_input(0)):
        c.silent_refusal = True


@validator(B.QUANTIZE)
def _quantize(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    x, y = c.input(0), c.output(0)
    t = x.type if x is not None else None
    c.expect(t == T.FLOAT32 or is_quantized(t), F.UNSUPPORTED_INPUT_TYPE, "Value should be quantized or Float32.")
    if is_quantized(t):
        c.expect(x.scale > 0.0, F.UNSUPPORTED_QUANTIZATION_PARAMETERS, "Quantization scale should be > 0.")
    out_type = y.type if y is not None else None
    allowed = (T.UINT8,) if c.sdk < SDK_30 else QUANT8
    c.expect(out_type in allowed, F.UNSUPPORTED_OUTPUT_TYPE, "Output should be kTfLiteUInt8.")
    c.expect(y is not None and y.scale > 0.0, F.UNSUPPORTED_QUANTIZATION_PARAMETERS,
             "Quantization scale should be > 0.")


@validator(B.CAST)
def _cast(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    y = c.output(0)
    out_type = y.type if y is not None else None
    if c.sdk >= SDK_30:
        c.type_in(c.in_type(0), (T.FLOAT32, T.INT32, T.UINT8, T.INT8))
        c.expect(out_type in (T.FLOAT32, T.INT32, T.UINT8, T.INT8), F.UNSUPPORTED_OUTPUT_TYPE,
                 "Output type should be one of kTfLiteFloat32, kTfLiteInt32, kTfLiteUInt8, kTfLiteInt8.")
    else:
        c.type_in(c.in_type(0), (T.FLOAT32, T.INT32, T.UINT8))
        c.expect(out_type in (T.FLOAT32, T.INT32, T.UINT8), F.UNSUPPORTED_OUTPUT_TYPE,
                 "Output type should be one of kTfLiteFloat32, kTfLiteInt32, kTfLiteUInt8.")


def _has_zero_extent(c: NodeCheck) -> bool:
    x = c.input(0)
    return x is not None and 0 in x.dims


@validator(B.PAD, B.PADV2)
def _pad(c: NodeCheck) -> None:
    c.max_version(2)
    c.float_or_quant8_op()
    c.min_sdk(SDK_28)
    c.expect(not _has_zero_extent(c), F.UNSUPPORTED_OPERAND_VALUE,
             "NN API pad ops do not support input tensors with no elements")
    c.expect(c.n_inputs >= 2, F.UNSUPPORTED_OPERATOR_VARIANT, "Expecting at least 2 inputs")
    if c.n_inputs == 3:  # mapped to PAD_V2 (even when the value input is omitted: the count decides here)
        c.expect(c.sdk >= SDK_29, F.UNSUPPORTED_OPERATOR_VARIANT,
                 "Specification of the padding value is supported from NNAPI 1.2.")
    elif c.sdk < SDK_29:
        c.expect(c.in_type(0) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE,
                 "Only Float32 inputs are supported before NNAPI 1.2")


@validator(B.MIRROR_PAD)
def _mirror_pad(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(FL7)
    c.float_quant8_or_int32_op()
    # (the mode is never unknown once TFLite has parsed the options: REFLECT and SYMMETRIC are all there is)
    c.expect(not _has_zero_extent(c), F.UNSUPPORTED_OPERAND_VALUE,
             "NN API pad ops do not support input tensors with no elements")
    c.expect(c.n_inputs == 2, F.UNSUPPORTED_OPERATOR_VARIANT, "Expecting 2 inputs")


@validator(B.REVERSE_V2)
def _reverse(c: NodeCheck) -> None:
    c.max_version(3)
    c.min_sdk(FL7)
    c.float_quant8_or_int32_op()
    c.expect(c.n_inputs == 2, F.UNSUPPORTED_OPERATOR_VARIANT, "Expecting 2 inputs")


@validator(B.SPACE_TO_BATCH_ND)
def _space_to_batch(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_28)


@validator(B.BATCH_TO_SPACE_ND)
def _batch_to_space(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_28)
    crops = c.input(2)
    # The delegate reads the crops buffer whatever its allocation: a tensor whose value is not known yet
    # (computed at run time) is taken as the zeros a fresh arena holds.
    ok = crops is not None and crops.type == T.INT32 and crops.num_elements == 4
    if ok and crops.data is not None:
        ok = not np.any(crops.values()[:4])
    c.expect(ok, F.UNSUPPORTED_OPERAND_VALUE, "All crops should be 0.")


@validator(B.STRIDED_SLICE)
def _strided_slice(c: NodeCheck) -> None:
    c.max_version(2)
    c.float_or_quant8_op()
    c.min_sdk(SDK_28)


@validator(B.TRANSPOSE)
def _transpose(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_28)
    c.expect(c.n_inputs > 1 and c.constant_input(1), F.INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE,
             "Dynamically-sized tensors not supported.")


@validator(B.SLICE)
def _slice(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.INT32, T.UINT8, T.INT8))
    c.expect(c.in_type(1) == T.INT32, F.UNSUPPORTED_INPUT_TYPE, "Begin type should be Int32")
    c.expect(c.in_type(2) == T.INT32, F.UNSUPPORTED_INPUT_TYPE, "Size type should be Int32")


@validator(B.SPACE_TO_DEPTH)
def _space_to_depth(c: NodeCheck) -> None:
    c.max_version(2)
    c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8))


@validator(B.DEPTH_TO_SPACE)
def _depth_to_space(c: NodeCheck) -> None:
    c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8))


@validator(B.MEAN)
def _mean(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_28)
    x = c.in_type(0)
    if c.sdk >= SDK_29:
        c.expect(x == T.FLOAT32 or is_quantized(x), F.UNSUPPORTED_INPUT_TYPE, "Expected Float32 or Quantized input")
    else:
        c.expect(x == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "Expected Float32 input")
    out = c.output(0)
    c.expect(out is not None and out.rank > 0, F.UNSUPPORTED_OUTPUT_TYPE,
             "NNAPI does not support generating a scalar as output for MEAN.")
    c.expect(c.rank(0) <= 4, F.UNSUPPORTED_OPERAND_VALUE, "NNAPI does not support mean of a tensor with rank > 4")


@validator(B.REDUCE_ANY)
def _reduce_any(c: NodeCheck) -> None:
    c.op_version(2)
    c.min_sdk(SDK_29)
    out = c.output(0)
    c.expect(out is not None and out.rank != 0, F.UNSUPPORTED_OUTPUT_TYPE,
             "NNAPI does not support generating a scalar as output.")


@validator(B.REDUCE_MIN, B.REDUCE_MAX)
def _reduce_min_max(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8))
    # (the delegate tests the input's rank under the output's message)
    c.expect(c.rank(0) != 0, F.UNSUPPORTED_OUTPUT_TYPE, "NNAPI does not support generating a scalar as output.")


@validator(B.REDUCE_PROD, B.SUM)
def _reduce_prod_sum(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    out = c.output(0)
    c.expect(out is not None and out.rank != 0, F.UNSUPPORTED_OUTPUT_TYPE,
             "NNAPI does not support generating a scalar as output")
    c.expect(c.in_type(0) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "NNAPI only supports floating point input.")


@validator(B.ARG_MAX, B.ARG_MIN)
def _arg_max(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT16, T.FLOAT32, T.INT32, T.UINT8, T.INT8))
    axis = c.input(1)
    if axis is not None and axis.type == T.INT64:
        c.expect(axis.constant and axis.data is not None and _fits_int32(axis.values()[:1]), F.UNSUPPORTED_INPUT_TYPE,
                 "NNAPI only supports axis as int32. If the axis type is int64 and constant we can convert it to "
                 "int32 if the value isn't too large.")
    else:
        c.expect(axis is not None and axis.type == T.INT32, F.UNSUPPORTED_INPUT_TYPE, "Axis should be Int32")
    c.expect(c.option("output_type") == T.INT32, F.UNSUPPORTED_OUTPUT_TYPE, "NNAPI only supports int32 output.")


@validator(B.TILE)
def _tile(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.INT8, T.UINT8, T.INT32))
    c.expect(c.in_type(1) == T.INT32, F.UNSUPPORTED_INPUT_TYPE, "Multipliers should be Int32")


@validator(B.TOPK_V2)
def _topk(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.INT32, T.UINT8, T.INT8))
    c.expect(c.in_type(1) == T.INT32 and c.constant_input(1), F.UNSUPPORTED_INPUT_TYPE,
             "K param should be a constant of type Int32")


@validator(B.SELECT)
def _select(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(1), (T.FLOAT32, T.INT32, T.UINT8, T.INT8))
    cond, x = c.input(0), c.input(1)
    c.expect(cond is not None and x is not None and cond.dims == x.dims, F.UNSUPPORTED_OPERAND_VALUE,
             "Condition and inputs tensors should have the same shape")


@validator(B.GATHER)
def _gather(c: NodeCheck) -> None:
    c.op_version(2)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.FLOAT16, T.INT32, T.UINT8, T.INT8))
    c.expect(c.in_type(1) == T.INT32, F.UNSUPPORTED_INPUT_TYPE, "Positions type should be one of kTfLiteInt32")
    c.expect(c.rank(1) != 0, F.UNSUPPORTED_OPERAND_RANK, "0-dimension args are not supported by NNAPI.")


@validator(B.EXPAND_DIMS)
def _expand_dims(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    c.type_in(c.in_type(0), (T.FLOAT32, T.FLOAT16, T.INT32, T.UINT8, T.INT8))
    c.expect(c.in_type(1) == T.INT32 and c.constant_input(1), F.UNSUPPORTED_INPUT_TYPE,
             "NNAPI only supports constant int32 axis tensor.")


@validator(B.SPLIT)
def _split(c: NodeCheck) -> None:
    c.op_version(3)
    c.min_sdk(SDK_29)
    value = c.in_type(1)  # SPLIT's inputs are (axis, value)
    if c.sdk >= SDK_30:
        c.type_in(value, (T.FLOAT32, T.UINT8, T.INT8, T.INT32))
    else:
        c.type_in(value, (T.FLOAT32, T.UINT8, T.INT32))
    c.expect(c.in_type(0) == T.INT32 and c.constant_input(0), F.UNSUPPORTED_INPUT_TYPE,
             "NNAPI only supports constant int32 axis tensor.")


def split_v_unknown_size(c: NodeCheck) -> int:
    """`ComputeSplitVUnknownSplitSize`: the size a -1 entry stands for, or -1 when every size is given."""
    x, sizes, axis = c.input(0), c.input(1), c.input(2)
    values = [int(v) for v in sizes.values()]
    if -1 not in values:
        return -1
    a = int(axis.values()[0])
    a = a + x.rank if a < 0 else a
    return x.dims[a] - sum(v for v in values if v != -1)


@validator(B.SPLIT_V)
def _split_v(c: NodeCheck) -> None:
    c.op_version(2)
    c.min_sdk(SDK_30)
    c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8, T.INT32))
    sizes, axis = c.input(1), c.input(2)
    sizes_ok = sizes is not None and sizes.type == T.INT32 and sizes.rank == 1 and sizes.constant
    axis_ok = axis is not None and axis.type == T.INT32 and axis.constant
    c.expect(sizes_ok, F.UNSUPPORTED_INPUT_TYPE, "NNAPI only supports constant int32 size_splits vector.")
    c.expect(axis_ok, F.UNSUPPORTED_INPUT_TYPE, "NNAPI only supports constant int32 axis tensor.")
    if sizes_ok and axis_ok:
        c.expect(bool(np.all(sizes.values() != 0)), F.UNSUPPORTED_INPUT_TYPE,
                 "NNAPI only supports non-zero split sizes.")
        c.expect(split_v_unknown_size(c) != 0, F.UNSUPPORTED_INPUT_TYPE, "NNAPI only supports non-zero split sizes.")


@validator(B.FILL)
def _fill(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_30)
    dims, value = c.input(0), c.input(1)
    constant = dims is not None and dims.constant
    c.expect(constant, F.UNSUPPORTED_INPUT_TYPE, "NNAPI doesn't support dynamic dimensions tensor.")
    c.type_in(dims.type if dims is not None else None, (T.INT32, T.INT64))
    if constant:
        c.expect(bool(dims.dims) and dims.dims[0] != 0, F.UNSUPPORTED_OPERAND_VALUE,
                 "NNAPI doesn't support generating scalars from FILL")
        if dims.type == T.INT64:
            c.expect(_fits_int32(dims.values()), F.UNSUPPORTED_OPERAND_VALUE,
                     "NNAPI only supports int32 dimensions tensor. If the dimensions type is int64 and they are "
                     "constant we can convert them to int32 if the value isn't too large.")
    c.type_in(value.type if value is not None else None, (T.FLOAT32, T.INT32, T.INT64))
    if value is not None and value.type == T.INT64 and value.constant:
        c.expect(_fits_int32(value.values()[:1]), F.UNSUPPORTED_INPUT_TYPE,
                 "NNAPI only supports int32 input. If the input type is int64 and constant we can convert it to "
                 "int32 if the value isn't too large.")


@validator(B.PACK)
def _pack(c: NodeCheck) -> None:
    c.op_version(2)
    c.min_sdk(SDK_30)
    if c.sdk >= FL6:
        c.type_in(c.in_type(0), (T.INT32, T.FLOAT32, T.INT8, T.UINT8))
    else:
        c.type_in(c.in_type(0), (T.FLOAT32, T.INT8))
        axis = int(c.option("axis"))
        c.expect(axis != -1 and axis != c.rank(0), F.UNSUPPORTED_OPERAND_VALUE,
                 "NNAPI does not support axis being the last dimension")


@validator(B.UNPACK)
def _unpack(c: NodeCheck) -> None:
    c.op_version(2)
    c.min_sdk(SDK_30)
    c.type_in(c.in_type(0), (T.FLOAT32, T.UINT8, T.INT8))
    rank = c.rank(0)
    c.expect(rank > 1, F.UNSUPPORTED_OPERAND_VALUE, "NNAPI does not support unpacking a rank-1 tensor")
    c.expect(rank <= 4, F.UNSUPPORTED_OPERAND_VALUE, "NNAPI does not support unpacking a tensor with rank > 4")
    axis = int(c.option("axis"))
    c.expect(axis != -1 and axis != rank - 1, F.UNSUPPORTED_OPERAND_VALUE,
             "NNAPI does not support axis being the last dimension")
