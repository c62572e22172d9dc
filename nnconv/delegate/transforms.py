"""The delegate's composite lowerings (`NNAPIOpBuilder::Transform*`, and the fully quantized LSTM of
`AddOpsAndTensors`): TFLite ops it builds from several NNAPI operations, or whose operand list it assembles
itself. Each writes the same operands in the same order as the delegate, intermediate quantization included."""

from __future__ import annotations

import math

import numpy as np

from nnconv.delegate.graph import DelegateGraph, Node
from nnconv.delegate.operands import BuildCrash, BuildError, Flag, OperandBuilder
from nnconv.nnapi.enums import FuseCode
from nnconv.nnapi.enums import OperandType as O
from nnconv.nnapi.enums import OperationType as N
from nnconv.tflite.schema_enums import TensorType as T

f32 = np.float32
SIGNED = Flag.USE_INT8_ASYMM_SIGNED


def _uint8_params(lo: np.float32, hi: np.float32) -> tuple[float, int]:
    """`CalculateQuantizationParams`: uint8 scale and zero point for [lo, hi] (zero point truncated)."""
    scale = f32((hi - lo) / f32(255.0))
    if lo > 0:
        zp = 0
    elif hi < 0:
        zp = 255
    else:
        zp = int(f32(f32(0.0) - lo) / scale) if scale else 0
    return float(scale), zp


def _single_value(b: OperandBuilder, value: np.float32, quantized: bool) -> None:
    """`AddSingleValueConstantTensor`: [value] as float32, or as uint8 64 with scale value / 64."""
    if not quantized:
        b.vector(O.TENSOR_FLOAT32, np.asarray([value], np.float32))
    else:
        b.vector(O.TENSOR_QUANT8_ASYMM, np.asarray([64], np.uint8), scale=float(f32(value / f32(64))), zero_point=0)


def hard_swish(b: OperandBuilder, graph: DelegateGraph, node: Node, int8_conversion: bool) -> None:
    """hard_swish(x) = 0.5x * relu1(x / 3) + 0.5x, as MUL, MUL, MUL, ADD (before Android 11)."""
    x = graph.tensor(node.inputs[0])
    scale, zp = f32(x.scale), x.zero_point
    flags = Flag.NONE
    if int8_conversion:
        flags |= Flag.INT8_CONVERSION
        zp += 128
    quantized = x.type in (T.INT8, T.UINT8)
    nn = O.TENSOR_QUANT8_ASYMM if quantized else O.TENSOR_FLOAT32
    lo = f32(f32(0 - zp) * scale) if quantized else f32(0)
    hi = f32(f32(255 - zp) * scale) if quantized else f32(0)
    s1_lo, s1_hi = (max(f32(lo / f32(3)), f32(-1)), min(f32(hi / f32(3)), f32(1))) if quantized else (f32(0), f32(0))
    s1_scale, s1_zp = _uint8_params(s1_lo, s1_hi) if quantized else (0.0, 0)
    b.add_tensor_input(node.inputs[0], False, flags)
    _single_value(b, f32(1.0) / f32(3.0), quantized)
    b.scalar_int32(int(FuseCode.RELU1))
    s1 = b.additional_output(nn, x.dims, s1_scale, s1_zp)
    b.finish_operation(N.MUL, node.index)

    s2_lo, s2_hi = f32(lo / f32(2)), f32(hi / f32(2))
    b.add_tensor_input(node.inputs[0], False, flags)
    _single_value(b, f32(0.5), quantized)
    b.scalar_int32(int(FuseCode.NONE))
    s2 = b.additional_output(nn, x.dims, float(f32(scale / f32(2))), zp)
    b.finish_operation(N.MUL, node.index)

    b.inputs += [s1, s2]
    b.scalar_int32(int(FuseCode.NONE))
    s3_scale, s3_zp = 0.0, 0
    if quantized:
        top = max(f32(s1_hi * s2_hi), f32(s1_lo * s2_lo))
        s3_scale, s3_zp = _uint8_params(f32(0), top)
    s3 = b.additional_output(nn, x.dims, s3_scale, s3_zp)
    b.finish_operation(N.MUL, node.index)

    b.inputs += [s2, s3]
    b.scalar_int32(int(FuseCode.NONE))
    b.add_tensor_output(node.outputs[0], flags)
    b.finish_operation(N.ADD, node.index)


def append_reshape(b: OperandBuilder, graph: DelegateGraph, source: int, output: int, node: int) -> None:
    """`AppendReshape`: RESHAPE an intermediate into the TFLite output's dims."""
    b.inputs.append(source)
    b.vector(O.TENSOR_INT32, np.asarray(graph.tensor(output).dims, np.int32))
    b.add_tensor_output(output, SIGNED)
    b.finish_operation(N.RESHAPE, node)


