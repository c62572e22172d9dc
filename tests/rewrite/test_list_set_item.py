"""A lowered TensorListSetItem (CONCATENATION of L[0:i], item, L[i+1:]) as SELECT_V2 of one row
(nnconv/rewrite/list_set_item.py): parity with TFLite for every step index, the report, and look-alikes
that are left alone."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_parity, assert_refused, nnconv_options
from nnconv.pipeline import check_model
from nnconv.lowering.diagnostics import Code, Verdict
from nnconv.tflite.options import AddOptions, ConcatenationOptions, ReshapeOptions, SliceOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

I32 = np.int32
N, ROW = 5, (1, 4)
TYPES = {"float32": (np.float32, None), "int8": (np.int8, QuantParams(0.05, -3))}


def list_write_model(dtype: str = "float32", plus: int = 1) -> bytes:
    """TensorFlow's lowered `L.write(i, item)` with the step index `i` a model input (inside a WHILE body it
    is the loop counter). `plus` != 1 breaks the identity (the tail then starts elsewhere)."""
    np_dtype, q = TYPES[dtype]
    b = TfliteBuilder()
    lst = b.input("list", (N,) + ROW, np_dtype, quant=q)
    item = b.input("item", (1,) + ROW, np_dtype, quant=q)
    i = b.input("i", (), I32)
    j = b.tensor("j", (), I32)
    b.op(B.ADD, [i, b.const("one", np.array(plus, I32))], [j], AddOptions())
    dyn = (-1, -1, -1)
    i1 = b.tensor("i1", (1,), I32)
    b.op(B.RESHAPE, [i, b.const("s1", np.array([1], I32))], [i1], ReshapeOptions())
    size = b.tensor("size", (3,), I32)
    b.op(B.CONCATENATION, [i1, b.const("m1", np.array([-1, -1], I32))], [size], ConcatenationOptions(axis=0))
    head = b.tensor("head", (1, 1, 1), np_dtype, quant=q, shape_signature=dyn)
    b.op(B.SLICE, [lst, b.const("z", np.array([0, 0, 0], I32)), size], [head], SliceOptions())
    j1 = b.tensor("j1", (1,), I32)
    b.op(B.RESHAPE, [j, b.const("s2", np.array([1], I32))], [j1], ReshapeOptions())
    begin = b.tensor("begin", (3,), I32)
    b.op(B.CONCATENATION, [j1, b.const("z2", np.array([0, 0], I32))], [begin], ConcatenationOptions(axis=0))
    tail = b.tensor("tail", (1, 1, 1), np_dtype, quant=q, shape_signature=dyn)
    b.op(B.SLICE, [lst, begin, b.const("m3", np.array([-1, -1, -1], I32))], [tail], SliceOptions())
    out = b.tensor("out", (N,) + ROW, np_dtype, quant=q)
    b.op(B.CONCATENATION, [head, item, tail], [out], ConcatenationOptions(axis=0))
    b.output(out, j)
    return b.finish()


def _inputs(dtype: str, step: int) -> dict:
    rng = np.random.default_rng(step)
    np_dtype, q = TYPES[dtype]
    if q is None:
        values = [rng.normal(size=(N,) + ROW), rng.normal(size=(1,) + ROW)]
    else:
        values = [rng.integers(-128, 128, (N,) + ROW), rng.integers(-128, 128, (1,) + ROW)]
    return {"list": values[0].astype(np_dtype), "item": values[1].astype(np_dtype), "i": np.array(step, I32)}


@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("step", range(N))
def test_list_write_is_a_row_select(dtype, step):
    result = assert_parity(list_write_model(dtype), api_level=30, inputs=_inputs(dtype, step))
    emitted = {op.type.name for op in result.converted.model.main.operations}
    assert "SELECT" in emitted and "SLICE" not in emitted


def test_report_says_which_ops_the_rewrite_removed():
    report = check_model(list_write_model(), 30, nnconv_options())
    assert report.ok
    by_op = {r.index: r for r in report.ops}
    assert by_op[1].op == "RESHAPE" and "EQUAL" in by_op[1].notes[0]
    assert [by_op[k].status for k in (2, 3, 4, 5, 6)] == [Verdict.FOLDED] * 5
    assert all("removed" in by_op[k].notes[0] for k in (2, 3, 4, 5, 6))
    assert "SELECT_V2" in by_op[7].notes[0]


def test_tail_not_after_the_written_row_is_left_alone():
    """With L[i+2:] as the tail the concatenation is not a row write: nothing is rewritten."""
    m = list_write_model(plus=2)
    assert not any(r.notes for r in check_model(m, 30, nnconv_options()).ops)
    assert_refused(m, 30, Code.NON_CONSTANT)
