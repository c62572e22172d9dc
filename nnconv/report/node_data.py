"""Model Explorer node-data overlays (`check --node-data`, `verify --per-op --node-data`).

The file is one graph's custom node data in the format of ai-edge-model-explorer's `GraphNodeData`
(`model_explorer.node_data_builder`): `{"name", "results": {key: {"value", "bgColor"}}, "thresholds"}`.
A key may be any output tensor name of a node; we key each TFLite op by its first output tensor's name,
which Model Explorer's TFLite adapter shows as the node's `tensor_name`. Open it with
`model-explorer MODEL.tflite --node_data_paths=FILE.json` (docs/node-data.md). Model Explorer is not a
dependency: we only write its JSON.

- `check`: value = the op's partition (1, 2, ...) when NNAPI takes it, 0 when it stays on TFLite's CPU
  (refused, or dropped by the partition limit), -1 when folded at conversion; colour by verdict.
- `verify --per-op`: value = the op's max relative error (|diff| / max |TFLite value|); colour by status
  (pass green, amplified and arithmetic yellow, propagated orange, divergent red).
"""

from __future__ import annotations

import json
import os
from typing import Any

from nnconv.safe_write import write_text
from nnconv.lowering.diagnostics import Verdict
from nnconv.tflite.ir import Subgraph

GREEN, YELLOW, ORANGE, RED, GREY = "#a5d6a7", "#fff59d", "#ffcc80", "#ef9a9a", "#e0e0e0"
_VERDICT_COLOR = {Verdict.LOWERED: GREEN, Verdict.FOLDED: GREY, Verdict.DRIVER_WARNING: YELLOW}
_STATUS_COLOR = {"pass": GREEN, "amplified": YELLOW, "arithmetic": YELLOW, "propagated": ORANGE, "divergent": RED}


def _key(sg: Subgraph, op_index: int) -> str | None:
    op = sg.operators[op_index]
    outs = [t for t in op.outputs if t >= 0]
    return sg.tensors[outs[0]].name or None if outs else None


def check_node_data(check: Any) -> dict:
    """The partition / verdict overlay of a `ModelCheck` (nnconv.report.analysis)."""
    from nnconv.tflite.reader import read_model
    sg = read_model(check.path).subgraphs[0]
    partition_of = {k: p.index + 1 for p in check.plan.partitions for k in p.ops}
    results: dict[str, dict] = {}
    for r in check.report.ops:
        if r.subgraph != 0 or r.index >= len(sg.operators):
            continue
        key = _key(sg, r.index)
        if key is None:
            continue
        value = -1 if r.status is Verdict.FOLDED else partition_of.get(r.index, 0)
        color = _VERDICT_COLOR.get(r.status, RED) if value != 0 or not r.supported else ORANGE
        results[key] = {"value": value, "bgColor": color}
    return {"name": f"nnconv check: NNAPI partition at API {check.api_level} (0 = CPU, -1 = folded)",
            "results": results}


def per_op_node_data(report: Any, tflite_path: str) -> dict:
    """The per-op error overlay of a `VerifyReport` run with `per_op`."""
    from nnconv.tflite.reader import read_model
    sg = read_model(tflite_path).subgraphs[0]
    results: dict[str, dict] = {}
    for e in report.per_op.entries:
        key = _key(sg, e.op_index)
        if key is not None:
            value = e.max_rel if e.max_rel != float("inf") else 1e30  # JSON has no infinity
            results[key] = {"value": value, "bgColor": _STATUS_COLOR.get(e.status, RED)}
    return {"name": f"nnconv verify --per-op: max relative error at API {report.parity.api_level}",
            "results": results}


def write_node_data(path: str | os.PathLike, data: dict, model: str) -> str:
    """Writes the overlay atomically (nnconv.safe_write): never a half-written file, only regular files.
    Returns the log line that says what was written and how to open it."""
    write_text(path, json.dumps(data, indent=2))
    n = len(data["results"])
    return (f"wrote {os.fspath(path)}: Model Explorer node data for {n} op{'' if n == 1 else 's'} "
            f"({data['name']}); open it with model-explorer {model} --node_data_paths={os.fspath(path)}")
