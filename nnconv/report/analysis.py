"""`nnconv check`'s analysis: per op the verdict, NNAPI ops, reason, hint and lowest accepting API level (all
from the lowering rules' own checks, `lowering/convert.py:check_ops`); the partition plan of TFLite's NNAPI
delegate (`lowering/partition.py`); an op x API level matrix; CI policies. Rendering lives in `render.py`,
the JSON schema in docs/report-schema.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Sequence

from nnconv.errors import NnconvError
from nnconv.fmt import plural
from nnconv.lowering.check_report import OpReport, Report
from nnconv.lowering.convert import ConversionOptions
from nnconv.lowering.diagnostics import Code, Verdict
from nnconv.lowering.partition import DEFAULT_MAX_PARTITIONS, PartitionPlan
from nnconv.nnapi.levels import ALL_API_LEVELS, ApiLevel, feature_level
from nnconv.pipeline import prepare
from nnconv.tflite.reader import read_model

SCHEMA_VERSION = 1
REFUSED = (Verdict.REFUSED_LEVEL, Verdict.REFUSED_OPERAND, Verdict.CUSTOM, Verdict.UNSUPPORTED)


class CheckUsageError(NnconvError):
    """Options of `nnconv check` that do not go together."""


def deprecation_warning(level: int) -> str | None:
    return ApiLevel(level).deprecation_warning()


# -- one model at one level -------------------------------------------------------------------------
@dataclass
class ModelCheck:
    """The report and the partition plan of one model at one API level."""

    path: str
    report: Report
    plan: PartitionPlan
    whole_refusal: str = ""  # why the model cannot be converted whole although no op is refused
    name: str = ""  # what tables call it (relative to the folder given, `model_paths.named_models`); else path

    @property
    def label(self) -> str:
        return self.name or self.path

    @property
    def api_level(self) -> int:
        return self.report.api_level

    def count(self, *verdicts: Verdict) -> int:
        return sum(1 for r in self.report.ops if r.status in verdicts)

    @property
    def ops_refused(self) -> int:
        return self.count(*REFUSED)

    @property
    def tflite_refuses(self) -> int:
        """Ops NNAPI takes and TFLite's own CPU kernels refuse (warning NNW101)."""
        return sum(any(d.code is Code.TFLITE_REFUSES for d in r.diagnostics) for r in self.report.ops)

    def warnings(self) -> list[str]:
        out = [w for w in [deprecation_warning(self.api_level)] if w]
        return out + self.plan.warnings()

    def summary(self) -> dict:
        return {"ops_total": len(self.report.ops), "ops_lowered": self.report.ops_lowered,
                "ops_delegated": self.plan.ops_delegated, "ops_refused": self.ops_refused,
                "ops_folded": self.count(Verdict.FOLDED), "ops_driver_warning": self.count(Verdict.DRIVER_WARNING),
                "coverage": round(self.plan.coverage, 2), "partitions": len(self.plan.partitions),
                "partitions_formed": self.plan.partitions_formed,
                "boundary_bytes": sum(p.boundary_bytes for p in self.plan.partitions),
                "by_status": {v.value: self.count(v) for v in Verdict},
                "line": self.plan.summary_line()}


def check_one(path: str, level: ApiLevel, options: ConversionOptions | None = None,
              max_partitions: int = DEFAULT_MAX_PARTITIONS, lower: bool = True) -> ModelCheck:
    prepared = prepare(path, level, options)
    return ModelCheck(path, prepared.report, prepared.plan(max_partitions, lower=lower), prepared.whole_refusal)


def check_at(item: tuple[str, int], options: ConversionOptions | None = None,
             max_partitions: int = DEFAULT_MAX_PARTITIONS) -> ModelCheck:
    """One (path, level) cell of the `--api-level all` matrix as its own task (`--scheduler`: one task per
    model and level); `check_levels` computes the same cells reading the model once."""
    path, level = item
    return check_one(path, level, options, max_partitions, lower=False)


def matrices(cells: Sequence[tuple[tuple[str, int], Any]]) -> list[Any]:
    """The per-(path, level) results of `check_at` gathered per model in their order: a LevelMatrix per
    model, or the first failure (parallel.Failed) of a model where a level could not be checked."""
    out: dict[str, Any] = {}
    for (path, level), result in cells:
        current = out.setdefault(path, LevelMatrix(path, {}))
        if not isinstance(current, LevelMatrix):
            continue  # this model already failed
        if isinstance(result, ModelCheck):
            current.checks[level] = result
        else:  # the model's failure, as check_levels reports it (not tied to the level that met it)
            out[path] = replace(result, level=None)
    return list(out.values())


def beyond_delegate(op_name: str) -> bool:
    """True when nnconv lowers this op but TFLite's own NNAPI delegate leaves it on the CPU."""
    from nnconv.lowering.registry import CUSTOM_RULES, RULES
    from nnconv.tflite.schema_enums import BuiltinOperator
    if op_name.startswith("CUSTOM(") and op_name.endswith(")"):
        rule = CUSTOM_RULES.get(op_name[7:-1])
    else:
        member = BuiltinOperator.__members__.get(op_name)
        rule = RULES.get(int(member)) if member is not None else None
    return bool(rule is not None and rule.beyond_delegate)


