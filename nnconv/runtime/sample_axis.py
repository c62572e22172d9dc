"""Which NNAPI models can run many samples at once, and the model that does: the sample axis tracked
through the graph, op by op, with an explicit allowlist.

A model whose every input has a leading extent of 1 (TFLite's batch, fixed or open) can often run N
samples as one model whose inputs have a leading extent of N, each sample computed exactly as alone. That
holds when every operation keeps samples apart along axis 0: an elementwise operation, a convolution or
pooling, a reduction or concatenation over other axes, a RESHAPE that keeps the leading 1. `batch_model`
walks the main subgraph in order, marking the operands that carry the sample axis (the inputs, then every
output of an operation that reads one), and asks each such operation's rule whether it keeps the samples
apart; the first that cannot (a reduction or transpose involving axis 0, control flow, a recurrent op and
its state, an operation without a rule) is named in the refusal and the caller loops over samples.
Unsure means refused: an operation's rule is the one its spec names (`OperationSpec.sample_axis`, one rule
below per `SampleAxis`), and an operation whose spec names none never batches.

The batched model is the same graph with every sample-carrying operand's leading extent set to N and the
constants that encode the batch adapted: a RESHAPE target, SLICE size or STRIDED_SLICE end with a leading
1 becomes N, TRANSPOSE_CONV_2D's output shape likewise, and a constant concatenated with samples is
repeated N times. An adapted constant read by operations that did not ask for the same value refuses.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.model import DataLocation, Model, Operand, Operation, Subgraph
from nnconv.nnapi.operations import AxisParam, SampleAxis, operations_where, spec_of

T = OperationType
_L = OperandLifeTime

# Float operations the batched plan runs on all samples at once (`OperationSpec.float_batched`): each output
# element is the same IEEE operation on the same operands whatever the tensor's size (data movement,
# correctly rounded arithmetic, comparisons, max / min). Every other float operation (products through BLAS
# or einsum, whose rounding may depend on the rows one call sees; reductions, softmax and pools whose
# kernels pick their path by the tensor's size; transcendental functions; fused steps) runs one sample at a
# time on exactly the shapes of a single run (`nnconv.runtime.batch`), which is what makes float results
# bit-identical.
FLOAT_BATCHED = operations_where(lambda spec: spec.float_batched)

@dataclass
class BatchedModel:
    """`model` at N samples: `sampled` are the main-subgraph operands carrying the sample axis (leading
    extent N in `model`, 1 in the original)."""

    model: Model
    n: int
    sampled: frozenset[int]


@dataclass
class _Walk:
    """The analysis' state: the model, its main subgraph, the sample count and what it found so far."""

    model: Model
    sg: Subgraph
    n: int
    sampled: set[int] = field(default_factory=set)
    adapted: dict[int, np.ndarray] = field(default_factory=dict)  # constant operand -> its value at N
    asked: dict[int, set[int]] = field(default_factory=dict)  # adapted operand -> operations asking for it
    current: int = -1  # the operation being walked

    def constant(self, i: int) -> np.ndarray | None:
        od = self.sg.operands[i]
        return self.model.constant_value(od) if od.lifetime in (_L.CONSTANT_COPY, _L.CONSTANT_REFERENCE) else None

    def rank(self, i: int) -> int:
        return len(self.sg.operands[i].dimensions)

    def is_tensor(self, i: int) -> bool:
        od = self.sg.operands[i]
        return od.type.is_tensor and od.lifetime is not _L.NO_VALUE

    def adapt(self, i: int, value: np.ndarray) -> str | None:
        """The operation being walked asks for constant operand `i` to hold `value` in the batched model."""
        if self.constant(i) is None:
            return f"operand {self._name(i)} encodes the batch but is computed at run time"
        old = self.adapted.get(i)
        if old is not None and (old.shape != value.shape or not np.array_equal(old, value)):
            return f"operand {self._name(i)} would need two different values at {self.n} samples"
        self.adapted[i] = value
        self.asked.setdefault(i, set()).add(self.current)
        return None

    def _name(self, i: int) -> str:
        return self.sg.operands[i].name or f"#{i}"


