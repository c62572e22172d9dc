"""Operators whose tensors or options do not fit their kind are refused with NNC028, never a crash."""

from __future__ import annotations

import numpy as np

from harness import assert_refused
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.options import AddOptions
from nnconv.tflite.schema_enums import BuiltinOperator


def test_conv_without_options_is_refused_as_malformed():
    b = TfliteBuilder()
    x = b.input("x", (1, 5, 6, 3), np.float32)
    w = b.const("w", np.ones((2, 3, 3, 3), np.float32))
    y = b.tensor("y", (1, 3, 4, 2), np.float32)
    b.op(BuiltinOperator.CONV_2D, [x, w], [y], None)
    b.output(y)
    assert_refused(b.finish(), 30, Code.MALFORMED)


def test_conv_with_options_of_another_op_is_refused_as_malformed():
    b = TfliteBuilder()
    x = b.input("x", (1, 5, 6, 3), np.float32)
    w = b.const("w", np.ones((2, 3, 3, 3), np.float32))
    y = b.tensor("y", (1, 3, 4, 2), np.float32)
    b.op(BuiltinOperator.CONV_2D, [x, w], [y], AddOptions())
    b.output(y)
    assert_refused(b.finish(), 30, Code.MALFORMED)
