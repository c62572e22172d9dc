"""The README's project-layout table matches the tree: every path it names exists, and every package and
top-level module of nnconv/ is named by a row."""

from __future__ import annotations

import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _layout_paths() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Project layout", 1)[1].split("\n## ", 1)[0]
    return [p for row in table.splitlines() if row.startswith("| `")
            for p in re.findall(r"`([^`]+)`", row.split("|")[1])]


def test_every_path_of_the_layout_table_exists():
    paths = _layout_paths()
    assert len(paths) > 10
    missing = [p for p in paths if not (ROOT / p).exists()]
    assert not missing, f"README layout names paths that do not exist: {missing}"


def test_every_package_and_top_level_module_is_in_the_layout_table():
    named = {p.rstrip("/") for p in _layout_paths()}
    package = ROOT / "nnconv"
    entries = [f"nnconv/{p.name}" for p in package.iterdir()
               if (p.is_dir() and (p / "__init__.py").exists()) or (p.suffix == ".py" and not p.name.startswith("__"))]
    unnamed = sorted(e for e in entries if e not in named)
    assert not unnamed, f"README layout table does not name: {unnamed}"