def _normalize(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def _scalar(w: _Walk, op: Operation, slot: int, default: int | None) -> int | None:
    if slot >= len(op.inputs) or w.sg.operands[op.inputs[slot]].lifetime is _L.NO_VALUE:
        return default
    v = w.constant(op.inputs[slot])
    return None if v is None else int(np.asarray(v).reshape(-1)[0])


def _ints(w: _Walk, op: Operation, slot: int) -> list[int] | None:
    if slot >= len(op.inputs) or w.sg.operands[op.inputs[slot]].lifetime is _L.NO_VALUE:
        return None
    v = w.constant(op.inputs[slot])
    return None if v is None else [int(x) for x in np.asarray(v).reshape(-1)]


def _only_first(w: _Walk, op: Operation) -> str | None:
    if any(i in w.sampled for i in op.inputs[1:]):
        return "a parameter input other than the data carries samples"
    return None


def _broadcast(w: _Walk, op: Operation) -> str | None:
    out_rank = w.rank(op.outputs[0])
    for i in op.inputs:
        if not w.is_tensor(i):
            continue
        if i in w.sampled and w.rank(i) != out_rank:
            return "a sample-carrying input is broadcast along new leading axes"
        if i not in w.sampled and w.rank(i) == out_rank and w.sg.operands[i].dimensions[0] != 1:
            return "a shared input spans the sample axis"
    return None


def _axis_param(w: _Walk, op: Operation, param: AxisParam) -> str | None:
    axis = _scalar(w, op, param.slot, param.default)
    if axis is None:
        return "its axis is not a constant"
    if _normalize(axis, w.rank(op.inputs[0])) == 0:
        return "it works along axis 0, the sample axis"
    return _only_first(w, op)


def _axes_operand(missing: str, touching: str) -> "Rule":
    """The rule of an operation whose slot-1 tensor lists axes (reductions, SQUEEZE, REVERSE): refused
    with `missing` when they are not constant, with `touching` when one is axis 0."""
    def rule(w: _Walk, op: Operation) -> str | None:
        axes = _ints(w, op, 1)
        if axes is None:
            return missing
        if any(_normalize(a, w.rank(op.inputs[0])) == 0 for a in axes):
            return touching
        return _only_first(w, op)
    return rule


_reduce = _axes_operand("its axes are not constant", "it reduces over axis 0, the sample axis")
_squeeze = _axes_operand("without explicit axes it would squeeze the sample axis",
                         "it squeezes axis 0, the sample axis")
_reverse = _axes_operand("its axis is not constant", "it reverses axis 0, the sample axis")


def _reshape(w: _Walk, op: Operation) -> str | None:
    target = _ints(w, op, 1)
    if target is None or not target:
        return "its target shape is computed at run time"
    if target[0] == -1:
        return _only_first(w, op)  # the leading extent is inferred: N at N samples
    if target[0] != 1:
        return "its target does not keep a leading 1"
    new = np.array([w.n, *target[1:]], dtype=np.int32)
    return w.adapt(op.inputs[1], new) or _only_first(w, op)


def _expand_dims(w: _Walk, op: Operation) -> str | None:
    axis = _scalar(w, op, 1, None)
    if axis is None or _normalize(axis, w.rank(op.inputs[0]) + 1) == 0:
        return "it inserts an axis before the sample axis"
    return _only_first(w, op)


def _transpose(w: _Walk, op: Operation) -> str | None:
    perm = _ints(w, op, 1)
    if perm is None or _normalize(perm[0], len(perm)) != 0:
        return "its permutation moves axis 0, the sample axis"
    return _only_first(w, op)


def _pad(w: _Walk, op: Operation) -> str | None:
    pads = _ints(w, op, 1)
    if pads is None or pads[:2] != [0, 0]:
        return "it pads along axis 0, the sample axis"
    return _only_first(w, op)


def _tile(w: _Walk, op: Operation) -> str | None:
    multiples = _ints(w, op, 1)
    if multiples is None or multiples[0] != 1:
        return "it tiles along axis 0, the sample axis"
    return _only_first(w, op)


def _slice(w: _Walk, op: Operation) -> str | None:
    begin, size = _ints(w, op, 1), _ints(w, op, 2)
    if begin is None or size is None or begin[0] != 0 or size[0] not in (1, -1):
        return "it slices along axis 0, the sample axis"
    if size[0] == -1:
        return _only_first(w, op)
    return w.adapt(op.inputs[2], np.array([w.n, *size[1:]], np.int32)) or _only_first(w, op)


def _strided_slice(w: _Walk, op: Operation) -> str | None:
    begin, end, strides = _ints(w, op, 1), _ints(w, op, 2), _ints(w, op, 3)
    begin_mask, end_mask, shrink = (_scalar(w, op, s, None) for s in (4, 5, 6))
    if None in (begin, end, strides, begin_mask, end_mask, shrink):
        return "its bounds are not constant"
    if strides[0] != 1 or shrink & 1 or not (begin_mask & 1 or begin[0] == 0):
        return "it slices along axis 0, the sample axis"
    if end_mask & 1:
        return _only_first(w, op)
    if end[0] < 1:
        return "it slices along axis 0, the sample axis"
    return w.adapt(op.inputs[2], np.array([w.n, *end[1:]], np.int32)) or _only_first(w, op)


def _concatenation(w: _Walk, op: Operation) -> str | None:
    axis = _scalar(w, op, len(op.inputs) - 1, None)
    data = op.inputs[:-1]
    if axis is None or _normalize(axis, w.rank(data[0])) == 0:
        return "it concatenates along axis 0, the sample axis"
    for i in data:
        if i in w.sampled:
            continue
        value = w.constant(i)
        if value is None:
            return "it concatenates samples with a value computed once for all of them"
        why = w.adapt(i, np.repeat(value, w.n, axis=0))  # NNAPI's concatenation never broadcasts
        if why:
            return why
    return None


def _pack(w: _Walk, op: Operation) -> str | None:
    axis = _scalar(w, op, 0, None)
    if axis is None or _normalize(axis, w.rank(op.inputs[1]) + 1) == 0:
        return "it stacks along axis 0, the sample axis"
    if any(i not in w.sampled for i in op.inputs[1:]):
        return "it stacks samples with a value shared by all of them"
    return None


def _gather(w: _Walk, op: Operation) -> str | None:
    axis = _scalar(w, op, 1, None)
    params, indices = op.inputs[0], op.inputs[2]
    if axis is None:
        return "its axis is not a constant"
    axis = _normalize(axis, w.rank(params))
    if params in w.sampled and indices not in w.sampled and axis != 0:
        return None
    if params not in w.sampled and indices in w.sampled and axis == 0:
        return None  # a lookup: the indices' leading axis leads the output
    return "it gathers along axis 0, the sample axis"


def _embedding_lookup(w: _Walk, op: Operation) -> str | None:
    return None if op.inputs[0] in w.sampled and op.inputs[1] not in w.sampled else "its table carries samples"


def _all_sampled(w: _Walk, op: Operation) -> str | None:
    """Operations without broadcasting (SELECT): every tensor input must carry the samples."""
    if any(i not in w.sampled for i in op.inputs if w.is_tensor(i)):
        return "it combines samples with a value shared by all of them"
    return None


def _batches(w: _Walk, op: Operation) -> str | None:
    """Operations whose leading axes are independent batches (BATCH_MATMUL, rank 3 or more): every tensor
    input must carry the samples."""
    why = _all_sampled(w, op)
    if why is None and any(w.rank(i) < 3 for i in op.inputs if w.is_tensor(i)):
        return "its rows are the sample axis"
    return why


def _transpose_conv(w: _Walk, op: Operation) -> str | None:
    why = _only_first(w, op)
    if why or len(op.inputs) != 9:
        return why  # the explicit-padding form has no output shape to adapt
    shape = _ints(w, op, 3)
    if shape is None or shape[0] != 1:
        return "its output shape is not constant with a leading 1"
    return w.adapt(op.inputs[3], np.array([w.n, *shape[1:]], np.int32))


def _topk(w: _Walk, op: Operation) -> str | None:
    return "it ranks along axis 0, the sample axis" if w.rank(op.inputs[0]) < 2 else _only_first(w, op)


Rule = Callable[[_Walk, Operation], "str | None"]
# One rule per kind of `OperationSpec.sample_axis` (an `AxisParam` is `_axis_param`'s).
RULES: dict[SampleAxis, Rule] = {
    SampleAxis.FIRST_ONLY: _only_first, SampleAxis.BROADCAST: _broadcast, SampleAxis.REDUCE: _reduce,
    SampleAxis.PAD: _pad, SampleAxis.RESHAPE: _reshape, SampleAxis.SQUEEZE: _squeeze,
    SampleAxis.EXPAND_DIMS: _expand_dims, SampleAxis.TRANSPOSE: _transpose, SampleAxis.TILE: _tile,
    SampleAxis.SLICE: _slice, SampleAxis.STRIDED_SLICE: _strided_slice, SampleAxis.CONCATENATION: _concatenation,
    SampleAxis.PACK: _pack, SampleAxis.GATHER: _gather, SampleAxis.EMBEDDING_LOOKUP: _embedding_lookup,
    SampleAxis.ALL_SAMPLED: _all_sampled, SampleAxis.BATCHES: _batches, SampleAxis.TRANSPOSE_CONV: _transpose_conv,
    SampleAxis.TOPK: _topk, SampleAxis.REVERSE: _reverse,
}


def rule_of(op_type: OperationType) -> Rule | None:
    """How batched execution carries the sample axis through an operation of `op_type`; None: it does not."""
    kind = spec_of(op_type).sample_axis
    if isinstance(kind, AxisParam):
        return lambda w, op: _axis_param(w, op, kind)
    return None if kind is None else RULES[kind]


def batch_model(model: Model, n: int) -> BatchedModel | str:
    """`model` at `n` samples, or why it cannot take a sample axis (naming the operation)."""
    if n < 1:
        return f"a batch needs at least one sample, got {n}"
    if model.referenced:
        return "the model has control flow (IF / WHILE subgraphs)"
    sg = model.main
    w = _Walk(model, sg, n)
    for i in sg.input_indexes:
        od = sg.operands[i]
        if not od.type.is_tensor or not od.dimensions or od.dimensions[0] != 1:
            return f"input {od.name or i} has leading extent {list(od.dimensions)[:1] or 'none'}, not 1"
        w.sampled.add(i)
    for k, op in enumerate(sg.operations):
        label = f"operation #{k} {op.type.name}"
        if not spec_of(op.type).deterministic:
            return f"{label}: it draws random numbers (N single runs draw N times)"
        if not any(i in w.sampled for i in op.inputs):
            continue  # computed from constants only: the same value for every sample
        rule = rule_of(op.type)
        if rule is None:
            return f"{label} is not known to keep samples apart"
        for o in op.outputs:
            od = sg.operands[o]
            if not od.type.is_tensor or not od.dimensions or od.dimensions[0] != 1:
                return (f"{label}: output {od.name or o} has leading extent {list(od.dimensions)[:1]}, "
                        "not the sample's 1")
        w.current = k
        why = rule(w, op)
        if why:
            return f"{label}: {why}"
        w.sampled.update(op.outputs)
    for o in sg.output_indexes:
        if o not in w.sampled:
            return f"output {sg.operands[o].name or o} does not depend on the inputs"
    for i, askers in w.asked.items():
        readers = {k for k, op in enumerate(sg.operations) if i in op.inputs}
        if readers != askers:
            other = sorted(readers - askers)[0]
            return (f"operation #{other} {sg.operations[other].type.name}: reads constant "
                    f"{sg.operands[i].name or i}, which encodes the batch for another operation")
    return BatchedModel(_rebuilt(model, w), n, frozenset(w.sampled))


def _rebuilt(model: Model, w: _Walk) -> Model:
    """The model with the sample operands at N and the adapted constants (copied after the original
    values; the original model is left as it is)."""
    values = bytearray(model.operand_values)
    operands: list[Operand] = []
    for i, od in enumerate(model.main.operands):
        if i in w.sampled:
            od = dataclasses.replace(od, dimensions=(w.n, *od.dimensions[1:]))
        new = w.adapted.get(i)
        if new is not None:
            raw = np.ascontiguousarray(new, dtype=od.dtype).tobytes()
            while len(values) % 8:
                values.append(0)
            od = dataclasses.replace(od, dimensions=tuple(new.shape) if od.type.is_tensor else od.dimensions,
                                     lifetime=_L.CONSTANT_COPY,
                                     location=DataLocation(pool_index=0, offset=len(values), length=len(raw)))
            values.extend(raw)
        operands.append(od)
    main = dataclasses.replace(model.main, operands=operands)
    return dataclasses.replace(model, main=main, operand_values=values)


def reads_or_writes_float(sg: Subgraph, op: Operation) -> bool:
    """The operation reads or writes float tensors (see `FLOAT_BATCHED`)."""
    return any(sg.operands[i].type in (OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16)
               for i in (*op.inputs, *op.outputs))
