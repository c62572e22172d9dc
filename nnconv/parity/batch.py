"""`verify` over several models or folders: one result per model, in parallel processes with `jobs` > 1.

A model that cannot be read or converted (without `--allow-partial`) is an `error` row carrying the
one-line reason; it never stops the others. Results keep the order of the paths given.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Iterator, Sequence

from nnconv.errors import EXIT_BAD_INPUT, failure_line, folder_exit_code
from nnconv.parallel import map_in_processes
from nnconv.parity.session import SCHEMA_VERSION, VerifyOptions, VerifyReport, verify

PASS, FAIL, ERROR = "pass", "fail", "error"


@dataclass
class ModelResult:
    model: str
    status: str  # "pass" | "fail" | "error"
    seconds: float
    report: dict | None = None  # the model's verify JSON (pass / fail)
    error: str = ""  # the one-line reason (error)
    exit_code: int = 0  # error: the exit code this model gives alone (2, 3 or 4)
    name: str = ""  # what tables call it (relative to the folder given); else the path

    @property
    def worst_output(self) -> dict | None:
        """The failing output with the largest relative error, else the output with the largest one."""
        outputs = (self.report or {}).get("outputs", [])
        if not outputs:
            return None
        return max(outputs, key=lambda o: (not o["passed"], o["max_rel"]))

    @property
    def failure_reason(self) -> str:
        """One line: the failing output with its error and tolerance (`relaxed fp16` when only the simulated
        relaxed driver fails), "" when the model passed."""
        report = self.report or {}
        verdict = report.get("verdict", "")
        if verdict.startswith("FAIL (--fail-on uninformative"):
            return verdict[len("FAIL ("):-1]
        bad = [o for o in (report.get("dataset") or {}).get("outputs", []) if not o["passed"]]
        if bad:
            o = max(bad, key=lambda o: o["failing_samples"])
            return (f"output '{o['name']}': {o['failing_samples']} of {o['samples']} samples over the tolerance "
                    f"{o['tolerance']} (worst sample {o['worst_sample']}: max |diff| {o['worst_max_abs']:.3g})")
        for label, outputs in (("output", report.get("outputs", [])),
                               ("relaxed fp16 output", (report.get("relaxed") or {}).get("outputs", []))):
            bad = [o for o in outputs if not o["passed"]]
            if bad:
                o = max(bad, key=lambda o: o["max_rel"])
                lsb = "" if o.get("max_lsb") is None else f" ({o['max_lsb']} LSB)"
                more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
                return (f"{label} '{o['name']}': max |diff| {o['max_abs']:.3g}{lsb} over the tolerance "
                        f"{o['tolerance']}{more}")
        return ""

    def to_json(self) -> dict:
        data = {"model": self.model, "name": self.name or self.model, "status": self.status,
                "seconds": round(self.seconds, 3)}
        if self.error:
            data["error"] = self.error
            data["exit_code"] = self.exit_code
        worst = self.worst_output
        if worst is not None:
            data["worst_output"] = {k: worst[k] for k in ("name", "max_abs", "max_rel", "max_lsb", "passed")}
        if self.report is not None:
            data["report"] = self.report
        return data


def verify_one(path: str, options: VerifyOptions) -> ModelResult:
    """One model's row; every error nnconv reports to users becomes an `error` row."""
    start = time.monotonic()
    try:
        report: VerifyReport = verify(path, options)
    except Exception as e:  # noqa: BLE001 - one broken model must not stop a folder run; its row says why
        line, code = failure_line(e)
        return ModelResult(path, ERROR, time.monotonic() - start, error=line, exit_code=code)
    if report.passed and report.unreadable_line:  # the samples read pass; the others are bad input (exit 2)
        return ModelResult(path, ERROR, report.seconds, report.to_json(), error=report.unreadable_line,
                           exit_code=EXIT_BAD_INPUT)
    return ModelResult(path, PASS if report.passed else FAIL, report.seconds, report.to_json())


def exit_code(results: Sequence[ModelResult]) -> int:
    """1 when a model failed parity, else the exit code of the first that could not be verified, else 0."""
    return folder_exit_code(any(r.status == FAIL for r in results),
                            [r.exit_code for r in results if r.status == ERROR])


def verify_many(paths: Sequence[str], options: VerifyOptions, jobs: int = 1) -> Iterator[ModelResult]:
    """Yields one result per path, in order. `jobs` > 1 runs models in that many processes ("spawn": no
    interpreter state is inherited; `options` must then be picklable)."""
    yield from map_in_processes(functools.partial(verify_one, options=options), list(paths), jobs)


def summary(results: Sequence[ModelResult]) -> dict:
    counts = {s: sum(r.status == s for r in results) for s in (PASS, FAIL, ERROR)}
    return {"models": len(results), "passed": counts[PASS], "failed": counts[FAIL], "errors": counts[ERROR],
            "seconds": round(sum(r.seconds for r in results), 3)}


def batch_json(results: Sequence[ModelResult]) -> dict:
    return {"schema_version": SCHEMA_VERSION, "models": [r.to_json() for r in results],
            "summary": summary(results)}

