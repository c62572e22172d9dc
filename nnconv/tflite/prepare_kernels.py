"""The Prepare of TFLite's elementwise, broadcasting and data-movement kernels whose output shapes follow
from input shapes and options alone (`tflite/kernels/*.cc` at LiteRT f67457790c9c): the activations and
unary math, the binary ops and comparisons, SELECT, PACK / UNPACK / SQUEEZE, GATHER_ND and the like; and the
table of ops TFLite's builtin resolver registers. Convolutions, pooling, matrix products and the recurrent
ops are in `prepare_nn.py`; the kernels that read input values in `prepare_values.py`,
`prepare_dynamic.py` and `prepare_misc.py`; control flow in `prepare.py`.

Each function follows its kernel's shape rule and the shape and type checks whose failure a malformed file
meets (TFLite fails AllocateTensors on them); quantization-parameter arithmetic is not followed.

Ops TFLite registers whose Prepare is not modelled (their outputs keep the declared shape):
BIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_RNN, LSTM's basic (4-output) kernel, HASHTABLE_LOOKUP,
HASHTABLE_FIND, HASHTABLE_IMPORT, HASHTABLE_SIZE, EMBEDDING_LOOKUP_SPARSE, LSH_PROJECTION, SKIP_GRAM, the
STABLEHLO_* ops other than the elementwise ones (SCATTER, GATHER, PAD, REDUCE_WINDOW, RNG_BIT_GENERATOR,
COMPOSITE, CASE), REDUCE_WINDOW, and the custom ops Mfcc, TFLite_Detection_PostProcess, NumericVerify and
aeq.hadamard_rotation.
"""

from __future__ import annotations

from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.prepare_node import Allocation, Node, PrepareFailure, kernel, legacy_quant
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

