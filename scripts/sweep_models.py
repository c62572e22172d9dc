"""Sweeps real converter output for inconsistencies between `check`, `convert`, `run` and `verify`.

For every model and API level (27..35 by default) it runs, as the CLI does:

1. `check M --api-level L --format json` and `convert M --api-level L --allow-partial -o OUT.nnapi`: check's
   exit code must be convert's (check exits 0 with no partition when nothing lowers: convert then exits 3), and the TFLite ops of the partitions check promises must be
   the ops of the partitions convert wrote (read back with `inspect --format json`);
2. `run OUT.nnapi --partition K` for every partition on inputs of the partition's names, dtypes and shapes,
   three times: N(0, 1), N(0, 1e4) and zeros (integer inputs drawn from 0..1 so that indices stay in range,
   8-bit ones from their whole range): exit 0 (a time-out is reported as
   such: a WHILE loop with a data-dependent trip count may legitimately run long on random data);
3. `verify M --api-level L` at the verify levels (29, 30, 33 by default) unless `--no-verify`: PASS, exit 0;
4. every command: no traceback, no exit 4, an error message of one line;
5. the model's operators as nnconv's reader reads them (`nnconv.tflite.reader.read_model`) are, op by op,
   those TFLite's interpreter reports (`Interpreter._get_ops_details()`, main subgraph, no delegate): the
   same count and the same name at every index (a misread operator code shows here before any lowering).

Each model runs in its own worker process (`nice -n 10`, one at a time), which calls the CLI in-process
(`nnconv.cli.main`, stdout/stderr captured, `SystemExit` caught) to avoid starting Python some 4,000 times;
a finding can be reproduced with the printed `python -m nnconv ...` command. Not part of the test run.

    python scripts/sweep_models.py ZOO_DIR tests/data/zoo examples/models \\
        [--check-only MODELS_DIR] [--levels 27 ... 35] [--verify-levels 29 30 33] [--no-verify]
        [--fold-weights] [--input-kinds normal zeros large] [--json sweep.json]

Prints one line per finding and a summary (models x levels, outcomes per command and exit code, time);
exits 1 when there is any finding.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's nnconv, not an installed one
LEVELS = tuple(range(27, 36))
VERIFY_LEVELS = (29, 30, 33)
RUN_TIMEOUT_S = 60
VERIFY_TIMEOUT_S = 300
MODEL_TIMEOUT_S = 3600


class _Timeout(BaseException):
    """Raised by SIGALRM inside a command (a BaseException so that no `except Exception` swallows it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout()


def cli(*args: str, timeout: float = 0) -> dict[str, Any]:
    """One `nnconv` command run in-process: its exit code, stdout, stderr and seconds."""
    from nnconv.cli import main as nnconv_main
    out, err = io.StringIO(), io.StringIO()
    code: int | str = 0
    start = time.perf_counter()
    if timeout:
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            nnconv_main.main(args=list(args), prog_name="nnconv")
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except _Timeout:
        code = "timeout"
    except BaseException as e:  # noqa: BLE001 - anything escaping the CLI is itself a finding
        code = "escaped"
        err.write(f"Traceback (most recent call last):\n{type(e).__name__}: {e}\n")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue(),
            "seconds": round(time.perf_counter() - start, 2)}


def message_findings(cmd: str, res: dict[str, Any]) -> list[str]:
    """Rule 4: no traceback, no exit 4, and a failing command's error is one line."""
    found = []
    err = res["stderr"]
    if "Traceback" in err or res["code"] == "escaped":
        found.append(f"{cmd}: traceback: {_tail(err)}")
    if res["code"] == 4:
        found.append(f"{cmd}: exit 4: {_tail(err)}")
    # verify's exit 1 is a FAIL verdict, reported by its table (and as a finding by rule 3), not an error.
    if res["code"] not in (0, "timeout") and not (cmd == "verify" and res["code"] == 1):
        errors = [line for line in err.splitlines() if line.startswith("nnconv: error")]
        if len(errors) != 1:
            found.append(f"{cmd}: exit {res['code']} with {len(errors)} 'nnconv: error' lines: {_tail(err)}")
        else:
            # An error line's continuation (a wrapped or multi-line message) would follow it unindented.
            lines = err.splitlines()
            after = lines[lines.index(errors[0]) + 1:]
            if any(line and not line.startswith((" ", "nnconv:")) for line in after):
                found.append(f"{cmd}: error message is not one line: {_tail(err)}")
    return found


