"""The Prepare of TFLite's kernels whose output size depends on data, or that have no shape to give
(`tflite/kernels/*.cc` at LiteRT f67457790c9c): SPARSE_TO_DENSE, SCATTER_ND, the segment reductions, TOPK_V2,
WHERE, UNIQUE, NON_MAX_SUPPRESSION_V4/V5, the random ops, TRANSPOSE_CONV, CONV_3D_TRANSPOSE, DILATE,
RFFT2D and the resource ops. Each sizes its output from a constant or persistent input and otherwise marks
it dynamic; surprises are commented where handled: TRANSPOSE_CONV and DILATE accept only a constant of the
file (IsConstantTensor), SEGMENT_SUM needs its data constant too, TOPK_V2 waits for Eval when the input's
signature has a -1, UNIQUE's first output is always dynamic, READ_VARIABLE's output is when declared a
scalar, and VAR_HANDLE / HASHTABLE outputs are resources, dynamic from the start.
"""

from __future__ import annotations

from nnconv.tflite.prepare_nn import out_size
from nnconv.tflite.prepare_node import Node, PrepareFailure, kernel
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

_INDEX_TYPES = (T.INT32, T.INT64)


def _shape_from_value(n: Node, shape_t: int, out: int, what: str) -> None:
    """Resizes `out` to the values of `shape_t`, or marks it dynamic when they are not known at Prepare."""
    dims = n.shape_value(shape_t, out, f"{what} has a negative dimension")
    if dims is not None:
        n.resize(out, dims)


@kernel(B.SPARSE_TO_DENSE)
def _sparse_to_dense(n: Node) -> None:
    n.arity(4, 1)
    idx, shape_t, values, default = n.input(0), n.input(1), n.input(2), n.input(3)
    n.ensure(n.rank(idx) < 3 and n.rank(shape_t) == 1 and n.rank(values) < 2, "ranks")
    n.ensure_eq(n.numel(default), 1, "NumElements(default_value)", "1")
    n.same_type(values, default)
    if n.rank(idx) < 2:
        n.ensure(n.rank(values) == 0 or n.numel(idx) == n.numel(values), "NumElements(indices) == NumElements(values)")
        n.ensure_eq(n.numel(shape_t), 1, "NumElements(output_shape)", "1")
    else:
        n.ensure_eq(n.dim(idx, 1), n.numel(shape_t), "SizeOfDimension(indices, 1)", "NumElements(output_shape)")
        if n.rank(values) != 0:
            n.ensure_eq(n.dim(idx, 0), n.numel(values), "SizeOfDimension(indices, 0)", "NumElements(values)")
    out = n.output(0)
    n.set_type(out, n.type(values))
    _shape_from_value(n, shape_t, out, "output_shape")


@kernel(B.SCATTER_ND)
def _scatter_nd(n: Node) -> None:
    n.arity(3, 1)
    idx, updates, shape_t, out = n.input(0), n.input(1), n.input(2), n.output(0)
    if n.type(idx) != n.type(shape_t):
        raise PrepareFailure("Indices and shape must have the same type.")
    n.set_type(out, n.type(updates))
    if not n.const(shape_t):
        n.set_dynamic(out)
        return
    if n.type(idx) != T.INT32:
        raise PrepareFailure(f"Indices of type '{n.type(idx).name}' are not supported by scatter_nd.")
    si, su, dims = n.shape(idx), n.shape(updates), n.ints(shape_t)
    n.ensure(len(si) >= 1 and len(su) >= 1 and n.rank(shape_t) == 1, "indices, updates and shape ranks")
    outer, ix = len(si) - 1, si[-1]
    n.ensure(si[:outer] == su[:outer], "indices.Dims(i) == updates.Dims(i)")
    n.ensure_eq(len(su) - outer, len(dims) - ix, "updates.DimensionsCount() - outer_dims", "shape_shape.Dims(0) - ix")
    n.ensure(list(su[outer:]) == dims[ix:], "updates.Dims(i + outer_dims) == shape_data[ix + i]")
    n.resize(out, dims)


