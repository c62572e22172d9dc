"""Constant folding before lowering: operators whose inputs are all constant are evaluated at conversion
time and their outputs become constants (`ConversionState.folded`).

Each foldable TFLite op has a `Fold` in `rewrite/folds/` (a small numpy evaluator following TFLite's
semantics, and whether the op only moves data or reads only a static shape), registered in `FOLDS` by
`BuiltinOperator` and named by the op's lowering rule (`Rule.fold`). SHAPE (and RANK) need only a static
input shape, not constant data: this is what lets TensorFlow's dynamic-shape idioms (SHAPE ->
STRIDED_SLICE -> PACK -> RESHAPE around a squeeze-excite block) collapse into constants so the whole
block lowers in one NNAPI partition.

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

import numpy as np

from nnconv.rewrite.folds import FOLDS, Fold, FoldCall
from nnconv.rewrite.state import ConversionState
from nnconv.tflite.ir import Operator, Subgraph, Tensor
from nnconv.tflite.schema_enums import TensorType

MAX_GROWTH_BYTES = 64 * 1024


# -- driver -----------------------------------------------------------------------------------------
def _quant_key(t: Tensor | None) -> tuple:
    if t is None:
        return ()
    q = t.quantization
    return (tuple(q.scale or ()), tuple(q.zero_point or ()))


def _quant_ok(fold: Fold, ins: list[Tensor | None], outs: list[Tensor]) -> bool:
    """Quantized tensors fold only through data movement with unchanged parameters. SHAPE and RANK read
    only their input's static shape, never its values, so its dtype and quantization do not matter (an
    int8 model's `tf.shape(x)` feeding a Flatten or squeeze-excite RESHAPE folds as in float)."""
    if fold.shape_only:
        return True
    quantized = [t for t in [*ins, *outs] if t is not None and t.quantization.is_quantized
                 and t.type in (TensorType.UINT8, TensorType.INT8, TensorType.INT16)]
    if not quantized:
        return True
    if not fold.data_movement:
        return False
    # Every quantized tensor involved (all CONCATENATION / PACK inputs, the outputs) must share parameters.
    return len({_quant_key(t) for t in quantized}) == 1


def _fold_op(state: ConversionState, sg: Subgraph, op: Operator, model_outputs: set[int]) -> None:
    fold = FOLDS.get(op.builtin_code)
    if fold is None or not op.outputs or any(o < 0 or o in model_outputs for o in op.outputs):
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
            if t.sparsity is not None or t.dtype is None or t.data.size != int(np.prod(t.shape, dtype=np.int64)):
                # sparse (DENSIFY's business), raw (strings; int4, packed two a byte, whose single value would
                # read as its byte) or inconsistent buffers are left alone
                return
            v = t.data.reshape(t.shape)
        if v is None and not (fold.shape_only and k == 0):
            return
        values.append(v)
    if not _quant_ok(fold, ins, outs):
        return
    try:
        results = fold(FoldCall(op, values, ins, outs))
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
