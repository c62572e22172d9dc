"""The package's import graph follows the flow of a conversion: no module imports a later stage (counting
every import, inside functions and under TYPE_CHECKING too), so stages cannot form a cycle, and the imports
that can run (at import time or inside a function) form no cycle between modules. Read from the source (ast).

The stages, earliest first (a module may import its own stage and earlier ones):
  base     errors.py, guarded_decoder.py, version.py, parallel.py, targets.py: what every stage uses (errors,
           bounded flatbuffers access, the version, running a function over models in processes, the targets)
  tflite   read: the .tflite reader, IR, options, our builder
  nnapi    the NNAPI IR the lowering writes (HAL Model, builder, validator, serializer, C emitter), the
           API levels, NNAPI's quantization arithmetic and what the runtime accepts per operation
           (operations/: each family's validate/prepare-time rules, which the kernels import)
  rewrite  TFLite IR -> TFLite IR before lowering
  lowering check/lower, per target: nnconv's rules, diagnostics, the partition plan; the delegate target
           (delegate/: TFLite's NNAPI delegate reproduced); pipeline.py, the prepared conversion
  runtime  the numpy executor and its kernels
  parity   TFLite interpreter vs executor
  report   the check report and the ops table
  devices  device profiles, `check --device` (a device's verdicts and partition plan) and the phone probe
  tools    conformance.py (the CTS vectors through the executor), inspection.py, retarget/ (`nnconv rewrite`: the
           rewrite stage's steps kept when the delegate target takes more, proven on TFLite's interpreter)
  cli      the command line; the package root (`nnconv/__init__`, the Python API) and `__main__`
The NNAPI IR precedes the lowering because the lowering emits it; its validator and serializer run after
the lowering in time but import nothing of it.
"""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "nnconv"

STAGES = ("base", "tflite", "nnapi", "rewrite", "lowering", "runtime", "parity", "report", "devices", "tools", "cli")
TOP_LEVEL_STAGE = {"errors": "base", "guarded_decoder": "base", "version": "base", "parallel": "base", "fmt": "base",
                   "limits": "base", "npz": "base", "safe_write": "base", "targets": "base",
                   "delegate": "lowering",
                   "pipeline": "lowering", "conformance": "tools", "inspection": "tools", "retarget": "tools",
                   "__init__": "cli", "__main__": "cli"}

def module_name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def stage_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "cli"  # the package root
    top = parts[1]
    if top in STAGES:
        return top
    if top in TOP_LEVEL_STAGE:
        return TOP_LEVEL_STAGE[top]
    raise AssertionError(f"{module}: no stage; add it to STAGES or TOP_LEVEL_STAGE in this test")


def _is_type_checking(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def _import_nodes(tree: ast.Module, executed: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, or (`executed`) those that can run: at import time or inside a function (a
    lazy import), not under `if TYPE_CHECKING`, which only a type checker reads."""
    if not executed:
        return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif not _is_type_checking(node):
            for child in ast.iter_child_nodes(node):
                visit(child)
    visit(tree)
    return found


def imports_of(path: pathlib.Path, modules: set[str], executed: bool = False) -> set[str]:
    """The nnconv modules `path` imports (`from a.b import c` counts as a.b.c when that is a module)."""
    found = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path)), executed):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in modules else node.module)
    return {m for m in found if m == "nnconv" or m.startswith("nnconv.")}


def import_graph(executed: bool = False) -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: imports_of(p, set(files), executed) - {m} for m, p in files.items()}


def test_every_module_has_a_stage():
    for module in import_graph():
        stage_of(module)


def test_no_module_imports_a_later_stage():
    graph = import_graph()
    back = {(m, d) for m, deps in graph.items() for d in deps
            if STAGES.index(stage_of(d)) > STAGES.index(stage_of(m))}
    assert not back, "imports of a later stage: " + "; ".join(
        f"{m} ({stage_of(m)}) -> {d} ({stage_of(d)})" for m, d in sorted(back))


def cycles_in(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle():
    # Cycles between stages are excluded by the stage order. Within a stage, no cycle either, lazy imports
    # (inside a function) included: a rule importing the driver that imports the rules is a cycle even when
    # it is deferred to call time (the driver hands such a rule what it needs through the context instead).
    # Imports under `if TYPE_CHECKING` are annotations only and never run.
    cycles = cycles_in(import_graph(executed=True))
    assert not cycles, f"import cycles: {cycles}"


def test_a_lazy_import_cycle_is_found(tmp_path):
    # The detector itself: a cycle closed by an import inside a function is reported, one under
    # TYPE_CHECKING is not.
    (tmp_path / "driver.py").write_text("import nnconv.rules\n")
    (tmp_path / "rules.py").write_text("def lower():\n    from nnconv.driver import run\n")
    (tmp_path / "typed.py").write_text("import typing\nif typing.TYPE_CHECKING:\n    pass\n"
                                       "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                                       "    import nnconv.driver\n")
    modules = {"nnconv.driver", "nnconv.rules", "nnconv.typed"}
    graph = {f"nnconv.{n}": imports_of(tmp_path / f"{n}.py", modules, executed=True)
             for n in ("driver", "rules", "typed")}
    graph["nnconv.driver"].add("nnconv.typed")
    assert cycles_in(graph) == [["nnconv.driver", "nnconv.rules"]]


def test_the_graph_is_read_from_the_source():
    # The test would pass vacuously if nothing were found: the lowering must be seen importing the NNAPI IR.
    graph = import_graph()
    assert "nnconv.nnapi.model" in graph["nnconv.lowering.context"] | graph["nnconv.lowering.convert"]
    assert len(graph) > 150
