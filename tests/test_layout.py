"""The README's project-layout table matches the tree: every path it names exists, and every package and
top-level module of nnconv/ is named by a row. No machine paths; no table of NNAPI operations outside the
operation specs; docs/adding_an_op.md names the files a new operation touches and the pattern tables."""

from __future__ import annotations

import itertools
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


def _operation_tables() -> dict[str, str]:
    """Module-level tables of NNAPI operations (assignments naming `OperationType` members, read with ast) outside
    the per-operation kernels and rules: {table name: the module's path}."""
    import ast
    found = {}
    for path in (ROOT / "nnconv").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(("nnconv/runtime/kernels/", "nnconv/lowering/rules/")):
            continue
        tree = ast.parse(path.read_text())
        aliases = {"OperationType"}
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom):
                aliases |= {a.asname for a in n.names if a.name == "OperationType" and a.asname}
            elif isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id == "OperationType":
                aliases |= {t.id for t in n.targets if isinstance(t, ast.Name)}
        for n in tree.body:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []
            value = getattr(n, "value", None)
            if value is None or isinstance(value, ast.Name):
                continue
            if any(isinstance(x, ast.Attribute) and isinstance(x.value, ast.Name) and x.value.id in aliases
                   for x in ast.walk(value)):
                found.update({t.id: rel for t in targets if isinstance(t, ast.Name)})
    return found


# Tables of operations that are not facts of one operation but of a pattern several operations form, and so
# cannot live in one operation's spec (each is named in docs/adding_an_op.md).
PATTERN_TABLES = {
    "EPILOGUE_PRODUCERS": "the producers the executor's fused epilogue kernels finish an activation on",
    "FUSED_TYPES": "every operation some fused step of the executor matches (its patterns' members)",
    "CONV_REQUANTIZING": "the quantized operations whose kernels requantize through the call's conv requantization, "
                         "which verify's TFLite-arithmetic rerun hands TFLite's multipliers",
}


def test_no_table_of_operations_lives_outside_the_specs():
    # Issue 36: one NNAPI operation's facts live in its `OperationSpec` (nnconv/nnapi/operations/); a table
    # naming operations elsewhere (a set of byte operations, of same-type outputs, a batch rule per operation)
    # is a second place to keep in step. Views derived from the specs name no operation and are not found.
    tables = _operation_tables()
    assert set(PATTERN_TABLES) <= set(tables), "the scan no longer finds what it looks for"
    outside = sorted(f"{name} ({where})" for name, where in tables.items() if name not in PATTERN_TABLES)
    assert not outside, ("tables of NNAPI operations outside the specs (make them a field of OperationSpec, or a "
                         f"view derived from SPECS): {outside}")


def test_adding_an_op_says_which_files_a_new_nnapi_operation_touches():
    # Issue 36: an NNAPI operation with a kernel, a validator and a rule, documented, touches at most five
    # files, which docs/adding_an_op.md lists: the spec's family module, the kernel and its import line, the
    # rule, docs/ops.md. (That nothing else names operations is `test_no_table_of_operations_lives_outside_
    # the_specs`; that the registries are complete, tests/test_registry.py.)
    doc = (ROOT / "docs" / "adding_an_op.md").read_text()
    table = doc.split("### The files a new NNAPI operation touches", 1)[1].split("\n| file |", 1)[1]
    rows = itertools.takewhile(lambda line: line.startswith("|"), table.splitlines()[2:])  # after the header
    files = [re.findall(r"`([^`]+)`", row.split("|")[1])[0] for row in rows]
    assert files == ["nnconv/nnapi/operations/<family>.py", "nnconv/runtime/kernels/<operation>.py",
                     "nnconv/runtime/kernels/__init__.py", "nnconv/lowering/rules/<family>.py", "docs/ops.md"]
    assert all((ROOT / f.split("<")[0]).exists() for f in files)


def test_adding_an_op_names_every_pattern_table():
    doc = (ROOT / "docs" / "adding_an_op.md").read_text()
    missing = sorted(t for t in PATTERN_TABLES if f"`{t}`" not in doc)
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
