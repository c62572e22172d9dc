"""The 2-D poolings AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D, with the validate/prepare-time rules of
Pooling.cpp of the NNAPI reference operations, for both forms of `window.POOL_2D`: explicit padding (10 or 11
inputs) and implicit padding (7 or 8)."""

from __future__ import annotations

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.spec import SampleAxis, operation
from nnconv.nnapi.operations.view import OperationView
from nnconv.nnapi.operations.window import POOL_2D, PoolExplicitSlot, window_level

# The output has the input's type and quantization; each sample pools alone.
_POOL = dict(level=1, window=POOL_2D, same_type_output=True, sample_axis=SampleAxis.FIRST_ONLY)


@operation(OperationType.AVERAGE_POOL_2D, **_POOL)
@operation(OperationType.MAX_POOL_2D, float_batched=True, **_POOL)
def validate_pooling(view: OperationView, feature_level: int) -> int:
    """Pooling.cpp: the output of the input's type (`same_type_output`), positive strides and filter sizes,
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


@operation(OperationType.L2_POOL_2D, **_POOL)
def validate_l2_pool_2d(view: OperationView, feature_level: int) -> int:
    """L2_POOL_2D takes float tensors only."""
    x = view.input(PoolExplicitSlot.INPUT)
    if x is not None and not x.type.is_float:
        raise view.refuse(f"{view.describe(PoolExplicitSlot.INPUT)} is {x.type.name}; L2_POOL_2D takes float "
                          "tensors only")
    return validate_pooling(view, feature_level)
