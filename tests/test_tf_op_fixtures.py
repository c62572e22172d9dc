"""Single ops as TensorFlow's converter writes them (tests/data/zoo, built by scripts/make_op_fixtures.py):
each lowers whole from its lowest API level, matches TFLite there and at API 30, and the rewrites that made
it lowerable say so."""

from __future__ import annotations

import pathlib

import pytest

from harness import assert_parity, nnconv_options
from nnconv.parity.tflite_runner import REFERENCE_KERNELS
from nnconv.pipeline import check_model

ZOO = pathlib.Path(__file__).resolve().parent / "data" / "zoo"
# fixture -> (lowest API level that takes it whole, a rewrite its report must name or "")
FIXTURES = {
    "log_softmax.int8.tflite": (29, ""),  # int8 LOG_SOFTMAX through float
    "cumsum.int8.tflite": (29, ""),  # DEQUANTIZE -> CUMSUM (exclusive, reverse) -> QUANTIZE
    "floor_mod.int8.tflite": (29, ""),  # DEQUANTIZE -> float FLOOR_MOD -> QUANTIZE
    "atan2.int8.tflite": (29, ""),  # DEQUANTIZE -> ATAN2 -> QUANTIZE
    "gather_int64.float32.tflite": (29, "int64-indices"),  # tf.gather(x, tf.cast(f, tf.int64))
    "if_computed.float32.tflite": (30, ""),  # tf.cond on a computed predicate
    "while_data.float32.tflite": (30, ""),  # tf.while_loop with a data-dependent trip count
    "unidirectional_rnn.float32.tflite": (28, "output-shapes"),  # undeclared output shape
    # `x - mean` whose SUB output feeds DEQUANTIZE -> FLOOR -> QUANTIZE and an int8 ABS: two byte-table steps
    # read it (run failed: "QUANTIZE reads operand 41 (sub), which has no value", tests/kernels/test_fusion_release.py)
    "x_minus_mean.int8.tflite": (29, ""),
}

# Compared with TFLite's reference kernels (0 LSB), as `verify` does when they explain more: the optimized
# int8 ADD / MUL that compute the divisor round 1 LSB differently, and FLOOR_MOD's discontinuity at
# multiples of the divisor turns that into up to 3 LSB of the output.
AGAINST_REFERENCE_KERNELS = {"floor_mod.int8.tflite"}


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_tf_op_fixture_lowers_whole_and_matches_tflite(name):
    data = (ZOO / name).read_bytes()
    lowest, rewrite = FIXTURES[name]
    below = check_model(data, lowest - 1, nnconv_options())
    assert not below.ok, f"{name} lowers whole at API {lowest - 1} already: update FIXTURES"
    for level in sorted({lowest, 30}):
        report = check_model(data, level, nnconv_options())
        assert report.ok, [(r.op, r.reason) for r in report.ops if not r.supported]
        if rewrite:
            assert any(rewrite in note for r in report.ops for note in r.notes)
        if name in AGAINST_REFERENCE_KERNELS:
            assert_parity(data, api_level=level, kernels=REFERENCE_KERNELS)
        else:
            assert_parity(data, api_level=level)
