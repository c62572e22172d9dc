"""Output shapes as TFLite's kernels compute them at Prepare, where the declared shape is a placeholder or wrong.

TensorFlow's converter writes a tensor whose size depends on the (unspecified) batch with `shape_signature`
-1 on that axis and, in `shape`, the signature with every -1 replaced by 1. That guess is right while the
-1 axis *is* the batch, and wrong once the batch is folded into another axis: a dilated Conv1D runs
SPACE_TO_BATCH_ND ([1, 68, 12] -> [2, 34, 12], declared [1, 34, 12]); Keras 2's LayerNormalization on a
[batch, time, features] input reshapes to [1, batch*time, features, 1] (declared [1, 1, 16, 1] for 12
steps). TFLite's interpreter never reads a declared shape: each kernel's Prepare resizes its output from
its input shapes, so the model runs with the true sizes, and TFLite's NNAPI delegate lowers those. A
converter trusting the placeholder builds partitions of the wrong size (or refuses a consistent model).

This rewrite walks the main subgraph in operator order and computes, for the ops of `_SHAPE_FNS` (and the
slicing ops, through their folds on a zero-stride view of the data), the output shapes TFLite's Prepare
gives from the input shapes (as corrected so far) and constant (or folded) parameters. An output whose
declared shape differs is given the computed one when its signature allows it: same rank, and every fixed
(non -1) extent of the signature equal; one whose placeholder was right (the -1 is the batch, 1) keeps it.
Either way the tensor is static from then on (its signature cleared), as TFLite's Prepare fixes it, so
folding may take it (an int8 LayerNormalization's FILLs of ones over a [1, C] input). Identity: the
declared shape of such a tensor was never used by TFLite. A static declared shape (no -1 in a signature)
that disagrees is overruled the same way, and reported: TFLite resizes that output too and runs the model
(a hand-made file declaring [1, 5] for an ADD of two [1, 4] inputs), so check, run and verify agree with
it instead of check accepting what run then refuses. Not where an input still holds an unresolved
placeholder: the computed shape is then a guess, which may fill in a placeholder but not overrule a claim.
The pipeline alternates this with constant folding until nothing changes (a corrected shape can make a
SHAPE op foldable, whose result then fixes a RESHAPE further on). Subgraphs of WHILE / IF bodies are left
alone: their values may change size between iterations, which the rules refuse separately.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import numpy as np

from nnconv.rewrite.folds import FOLDS, FoldCall
from nnconv.rewrite.graph_edit import SubgraphEdit
from nnconv.rewrite.registry import RewriteKind, RewriteRecord, graph_rewrite
from nnconv.rewrite.state import ConversionState
from nnconv.tflite.ir import Operator, Tensor, TfliteModel
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import Padding

Shape = tuple[int, ...]
_SAME_SHAPE = frozenset({
    B.ABS, B.CAST, B.CEIL, B.COS, B.DEQUANTIZE, B.ELU, B.EXP, B.FLOOR, B.GELU, B.HARD_SWISH, B.L2_NORMALIZATION,
    B.LEAKY_RELU, B.LOCAL_RESPONSE_NORMALIZATION, B.LOG, B.LOG_SOFTMAX, B.LOGICAL_NOT, B.LOGISTIC, B.NEG,
    B.QUANTIZE, B.RELU, B.RELU6, B.RELU_0_TO_1, B.RELU_N1_TO_1, B.ROUND, B.RSQRT, B.SIGN, B.SIN, B.SOFTMAX,
    B.SQRT, B.SQUARE, B.TANH, B.ZEROS_LIKE})
_BROADCAST = frozenset({
    B.ADD, B.ATAN2, B.DIV, B.EQUAL, B.FLOOR_DIV, B.FLOOR_MOD, B.GREATER, B.GREATER_EQUAL, B.LESS, B.LESS_EQUAL,
    B.LOGICAL_AND, B.LOGICAL_OR, B.MAXIMUM, B.MINIMUM, B.MUL, B.NOT_EQUAL, B.POW, B.PRELU, B.SELECT_V2,
    B.SQUARED_DIFFERENCE, B.SUB})
_REDUCERS = frozenset({B.MEAN, B.SUM, B.REDUCE_PROD, B.REDUCE_MAX, B.REDUCE_MIN, B.REDUCE_ANY})
_SPATIAL = frozenset({B.CONV_2D, B.DEPTHWISE_CONV_2D, B.AVERAGE_POOL_2D, B.MAX_POOL_2D, B.L2_POOL_2D})
_PADS = frozenset({B.PAD, B.PADV2, B.MIRROR_PAD})
MAX_EXTENT = (1 << 31) - 1


class _Op:
    """One operator's inputs as the inference sees them: shapes (None for an omitted input) and values."""

    def __init__(self, op: Operator, shapes: list[Shape | None], value: Callable[[int], np.ndarray | None]):
        self.op, self.shapes, self._value = op, shapes, value

    def shape(self, i: int) -> Shape:
        s = self.shapes[i] if i < len(self.shapes) else None
        if s is None:
            raise ValueError(f"input {i} is missing")
        return s

    def ints(self, i: int) -> list[int]:
        v = self._value(i) if i < len(self.shapes) and self.shapes[i] is not None else None
        if v is None:
            raise ValueError(f"input {i} has no constant value")
        return [int(x) for x in np.asarray(v).reshape(-1)]


