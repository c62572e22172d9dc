"""`nnconv rewrite` as a function: the steps that help TFLite's NNAPI delegate, applied, proven and reported.

1. The delegate's view of the model as given (at `--input-shape`'s shapes when given).
2. Every step of `steps.STEPS` applied in turn; then, last first, each step is left out again when the model
   without it is as good for the delegate (`view.DelegateView.key`): what is kept helps, and steps that only
   help together (a dynamic shape chain and an int64 index in one model) are kept together.
3. Nothing kept: the model is not rewritten (the command leaves the output byte-identical to the input).
4. Otherwise TFLite's interpreter runs both models (`proof.py`); the output is returned only when it passes.

The rewritten model is written over the original's bytes (`tflite/writer.py`): inputs, outputs, tensor
names and indices, signature defs, metadata buffers, quantization parameters and every unchanged buffer are
the original's.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from nnconv.delegate.conversion import DelegateConversion
from nnconv.retarget.proof import Proof, prove
from nnconv.retarget.steps import STEPS, Step, change_op
from nnconv.retarget.view import DelegateView, delegate_view
from nnconv.rewrite.state import ConversionOptions
from nnconv.targets import Target
from nnconv.tflite.input_shapes import resize_inputs
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.reader import read_model
from nnconv.tflite.writer import write_model


@dataclass(frozen=True)
class OpChange:
    """One operator the rewrite changed: its index in the input model (None: a tensor alone), its new index in
    the output (None: removed), the step, what changed and why the delegate needed it."""

    op: int | None
    op_name: str
    new_index: int | None
    step: str
    kind: str
    note: str

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "op_name": self.op_name, "new_index": self.new_index, "step": self.step,
                "rewrite": self.kind, "change": self.note}


@dataclass
class RewriteResult:
    """What `nnconv rewrite` did with one model at one level."""

    model: str
    api_level: int
    before: DelegateView
    after: DelegateView
    steps: list[Step] = field(default_factory=list)  # the steps kept, in order
    changes: list[OpChange] = field(default_factory=list)
    data: bytes | None = None  # the rewritten model; None when nothing helps (the input stays as it is)
    proof: Proof | None = None

    @property
    def rewritten(self) -> bool:
        return self.data is not None

    @property
    def passed(self) -> bool:
        return self.proof is None or self.proof.passed


@dataclass
class _Applied:
    model: TfliteModel
    origin: dict[int, int]  # output operator -> operator of the input model
    changes: list[OpChange]
    data: bytes
    used: list[Step]  # the steps that changed the model


def rewrite_model(source: str | os.PathLike | bytes, api_level: int, input_shapes: tuple = (), seed: int = 0,
                  inputs: Mapping[str, np.ndarray] | None = None) -> RewriteResult:
    """Rewrites one model for TFLite's NNAPI delegate at `api_level` (see the module docstring)."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        raw, name = bytes(source), "<bytes>"
    else:
        name = os.fspath(source)
        read_model(name)  # an unreadable or invalid file: one line, exit 2, before anything else
        with open(name, "rb") as f:
            raw = f.read()
    options = ConversionOptions(input_shapes=tuple(input_shapes), target=Target.DELEGATE)
    original = read_model(raw)
    before = delegate_view(DelegateConversion(original, api_level, options, source=raw))
    if before.whole:  # the delegate takes it all in one partition: nothing can be better
        return RewriteResult(name, api_level, before, before)
    base = resize_inputs(original, options.input_shapes)
    applied = _apply(base, raw, list(STEPS), api_level)
    chosen = applied.used if applied is not None else []  # the steps that changed something
    best = _view(applied, api_level) if applied is not None else before
    for step in reversed(list(chosen)):
        without = [s for s in chosen if s is not step]
        candidate = _apply(base, raw, without, api_level)
        view = _view(candidate, api_level) if candidate is not None else before
        if not best.better_than(view):
            chosen, applied, best = without, candidate, view
    result = RewriteResult(name, api_level, before, before)
    if applied is None or not best.better_than(before):
        return result
    result.after, result.steps, result.changes, result.data = best, chosen, applied.changes, applied.data
    result.proof = prove(raw, applied.data, seed, inputs)
    return result


def _apply(base: TfliteModel, raw: bytes, steps: list[Step], api_level: int) -> _Applied | None:
    """`steps` applied one after the other (each on the previous one's output); None when none changes
    anything."""
    model, origin, changes, used = base, {k: k for k in range(len(base.subgraphs[0].operators))}, [], []
    bodies: dict[int, dict[int, int]] = {}  # other subgraphs: output operator -> operator of the input model
    names = [op.name for op in base.subgraphs[0].operators]
    for step in steps:
        found = step.apply(model, api_level)
        if found is None:
            continue
        used.append(step)
        kept = set(found.origin.values())
        for c in found.changes:
            op = change_op(c, origin)
            new = next((k for k, old in found.origin.items() if old == c.op), None) if c.op in kept else None
            changes.append(OpChange(op, names[op] if op is not None and op < len(names) else "", new, step.name,
                                    c.kind, c.note))
        # an op the step kept keeps its changes' new index up to date through later steps
        changes = [dataclasses.replace(c, new_index=_renumber(c.new_index, found.origin)) if c.step != step.name
                   else c for c in changes]
        origin = {k: origin[old] for k, old in found.origin.items() if old in origin}  # (added ops: none)
        for s, step_origin in found.body_origins.items():
            before = bodies.get(s, {})
            bodies[s] = {k: before.get(old, old) for k, old in step_origin.items()}
        model = found.model
    if not used:
        return None
    data = write_model(model, raw, {**{(0, k): origin[k] for k in origin},
                                    **{(s, k): old for s, m in bodies.items() for k, old in m.items()}})
    return _Applied(read_model(data), origin, changes, data, used)


def _renumber(index: int | None, step_origin: dict[int, int]) -> int | None:
    if index is None:
        return None
    return next((k for k, old in step_origin.items() if old == index), None)


def _view(applied: _Applied, api_level: int) -> DelegateView:
    return delegate_view(DelegateConversion(applied.model, api_level, ConversionOptions(target=Target.DELEGATE),
                                            source=applied.data))