def append_requantize(b: OperandBuilder, graph: DelegateGraph, source: int, output: int, node: int,
                      flags: Flag) -> None:
    """`AppendRequantize`: ADD of a zero to move an intermediate to the output's scale and zero point."""
    b.inputs.append(source)
    out = graph.tensor(output)
    if out.type not in (T.UINT8, T.INT8):
        raise BuildError("IsQuantized(output_tensor.type) was not true.")
    unsigned = out.type == T.UINT8 or bool(flags & Flag.INT8_CONVERSION)
    b.vector(O.TENSOR_QUANT8_ASYMM if unsigned else O.TENSOR_QUANT8_ASYMM_SIGNED, np.zeros(1, np.int8).view(
        np.uint8 if unsigned else np.int8), scale=1.0, zero_point=0)
    b.scalar_int32(int(FuseCode.NONE))
    b.add_tensor_output(output, flags)
    b.finish_operation(N.ADD, node)


def pack(b: OperandBuilder, graph: DelegateGraph, node: Node) -> None:
    """PACK before feature level 6: CONCATENATION along the axis, then RESHAPE to the packed shape."""
    x = graph.tensor(node.inputs[0])
    axis = int(getattr(node.options, "axis", 0))
    axis = x.rank + axis + 1 if axis < 0 else axis
    if axis >= x.rank:
        raise BuildError("axis < input_tensor.dims->size was not true.")
    total = 0
    for t in node.inputs:
        total += graph.tensor(t).dims[axis]
        b.add_tensor_input(t, False, SIGNED)
    b.scalar_int32(axis)
    shape = [total if i == axis else d for i, d in enumerate(x.dims)]
    concat = b.intermediate_output(x.type, shape, x.scale, x.zero_point)
    b.finish_operation(N.CONCATENATION, node.index)
    append_reshape(b, graph, concat, node.outputs[0], node.index)


def unpack(b: OperandBuilder, graph: DelegateGraph, node: Node) -> None:
    """UNPACK: RESHAPE merging the axis with the next one, then SPLIT along it."""
    x = graph.tensor(node.inputs[0])
    axis = int(getattr(node.options, "axis", 0))
    axis = axis + x.rank if axis < 0 else axis
    num = int(getattr(node.options, "num", 0))
    if not 0 <= axis < x.rank - 1:
        raise BuildError("axis < (input_tensor.dims->size - 1) was not true.")
    if num != x.dims[axis] or num != len(node.outputs):
        raise BuildError("num_splits == input_tensor.dims->data[axis] was not true.")
    merged = list(x.dims[:axis]) + [x.dims[axis] * x.dims[axis + 1]] + list(x.dims[axis + 2:])
    b.add_tensor_input(node.inputs[0], False, SIGNED)
    b.vector(O.TENSOR_INT32, np.asarray(merged, np.int32))
    scale = x.scale if not (x.type in (T.UINT8, T.INT8) and x.scale == 0.0) else 1.0
    reshaped = b.intermediate_output(x.type, merged, scale, x.zero_point)
    b.finish_operation(N.RESHAPE, node.index)
    b.inputs.append(reshaped)
    b.scalar_int32(axis)
    b.scalar_int32(num)
    for t in node.outputs:
        b.add_tensor_output(t, SIGNED)
    b.finish_operation(N.SPLIT, node.index)


def split_v(b: OperandBuilder, graph: DelegateGraph, node: Node, unknown: int) -> None:
    """SPLIT_V: one SLICE per output."""
    x = graph.tensor(node.inputs[0])
    sizes = [int(v) for v in graph.tensor(node.inputs[1]).values()]
    axis = int(graph.tensor(node.inputs[2]).values()[0])
    axis = axis + x.rank if axis < 0 else axis
    if not 0 <= axis < x.rank:
        raise BuildError("axis < input_rank was not true.")
    begin_at = 0
    for k, size in enumerate(sizes):
        size = unknown if size == -1 else size
        if size <= 0:
            raise BuildError("split_size > 0 was not true.")
        begin = [begin_at if i == axis else 0 for i in range(x.rank)]
        extent = [size if i == axis else d for i, d in enumerate(x.dims)]
        begin_at += size
        b.add_tensor_input(node.inputs[0], False, SIGNED)
        b.vector(O.TENSOR_INT32, np.asarray(begin, np.int32))
        b.vector(O.TENSOR_INT32, np.asarray(extent, np.int32))
        b.add_tensor_output(node.outputs[k], SIGNED)
        b.finish_operation(N.SLICE, node.index)


