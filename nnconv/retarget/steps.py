"""The rewrites `nnconv rewrite` may apply, each a step from one TFLite model to another over nnconv's own
rewrite stage (`nnconv/rewrite/`: its folds, its static shapes, its rank merges), written as TFLite runs it
(`rewrite/standalone.py`). Each step states the identity it relies on; `engine.py` keeps a step only when
TFLite's NNAPI delegate takes more with it.

What is not a step: the parts of the rewrite stage that only nnconv's converter can read (folding hybrid
weights to float32, `--fold-weights`, changes what TFLite computes).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import Callable

from nnconv.rewrite.delegate_forms import batch_matmul_as_mul_sum, reverse_as_gather, space_batch_as_rank4
from nnconv.rewrite.pipeline import rewrite
from nnconv.rewrite.registry import REWRITES, RewriteKind
from nnconv.rewrite.standalone import Change, Standalone, narrow_int64, pin_shapes, standalone_model
from nnconv.rewrite.state import ConversionOptions, ConversionState
from nnconv.targets import Target
from nnconv.tflite.ir import TfliteModel

_FOLD_IDENTITY = ("an operator whose inputs are constant (SHAPE: whose input shape is static) computes the "
                  "same value at every run: TFLite reads it from the file instead (nnconv/rewrite/folding.py)")


@dataclass(frozen=True)
class Step:
    """One rewrite: its name, the identity it relies on, and the function applying it (None: nothing to do)."""

    name: str
    identity: str
    apply: Callable[[TfliteModel, int], Standalone | None]
    why: str  # what it lets the delegate do


def _state(model: TfliteModel, api_level: int, fold: bool = True) -> ConversionState:
    return ConversionState(model, api_level, ConversionOptions(fold_constants=fold, target=Target.NNCONV))


def _static_shapes(model: TfliteModel, api_level: int) -> Standalone | None:
    state = _state(model, api_level)
    rewrite(state, (RewriteKind.STATIC_SHAPES, RewriteKind.OUTPUT_SHAPES))
    found = standalone_model(state, model)
    pinned, pins = pin_shapes(found.model)
    if not found.changes and not pins:
        return None
    return replace(found, model=pinned, changes=found.changes + pins)


def _rank_merges(model: TfliteModel, api_level: int) -> Standalone | None:
    state = _state(model, api_level)
    rewrite(state, (RewriteKind.MERGE_AXES, RewriteKind.MERGE_REGIONS))
    merged = [r for r in state.rewrites if r.subgraph == 0]
    if not merged:
        return None  # folding alone is the static-shapes step's business
    return standalone_model(state, model)


def _loop_list_writes(model: TfliteModel, api_level: int) -> Standalone | None:
    state = _state(model, api_level)
    rewrite(state, (RewriteKind.LIST_SET_ITEM,))
    if not any(r.kind is RewriteKind.LIST_SET_ITEM for r in state.rewrites):
        return None
    return standalone_model(state, model, bodies=True)


def _int64_indices(model: TfliteModel, api_level: int) -> Standalone | None:
    state = _state(model, api_level, fold=False)
    rewrite(state, (RewriteKind.INT64_INDICES,))
    narrowed, changes = narrow_int64(state, model)
    if not changes:
        return None
    return Standalone(narrowed, {k: k for k in range(len(model.subgraphs[0].operators))}, changes)


def _delegate_ops(model: TfliteModel, api_level: int) -> Standalone | None:
    rewritten, changes = reverse_as_gather(model) if api_level < REVERSE_FROM_API else (model, [])
    rewritten, origin, more = space_batch_as_rank4(rewritten)
    if api_level < BATCH_MATMUL_FROM_API:
        rewritten, second, matmuls = batch_matmul_as_mul_sum(rewritten)
        more += [dataclasses.replace(c, op=origin.get(c.op, c.op)) for c in matmuls]  # as the step's input
        origin = {k: origin[old] for k, old in second.items() if old in origin}
    if not changes and not more:
        return None
    return Standalone(rewritten, origin, changes + more)


REVERSE_FROM_API = 34  # the delegate maps REVERSE_V2 from feature level 7
BATCH_MATMUL_FROM_API = 33  # and BATCH_MATMUL from feature level 6


STEPS: tuple[Step, ...] = (
    Step("static-shapes", f"{REWRITES[RewriteKind.STATIC_SHAPES].identity}; {_FOLD_IDENTITY}; at fixed input "
         "shapes a -1 in a shape signature changes no extent", _static_shapes,
         "a shape computed at run time (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE) leaves dynamic-sized tensors, "
         "and TFLite refuses the delegate for the whole model"),
    Step("rank-merges", f"{REWRITES[RewriteKind.MERGE_AXES].identity}; {REWRITES[RewriteKind.MERGE_REGIONS].identity}",
         _rank_merges, "NNAPI takes no rank-5 tensor: the delegate leaves rank-5 operators on the CPU"),
    Step("loop-list-writes", REWRITES[RewriteKind.LIST_SET_ITEM].identity, _loop_list_writes,
         "a loop body's list write slices at a data-dependent index: the loop's outputs are dynamic-sized and "
         "TFLite refuses the delegate for the whole model (the loop itself stays on the CPU)"),
    Step("int64-indices", REWRITES[RewriteKind.INT64_INDICES].identity, _int64_indices,
         "the delegate cannot add an INT64 operand: its build fails and TFLite runs the model on the CPU"),
    Step("delegate-ops", "reverse(x, a) == gather(x, [n-1, ..., 0], axis=a) for an axis of static extent n; a "
         "rank-3 SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND (block [b]) is the rank-4 one (block [1, b]) on [N, 1, W, C], "
         "and crops are a SLICE after it; A @ B == SUM over k of A[h, m, k, 1] * B[h, 1, k, n] (float32)",
         _delegate_ops, "the delegate maps REVERSE_V2 only from API 34 and BATCH_MATMUL only from API 33, and "
         "refuses the rank-3 (version 3) SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND of dilated Conv1D: it leaves them "
         "on the CPU"),
)


def change_op(change: Change, origin: dict[int, int]) -> int | None:
    """The change's operator as an index of the original model (`origin`: the step's input -> the original)."""
    return None if change.op is None else origin.get(change.op, change.op)