# The builtin ops `BuiltinOpResolver` (tflite/core/kernels/register.cc) registers, with their version range
# when it is not 1..1. A model using another builtin, or a version outside its range, fails to load.
_REGISTERED = """ABS:1-5 HARD_SWISH RELU:1-3 RELU_N1_TO_1 RELU_0_TO_1 RELU6:1-3 TANH:1-3 LOGISTIC:1-3
AVERAGE_POOL_2D:1-3 MAX_POOL_2D:1-3 L2_POOL_2D CONV_2D:1-8 DEPTHWISE_CONV_2D:1-7 SVDF:1-4 RNN:1-3
BIDIRECTIONAL_SEQUENCE_RNN:1-3 UNIDIRECTIONAL_SEQUENCE_RNN:1-3 EMBEDDING_LOOKUP:1-5 EMBEDDING_LOOKUP_SPARSE
FULLY_CONNECTED:1-14 LSH_PROJECTION HASHTABLE_LOOKUP SOFTMAX:1-4 CONCATENATION:1-7 ADD:1-6 SPACE_TO_BATCH_ND:1-4
BATCH_TO_SPACE_ND:1-4 MUL:1-8 L2_NORMALIZATION:1-2 LOCAL_RESPONSE_NORMALIZATION LSTM:1-4
BIDIRECTIONAL_SEQUENCE_LSTM:1-3 UNIDIRECTIONAL_SEQUENCE_LSTM:1-4 PAD:1-6 PADV2:1-6 RESHAPE RESIZE_BILINEAR:1-4
RESIZE_NEAREST_NEIGHBOR:1-4 SKIP_GRAM SPACE_TO_DEPTH:1-2 DEPTH_TO_SPACE:1-2 GATHER:1-8 TRANSPOSE:1-9 MEAN:1-3
DIV:1-2 SUB:1-5 SPLIT:1-5 SPLIT_V:1-3 SQUEEZE:1-2 STRIDED_SLICE:1-8 EXP:1-2 TOPK_V2:1-3 LOG:1-2 LOG_SOFTMAX:1-2
CAST:1-9 DEQUANTIZE:1-9 PRELU MAXIMUM:1-4 MINIMUM:1-4 ARG_MAX:1-3 ARG_MIN:1-3 GREATER:1-2 GREATER_EQUAL:1-3
LESS:1-3 LESS_EQUAL:1-2 FLOOR CEIL ROUND NEG SELECT:1-4 SELECT_V2:1-2 SLICE:1-8 SIN:1-2 COS:1-2
TRANSPOSE_CONV:1-5 TILE:1-3 SUM:1-2 REDUCE_PROD:1-2 REDUCE_MAX:1-3 REDUCE_MIN:1-3 REDUCE_ANY REDUCE_ALL
EXPAND_DIMS SPARSE_TO_DENSE:1-3 EQUAL:1-5 NOT_EQUAL:1-4 SQRT:1-2 RSQRT:1-3 SHAPE RANK POW FAKE_QUANT:1-2
PACK:1-5 ONE_HOT LOGICAL_OR LOGICAL_AND LOGICAL_NOT UNPACK:1-6 FLOOR_DIV:1-3 SQUARE ZEROS_LIKE FLOOR_MOD:1-2
RANGE:1-2 LEAKY_RELU:1-2 SQUARED_DIFFERENCE:1-2 FILL:1-5 MIRROR_PAD:1-3 UNIQUE REVERSE_V2:1-4 ADD_N
GATHER_ND:1-6 WHERE:1-2 ELU REVERSE_SEQUENCE MATRIX_DIAG QUANTIZE:1-6 MATRIX_SET_DIAG IF WHILE
NON_MAX_SUPPRESSION_V4 NON_MAX_SUPPRESSION_V5 SCATTER_ND DENSIFY SEGMENT_SUM BATCH_MATMUL:1-4 CUMSUM
BROADCAST_TO:2-4 CALL_ONCE RFFT2D CONV_3D IMAG REAL COMPLEX_ABS BROADCAST_ARGS HASHTABLE HASHTABLE_FIND
HASHTABLE_IMPORT HASHTABLE_SIZE CONV_3D_TRANSPOSE VAR_HANDLE READ_VARIABLE ASSIGN_VARIABLE MULTINOMIAL
RANDOM_STANDARD_NORMAL BUCKETIZE RANDOM_UNIFORM GELU:1-3 DYNAMIC_UPDATE_SLICE:1-6 UNSORTED_SEGMENT_PROD
UNSORTED_SEGMENT_MAX UNSORTED_SEGMENT_MIN UNSORTED_SEGMENT_SUM ATAN2 SIGN:1-2 BITCAST BITWISE_XOR RIGHT_SHIFT
STABLEHLO_SCATTER DILATE STABLEHLO_RNG_BIT_GENERATOR REDUCE_WINDOW STABLEHLO_REDUCE_WINDOW STABLEHLO_GATHER
STABLEHLO_ADD STABLEHLO_AND STABLEHLO_MULTIPLY STABLEHLO_MAXIMUM STABLEHLO_MINIMUM STABLEHLO_SHIFT_LEFT
STABLEHLO_PAD STABLEHLO_COMPOSITE"""
REGISTERED: dict[int, tuple[int, int]] = {}
for _entry in _REGISTERED.split():
    _name, _, _range = _entry.partition(":")
    _lo, _, _hi = (_range or "1-1").partition("-")
    REGISTERED[int(B[_name])] = (int(_lo), int(_hi))
# Custom ops the builtin resolver also registers (version 1); any other custom op fails at its Prepare
REGISTERED_CUSTOM = frozenset({"NumericVerify", "Mfcc", "AudioSpectrogram", "TFLite_Detection_PostProcess",
                               "aeq.hadamard_rotation"})


def load_failure(model: TfliteModel) -> str | None:
    """What makes InterpreterBuilder refuse the whole model before any Prepare: a variable tensor with data,
    a builtin TFLite does not register (at that version). Codes newer than our schema are left to TFLite."""
    for sg in model.subgraphs:
        for t in sg.tensors:
            if t.is_variable and t.data is not None and t.buffer != 0:
                return f"Tensor {t.index} is a variable tensor with buffer or external buffer. It's not supported now."
            if t.is_variable and t.type in (T.STRING, T.RESOURCE, T.VARIANT):
                return "String variable tensor isn't supported."
    for sg in model.subgraphs:
        for op in sg.operators:
            if op.builtin_code == B.CUSTOM and not op.custom_code:
                return "Operator with CUSTOM builtin_code has no custom_code."
            if op.builtin_code == B.CUSTOM or op.builtin is None:
                continue
            lo_hi = REGISTERED.get(op.builtin_code)
            if lo_hi is None or not lo_hi[0] <= op.version <= lo_hi[1]:
                return (f"Didn't find op for builtin opcode '{op.builtin.name}' version '{op.version}'. An older "
                        "version of this builtin might be supported.")
    return None


