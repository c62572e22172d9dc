"""NNAPI conformance vectors (../shared/nnapi_cts, or $NNCONV_CTS_DIR) through our executor.

One test per case, id '<folder>/<case name>'. CI runs the whole set (it takes well under a minute with
two workers); `NNCONV_CTS_FULL=1` is accepted for symmetry with larger suites and changes nothing today.
Cases that are known not to pass yet are listed with their reason in conformance_known_failures.txt
and marked xfail(strict=True), so fixing one fails the test until the list is updated.
"""

from __future__ import annotations

import pathlib

import pytest

from nnconv.conformance import cts_dir, iter_cases, run_case

HERE = pathlib.Path(__file__).resolve().parent
KNOWN = HERE / "conformance_known_failures.txt"


def _known_failures() -> dict[str, str]:
    out: dict[str, str] = {}
    if KNOWN.exists():
        for line in KNOWN.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                cid, _, reason = line.partition(" ")
                out[cid] = reason.strip() or "known failure"
    return out


def _params() -> list:
    root = cts_dir()
    if not root.is_dir():
        return [pytest.param(None, id="cts-data-missing")]
    known = _known_failures()
    params = []
    for cid, case in iter_cases(root):
        marks = [pytest.mark.xfail(reason=known[cid], strict=True)] if cid in known else []
        params.append(pytest.param(case, id=cid, marks=marks))
    return params


@pytest.mark.parametrize("case", _params())
def test_conformance_case(case):
    if case is None:
        pytest.fail(f"conformance data not found at {cts_dir()} (set NNCONV_CTS_DIR)")
    result = run_case(case)
    assert result.status == "passed", f"{result.status}: {result.message}"
