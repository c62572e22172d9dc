"""The Prepare of TFLite's kernels that size their output from an input's value and otherwise mark it
dynamic (`tflite/kernels/*.cc` at LiteRT f67457790c9c): SLICE, PAD / PADV2, MIRROR_PAD, FILL, BROADCAST_TO,
TRANSPOSE, RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR, SPLIT / SPLIT_V, EXPAND_DIMS, SPACE_TO_BATCH_ND /
BATCH_TO_SPACE_ND, ARG_MAX / ARG_MIN and ONE_HOT. The input they read (paddings, a shape, a permutation, an
axis, a size, ...) must be constant or persistent (IsConstantOrPersistentTensor) for the output to be sized
at Prepare; else SetTensorToDynamic, and TFLite stops preparing at that node. The kernels that also compute
their output at Prepare are in `prepare_values.py`; the data-dependent ones in `prepare_misc.py`.
"""

from __future__ import annotations

from nnconv.tflite.prepare_node import Node, PrepareFailure, kernel
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

_INDEX_TYPES = (T.INT32, T.INT64)


@kernel(B.SLICE)
def _slice(n: Node) -> None:
    n.arity(3, 1)
    x, begin, size, out = n.input(0), n.input(1), n.input(2), n.output(0)
    n.same_type(x, out)
    n.ensure(n.type(begin) in _INDEX_TYPES and n.type(size) in _INDEX_TYPES, "begin/size are int32 or int64")
    n.ensure(n.rank(begin) == 1 and n.rank(size) == 1, "begin and size are vectors")
    n.ensure_eq(n.numel(begin), n.numel(size), "NumElements(begin)", "NumElements(size)")
    # slice.cc trusts an output whose signature has no -1 (a tensor without shape_signature counts as fully
    # specified) and keeps its declared shape; the 2.3.0 runtime also checks it against the computed one
    # when it can compute it (the mirror's slice.cc does not)
    trusted = not n.unspecified(out) and n.rank(out) > 0
    if not (n.const(begin) and n.const(size)) or n.unspecified(x):
        if not trusted:
            n.set_dynamic(out)  # a -1 in the input's signature makes it dynamic even with constant bounds
        return
    b, s = n.ints(begin), n.ints(size)
    dims = []
    for i, d in enumerate(n.shape(x)):
        if i >= len(b):
            raise PrepareFailure("begin/size have fewer entries than the input has dimensions")
        if s[i] < 0:
            if s[i] != -1:
                raise PrepareFailure("Invalid size.")
            dims.append(d - b[i])
        else:
            if d < b[i] + s[i]:
                raise PrepareFailure("Invalid begin and size.")
            dims.append(s[i])
    if trusted:
        n.ensure_eq(len(dims), n.rank(out), "static_cast<int>(output_shape_vector.size())", "NumDimensions(output)")
        for i, d in enumerate(dims):
            n.ensure_eq(d, n.shape(out)[i], "output_shape_vector[idx]", "SizeOfDimension(output, idx)")
        return
    n.resize(out, dims)


@kernel(B.PAD, B.PADV2)
def _pad(n: Node) -> None:
    n.ensure(n.n_in in (2, 3), "num_inputs == 2 || num_inputs == 3")
    n.arity(None, 1)
    x, pads, out = n.input(0), n.input(1), n.output(0)
    value = n.opt_input(2) if n.n_in == 3 else None
    if n.type(pads) not in (T.INT64, T.INT32, T.INT8, T.INT16, T.BOOL):
        raise PrepareFailure(f"Padding type {n.type(pads).name} is currently not supported by Pad.")
    n.ensure(n.rank(pads) == 2 and n.dim(pads, 1) == 2, "paddings is a [n, 2] matrix")
    if n.rank(x) != 0 and not n.const(pads):
        n.ensure_eq(n.dim(pads, 0), n.rank(x), "SizeOfDimension(paddings, 0)", "op_context.dims")
    n.same_type(x, out)
    if value is not None:
        n.same_type(x, value)
        n.ensure_eq(n.numel(value), 1, "constant_values_count", "1")
    n.ensure(n.rank(x) <= 5, "op_context.dims <= PadKernelMaxDimensionCount()")
    if n.rank(x) == 0 or not n.const(pads):
        n.set_dynamic(out)  # a scalar input goes dynamic too ("an unranked input" to pad.cc)
        return
    n.ensure_eq(n.dim(pads, 0), n.rank(x), "SizeOfDimension(paddings, 0)", "op_context.dims")
    p = n.ints(pads)
    if any(v < 0 for v in p):
        raise PrepareFailure("Pad value has to be greater than equal to 0.")
    n.resize(out, [d + p[2 * i] + p[2 * i + 1] for i, d in enumerate(n.shape(x))])