def _unary(n: Node, *, type_eq: bool = True, retype: bool = False, out_type: T | None = None,
           min_rank: int = 0, n_in: int = 1) -> tuple[int, int]:
    """An output of the input's shape; `type_eq`: TF_LITE_ENSURE_TYPES_EQ(input, output); `retype`: the
    kernel writes output->type = input->type instead; `out_type`: it writes that type."""
    n.arity(n_in, 1)
    x, out = n.input(0), n.output(0)
    if type_eq:
        n.same_type(x, out)
    n.ensure(n.rank(x) >= min_rank, f"NumDimensions(input) >= {min_rank}")
    if retype or out_type is not None:
        n.set_type(out, out_type if out_type is not None else n.type(x))
    n.resize(out, n.shape(x))
    return x, out


@kernel(B.RELU, B.RELU6, B.RELU_N1_TO_1, B.RELU_0_TO_1, B.TANH, B.LOGISTIC, B.LEAKY_RELU, B.HARD_SWISH, B.ELU,
        B.GELU, B.ABS, B.COS, B.SIN, B.LOG, B.SQRT, B.RSQRT, B.SQUARE, B.LOGICAL_NOT, B.SIGN, B.LOG_SOFTMAX)
def _same_shape(n: Node) -> None:
    _unary(n)


@kernel(B.QUANTIZE, B.CAST, B.REAL, B.IMAG, B.COMPLEX_ABS)
def _same_shape_new_type(n: Node) -> None:
    _unary(n, type_eq=False)  # the output keeps its own (declared) element type


@kernel(B.EXP, B.NEG, B.ROUND, B.FLOOR, B.ZEROS_LIKE, B.FAKE_QUANT)
def _same_shape_retyped(n: Node) -> None:
    _unary(n, type_eq=False, retype=True)


@kernel(B.REVERSE_SEQUENCE)
def _reverse_sequence(n: Node) -> None:
    _unary(n, n_in=2)
    n.ensure_eq(n.rank(n.input(1)), 1, "NumDimensions(seq_lengths)", "1")


@kernel(B.CEIL)
def _ceil(n: Node) -> None:
    n.ensure(n.type(n.input(0)) == T.FLOAT32, "input->type == kTfLiteFloat32")
    _unary(n, type_eq=False, retype=True)


@kernel(B.SOFTMAX)
def _softmax(n: Node) -> None:
    x, out = _unary(n, type_eq=False, min_rank=1)
    scale, zp = legacy_quant(n.tensor(out))
    if n.type(x) == n.type(out) == T.INT8:
        n.ensure_eq(zp, -128, "output->params.zero_point", "-128")
        n.ensure(abs(scale - 1 / 256) <= 0.001 / 256, "output->params.scale near 1/256")
    elif n.type(x) == n.type(out) == T.INT16:
        n.ensure_eq(zp, 0, "output->params.zero_point", "0")
        n.ensure(abs(scale - 1 / 32768) <= 0.001 / 32768, "output->params.scale near 1/32768")


@kernel(B.L2_NORMALIZATION)
def _l2norm(n: Node) -> None:
    _unary(n, min_rank=1)
    n.ensure_eq(n.param("fused_activation_function"), 0, "params->activation", "kTfLiteActNone")


@kernel(B.LOCAL_RESPONSE_NORMALIZATION)
def _lrn(n: Node) -> None:
    x, out = _unary(n, min_rank=4)
    n.ensure_eq(n.rank(x), 4, "NumDimensions(input)", "4")
    n.ensure(n.type(out) == T.FLOAT32, "output->type == kTfLiteFloat32")


@kernel(B.DEQUANTIZE)
def _dequantize(n: Node) -> None:
    x, out = _unary(n, type_eq=False, out_type=T.FLOAT32)
    n.ensure(n.type(x) in (T.INT4, T.UINT8, T.INT8, T.INT16, T.FLOAT16), "is_supported_type")
    if n.mmap(x):
        # a constant's dequantized copy lives outside the arena (computed once at the first Invoke)
        n.state.alloc[out] = Allocation.ARENA_RW_PERSISTENT


