"""`NNAPIDelegateKernel::BuildGraph` / `AddOpsAndTensors`: the NNAPI model the delegate builds for one
partition, operand for operand, in the delegate's order.

First the float16 constants of the partition's constant DEQUANTIZE nodes become float32 constants; then each
node, in execution order, adds its tensor inputs (with the per-op exceptions of `_add_inputs`), its
parameters (`map_ops.py`), its outputs, and DEQUANTIZE operations for the quantized weights of a hybrid
CONV_2D / FULLY_CONNECTED / LSTM. The model's inputs are the partition's input tensors the delegate mapped
(constants excepted), in tensor-index order; its outputs, the partition's outputs and the state outputs
of recurrent ops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from nnconv.delegate.graph import DelegateGraph, Node
from nnconv.delegate.map_ops import MapArgs, map_node
from nnconv.delegate.node_facts import (INT8_CONVERT_ALL_INPUTS, SCALAR_AS_TENSOR_OPS, is_hybrid, is_lstm_basic,
                                        is_lstm_full, need_int8_conversion)
from nnconv.delegate.operands import BuildError, Conversion, Flag, OperandBuilder
from nnconv.delegate.setup import FL6, SDK_30, DelegateSetup
from nnconv.delegate import transforms
from nnconv.fmt import format_bytes
from nnconv.delegate.validate_tensor import split_v_unknown_size
from nnconv.delegate.failures import NodeCheck
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType as O
from nnconv.nnapi.model import Model
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

# No phone (nor the 64-bit host the delegate was recorded on) allocates a single buffer of 2 GiB or more: a
# pool or tensor that large fails its allocation (hostile or mis-shaped models).
MAX_ALLOCATION = 2 ** 31

_REDUCERS = (B.REDUCE_ANY, B.REDUCE_MAX, B.REDUCE_MIN, B.REDUCE_PROD, B.SUM, B.MEAN)
_OPTIONAL_FLOAT_INPUTS = (B.LSTM, B.SVDF, B.BIDIRECTIONAL_SEQUENCE_LSTM)


@dataclass
class BuiltPartition:
    """One partition's NNAPI model and what the delegate records beside it."""

    model: Model
    nodes: list[int]
    input_tensors: list[int]  # TFLite tensors fed as model inputs, in model-input order
    output_tensors: list[int]  # TFLite tensors read back from model outputs (state outputs excluded)
    state_tensors: list[int]  # TFLite state tensors a state output is copied back into, in output order
    tensor_operands: dict[int, int]
    conversions: dict[int, Conversion]
    added_tensors: int
    conversion_tensors: int
    null_api_calls: list[str] = field(default_factory=list)


def build_partition(graph: DelegateGraph, nodes: Sequence[Node], inputs: Sequence[int], outputs: Sequence[int],
                    setup: DelegateSetup) -> BuiltPartition:
    """The delegate's NNAPI model of `nodes` (as the delegate sees them: float16-remapped where it remaps),
    whose TFLite partition reads `inputs` and writes `outputs` (TFLite's node subset, sorted).
    BuildError: the delegate's build fails (TFLite then runs the model on the CPU)."""
    mb = ModelBuilder()
    b = OperandBuilder(graph, mb.main, has_per_channel_api=setup.has_per_channel_api)
    fl = setup.feature_level
    state_outputs: list[int] = []
    state_inputs: list[int] = []
    # first pass: float16 constants of constant DEQUANTIZE nodes become float32 constants
    densify_of: dict[int, int] = {}
    nonconst_dequantize_of: dict[int, int] = {}
    for node in nodes:
        if graph.is_const_fp16_dequantize(node):
            b.add_tensor_input(node.inputs[0], False, Flag.HALF_TO_FLOAT_CONVERSION | Flag.SCALAR_AS_TENSOR)
        if graph.is_const_densify(node):
            densify_of[node.outputs[0]] = node.index
        if graph.is_nonconst_fp16_dequantize(node):
            nonconst_dequantize_of[node.outputs[0]] = node.index
    b.inputs, b.outputs = [], []
    by_index = {n.index: n for n in nodes}
    for node in nodes:
        if node.index in densify_of.values() or node.index in nonconst_dequantize_of.values():
            continue  # DENSIFY (-> DEQUANTIZE) chains become a constant where CONV_2D reads them
        _add_node(b, graph, node, setup, fl, state_outputs, state_inputs, densify_of, nonconst_dequantize_of,
                  by_index)
    built = _finish(b, mb, graph, [n.index for n in nodes], inputs, outputs, state_outputs, state_inputs)
    built.model.relax_computation_float32_to_float16 = setup.allow_fp16 and setup.has_relax_api
    return built


