"""Consistency of the registries: every NNAPI operation has one spec and one kernel, every NNAPI op a rule can
emit has a kernel, and docs/ops.md is what the registries say."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import pytest

from nnconv.lowering import rules as _rules  # noqa: F401  (registers every rule)
from nnconv.lowering.registry import CUSTOM_RULES, RULES
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.levels import API_LEVELS, feature_level
from nnconv.nnapi.operations import SPECS, SampleAxis, operation_level
from nnconv.pipeline import prepare
from nnconv.report.ops_doc import ops_markdown
from nnconv.runtime.kernels import KERNELS

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_nnapi_operation_has_one_spec_and_one_kernel():
    # The spec (nnapi/operations/) holds an operation's facts; its kernel (runtime/kernels/, a later stage)
    # registers against the spec's operation type.
    assert [op.name for op in OperationType if op not in SPECS] == []
    assert all(op is spec.op for op, spec in SPECS.items())
    assert sorted(op.name for op in set(SPECS) ^ set(KERNELS)) == []


def test_spec_levels_follow_the_ndk_codes():
    # The NDK numbers operations in the order NNAPI introduced them: the feature level never decreases with
    # the code (what the code ranges of `OperationType.min_feature_level` used to say).
    levels = [SPECS[op].level for op in sorted(OperationType)]
    assert levels == sorted(levels) and set(levels) <= set(range(1, 9))
    assert {op: SPECS[op].level for op in (OperationType.TRANSPOSE, OperationType.ABS, OperationType.QUANTIZED_LSTM,
                                           OperationType.PACK, OperationType.REVERSE)} == {
        OperationType.TRANSPOSE: 2, OperationType.ABS: 3, OperationType.QUANTIZED_LSTM: 4, OperationType.PACK: 6,
        OperationType.REVERSE: 7}


def test_every_spec_names_its_operand_slots():
    # Named slots for every operand: an IntEnum of the inputs, or a windowed operation's two forms.
    unnamed = sorted(op.name for op, spec in SPECS.items() if (spec.inputs is None) == (spec.window is None))
    assert not unnamed, f"specs without named input slots (or with both forms): {unnamed}"
    for spec in SPECS.values():
        for slots in (spec.inputs, spec.outputs):
            assert slots is None or [int(s) for s in slots] == list(range(len(slots))), (spec.op.name, slots)


def test_every_sample_axis_kind_has_a_batch_rule():
    from nnconv.runtime.sample_axis import RULES as BATCH_RULES
    assert set(BATCH_RULES) == set(SampleAxis)


def test_int8_shiftable_ops_are_declared_by_their_rules():
    # TFLite's NNAPI delegate carries these ops' int8 tensors as uint8 + 128 below API 30 (NeedInt8Conversion);
    # each rule says so itself (`Rule.int8_shiftable`), not a list beside the rules.
    from nnconv.tflite.schema_enums import BuiltinOperator as B
    shiftable = {B(k).name for k, rule in RULES.items() if rule.int8_shiftable}
    assert {"ADD", "CONV_2D", "SQUARED_DIFFERENCE", "REVERSE_V2", "RELU_N1_TO_1", "SELECT"} <= shiftable
    assert not {"DIV", "L2_POOL_2D", "REDUCE_ANY", "SELECT_V2", "LOG_SOFTMAX"} & shiftable
    assert not any(rule.int8_shiftable for rule in CUSTOM_RULES.values())


def test_every_emitted_nnapi_op_has_a_kernel():
    missing = sorted({f"{type(rule).__name__} -> {op.name}" for rule in [*RULES.values(), *CUSTOM_RULES.values()]
                      for op in rule.nnapi_ops if op not in KERNELS})
    assert not missing, "rules can emit NNAPI ops without a kernel: " + ", ".join(missing)


def test_every_rule_declares_what_it_emits_and_documents_its_slots():
    for rule in [*RULES.values(), *CUSTOM_RULES.values()]:
        assert rule.nnapi_ops or rule.becomes_constant, f"{type(rule).__name__} declares no nnapi_ops"
        assert (type(rule).__doc__ or "").strip(), f"{type(rule).__name__} has no docstring"
        assert 27 <= rule.min_api_level <= 35


def test_ops_doc_matches_registry():
    doc = ROOT / "docs" / "ops.md"
    assert doc.exists(), "docs/ops.md is missing: run `nnconv ops --format md > docs/ops.md`"
    assert doc.read_text() == ops_markdown(), "docs/ops.md is stale: run `nnconv ops --format md > docs/ops.md`"


def _modules_below(package: str) -> set[str]:
    """Every module below a package's folder that registers something (a rule, kernel, operation spec or fold)."""
    root = ROOT / pathlib.Path(*package.split("."))
    found = set()
    for path in root.rglob("*.py"):
        if not any(mark in path.read_text() for mark in ("@kernel(", "@lowering_rule(", "@custom_rule(", "@operation(",
                                                         "\ndeclare(", "@fold(")):
            continue
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found.add(".".join(parts))
    return found


