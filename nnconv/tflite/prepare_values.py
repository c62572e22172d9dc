"""The Prepare of TFLite's kernels that compute their output at Prepare (`tflite/kernels/*.cc` at LiteRT
f67457790c9c), and of RESHAPE and the reductions.

SHAPE and RANK always, and RESHAPE, STRIDED_SLICE, TILE, RANGE, GATHER, CONCATENATION, MUL, BROADCAST_ARGS
and REDUCE_PROD (at most 8 output elements) when every input they read is constant or persistent
(IsConstantOrPersistentTensor), make their output kTfLitePersistentRo and run their Eval at Prepare, so the
next shape-reading kernel sees the value as constant (the common TensorFlow idiom SHAPE -> STRIDED_SLICE ->
CONCATENATION -> RESHAPE stays static; with PACK, which computes nothing at Prepare, it does not). The value
is computed here too, except where it needs a quantized kernel's fixed-point arithmetic (a quantized MUL or
REDUCE_PROD): the tensor is then persistent without a known value, and a kernel that needs it is not
followed (its outputs keep their declared shapes). Without constant inputs these kernels only size their
output, or mark it dynamic (STRIDED_SLICE, TILE, RANGE and the reductions with unknown bounds, multiples,
limits or axes). RESHAPE whose shape input is neither constant nor persistent returns
kTfLiteOutputShapeNotKnown: its output stays kTfLiteArenaRw at the declared shape, but TFLite's preparation
stops there as at a dynamic tensor, even when the ReshapeOptions give the shape.
"""

from __future__ import annotations

import numpy as np

from nnconv.tflite.prepare_node import INT32_MAX, OUTPUT_SHAPE_NOT_KNOWN, Node, PrepareFailure, Shape, kernel
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

_INDEX_TYPES = (T.INT32, T.INT64)


def _persist(n: Node, out: int, shape: Shape, value: np.ndarray | None) -> None:
    """SetTensorToPersistentRo, ResizeTensor, then the kernel's Eval run at Prepare."""
    n.set_persistent(out)
    n.resize(out, shape)
    n.set_value(out, value)


@kernel(B.SHAPE)
def _shape(n: Node) -> None:
    n.arity(1, 1)
    x, out = n.input(0), n.output(0)
    kind = n.param("out_type")
    if kind not in (T.INT32, T.INT64):
        raise PrepareFailure(f"Unknown shape output data type: {kind}")
    n.set_type(out, T(kind))
    # a dynamic input still has dims at Prepare: SHAPE is always known then
    _persist(n, out, (n.rank(x),), np.asarray(n.shape(x)))


@kernel(B.RANK)
def _rank(n: Node) -> None:
    n.arity(1, 1)
    out = n.output(0)
    n.set_type(out, T.INT32)
    _persist(n, out, (), np.asarray(n.rank(n.input(0))))


def _resolve_reshape(shape: list[int], in_shape: Shape) -> Shape:
    """reshape_internal::ResolveOutputShape: one -1 takes what is left; zeros count as themselves."""
    total = int(np.prod(in_shape, dtype=np.int64))
    nonzero_in = int(np.prod([d for d in in_shape if d != 0], dtype=np.int64))
    if shape.count(-1) > 1:
        raise PrepareFailure("stretch_dim != -1 (more than one -1 in the new shape)")
    if any(d < -1 for d in shape):
        raise PrepareFailure("output shape contains negative dimension")
    rest = [d for d in shape if d != -1]
    if -1 in shape:
        nonzero_out = int(np.prod([d for d in rest if d != 0], dtype=np.int64))
        fill = 0 if total == 0 and int(np.prod(rest, dtype=np.int64)) != 0 else nonzero_in // nonzero_out
        if fill > INT32_MAX:
            raise PrepareFailure("inferred reshape dimension overflowed")
        shape = [fill if d == -1 else d for d in shape]
    count = int(np.prod(shape, dtype=np.int64))
    if count != total:
        raise PrepareFailure(f"num_input_elements != num_output_elements ({total} != {count})")
    return tuple(shape)


