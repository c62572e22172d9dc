"""Every fixture model at every API level 27..35: when `convert --allow-partial` succeeds, the written
.nnapi file runs (every partition, seeded random inputs) on our executor. A model `convert` writes must never
be one its own executor refuses (nnconv/nnapi/quant_limits.py; the rewrite stage)."""

from __future__ import annotations

import pathlib

import pytest

from nnconv.errors import ConversionError
from nnconv.pipeline import convert_partial
from nnconv.rewrite.state import ConversionOptions
from nnconv.targets import Target
from nnconv.nnapi import serialize
from nnconv.nnapi.levels import API_LEVELS
from nnconv.parity import random_inputs
from nnconv.runtime.executor import Executor

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = sorted([*ROOT.glob("examples/models/*.tflite"), *ROOT.glob("tests/data/zoo/*.tflite")])


def test_fixtures_present():
    names = [p.name for p in FIXTURES]
    assert "mobilenet_v2_int8.tflite" in names and "repeat_idioms.float32.tflite" in names, names


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_converted_partitions_run_at_every_level(path: pathlib.Path, tmp_path: pathlib.Path):
    converted_levels = 0
    for level in API_LEVELS:
        try:
            plan = convert_partial(str(path), level, ConversionOptions(target=Target.NNCONV))
        except ConversionError:
            continue  # `convert --allow-partial` exits 3: nothing is written
        out = tmp_path / f"{level}.nnapi"
        serialize.save(str(out), plan.converted, plan=plan.to_json())
        for k, part in enumerate(serialize.load(str(out)).partitions):
            outputs = Executor(part).run(random_inputs(part.inputs, seed=level))
            assert len(outputs) == len(part.outputs), f"API {level} partition {k}"
        converted_levels += 1
    assert converted_levels > 0, "no level converts any op"
