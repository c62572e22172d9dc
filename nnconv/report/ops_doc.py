"""`nnconv ops` and docs/ops.md, derived from the lowering registry and the NNAPI operation specs (never
written by hand)."""

from __future__ import annotations

import csv
import io
import json
from typing import Callable, Iterable

from rich.console import Console
from rich.table import Table

from nnconv.lowering import rules as _rules  # noqa: F401
from nnconv.lowering.registry import CUSTOM_RULES, RULES, Rule
from nnconv.fmt import print_wrapped
from nnconv.nnapi.levels import api_level_of_feature_level
from nnconv.nnapi.operations import SPECS, AxisParam, OperationSpec

CSV_COLUMNS = ("op", "builtin_code", "nnapi_ops", "min_api_level", "becomes_constant", "dtypes", "constraints",
               "beyond_delegate")


def _name(rule: Rule) -> str:
    return rule.op.name if rule.custom_code is None else f"CUSTOM({rule.custom_code})"


def _entry(rule: Rule) -> dict:
    return {"op": _name(rule), "builtin_code": int(rule.op), "nnapi_ops": [o.name for o in rule.nnapi_ops],
            "min_api_level": rule.min_api_level, "becomes_constant": rule.becomes_constant,
            "dtypes": list(rule.dtypes), "constraints": rule.constraints, "beyond_delegate": rule.beyond_delegate}


def _matches(rule: Rule, wanted: set[str]) -> bool:
    """`--op` matching: the TFLite name in any case, `CUSTOM(code)` or the bare custom code."""
    if rule.custom_code is not None:
        return bool({_name(rule).upper(), rule.custom_code.upper()} & wanted)
    return rule.op.name.upper() in wanted


def unknown_op_names(names: Iterable[str]) -> list[str]:
    """The `--op` names no rule answers to (for a one-line error naming them)."""
    rules = [*RULES.values(), *CUSTOM_RULES.values()]
    return [n for n in names if not any(_matches(r, {n.upper()}) for r in rules)]


def ops_json(api_level: int | None = None, names: Iterable[str] = ()) -> dict:
    """Every rule's entry, sorted by name; `api_level` keeps the ops that lower at that level (some variant
    of them), `names` keeps the named ops."""
    wanted = {n.upper() for n in names}

    def keep(rule: Rule) -> bool:
        return (api_level is None or rule.min_api_level <= api_level) and (not wanted or _matches(rule, wanted))

    entries = [_entry(r) for r in sorted(RULES.values(), key=lambda r: r.op.name) if keep(r)]
    entries += [_entry(r) for r in sorted(CUSTOM_RULES.values(), key=lambda r: r.custom_code or "") if keep(r)]
    return {"ops": entries} if api_level is None else {"api_level": api_level, "ops": entries}


def ops_csv(data: dict) -> str:
    """One row per op; list cells joined by spaces (as `check --format csv` does)."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    for e in data["ops"]:
        w.writerow([e["op"], e["builtin_code"], " ".join(e["nnapi_ops"]), e["min_api_level"],
                    str(e["becomes_constant"]).lower(), " ".join(e["dtypes"]), e["constraints"],
                    str(e["beyond_delegate"]).lower()])
    return buf.getvalue()


def ops_markdown() -> str:
    lines = ["# Supported TFLite ops", "",
             "Generated from the lowering registry and the NNAPI operation specs by `nnconv ops --format md`; a "
             "test fails when this file and the registries disagree.", "",
             "| TFLite op | NNAPI ops | min API | dtypes | constraints |", "| --- | --- | --- | --- | --- |"]
    for e in ops_json()["ops"]:
        extra = " (beyond the delegate)" if e["beyond_delegate"] else ""
        emitted = _emitted(e)
        lines.append(f"| {e['op']}{extra} | {emitted} | {e['min_api_level']} | "
                     f"{', '.join(e['dtypes'])} | {e['constraints']} |")
    return "\n".join([*lines, "", *nnapi_operations_markdown()]) + "\n"


def _spec_notes(spec: OperationSpec) -> str:
    """What an operation's spec declares beyond its level and input types, in a few words."""
    notes = []
    if spec.validator is not None:
        notes.append("operand rules")
    if spec.same_type_output:
        notes.append("output of the input's type")
    if spec.fused_as is not None:
        notes.append(f"fused as activation {spec.fused_as.name}")
    if spec.byte_op:
        notes.append("byte table")
    if not spec.deterministic:
        notes.append("nondeterministic")
    if spec.calls_subgraphs:
        notes.append("runs subgraphs")
    if isinstance(spec.sample_axis, AxisParam):
        notes.append(f"batched (axis, input {spec.sample_axis.slot}, other than 0)")
    elif spec.sample_axis is not None:
        notes.append(f"batched ({spec.sample_axis.value})")
    if spec.float_batched:
        notes.append("float steps batched")
    return "; ".join(notes)


