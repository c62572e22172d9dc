"""Constant folding before lowering: operators whose inputs are all constant are evaluated at conversion
time and their outputs become constants (`ConversionState.folded`)."""

from __future__ import annotations

from nnconv.lowering.context import ConversionState


def fold_constants(state: ConversionState) -> None:
    """Fills `state.folded`. (Evaluators are registered per op; none yet.)"""
    return None
