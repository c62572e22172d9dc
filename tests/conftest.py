"""Shared fixtures: the parity harness used by every lowering test."""

from __future__ import annotations

import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent

sys.path.insert(0, str(ROOT / "tests"))


@pytest.fixture(autouse=True)
def _no_inherited_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI sizes its output by COLUMNS (then 160 columns for pipes); pytest-xdist workers inherit
    COLUMNS=80, so tests that want a width set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)