@kernel(B.SEGMENT_SUM, B.UNSORTED_SEGMENT_PROD, B.UNSORTED_SEGMENT_MAX, B.UNSORTED_SEGMENT_MIN,
        B.UNSORTED_SEGMENT_SUM)
def _segments(n: Node) -> None:
    sorted_ids = n.op.builtin_code == B.SEGMENT_SUM
    n.arity(2 if sorted_ids else 3, 1)
    data, ids, out = n.input(0), n.input(1), n.output(0)
    n.ensure(n.type(data) in (T.INT32, T.FLOAT32), "data->type is int32 or float32")
    n.ensure(n.type(ids) == T.INT32, "segment_ids->type == kTfLiteInt32")
    count = None if sorted_ids else n.input(2)
    if not sorted_ids:
        n.ensure(n.rank(ids) <= n.rank(data), "segment_ids_rank <= data_rank")
        for i in range(n.rank(ids)):
            n.ensure_eq(n.dim(ids, i), n.dim(data, i), "SizeOfDimension(&segment_ids, i)", "SizeOfDimension(&data, i)")
    # SEGMENT_SUM needs its data constant too (the output size is the largest id + 1)
    known = n.const(ids) and (n.const(data) if sorted_ids else (not n.dynamic(data) and n.const(count)))
    if not known:
        n.set_dynamic(out)
        return
    id_values = n.ints(ids)
    rank = n.rank(ids)
    if sorted_ids:
        n.ensure(id_values == sorted(id_values) and all(v >= 0 for v in id_values), "segment ids sorted, >= 0")
        first = (max(id_values) if id_values else -1) + 1
    else:
        first = n.ints(count or 0)[0]
        n.ensure(first >= 0 and (max(id_values) if id_values else -1) < first, "segment ids < num_segments")
    n.resize(out, (first,) + n.shape(data)[rank if not sorted_ids else 1:])


@kernel(B.TOPK_V2)
def _topk(n: Node) -> None:
    n.arity(2, 2)
    x, k_t, values, indexes = n.input(0), n.input(1), n.output(0), n.output(1)
    n.same_type(x, values)
    n.ensure(n.type(k_t) in (T.INT32, T.INT16), "top_k->type is int32 or int16")
    if not n.const(k_t) or n.unspecified(x):
        # a -1 in the input's signature is enough: TFLite waits for Eval even with a constant k
        n.set_dynamic(values)
        n.set_dynamic(indexes)
        return
    n.ensure_eq(n.numel(k_t), 1, "NumElements(top_k)", "1")
    if n.rank(x) < 1:
        raise PrepareFailure("TopK k input must have 1 or more dimensions.")
    k = n.ints(k_t)[0]
    if k > 0 and k > n.shape(x)[-1]:
        raise PrepareFailure("TopK k is higher than the internal dimension.")
    shape = n.shape(x)[:-1] + (max(0, k),)
    n.resize(indexes, shape)
    n.resize(values, shape)


@kernel(B.WHERE)
def _where(n: Node) -> None:
    n.arity(1, 1)
    cond, out = n.input(0), n.output(0)
    n.set_type(out, T.INT64)
    if not n.const(cond):
        n.set_dynamic(out)
        return
    n.resize(out, (int((n.value(cond) != 0).sum()), n.rank(cond)))


@kernel(B.UNIQUE)
def _unique(n: Node) -> None:
    n.arity(1, 2)
    x, unique, index = n.input(0), n.output(0), n.output(1)
    kind = n.param("idx_out_type") if n.options is not None else 0
    if kind not in _INDEX_TYPES:
        raise PrepareFailure("Unique index output array can only be Int32 or Int64")
    n.same_type(unique, x)
    n.ensure(n.type(index) == kind, "output_index_tensor->type == params->index_out_type")
    n.ensure_eq(n.rank(x), 1, "NumDimensions(input)", "1")
    n.set_dynamic(unique)  # always: how many values are unique is known only at Eval
    n.resize(index, n.shape(x))


