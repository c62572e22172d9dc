"""Folds of the shape and data-movement ops: SHAPE and RANK (from the static shape alone), RESHAPE, SQUEEZE,
EXPAND_DIMS, CONCATENATION, PACK, UNPACK, GATHER, GATHER_ND, STRIDED_SLICE, SLICE, TRANSPOSE, TILE,
BROADCAST_TO, SPLIT, SPLIT_V (data movement: they fold quantized tensors whose parameters match), FILL and
BROADCAST_ARGS (two constant shapes)."""

from __future__ import annotations

from typing import Any

import numpy as np

from nnconv.rewrite.folds.registry import FoldCall, fold
from nnconv.tflite.schema_enums import BuiltinOperator as B


@fold(B.SHAPE, shape_only=True)
def shape(c: FoldCall) -> list[np.ndarray]:
    x = c.inputs[0]
    if x is None or x.has_dynamic_shape:
        raise ValueError("dynamic shape")
    return [np.asarray(x.shape, dtype=np.int64)]


@fold(B.RANK, shape_only=True)
def rank(c: FoldCall) -> list[np.ndarray]:
    x = c.inputs[0]
    if x is None or (x.shape_signature is not None and len(x.shape_signature) != len(x.shape)):
        raise ValueError("unknown rank")
    return [np.asarray(x.rank, dtype=np.int32)]


@fold(B.RESHAPE, data_movement=True)
def reshape(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    if len(c.values) > 1 and c.values[1] is not None:
        shape = c.ints(1)
    elif c.options is not None and c.options.new_shape is not None:
        shape = list(c.options.new_shape)
    else:
        shape = list(c.outputs[0].shape)
    return [x.reshape(shape)]


@fold(B.SQUEEZE, data_movement=True)
def squeeze(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    dims = tuple(c.options.squeeze_dims or ()) if c.options is not None else ()
    return [np.squeeze(x, axis=dims) if dims else np.squeeze(x)]


@fold(B.EXPAND_DIMS, data_movement=True)
def expand_dims(c: FoldCall) -> list[np.ndarray]:
    return [np.expand_dims(c.value(0), c.ints(1)[0])]


@fold(B.CONCATENATION, data_movement=True)
def concatenation(c: FoldCall) -> list[np.ndarray]:
    if c.options is not None and c.options.fused_activation_function != 0:
        raise ValueError("fused activation")
    return [np.concatenate([c.value(i) for i in range(len(c.values))], axis=c.options.axis)]


@fold(B.PACK, data_movement=True)
def pack(c: FoldCall) -> list[np.ndarray]:
    return [np.stack([c.value(i) for i in range(len(c.values))], axis=c.options.axis)]


@fold(B.UNPACK, data_movement=True)
def unpack(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    axis = c.options.axis % x.ndim
    return [np.take(x, k, axis=axis) for k in range(x.shape[axis])]


@fold(B.GATHER, data_movement=True)
def gather(c: FoldCall) -> list[np.ndarray]:
    if c.options is not None and c.options.batch_dims != 0:
        raise ValueError("batch_dims")
    x, idx = c.value(0), c.value(1).astype(np.int64)
    axis = c.options.axis if c.options is not None else 0
    if idx.size and (idx.min() < 0 or idx.max() >= x.shape[axis]):
        raise ValueError("index out of range")
    return [np.take(x, idx, axis=axis)]


@fold(B.GATHER_ND, data_movement=True)
def gather_nd(c: FoldCall) -> list[np.ndarray]:
    x, idx = c.value(0), c.value(1).astype(np.int64)
    return [x[tuple(np.moveaxis(idx, -1, 0))]]


def strided_slice_index(shape: tuple[int, ...], begin: list[int], end: list[int], strides: list[int],
                        o: Any) -> tuple:
    """TFLite's sparse strided-slice spec as a numpy index: ellipsis -> Ellipsis, new axis -> None,
    shrink -> an integer, masked bounds -> open slice ends. Numpy clamps slice bounds as TFLite does."""
    index: list[Any] = []
    if o.offset:
        end = [b + e for b, e in zip(begin, end)]
    dim_of = 0
    for i, (b, e, s) in enumerate(zip(begin, end, strides)):
        if o.ellipsis_mask >> i & 1:
            index.append(Ellipsis)
            dim_of = len(shape) - sum(1 for k in range(i + 1, len(begin))
                                      if not (o.new_axis_mask >> k & 1))
            continue
        if o.new_axis_mask >> i & 1:
            index.append(None)
            continue
        if s == 0:
            raise ValueError("zero stride")
        if o.shrink_axis_mask >> i & 1:
            dim = shape[dim_of]
            k = 0 if o.begin_mask >> i & 1 else b
            if not -dim <= k < dim:
                raise ValueError("shrunk index out of range")
            index.append(k)
        else:
            index.append(slice(None if o.begin_mask >> i & 1 else b, None if o.end_mask >> i & 1 else e, s))
        dim_of += 1
    return tuple(index)


@fold(B.STRIDED_SLICE, data_movement=True)
def strided_slice(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    idx = strided_slice_index(x.shape, c.ints(1), c.ints(2), c.ints(3), c.options)
    return [np.asarray(x[idx])]


@fold(B.SLICE, data_movement=True)
def slice_(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    index = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(c.ints(1), c.ints(2)))
    return [x[index]]


@fold(B.TRANSPOSE, data_movement=True)
def transpose(c: FoldCall) -> list[np.ndarray]:
    return [np.transpose(c.value(0), c.ints(1))]


@fold(B.TILE, data_movement=True)
def tile(c: FoldCall) -> list[np.ndarray]:
    return [np.tile(c.value(0), c.ints(1))]


@fold(B.BROADCAST_TO, data_movement=True)
def broadcast_to(c: FoldCall) -> list[np.ndarray]:
    return [np.broadcast_to(c.value(0), c.ints(1)).copy()]


@fold(B.BROADCAST_ARGS)
def broadcast_args(c: FoldCall) -> list[np.ndarray]:
    """The shape two shapes broadcast to, in their dtype (numpy's rules are TFLite's; incompatible shapes do
    not fold)."""
    s0, s1 = c.value(0), c.value(1)
    return [np.asarray(np.broadcast_shapes(tuple(c.ints(0)), tuple(c.ints(1))), dtype=np.result_type(s0, s1))]


@fold(B.SPLIT, data_movement=True)
def split(c: FoldCall) -> list[np.ndarray]:
    return list(np.split(c.value(1), len(c.outputs), axis=c.ints(0)[0]))


@fold(B.SPLIT_V, data_movement=True)
def split_v(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    axis = c.ints(2)[0] % x.ndim
    sizes = [o.shape[axis] for o in c.outputs]
    return list(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


@fold(B.FILL, data_movement=True)  # copies its value: a quantized one folds when the output shares its parameters
def fill(c: FoldCall) -> list[np.ndarray]:
    return [np.full(c.ints(0), c.value(1).reshape(-1)[0])]
