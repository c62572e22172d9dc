"""Constant folding before lowering: operators whose inputs are all constant are evaluated at conversion
time and their outputs become constants (`ConversionState.folded`).

Each foldable TFLite op has a small numpy evaluator in `FOLDERS`, registered with `@folder(...)` and
following TFLite's semantics. SHAPE (and RANK) need only a static input shape, not constant data: this is
what lets TensorFlow's dynamic-shape idioms (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE around a squeeze-
excite block) collapse into constants so the whole block lowers in one NNAPI partition.

What is never folded, and why:
- an op any of whose outputs is an output of its subgraph: the converter requires outputs to be computed;
- arithmetic on quantized tensors (it would need the quantized kernels' exact rounding) and data movement
  between tensors with different quantization parameters (SHAPE and RANK of a quantized tensor do fold:
  they read no values);
- results that would grow the model: a result bigger than 64 KiB and bigger than its constant inputs
  together (a FILL or TILE of a large float tensor stays a runtime op);
- a result whose shape differs from the tensor's declared static shape (the model is then inconsistent;
  leaving it to the rules gives a clear diagnostic instead of a wrong constant).
Any evaluator error leaves the op unfolded: folding is an optimization, never a source of failures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from nnconv.rewrite.state import ConversionState
from nnconv.tflite.ir import Operator, Subgraph, Tensor
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

MAX_GROWTH_BYTES = 64 * 1024


@dataclass
class FoldCall:
    """What an evaluator sees: the op, its input values (None for omitted inputs or, for SHAPE/RANK, a
    non-constant input), the input and output tensors."""

    op: Operator
    values: list[np.ndarray | None]
    inputs: list[Tensor | None]
    outputs: list[Tensor]

    @property
    def options(self) -> Any:
        return self.op.options

    def value(self, i: int) -> np.ndarray:
        v = self.values[i]
        if v is None:
            raise ValueError(f"input {i} has no value")
        return v

    def ints(self, i: int) -> list[int]:
        return [int(v) for v in self.value(i).reshape(-1)]


Evaluator = Callable[[FoldCall], list[np.ndarray]]
FOLDERS: dict[int, Evaluator] = {}
# Ops that only need their input's static shape, not its data.
SHAPE_ONLY = frozenset({int(B.SHAPE), int(B.RANK)})
# Pure data movement: quantized values are copied, so folding is exact when parameters match.
_DATA_MOVEMENT = frozenset(int(o) for o in (
    B.RESHAPE, B.SQUEEZE, B.EXPAND_DIMS, B.CONCATENATION, B.PACK, B.UNPACK, B.GATHER, B.GATHER_ND,
    B.STRIDED_SLICE, B.SLICE, B.TRANSPOSE, B.TILE, B.SPLIT, B.SPLIT_V, B.BROADCAST_TO))


def folder(*ops: B) -> Callable[[Evaluator], Evaluator]:
    """Registers an evaluator for one or more TFLite builtin ops."""
    def register(fn: Evaluator) -> Evaluator:
        for o in ops:
            FOLDERS[int(o)] = fn
        return fn
    return register


# -- evaluators -------------------------------------------------------------------------------------
@folder(B.SHAPE)
def _shape(c: FoldCall) -> list[np.ndarray]:
    x = c.inputs[0]
    if x is None or x.has_dynamic_shape:
        raise ValueError("dynamic shape")
    return [np.asarray(x.shape, dtype=np.int64)]


@folder(B.RANK)
def _rank(c: FoldCall) -> list[np.ndarray]:
    x = c.inputs[0]
    if x is None or (x.shape_signature is not None and len(x.shape_signature) != len(x.shape)):
        raise ValueError("unknown rank")
    return [np.asarray(x.rank, dtype=np.int32)]


@folder(B.RESHAPE)
def _reshape(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    if len(c.values) > 1 and c.values[1] is not None:
        shape = c.ints(1)
    elif c.options is not None and c.options.new_shape is not None:
        shape = list(c.options.new_shape)
    else:
        shape = list(c.outputs[0].shape)
    return [x.reshape(shape)]


@folder(B.SQUEEZE)
def _squeeze(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    dims = tuple(c.options.squeeze_dims or ()) if c.options is not None else ()
    return [np.squeeze(x, axis=dims) if dims else np.squeeze(x)]


@folder(B.EXPAND_DIMS)
def _expand_dims(c: FoldCall) -> list[np.ndarray]:
    return [np.expand_dims(c.value(0), c.ints(1)[0])]


@folder(B.CONCATENATION)
def _concat(c: FoldCall) -> list[np.ndarray]:
    if c.options is not None and c.options.fused_activation_function != 0:
        raise ValueError("fused activation")
    return [np.concatenate([c.value(i) for i in range(len(c.values))], axis=c.options.axis)]


@folder(B.PACK)
def _pack(c: FoldCall) -> list[np.ndarray]:
    return [np.stack([c.value(i) for i in range(len(c.values))], axis=c.options.axis)]


@folder(B.UNPACK)
def _unpack(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    axis = c.options.axis % x.ndim
    return [np.take(x, k, axis=axis) for k in range(x.shape[axis])]


@folder(B.GATHER)
def _gather(c: FoldCall) -> list[np.ndarray]:
    if c.options is not None and c.options.batch_dims != 0:
        raise ValueError("batch_dims")
    x, idx = c.value(0), c.value(1).astype(np.int64)
    axis = c.options.axis if c.options is not None else 0
    if idx.size and (idx.min() < 0 or idx.max() >= x.shape[axis]):
        raise ValueError("index out of range")
    return [np.take(x, idx, axis=axis)]


@folder(B.GATHER_ND)
def _gather_nd(c: FoldCall) -> list[np.ndarray]:
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


@folder(B.STRIDED_SLICE)
def _strided_slice(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    idx = strided_slice_index(x.shape, c.ints(1), c.ints(2), c.ints(3), c.options)
    return [np.asarray(x[idx])]


@folder(B.SLICE)
def _slice(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    index = tuple(slice(b, None if s == -1 else b + s) for b, s in zip(c.ints(1), c.ints(2)))
    return [x[index]]


@folder(B.TRANSPOSE)
def _transpose(c: FoldCall) -> list[np.ndarray]:
    return [np.transpose(c.value(0), c.ints(1))]


@folder(B.TILE)
def _tile(c: FoldCall) -> list[np.ndarray]:
    return [np.tile(c.value(0), c.ints(1))]


@folder(B.BROADCAST_TO)
def _broadcast_to(c: FoldCall) -> list[np.ndarray]:
    return [np.broadcast_to(c.value(0), c.ints(1)).copy()]


@folder(B.SPLIT)
def _split(c: FoldCall) -> list[np.ndarray]:
    return list(np.split(c.value(1), len(c.outputs), axis=c.ints(0)[0]))


@folder(B.SPLIT_V)
def _split_v(c: FoldCall) -> list[np.ndarray]:
    x = c.value(0)
    axis = c.ints(2)[0] % x.ndim
    sizes = [o.shape[axis] for o in c.outputs]
    return list(np.split(x, np.cumsum(sizes)[:-1], axis=axis))


@folder(B.CAST)
def _cast(c: FoldCall) -> list[np.ndarray]:
    return [c.value(0).astype(c.outputs[0].dtype)]


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Evaluator:
    def evaluate(c: FoldCall) -> list[np.ndarray]:
        act = getattr(c.options, "fused_activation_function", 0) if c.options is not None else 0
        if act != 0:
            raise ValueError("fused activation")
        a, b = c.value(0), c.value(1)
        with np.errstate(all="raise"):
            return [fn(a, b)]
    return evaluate


def _trunc_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """TFLite's DIV: true division for floats, C++ truncation toward zero for integers."""
    if np.issubdtype(a.dtype, np.floating):
        return a / b
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (b < 0), -q, q)