@kernel(B.NON_MAX_SUPPRESSION_V4, B.NON_MAX_SUPPRESSION_V5)
def _nms(n: Node) -> None:
    soft = n.n_in == 6  # one kernel serves both: the input count decides
    if n.n_in not in (5, 6):
        raise PrepareFailure(f"Found NMS op with invalid num inputs: {n.n_in}")
    boxes, scores, max_t = n.input(0), n.input(1), n.input(2)
    n.ensure(n.type(boxes) == T.FLOAT32 and n.rank(boxes) == 2 and n.dim(boxes, 1) == 4, "boxes are float [n, 4]")
    n.ensure(n.type(scores) == T.FLOAT32 and n.shape(scores) == (n.dim(boxes, 0),), "scores are float [n]")
    n.ensure(n.type(max_t) == T.INT32 and n.rank(max_t) == 0, "max_output_size is an int32 scalar")
    limit = n.ints(max_t)[0] if n.const(max_t) else None
    n.ensure(limit is None or limit >= 0, "max_output_size_value >= 0")
    for k in range(3, n.n_in):
        n.ensure(n.type(n.input(k)) == T.FLOAT32 and n.rank(n.input(k)) == 0, "thresholds are float scalars")
    n.arity(None, 3 if soft else 2)
    sized = [n.output(0), n.output(1)] if soft else [n.output(0)]
    count = n.output(2 if soft else 1)
    for t in sized + [count]:
        n.set_type(t, T.INT32)
    if soft:
        n.set_type(n.output(1), T.FLOAT32)
    n.resize(count, ())
    for t in sized:
        if limit is None:
            n.set_dynamic(t)
        else:
            n.resize(t, (limit,))


@kernel(B.RANDOM_UNIFORM, B.RANDOM_STANDARD_NORMAL)
def _random(n: Node) -> None:
    n.arity(1, 1)
    shape_t = n.input(0)
    n.ensure(n.type(shape_t) == T.INT32 and n.rank(shape_t) == 1, "shape is an int32 vector")
    _shape_from_value(n, shape_t, n.output(0), "shape")


@kernel(B.MULTINOMIAL)
def _multinomial(n: Node) -> None:
    n.arity(2, 1)
    logits, samples, out = n.input(0), n.input(1), n.output(0)
    n.ensure(n.type(logits) == T.FLOAT32 and n.type(samples) == T.INT32, "logits float32, num_samples int32")
    if not (n.const(logits) and n.const(samples)):
        n.set_dynamic(out)
        return
    n.resize(out, (n.dim(logits, 0), n.ints(samples)[0]))


@kernel(B.TRANSPOSE_CONV)
def _transpose_conv(n: Node) -> None:
    n.ensure(n.n_in in (3, 4), "has_bias || NumInputs(node) == 3")
    n.arity(None, 1)
    shape_t, w, x, out = n.input(0), n.input(1), n.input(2), n.output(0)
    n.ensure(n.rank(shape_t) == 1 and n.rank(x) == 4 and n.rank(w) == 4, "ranks")
    n.ensure(0 < n.param("stride_h") <= 32767 and 0 < n.param("stride_w") <= 32767, "strides in [1, INT16_MAX]")
    n.ensure(min(n.shape(x)[1:] + n.shape(w)[:3]) > 0, "dims > 0")
    xt, wt = n.type(x), n.type(w)
    n.ensure(xt in (T.FLOAT32, T.UINT8, T.INT8, T.INT16), "input type")
    n.ensure(wt in ((T.FLOAT32, T.INT8) if xt == T.FLOAT32 else (wt,) if xt == T.INT16 else (xt,)), "weights type")
    bias = n.opt_input(3) if n.n_in == 4 else None
    if bias is not None:
        n.ensure_eq(n.numel(bias), n.dim(w, 0), "NumElements(bias)", "SizeOfDimension(weights, 0)")
    if xt == T.INT16:
        n.ensure(wt == T.INT8, "weights->type == kTfLiteInt8")
    n.same_type(out, x)
    n.ensure_eq(n.dim(x, 3), n.dim(w, 3), "SizeOfDimension(input, 3)", "SizeOfDimension(weights, 3)")
    # only a constant of the file sizes the output: a computed output_shape (SHAPE -> ...) waits for Eval
    if not n.mmap(shape_t):
        n.set_dynamic(out)
        return
    if n.type(shape_t) != T.INT32:
        raise PrepareFailure(f"Output shape is {n.type(shape_t).name}, not int32.")
    n.resize(out, n.ints(shape_t))


