"""Constant folding's evaluators, one module per op family, registered by explicit imports (this list; a
module left out of it would silently stop folding its ops, which `tests/test_registry.py` catches).
`FOLDS` maps each foldable `BuiltinOperator` to its `Fold`; the lowering rule of that op names the same
`Fold` in its `fold` attribute."""

from __future__ import annotations

from nnconv.rewrite.folds import arithmetic, shape
from nnconv.rewrite.folds.registry import FOLDS, Fold, FoldCall, fold

__all__ = ["FOLDS", "Fold", "FoldCall", "fold", "arithmetic", "shape"]
