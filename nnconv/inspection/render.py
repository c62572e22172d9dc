"""`nnconv inspect` output as text: the summary of `summary.py` and the `--ops` table."""

from __future__ import annotations

from typing import Any

from nnconv.fmt import format_bytes


def _io(items: list[dict[str, Any]]) -> str:
    return ", ".join(f"{t['name']} {t['dtype']}{t['shape']}" + (f" (signature {t['shape_signature']})"
                                                                 if "shape_signature" in t else "")
                     for t in items) or "-"


def _constant_lines(title: str, c: dict[str, Any]) -> list[str]:
    lines = [f"{title}: {c['count']} ({format_bytes(c['bytes'])})"]
    lines += [f"    {format_bytes(x['bytes']):>10}  {x['name']}  {x['type']}" for x in c["largest"]]
    return lines


def summary_text(s: dict[str, Any]) -> str:
    """The human-readable summary of a file."""
    lines = [f"{s['file']}: {'TFLite model' if s['format'] == 'tflite' else '.nnapi file'}"]
    if s["format"] == "tflite":
        lines.append(f"schema version {s['schema_version']}" + (f", description: {s['description']}"
                                                                 if s["description"] else ""))
        lines.append(f"operations: {s['operations']}, tensors: {s['tensors']}, subgraphs: {len(s['subgraphs'])}")
        lines += _constant_lines("constants", s["constants"])
        for sg in s["subgraphs"]:
            lines.append(f"subgraph {sg['index']} {sg['name'] or ''}: {sg['operators']} operators, "
                         f"{sg['tensors']} tensors".replace("  ", " "))
            lines.append(f"    inputs: {_io(sg['inputs'])}")
            lines.append(f"    outputs: {_io(sg['outputs'])}")
        for sig in s["signatures"]:
            lines.append(f"signature '{sig['key']}' (subgraph {sig['subgraph']}): inputs {', '.join(sig['inputs'])}; "
                         f"outputs {', '.join(sig['outputs'])}")
        if not s["signatures"]:
            lines.append("signatures: none")
        lines.append("metadata: " + (", ".join(f"{m['name']} ({format_bytes(m['bytes'])})" for m in s["metadata"])
                                     or "none"))
    else:
        p = s["provenance"]
        lines.append(f"written by {p['producer'] or 'unknown'}, format version {p['format_version']}, "
                     f"target API {p['api_level']}" + (f", from {p['source_model']}" if p["source_model"] else ""))
        if p["coverage"]:
            c = p["coverage"]
            lines.append(f"partial conversion: {c['ops_delegated']}/{c['ops_total']} TFLite ops on NNAPI "
                         f"({c['percent']}%)")
        lines.append(f"operations: {s['operations']}, operands: {s['operands']}, partitions: {len(s['partitions'])}, "
                     f"NNAPI models (main + referenced): {s['subgraphs']}")
        for lifetime, c in s["constants"].items():
            lines += _constant_lines(lifetime, c)
        for part in s["partitions"]:
            ops = part["tflite_ops"]
            span = f"{ops[0]}..{ops[-1]}" if ops else "-"
            lines.append(f"partition {part['index']}: API {part['api_level']}, "
                         f"TFLite subgraph {part['tflite_subgraph']} "
                         f"ops {span} ({len(ops)}), {part['operations']} operations, {part['operands']} operands, "
                         f"{part['referenced_subgraphs']} referenced subgraphs, pools {format_bytes(part['pool_bytes'])}"
                         + (", relaxed to fp16" if part["relaxed_fp16"] else ""))
            lines.append(f"    inputs: {_io(part['inputs'])}")
            lines.append(f"    outputs: {_io(part['outputs'])}")
    lines.append("ops by type: " + ", ".join(f"{name} {n}" for name, n in s["ops_by_type"].items()))
    return "\n".join(lines)


def ops_table_text(rows: list[dict[str, Any]]) -> str:
    """`--ops`: one line per operation, its place and type aligned, then `inputs -> outputs`."""
    if not rows:
        return "(no operations)"
    columns = (["partition"] if "partition" in rows[0] else []) + ["subgraph", "index", "op"] + (
        ["tflite_op"] if "tflite_op" in rows[0] else [])
    table = [columns + ["inputs -> outputs"]]
    for r in rows:
        table.append(["-" if r[c] is None else str(r[c]) for c in columns]
                     + [f"{', '.join(r['inputs'])} -> {', '.join(r['outputs'])}"])
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) + "  " + row[-1] for row in table)
