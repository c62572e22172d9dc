"""The windowed operations' signatures (nnconv/nnapi/operations/window.py): which form an operand list uses,
what it parses to, the rules' operand order, and what the validators refuse with them."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations import OperationRefused, OperationView, validate_operation
from nnconv.nnapi.operations.slots import slot_operands
from nnconv.nnapi.operations.window import (CONV_2D, DEPTHWISE_CONV_2D, POOL_2D, ConvExplicitSlot, PoolImplicitSlot,
                                            WindowSignature)

I, B = OperandType.INT32, OperandType.BOOL


@pytest.mark.parametrize("signature,types,explicit", [
    (CONV_2D, [I] * 7, False),  # 3 tensors + scheme, strides, activation
    (CONV_2D, [I] * 7 + [B, I, I], False),  # 10 inputs, slot 7 the NCHW BOOL: implicit with dilation
    (CONV_2D, [I] * 10, True),  # 10 inputs, slot 7 an INT32 stride: explicit
    (CONV_2D, [I] * 10 + [B, I, I], True),
    (DEPTHWISE_CONV_2D, [I] * 8 + [B, I, I], False),
    (DEPTHWISE_CONV_2D, [I] * 11, True),
    (POOL_2D, [I] * 8, False),
    (POOL_2D, [I] * 10, True),
])
def test_the_form_is_decided_by_count_then_slot_type(signature: WindowSignature, types, explicit) -> None:
    assert signature.is_explicit(len(types), lambda slot: types[slot]) is explicit


def test_parse_names_every_scalar() -> None:
    values = {3: 1, 4: 2, 5: 0, 6: 3, 7: 2, 8: 1, 9: 4, 10: 3, 11: True, 12: 2, 13: 5}  # explicit, NCHW, dilation
    wp = DEPTHWISE_CONV_2D.parse(14, lambda s: I if s != 11 else B, values.__getitem__,
                                 lambda s, d: values.get(s, d))
    assert (wp.explicit, wp.pad_left, wp.pad_right, wp.pad_top, wp.pad_bottom) == (True, 1, 2, 0, 3)
    assert (wp.stride_w, wp.stride_h, wp.depth_multiplier, wp.activation) == (2, 1, 4, 3)
    assert (wp.nchw, wp.dilation_w, wp.dilation_h, wp.padding_scheme) == (True, 2, 5, None)
    values = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 0}  # pooling, implicit, NHWC
    wp = POOL_2D.parse(7, lambda s: I, values.__getitem__, lambda s, d: values.get(s, d))
    assert (wp.explicit, wp.padding_scheme, wp.stride_w, wp.stride_h, wp.filter_w, wp.filter_h, wp.nchw) == \
        (False, 1, 2, 3, 4, 5, False)


def test_operands_are_ordered_by_slot_and_refuse_gaps() -> None:
    s = PoolImplicitSlot
    by_slot = {s.ACTIVATION: 16, s.INPUT: 10, s.PADDING_SCHEME: 11, s.STRIDE_WIDTH: 12, s.STRIDE_HEIGHT: 13,
               s.FILTER_WIDTH: 14, s.FILTER_HEIGHT: 15}
    assert slot_operands(by_slot) == [10, 11, 12, 13, 14, 15, 16]
    del by_slot[s.STRIDE_HEIGHT]
    with pytest.raises(ValueError, match=r"\[3\]"):
        slot_operands(by_slot)


def _conv(scalars: list[tuple[object, OperandType]]):
    mb = ModelBuilder()
    g = mb.main
    x = g.add_tensor(OperandType.TENSOR_FLOAT32, (1, 5, 5, 2))
    w = g.add_constant(OperandType.TENSOR_FLOAT32, np.zeros((3, 3, 3, 2), np.float32))
    b = g.add_constant(OperandType.TENSOR_FLOAT32, np.zeros(3, np.float32))
    y = g.add_tensor(OperandType.TENSOR_FLOAT32, (1, 5, 5, 3))
    g.add_operation(OperationType.CONV_2D, [x, w, b, *(g.add_scalar(v, t) for v, t in scalars)], [y])
    g.set_io([x], [y])
    model = mb.finish()
    return OperationView.of(model, 0, model.main.operations[0])


def test_the_validator_checks_the_forms_scalar_types_and_levels() -> None:
    implicit = [(1, I), (1, I), (1, I), (0, I)]
    assert validate_operation(_conv(implicit), 1) == 1
    with_layout = implicit + [(False, B)]
    assert validate_operation(_conv(with_layout), 3) == 3  # the NCHW flag: feature level 3 (Conv2D.cpp)
    with pytest.raises(OperationRefused, match="NNAPI feature level 3"):
        validate_operation(_conv(with_layout), 2)
    bad_stride = [(0, I)] * 4 + [(1, I), (True, B), (0, I)] + [(False, B)]  # 11 inputs: explicit, stride_h a BOOL
    with pytest.raises(OperationRefused, match=rf"input {int(ConvExplicitSlot.STRIDE_HEIGHT)} \(stride_height\) is "
                                               "BOOL, the explicit-padding form takes INT32"):
        validate_operation(_conv(bad_stride), 8)
