"""Issue 36: one verify prepares the model once and builds one executor per model and kernel set, which every
comparison that runs that model reuses (parity/executors.py). Counted by wrapping `Executor` construction."""

from __future__ import annotations

import collections
import pathlib

import pytest

from chain_models import shifted
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.enums import OperationType
from nnconv.parity.session import VerifyOptions, verify
from nnconv.runtime.executor import Executor
from nnconv.targets import Target

MODELS = pathlib.Path(__file__).resolve().parents[2] / "examples" / "models"


@pytest.fixture
def built(monkeypatch):
    """Every executor built: (the model it runs, what it computes with)."""
    found = []
    real = Executor.__init__

    def counting(self, model, trace=None, *args, **options):
        tflite_way = options.get("replacements") is not None
        found.append((id(model), bool(options.get("relaxed_fp16")), trace is not None, tflite_way))
        real(self, model, trace, *args, **options)
    monkeypatch.setattr(Executor, "__init__", counting)
    return found


def _per_model(built: list) -> dict[int, list]:
    models = collections.defaultdict(list)
    for model, *kernel_set in built:
        models[model].append(tuple(kernel_set))
    return models


def test_a_failing_verify_builds_each_executor_once(built):
    """An int8 output off by an LSB is compared with TFLite's builtin kernels, its reference kernels, then
    computed TFLite's way, diagnosed, compared op by op twice (builtin and reference kernels) and simulated
    relaxed: the whole model gets one executor per kernel set (plain and traced), every op alone one too."""
    faulty = {OperationType.FULLY_CONNECTED: shifted(OperationType.FULLY_CONNECTED, 1)}
    report = verify(str(MODELS / "mobilenet_v2_int8.tflite"),
                    VerifyOptions(per_op=True, relax_fp16=True, executor_options={"kernel_overrides": faulty}))
    assert not report.passed and report.relaxed is not None and report.per_op.first_divergent is not None
    per_model = _per_model(built)
    assert all(len(sets) == len(set(sets)) for sets in per_model.values()), per_model
    whole = max(per_model.values(), key=len)
    # (relaxed fp16, traced, TFLite's arithmetic)
    assert sorted(whole) == sorted([(False, False, False), (False, False, True), (False, True, False),
                                    (True, False, False), (True, True, False)])


@pytest.mark.parametrize("name,options", [
    ("mobilenet_v2_float.tflite", {}),
    ("mobilenet_v3_int8.tflite", {"per_op": True}),
    ("efficientnet_se_float.tflite", {"per_op": True, "relax_fp16": True,
                                      "conversion": ConversionOptions(target=Target.NNCONV)}),
    ("custom_op_middle.tflite", {"per_op": True}),  # the delegate's partitions
])
def test_no_model_gets_two_executors_of_one_kernel_set(built, name, options):
    verify(str(MODELS / name), VerifyOptions(**options))
    per_model = _per_model(built)
    assert per_model and all(len(sets) == len(set(sets)) for sets in per_model.values()), per_model