FOLDERS[int(B.ADD)] = _binary(np.add)
FOLDERS[int(B.SUB)] = _binary(np.subtract)
FOLDERS[int(B.MUL)] = _binary(np.multiply)
FOLDERS[int(B.DIV)] = _binary(_trunc_div)
FOLDERS[int(B.FLOOR_DIV)] = _binary(np.floor_divide)
FOLDERS[int(B.FLOOR_MOD)] = _binary(np.mod)
FOLDERS[int(B.MAXIMUM)] = _binary(np.maximum)
FOLDERS[int(B.MINIMUM)] = _binary(np.minimum)


FOLDERS[int(B.EQUAL)] = _binary(np.equal)
FOLDERS[int(B.NOT_EQUAL)] = _binary(np.not_equal)
FOLDERS[int(B.LESS)] = _binary(np.less)
FOLDERS[int(B.LESS_EQUAL)] = _binary(np.less_equal)
FOLDERS[int(B.GREATER)] = _binary(np.greater)
FOLDERS[int(B.GREATER_EQUAL)] = _binary(np.greater_equal)
FOLDERS[int(B.LOGICAL_AND)] = _binary(np.logical_and)
FOLDERS[int(B.LOGICAL_OR)] = _binary(np.logical_or)


@folder(B.LOGICAL_NOT)
def _logical_not(c: FoldCall) -> list[np.ndarray]:
    return [np.logical_not(c.value(0))]


@folder(B.NEG)
def _neg(c: FoldCall) -> list[np.ndarray]:
    return [np.negative(c.value(0))]


@folder(B.ABS)
def _abs(c: FoldCall) -> list[np.ndarray]:
    return [np.abs(c.value(0))]


