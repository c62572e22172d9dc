"""The long run of nnconv's mutation fuzzer (the CI test runs a short one: tests/test_fuzz.py).

    python scripts/fuzz.py --minutes 30 [--seed 1] [--save-findings DIR] [--json FIGURES.json]

Mutates the seed models of tests/fuzz_seeds.py (their .tflite bytes, the .nnapi files they convert to and
the .npz of their inputs) and runs `check`, `convert` and `run` on each mutant in this process (click's
CliRunner; one process, so it shares a 2-core machine politely). Prints the outcome figures (the numbers
in docs/robustness.md) and exits 1 when anything is a finding: an exit code outside docs/errors.md, exit 4,
an error that is not one line, a traceback, a call slower than 20 s, check and convert disagreeing, or an
output left behind by a failed command. Memory is capped with RLIMIT_AS (--rlimit-gb, default 6) so that a
runaway allocation shows as a finding instead of the kernel's OOM killer.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fuzzing import Tally, fuzz  # noqa: E402


def figures(tally: Tally, minutes: float, seed: int) -> dict:
    return {"seed": seed, "minutes": round(minutes, 1), "cases": tally.cases, "mutated_files": tally.mutated_files,
            "command_calls": tally.calls, "slowest_call_seconds": round(tally.slowest, 2),
            "exits": {f"{cmd} {code}": n for (cmd, code), n in sorted(tally.exits.items())},
            "findings": len(tally.findings),
            "seconds_by_seed": {k: round(v, 1) for k, v in tally.seconds_by_seed.most_common()},
            "exit_2_reasons_top": dict(tally.reasons.most_common(25))}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-cases", type=int, default=None)
    ap.add_argument("--rlimit-gb", type=float, default=6.0, help="address-space cap of this process")
    ap.add_argument("--save-findings", type=pathlib.Path, default=None, help="write each finding's input here")
    ap.add_argument("--json", type=pathlib.Path, default=None, help="write the figures here")
    args = ap.parse_args()
    cap = int(args.rlimit_gb * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
    start = time.monotonic()

    reported = 0

    def progress(t: Tally) -> None:
        nonlocal reported
        print(f"{time.monotonic() - start:7.0f} s  {t.cases} cases  {t.calls} calls  {len(t.findings)} findings",
              file=sys.stderr, flush=True)
        for f in t.findings[reported:]:  # as they come, so a long run can be acted on before it ends
            print(f"  FINDING {f.case}: {f.what}: {f.detail}", file=sys.stderr, flush=True)
        reported = len(t.findings)
    tally = fuzz(args.seed, max_cases=args.max_cases, seconds=args.minutes * 60, progress=progress)
    data = figures(tally, (time.monotonic() - start) / 60, args.seed)
    print(json.dumps(data, indent=2))
    for f in tally.findings[:50]:
        print(f"FINDING {f.case}: {f.what}: {f.detail}")
    if args.json:
        args.json.write_text(json.dumps(data, indent=2) + "\n")
    if args.save_findings and tally.findings:
        args.save_findings.mkdir(parents=True, exist_ok=True)
        for k, f in enumerate(tally.findings):
            ext = ".npz" if " npz " in f.case else (".nnapi" if ".nnapi " in f.case else ".tflite")
            (args.save_findings / f"finding{k:04d}{ext}").write_bytes(f.data)
    return 1 if tally.findings else 0


if __name__ == "__main__":
    sys.exit(main())