def squared_difference(b: OperandBuilder, graph: DelegateGraph, node: Node) -> None:
    """(a - b)^2 as SUB then MUL; a quantized difference gets a scale that covers sqrt of the output range."""
    lhs, out = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    top, zp = f32(0), 0
    if lhs.type == T.FLOAT32:
        nn = O.TENSOR_FLOAT32
    elif lhs.type == T.INT32:
        nn = O.TENSOR_INT32
    elif lhs.type == T.UINT8:
        top, zp, nn = f32(f32(255 - out.zero_point) * f32(out.scale)), 128, O.TENSOR_QUANT8_ASYMM
    elif lhs.type == T.INT8:
        top, zp, nn = f32(f32(127 - out.zero_point) * f32(out.scale)), 0, O.TENSOR_QUANT8_ASYMM_SIGNED
    else:
        raise BuildError("unsupported input type for SQUARED_DIFFERENCE")
    scale = f32(f32(2.0) * f32(math.sqrt(top)) / f32(254.0))
    for t in node.inputs[:2]:
        b.add_tensor_input(t, False, Flag.SCALAR_AS_TENSOR | SIGNED)
    b.scalar_int32(int(FuseCode.NONE))
    diff = b.additional_output(nn, out.dims, float(scale), zp)
    b.finish_operation(N.SUB, node.index)
    b.inputs += [diff, diff]
    b.scalar_int32(int(FuseCode.NONE))
    b.add_tensor_output(node.outputs[0], SIGNED)
    b.finish_operation(N.MUL, node.index)


def cos(b: OperandBuilder, graph: DelegateGraph, node: Node) -> None:
    """cos(x) = sin(pi/2 - x): SUB from a constant of pi/2, then SIN."""
    x, out = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    b.new_constant(O.TENSOR_FLOAT32, x.dims, np.full(x.num_elements, np.float32(math.pi / 2), np.float32),
                   x.scale, x.zero_point)
    b.add_tensor_input(node.inputs[0], False)
    b.scalar_int32(int(FuseCode.NONE))
    diff = b.additional_output(O.TENSOR_FLOAT32, out.dims, 0.0, 0)
    b.finish_operation(N.SUB, node.index)
    b.inputs.append(diff)
    b.add_tensor_output(node.outputs[0])
    b.finish_operation(N.SIN, node.index)


# QUANTIZED_LSTM's omitted inputs: int8 weights, int32 biases, int16 for the rest (cell-to-* and layer norm)
_OMITTED_INT8 = (1, 5, 16)  # input-to-input, recurrent-to-input, projection weights
_OMITTED_INT32 = (12, 13, 14, 15, 17)  # the four gate biases, projection bias
_INPUT, _PREV_OUTPUT = 0, 18


def quantized_lstm(b: OperandBuilder, graph: DelegateGraph, node: Node,
                   state_outputs: list[int], state_inputs: list[int]) -> None:
    """The int8 full LSTM kernel as QUANTIZED_LSTM (feature level 4+), its intermediate scales as scalars."""
    for pos, t in enumerate(node.inputs):
        if t == -1:
            if pos in _OMITTED_INT8:
                b.omitted(O.TENSOR_QUANT8_SYMM)
            elif pos in _OMITTED_INT32:
                b.omitted(O.TENSOR_INT32)
            else:
                b.omitted(O.TENSOR_QUANT16_SYMM)
        else:
            b.add_tensor_input(t, False, SIGNED if pos in (_INPUT, _PREV_OUTPUT) else Flag.NONE)
    b.scalar_float32(float(getattr(node.options, "cell_clip", 0.0)))
    b.scalar_float32(float(getattr(node.options, "proj_clip", 0.0)))
    if len(node.intermediates) != 5:
        raise BuildError("node->intermediates->size != 5")
    for k, t in enumerate(node.intermediates):
        q = graph.tensor(t).quant
        if not graph.tensor(t).affine or not q.zero_point:
            # upstream casts `quantization.params` to TfLiteAffineQuantization* and reads scale->data[0]
            # unchecked: an intermediate without quantization (the converter's int8 LSTMs without layer norm
            # leave the four gate intermediates float32, which TFLite's own kernel ignores) is a null pointer
            raise BuildCrash(f"the delegate reads the quantization of intermediate tensor #{t} "
                             f"'{graph.tensor(t).name}' of the int8 LSTM (node #{node.index}), which has none: a null "
                             "pointer dereference (quantize every intermediate of the LSTM, as the converter does "
                             "for layer-normalized int8 LSTMs)")
        if k == 4:
            b.scalar_int32(int(q.zero_point[0]))
        b.scalar_float32(float(np.float32(q.scale[0])))
    for tensor, nn in ((node.inputs[18], O.TENSOR_QUANT8_ASYMM_SIGNED), (node.inputs[19], O.TENSOR_QUANT16_SYMM)):
        state = graph.tensor(tensor)
        state_outputs.append(b.additional_output(nn, state.dims, state.scale, state.zero_point))
        state_inputs.append(tensor)
    for t in node.outputs:
        b.add_tensor_output(t, SIGNED)
    b.finish_operation(N.QUANTIZED_LSTM, node.index)