@kernel(B.CONV_3D_TRANSPOSE)
def _conv3d_transpose(n: Node) -> None:
    n.ensure(n.n_in in (3, 4), "node->inputs->size == 3 || 4")
    n.arity(None, 1)
    shape_t, f, x, out = n.input(0), n.input(1), n.input(2), n.output(0)
    n.ensure(n.rank(shape_t) == 1 and n.numel(shape_t) == 5 and n.rank(x) == 5 and n.rank(f) == 5, "ranks")
    n.ensure_eq(n.dim(x, 4), n.dim(f, 4), "SizeOfDimension(input, 4)", "SizeOfDimension(filter, 4)")
    n.ensure(n.type(x) == n.type(f) == T.FLOAT32 and n.type(shape_t) == T.INT32, "types")
    n.same_type(out, x)
    dims = n.shape_value(shape_t, out, "Conv3DTranspose output shape has a negative dimension.")
    if dims is None:
        return
    n.ensure_eq(dims[0], n.dim(x, 0), "shape_data[0]", "SizeOfDimension(input, 0)")
    n.ensure_eq(dims[4], n.dim(f, 3), "shape_data[4]", "filter_output_channels")
    # the requested output must convolve back to the input's spatial size
    pad = n.options.padding if n.options is not None else None
    for i, (stride, dil) in enumerate((("stride_d", "dilation_d_factor"), ("stride_h", "dilation_h_factor"),
                                       ("stride_w", "dilation_w_factor"))):
        try:
            back = out_size(pad, dims[1 + i], n.dim(f, i), n.param(stride), n.param(dil))
        except PrepareFailure:
            back = 0
        n.ensure_eq(back, n.dim(x, 1 + i), "unused_out_size", f"SizeOfDimension(input, {1 + i})")
    n.resize(out, dims)


@kernel(B.DILATE)
def _dilate(n: Node) -> None:
    n.arity(3, 1)
    x, dil, pad, out = n.input(0), n.input(1), n.input(2), n.output(0)
    n.ensure(n.rank(x) > 0, "input dims size > 0")
    n.same_type(x, out)
    n.same_type(x, pad)
    if not n.mmap(dil):  # IsConstantTensor: a persistent value does not do
        n.set_dynamic(out)
        return
    f = n.ints(dil)
    n.resize(out, [(d - 1) * f[i] + 1 for i, d in enumerate(n.shape(x))])


@kernel(B.RFFT2D)
def _rfft2d(n: Node) -> None:
    n.arity(2, 1)
    x, length, out = n.input(0), n.input(1), n.output(0)
    n.ensure(n.rank(x) >= 2, "NumDimensions(input) >= 2")
    if n.type(x) != T.FLOAT32:
        raise PrepareFailure(f"Type '{n.type(x).name}' for input is not supported by rfft2d.")
    n.ensure(n.rank(length) == 1 and n.dim(length, 0) == 2, "fft_length is [2]")
    if n.type(length) != T.INT32:
        raise PrepareFailure(f"Type '{n.type(length).name}' for fft_length is not supported by rfft2d.")
    n.set_type(out, T.COMPLEX64)
    if not n.const(length):
        n.set_dynamic(out)
        return
    h, w = n.ints(length)
    n.ensure(h > 0 and h & (h - 1) == 0 and w > 0 and w & (w - 1) == 0, "IsPowerOfTwo(fft_length)")
    n.resize(out, n.shape(x)[:-2] + (h, w // 2 + 1))


@kernel(B.READ_VARIABLE)
def _read_variable(n: Node) -> None:
    n.arity(1, 1)
    out = n.output(0)
    if n.rank(out) == 0:
        n.set_dynamic(out)  # a scalar declaration is taken as "unknown": sized from the variable at Eval


@kernel(B.VAR_HANDLE, B.HASHTABLE, B.ASSIGN_VARIABLE)
def _resources(n: Node) -> None:
    # their outputs are resource tensors, dynamic from the start (ASSIGN_VARIABLE has none): the graph
    # stops preparing at the first VAR_HANDLE / HASHTABLE
    return None