def _tail(text: str, n: int = 300) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-4:])[:n]


INPUT_KINDS = ("normal", "zeros", "large")


def random_inputs(inputs: list[dict[str, Any]], seed: int, kind: str = "normal") -> dict[str, Any]:
    """Inputs of the given names, dtypes and shapes: `normal` floats N(0, 1), `large` N(0, 1e4) (overflow
    in exp, large accumulations), `zeros` (divisions by a norm or a sum, log of 0)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    arrays = {}
    for spec in inputs:
        dtype, shape = np.dtype(spec["dtype"]), [max(int(d), 1) for d in spec["shape"]]
        if kind == "zeros":
            arrays[spec["name"]] = np.zeros(shape, dtype)
        elif dtype == np.bool_:
            arrays[spec["name"]] = rng.integers(0, 2, shape).astype(bool)
        elif dtype.kind in "iu":
            info = np.iinfo(dtype)
            # Quantized inputs span their range; plain integers (indices, counts) stay small.
            lo, hi = (info.min, info.max) if spec.get("quantized") or dtype.itemsize == 1 else (0, 1)
            arrays[spec["name"]] = rng.integers(lo, hi, shape, endpoint=True).astype(dtype)
        else:
            arrays[spec["name"]] = (rng.standard_normal(shape) * (1e4 if kind == "large" else 1)).astype(dtype)
    return arrays


def sweep_model(model: str, levels: list[int], verify_levels: list[int], do_run: bool,
                flags: tuple[str, ...] = (), kinds: tuple[str, ...] = INPUT_KINDS) -> dict[str, Any]:
    """Every check for one model (run in a worker process)."""
    import numpy as np
    signal.signal(signal.SIGALRM, _on_alarm)
    result: dict[str, Any] = {"model": model, "levels": {}, "findings": []}
    names, note = op_name_findings(model)
    result["findings"] += [f"{model} {f}" for f in names]
    if note:
        result.setdefault("notes", []).append(f"{model} {note}")
    with tempfile.TemporaryDirectory(prefix="nnconv-sweep-") as tmp:
        for level in levels:
            rec: dict[str, Any] = {}
            result["levels"][level] = rec
            where = f"{model} @{level}"
            findings = result["findings"]
            chk = cli("check", model, "--api-level", str(level), "--format", "json", *flags)
            rec["check"] = chk["code"]
            findings += [f"{where} {f}" for f in message_findings("check", chk)]
            out = os.path.join(tmp, f"m{level}.nnapi")
            conv = cli("convert", model, "--api-level", str(level), "--allow-partial", "-o", out, *flags)
            rec["convert"] = conv["code"]
            findings += [f"{where} {f}" for f in message_findings("convert", conv)]
            # check is a report: it exits 0 even when no op lowers (a policy such as --fail-on refused makes
            # that 1), where convert --allow-partial has nothing to write and exits 3. So check's partitions
            # decide convert's code: some partition -> 0, none -> 3.
            expected = chk["code"]
            if chk["code"] == 0:
                expected = 0 if json.loads(chk["stdout"])["partitions"] else 3
            if conv["code"] != expected:
                findings.append(f"{where} check exit {chk['code']} but convert exit {conv['code']}: "
                                f"{_tail(conv['stderr'])}")
            if conv["code"] != 0 or not os.path.exists(out):
                continue
            ins = cli("inspect", out, "--format", "json")
            if ins["code"] != 0:
                findings.append(f"{where} inspect of convert's output: exit {ins['code']}: {_tail(ins['stderr'])}")
                continue
            parts = json.loads(ins["stdout"])["partitions"]
            written = [sorted(p["tflite_ops"]) for p in parts if p.get("tflite_subgraph", 0) == 0]
            if chk["code"] == 0:
                report = json.loads(chk["stdout"])
                promised = [sorted(p["ops"]) for p in report["partitions"] if not p.get("error")]
                if sorted(promised) != sorted(written):
                    findings.append(f"{where} check promises partitions {_brief(promised)}, convert wrote "
                                    f"{_brief(written)}")
                findings += [f"{where} {f}" for f in op_type_findings(report, out)]
            rec["partitions"] = len(parts)
            if not do_run:
                continue
            rec["run"] = []
            for k, part in enumerate(parts):
                for kind in kinds:
                    npz_in, npz_out = os.path.join(tmp, "in.npz"), os.path.join(tmp, "out.npz")
                    np.savez(npz_in, **random_inputs(part["inputs"], seed=level * 100 + k, kind=kind))
                    r = cli("run", out, "--partition", str(k), "--inputs", npz_in, "-o", npz_out,
                            timeout=RUN_TIMEOUT_S)
                    rec["run"].append(r["code"])
                    what = f"run --partition {k} ({kind} inputs)"
                    findings += [f"{where} {f}" for f in message_findings(what, r)]
                    if r["code"] not in (0, "timeout"):
                        findings.append(f"{where} {what} exit {r['code']}: {_tail(r['stderr'])}")
                    elif r["code"] == "timeout":
                        result.setdefault("notes", []).append(f"{where} {what} timed out after "
                                                              f"{RUN_TIMEOUT_S} s")
        for level in verify_levels:
            v = cli("verify", model, "--api-level", str(level), "--allow-partial", *flags,
                    timeout=VERIFY_TIMEOUT_S)
            result["levels"].setdefault(level, {})["verify"] = v["code"]
            where = f"{model} @{level}"
            result["findings"] += [f"{where} {f}" for f in message_findings("verify", v)]
            if v["code"] not in (0, 3):
                result["findings"].append(f"{where} verify exit {v['code']}: {_tail(v['stdout'] + v['stderr'])}")
    return result


def op_name_findings(model: str) -> tuple[list[str], str]:
    """Rule 5: the main subgraph's operators, index by index, named as TFLite's interpreter names them.

    TFLite names a custom operator by its custom code alone; nnconv writes `CUSTOM(code)`. A model TFLite
    cannot load is a note, not a finding (what nnconv does with it is what the other rules cover)."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from nnconv.tflite.reader import read_model
    try:
        theirs = Interpreter(model_path=model, experimental_op_resolver_type=(
            OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES))._get_ops_details()
    except Exception as e:  # noqa: BLE001 - TFLite's refusal is a note, not nnconv's finding
        return [], f"TFLite's interpreter cannot load it: {_tail(str(e))}"
    try:
        ours = read_model(model).main.operators
    except Exception as e:  # noqa: BLE001 - nnconv refusing what TFLite loads is a finding
        return [f"nnconv's reader refuses a model TFLite loads: {type(e).__name__}: {_tail(str(e))}"], ""
    found = []
    if len(ours) != len(theirs):
        found.append(f"op count: nnconv reads {len(ours)} ops, TFLite {len(theirs)}")
    for op, d in zip(ours, theirs):
        name = op.custom_code if op.name.startswith("CUSTOM(") else op.name
        if name != d["op_name"]:
            found.append(f"op #{op.index}: nnconv reads {op.name}, TFLite {d['op_name']}")
    return found, ""