@kernel(B.MIRROR_PAD)
def _mirror_pad(n: Node) -> None:
    x, pads, out = n.input(0), n.input(1), n.output(0)
    n.same_type(x, out)
    mode = n.param("mode") if n.options is not None else -1
    n.ensure(mode in (0, 1), "params->mode is REFLECT or SYMMETRIC")
    n.ensure(n.type(pads) in _INDEX_TYPES, "padding_matrix->type is int32 or int64")
    n.ensure(n.rank(pads) == 2 and n.dim(pads, 0) == n.rank(x) and n.dim(pads, 1) == 2, "paddings is [rank, 2]")
    if n.type(x) in (T.UINT8, T.INT8, T.INT16):
        n.same_quant(x, out)
    if not n.const(pads):
        n.set_dynamic(out)
        return
    offset = 1 if mode == 0 else 0
    p = n.ints(pads)
    dims = []
    for i, d in enumerate(n.shape(x)):
        left, right = p[2 * i], p[2 * i + 1]
        if left < 0 or right < 0:
            raise PrepareFailure("MirrorPad paddings must be non-negative.")
        if left > d - offset or right > d - offset:
            raise PrepareFailure("MirrorPad paddings must be no greater than the input dimension size minus "
                                 "the mode offset.")
        dims.append(d + left + right)
    n.resize(out, dims)


@kernel(B.FILL)
def _fill(n: Node) -> None:
    n.arity(2, 1)
    dims, value, out = n.input(0), n.input(1), n.output(0)
    n.ensure_eq(n.rank(dims), 1, "NumDimensions(dims)", "1")
    n.ensure(n.type(dims) in _INDEX_TYPES, "dtype == kTfLiteInt32 || dtype == kTfLiteInt64")
    n.ensure_eq(n.rank(value), 0, "NumDimensions(value)", "0")
    n.set_type(out, n.type(value))
    n.same_quant(value, out)
    shape = n.shape_value(dims, out, "Fill dimensions must be >= 0")
    if shape is not None:
        n.resize(out, shape)


@kernel(B.BROADCAST_TO)
def _broadcast_to(n: Node) -> None:
    n.arity(2, 1)
    x, shape_t, out = n.input(0), n.input(1), n.output(0)
    n.ensure(n.type(shape_t) in _INDEX_TYPES, "shape->type is int32 or int64")
    n.same_type(x, out)
    n.ensure(n.type(x) != T.STRING, "input->type != kTfLiteString")
    if not n.const(shape_t):
        n.set_dynamic(out)
        return
    n.ensure_eq(n.rank(shape_t), 1, "NumDimensions(shape)", "1")
    target = n.ints(shape_t)
    s = n.shape(x)
    if len(s) > len(target) or any(d != 1 and d != target[len(target) - len(s) + i] for i, d in enumerate(s)):
        raise PrepareFailure("Output shape must be broadcastable from input shape.")
    n.resize(out, target)


@kernel(B.TRANSPOSE)
def _transpose(n: Node) -> None:
    n.arity(2, 1)
    x, perm, out = n.input(0), n.input(1), n.output(0)
    if n.rank(x) > 8:
        raise PrepareFailure("Transpose op only supports 1D-8D input arrays.")
    n.same_type(x, out)
    if not n.const(perm):
        n.set_dynamic(out)
        return
    rank = n.rank(x)
    n.ensure(n.rank(perm) == 1 and n.dim(perm, 0) == rank, "perm is [NumDimensions(input)]")
    p = n.ints(perm)
    if any(not -rank <= v < rank for v in p):
        raise PrepareFailure("Transpose op permutations array is out of bounds.")
    n.resize(out, [n.shape(x)[v + rank if v < 0 else v] for v in p])


@kernel(B.RESIZE_BILINEAR, B.RESIZE_NEAREST_NEIGHBOR)
def _resize(n: Node) -> None:
    n.arity(2, 1)
    x, size, out = n.input(0), n.input(1), n.output(0)
    n.ensure_eq(n.rank(x), 4, "NumDimensions(input)", "4")
    n.ensure(n.rank(size) == 1 and n.dim(size, 0) == 2 and n.type(size) == T.INT32, "size is an int32 [2]")
    n.set_type(out, n.type(x))
    if not n.const(size):
        n.set_dynamic(out)
        return
    h, w = n.ints(size)
    if n.op.builtin_code == B.RESIZE_BILINEAR:
        if n.param("half_pixel_centers") and n.param("align_corners"):
            raise PrepareFailure("If half_pixel_centers is True, align_corners must be False.")
        n.ensure(h > 0 and w > 0, "size_data > 0")
    n.resize(out, (n.dim(x, 0), h, w, n.dim(x, 3)))


