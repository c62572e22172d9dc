"""`NNAPIDelegateKernel::Map`: the NNAPI operation of one node and the operands it appends after the node's
tensor inputs (scalars from the builtin options, generated constants, state outputs). `build.py` has already
added the node's tensor inputs (with the delegate's per-op exceptions) when a mapper runs, and adds its
outputs afterwards. Options are passed as TFLite parses them: padding as NNAPI's implicit padding code
(TFLite's own enum happens to match: SAME 1, VALID 2) and fused activations as NNAPI FuseCodes, unchanged."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from nnconv.delegate.graph import DelegateGraph, Node, TensorInfo
from nnconv.delegate.node_facts import is_hybrid, is_lstm_basic
from nnconv.delegate.operands import BuildCrash, BuildError, OperandBuilder
from nnconv.delegate.setup import SDK_30
from nnconv.nnapi.enums import OperandType as O
from nnconv.nnapi.enums import OperationType as N
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

_TFLITE_PADDING = {0: 1, 1: 2}  # schema Padding SAME/VALID -> TfLitePadding (= NNAPI's implicit codes)
_MIRROR_MODE = {0: 0, 1: 1}  # schema MirrorPadMode REFLECT/SYMMETRIC -> NNAPI's mode scalar
_LSH_SPARSE, _NNAPI_LSH_SPARSE = 1, 3


@dataclass
class MapArgs:
    """`NNAPIOpMappingArgs`: the builder, the node, and where state outputs are recorded."""

    b: OperandBuilder
    graph: DelegateGraph
    node: Node
    feature_level: int
    state_outputs: list[int] = field(default_factory=list)  # model_state_outputs_
    state_inputs: list[int] = field(default_factory=list)  # model_state_tfl_inputs_

    def option(self, name: str, default: object = 0) -> object:
        o = self.node.options
        return getattr(o, name, default) if o is not None else default

    def tensor(self, i: int) -> TensorInfo:
        t = self.node.inputs[i]
        if t < 0:
            # Map reads `context->tensors[node->inputs->data[i]]` unchecked: an omitted input is index -1
            # (undefined behaviour upstream), never the last tensor Python would return
            raise BuildCrash(f"the delegate's Map reads input {i} of {self.node.name}, which is omitted (-1): it "
                             "indexes TFLite's tensor array at -1 (undefined behaviour)")
        return self.graph.tensor(t)

    def activation(self) -> int:
        return int(self.option("fused_activation_function"))


Mapper = Callable[[MapArgs], N]
MAPPERS: dict[int, Mapper] = {}


def mapper(*ops: B) -> Callable[[Mapper], Mapper]:
    def register(fn: Mapper) -> Mapper:
        for op in ops:
            MAPPERS[int(op)] = fn
        return fn
    return register


def _plain(nn: N) -> Mapper:
    return lambda a: nn


for _op, _nn in ((B.ARG_MAX, N.ARGMAX), (B.ARG_MIN, N.ARGMIN), (B.HARD_SWISH, N.HARD_SWISH),
                 (B.L2_NORMALIZATION, N.L2_NORMALIZATION), (B.DEQUANTIZE, N.DEQUANTIZE), (B.FLOOR, N.FLOOR),
                 (B.RELU, N.RELU), (B.RELU_N1_TO_1, N.RELU1), (B.RELU6, N.RELU6), (B.LOGISTIC, N.LOGISTIC),
                 (B.TANH, N.TANH), (B.SPACE_TO_BATCH_ND, N.SPACE_TO_BATCH_ND),
                 (B.BATCH_TO_SPACE_ND, N.BATCH_TO_SPACE_ND),
                 (B.TRANSPOSE, N.TRANSPOSE), (B.ABS, N.ABS), (B.EXP, N.EXP), (B.LOG, N.LOG), (B.RSQRT, N.RSQRT),
                 (B.POW, N.POW), (B.SLICE, N.SLICE), (B.COS, N.SIN), (B.SIN, N.SIN), (B.SQRT, N.SQRT),
                 (B.EMBEDDING_LOOKUP, N.EMBEDDING_LOOKUP), (B.HASHTABLE_LOOKUP, N.HASHTABLE_LOOKUP),
                 (B.MAXIMUM, N.MAXIMUM), (B.MINIMUM, N.MINIMUM), (B.CAST, N.CAST), (B.PRELU, N.PRELU),
                 (B.TILE, N.TILE), (B.LOGICAL_OR, N.LOGICAL_OR), (B.LOGICAL_AND, N.LOGICAL_AND),
                 (B.LOGICAL_NOT, N.LOGICAL_NOT), (B.LESS, N.LESS), (B.LESS_EQUAL, N.LESS_EQUAL),
                 (B.GREATER, N.GREATER), (B.GREATER_EQUAL, N.GREATER_EQUAL), (B.EQUAL, N.EQUAL),
                 (B.NOT_EQUAL, N.NOT_EQUAL), (B.NEG, N.NEG), (B.SELECT, N.SELECT), (B.FILL, N.FILL),
                 (B.PACK, N.PACK), (B.REVERSE_V2, N.REVERSE)):
    MAPPERS[int(_op)] = _plain(_nn)


@mapper(B.ADD, B.MUL, B.SUB, B.DIV)
def _binary(a: MapArgs) -> N:
    a.b.scalar_int32(a.activation())
    return {B.ADD: N.ADD, B.MUL: N.MUL, B.SUB: N.SUB, B.DIV: N.DIV}[B(a.node.op)]


def _pool_params(a: MapArgs) -> None:
    b = a.b
    b.scalar_int32(_TFLITE_PADDING.get(int(a.option("padding")), 0))
    b.scalar_int32(int(a.option("stride_w")))
    b.scalar_int32(int(a.option("stride_h")))
    b.scalar_int32(int(a.option("filter_width")))
    b.scalar_int32(int(a.option("filter_height")))
    b.scalar_int32(a.activation())


@mapper(B.AVERAGE_POOL_2D, B.MAX_POOL_2D, B.L2_POOL_2D)
def _pool(a: MapArgs) -> N:
    _pool_params(a)
    pools = {B.AVERAGE_POOL_2D: N.AVERAGE_POOL_2D, B.MAX_POOL_2D: N.MAX_POOL_2D, B.L2_POOL_2D: N.L2_POOL_2D}
    return pools[B(a.node.op)]


def _dilation(a: MapArgs) -> None:
    dw, dh = int(a.option("dilation_w_factor", 1)), int(a.option("dilation_h_factor", 1))
    if dw != 1 or dh != 1:
        a.b.scalar_bool(False)  # NHWC
        a.b.scalar_int32(dw)
        a.b.scalar_int32(dh)


@mapper(B.CONV_2D)
def _conv(a: MapArgs) -> N:
    b = a.b
    b.scalar_int32(_TFLITE_PADDING.get(int(a.option("padding")), 0))
    b.scalar_int32(int(a.option("stride_w")))
    b.scalar_int32(int(a.option("stride_h")))
    x, w = a.tensor(0), a.tensor(1)
    # grouped only when both shapes were propagated (rank > 0)
    grouped = bool(x.dims) and bool(w.dims) and x.dims[3] != w.dims[3]
    if grouped:
        b.scalar_int32(x.dims[3] // w.dims[3])
    b.scalar_int32(a.activation())
    _dilation(a)
    return N.GROUPED_CONV_2D if grouped else N.CONV_2D


@mapper(B.DEPTHWISE_CONV_2D)
def _depthwise(a: MapArgs) -> N:
    b = a.b
    b.scalar_int32(_TFLITE_PADDING.get(int(a.option("padding")), 0))
    b.scalar_int32(int(a.option("stride_w")))
    b.scalar_int32(int(a.option("stride_h")))
    b.scalar_int32(int(a.option("depth_multiplier")))
    b.scalar_int32(a.activation())
    _dilation(a)
    return N.DEPTHWISE_CONV_2D


def zero_bias(a: MapArgs, input_tensor: int, filter_tensor: int, count: int) -> None:
    """`add_zero_bias`: NNAPI needs a bias; the delegate adds zeros (float32, or int32 with scale
    input_scale * filter_scale) in a tensor of its own."""
    b = a.b
    b.added_tensors += 1
    if input_tensor < 0 or filter_tensor < 0:
        raise BuildCrash(f"the delegate's zero bias reads an omitted (-1) input of {a.node.name}: it indexes "
                         "TFLite's tensor array at -1 (undefined behaviour)")
    x, w = a.graph.tensor(input_tensor), a.graph.tensor(filter_tensor)
    if x.type == T.FLOAT32:
        b.vector(O.TENSOR_FLOAT32, np.zeros(count, np.float32))
    else:
        scale = float(np.float32(np.float32(x.scale) * np.float32(w.scale)))
        b.vector(O.TENSOR_INT32, np.zeros(count, np.int32), scale=scale, zero_point=0)


@mapper(B.FULLY_CONNECTED)
def _fully_connected(a: MapArgs) -> N:
    node = a.node
    has_bias = len(node.inputs) == 3 and node.inputs[2] != -1
    if not has_bias:
        zero_bias(a, node.inputs[0], node.inputs[1], a.tensor(1).dims[0])
    a.b.scalar_int32(a.activation())
    return N.FULLY_CONNECTED


@mapper(B.SOFTMAX)
def _softmax(a: MapArgs) -> N:
    a.b.scalar_float32(float(a.option("beta", 0.0)))  # the axis operand is left out: -1
    return N.SOFTMAX


@mapper(B.RESHAPE)
def _reshape(a: MapArgs) -> N:
    if len(a.node.inputs) == 1:  # no shape tensor: the shape comes from the options
        shape = [int(v) for v in (a.option("new_shape", None) or ())]
        a.b.vector(O.TENSOR_INT32, np.asarray(shape, np.int32))
    return N.RESHAPE


@mapper(B.RESIZE_BILINEAR)
def _resize_bilinear(a: MapArgs) -> N:
    out = a.graph.tensor(a.node.outputs[0])
    a.b.scalar_int32(out.dims[2])  # width
    a.b.scalar_int32(out.dims[1])  # height
    align, half = bool(a.option("align_corners", False)), bool(a.option("half_pixel_centers", False))
    if align or half:
        a.b.scalar_bool(False)  # NHWC
        a.b.scalar_bool(align)
        a.b.scalar_bool(half)
    return N.RESIZE_BILINEAR


@mapper(B.RESIZE_NEAREST_NEIGHBOR)
def _resize_nearest(a: MapArgs) -> N:
    size = a.tensor(1).values()
    a.b.scalar_int32(int(size[1]))  # width
    a.b.scalar_int32(int(size[0]))  # height
    a.b.scalar_bool(False)  # NHWC
    align, half = bool(a.option("align_corners", False)), bool(a.option("half_pixel_centers", False))
    if align or half:
        a.b.scalar_bool(align)
        a.b.scalar_bool(half)
    return N.RESIZE_NEAREST_NEIGHBOR


@mapper(B.SQUEEZE)
def _squeeze(a: MapArgs) -> N:
    dims = list(a.option("squeeze_dims", None) or ())
    # the operand is added even when no axis is given (NNAPI requires it): then it is omitted
    a.b.vector(O.TENSOR_INT32, np.asarray(dims, np.int32) if dims else None, 0)
    return N.SQUEEZE


def _layer_norm_inputs(a: MapArgs, hybrid: bool) -> None:
    node = a.node
    if len(node.inputs) == 24:
        for i in range(20, 24):
            if node.inputs[i] != -1:
                a.b.add_tensor_input(node.inputs[i], hybrid)
            else:
                a.b.omitted()
    else:
        for _ in range(4):
            a.b.omitted()


@mapper(B.UNIDIRECTIONAL_SEQUENCE_LSTM)
def _sequence_lstm(a: MapArgs) -> N:
    b = a.b
    b.scalar_int32(a.activation())
    b.scalar_float32(float(a.option("cell_clip", 0.0)))
    b.scalar_float32(float(a.option("proj_clip", 0.0)))
    b.scalar_bool(bool(a.option("time_major", False)))
    _layer_norm_inputs(a, is_hybrid(a.graph, a.node))
    return N.UNIDIRECTIONAL_SEQUENCE_LSTM


@mapper(B.LOCAL_RESPONSE_NORMALIZATION)
def _lrn(a: MapArgs) -> N:
    a.b.scalar_int32(int(a.option("radius")))
    a.b.scalar_float32(float(a.option("bias", 0.0)))
    a.b.scalar_float32(float(a.option("alpha", 0.0)))
    a.b.scalar_float32(float(a.option("beta", 0.0)))
    return N.LOCAL_RESPONSE_NORMALIZATION


@mapper(B.LSH_PROJECTION)
def _lsh(a: MapArgs) -> N:
    kind = int(a.option("type"))
    if kind == _LSH_SPARSE:  # NNAPI 1.2 numbers sparse 3 and wants a (null) weight operand
        kind = _NNAPI_LSH_SPARSE
        a.b.omitted()
    a.b.scalar_int32(kind)
    return N.LSH_PROJECTION


@mapper(B.CONCATENATION)
def _concatenation(a: MapArgs) -> N:
    axis = int(a.option("axis"))
    a.b.scalar_int32(axis + a.tensor(0).rank if axis < 0 else axis)
    return N.CONCATENATION


@mapper(B.PAD, B.PADV2)
def _pad(a: MapArgs) -> N:
    # PAD wherever it will do (more drivers take it); PAD_V2 only to give the padding value
    node = a.node
    if len(node.inputs) == 2 or node.inputs[2] == -1:
        return N.PAD
    return N.PAD_V2


@mapper(B.UNIDIRECTIONAL_SEQUENCE_RNN)
def _sequence_rnn(a: MapArgs) -> N:
    a.b.scalar_int32(a.activation())
    a.b.scalar_int32(int(bool(a.option("time_major", False))))
    return N.UNIDIRECTIONAL_SEQUENCE_RNN


@mapper(B.STRIDED_SLICE)
def _strided_slice(a: MapArgs) -> N:
    # ellipsis and new-axis masks are neither passed nor checked
    a.b.scalar_int32(int(a.option("begin_mask")))
    a.b.scalar_int32(int(a.option("end_mask")))
    a.b.scalar_int32(int(a.option("shrink_axis_mask")))
    return N.STRIDED_SLICE


@mapper(B.TRANSPOSE_CONV)
def _transpose_conv(a: MapArgs) -> N:
    from nnconv.delegate.operands import Flag
    b, node = a.b, a.node
    x, w = node.inputs[2], node.inputs[1]  # TFLite's inputs: output_shape, weights, data, bias
    flags = Flag.USE_INT8_ASYMM_SIGNED if a.feature_level >= SDK_30 else Flag.INT8_CONVERSION
    b.add_tensor_input(x, False, flags)
    # per-channel for int8 weights even with one scale (CONV_2D keeps one scale per-tensor)
    b.add_tensor_input(w, False, Flag.FORCE_PER_CHANNEL)
    if len(node.inputs) == 4 and node.inputs[3] != -1:
        b.add_tensor_input(node.inputs[3], False)
    else:
        zero_bias(a, x, w, int(a.tensor(0).values()[3]))
    b.add_tensor_input(node.inputs[0], False)
    b.scalar_int32(_TFLITE_PADDING.get(int(a.option("padding")), 0))
    b.scalar_int32(int(a.option("stride_w")))
    b.scalar_int32(int(a.option("stride_h")))
    b.scalar_int32(a.activation())
    b.scalar_bool(False)  # NHWC
    return N.TRANSPOSE_CONV_2D


def _state_output(a: MapArgs, tensor: int) -> None:
    """`AddStateFloat32Tensor`: NNAPI returns the new state as an extra model output, copied back after each
    invocation into the TFLite state tensor."""
    index = a.b.additional_output(O.TENSOR_FLOAT32, a.graph.tensor(tensor).dims)
    a.state_outputs.append(index)
    a.state_inputs.append(tensor)


@mapper(B.RNN)
def _rnn(a: MapArgs) -> N:
    _state_output(a, a.node.inputs[4])
    a.b.scalar_int32(a.activation())
    return N.RNN


@mapper(B.SPACE_TO_DEPTH)
def _space_to_depth(a: MapArgs) -> N:
    a.b.scalar_int32(int(a.option("block_size")))
    return N.SPACE_TO_DEPTH


@mapper(B.DEPTH_TO_SPACE)
def _depth_to_space(a: MapArgs) -> N:
    a.b.scalar_int32(int(a.option("block_size")))
    return N.DEPTH_TO_SPACE


@mapper(B.SVDF)
def _svdf(a: MapArgs) -> N:
    _state_output(a, a.node.inputs[4])
    a.b.scalar_int32(int(a.option("rank")))
    a.b.scalar_int32(a.activation())
    return N.SVDF


@mapper(B.LSTM)
def _lstm(a: MapArgs) -> N:
    if is_lstm_basic(a.node):
        return _basic_lstm(a)
    b, node = a.b, a.node
    b.scalar_int32(a.activation())
    b.scalar_float32(float(a.option("cell_clip", 0.0)))
    b.scalar_float32(float(a.option("proj_clip", 0.0)))
    b.additional_output(O.TENSOR_FLOAT32, (0, 0))  # the scratch buffer NNAPI's LSTM needs as an output
    _state_output(a, node.inputs[18])
    _state_output(a, node.inputs[19])
    if len(node.inputs) == 24:
        hybrid = is_hybrid(a.graph, node)
        for i in range(20, 24):
            if node.inputs[i] != -1:
                b.add_tensor_input(node.inputs[i], hybrid)
            else:
                b.omitted()
    return N.LSTM


def _basic_lstm(a: MapArgs) -> N:
    """The 5-input basic LSTM kernel becomes QUANTIZED_16BIT_LSTM: its concatenated uint8 weights and int32
    biases are cut into the 8 + 4 constants NNAPI takes (`quant_lstm_sup.cc`)."""
    b, node = a.b, a.node
    b.add_tensor_input(node.inputs[0])
    weights = a.tensor(2)
    w = weights.values().astype(np.uint8).reshape(weights.dims)
    depth = weights.dims[0] // 4
    in_depth = weights.dims[1] - depth
    blocks = {gate: (w[k * depth:(k + 1) * depth, :depth], w[k * depth:(k + 1) * depth, depth:])
              for k, gate in enumerate(("input", "cell", "forget", "output"))}
    for gate in ("input", "forget", "cell", "output"):
        b.new_constant(O.TENSOR_QUANT8_ASYMM, (depth, in_depth), blocks[gate][1], weights.scale, weights.zero_point)
    for gate in ("input", "forget", "cell", "output"):
        b.new_constant(O.TENSOR_QUANT8_ASYMM, (depth, depth), blocks[gate][0], weights.scale, weights.zero_point)
    size = a.graph.tensor(node.outputs[1]).dims[1]
    bias_t = a.tensor(3)
    biases = bias_t.values().astype(np.int32)
    parts = {gate: biases[k * size:(k + 1) * size] for k, gate in enumerate(("input", "cell", "forget", "output"))}
    for gate in ("input", "forget", "cell", "output"):
        b.new_constant(O.TENSOR_INT32, (size,), parts[gate], bias_t.scale, bias_t.zero_point)
    b.add_tensor_input(node.inputs[4])  # previous cell state
    b.add_tensor_input(node.inputs[1])  # previous activation
    b.add_tensor_output(node.outputs[1])  # cell state out, then activation out (NNAPI ignores the rest)
    b.add_tensor_output(node.outputs[0])
    return N.QUANTIZED_16BIT_LSTM


@mapper(B.MEAN)
def _mean(a: MapArgs) -> N:
    a.b.scalar_int32(1 if a.option("keep_dims", False) else 0)
    return N.MEAN


@mapper(B.LEAKY_RELU)
def _leaky_relu(a: MapArgs) -> N:
    """PRELU with a one-element alpha the delegate makes: float32 alpha, or a quantized 1 whose scale is
    alpha (int8 from feature level 4, else uint8)."""
    x = a.tensor(0)
    alpha = float(np.float32(a.option("alpha", 0.0)))
    if x.type == T.FLOAT32:
        a.b.new_constant(O.TENSOR_FLOAT32, (1,), np.asarray([alpha], np.float32))
    elif x.type == T.INT8 and a.feature_level >= SDK_30:
        a.b.new_constant(O.TENSOR_QUANT8_ASYMM_SIGNED, (1,), np.asarray([1], np.int8), alpha, 0)
    else:
        a.b.new_constant(O.TENSOR_QUANT8_ASYMM, (1,), np.asarray([1], np.uint8), alpha, 0)
    return N.PRELU


@mapper(B.TOPK_V2)
def _topk(a: MapArgs) -> N:
    a.b.scalar_int32(int(a.tensor(1).values()[0]))
    return N.TOPK_V2


@mapper(B.GATHER)
def _gather(a: MapArgs) -> N:
    a.b.scalar_int32(int(a.option("axis")))
    a.b.add_tensor_input(a.node.inputs[1])
    return N.GATHER


@mapper(B.BIDIRECTIONAL_SEQUENCE_LSTM)
def _bidirectional_lstm(a: MapArgs) -> N:
    b = a.b
    b.scalar_int32(a.activation())
    b.scalar_float32(float(a.option("cell_clip", 0.0)))
    b.scalar_float32(float(a.option("proj_clip", 0.0)))
    b.scalar_bool(bool(a.option("merge_outputs", False)))
    b.scalar_bool(bool(a.option("time_major", True)))
    for _ in range(8):  # TFLite's op has no layer normalization: NNAPI's 8 optional inputs are omitted
        b.omitted()
    return N.BIDIRECTIONAL_SEQUENCE_LSTM


@mapper(B.EXPAND_DIMS)
def _expand_dims(a: MapArgs) -> N:
    a.b.scalar_int32(int(a.tensor(1).values()[0]))
    return N.EXPAND_DIMS


@mapper(B.SPLIT)
def _split(a: MapArgs) -> N:
    a.b.scalar_int32(int(a.tensor(0).values()[0]))
    a.b.scalar_int32(int(a.option("num_splits")))
    return N.SPLIT


@mapper(B.LOG_SOFTMAX)
def _log_softmax(a: MapArgs) -> N:
    a.b.scalar_float32(1.0)  # TFLite's LOG_SOFTMAX has beta 1 and the last axis, always
    a.b.scalar_int32(-1)
    return N.LOG_SOFTMAX


@mapper(B.QUANTIZE)
def _quantize(a: MapArgs) -> N:
    # NNAPI's QUANTIZE takes float only: a requantization gets a DEQUANTIZE in front
    t = a.node.inputs[0]
    if a.graph.tensor(t).type in (T.UINT8, T.INT8):
        a.b.dequantize_input(0, t, T.FLOAT32, a.node.index)
    return N.QUANTIZE


@mapper(B.REDUCE_ANY, B.REDUCE_MIN, B.REDUCE_MAX, B.REDUCE_PROD, B.SUM)
def _reduce(a: MapArgs) -> N:
    a.b.scalar_bool(bool(a.option("keep_dims", False)))
    return {B.REDUCE_ANY: N.REDUCE_ANY, B.REDUCE_MIN: N.REDUCE_MIN, B.REDUCE_MAX: N.REDUCE_MAX,
            B.REDUCE_PROD: N.REDUCE_PROD, B.SUM: N.REDUCE_SUM}[B(a.node.op)]


@mapper(B.ELU)
def _elu(a: MapArgs) -> N:
    a.b.scalar_float32(1.0)
    return N.ELU


@mapper(B.BATCH_MATMUL)
def _batch_matmul(a: MapArgs) -> N:
    a.b.scalar_bool(bool(a.option("adj_x", False)))
    a.b.scalar_bool(bool(a.option("adj_y", False)))
    return N.BATCH_MATMUL


@mapper(B.MIRROR_PAD)
def _mirror_pad(a: MapArgs) -> N:
    a.b.scalar_int32(_MIRROR_MODE.get(int(a.option("mode")), -1))
    return N.MIRROR_PAD


def map_node(a: MapArgs) -> N:
    """`Map`: the operation type, with the node's parameters appended."""
    fn = MAPPERS.get(a.node.op)
    if fn is None:
        raise BuildError(f"the delegate has no mapping for {a.node.name}")
    return fn(a)