@kernel(B.DENSIFY)
def _densify(n: Node) -> None:
    n.arity(1, 1)
    x = n.input(0)
    n.ensure(n.type(x) != T.STRING, "input->type != kTfLiteString")
    n.ensure(n.mmap(x), "IsConstantTensor(input)")
    n.ensure(n.tensor(x).sparsity is not None, "input->sparsity != nullptr")
    _, out = _unary(n, type_eq=False, retype=True)
    n.state.alloc[out] = Allocation.ARENA_RW_PERSISTENT


@kernel(B.BUCKETIZE)
def _bucketize(n: Node) -> None:
    bounds = list(n.param("boundaries") or ())
    if bounds != sorted(bounds):
        raise PrepareFailure("Expected sorted boundaries")
    _unary(n, type_eq=False, out_type=T.INT32)


@kernel(B.CUMSUM)
def _cumsum(n: Node) -> None:
    n.arity(2, 1)
    x, axis, out = n.input(0), n.input(1), n.output(0)
    n.ensure(n.type(x) in (T.INT32, T.FLOAT32, T.INT64), "input->type is int32, float32 or int64")
    n.ensure(n.type(axis) == T.INT32, "axis->type == kTfLiteInt32")
    n.ensure_eq(n.numel(axis), 1, "NumElements(axis)", "1")
    n.ensure(n.rank(x) >= 1, "NumDimensions(input) >= 1")
    n.resize(out, n.shape(x))


@kernel(B.REVERSE_V2)
def _reverse(n: Node) -> None:
    n.arity(2, 1)
    x, axis, out = n.input(0), n.input(1), n.output(0)
    n.ensure_eq(n.rank(axis), 1, "NumDimensions(axis)", "1")
    n.ensure(n.rank(x) <= 8 and n.rank(x) >= n.numel(axis), "NumDimensions(input) >= NumElements(axis)")
    n.ensure(n.type(axis) == T.INT32, "axis->type == kTfLiteInt32")
    n.same_type(out, x)
    n.resize(out, n.shape(x))


@kernel(B.MATRIX_DIAG, B.MATRIX_SET_DIAG)
def _matrix_diag(n: Node) -> None:
    diag = n.op.builtin_code == B.MATRIX_DIAG
    n.arity(1 if diag else 2, 1)
    x, out = n.input(0), n.output(0)
    n.ensure(n.rank(x) >= (1 if diag else 2), "input_dims_size >= 1")
    n.set_type(out, n.type(x))
    n.resize(out, n.shape(x) + (n.shape(x)[-1],) if diag else n.shape(x))


@kernel(B.ADD, B.SUB, B.DIV, B.SQUARED_DIFFERENCE, B.POW, B.FLOOR_DIV, B.FLOOR_MOD, B.MAXIMUM, B.MINIMUM,
        B.BITWISE_XOR, B.RIGHT_SHIFT, B.EQUAL, B.NOT_EQUAL, B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL,
        B.LOGICAL_AND, B.LOGICAL_OR)
def _broadcasting(n: Node) -> None:
    n.arity(2, 1)
    a, b, out = n.input(0), n.input(1), n.output(0)
    n.same_type(a, b)
    code = n.op.builtin_code
    if code in (B.LOGICAL_AND, B.LOGICAL_OR) and n.type(a) != T.BOOL:
        raise PrepareFailure("Logical ops only support bool type.")
    comparison = code in (B.EQUAL, B.NOT_EQUAL, B.LESS, B.LESS_EQUAL, B.GREATER, B.GREATER_EQUAL)
    n.set_type(out, T.BOOL if comparison else n.type(b))
    n.resize(out, n.shape(a) if n.shape(a) == n.shape(b) else n.broadcast(a, b))


@kernel(B.STABLEHLO_ADD, B.STABLEHLO_AND, B.STABLEHLO_MULTIPLY, B.STABLEHLO_MAXIMUM, B.STABLEHLO_MINIMUM,
        B.STABLEHLO_SHIFT_LEFT, B.ATAN2)