@kernel(B.RESHAPE)
def _reshape(n: Node) -> object:
    n.ensure(n.n_in in (1, 2), "NumInputs(node) == 1 || NumInputs(node) == 2")
    n.arity(None, 1)
    out = n.output(0)
    if n.type(out) == T.STRING:
        return None  # sized at Eval; the output is dynamic from the start
    x = n.opt_input(0)
    n.ensure(x is not None, "input != nullptr")
    shape_t = n.opt_input(1)
    if n.n_in == 2 and shape_t is None:
        raise PrepareFailure("the shape input is omitted (TFLite dereferences a null tensor)")
    if n.n_in == 2 and not n.const(shape_t):
        # even with a new_shape option: the output is sized at Eval, and preparation stops here
        return OUTPUT_SHAPE_NOT_KNOWN
    if shape_t is not None and n.rank(shape_t) == 1 and n.type(shape_t) == T.INT32:
        shape = n.ints(shape_t)
    else:
        # the option, where a legacy [0] means a scalar; an absent option reads as no dims (a scalar too)
        shape = list(n.param("new_shape") or ())
        if shape == [0]:
            shape = []
    if n.const(x):
        n.set_persistent(out)
        resolved = _resolve_reshape(shape, n.shape(x))
        n.resize(out, resolved)
        n.set_value(out, n.state.values.get(x))
        return None
    n.resize(out, _resolve_reshape(shape, n.shape(x)))
    return None


# -- STRIDED_SLICE ----------------------------------------------------------------------------------
def _bit(mask: int, i: int) -> bool:
    return bool(mask >> i & 1) if 0 <= i < 32 else False


def _strided_axes(n: Node, x: int, begin: int, end: int, strides: int, use_bounds: bool
                  ) -> tuple[list[tuple[int, int, int, bool, int]], Shape]:
    """BuildStridedSliceParams: per effective axis (start, stop, stride, shrink, axis size) after ellipsis
    and new-axis expansion, and the effective input shape."""
    o = n.options
    ell, new, bmask, emask, smask = (n.param(f) for f in ("ellipsis_mask", "new_axis_mask", "begin_mask",
                                                         "end_mask", "shrink_axis_mask"))
    count = n.dim(begin, 0)
    in_shape = n.shape(x)
    add = sum(1 for i in range(count) if not _bit(ell, i) and _bit(new, i))
    eff = len(in_shape) + add
    eff_ell = eff_new = 0
    ell_start, expanded = eff, 0
    i = 0
    while i < eff:
        if _bit(ell, i):
            ell_start = i
            ell_end = max(i + 1, min(i + 1 + add + len(in_shape) - count, eff))
            expanded = ell_end - ell_start - 1
            while i < ell_end:
                eff_ell |= 1 << i
                i += 1
            continue
        if _bit(new, i - expanded):
            eff_new |= 1 << i
        i += 1
    b_vals = n.ints(begin) if use_bounds else []
    e_vals = n.ints(end) if use_bounds else []
    s_vals = n.ints(strides)
    axes: list[tuple[int, int, int, bool, int]] = []
    shape: list[int] = []
    added_ell = added_axes = 0
    for i in range(eff):
        if _bit(eff_ell, i):
            added_ell = max(0, i - ell_start)
        if _bit(eff_ell, i) or (not _bit(eff_new, i) and i >= count + expanded):
            # an ellipsis axis, or one past the given indices: taken whole
            size = _in_dim(in_shape, i - added_axes)
            axes.append(_axis(0, 0, 1, True, True, False, size, False))
        elif _bit(eff_new, i):
            axes.append(_axis(0, 1, 1, False, False, False, 1, False))
            added_axes += 1
            size = 1
        else:
            k = i - added_ell
            if not 0 <= k < len(s_vals):
                raise PrepareFailure("strided slice index out of the begin/end/strides range")
            size = _in_dim(in_shape, i - added_axes)
            start = b_vals[k] if use_bounds else 0
            stop = e_vals[k] if use_bounds else 0
            axes.append(_axis(start, stop, s_vals[k], _bit(bmask, k), _bit(emask, k), _bit(smask, k), size,
                              bool(o is not None and o.offset)))
        shape.append(size)
    return axes, tuple(shape)


