"""`nnconv ops` and docs/ops.md, derived from the lowering registry (never written by hand)."""

from __future__ import annotations

from nnconv.lowering import rules as _rules  # noqa: F401
from nnconv.lowering.registry import CUSTOM_RULES, RULES, Rule


def _entry(rule: Rule) -> dict:
    name = rule.op.name if rule.custom_code is None else f"CUSTOM({rule.custom_code})"
    return {"op": name, "builtin_code": int(rule.op), "nnapi_ops": [o.name for o in rule.nnapi_ops],
            "min_api_level": rule.min_api_level, "becomes_constant": rule.becomes_constant, "dtypes": list(rule.dtypes), "constraints": rule.constraints,
            "beyond_delegate": rule.beyond_delegate}


def ops_json() -> dict:
    entries = [_entry(r) for r in sorted(RULES.values(), key=lambda r: r.op.name)]
    entries += [_entry(r) for r in sorted(CUSTOM_RULES.values(), key=lambda r: r.custom_code or "")]
    return {"ops": entries}


def ops_markdown() -> str:
    lines = ["# Supported TFLite ops", "",
             "Generated from the lowering registry by `nnconv ops --format md`; a test fails when this file "
             "and the registry disagree.", "",
             "| TFLite op | NNAPI ops | min API | dtypes | constraints |", "| --- | --- | --- | --- | --- |"]
    for e in ops_json()["ops"]:
        extra = " (beyond the delegate)" if e["beyond_delegate"] else ""
        emitted = ", ".join(e["nnapi_ops"]) or ("(constant at conversion time)" if e["becomes_constant"] else "")
        lines.append(f"| {e['op']}{extra} | {emitted} | {e['min_api_level']} | "
                     f"{', '.join(e['dtypes'])} | {e['constraints']} |")
    return "\n".join(lines) + "\n"
