"""The zoo's regression fixtures (tests/data/zoo/, made by scripts/make_model_zoo.py) lower whole at API 30
thanks to the rewrite stage, say so in the report, and match TFLite."""

from __future__ import annotations

import pathlib

import pytest

from harness import assert_parity, nnconv_options
from nnconv.pipeline import check_model

ZOO = pathlib.Path(__file__).resolve().parent.parent / "data" / "zoo"
EXPECTED_REWRITE = {"repeat_idioms.float32.tflite": "merge-axes", "simple_rnn.float32.tflite": "list-set-item",
                    "conv1d_dilated.float32.tflite": "static-shapes", "causal_attention.int8.tflite": "static-shapes"}


@pytest.mark.parametrize("name", sorted(EXPECTED_REWRITE))
def test_zoo_fixture_lowers_whole_with_its_rewrite(name):
    data = (ZOO / name).read_bytes()
    report = check_model(data, 30, nnconv_options())
    assert report.ok, [(r.op, r.reason) for r in report.ops if not r.supported]
    assert any(EXPECTED_REWRITE[name] in note for r in report.ops for note in r.notes)
    assert_parity(data, api_level=30)