def _same_shapes(n: Node) -> None:
    # no broadcasting here: both inputs must have one shape (ATAN2 too, unlike TensorFlow's)
    n.arity(2, 1)
    a, b, out = n.input(0), n.input(1), n.output(0)
    n.same_type(a, b)
    n.ensure_eq(n.shape(a), n.shape(b), "input1 dims", "input2 dims")
    if n.op.builtin_code == B.ATAN2:
        n.same_type(a, out)
    n.resize(out, n.shape(a))


@kernel(B.ADD_N)
def _add_n(n: Node) -> None:
    n.ensure(n.n_in >= 2, "num_inputs >= 2")
    n.arity(None, 1)
    first, out = n.input(0), n.output(0)
    n.set_type(out, n.type(first))
    for k in range(1, n.n_in):
        n.ensure(n.shape(n.input(k)) == n.shape(first), "HaveSameShapes(input1, input)")
        n.same_type(first, n.input(k))
    n.resize(out, n.shape(first))


@kernel(B.PRELU)
def _prelu(n: Node) -> None:
    n.arity(2, 1)
    x, alpha, out = n.input(0), n.input(1), n.output(0)
    n.set_type(out, n.type(x))
    shape = n.broadcast(x, alpha)
    n.resize(out, shape)
    n.ensure(shape == n.shape(x), "HaveSameShapes(input, output)")


@kernel(B.SELECT, B.SELECT_V2)
def _select(n: Node) -> None:
    n.arity(3, 1)
    c, x, y, out = n.input(0), n.input(1), n.input(2), n.output(0)
    n.ensure(n.type(c) == T.BOOL, "input_condition->type == kTfLiteBool")
    n.same_type(x, y)
    n.set_type(out, n.type(x))
    if n.numel(c) == n.numel(x) == n.numel(y) == n.numel(out) == 1:
        return  # select.cc resizes the output to its own dims: a declared [1, 1] stays [1, 1]
    if n.shape(c) == n.shape(x) == n.shape(y):
        n.resize(out, n.shape(x))
    elif n.op.builtin_code == B.SELECT:
        low_rank = n.rank(c) == 0 or (n.rank(c) == 1 and n.rank(x) >= 1 and n.dim(c, 0) == n.dim(x, 0))
        n.ensure(low_rank, "data->has_low_rank_input_condition")
        n.ensure(n.shape(x) == n.shape(y), "HaveSameShapes(input_x, input_y)")
        n.resize(out, n.shape(x))
    else:
        shape = n.broadcast(c, x, y)
        n.ensure(len(shape) <= 8, "output_size->size <= 8")
        n.resize(out, shape)