@pytest.mark.parametrize("package", ["nnconv.lowering.rules", "nnconv.runtime.kernels", "nnconv.nnapi.operations",
                                     "nnconv.rewrite.folds"])
def test_every_module_of_a_registry_folder_is_imported_by_its_package(package):
    # Registration is an explicit import list (no discovery by name): a module left out of it would
    # silently drop its rules or kernels. Importing the package must import every module of its folder.
    # A fresh interpreter, so modules other tests imported directly cannot hide an omission.
    code = f"import sys, {package}; print(' '.join(sorted(m for m in sys.modules if m.startswith('{package}'))))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    missing = sorted(_modules_below(package) - set(run.stdout.split()))
    assert not missing, f"not imported by {package.replace('.', '/')}/__init__.py (add them to its import list): {missing}"


def test_a_rule_declares_no_lowest_level_before_any_of_its_nnapi_ops_exists():
    # At its `min_api_level` a rule must be able to emit at least one of its declared NNAPI ops: the spec
    # introduced each at its spec's level (`OperationSpec.level`). (What a lowering emits at a given level is
    # checked op by op on every rule test, tests/harness.py, and on the fixtures below.)
    too_early = sorted(f"{type(rule).__name__}: min API {rule.min_api_level}, but none of "
                       f"{[op.name for op in rule.nnapi_ops]} exists before feature level "
                       f"{min(operation_level(op) for op in rule.nnapi_ops)}"
                       for rule in [*RULES.values(), *CUSTOM_RULES.values()] if rule.nnapi_ops
                       and min(operation_level(op) for op in rule.nnapi_ops) > feature_level(rule.min_api_level))
    assert not too_early, "; ".join(too_early)


FIXTURES = sorted((ROOT / "examples" / "models").glob("*.tflite"))


@pytest.mark.parametrize("level", API_LEVELS)
def test_fixture_models_emit_only_what_their_rules_declare(level):
    # Every partition nnconv lowers from the fixture models: each NNAPI operation is declared by the rule of
    # its TFLite op and exists at the target level. (tests/harness.py checks the same on every rule test.)
    from harness import nnconv_options, undeclared_emissions
    problems = []
    for path in FIXTURES:
        prepared = prepare(str(path), level, nnconv_options())
        for converted in prepared.plan(lower=True).converted:
            problems += [f"{path.stem}: {p}" for p in undeclared_emissions(prepared.state.model, converted, level)]
    assert not problems, "; ".join(problems)


def test_every_rule_names_the_fold_registered_for_its_op():
    # The folds live in the rewrite stage (it runs before the lowering and imports nothing of it), keyed by
    # op; the rule of each op names the same Fold, so what one op does can be read from its rule.
    from nnconv.rewrite.folds import FOLDS
    from nnconv.tflite.schema_enums import BuiltinOperator as B
    wrong = sorted(f"{type(rule).__name__}: fold {rule.fold} but FOLDS has {FOLDS.get(rule.op)}"
                   for rule in RULES.values() if rule.fold is not FOLDS.get(rule.op))
    assert not wrong, "; ".join(wrong)
    assert FOLDS[B.RESHAPE].data_movement and not FOLDS[B.ADD].data_movement and FOLDS[B.SHAPE].shape_only
