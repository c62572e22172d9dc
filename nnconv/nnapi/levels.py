"""The Android API level a conversion targets: parsing (`--api-level`, `--feature-level`), the default, the
NNAPI feature level of each level, and the deprecation of NNAPI. The one place that knows these facts: the
CLI, the report and the lowering all go through `ApiLevel`.

Android 12L (API 32) shipped no new NNAPI: it shares feature level 5 with Android 12 (API 31). nnconv
accepts 32 and reports it as 32, while every rule decides exactly as at 31 (`ApiLevel.rule_level`), so
the lowest API level that accepts an op is never 32. From Android 13 the NDK's feature-level constants
(1000006..) no longer equal an API level; the API level stays the user-facing number (33, 34, 35).
"""

from __future__ import annotations

from typing import SupportsInt

# Every level a user may target, and the levels at which NNAPI changed (32 adds nothing to 31): the
# lowest accepting level of an op is searched among the latter.
ALL_API_LEVELS: tuple[int, ...] = (27, 28, 29, 30, 31, 32, 33, 34, 35)
API_LEVELS: tuple[int, ...] = (27, 28, 29, 30, 31, 33, 34, 35)
MIN_API_LEVEL = 27
MAX_API_LEVEL = 35
DEFAULT_API_LEVEL = 30
DEPRECATED_FROM_API = 35  # Android 15 deprecates NNAPI
RELAX_FP16_MIN_API = 28  # relaxComputationFloat32toFloat16 exists from NNAPI 1.1 (Android 9, API 28)

_API_TO_FEATURE_LEVEL = {27: 1, 28: 2, 29: 3, 30: 4, 31: 5, 32: 5, 33: 6, 34: 7, 35: 8}
_FEATURE_LEVEL_TO_API = {1: 27, 2: 28, 3: 29, 4: 30, 5: 31, 6: 33, 7: 34, 8: 35}
MIN_FEATURE_LEVEL = _API_TO_FEATURE_LEVEL[MIN_API_LEVEL]
MAX_FEATURE_LEVEL = _API_TO_FEATURE_LEVEL[MAX_API_LEVEL]  # a model file without a level runs at this one


class LevelError(ValueError):
    """A level outside the accepted ones, or both options given; the message names the value and lists every
    valid one (callers add the option's name)."""


def valid_levels_text() -> str:
    """'27, 28, 29, 30, 31, 32, 33, 34, 35'."""
    return ", ".join(map(str, ALL_API_LEVELS))


class ApiLevel(int):
    """An Android API level NNAPI targets (27..35). An `int`, so comparisons and JSON stay plain numbers."""

    def __new__(cls, value: int) -> "ApiLevel":
        if isinstance(value, bool) or int(value) not in _API_TO_FEATURE_LEVEL:
            raise LevelError(f"{value} is not one of {valid_levels_text()}")
        return super().__new__(cls, int(value))

    @classmethod
    def of(cls, value: SupportsInt) -> "ApiLevel":
        """`value` as an ApiLevel: itself when it is one already (the command line parses every level into
        one, and it travels unchanged to the rules), else checked (a library caller's plain number)."""
        return value if isinstance(value, ApiLevel) else cls(int(value))

    @classmethod
    def parse(cls, text: str | int) -> "ApiLevel":
        """An `--api-level` value: a number ('all', the table of every level, is the caller's: `is_all`)."""
        try:
            value = int(str(text).strip())
        except ValueError:
            raise LevelError(f"{text!r} is not one of {valid_levels_text()}") from None
        return cls(value)

    @classmethod
    def of_feature_level(cls, fl: int) -> "ApiLevel":
        """The first Android API level that ships NNAPI feature level `fl` (1..8)."""
        if isinstance(fl, bool) or fl not in _FEATURE_LEVEL_TO_API:
            raise LevelError(f"{fl} is not one of {', '.join(map(str, _FEATURE_LEVEL_TO_API))}")
        return cls(_FEATURE_LEVEL_TO_API[fl])

    @classmethod
    def resolve(cls, api_level: str | int | None = None, feature_level: int | None = None) -> "ApiLevel":
        """The target from `--api-level` or `--feature-level` (at most one of them), else the default."""
        if api_level is not None and feature_level is not None:
            raise LevelError("give --api-level or --feature-level, not both")
        if feature_level is not None:
            return cls.of_feature_level(feature_level)
        return cls(DEFAULT_API_LEVEL) if api_level is None else cls.parse(api_level)

    @property
    def feature_level(self) -> int:
        """The NNAPI feature level (1..8) of this API level."""
        return _API_TO_FEATURE_LEVEL[int(self)]

    @property
    def rule_level(self) -> "ApiLevel":
        """The level the lowering rules decide at: 32 decides as 31 (the same feature level)."""
        return ApiLevel(rule_level(self))

    @property
    def deprecated(self) -> bool:
        return self >= DEPRECATED_FROM_API

    def deprecation_warning(self) -> str | None:
        """The warning every command prints for a level where NNAPI is deprecated (None before)."""
        if not self.deprecated:
            return None
        return (f"NNAPI is deprecated from Android 15 (API {DEPRECATED_FROM_API}); consider LiteRT's GPU or "
                "vendor delegates for new apps")

    def __repr__(self) -> str:
        return f"ApiLevel({int(self)})"

    def __str__(self) -> str:
        return str(int(self))


def is_all(api_level: str | int | None) -> bool:
    """Whether an `--api-level` value asks for the table of every level."""
    return isinstance(api_level, str) and api_level.strip().lower() == "all"


def rule_level(api_level: int) -> int:
    """The level the lowering rules decide at for a target `api_level` (32 -> 31, otherwise itself)."""
    return _FEATURE_LEVEL_TO_API.get(_API_TO_FEATURE_LEVEL.get(api_level, 0), api_level)


def feature_level(api_level: int) -> int:
    """NNAPI feature level (1..8) of an Android API level (27..35)."""
    return ApiLevel(api_level).feature_level


def api_level_of_feature_level(fl: int) -> int:
    """The first Android API level that ships NNAPI feature level `fl` (1..8)."""
    return int(ApiLevel.of_feature_level(fl))
