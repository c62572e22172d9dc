"""Validate/prepare-time rules of AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (Pooling.cpp of the NNAPI
reference operations), for both forms of `window.POOL_2D`: explicit padding (10 or 11 inputs) and implicit
padding (7 or 8)."""

from __future__ import annotations

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.validation import OperationView, validator
from nnconv.nnapi.operations.window import POOL_2D, PoolExplicitSlot, window_level


@validator(OperationType.AVERAGE_POOL_2D, OperationType.MAX_POOL_2D)
def validate_pooling(view: OperationView, feature_level: int) -> int:
    """Pooling.cpp: the output of the input's type (validation.SAME_TYPE_OUTPUT), positive strides and filter sizes,
    and (prepare) each explicit padding smaller than the filter along its axis; an NCHW layout flag needs
    feature level 3. Pooling.cpp's signatures: 7 or 8 inputs (implicit padding), 10 or 11 (explicit)."""
    n = len(view.in_operands)
    if n not in (7, 8, 10, 11):
        raise view.refuse(f"takes 7 or 8 inputs (implicit padding) or 10 or 11 (explicit padding), got {n}")
    if view.input(0) is None:
        raise view.refuse("input 0 is required")
    needed = window_level(view, POOL_2D)  # the scalars' types first: the checks below compare their values
    slots = POOL_2D.form(n, view.type_at)
    for slot in (slots.STRIDE_WIDTH, slots.STRIDE_HEIGHT, slots.FILTER_WIDTH, slots.FILTER_HEIGHT):
        v = view.scalar(slot)
        if v is not None and v < 1:
            raise view.refuse(f"{view.describe(slot)} is {v}, it must be positive")
    if slots is PoolExplicitSlot:
        s = PoolExplicitSlot
        for pad, size in ((s.PADDING_LEFT, s.FILTER_WIDTH), (s.PADDING_RIGHT, s.FILTER_WIDTH),
                          (s.PADDING_TOP, s.FILTER_HEIGHT), (s.PADDING_BOTTOM, s.FILTER_HEIGHT)):
            p, f = view.scalar(pad), view.scalar(size)
            if p is not None and f is not None and not p < f:
                raise view.refuse(f"{view.describe(pad)} {p} is not smaller than {view.describe(size)} {f}")
    return needed


@validator(OperationType.L2_POOL_2D)
def validate_l2_pool_2d(view: OperationView, feature_level: int) -> int:
    """L2_POOL_2D takes float tensors only."""
    x = view.input(PoolExplicitSlot.INPUT)
    if x is not None and not x.type.is_float:
        raise view.refuse(f"{view.describe(PoolExplicitSlot.INPUT)} is {x.type.name}; L2_POOL_2D takes float "
                          "tensors only")
    return validate_pooling(view, feature_level)
