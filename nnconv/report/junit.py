"""JUnit XML reports of `check` and `verify` (`--junit FILE`), the format CI systems read.

One `<testcase>` per model (per model and API level for `check --api-level all`), named as the tables name
the model (a folder's models relative to that folder, a file as given), classname `nnconv.check` / `nnconv.verify` (`.api<level>` appended per level). A testcase holds
- `<failure message="...">` when the model counts towards exit 1: a parity failure (`verify`), a violated
  policy (`check`), or, in the `--api-level all` matrix, where no policy applies, an op refused at that
  level (as `--fail-on refused` would judge it);
- `<error message="...">` when the model could not be checked or verified (it gives exit 2, 3 or 4 alone);
- nothing when it passes; a `verify` pass on outputs constant on the inputs used (`PASS (uninformative)`)
  holds `<properties><property name="uninformative" value="OUTPUTS"/></properties>` and its verdict as
  `<system-out>` (JUnit has no warning; `--fail-on uninformative` makes it a `<failure>`).
The message is the one-line reason the command prints. The file is written atomically (nnconv.safe_write).
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from nnconv.safe_write import write_bytes
from nnconv.fmt import plural


@dataclass(frozen=True)
class Case:
    name: str
    classname: str
    seconds: float = 0.0
    failure: str = ""  # one line: why the model fails (exit 1)
    error: str = ""  # one line: why it could not be checked or verified (exit 2, 3 or 4)
    uninformative: str = ""  # a pass that proves little: the constant outputs, and the verdict as system-out
    verdict: str = ""


def junit_xml(suite: str, cases: Sequence[Case]) -> bytes:
    """The `<testsuites>` document of one suite holding `cases`, UTF-8 with its declaration."""
    root = ET.Element("testsuites")
    attrs = {"name": suite, "tests": str(len(cases)), "failures": str(sum(bool(c.failure) for c in cases)),
             "errors": str(sum(bool(c.error) and not c.failure for c in cases)), "skipped": "0",
             "time": f"{sum(c.seconds for c in cases):.3f}"}
    root.attrib.update({k: attrs[k] for k in ("name", "tests", "failures", "errors", "time")})
    node = ET.SubElement(root, "testsuite", attrs)
    for c in cases:
        case = ET.SubElement(node, "testcase", {"name": c.name, "classname": c.classname,
                                                "time": f"{c.seconds:.3f}"})
        if c.uninformative:  # JUnit has no "warning": a property CI tools list, and the verdict as output
            props = ET.SubElement(case, "properties")
            ET.SubElement(props, "property", {"name": "uninformative", "value": c.uninformative})
        if c.failure:
            ET.SubElement(case, "failure", {"message": c.failure, "type": "failure"}).text = c.failure
        elif c.error:
            ET.SubElement(case, "error", {"message": c.error, "type": "error"}).text = c.error
        if c.uninformative and c.verdict:
            ET.SubElement(case, "system-out").text = c.verdict
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(path: str | os.PathLike, suite: str, cases: Iterable[Case]) -> None:
    write_bytes(path, junit_xml(suite, list(cases)))


def check_cases(checks: Sequence, failures: Sequence, violations_of, level: int,
                names: Mapping[str, str] | None = None) -> list[Case]:
    """Testcases of `check` at one level: `checks` (analysis.ModelCheck), `failures` (parallel.Failed),
    `violations_of(check)`: the policy lines of one model; a partition that failed to lower is an error.
    Models are named as the tables name them (`names`: path -> name relative to the folder given)."""
    names = names or {}
    cases = []
    for c in checks:
        broken = next((p for p in c.plan.partitions if p.error), None)
        error = f"partition {broken.index} failed to lower: {broken.error}" if broken is not None else \
            (c.whole_refusal if c.whole_refusal and c.report.ok else "")
        cases.append(Case(names.get(c.path, c.path), f"nnconv.check.api{level}", failure="; ".join(violations_of(c)),
                          error=" ".join(str(error).split())))
    return cases + [Case(names.get(f.path, f.path), f"nnconv.check.api{level}", error=f.error) for f in failures]


def matrix_cases(mats: Sequence, failures: Sequence, names: Mapping[str, str] | None = None) -> list[Case]:
    """Testcases of `check --api-level all`: one per model and level, failed where an op is refused."""
    names = names or {}
    cases = []
    for m in mats:
        for level, c in m.checks.items():
            refused = c.ops_refused
            reason = f"{refused} of {plural(len(c.report.ops), 'op')} refused at API {level}" if refused else ""
            cases.append(Case(names.get(m.path, m.path), f"nnconv.check.api{level}", failure=reason))
    return cases + [Case(names.get(f.path, f.path), "nnconv.check", error=f.error) for f in failures]


def verify_cases(results: Sequence, level: int, names: Mapping[str, str] | None = None) -> list[Case]:
    """Testcases of `verify`: one per parity.batch.ModelResult. A model whose outputs are constant on the
    inputs used (a PASS that proves little) carries the property `uninformative` (the outputs) and its verdict
    as system-out; `--fail-on uninformative` makes it a failure."""
    names = names or {}
    return [Case(names.get(r.model, r.model), f"nnconv.verify.api{level}", r.seconds,
                 failure=r.failure_reason if r.status == "fail" else "",
                 error=r.error if r.status == "error" else "",
                 uninformative=", ".join((r.report or {}).get("uninformative_outputs") or []),
                 verdict=(r.report or {}).get("verdict", "")) for r in results]
