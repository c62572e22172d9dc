"""A short seeded run of the mutation fuzzer (tests/fuzzing.py; the long run is `scripts/fuzz.py`): every
mutated .tflite / .nnapi / .npz ends in a documented outcome (docs/errors.md), and check agrees with
convert. Bounded by its number of cases (about half a minute of one core), never by the clock: the same
mutants run on a fast or a loaded machine."""

from __future__ import annotations

import random

import numpy as np

from fuzz_seeds import SEEDS
from fuzzing import bad_npz_kinds, fuzz, mutate, structure_offsets, tflite_data_spans

CASES = 300


def test_seeds_cover_every_reader_path():
    from nnconv.tflite.reader import read_model
    from nnconv.tflite.schema_enums import BuiltinOperator
    models = {s.name: read_model(s.build()) for s in SEEDS}
    ops = {op.builtin_code for m in models.values() for sg in m.subgraphs for op in sg.operators}
    tensors = [t for m in models.values() for sg in m.subgraphs for t in sg.tensors]
    assert {BuiltinOperator.WHILE, BuiltinOperator.IF, BuiltinOperator.DENSIFY, BuiltinOperator.DEQUANTIZE,
            BuiltinOperator.CUSTOM} <= ops
    assert any(t.sparsity is not None for t in tensors)
    assert any(t.quantization.is_per_channel for t in tensors)
    assert any(t.is_variable for t in tensors)
    assert any(m.signature_defs for m in models.values())
    assert any(t.type.name == "FLOAT16" and t.is_constant for t in tensors)


def test_mutations_are_seeded_and_change_the_structure():
    data = SEEDS[0].build()
    structure = structure_offsets(len(data), tflite_data_spans(data))
    rng_a, rng_b = random.Random(7), random.Random(7)
    a = [mutate(data, rng_a, structure) for _ in range(5)]
    b = [mutate(data, rng_b, structure) for _ in range(5)]
    assert a == b and any(m != data for m, _ in a)
    assert len(bad_npz_kinds({"x": np.zeros(3, np.float32)})) >= 15


def test_fuzz_outcomes_are_documented_and_check_agrees_with_convert():
    tally = fuzz(seed=12, max_cases=CASES)
    assert tally.cases == CASES
    assert not tally.findings, "\n".join(f"{f.case}: {f.what}: {f.detail}" for f in tally.findings[:10])
    # the run reached every command and both error and success outcomes
    for command in ("check", "convert", "run"):
        assert tally.exits[(command, 0)] and tally.exits[(command, 2)], sorted(tally.exits.items())
