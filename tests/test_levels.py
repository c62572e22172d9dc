"""`ApiLevel`: the one parser of --api-level / --feature-level, the default, the feature-level mapping, NNAPI's
deprecation, and API 32 (Android 12L), which is reported as 32 but decides every rule as 31."""

from __future__ import annotations

import pathlib

import pytest

from nnconv.pipeline import check_model, convert
from nnconv.nnapi.levels import ALL_API_LEVELS, DEFAULT_API_LEVEL, ApiLevel, LevelError, is_all, rule_level

FIXTURES = sorted((pathlib.Path(__file__).resolve().parent.parent / "examples" / "models").glob("*.tflite"))


@pytest.mark.parametrize("api,fl", [(27, 1), (28, 2), (29, 3), (30, 4), (31, 5), (32, 5), (33, 6), (34, 7),
                                    (35, 8)])
def test_every_level_has_its_feature_level(api, fl):
    assert ApiLevel.parse(str(api)).feature_level == fl


@pytest.mark.parametrize("fl,api", [(1, 27), (4, 30), (5, 31), (6, 33), (8, 35)])
def test_a_feature_level_targets_the_first_api_level_that_ships_it(fl, api):
    assert ApiLevel.resolve(None, fl) == api


def test_default_is_30_and_32_stays_32():
    assert ApiLevel.resolve() == DEFAULT_API_LEVEL == 30
    level = ApiLevel.resolve("32")
    assert (int(level), str(level), level.rule_level) == (32, "32", 31)
    assert [rule_level(lv) for lv in ALL_API_LEVELS] == [27, 28, 29, 30, 31, 31, 33, 34, 35]


@pytest.mark.parametrize("bad", ["26", "36", "abc", "", "30.5"])
def test_a_bad_level_lists_every_valid_level_including_32(bad):
    with pytest.raises(LevelError, match="27, 28, 29, 30, 31, 32, 33, 34, 35"):
        ApiLevel.parse(bad)


def test_both_options_and_a_bad_feature_level_are_refused():
    with pytest.raises(LevelError, match="not both"):
        ApiLevel.resolve("30", 4)
    with pytest.raises(LevelError, match="9 is not one of 1, 2, 3, 4, 5, 6, 7, 8"):
        ApiLevel.resolve(None, 9)


def test_deprecation_from_35_only():
    assert [lv for lv in ALL_API_LEVELS if ApiLevel(lv).deprecation_warning()] == [35]
    assert "deprecated" in ApiLevel(35).deprecation_warning()


def test_all_is_recognised_in_any_case():
    assert is_all("all") and is_all(" ALL ") and not is_all("30") and not is_all(None)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.stem)
def test_api_32_decides_every_op_as_31(path):
    at31, at32 = check_model(str(path), 31), check_model(str(path), 32)
    assert at32.api_level == 32 and at31.api_level == 31
    assert [(r.status, r.min_api_level, r.nnapi_ops, [d.one_line() for d in r.diagnostics]) for r in at32.ops] == \
        [(r.status, r.min_api_level, r.nnapi_ops, [d.one_line() for d in r.diagnostics]) for r in at31.ops]
    assert all(r.min_api_level != 32 for r in at32.ops)


def test_api_32_converts_to_the_same_operations_as_31():
    model = next(p for p in FIXTURES if p.stem == "mobilenet_v2_float")
    m31, _ = convert(str(model), 31)
    m32, _ = convert(str(model), 32)
    assert m32.api_level == 32
    assert m32.model.main.operations == m31.model.main.operations
    assert m32.model.main.operands == m31.model.main.operands
