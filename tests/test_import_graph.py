"""The package's import graph follows the flow of a conversion: no module imports a later stage (counting
every import, inside functions and under TYPE_CHECKING too), so stages cannot form a cycle, and the imports
that run at import time form no cycle between modules. Read from the source (ast).

The stages, earliest first (a module may import its own stage and earlier ones):
  base     errors.py, guarded_decoder.py, version.py, parallel.py: what every stage uses (errors, bounded
           flatbuffers access, the version, running a function over models in processes)
  tflite   read: the .tflite reader, IR, options, our builder
  nnapi    the NNAPI IR the lowering writes (HAL Model, builder, validator, serializer, C emitter), the
           API levels, NNAPI's quantization arithmetic and what the runtime accepts per operation
           (operations/: each family's validate/prepare-time rules, which the kernels import)
  rewrite  TFLite IR -> TFLite IR before lowering
  lowering check/lower: rules, diagnostics, the partition plan; pipeline.py, the prepared conversion
  runtime  the numpy executor and its kernels
  parity   TFLite interpreter vs executor
  report   the check report and the ops table
  devices  device profiles, `check --device` (a device's verdicts and partition plan) and the phone probe
  tools    conformance.py (the CTS vectors through the executor), inspection.py
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
                   "limits": "base", "npz": "base", "safe_write": "base",
                   "pipeline": "lowering", "conformance": "tools", "inspection": "tools",
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


def _import_nodes(tree: ast.Module, at_import_time: bool) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement, or (`at_import_time`) those that run when the module is imported: not inside a
    function or under `if TYPE_CHECKING`."""
    if not at_import_time:
        return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for n in body:
            if isinstance(n, (ast.Import, ast.ImportFrom)):
                found.append(n)
            elif isinstance(n, ast.If) and not (isinstance(n.test, ast.Name) and n.test.id == "TYPE_CHECKING"):
                visit(n.body)
                visit(n.orelse)
            elif isinstance(n, ast.Try):
                visit(n.body)
                visit(n.orelse)
                visit(n.finalbody)
                for handler in n.handlers:
                    visit(handler.body)
    visit(tree.body)
    return found


def imports_of(path: pathlib.Path, modules: set[str], at_import_time: bool = False) -> set[str]:
    """The nnconv modules `path` imports (`from a.b import c` counts as a.b.c when that is a module)."""
    found = set()
    for node in _import_nodes(ast.parse(path.read_text(), str(path)), at_import_time):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in modules else node.module)
    return {m for m in found if m == "nnconv" or m.startswith("nnconv.")}


def import_graph(at_import_time: bool = False) -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: imports_of(p, set(files), at_import_time) - {m} for m, p in files.items()}


def test_every_module_has_a_stage():
    for module in import_graph():
        stage_of(module)


def test_no_module_imports_a_later_stage():
    graph = import_graph()
    back = {(m, d) for m, deps in graph.items() for d in deps
            if STAGES.index(stage_of(d)) > STAGES.index(stage_of(m))}
    assert not back, "imports of a later stage: " + "; ".join(
        f"{m} ({stage_of(m)}) -> {d} ({stage_of(d)})" for m, d in sorted(back))


def test_no_import_cycle():
    # Cycles between stages are excluded by the stage order (every import counts there, lazy ones too).
    # Within a stage, the imports that run at import time must not form a cycle: a module may defer one
    # import into a function (a registry's package that its members' helpers use lazily), never depend
    # circularly on being half-initialised.
    graph = import_graph(at_import_time=True)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
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
    assert not cycles, f"import cycles: {cycles}"


def test_the_graph_is_read_from_the_source():
    # The test would pass vacuously if nothing were found: the lowering must be seen importing the NNAPI IR.
    graph = import_graph()
    assert "nnconv.nnapi.model" in graph["nnconv.lowering.context"] | graph["nnconv.lowering.convert"]
    assert len(graph) > 150