def _broadcast(shapes: Sequence[Shape]) -> Shape:
    return tuple(int(d) for d in np.broadcast_shapes(*shapes))


def _axes(axes: Sequence[int], rank: int) -> list[int]:
    out = [a + rank if a < 0 else a for a in axes]
    if any(not 0 <= a < rank for a in out):
        raise ValueError("axis out of range")
    return out


def _reshape(c: _Op) -> Shape:
    x = c.shape(0)
    try:
        target = c.ints(1)
    except ValueError:
        target = list(c.op.options.new_shape or ()) if c.op.options is not None else []
    size = math.prod(x)
    if target.count(-1) == 1:
        rest = math.prod(d for d in target if d != -1)
        if rest <= 0 or size % rest:
            raise ValueError("the element count does not divide")
        target = [size // rest if d == -1 else d for d in target]
    if any(d < 0 for d in target) or math.prod(target) != size:
        raise ValueError("the element count differs")
    return tuple(target)


def _reduce(c: _Op) -> Shape:
    x = c.shape(0)
    axes = set(_axes(c.ints(1), len(x)))
    if c.op.options is not None and c.op.options.keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in axes)


def _spatial(c: _Op) -> Shape:
    x, o = c.shape(0), c.op.options
    if len(x) != 4:
        raise ValueError("not NHWC")
    code = c.op.builtin_code
    if code in (B.CONV_2D, B.DEPTHWISE_CONV_2D):
        w = c.shape(1)
        kh, kw = w[1], w[2]
        channels = w[0] if code == B.CONV_2D else w[3]
        dh, dw = o.dilation_h_factor, o.dilation_w_factor
    else:
        kh, kw, channels, dh, dw = o.filter_height, o.filter_width, x[3], 1, 1
    sizes = []
    for size, k, stride, dil in ((x[1], kh, o.stride_h, dh), (x[2], kw, o.stride_w, dw)):
        if stride < 1 or dil < 1 or k < 1:
            raise ValueError("bad geometry")
        effective = (k - 1) * dil + 1
        sizes.append(-(-size // stride) if o.padding == Padding.SAME else -(-(size - effective + 1) // stride))
    return (x[0], sizes[0], sizes[1], channels)


def _fully_connected(c: _Op) -> Shape:
    x, w = c.shape(0), c.shape(1)
    units, depth = w[0], w[-1]
    if c.op.options is not None and c.op.options.keep_num_dims:
        return (*x[:-1], units)
    size = math.prod(x)
    if depth <= 0 or size % depth:
        raise ValueError("the input does not divide into rows")
    return (size // depth, units)


def _batch_matmul(c: _Op) -> Shape:
    a, b, o = c.shape(0), c.shape(1), c.op.options
    rows = a[-1] if o is not None and o.adj_x else a[-2]
    cols = b[-2] if o is not None and o.adj_y else b[-1]
    return (*_broadcast([a[:-2], b[:-2]]), rows, cols)


def _space_to_batch(c: _Op) -> Shape:
    x, block, pads = c.shape(0), c.ints(1), c.ints(2)
    m = len(block)
    spatial = []
    for i, b in enumerate(block):
        padded = x[1 + i] + pads[2 * i] + pads[2 * i + 1]
        if b < 1 or padded % b:
            raise ValueError("the block does not divide the padded extent")
        spatial.append(padded // b)
    return (x[0] * math.prod(block), *spatial, *x[1 + m:])


def _batch_to_space(c: _Op) -> Shape:
    x, block, crops = c.shape(0), c.ints(1), c.ints(2)
    m, total = len(block), math.prod(block)
    if total < 1 or x[0] % total:
        raise ValueError("the block does not divide the batch")
    spatial = [x[1 + i] * b - crops[2 * i] - crops[2 * i + 1] for i, b in enumerate(block)]
    return (x[0] // total, *spatial, *x[1 + m:])


def _pad(c: _Op) -> Shape:
    x, pads = c.shape(0), c.ints(1)
    if len(pads) != 2 * len(x):
        raise ValueError("paddings of another rank")
    return tuple(d + pads[2 * i] + pads[2 * i + 1] for i, d in enumerate(x))


def _concatenation(c: _Op) -> Shape:
    shapes = [c.shape(i) for i in range(len(c.shapes))]
    axis = _axes([c.op.options.axis], len(shapes[0]))[0]
    return tuple(sum(s[axis] for s in shapes) if i == axis else d for i, d in enumerate(shapes[0]))


def _pack(c: _Op) -> Shape:
    x = c.shape(0)
    axis = _axes([c.op.options.axis], len(x) + 1)[0]
    return (*x[:axis], len(c.shapes), *x[axis:])


def _expand_dims(c: _Op) -> Shape:
    x = c.shape(0)
    axis = _axes(c.ints(1), len(x) + 1)[0]
    return (*x[:axis], 1, *x[axis:])


def _squeeze(c: _Op) -> Shape:
    x = c.shape(0)
    dims = c.op.options.squeeze_dims if c.op.options is not None else None
    axes = set(_axes(dims, len(x))) if dims else {i for i, d in enumerate(x) if d == 1}
    return tuple(d for i, d in enumerate(x) if i not in axes)


def _transpose(c: _Op) -> Shape:
    x = c.shape(0)
    return tuple(x[p] for p in _axes(c.ints(1), len(x)))


def _gather(c: _Op) -> Shape:
    params, indices, o = c.shape(0), c.shape(1), c.op.options
    axis = _axes([o.axis], len(params))[0]
    batch_dims = o.batch_dims + len(indices) if o.batch_dims < 0 else o.batch_dims
    return (*params[:axis], *indices[batch_dims:], *params[axis + 1:])


def _tile(c: _Op) -> Shape:
    x, multiples = c.shape(0), c.ints(1)
    if len(multiples) != len(x):
        raise ValueError("multiples of another rank")
    return tuple(d * m for d, m in zip(x, multiples))


_SHAPE_FNS: dict[B, Callable[[_Op], Shape]] = {
    B.RESHAPE: _reshape, B.FULLY_CONNECTED: _fully_connected, B.BATCH_MATMUL: _batch_matmul,
    B.SPACE_TO_BATCH_ND: _space_to_batch, B.BATCH_TO_SPACE_ND: _batch_to_space, B.CONCATENATION: _concatenation,
    B.PACK: _pack, B.EXPAND_DIMS: _expand_dims, B.SQUEEZE: _squeeze, B.TRANSPOSE: _transpose, B.GATHER: _gather,
    B.TILE: _tile, B.FILL: lambda c: tuple(c.ints(0)), B.SELECT: lambda c: c.shape(1),
    # TRANSPOSE_CONV's Prepare resizes its output to its (constant) output_shape input, slot 0
    B.TRANSPOSE_CONV: lambda c: tuple(c.ints(0)),
    B.RESIZE_BILINEAR: lambda c: (c.shape(0)[0], *c.ints(1), c.shape(0)[3]),
    B.RESIZE_NEAREST_NEIGHBOR: lambda c: (c.shape(0)[0], *c.ints(1), c.shape(0)[3]),
    **{code: _reduce for code in _REDUCERS}, **{code: _spatial for code in _SPATIAL},
    **{code: _pad for code in _PADS},
    **{code: (lambda c: c.shape(0)) for code in _SAME_SHAPE},
    **{code: (lambda c: _broadcast([s for s in c.shapes if s is not None])) for code in _BROADCAST},
}


def _non_max_suppression(c: _Op) -> list[Shape]:
    """NON_MAX_SUPPRESSION_V4 / V5 with a constant max_output_size (slot 2): Prepare resizes
    selected_indices (and V5's selected_scores) to [max_output_size] and valid_outputs to a scalar,
    whatever the file declares (TensorFlow's converter may write [1, N]). A computed size is dynamic."""
    (size,) = c.ints(2)
    if size < 0:
        raise ValueError("negative max_output_size")
    return [(size,)] * (len(c.op.outputs) - 1) + [()]


# ops with several outputs: every output's shape at once
_MULTI_SHAPE_FNS: dict[B, Callable[[_Op], list[Shape]]] = {
    B.NON_MAX_SUPPRESSION_V4: _non_max_suppression, B.NON_MAX_SUPPRESSION_V5: _non_max_suppression,
}


# Slicing ops whose shape rules (masks, negative and clamped bounds, shrink and new axes) their folds already
# follow: evaluated on a zero-stride view of the data input (the data input's slot), costing no copy of it.
_VIEW_FOLDS = {B.STRIDED_SLICE: 0, B.SLICE: 0, B.SPLIT: 1, B.UNPACK: 0}
_VIEW_LIMIT = 1 << 22  # elements an evaluation may allocate (UNPACK's np.take copies each piece)


def output_shapes(op: Operator, shapes: list[Shape | None], value: Callable[[int], np.ndarray | None],
                  tensors: Sequence[Tensor]) -> list[Shape] | None:
    """The shapes TFLite's Prepare gives the outputs of `op` from its input `shapes` and constant inputs
    (`value(slot)`: the slot's constant or folded value, or None; `tensors`: the subgraph's); None when not
    known here."""
    fn = _SHAPE_FNS.get(op.builtin_code)
    try:
        if fn is not None and len(op.outputs) == 1:
            found = [fn(_Op(op, shapes, value))]
        elif op.builtin_code in _MULTI_SHAPE_FNS:
            found = _MULTI_SHAPE_FNS[op.builtin_code](_Op(op, shapes, value))
        elif op.builtin_code in _VIEW_FOLDS:
            found = _by_fold(op, shapes, value, tensors, _VIEW_FOLDS[op.builtin_code])
        else:
            return None
    except (ValueError, IndexError, AttributeError, TypeError):
        return None
    # TFLite's dimensions are int32: a larger computed extent (from a declared shape no file TFLite runs could
    # have, a fuzzed CUSTOM output of 2^30 rows say) is not a shape Prepare gives
    return found if all(0 <= d <= MAX_EXTENT for s in found for d in s) else None


def _by_fold(op: Operator, shapes: list[Shape | None], value: Callable[[int], np.ndarray | None],
             tensors: Sequence[Tensor], data_slot: int) -> list[Shape]:
    data = shapes[data_slot]
    if data is None or math.prod(data) > _VIEW_LIMIT:
        raise ValueError("no data input")
    values = [np.broadcast_to(np.zeros((), np.uint8), data) if k == data_slot else value(k)
              for k in range(len(op.inputs))]
    ins = [tensors[i] if i >= 0 else None for i in op.inputs]
    results = FOLDS[op.builtin_code](FoldCall(op, values, ins, [tensors[o] for o in op.outputs]))
    return [tuple(int(d) for d in np.shape(r)) for r in results]


def _has_placeholder(signature: tuple[int, ...] | None) -> bool:
    return signature is not None and any(d < 0 for d in signature)


def _placeholder_allows(declared: Shape, signature: tuple[int, ...] | None, shape: Shape) -> bool:
    """The declared shape is the converter's placeholder and `shape` fits its signature."""
    if signature is None or not _has_placeholder(signature):
        return False
    return len(signature) == len(shape) == len(declared) and all(s < 0 or s == d for s, d in zip(signature, shape))


@graph_rewrite(RewriteKind.STATIC_SHAPES, "TFLite's kernels resize their outputs at Prepare: a declared output "
               "shape (a -1 placeholder or a wrong static claim) is never read")
def static_shapes(state: ConversionState) -> tuple[TfliteModel, list[RewriteRecord]]:
    model = state.model
    if not model.subgraphs:
        return model, []
    sg = model.subgraphs[0]
    edit = SubgraphEdit(sg)
    records: list[RewriteRecord] = []

    def value_of(op: Operator) -> Callable[[int], np.ndarray | None]:
        def value(slot: int) -> np.ndarray | None:
            t = op.inputs[slot]
            if t < 0:  # an omitted optional input has no value
                return None
            folded = state.folded.get((sg.index, t))
            if folded is not None:
                return folded
            return edit.tensors[t].data
        return value

    for op in sg.operators:
        if not op.outputs or any(o < 0 for o in op.outputs):
            continue
        shapes = [edit.tensors[i].shape if i >= 0 else None for i in op.inputs]
        found = output_shapes(op, shapes, value_of(op), edit.tensors)
        if found is None or len(found) != len(op.outputs):
            continue
        # an input still holding a placeholder makes the computed shapes a guess: good enough to fill in a
        # placeholder output the signature checks, not to overrule a static claim
        guessed = any(i >= 0 and _has_placeholder(edit.tensors[i].shape_signature) for i in op.inputs)
        for o, shape in zip(op.outputs, found):
            out = edit.tensors[o]
            placeholder = _placeholder_allows(out.shape, out.shape_signature, shape)
            if not placeholder and (shape == out.shape or guessed or _has_placeholder(out.shape_signature)):
                continue  # agrees, or not known well enough: left to the rules
            if shape != out.shape:
                claim = f"signature {list(out.shape_signature or ())}" if placeholder else "a static claim"
                records.append(RewriteRecord(sg.index, op.index, RewriteKind.STATIC_SHAPES,
                                             f"output '{out.name}' is {list(shape)} as TFLite computes it (declared "
                                             f"{list(out.shape)}, {claim})"))
            # a right placeholder (the -1 is the batch, 1) becomes static too, as TFLite's Prepare fixes it
            # (folding may then take the tensor; nothing to report)
            edit.set_shape(out.index, shape)
    if not edit.changed:
        return model, []
    return dataclasses.replace(model, subgraphs=(edit.finish(), *model.subgraphs[1:])), records
