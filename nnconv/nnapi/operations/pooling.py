"""Validate/prepare-time rules of AVERAGE_POOL_2D, MAX_POOL_2D and L2_POOL_2D (Pooling.cpp of the NNAPI
reference operations), for both signatures: explicit padding (10 or 11 inputs) and implicit padding (7 or 8)."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.validation import OperationView, validator


class ExplicitPoolSlot(IntEnum):
    """The explicit-padding signature; NCHW from feature level 3."""
    INPUT = 0
    PADDING_LEFT = 1
    PADDING_RIGHT = 2
    PADDING_TOP = 3
    PADDING_BOTTOM = 4
    STRIDE_WIDTH = 5
    STRIDE_HEIGHT = 6
    FILTER_WIDTH = 7
    FILTER_HEIGHT = 8
    ACTIVATION = 9
    NCHW = 10


class ImplicitPoolSlot(IntEnum):
    """The implicit-padding signature (a padding scheme, SAME or VALID); NCHW from feature level 3."""
    INPUT = 0
    PADDING_SCHEME = 1
    STRIDE_WIDTH = 2
    STRIDE_HEIGHT = 3
    FILTER_WIDTH = 4
    FILTER_HEIGHT = 5
    ACTIVATION = 6
    NCHW = 7


def pool_slots(num_inputs: int) -> type[ExplicitPoolSlot] | type[ImplicitPoolSlot]:
    """The signature a pooling operation with `num_inputs` inputs uses."""
    return ExplicitPoolSlot if num_inputs >= 10 else ImplicitPoolSlot


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
    slots = pool_slots(n)
    for slot in (slots.STRIDE_WIDTH, slots.STRIDE_HEIGHT, slots.FILTER_WIDTH, slots.FILTER_HEIGHT):
        v = view.scalar(slot)
        if v is not None and v < 1:
            raise view.refuse(f"{view.describe(slot)} is {v}, it must be positive")
    if slots is ExplicitPoolSlot:
        s = ExplicitPoolSlot
        for pad, size in ((s.PADDING_LEFT, s.FILTER_WIDTH), (s.PADDING_RIGHT, s.FILTER_WIDTH),
                          (s.PADDING_TOP, s.FILTER_HEIGHT), (s.PADDING_BOTTOM, s.FILTER_HEIGHT)):
            p, f = view.scalar(pad), view.scalar(size)
            if p is not None and f is not None and not p < f:
                raise view.refuse(f"{view.describe(pad)} {p} is not smaller than {view.describe(size)} {f}")
    return 3 if view.input(slots.NCHW) is not None else 1


@validator(OperationType.L2_POOL_2D)
def validate_l2_pool_2d(view: OperationView, feature_level: int) -> int:
    """L2_POOL_2D takes float tensors only."""
    x = view.input(ExplicitPoolSlot.INPUT)
    if x is not None and not x.type.is_float:
        raise view.refuse(f"{view.describe(ExplicitPoolSlot.INPUT)} is {x.type.name}; L2_POOL_2D takes float "
                          "tensors only")
    return validate_pooling(view, feature_level)
