"""ATAN2 lowering: a range-reduced polynomial of elementwise NNAPI operations; parity with TFLite's std::atan2
in every octant, on the axes and at the origin; refusals (TFLite's kernel does not broadcast)."""

from __future__ import annotations

import numpy as np
import pytest

from harness import assert_parity, assert_refused, nnconv_options, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.schema_enums import BuiltinOperator as B


def atan2_model(y_shape=(4, 25), x_shape=(4, 25), dtype=np.float32):
    out = tuple(np.broadcast_shapes(y_shape, x_shape))
    return single_op_model(B.ATAN2, [("y", y_shape, dtype), ("x", x_shape, dtype)], [("z", out, dtype)])


def _octants_and_axes(feed: dict) -> dict:
    rng = np.random.default_rng(5)
    out = {}
    for name, v in feed.items():
        a = rng.normal(0, 3, v.shape) * rng.choice([1e-3, 1, 1e3], v.shape)
        a = np.where(rng.random(v.shape) < 0.15, 0.0, a)  # the axes and the origin
        out[name] = a.astype(np.float32)
    diag = rng.random(out["y"].shape) < 0.1  # |y| == |x|: the diagonals
    out["y"] = np.where(diag, np.abs(out["x"]) * rng.choice([-1, 1], out["y"].shape), out["y"]).astype(np.float32)
    return out


@pytest.mark.parametrize("shape", [(4, 25), (2, 3, 5, 7), (9,)])
def test_atan2_parity(shape):
    m = atan2_model(shape, shape)
    assert_parity(m, api_level=29, input_fn=_octants_and_axes)
    assert_parity(m, api_level=30, input_fn=_octants_and_axes)


def test_atan2_error_is_far_inside_the_policy():
    """The documented bound: within 3e-7 rad of std::atan2 over a dense sweep of angles and magnitudes."""
    import nnconv
    from nnconv.parity.tflite_runner import TfliteRunner
    from nnconv.runtime.executor import Executor
    angles = np.linspace(-np.pi, np.pi, 4001)
    radius = np.geomspace(1e-3, 1e3, 4001)
    y, x = (radius * np.sin(angles)).astype(np.float32), (radius * np.cos(angles)).astype(np.float32)
    m = atan2_model((4001,), (4001,))
    converted = nnconv.convert(m, api_level=29, options=nnconv_options()).converted
    ours = list(Executor(converted).run({"y": y, "x": x}).values())[0]
    runner = TfliteRunner(m)
    idx = {d["name"]: d["index"] for d in runner.input_details()}
    theirs = list(runner.run({idx["y"]: y, idx["x"]: x}).values())[0]
    assert np.max(np.abs(ours - theirs)) <= 3e-7


def test_atan2_refusals():
    assert_refused(atan2_model(), 28, Code.API_LEVEL, min_api_level=29)
    assert_refused(atan2_model(dtype=np.int32), 30, Code.DTYPE)
    assert_refused(atan2_model((2, 3), (3,)), 30, Code.MALFORMED)
