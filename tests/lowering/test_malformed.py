"""Operators whose tensors or options do not fit their kind are refused with NNC028, never a crash; an exception
of a rule's own making is an internal error (exit 4), never blamed on the model."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from harness import assert_refused, nnconv_options
from nnconv.cli import main
from nnconv.errors import EXIT_INTERNAL, InternalError
from nnconv.pipeline import check_model
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import RULES
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.options import AddOptions, Conv2DOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding


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


def _conv_model() -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (1, 5, 6, 3), np.float32)
    w = b.const("w", np.ones((2, 3, 3, 3), np.float32))
    y = b.tensor("y", (1, 3, 4, 2), np.float32)
    b.op(BuiltinOperator.CONV_2D, [x, w], [y], Conv2DOptions(padding=Padding.VALID, stride_w=1, stride_h=1))
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("bug", [AttributeError("'Tensor' object has no attribute 'shap'"), TypeError("bad"),
                                 KeyError(3), ValueError("x")], ids=lambda e: type(e).__name__)
def test_a_bug_in_a_rule_check_is_an_internal_error_not_a_malformed_model(monkeypatch, tmp_path, bug):
    # A rule whose check raises on a well-formed op: our bug (exit 4, "please report"), never "re-export it".
    rule = RULES[int(BuiltinOperator.CONV_2D)]

    def broken_check(c):
        raise bug
    monkeypatch.setattr(rule, "check", broken_check)
    with pytest.raises(InternalError, match="please report"):
        check_model(_conv_model(), 30, nnconv_options())
    path = tmp_path / "conv.tflite"
    path.write_bytes(_conv_model())
    result = CliRunner().invoke(main, ["check", str(path), "--target", "nnconv"])
    assert result.exit_code == EXIT_INTERNAL
    assert "please report" in result.stderr and "re-export" not in result.stderr and "Traceback" not in result.stderr


def test_an_op_with_fewer_outputs_than_its_kind_is_malformed():
    b = TfliteBuilder()
    x = b.input("x", (4, 6), np.float32)
    y = b.tensor("y", (4, 6), np.float32)
    b.op(BuiltinOperator.TANH, [x], [])  # no output: the rule's c.output(0) finds none
    b.op(BuiltinOperator.RELU, [x], [y])
    b.output(y)
    report = check_model(b.finish(), 30, nnconv_options())
    assert report.ops[0].diagnostics[0].code == Code.MALFORMED
    assert "fewer tensors than its kind" in report.ops[0].diagnostics[0].message
