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


MACHINE_PATH = re.compile(r"(?<![\w.~-])/(?:work|tmp|home|root|Users)/")


def test_no_machine_path_in_the_package_docs_or_scripts():
    # A path of the machine the code was written on means nothing on another: name the folder (DIR,
    # MODELS_DIR) or the upstream source instead.
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    for folder in ("nnconv", "scripts", "benchmarks", "examples"):
        files += (ROOT / folder).rglob("*.py")
    assert len(files) > 200
    found = [f"{p.relative_to(ROOT)}:{n}: {line.strip()}" for p in files
             for n, line in enumerate(p.read_text().splitlines(), 1) if MACHINE_PATH.search(line)]
    assert not found, "machine paths:\n" + "\n".join(found)


def _operation_tables() -> set[str]:
    """Module-level tables of NNAPI operations outside the per-operation kernels and rules (read with ast):
    the places a new operation may have to be added to."""
    import ast
    found = set()
    for path in (ROOT / "nnconv").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("nnconv/runtime/kernels/", "nnconv/lowering/rules/")):
            continue
        tree = ast.parse(path.read_text())
        aliases = {"OperationType"} | {t.id for n in tree.body if isinstance(n, ast.Assign)
                                       and isinstance(n.value, ast.Name) and n.value.id == "OperationType"
                                       for t in n.targets if isinstance(t, ast.Name)}
        for n in tree.body:
            if isinstance(n, ast.Assign) and not isinstance(n.value, ast.Name) and any(
                    isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name) and x.value.id in aliases
                    for x in ast.walk(n.value)):
                found.update(t.id for t in n.targets if isinstance(t, ast.Name))
    return found


def test_adding_an_op_names_every_table_of_operations():
    doc = (ROOT / "docs" / "adding_an_op.md").read_text()
    tables = _operation_tables()
    assert {"SAME_TYPE_OUTPUT", "BYTE_OPS", "_CONTROL_FLOW"} <= tables  # the scan finds what it looks for
    missing = sorted(t for t in tables if f"`{t}`" not in doc)
    assert not missing, f"docs/adding_an_op.md does not name these tables of NNAPI operations: {missing}"


def test_the_suite_needs_nothing_outside_the_repository():
    """Issue 35: the README says the tests need nothing outside the repository, yet 4 of them read reference
    documents from ../shared and skipped without it; those documents are in tests/data/seeds now."""
    outside = ("shared" + "_dir", "NNCONV_" + "SHARED_DIR", "../" + "shared", '/ "' + 'shared"')
    offenders = [p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("*.py")
                 if p.name != "test_layout.py" and any(word in p.read_text(encoding="utf-8") for word in outside)]
    assert not offenders, offenders
    assert {p.name for p in (ROOT / "tests" / "data" / "seeds").glob("*.txt")} == {
        "tflite_schema.fbs.txt", "ndk_neuralnetworks_page.txt"}