def _add_node(b: OperandBuilder, graph: DelegateGraph, node: Node, setup: DelegateSetup, fl: int,
              state_outputs: list[int], state_inputs: list[int], densify_of: dict[int, int],
              nonconst_dequantize_of: dict[int, int], by_index: dict[int, Node]) -> None:
    op = node.op
    if op == B.PACK and fl < FL6:
        transforms.pack(b, graph, node)
        return
    if op == B.UNPACK:
        transforms.unpack(b, graph, node)
        return
    if op == B.SPLIT_V:
        transforms.split_v(b, graph, node, split_v_unknown_size(NodeCheck(graph, node, setup)))
        return
    if op == B.SQUARED_DIFFERENCE:
        transforms.squared_difference(b, graph, node)
        return
    if op == B.COS:
        transforms.cos(b, graph, node)
        return
    if fl >= SDK_30 and op == B.LSTM and is_lstm_full(node) and graph.tensor(node.inputs[0]).type == T.INT8:
        transforms.quantized_lstm(b, graph, node, state_outputs, state_inputs)
        return
    hybrid = is_hybrid(graph, node)
    int8_conversion = fl < SDK_30 and need_int8_conversion(graph, node)
    signed = fl >= SDK_30 and not hybrid
    if graph.is_const_fp16_dequantize(node):
        return  # its constant is already a float32 operand (first pass)
    flags = Flag.NONE
    if op in SCALAR_AS_TENSOR_OPS:
        flags |= Flag.SCALAR_AS_TENSOR
    if signed:
        flags |= Flag.USE_INT8_ASYMM_SIGNED
    if op == B.HARD_SWISH and setup.android_sdk_version < SDK_30:
        transforms.hard_swish(b, graph, node, int8_conversion)
        return
    if op == B.PACK:  # NNAPI's PACK takes the axis before the tensors
        axis = int(getattr(node.options, "axis", 0))
        b.scalar_int32(graph.tensor(node.inputs[0]).rank + axis + 1 if axis < 0 else axis)
    flags = _add_inputs(b, graph, node, flags, hybrid, int8_conversion, densify_of, nonconst_dequantize_of,
                        by_index, setup)
    args = MapArgs(b, graph, node, fl, state_outputs, state_inputs)
    nn = map_node(args)
    out_flags = Flag.NONE
    if int8_conversion:
        out_flags |= Flag.INT8_CONVERSION
    if signed:
        out_flags |= Flag.USE_INT8_ASYMM_SIGNED
    fc_intermediate = mean_intermediate = None
    for t in node.outputs:
        if op == B.LSTM and is_lstm_basic(node):
            continue  # set by the mapper
        out = graph.tensor(t)
        if op == B.FULLY_CONNECTED and getattr(node.options, "keep_num_dims", False):
            units = out.dims[-1]
            fc_intermediate = b.intermediate_output(out.type, (out.num_elements // units, units), out.scale,
                                                    out.zero_point)
        elif op == B.MEAN and _mean_requantizes(graph, node):
            x = graph.tensor(node.inputs[0])
            mean_intermediate = b.intermediate_output(out.type, out.dims, x.scale, x.zero_point, int8_conversion)
        else:
            b.add_tensor_output(t, out_flags)
    _dequantize_weights(b, graph, node)
    b.finish_operation(nn, node.index)
    if fc_intermediate is not None:
        transforms.append_reshape(b, graph, fc_intermediate, node.outputs[0], node.index)
    if mean_intermediate is not None:
        transforms.append_requantize(b, graph, mean_intermediate, node.outputs[0], node.index, out_flags)


def _mean_requantizes(graph: DelegateGraph, node: Node) -> bool:
    """`IsMeanWithDifferentInputOutputQuantization` (legacy per-tensor params)."""
    x, y = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    return x.scale != y.scale or x.zero_point != y.zero_point


def _add_inputs(b: OperandBuilder, graph: DelegateGraph, node: Node, flags: Flag, hybrid: bool,
                int8_conversion: bool, densify_of: dict[int, int], nonconst_dequantize_of: dict[int, int],
                by_index: dict[int, Node], setup: DelegateSetup) -> Flag:
    """The input loop of `AddOpsAndTensors`: each tensor input as an operand, except where the op takes it
    another way (scalars, skipped inputs the mapper adds, densified weights). Returns the flags it ended with
    (a constant float16 input turns HALF_TO_FLOAT on for the rest of the node's inputs)."""
    op = node.op
    for pos, t in enumerate(node.inputs):
        if t != -1 and graph.tensor(t).type == T.FLOAT16 and graph.tensor(t).constant:
            flags |= Flag.HALF_TO_FLOAT_CONVERSION
        if op == B.TRANSPOSE_CONV:
            continue  # the mapper adds its inputs in NNAPI's order
        if op == B.FULLY_CONNECTED and t == -1:
            continue  # an omitted bias becomes zeros in the mapper
        if op == B.CONV_2D and pos == 1 and _densified_weights(b, graph, t, densify_of, nonconst_dequantize_of,
                                                               by_index):
            continue
        if int8_conversion and (pos == 0 or op in INT8_CONVERT_ALL_INPUTS):
            b.add_tensor_input(t, hybrid, flags | Flag.INT8_CONVERSION)
            continue
        if op == B.LSTM and is_lstm_full(node) and pos >= 20:
            continue  # layer-norm weights go last: the mapper adds them
        if op == B.LSTM and is_lstm_basic(node):
            continue  # the mapper adds every input
        if op == B.UNIDIRECTIONAL_SEQUENCE_LSTM:
            if pos >= 20:
                continue
            if t == -1:
                b.omitted()
                continue
        if op == B.SPLIT and t == node.inputs[0]:
            continue  # the axis becomes a scalar in the mapper
        if op in (B.PAD, B.PADV2) and len(node.inputs) == 3 and pos == 2:
            if t != -1:
                _pad_value(b, graph, t, int8_conversion)
            continue
        if t == -1 and op in _OPTIONAL_FLOAT_INPUTS:
            b.omitted()
        elif op in (B.RESIZE_BILINEAR, B.RESIZE_NEAREST_NEIGHBOR):
            if pos == 0:  # the size becomes width and height scalars in the mapper
                b.add_tensor_input(t, hybrid, flags)
        elif op == B.TOPK_V2 and pos > 0:
            continue
        elif op == B.GATHER:
            if pos == 0:  # positions follow the axis scalar (mapper)
                b.add_tensor_input(t, hybrid, flags)
        elif op == B.EXPAND_DIMS and pos == 1:
            continue
        elif op == B.BATCH_TO_SPACE_ND and pos == 2:
            continue  # NNAPI has no crops (Validate took only zeros)
        elif op in (B.ARG_MIN, B.ARG_MAX):
            if pos == 0:
                b.add_tensor_input(t, hybrid, flags)
            else:
                _scalar_from_tensor(b, graph, t, O.INT32)
        elif op in (B.MAXIMUM, B.MINIMUM):
            _min_max_operand(b, graph, t, hybrid, flags, bool(flags & Flag.USE_INT8_ASYMM_SIGNED))
        elif op in _REDUCERS and pos == 1:
            axis = graph.tensor(t)
            if axis.rank == 0:  # a scalar axis becomes a one-element vector
                b.vector(O.TENSOR_INT32, axis.values()[:1].astype(np.int32))
            else:
                b.add_tensor_input(t, hybrid, flags)
        elif op == B.FILL:
            _fill_input(b, graph, t, pos, hybrid)
        else:
            b.add_tensor_input(t, hybrid, flags)
    return flags


def _densified_weights(b: OperandBuilder, graph: DelegateGraph, t: int, densify_of: dict[int, int],
                       nonconst_dequantize_of: dict[int, int], by_index: dict[int, Node]) -> bool:
    """CONV_2D weights from DENSIFY (or DENSIFY -> DEQUANTIZE of float16): densified into a new constant."""
    dequantize = nonconst_dequantize_of.get(t)
    if dequantize is not None:
        densify = densify_of.get(by_index[dequantize].inputs[0])
        should_dequantize = True
    else:
        densify = densify_of.get(t)
        should_dequantize = False
    if densify is None:
        return False
    from nnconv.tflite.sparsity import densify as to_dense
    node = by_index[densify]
    sparse, out = graph.tensor(node.inputs[0]), graph.tensor(node.outputs[0])
    if sparse.sparsity is None or sparse.data is None:
        raise BuildError("the DENSIFY input has no sparsity parameters")
    dense = np.asarray(to_dense(sparse.data, out.dims, sparse.sparsity)).reshape(-1)
    if sparse.type == T.FLOAT32:
        b.new_constant(O.TENSOR_FLOAT32, out.dims, dense.astype(np.float32), out.scale, out.zero_point)
    elif sparse.type == T.FLOAT16:
        if should_dequantize:
            b.new_constant(O.TENSOR_FLOAT32, out.dims, dense.astype(np.float16).astype(np.float32), out.scale,
                           out.zero_point)
        else:
            b.new_constant(O.TENSOR_FLOAT16, out.dims, dense.astype(np.float16), out.scale, out.zero_point)
    elif sparse.type == T.INT8:
        b.new_constant(O.TENSOR_QUANT8_ASYMM_SIGNED, out.dims, dense.astype(np.int8), out.scale, out.zero_point)
    else:
        raise BuildError(f"cannot densify a sparse tensor of type {sparse.type.name}")
    return True


def _pad_value(b: OperandBuilder, graph: DelegateGraph, t: int, int8_conversion: bool) -> None:
    """PAD_V2's value: a scalar (a computed one becomes a scalar model input). The delegate ignores what
    AddSingleValueTensorAsScalarOperand returns here (unlike FILL's and ARG_MAX's callers), hence
    `checked=False`."""
    v = graph.tensor(t)
    if v.type == T.FLOAT16:
        if v.constant:
            # upstream passes `data.f16->data`, the half's raw bits as a uint16, to AddScalarFloat32Operand:
            # the scalar is that integer (1.0 -> 15360.0), not the value (reachable on the float16-weights path,
            # where a PADV2 reads the float16 constant behind a DEQUANTIZE)
            b.scalar_float32(float(np.asarray(v.data).reshape(-1)[:1].view(np.uint16)[0]))
        else:
            b.single_value_as_scalar(t, O.TENSOR_FLOAT16, checked=False)
    elif v.type == T.FLOAT32:
        if v.constant:
            b.scalar_float32(float(v.values()[0]))
        else:
            b.single_value_as_scalar(t, O.FLOAT32, checked=False)
    elif v.type in (T.UINT8, T.INT8):
        if v.constant:
            value = int(v.values()[0])
            b.scalar_int32(value + 128 if v.type == T.INT8 and int8_conversion else value)
        else:
            b.single_value_as_scalar(t, O.INT32, checked=False)
    else:
        raise BuildError("Unsupported type of pad value for pad_v2")


def _scalar_from_tensor(b: OperandBuilder, graph: DelegateGraph, t: int, nn: O) -> None:
    axis = graph.tensor(t)
    if axis.type == T.INT32:
        if axis.constant:
            b.scalar_int32(int(axis.values()[0]))
        else:
            b.single_value_as_scalar(t, nn)
    elif axis.type == T.INT64:
        b.scalar_int32(int(np.int64(axis.values()[0]).astype(np.int32)))
    else:
        raise BuildError("the axis tensor is neither int32 nor int64")


def _min_max_operand(b: OperandBuilder, graph: DelegateGraph, t: int, hybrid: bool, flags: Flag,
                     signed: bool) -> None:
    """MAXIMUM / MINIMUM: a rank-0 (constant) operand becomes a [1] constant of its own."""
    x = graph.tensor(t)
    if x.rank != 0:
        b.add_tensor_input(t, hybrid, flags)
        return
    if not x.constant:
        raise BuildError("operand_tensor.allocation_type == kTfLiteMmapRo was not true")
    v = x.values()
    if x.type == T.FLOAT32:
        b.new_constant(O.TENSOR_FLOAT32, (1,), v[:1].astype(np.float32), x.scale, x.zero_point)
    elif x.type == T.UINT8:
        b.new_constant(O.TENSOR_QUANT8_ASYMM, (1,), v[:1].astype(np.uint8), x.scale, x.zero_point)
    elif x.type == T.INT8:
        scale = x.scale or 1.0
        if signed:
            b.new_constant(O.TENSOR_QUANT8_ASYMM_SIGNED, (1,), v[:1].astype(np.int8), scale, x.zero_point)
        else:  # the value is shifted, the zero point is not (upstream)
            b.new_constant(O.TENSOR_QUANT8_ASYMM, (1,), (v[:1].astype(np.int16) + 128).astype(np.uint8), scale,
                           x.zero_point)
    elif x.type == T.INT32:
        b.new_constant(O.TENSOR_INT32, (1,), v[:1].astype(np.int32), x.scale, x.zero_point)
    else:
        raise BuildError("unsupported scalar operand type for MAXIMUM/MINIMUM")


def _fill_input(b: OperandBuilder, graph: DelegateGraph, t: int, pos: int, hybrid: bool) -> None:
    x = graph.tensor(t)
    if pos == 0:
        if x.type == T.INT32:
            b.add_tensor_input(t, hybrid)
        elif x.type == T.INT64:
            b.new_constant(O.TENSOR_INT32, x.dims, x.values().astype(np.int32), x.scale, x.zero_point)
        else:
            raise BuildError("FILL dims must be int32 or int64")
        return
    if x.type == T.FLOAT32:
        b.scalar_float32(float(x.values()[0])) if x.constant else b.single_value_as_scalar(t, O.FLOAT32)
    elif x.type in (T.INT32, T.INT64):
        b.scalar_int32(int(x.values()[0])) if x.constant else b.single_value_as_scalar(t, O.INT32)
    else:
        raise BuildError("FILL value must be float32, int32 or int64")


def _dequantize_weights(b: OperandBuilder, graph: DelegateGraph, node: Node) -> None:
    """`AddDequantizeOperatorsWhereNeeded`: a float CONV_2D / FULLY_CONNECTED / LSTM reads its quantized
    weights through DEQUANTIZE operations (hybrid ops; DEPTHWISE_CONV_2D is not among them upstream)."""
    if node.op in (B.CONV_2D, B.FULLY_CONNECTED):
        positions: Sequence[int] = (1, 2)
    elif node.op == B.LSTM:
        positions = (*range(1, 18), 20, 21, 22, 23)
    else:
        return
    if not node.inputs or node.inputs[0] < 0 or graph.tensor(node.inputs[0]).type != T.FLOAT32:
        return
    for i in positions:
        if i >= len(node.inputs) or node.inputs[i] < 0:
            continue
        t = graph.tensor(node.inputs[i])
        if t.type in (T.UINT8, T.INT8):
            b.dequantize_input(i, node.inputs[i], t.type, node.index)


def _finish(b: OperandBuilder, mb: ModelBuilder, graph: DelegateGraph, nodes: list[int], inputs: Sequence[int],
            outputs: Sequence[int], state_outputs: list[int], state_inputs: list[int]) -> BuiltPartition:
    """`BuildGraph` after the operations: model inputs and outputs, and the pools the delegate sizes from
    them (an empty pool makes its build fail)."""
    model_inputs, in_tensors, in_bytes = [], [], 0
    for t in inputs:
        if t == -1 or graph.tensor(t).constant or t not in b.tensor_operand:
            continue
        model_inputs.append(b.tensor_operand[t])
        in_tensors.append(t)
        conv = b.conversions.get(t)
        tensor = graph.tensor(t)
        size = tensor.num_elements * (4 if conv in (Conversion.TO_INT32, Conversion.TO_FLOAT32,
                                                     Conversion.HALF_TO_FLOAT) else 1) \
            if conv is not None else _bytes(tensor)
        in_bytes += size
    model_outputs, out_tensors, out_bytes = [], [], 0
    for t in outputs:
        index = b.tensor_operand.get(t)
        if index is not None:
            model_outputs.append(index)
            out_tensors.append(t)
        out_bytes += _bytes(graph.tensor(t))
    for index, t in zip(state_outputs, state_inputs):
        model_outputs.append(index)
        out_bytes += _bytes(graph.tensor(t))
    b.sb.set_io(model_inputs, model_outputs)
    model = mb.finish()
    if max(in_bytes, out_bytes) >= MAX_ALLOCATION:
        which = "input" if in_bytes >= MAX_ALLOCATION else "output"
        raise BuildError(f"the delegate cannot create the {which} pool of the partition's NNAPI model "
                         f"({format_bytes(max(in_bytes, out_bytes))})")
    if in_bytes == 0 or out_bytes == 0:
        # NNMemory::Create returns nothing for a 0-byte pool and BuildGraph fails
        which = "inputs" if in_bytes == 0 else "outputs"
        raise BuildError(f"the partition's NNAPI model has no {which} to pool (NNMemory::Create of 0 bytes): "
                         "its build fails")
    return BuiltPartition(model, nodes, in_tensors, out_tensors, list(state_inputs), dict(b.tensor_operand),
                          dict(b.conversions), b.added_tensors, b.conversion_tensors, list(b.null_api_calls))


def _bytes(t) -> int:
    size = {T.FLOAT32: 4, T.FLOAT16: 2, T.INT32: 4, T.UINT8: 1, T.INT64: 8, T.BOOL: 1, T.INT16: 2, T.INT8: 1,
            T.FLOAT64: 8, T.COMPLEX64: 8, T.UINT32: 4, T.UINT16: 2, T.UINT64: 8, T.COMPLEX128: 16}.get(t.type, 0)
    return t.num_elements * size