@kernel(B.BITCAST)
def _bitcast(n: Node) -> None:
    n.arity(1, 1)
    x, out = n.input(0), n.output(0)
    size_in, size_out = _type_size(n.type(x)), _type_size(n.type(out))
    s = n.shape(x)
    if size_in > size_out:
        n.resize(out, s + (size_in // size_out,))
    elif size_in < size_out:
        n.ensure(len(s) > 0 and s[-1] == size_out // size_in, "input->dims->data[dims - 1] == sizeof ratio")
        n.resize(out, s[:-1])
    else:
        n.resize(out, s)


def _type_size(t: T) -> int:
    sizes = {T.FLOAT32: 4, T.INT32: 4, T.UINT32: 4, T.FLOAT16: 2, T.INT16: 2, T.UINT16: 2, T.INT8: 1, T.UINT8: 1,
             T.BOOL: 1, T.INT64: 8, T.UINT64: 8, T.FLOAT64: 8, T.COMPLEX64: 8, T.COMPLEX128: 16}
    if t not in sizes:
        raise PrepareFailure(f"Type {t.name} is unsupported (GetSizeOfType)")
    return sizes[t]


# -- packing and reshaping by options --------------------------------------------------------------
@kernel(B.PACK)
def _pack(n: Node) -> None:
    count = n.param("values_count")
    n.ensure_eq(n.n_in, count, "NumInputs(node)", "data->values_count")
    n.arity(None, 1)
    first, out = n.input(0), n.output(0)
    axis = n.param("axis")
    axis = axis + n.rank(first) + 1 if axis < 0 else axis
    n.ensure(0 <= axis <= n.rank(first), "0 <= data->axis <= NumDimensions(input0)")
    n.ensure(n.type(first) in (T.INT32, T.FLOAT32, T.UINT8, T.UINT32, T.INT8, T.INT16, T.INT64), "pack type")
    for k in range(1, count):
        n.ensure(n.shape(n.input(k)) == n.shape(first), "HaveSameShapes(input0, input)")
        n.same_type(first, n.input(k))
    n.same_type(out, first)
    for k in range(count):
        n.same_quant(n.input(k), out)
    s = n.shape(first)
    n.resize(out, s[:axis] + (count,) + s[axis:])


@kernel(B.UNPACK)
def _unpack(n: Node) -> None:
    num = n.param("num")
    n.arity(1, num)
    x = n.input(0)
    n.ensure(n.numel(x) > 0, "NumElements(input) > 0")
    axis = n.param("axis")
    axis = axis + n.rank(x) if axis < 0 else axis
    n.ensure(0 <= axis < n.rank(x), "0 <= axis < NumDimensions(input)")
    n.ensure(n.type(x) in (T.INT32, T.FLOAT32, T.FLOAT16, T.UINT8, T.INT8, T.INT16, T.BOOL), "unpack type")
    s = n.shape(x)
    n.ensure_eq(num, s[axis], "data->num", "input_shape->data[axis]")
    for k in range(num):
        out = n.output(k)
        n.same_type(out, x)
        n.same_quant(x, out)
        n.resize(out, s[:axis] + s[axis + 1:])


@kernel(B.SQUEEZE)
def _squeeze(n: Node) -> None:
    n.arity(1, 1)
    x, out = n.input(0), n.output(0)
    s = n.shape(x)
    n.ensure(len(s) <= 8, "input_num_dims <= 8")
    dims = list(n.param("squeeze_dims") or ())
    if not dims:
        drop = {i for i, d in enumerate(s) if d == 1}
    else:
        drop = set()
        for d in dims:
            cur = d + len(s) if d < 0 else d
            n.ensure(0 <= cur < len(s) and s[cur] == 1, "squeezed dimension exists and is 1")
            drop.add(cur)
    n.resize(out, tuple(d for i, d in enumerate(s) if i not in drop))


@kernel(B.GATHER_ND)
def _gather_nd(n: Node) -> None:
    n.arity(2, 1)
    p, idx, out = n.input(0), n.input(1), n.output(0)
    n.ensure(n.type(idx) in (T.INT64, T.INT32, T.INT16), "indices type")
    if n.rank(p) < 1:
        raise PrepareFailure("Params must be at least a vector.")
    if n.rank(idx) < 1:
        raise PrepareFailure("Indices must be at least a vector.")
    nd = n.shape(idx)[-1]
    if not 0 <= nd <= n.rank(p):
        raise PrepareFailure("Index innermost dimension length must be in [0, params rank].")
    n.set_type(out, n.type(p))
    n.resize(out, n.shape(idx)[:-1] + n.shape(p)[nd:])


@kernel(B.EMBEDDING_LOOKUP)
def _embedding_lookup(n: Node) -> None:
    n.arity(2, 1)
    ids, table, out = n.input(0), n.input(1), n.output(0)
    n.ensure_eq(n.rank(ids), 1, "NumDimensions(lookup)", "1")
    n.ensure(n.type(ids) == T.INT32, "lookup->type == kTfLiteInt32")
    n.ensure(n.rank(table) >= 2, "NumDimensions(value) >= 2")
    n.resize(out, (n.dim(ids, 0),) + n.shape(table)[1:])


@kernel(B.DYNAMIC_UPDATE_SLICE)
def _dynamic_update_slice(n: Node) -> None:
    operand, update, start, out = n.input(0), n.input(1), n.input(2), n.output(0)
    n.ensure(n.rank(start) == 1 and n.dim(start, 0) == n.rank(operand), "start_indices is [rank(operand)]")
    n.ensure(n.rank(update) == n.rank(operand), "NumDimensions(update) == NumDimensions(operand)")
    n.ensure(all(u <= o for u, o in zip(n.shape(update), n.shape(operand))), "update fits the operand")
    n.arity(3, 1)
    n.same_type(operand, update)
    n.set_type(out, n.type(operand))
    n.resize(out, n.shape(operand))
