"""The prepared conversion (nnconv/pipeline.py): one model, read and converted once, for every command."""

from __future__ import annotations

import pathlib

import pytest

import nnconv
import nnconv.pipeline as pipeline
import nnconv.parity.verify as parity_verify
from nnconv.errors import ConversionError
from nnconv.lowering.convert import ConversionOptions
from nnconv.targets import Target

MODELS = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"


@pytest.fixture
def counted(monkeypatch):
    """Counts model reads, rewrite states (with the options they got) and hybrid-model scans."""
    calls: dict[str, list] = {"read": [], "state": [], "hybrid": []}
    real_read, real_state, real_hybrid = pipeline.read_model, pipeline.make_state, parity_verify.has_hybrid_ops

    def read(source):
        calls["read"].append(source)
        return real_read(source)

    def state(model, level, options=None):
        calls["state"].append(options)
        return real_state(model, level, options)

    def hybrid(model):
        calls["hybrid"].append(model)
        return real_hybrid(model)
    monkeypatch.setattr(pipeline, "read_model", read)
    monkeypatch.setattr(pipeline, "make_state", state)
    monkeypatch.setattr(parity_verify, "has_hybrid_ops", hybrid)
    return calls


def test_partition_wise_verify_reads_and_converts_once_with_the_users_options(counted):
    from nnconv.parity.partitioned import verify_model
    options = ConversionOptions(fold_dynamic_range_weights=True, target=Target.NNCONV)
    report = verify_model(str(MODELS / "custom_op_middle.tflite"), 30, options)
    assert report.passed and len(report.partitions) == 2  # type: ignore[attr-defined]
    assert len(counted["read"]) == 1 and counted["state"] == [options] and len(counted["hybrid"]) == 1


def test_whole_model_verify_reads_and_converts_once(counted):
    from nnconv.parity.partitioned import verify_model
    options = ConversionOptions(target=Target.NNCONV)
    assert verify_model(str(MODELS / "mobilenet_v2_dynamic_range.tflite"), 30, options).passed
    assert len(counted["read"]) == 1 and len(counted["state"]) == 1 and len(counted["hybrid"]) == 1


def test_a_prepared_conversion_keeps_each_stage():
    prepared = nnconv.prepare(str(MODELS / "custom_op_middle.tflite"), 30, ConversionOptions(target=Target.NNCONV))
    assert prepared.report is prepared.report
    assert prepared.plan() is prepared.plan() and prepared.partial() is prepared.plan()
    with pytest.raises(ConversionError, match="cannot be lowered at API 30"):
        prepared.whole()
    lowered = prepared.lowered(allow_partial=True, prefer_whole=True)
    assert lowered.whole is None and "cannot be lowered" in lowered.refusal and len(lowered.models) == 2
    whole = nnconv.prepare(str(MODELS / "mobilenet_v2_float.tflite"), 29, ConversionOptions(target=Target.NNCONV))
    assert whole.whole() is whole.whole() and whole.lowered(allow_partial=False).models == [whole.whole().converted]
    assert whole.lowered(allow_partial=True).plan is not None  # convert --allow-partial always writes a plan


def test_prepare_takes_a_path_bytes_or_a_read_model():
    data = (MODELS / "mobilenet_v2_float.tflite").read_bytes()
    from_bytes = nnconv.prepare(data, 30)
    assert from_bytes.source == data
    again = nnconv.prepare(from_bytes.model, 29)
    assert again.model is from_bytes.model and again.api_level == 29
    assert [r.status for r in again.report.ops] == [r.status for r in nnconv.check_model(data, 29).ops]


FIXTURE_MODELS = sorted((pathlib.Path(__file__).resolve().parent.parent / "examples" / "models").glob("*.tflite"))


@pytest.mark.parametrize("path", FIXTURE_MODELS, ids=lambda p: p.stem)
def test_a_conversion_moved_to_another_level_reports_what_a_fresh_one_does(path):
    # `check --api-level all` rewrites a model once and moves it across the levels (`at_level`), sharing the
    # checks already made: it must report exactly what a conversion prepared at each level reports.
    from nnconv.nnapi.levels import ALL_API_LEVELS
    from nnconv.report.analysis import ModelCheck, report_json
    options = ConversionOptions(target=Target.NNCONV)  # nnconv's rewrite state is what is shared
    moved = pipeline.prepare(str(path), ALL_API_LEVELS[-1], options)
    for level in ALL_API_LEVELS:
        fresh = pipeline.prepare(str(path), level, options)
        here = moved.at_level(level)
        assert here.state.model is moved.state.model and here.state.memo is moved.state.memo
        assert (report_json(ModelCheck(str(path), here.report, here.plan(lower=False)))
                == report_json(ModelCheck(str(path), fresh.report, fresh.plan(lower=False))))