def nnapi_operations_markdown() -> list[str]:
    """The NNAPI half of docs/ops.md: one row per `OperationSpec`, by code."""
    lines = ["# NNAPI operations", "",
             "What nnconv knows of each NNAPI operation, from its `OperationSpec` (`nnconv/nnapi/operations/`): the "
             "feature level that introduced it (and the first API level shipping it), the level each input type "
             "needs where the operation lists them, whether it has operand rules of its own (a validator), and "
             "what the executor and batched execution read.", "",
             "| NNAPI operation | code | since | input types | notes |", "| --- | --- | --- | --- | --- |"]
    for op, spec in sorted(SPECS.items()):
        types = ", ".join(f"{t.name} ({level})" for t, level in (spec.input_levels or {}).items())
        lines.append(f"| {op.name} | {int(op)} | {spec.level} (API {api_level_of_feature_level(spec.level)}) | "
                     f"{types} | {_spec_notes(spec)} |")
    return lines


def _emitted(e: dict) -> str:
    return ", ".join(e["nnapi_ops"]) or ("(constant at conversion time)" if e["becomes_constant"] else "")


# Below this console width `ops` prints one op per line with indented details instead of a table.
COMPACT_BELOW = 100


def render_ops(data: dict, out: Console) -> None:
    """The `nnconv ops` table: identifiers never split (op names unbreakable, NNAPI op lists wrap only
    between names); one op per line with indented details on narrow consoles."""
    title = f"{len(data['ops'])} TFLite ops" + (f" lowering at API {data['api_level']}" if "api_level" in data
                                                else "")
    if out.width < COMPACT_BELOW:
        out.print(title, markup=False)
        for e in data["ops"]:
            print_wrapped(out, f"{e['op']}  API {e['min_api_level']}+  {', '.join(e['dtypes'])}", indent="    ", first_indent="")
            print_wrapped(out, f"-> {_emitted(e)}", indent="       ", first_indent="    ")
            if e["constraints"]:
                print_wrapped(out, e["constraints"], indent="    ")
        return
    table = Table(title=title)
    longest_nnapi = max((len(n) for e in data["ops"] for n in e["nnapi_ops"]), default=8)
    table.add_column("TFLite op", no_wrap=True)
    table.add_column("NNAPI ops", min_width=longest_nnapi, overflow="fold")
    table.add_column("min API", no_wrap=True, justify="right")
    table.add_column("dtypes", min_width=8)
    table.add_column("constraints", ratio=1)
    for e in data["ops"]:
        table.add_row(e["op"], _emitted(e), str(e["min_api_level"]), ", ".join(e["dtypes"]), e["constraints"])
    out.print(table)


def _ops_table(data: dict, out: Console, quiet: bool) -> None:
    if quiet:
        out.print(f"{len(data['ops'])} TFLite ops", markup=False)
    else:
        render_ops(data, out)


# The --format choices of `nnconv ops`: (the `ops_json` data, the console, -q) -> the text to print, or None
# where the renderer printed on the console itself. Those of OPS_WHOLE_DOCUMENT write a document whole
# (docs/ops.md) and take no filter (their data is None).
OpsRenderer = Callable[[dict | None, Console, bool], str | None]
OPS_FORMATS: dict[str, OpsRenderer] = {
    "table": _ops_table,
    "json": lambda data, out, quiet: json.dumps(data, indent=2) + "\n",
    "csv": lambda data, out, quiet: ops_csv(data),
    "md": lambda data, out, quiet: ops_markdown(),  # the text ends with its own newline
}
OPS_WHOLE_DOCUMENT = frozenset({"md"})
