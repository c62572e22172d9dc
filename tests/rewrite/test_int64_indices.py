"""int64 index tensors carried as int32 (nnconv/rewrite/int64_indices.py): a model input or a CAST read only
as GATHER indices lowers and matches TFLite; the report names the rewrite; an int64 tensor read
otherwise is left alone and refused."""

from __future__ import annotations

import numpy as np
import pytest

from harness import TfliteBuilder, assert_parity, assert_refused, nnconv_options
from nnconv.lowering.diagnostics import Code
from nnconv.pipeline import check_model
from nnconv.tflite.options import CastOptions, GatherOptions, MulOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

PARAMS = (3, 8, 5)


def gather_of_input() -> bytes:
    """tf.gather(x, i, axis=1) with int64 indices `i` a model input."""
    b = TfliteBuilder()
    x = b.input("x", PARAMS, np.float32)
    i = b.input("i", (6,), np.int64)
    y = b.tensor("y", (3, 6, 5), np.float32)
    b.op(B.GATHER, [x, i], [y], GatherOptions(axis=1))
    b.output(y)
    return b.finish()


def gather_of_cast(also_output: bool = False) -> bytes:
    """tf.gather(x, tf.cast(f * 2, tf.int64), axis=1): float positions cast to int64 indices."""
    b = TfliteBuilder()
    x = b.input("x", PARAMS, np.float32)
    f = b.input("f", (6,), np.float32)
    doubled = b.tensor("doubled", (6,), np.float32)
    b.op(B.MUL, [f, b.const("two", np.array([2.0], np.float32))], [doubled], MulOptions())
    i = b.tensor("i", (6,), np.int64)
    b.op(B.CAST, [doubled], [i], CastOptions())
    y = b.tensor("y", (3, 6, 5), np.float32)
    b.op(B.GATHER, [x, i], [y], GatherOptions(axis=1))
    b.output(y, *((i,) if also_output else ()))
    return b.finish()


def _valid_indices(feed: dict) -> dict:
    rng = np.random.default_rng(3)
    out = dict(feed)
    if "i" in feed:
        out["i"] = rng.integers(0, PARAMS[1], feed["i"].shape).astype(np.int64)
    if "f" in feed:  # positions in [0, 4), cast truncates to 0..7
        out["f"] = rng.uniform(0.0, 3.99, feed["f"].shape).astype(np.float32)
    return out


@pytest.mark.parametrize("api", [29, 30])
@pytest.mark.parametrize("model", [gather_of_input(), gather_of_cast()], ids=["input", "cast"])
def test_int64_indices_lower_as_int32(model, api):
    assert_parity(model, api_level=api, input_fn=_valid_indices)
    report = check_model(model, api, nnconv_options())
    assert report.ok
    notes = [n for r in report.ops for n in r.notes if "int64-indices" in n]
    assert len(notes) == (2 if b"doubled" in model else 1), notes


def test_int64_read_otherwise_is_left_alone():
    """The cast's int64 result is also a model output: not only an index, so it keeps int64 and CAST is
    refused (NNAPI has no 64-bit integer operand)."""
    m = gather_of_cast(also_output=True)
    assert_refused(m, 30, Code.DTYPE)
    report = check_model(m, 30, nnconv_options())
    assert not any("int64-indices" in n for r in report.ops for n in r.notes)
