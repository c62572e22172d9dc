"""Facts about a node that both the delegate's Validate and its graph building ask: hybrid operators, the
int8-to-uint8 conversion below feature level 4, scalars read as [1] tensors, LSTM kernel kinds."""

from __future__ import annotations

from nnconv.delegate.graph import DelegateGraph, Node
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

LSTM_FULL_INPUTS = (20, 24)  # 20: the deprecated kernel without layer normalization
LSTM_BASIC_INPUTS = 5

# `IsScalarInputSupported`: a rank-0 input of these ops becomes a [1] tensor operand (broadcast-capable ops).
SCALAR_AS_TENSOR_OPS = frozenset({
    B.ADD, B.MUL, B.SUB, B.DIV, B.EQUAL, B.NOT_EQUAL, B.GREATER, B.GREATER_EQUAL, B.LESS, B.LESS_EQUAL, B.POW,
    B.MAXIMUM, B.MINIMUM, B.PRELU, B.LEAKY_RELU})

# `NeedInt8Conversion`: below feature level 4 (no TENSOR_QUANT8_ASYMM_SIGNED) these ops carry int8 input 0 as
# uint8 with zero point + 128. An int8 tensor of any other op becomes TENSOR_QUANT8_SYMM, zero point kept.
_INT8_CONVERTED_BY_INPUT0 = frozenset({
    B.ADD, B.ARG_MAX, B.ARG_MIN, B.AVERAGE_POOL_2D, B.BATCH_TO_SPACE_ND, B.CONCATENATION, B.EQUAL, B.EXPAND_DIMS,
    B.GATHER, B.GREATER, B.GREATER_EQUAL, B.HARD_SWISH, B.L2_NORMALIZATION, B.LEAKY_RELU, B.LESS, B.LESS_EQUAL,
    B.LOGISTIC, B.MAXIMUM, B.MAX_POOL_2D, B.MEAN, B.MINIMUM, B.MUL, B.NOT_EQUAL, B.PAD, B.PADV2, B.PRELU,
    B.REDUCE_MAX, B.REDUCE_MIN, B.RELU, B.RELU_N1_TO_1, B.RELU6, B.RESIZE_BILINEAR, B.RESIZE_NEAREST_NEIGHBOR,
    B.RESHAPE, B.SLICE, B.SOFTMAX, B.SPACE_TO_BATCH_ND, B.SPACE_TO_DEPTH, B.DEPTH_TO_SPACE, B.STRIDED_SLICE,
    B.SUB, B.TANH, B.TILE, B.TOPK_V2, B.TRANSPOSE})
# Ops whose every input (not only input 0) takes the conversion when the node needs it (AddOpsAndTensors).
INT8_CONVERT_ALL_INPUTS = frozenset({
    B.FULLY_CONNECTED, B.CONV_2D, B.DEPTHWISE_CONV_2D, B.ADD, B.MUL, B.SUB, B.CONCATENATION, B.MAXIMUM, B.MINIMUM,
    B.LEAKY_RELU, B.LESS, B.LESS_EQUAL, B.PRELU, B.GREATER, B.GREATER_EQUAL, B.EQUAL, B.NOT_EQUAL, B.SELECT})


def _type(graph: DelegateGraph, node: Node, i: int) -> T | None:
    if i >= len(node.inputs) or node.inputs[i] < 0:
        return None
    return graph.tensor(node.inputs[i]).type


def is_lstm_full(node: Node) -> bool:
    return len(node.inputs) in LSTM_FULL_INPUTS


def is_lstm_basic(node: Node) -> bool:
    return len(node.inputs) == LSTM_BASIC_INPUTS


def is_hybrid(graph: DelegateGraph, node: Node) -> bool:
    """`IsHybridOperator`: float input, quantized (uint8/int8) weights."""
    op = node.op
    quantized = (T.UINT8, T.INT8)
    if op in (B.CONV_2D, B.FULLY_CONNECTED):
        return _type(graph, node, 0) == T.FLOAT32 and _type(graph, node, 1) in quantized
    if op == B.LSTM:
        # input 1 is optional, so the delegate looks at input 2
        return is_lstm_full(node) and _type(graph, node, 0) == T.FLOAT32 and _type(graph, node, 2) in quantized
    if op in (B.UNIDIRECTIONAL_SEQUENCE_LSTM, B.BIDIRECTIONAL_SEQUENCE_LSTM):
        return _type(graph, node, 0) == T.FLOAT32 and _type(graph, node, 2) in quantized
    if op == B.UNIDIRECTIONAL_SEQUENCE_RNN:
        return _type(graph, node, 0) == T.FLOAT32 and _type(graph, node, 1) in quantized
    return False


def need_int8_conversion(graph: DelegateGraph, node: Node) -> bool:
    """`NeedInt8Conversion` (the caller adds `feature level < 30`)."""
    op = node.op
    x = _type(graph, node, 0)
    if op in (B.CONV_2D, B.DEPTHWISE_CONV_2D, B.FULLY_CONNECTED):
        if x != T.INT8 or len(node.inputs) < 2 or node.inputs[1] < 0:
            return False
        w = graph.tensor(node.inputs[1])
        return w.type in (T.INT8, T.UINT8) and w.affine
    if op == B.TRANSPOSE_CONV:
        # Upstream reads tensor #2 of the subgraph, not the node's input 2 (its data input): the literal
        # index 2 is used as a tensor index. Reproduced as the delegate behaves.
        return len(graph.tensors) > 2 and graph.tensor(2).type == T.INT8
    if op == B.SELECT:
        return _type(graph, node, 1) == T.INT8
    return op in _INT8_CONVERTED_BY_INPUT0 and x == T.INT8