def _in_dim(shape: Shape, i: int) -> int:
    if not 0 <= i < len(shape):
        raise PrepareFailure("strided slice masks address a dimension the input lacks")
    return shape[i]


def _axis(start: int, stop: int, stride: int, bmask: bool, emask: bool, shrink: bool, size: int, offset: bool
          ) -> tuple[int, int, int, bool, int]:
    """reference_ops::StartForAxis / EndForAxis of the dynamic strided slice."""
    if stride == 0:
        raise PrepareFailure("stride value has to be non-zero")
    lo, hi = (0, size) if stride > 0 else (-1, size - 1)
    s = start + size if start < 0 else start
    s = min(max(s, lo), hi)
    if bmask:
        s = 0 if stride > 0 else size - 1
    if shrink:
        return s, (s if s >= size else s + 1), stride, True, size
    e = stop + s if offset else stop
    e = e + size if e < 0 else e
    e = min(max(e, lo), hi)
    if emask:
        e = size if stride > 0 else -1
    return s, e, stride, False, size


@kernel(B.STRIDED_SLICE)
def _strided_slice(n: Node) -> None:
    n.arity(4, 1)
    x, begin, end, strides, out = n.input(0), n.input(1), n.input(2), n.input(3), n.output(0)
    for t, what in ((begin, "begin"), (end, "end"), (strides, "strides")):
        n.ensure_eq(n.rank(t), 1, f"NumDimensions(op_context.{what})", "1")
    n.ensure_eq(n.numel(begin), n.numel(end), "NumElements(op_context.begin)", "NumElements(op_context.end)")
    n.same_type(x, out)
    for t in (begin, end, strides):
        n.ensure(n.type(t) == T.INT32, "index type == kTfLiteInt32")
    if n.numel(begin) > 31:
        raise PrepareFailure("StridedSlice op only supports up to 31 indices.")
    offset = bool(n.param("offset"))
    if not (n.const(strides) and (offset or (n.const(begin) and n.const(end)))):
        n.set_dynamic(out)
        return
    evaluate = n.const(x) and n.const(begin) and n.const(end)
    if evaluate:
        n.set_persistent(out)
    axes, eff_shape = _strided_axes(n, x, begin, end, strides, use_bounds=not offset)
    e_vals = n.ints(end) if offset else []
    dims = []
    for i, (s, e, stride, shrink, _size) in enumerate(axes):
        if shrink:
            continue
        if offset:
            if i >= len(e_vals):
                raise PrepareFailure("strided slice end index out of range")
            length = e_vals[i]  # with `offset`, end holds the sizes
        else:
            length = e - s
        if stride == -(1 << 31):
            raise PrepareFailure("stride value INT32_MIN is not supported")
        if (length < 0) != (stride < 0):
            dim = 0
        elif stride < 0:
            dim = (-(length + 1)) // (-stride) + 1
        else:
            dim = 0 if length == 0 else (length - 1) // stride + 1
        if not 0 <= dim <= INT32_MAX:
            raise PrepareFailure("StridedSlice: integer overflow computing output dim")
        dims.append(dim)
    n.resize(out, dims)
    if evaluate:
        value = n.state.values.get(x)
        if value is None or offset:
            n.set_value(out, None)
            return
        picked = np.asarray(value).reshape(eff_shape)[tuple(_numpy_index(a) for a in axes)]
        n.set_value(out, picked if picked.size == int(np.prod(dims, dtype=np.int64)) else None)


def _numpy_index(axis: tuple[int, int, int, bool, int]) -> slice:
    """The elements the kernel's loop `for (i = start; stride > 0 ? i < stop : i > stop; i += stride)` visits."""
    s, e, stride, shrink, size = axis
    if shrink:
        return slice(s, s + 1) if 0 <= s < size else slice(0, 0)
    if stride < 0 and s < 0:
        return slice(0, 0)
    return slice(s, None if e < 0 else e, stride)