def op_json(r: OpReport, plan: PartitionPlan) -> dict:
    refused = not r.supported
    return {"index": r.index, "op": r.op, "version": r.version, "status": r.status.value,
            "severity": "error" if refused else ("warning" if r.status == Verdict.DRIVER_WARNING else "ok"),
            "nnapi_ops": [] if refused else r.nnapi_ops,
            "nnapi_ops_at_min_api_level": r.nnapi_ops if refused else [],
            "lowering_note": r.lowering_note,
            "reason": r.reason, "hint": r.hint, "min_api_level": r.min_api_level,
            "input_dtypes": r.input_dtypes, "quantization": r.quantization,
            "partition": plan.partition_of(r.index),
            "beyond_delegate": not refused and plan.target == "nnconv" and beyond_delegate(r.op),
            "notes": r.notes,
            "diagnostics": [d.to_json() for d in r.diagnostics]}


def report_json(check: ModelCheck) -> dict:
    level = check.api_level
    return {"schema_version": SCHEMA_VERSION, "model": check.path, "name": check.label, "api_level": level,
            "feature_level": feature_level(level), "target": check.plan.target,
            "outcome": check.plan.to_json()["outcome"], "outcome_reason": check.plan.outcome_reason,
            "max_partitions": check.plan.max_partitions,
            "warnings": check.warnings(),
            "model_diagnostics": [d.to_json() for d in check.plan.diagnostics],
            "ops": [op_json(r, check.plan) for r in check.report.ops],
            "partitions": [p.to_json() for p in check.plan.partitions],
            "dropped_partitions": check.plan.dropped,
            "summary": check.summary()}


def summary_line(check: ModelCheck) -> str:
    """The plan's line (`1 partition, 3/3 ops (100%)`), with what `-q` must not hide: ops TFLite's own CPU
    kernels refuse (NNW101), which make the model run only on NNAPI and leave `verify` nothing to compare."""
    line = check.plan.summary_line()
    refused_by_tflite = check.tflite_refuses
    if refused_by_tflite:
        line += (f"; TFLite's CPU kernels refuse {plural(refused_by_tflite, 'op')} (NNW101): verify has no TFLite "
                 f"result to compare with, and the model runs only where NNAPI takes it")
    return line


# -- every level ------------------------------------------------------------------------------------
@dataclass
class LevelMatrix:
    """One model checked at every API level (27..35)."""

    path: str
    checks: dict[int, ModelCheck]
    name: str = ""  # as `ModelCheck.name`

    @property
    def label(self) -> str:
        return self.name or self.path

    def first_level(self, op_index: int) -> int | None:
        """The lowest level at which the op is lowered (or folded)."""
        return next((lv for lv, c in self.checks.items() if c.report.ops[op_index].supported), None)

    def to_json(self) -> dict:
        any_check = next(iter(self.checks.values()))
        ops = []
        for r in any_check.report.ops:
            by_level = {str(lv): c.report.ops[r.index].status.value for lv, c in self.checks.items()}
            ops.append({"index": r.index, "op": r.op, "version": r.version, "min_api_level": self.first_level(r.index),
                        "status_by_level": by_level})
        return {"schema_version": SCHEMA_VERSION, "model": self.path, "name": self.label, "api_level": "all",
                "target": any_check.plan.target, "levels": list(self.checks),
                "warnings": [w for w in [deprecation_warning(max(self.checks))] if w],
                "ops": ops,
                "summary_by_level": {str(lv): c.summary() for lv, c in self.checks.items()}}


def check_levels(path: str, options: ConversionOptions | None = None,
                 max_partitions: int = DEFAULT_MAX_PARTITIONS) -> LevelMatrix:
    first = prepare(read_model(path), ALL_API_LEVELS[0], options)  # read and rewritten once for every level
    checks = {}
    for lv in ALL_API_LEVELS:
        prepared = first.at_level(lv)
        checks[lv] = ModelCheck(path, prepared.report, prepared.plan(max_partitions, lower=False))
    return LevelMatrix(path, checks)


# -- CI policies ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Policies:
    fail_on: str | None = None  # "refused" or "warning"
    min_coverage: float | None = None  # percent of ops delegated
    max_partitions_allowed: int | None = None

    @property
    def any(self) -> bool:
        return self.fail_on is not None or self.min_coverage is not None or self.max_partitions_allowed is not None

    def violations(self, check: ModelCheck) -> list[str]:
        """One line per violated rule, naming it."""
        name = os.path.basename(check.path)
        out = []
        if self.fail_on in ("refused", "warning") and check.ops_refused:
            out.append(f"--fail-on {self.fail_on}: {plural(check.ops_refused, 'op')} refused in {name} at API "
                       f"{check.api_level}")
        if self.fail_on == "warning" and check.count(Verdict.DRIVER_WARNING):
            out.append(f"--fail-on warning: {plural(check.count(Verdict.DRIVER_WARNING), 'op')} with driver warnings "
                       f"in {name} at API {check.api_level}")
        if self.min_coverage is not None and check.plan.coverage < self.min_coverage:
            out.append(f"--min-coverage {self.min_coverage:g}: {name} has {check.plan.coverage:.1f}% of its ops "
                       f"delegated at API {check.api_level}")
        if self.max_partitions_allowed is not None and len(check.plan.partitions) > self.max_partitions_allowed:
            out.append(f"--max-partitions-allowed {self.max_partitions_allowed}: {name} forms "
                       f"{len(check.plan.partitions)} partitions at API {check.api_level}")
        return out