def op_type_findings(report: dict[str, Any], nnapi_path: str) -> list[str]:
    """The NNAPI operation types check names for each TFLite op are those convert wrote for it (main
    subgraph of each partition; an IF/WHILE's branches and bodies are their own NNAPI models)."""
    from nnconv.nnapi.serialize import load
    written: dict[int, set[str]] = {}
    for part in load(nnapi_path).partitions:
        for op in part.model.main.operations:
            written.setdefault(op.source_op, set()).add(op.type.name)
    found = []
    for op in report["ops"]:
        if op["partition"] is None or op["partition"] < 0:
            continue
        said, wrote = set(op["nnapi_ops"]), written.get(op["index"], set())
        if said != wrote:
            found.append(f"check says op #{op['index']} {op['op']} lowers to {sorted(said)}, convert wrote "
                         f"{sorted(wrote)}")
    return found


def _brief(parts: list[list[int]]) -> str:
    return "[" + ", ".join(f"{len(p)} ops {p[0]}..{p[-1]}" if p else "0 ops" for p in parts) + "]"


def models_of(paths: list[str]) -> list[str]:
    found = []
    for p in map(pathlib.Path, paths):
        found += sorted(str(m) for m in p.glob("*.tflite")) if p.is_dir() else [str(p)]
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="*", help="models or folders: check, convert, run and verify")
    ap.add_argument("--check-only", nargs="*", default=[], help="models or folders: check and convert only")
    ap.add_argument("--levels", nargs="*", type=int, default=list(LEVELS))
    ap.add_argument("--verify-levels", nargs="*", type=int, default=list(VERIFY_LEVELS))
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--input-kinds", nargs="*", default=list(INPUT_KINDS), choices=INPUT_KINDS,
                    help="inputs `run` gets for each partition (default: all three)")
    ap.add_argument("--fold-weights", action="store_true", help="pass --fold-weights to check, convert, verify")
    ap.add_argument("--json", help="save every result here")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--worker-light", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        verify_levels = [] if args.no_verify or args.worker_light else args.verify_levels
        flags = ("--fold-weights",) if args.fold_weights else ()
        print(json.dumps(sweep_model(args.worker, args.levels, verify_levels, not args.worker_light, flags,
                                     tuple(args.input_kinds))))
        return 0
    start = time.perf_counter()
    jobs = [(m, False) for m in models_of(args.paths)] + [(m, True) for m in models_of(args.check_only)]
    results, counts, findings, notes = [], Counter(), [], []
    for i, (model, light) in enumerate(jobs):
        cmd = ["nice", "-n", "10", sys.executable, __file__, "--worker", model,
               "--levels", *map(str, args.levels), "--verify-levels", *map(str, args.verify_levels)]
        cmd += ["--input-kinds", *args.input_kinds]
        cmd += ["--worker-light"] if light else []
        cmd += ["--no-verify"] if args.no_verify else []
        cmd += ["--fold-weights"] if args.fold_weights else []
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=MODEL_TIMEOUT_S)
            res = json.loads(proc.stdout.strip().splitlines()[-1])
        except (subprocess.TimeoutExpired, json.JSONDecodeError, IndexError) as e:
            res = {"model": model, "levels": {}, "findings": [f"{model}: worker failed: {type(e).__name__}"]}
        results.append(res)
        for rec in res["levels"].values():
            for cmd_name in ("check", "convert", "verify"):
                if cmd_name in rec:
                    counts[f"{cmd_name} {rec[cmd_name]}"] += 1
            for code in rec.get("run", []):
                counts[f"run {code}"] += 1
        findings += res["findings"]
        notes += res.get("notes", [])
        print(f"[{i + 1}/{len(jobs)}] {model}: {len(res['findings'])} findings "
              f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr, flush=True)
        for f in res["findings"]:
            print(f"  FINDING {f}", file=sys.stderr, flush=True)
    elapsed = time.perf_counter() - start
    n_levels = sum(len([lv for lv, r in res["levels"].items() if "check" in r]) for res in results)
    print(f"{len(jobs)} models, {n_levels} model x level pairs, {elapsed:.0f} s")
    print("outcomes: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))
    for n in notes:
        print(f"note: {n}")
    for f in findings:
        print(f"FINDING {f}")
    print(f"{len(findings)} findings")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps({"results": results, "counts": counts,
                                                       "seconds": elapsed}, indent=1))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
