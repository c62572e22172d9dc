"""Every recording of TFLite's own NNAPI delegate (`tests/data/delegate/`, a copy of `shared/delegate/` beside
the repository) reproduced by `--target delegate`: at each of the 8 recorded API levels, every node verdict
and the delegate's own failure messages, the delegated partitions, the outcome, and each partition's NNAPI
model operand for operand (types, dims, scales, zero points, per-channel scales, constant bytes by FNV-1a 64),
operation for operation, with its inputs, outputs and relaxComputationFloat32toFloat16.

A model TFLite itself refuses to load (`model_load_failed`) must be refused by our reader too (exit 2); one it
loads but cannot prepare (`cpu_prepare_failed`) may be refused by the reader or reported as such."""

from __future__ import annotations

import pytest

from nnconv.delegate.graph import DelegateGraph
from nnconv.delegate.plan import plan_delegation
from nnconv.delegate.setup import DelegateSetup
from nnconv.errors import ModelFormatError
from nnconv.tflite.reader import read_model

from recordings import compare_level, recordings

RECORDINGS = recordings()


def test_every_recording_is_here() -> None:
    assert len(RECORDINGS) == 340 and {r.set for r in RECORDINGS} == {"examples", "tests", "ops"}


@pytest.mark.parametrize("rec", RECORDINGS, ids=[r.name for r in RECORDINGS])
def test_recording_reproduced(rec) -> None:
    assert rec.current(), f"{rec.model} changed since it was recorded (sha256 differs)"
    outcomes = {lv["outcome"] for lv in rec.levels()}
    try:
        model = read_model(str(rec.model))
    except ModelFormatError:
        # nnconv refuses the file as bad input: right when TFLite cannot load or prepare it either
        assert outcomes <= {"model_load_failed", "cpu_prepare_failed"}, f"TFLite reads it ({outcomes})"
        return
    assert outcomes != {"model_load_failed"}, "TFLite refuses to load this file, nnconv reads it"
    graph = DelegateGraph(model)
    problems = []
    for lv in rec.levels():
        plan = plan_delegation(graph, DelegateSetup(lv["level"]))
        problems += [f"API {lv['level']}: {p}" for p in compare_level(lv, plan).all()]
    assert not problems, "\n".join(problems[:12])
