"""Runs the rewrite stage on a conversion state: constant folding, then every registered graph rewrite.

The graph rewrites are registered by importing their modules here, explicitly (one line per rewrite).
"""

from __future__ import annotations

from typing import Iterable

from nnconv.rewrite.state import ConversionState
from nnconv.rewrite import int64_indices  # noqa: F401  (registers RewriteKind.INT64_INDICES)
from nnconv.rewrite import list_set_item  # noqa: F401  (registers RewriteKind.LIST_SET_ITEM)
from nnconv.rewrite import merge_axes  # noqa: F401  (registers RewriteKind.MERGE_AXES)
from nnconv.rewrite import merge_regions  # noqa: F401  (registers RewriteKind.MERGE_REGIONS)
from nnconv.rewrite import output_shapes  # noqa: F401  (registers RewriteKind.OUTPUT_SHAPES)
from nnconv.rewrite import static_shapes  # noqa: F401  (registers RewriteKind.STATIC_SHAPES)
from nnconv.rewrite.folding import fold_constants
from nnconv.rewrite.registry import REWRITES, RewriteKind

MAX_SHAPE_ROUNDS = 16


def rewrite(state: ConversionState, kinds: Iterable[RewriteKind] = tuple(RewriteKind)) -> None:
    """Folds constants (unless `ConversionOptions.fold_constants` is off), applies the graph rewrites of
    `kinds` (every one by default) in `RewriteKind` order (recording what each changed in `state.rewrites`),
    and folds again what the rewrites made constant. `nnconv rewrite` asks for some kinds at a time, to keep
    only those that help TFLite's NNAPI delegate."""
    fold = state.options.fold_constants
    if fold:
        fold_constants(state)
    changed = False
    chosen = set(kinds)
    for kind in (k for k in RewriteKind if k in chosen):
        # corrected shapes can make SHAPE ops foldable, whose results fix shapes further on: alternate
        # with folding until nothing changes (each round corrects at least one tensor, so it ends)
        for _round in range(MAX_SHAPE_ROUNDS if kind is RewriteKind.STATIC_SHAPES else 1):
            model, records = REWRITES[kind].apply(state)
            # static-shapes also marks placeholders it found right as static, with nothing to report
            if not records and (model is state.model or kind is not RewriteKind.STATIC_SHAPES):
                break
            state.source = state.source or state.model
            state.model = model
            state.rewrites.extend(records)
            state.removed.update((r.subgraph, r.op_index) for r in records if r.removed)
            changed = True
            if kind is RewriteKind.STATIC_SHAPES and fold:
                fold_constants(state)
    if changed and fold:
        fold_constants(state)
