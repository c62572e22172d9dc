"""`nnconv rewrite`'s report: the delegate before and after, each rewrite kept (why the delegate needed it, its
identity, the operators it changed) and the proof, as text or as the JSON object of `--format json`."""

from __future__ import annotations

from typing import Any

from nnconv.fmt import format_bytes
from nnconv.retarget.engine import RewriteResult


def summary_line(result: RewriteResult) -> str:
    """One line: "m.tflite: API 30: before: ...; after: ..." (the `-q` output)."""
    if not result.rewritten:
        return f"{result.model}: API {result.api_level}: nothing to rewrite: {result.before.describe()}"
    verdict = "" if result.passed else " (FAIL: outputs differ, nothing written)"
    return (f"{result.model}: API {result.api_level}: before: {result.before.describe()}; after: "
            f"{result.after.describe()}{verdict}")


def render_text(result: RewriteResult) -> str:
    lines = [f"{result.model} at API {result.api_level} (TFLite's NNAPI delegate)",
             f"before: {result.before.describe()}"]
    if not result.rewritten:
        lines.append("no rewrite lets the delegate take more: the model is left as it is")
        return "\n".join(lines)
    lines.append(f"after:  {result.after.describe()}")
    for step in result.steps:
        lines += [f"{step.name}: {step.why}", f"  identity: {step.identity}"]
        for c in (c for c in result.changes if c.step == step.name):
            if c.op is None:  # the model's inputs, or another subgraph's operators (the note says which)
                lines.append(f"  {c.note}")
                continue
            moved = " (removed)" if c.new_index is None else f" (now #{c.new_index})"
            lines.append(f"  #{c.op} {c.op_name}{moved}: {c.note}")
    if result.proof is not None:
        lines.append(f"proof: TFLite's interpreter on the original and the rewritten model, {result.proof.inputs} "
                     "inputs")
        for o in result.proof.outputs:
            lines.append(f"  {o.name} {o.dtype} {list(o.shape)}: max |diff| {o.max_abs:.3g} "
                         f"({o.tolerance.describe() if o.tolerance.kind == 'float' else 'bit-exact'}) "
                         f"{'PASS' if o.passed else 'FAIL'}{': ' + o.detail if o.detail else ''}")
    return "\n".join(lines)


def to_json(result: RewriteResult, output: str | None) -> dict[str, Any]:
    return {"model": result.model, "api_level": result.api_level, "target": "delegate",
            "rewritten": result.rewritten, "passed": result.passed, "output": output,
            "output_bytes": len(result.data) if result.data is not None else None,
            "before": result.before.to_json(), "after": result.after.to_json(),
            "steps": [{"name": s.name, "why": s.why, "identity": s.identity} for s in result.steps],
            "changes": [c.to_json() for c in result.changes],
            "proof": result.proof.to_json() if result.proof is not None else None}


def written_line(result: RewriteResult, output: str, size: int) -> str:
    if not result.rewritten:
        return f"wrote {output}: the input, byte for byte ({format_bytes(size)})"
    return f"wrote {output} ({format_bytes(size)}): {result.after.describe()} at API {result.api_level}"
