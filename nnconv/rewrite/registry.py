"""The graph-rewrite registry: one `GraphRewrite` per `RewriteKind`, registered with `@graph_rewrite`.

A rewrite takes the conversion state after constant folding and returns a changed TFLite IR (the same
operators at the same indices, with new shapes, constant inputs or kinds) plus one `RewriteRecord` per
operator it changed, so `check` can say which rewrite made an op lowerable. Rewrites run in the order of
`RewriteKind`; each module states the identity its rewrite relies on. Registration is explicit: the modules
are imported by `nnconv/rewrite/pipeline.py`, no module is found by name.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from nnconv.rewrite.state import ConversionState
    from nnconv.tflite.ir import TfliteModel


class RewriteKind(enum.Enum):
    """Every graph rewrite, in the order they run."""

    STATIC_SHAPES = "static-shapes"  # placeholder shapes (-1 in the signature) as TFLite's Prepare computes them
    OUTPUT_SHAPES = "output-shapes"  # undeclared output shapes of sequence ops, as TFLite's Prepare computes
    MERGE_AXES = "merge-axes"  # rank-5 reshape/tile/transpose chains on merged axes (rank <= 4)
    MERGE_REGIONS = "merge-regions"  # rank-5 elementwise / reduction regions on merged axes (GroupNormalization)
    LIST_SET_ITEM = "list-set-item"  # a loop's lowered TensorListSetItem as a SELECT of one row
    INT64_INDICES = "int64-indices"  # int64 index tensors carried as int32


@dataclass(frozen=True)
class RewriteRecord:
    """One operator a rewrite changed: where, by which rewrite, and what it became."""

    subgraph: int
    op_index: int
    kind: RewriteKind
    note: str
    removed: bool = False  # the op emits nothing any more: another op of the rewrite does its work

    def describe(self) -> str:
        return f"rewritten by {self.kind.value}: {self.note}"


@dataclass(frozen=True)
class GraphRewrite:
    kind: RewriteKind
    apply: Callable[["ConversionState"], tuple["TfliteModel", list[RewriteRecord]]]
    identity: str  # the identity the rewrite relies on (for docs)


REWRITES: dict[RewriteKind, GraphRewrite] = {}

RewriteFn = Callable[["ConversionState"], tuple["TfliteModel", list[RewriteRecord]]]


def graph_rewrite(kind: RewriteKind, identity: str) -> Callable[[RewriteFn], RewriteFn]:
    """Function decorator registering the rewrite of `kind`."""
    def register(fn: RewriteFn) -> RewriteFn:
        if kind in REWRITES:
            raise RuntimeError(f"two graph rewrites for {kind.value}")
        REWRITES[kind] = GraphRewrite(kind, fn, identity)
        return fn
    return register