@folder(B.SELECT, B.SELECT_V2)
def _select(c: FoldCall) -> list[np.ndarray]:
    return [np.where(c.value(0).astype(bool), c.value(1), c.value(2))]


@folder(B.FILL)
def _fill(c: FoldCall) -> list[np.ndarray]:
    return [np.full(c.ints(0), c.value(1).reshape(-1)[0])]


@folder(B.ZEROS_LIKE)
def _zeros_like(c: FoldCall) -> list[np.ndarray]:
    return [np.zeros_like(c.value(0))]


@folder(B.RANGE)
def _range(c: FoldCall) -> list[np.ndarray]:
    start, limit, delta = (c.value(i).reshape(-1)[0] for i in range(3))
    return [np.arange(start, limit, delta)]


def _reduction(fn: Callable[..., np.ndarray]) -> Evaluator:
    def evaluate(c: FoldCall) -> list[np.ndarray]:
        x = c.value(0)
        axes = tuple(sorted({a % max(x.ndim, 1) for a in c.ints(1)}))
        keep = bool(c.options.keep_dims) if c.options is not None else False
        return [fn(x, axis=axes, keepdims=keep)]
    return evaluate


FOLDERS[int(B.SUM)] = _reduction(np.sum)
FOLDERS[int(B.REDUCE_PROD)] = _reduction(np.prod)
FOLDERS[int(B.REDUCE_MAX)] = _reduction(np.max)
FOLDERS[int(B.REDUCE_MIN)] = _reduction(np.min)


# -- driver -----------------------------------------------------------------------------------------
def _quant_key(t: Tensor | None) -> tuple:
    if t is None:
        return ()
    q = t.quantization
    return (tuple(q.scale or ()), tuple(q.zero_point or ()))


def _quant_ok(op: Operator, ins: list[Tensor | None], outs: list[Tensor]) -> bool:
    """Quantized tensors fold only through data movement with unchanged parameters. SHAPE and RANK read
    only their input's static shape, never its values, so its dtype and quantization do not matter (an
    int8 model's `tf.shape(x)` feeding a Flatten or squeeze-excite RESHAPE folds as in float)."""
    if op.builtin_code in SHAPE_ONLY:
        return True
    quantized = [t for t in [*ins, *outs] if t is not None and t.quantization.is_quantized
                 and t.type in (TensorType.UINT8, TensorType.INT8, TensorType.INT16)]
    if not quantized:
        return True
    if op.builtin_code not in _DATA_MOVEMENT:
        return False
    # Every quantized tensor involved (all CONCATENATION / PACK inputs, the outputs) must share parameters.
    return len({_quant_key(t) for t in quantized}) == 1


def _fold_op(state: ConversionState, sg: Subgraph, op: Operator, model_outputs: set[int]) -> None:
    fn = FOLDERS.get(op.builtin_code)
    if fn is None or not op.outputs or any(o < 0 or o in model_outputs for o in op.outputs):
        return
    ins = [sg.tensors[i] if i >= 0 else None for i in op.inputs]
    outs = [sg.tensors[o] for o in op.outputs]
    values: list[np.ndarray | None] = []
    for k, t in enumerate(ins):
        if t is None:
            values.append(None)
            continue
        v = state.folded.get((sg.index, t.index))
        if v is None and t.data is not None:
            if t.sparsity is not None or t.data.size != int(np.prod(t.shape, dtype=np.int64)):
                return  # sparse (DENSIFY's business) or inconsistent buffers are left alone
            v = t.data.reshape(t.shape)
        if v is None and not (op.builtin_code in SHAPE_ONLY and k == 0):
            return
        values.append(v)
    if not _quant_ok(op, ins, outs):
        return
    try:
        results = fn(FoldCall(op, values, ins, outs))
    except (ValueError, TypeError, IndexError, ArithmeticError, FloatingPointError, AttributeError):
        return
    if len(results) != len(outs):
        return
    in_bytes = sum(v.nbytes for v in values if v is not None)
    typed = []
    for t, r in zip(outs, results):
        if t.dtype is None:
            return
        r = np.array(r, dtype=t.dtype, order="C")  # (ascontiguousarray would turn rank 0 into [1])
        if tuple(r.shape) != tuple(t.shape) or (t.shape_signature and any(d < 0 for d in t.shape_signature)):
            return
        typed.append(r)
    if sum(r.nbytes for r in typed) > max(MAX_GROWTH_BYTES, in_bytes):
        return
    for o, r in zip(op.outputs, typed):
        r.setflags(write=False)
        state.folded[(sg.index, o)] = r


def fold_constants(state: ConversionState) -> None:
    """Fills `state.folded` for every subgraph, in operator order (TFLite operators are topologically
    sorted, so a folded result is available to the ops that consume it)."""
    for sg in state.model.subgraphs:
        model_outputs = set(sg.outputs)
        for op in sg.operators:
            _fold_op(state, sg, op, model_outputs)