def _split_outputs(n: Node, x: int, axis: int, sizes: list[int]) -> None:
    for k, size in enumerate(sizes):
        s = list(n.shape(x))
        s[axis] = size
        n.resize(n.output(k), s)


def _split_axis(n: Node, x: int, axis_t: int) -> int:
    axis = n.ints(axis_t)[0]
    axis = axis + n.rank(x) if axis < 0 else axis
    n.ensure(0 <= axis < n.rank(x), "0 <= axis_value < NumDimensions(input)")
    return axis


@kernel(B.SPLIT)
def _split(n: Node) -> None:
    n.arity(2, None)
    axis_t, x = n.input(0), n.input(1)
    num = n.param("num_splits")
    n.ensure_eq(n.n_out, num, "NumOutputs(node)", "num_splits")
    n.ensure(n.type(x) in (T.FLOAT32, T.UINT8, T.INT8, T.INT16, T.INT32, T.INT64), "is_supported_type")
    for out in n.outputs():
        n.set_type(out, n.type(x))
    if not n.const(axis_t):
        for out in n.outputs():
            n.set_dynamic(out)
        return
    axis = _split_axis(n, x, axis_t)
    n.ensure(num != 0, "num_splits != 0")
    if n.shape(x)[axis] % num:
        raise PrepareFailure("Not an even split")
    _split_outputs(n, x, axis, [n.shape(x)[axis] // num] * num)


@kernel(B.SPLIT_V)
def _split_v(n: Node) -> None:
    n.arity(3, None)
    x, sizes_t, axis_t = n.input(0), n.input(1), n.input(2)
    n.ensure_eq(n.n_out, n.param("num_splits"), "NumOutputs(node)", "num_splits")
    n.ensure(n.type(x) in (T.FLOAT32, T.UINT8, T.INT16, T.INT32, T.INT64, T.INT8), "is_supported_type")
    for out in n.outputs():
        n.set_type(out, n.type(x))
    n.ensure_eq(n.rank(sizes_t), 1, "NumDimensions(size_splits)", "1")
    n.ensure_eq(n.n_out, n.numel(sizes_t), "NumOutputs(node)", "NumElements(size_splits)")
    if not (n.const(sizes_t) and n.const(axis_t)):
        for out in n.outputs():
            n.set_dynamic(out)
        return
    if n.type(sizes_t) not in _INDEX_TYPES:
        raise PrepareFailure("size_splits only support type int32|int64.")
    sizes = n.ints(sizes_t)
    if sizes.count(-1) > 1:
        raise PrepareFailure("The size_splits contains more than one -1.")
    axis = _split_axis(n, x, axis_t)
    total, known = n.shape(x)[axis], sum(v for v in sizes if v != -1)
    if -1 in sizes:
        if known > total:
            raise PrepareFailure("The sum of size_splits must be less than the dimension of value.")
        sizes[sizes.index(-1)] = total - known
    elif known != total:
        raise PrepareFailure("The size_splits must sum to the dimension of value along axis.")
    _split_outputs(n, x, axis, sizes)


@kernel(B.EXPAND_DIMS)
def _expand_dims(n: Node) -> None:
    n.arity(2, 1)
    x, axis_t, out = n.input(0), n.input(1), n.output(0)
    n.set_type(out, n.type(x))
    n.same_quant(x, out)
    if not n.const(axis_t):
        n.set_dynamic(out)
        return
    n.ensure_eq(n.numel(axis_t), 1, "NumElements(&axis)", "1")
    n.ensure(n.type(axis_t) in _INDEX_TYPES, "axis type is int32 or int64")
    axis, s = n.ints(axis_t)[0], n.shape(n.input(0))
    axis = len(s) + 1 + axis if axis < 0 else axis
    n.ensure(0 <= axis <= len(s), "axis <= input_dims.size")
    n.resize(out, s[:axis] + (1,) + s[axis:])


@kernel(B.SPACE_TO_BATCH_ND, B.BATCH_TO_SPACE_ND)
def _space_batch(n: Node) -> None:
    n.arity(3, 1)
    x, block_t, pads_t, out = n.input(0), n.input(1), n.input(2), n.output(0)
    n.ensure(3 <= n.rank(x) <= 4, "3 <= NumDimensions(input) <= 4")
    n.same_type(x, out)
    if n.type(x) in (T.UINT8, T.INT8, T.INT16):
        n.same_quant(x, out)
    if not (n.const(block_t) and n.const(pads_t)):
        n.set_dynamic(out)
        return
    s = n.shape(x)
    m = len(s) - 2
    n.ensure(n.rank(block_t) == 1 and n.dim(block_t, 0) == m, "block_shape is [spatial_dims_num]")
    n.ensure(n.rank(pads_t) == 2 and n.shape(pads_t) == (m, 2), "paddings/crops are [spatial_dims_num, 2]")
    block, pads = n.ints(block_t), n.ints(pads_t)
    batch = s[0]
    spatial = []
    if n.op.builtin_code == B.SPACE_TO_BATCH_ND:
        for i in range(m):
            padded = s[1 + i] + pads[2 * i] + pads[2 * i + 1]
            n.ensure(block[i] != 0, "block_shape[dim] != 0")
            n.ensure_eq(padded % block[i], 0, "final_dim_size % block_shape[dim]", "0")
            spatial.append(padded // block[i])
            batch *= block[i]
    else:
        n.ensure(all(c >= 0 for c in pads), "crops[i] >= 0")
        for i in range(m):
            n.ensure(block[i] != 0, "block_shape[dim] != 0")
            n.ensure_eq(batch % block[i], 0, "output_batch_size % block_shape[dim]", "0")
            batch //= block[i]
            spatial.append(s[1 + i] * block[i] - pads[2 * i] - pads[2 * i + 1])
    n.resize(out, (batch, *spatial, s[-1]))


@kernel(B.ARG_MAX, B.ARG_MIN)
def _arg_min_max(n: Node) -> None:
    n.arity(2, 1)
    x, axis_t, out = n.input(0), n.input(1), n.output(0)
    n.ensure_eq(n.numel(axis_t), 1, "NumElements(axis)", "1")
    n.ensure(n.type(axis_t) in _INDEX_TYPES, "axis->type is int32 or int64")
    kind = n.param("output_type")
    if kind not in _INDEX_TYPES:
        raise PrepareFailure(f"Unknown index output data type: {kind}")
    n.set_type(out, T(kind))
    if n.type(x) not in (T.FLOAT32, T.UINT8, T.INT8, T.INT32, T.BOOL):
        raise PrepareFailure("Unknown input type, only float32, int types and bool are supported")
    n.ensure(n.rank(x) >= 1, "NumDimensions(input) >= 1")
    if not n.const(axis_t):
        n.set_dynamic(out)
        return
    axis = n.ints(axis_t)[0]
    axis = axis + n.rank(x) if axis < 0 else axis
    if not 0 <= axis < n.rank(x):
        raise PrepareFailure("Invalid axis value.")
    if n.shape(x)[axis] <= 0:
        raise PrepareFailure("Cannot compute ArgMin/ArgMax over an empty axis.")
    n.resize(out, n.shape(x)[:axis] + n.shape(x)[axis + 1:])


@kernel(B.ONE_HOT)
def _one_hot(n: Node) -> None:
    n.arity(4, 1)
    idx, depth, on, off, out = n.input(0), n.input(1), n.input(2), n.input(3), n.output(0)
    dtype = n.type(on)
    if dtype not in (T.FLOAT32, T.INT16, T.INT32, T.INT64, T.INT8, T.UINT8, T.BOOL):
        raise PrepareFailure(f"Unknown output data type: {dtype.name}")
    n.set_type(out, dtype)
    n.ensure(n.type(idx) in _INDEX_TYPES, "indices->type is int32 or int64")
    axis = n.param("axis")
    axis = n.rank(idx) if axis == -1 else axis
    n.ensure(0 <= axis <= n.rank(idx), "axis >= 0 && axis < output_dims")
    for t, what in ((depth, "depth"), (on, "on_value"), (off, "off_value")):
        n.ensure_eq(n.numel(t), 1, f"NumElements({what})", "1")
    n.same_type(off, on)
    if not n.const(depth):
        n.set_dynamic(out)
        return
    d = n.ints(depth)[0]
    n.ensure(d >= 0, "*op_context.depth->data.i32 >= 0")
    s = n.shape(idx)
    n.resize(out, s[:axis] + (d,) + s[axis:])