@kernel(B.TILE)
def _tile(n: Node) -> None:
    n.arity(2, 1)
    x, out, mult = n.input(0), n.output(0), n.input(1)
    n.same_type(x, out)
    if n.type(mult) not in _INDEX_TYPES:
        raise PrepareFailure(f"Multipliers of type '{n.type(mult).name}' are not supported by tile.")
    if not n.const(mult):
        n.set_dynamic(out)
        return
    evaluate = n.const(x)
    if evaluate:
        n.set_persistent(out)
    n.ensure_eq(n.rank(x), n.numel(mult), "num_dimensions", "num_multipliers")
    m = n.ints(mult)
    dims = []
    for d, k in zip(n.shape(x), m):
        if k < 0:
            raise PrepareFailure("Multipliers must be non-negative.")
        if d < 0 or (d > 0 and k > INT32_MAX // d):
            raise PrepareFailure(f"Cannot multiply {d} and {k}. Output shape dimensions must be in range "
                                 "[0, INT32_MAX].")
        dims.append(d * k)
    n.resize(out, dims)
    if evaluate:
        v = n.state.values.get(x)
        n.set_value(out, None if v is None else np.tile(v, m))


@kernel(B.RANGE)
def _range(n: Node) -> None:
    n.arity(3, 1)
    start, limit, delta, out = n.input(0), n.input(1), n.input(2), n.output(0)
    for t in (start, limit, delta):
        n.ensure_eq(n.rank(t), 0, "NumDimensions", "0")
    dtype = n.type(start)
    if dtype not in (T.FLOAT32, T.INT32, T.INT64):
        raise PrepareFailure(f"Unknown index output data type: {dtype.name}")
    n.same_type(limit, start)
    n.same_type(delta, start)
    n.set_type(out, dtype)
    if not (n.const(start) and n.const(limit) and n.const(delta)):
        n.set_dynamic(out)
        return
    n.set_persistent(out)
    s, lim, d = (n.value(t).reshape(-1)[0] for t in (start, limit, delta))
    n.ensure(d != 0, "!std::equal_to<T>()(delta, 0)")
    n.ensure((s >= lim and d < 0) or (s <= lim and d > 0),
             "(start >= limit && delta < 0) || (start <= limit && delta > 0)")
    if dtype == T.FLOAT32:
        size = int(np.ceil(np.abs((np.float32(lim) - np.float32(s)) / np.float32(d))))
    else:
        size = (abs(int(lim) - int(s)) + abs(int(d)) - 1) // abs(int(d))
    n.resize(out, (size,))
    # the kernel accumulates value += delta, which cumsum in the tensor's type reproduces
    steps = np.full(size, d, dtype=n.value(delta).dtype)
    if size:
        steps[0] = s
    n.set_value(out, np.cumsum(steps, dtype=steps.dtype))


@kernel(B.BROADCAST_ARGS)
def _broadcast_args(n: Node) -> None:
    n.arity(2, 1)
    a, b, out = n.input(0), n.input(1), n.output(0)
    n.ensure(n.type(a) in _INDEX_TYPES, "shape1->type is int32 or int64")
    n.same_type(a, b)
    n.same_type(a, out)
    n.ensure(n.rank(a) == 1 and n.rank(b) == 1, "both shapes are vectors")
    length = max(n.dim(a, 0), n.dim(b, 0))
    if not (n.const(a) and n.const(b)):
        n.resize(out, (length,))  # never dynamic: the length is known from the input dims
        return
    n.set_persistent(out)
    n.resize(out, (length,))
    va, vb = n.ints(a), n.ints(b)
    va, vb = [1] * (length - len(va)) + va, [1] * (length - len(vb)) + vb
    if any(x != y and x != 1 and y != 1 for x, y in zip(va, vb)):
        raise PrepareFailure("shape1_i != shape2_i (BroadcastArgs aborts)")
    n.set_value(out, np.asarray([y if x == 1 else x for x, y in zip(va, vb)]))


@kernel(B.GATHER)
def _gather(n: Node) -> None:
    n.arity(2, 1)
    x, idx, out = n.input(0), n.input(1), n.output(0)
    if n.type(idx) not in (T.INT64, T.INT32, T.INT16):
        raise PrepareFailure(f"Positions of type '{n.type(idx).name}' are not supported by gather.")
    n.set_type(out, n.type(x))
    if n.type(x) == T.STRING:
        n.ensure_eq(n.rank(x), 1, "NumDimensions(input)", "1")
    axis, batch = n.param("axis"), n.param("batch_dims")
    axis = axis + n.rank(x) if axis < 0 else axis
    n.ensure(0 <= axis < n.rank(x), "0 <= axis && axis < NumDimensions(input)")
    batch = batch + n.rank(idx) if batch < 0 else batch
    n.ensure(batch <= axis, "batch_dims <= axis")
    n.ensure(0 <= batch < n.rank(x) and batch <= n.rank(idx), "0 <= batch_dims < NumDimensions(input)")
    sx, si = n.shape(x), n.shape(idx)
    for i in range(batch):
        n.ensure_eq(sx[i], si[i], "input->dims->data[i]", "positions->dims->data[i]")
    shape = sx[:axis] + si[batch:] + sx[axis + 1:]
    if not (n.const(x) and n.const(idx)):
        n.resize(out, shape)
        return
    _persist(n, out, shape, None)
    pos = n.value(idx).astype(np.int64)
    n.ensure(pos.size == 0 or int(pos.min()) >= 0, "indices_has_only_positive_elements")
    if pos.size and int(pos.max()) >= sx[axis]:
        raise PrepareFailure("gather index out of bounds")
    v = n.state.values.get(x)
    if v is None:
        return
    if batch == 0:
        n.set_value(out, np.take(v, pos, axis=axis))
        return
    outer = int(np.prod(sx[:batch], dtype=np.int64))
    vb, pb = v.reshape((outer,) + sx[batch:]), pos.reshape((outer,) + si[batch:])
    n.set_value(out, np.stack([np.take(vb[k], pb[k], axis=axis - batch) for k in range(outer)]))


@kernel(B.CONCATENATION)
def _concatenation(n: Node) -> None:
    first = n.input(0)
    rank, dtype = n.rank(first), n.type(first)
    axis = n.param("axis")
    axis = axis + rank if axis < 0 else axis
    n.ensure(axis >= 0 and (axis < rank or (rank == 0 and axis == 0)), "axis < t0->dims->size")
    n.ensure_eq(n.param("fused_activation_function"), 0, "params->activation", "kTfLiteActNone")
    n.ensure(dtype in (T.FLOAT32, T.FLOAT16, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64, T.BOOL, T.UINT32, T.INT4),
             "is_supported_type")
    ins = [n.input(k) for k in range(n.n_in)]
    constant = all(n.const(t) for t in ins)
    out = n.output(0)
    if constant and rank == 0 and dtype != T.INT4:
        # scalars concatenate into a vector (TensorFlow's converter emits this for tf.stack of shapes)
        for t in ins[1:]:
            n.ensure_eq(n.rank(t), 0, "t->dims->size", "t0->dims->size")
        vals = [n.state.values.get(t) for t in ins]
        _persist(n, out, (len(ins),), None if any(v is None for v in vals) else np.stack(vals))
        return
    n.ensure(rank > 0, "t0->dims->size > 0")
    total = n.shape(first)[axis]
    for t in ins[1:]:
        n.ensure_eq(n.rank(t), rank, "t->dims->size", "t0->dims->size")
        n.same_type(t, first)
        for d in range(rank):
            if d == axis:
                total += n.shape(t)[d]
            else:
                n.ensure_eq(n.shape(t)[d], n.shape(first)[d], "t->dims->data[d]", "t0->dims->data[d]")
    shape = n.shape(first)[:axis] + (total,) + n.shape(first)[axis + 1:]
    n.same_type(out, first)
    if dtype == T.INT8:
        for t in ins:
            n.same_quant(t, out)
    if not constant:
        n.resize(out, shape)
        return
    vals = [n.state.values.get(t) for t in ins]
    _persist(n, out, shape, None if any(v is None for v in vals) else np.concatenate(vals, axis=axis))


_CLAMPS = {1: (0, None), 2: (-1, 1), 3: (0, 6)}  # RELU, RELU_N1_TO_1, RELU6


@kernel(B.MUL)
def _mul(n: Node) -> None:
    n.arity(2, 1)
    a, b, out = n.input(0), n.input(1), n.output(0)
    n.same_type(a, b)
    act = n.param("fused_activation_function")
    if n.type(out) == T.COMPLEX64 and act:
        raise PrepareFailure("Activation is not allowed for COMPLEX64 input.")
    shape = n.shape(a) if n.shape(a) == n.shape(b) else n.broadcast(a, b)
    if not (n.const(a) and n.const(b)):
        n.resize(out, shape)
        return
    _persist(n, out, shape, None)
    va, vb = n.state.values.get(a), n.state.values.get(b)
    quantized = bool(n.tensor(out).quantization.scale) and n.type(out) in (T.UINT8, T.INT8, T.INT16)
    if va is None or vb is None or quantized or n.type(out) not in (T.FLOAT32, T.INT32, T.INT64, T.COMPLEX64):
        return  # a quantized product needs the kernel's fixed-point arithmetic: not computed here
    with np.errstate(all="ignore"):
        product = np.multiply(va, vb).astype(va.dtype)
    if act in _CLAMPS:
        lo, hi = _CLAMPS[act]
        product = np.clip(product, lo, hi) if hi is not None else np.maximum(product, lo)
    elif act:
        return
    n.set_value(out, product)


def _reduced_shape(n: Node, x: int, axis: int) -> Shape:
    """GetOutputShape of reduce.cc: axes normalized and deduplicated; a scalar input stays a scalar."""
    rank = n.rank(x)
    resolved: list[int] = []
    if rank == 0:
        return ()
    for a in n.ints(axis):
        a = a + rank if a < 0 else a
        if not 0 <= a < rank:
            raise PrepareFailure("Invalid axis index.")
        if a not in resolved:
            resolved.append(a)
    if n.param("keep_dims"):
        return tuple(1 if i in resolved else d for i, d in enumerate(n.shape(x)))
    return tuple(d for i, d in enumerate(n.shape(x)) if i not in resolved)


@kernel(B.MEAN, B.SUM, B.REDUCE_PROD, B.REDUCE_MAX, B.REDUCE_MIN, B.REDUCE_ANY, B.REDUCE_ALL)
def _reduce(n: Node) -> None:
    n.arity(2, 1)
    x, axis, out = n.input(0), n.input(1), n.output(0)
    if n.op.builtin_code in (B.REDUCE_ANY, B.REDUCE_ALL):
        n.ensure(n.type(x) == T.BOOL, "input->type == kTfLiteBool")
    n.ensure(n.type(axis) == T.INT32, "op_context.axis->type == kTfLiteInt32")
    if not n.const(axis):
        n.set_dynamic(out)
        return
    shape = _reduced_shape(n, x, axis)
    count = int(np.prod(shape, dtype=np.int64))
    # only REDUCE_PROD evaluates at Prepare, and only small results (kMaxConstantOutputTensorSize = 8)
    if n.op.builtin_code != B.REDUCE_PROD or not n.const(x) or count > 8:
        n.resize(out, shape)
        return
    _persist(n, out, shape, None)
    v = n.state.values.get(x)
    if v is None or (n.tensor(x).quantization.scale and n.type(x) in (T.INT8, T.INT16)):
        return
    axes = tuple(sorted({a % max(n.rank(x), 1) for a in n.ints(axis)})) if n.rank(x) else ()
    with np.errstate(all="ignore"):
        n.set_value(out, np.prod(v, axis=axes, keepdims=bool(n.param("keep_dims")), dtype=v.dtype))
