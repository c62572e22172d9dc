"""Writes what nnconv produces for a set of models, so that a refactoring can show it changed nothing.

    python scripts/snapshot_outputs.py OUT_DIR [--models examples/models,tests/data/zoo] [--levels 27,...,35]
                                       [--targets delegate,nnconv] [--jobs 2]
    diff -r BEFORE_DIR AFTER_DIR

For every `.tflite` of the given folders, every level and target, OUT_DIR/<folder>/<stem>/<target>/<level>.*
holds the `check --format json` report (`.json`), the `.nnapi` file `convert` writes (`.nnapi`, with
`--allow-partial` for the nnconv target), the NDK C source of `--emit-c` (`.c`, `.h`) and each command's exit
code and stderr (`.log`). Timings are taken out of the report; everything else must be byte-identical.
The commands run in-process (click's test runner), one process per model with `--jobs`, on the nnconv of
the checkout the script is in. A `.nnapi` file's plan names the model's absolute path: take both snapshots in
the same checkout (`git checkout` the other commit there) to compare them byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # this checkout's nnconv, not an installed one (a worktree measures itself)
DEFAULT_MODELS = "examples/models,tests/data/zoo,tests/data/delegate/ops"
TIMING_KEYS = {"seconds", "timings", "elapsed"}


def _without_timings(value: object) -> object:
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def snapshot_model(job: tuple[str, str, list[int], list[str]]) -> str:
    from click.testing import CliRunner

    from nnconv.cli import main

    model, out_dir, levels, targets = job
    runner = CliRunner()
    for target in targets:
        where = Path(out_dir) / target
        where.mkdir(parents=True, exist_ok=True)
        for level in levels:
            log = []
            res = runner.invoke(main, ["check", model, "--api-level", str(level), "--target", target,
                                       "--format", "json"])
            log.append(f"check: exit {res.exit_code}\n{res.stderr}")
            try:
                report = json.dumps(_without_timings(json.loads(res.stdout)), indent=1, sort_keys=True)
            except ValueError:
                report = res.stdout
            (where / f"{level}.json").write_text(report)
            with tempfile.TemporaryDirectory() as tmp:
                nnapi, c_file = Path(tmp) / "m.nnapi", Path(tmp) / "m.c"
                extra = ["--allow-partial"] if target == "nnconv" else []
                res = runner.invoke(main, ["convert", model, "-o", str(nnapi), "--api-level", str(level),
                                           "--target", target, "--emit-c", str(c_file), "--c-prefix", "m", *extra])
                log.append(f"convert: exit {res.exit_code}\n{res.stderr}")
                for src, suffix in ((nnapi, ".nnapi"), (c_file, ".c"), (c_file.with_suffix(".h"), ".h")):
                    if src.exists():  # the C names the .nnapi file it reads: the temporary folder is masked
                        data = src.read_bytes()
                        if suffix != ".nnapi":
                            data = data.replace(tmp.encode(), b"<tmp>")
                        (where / f"{level}{suffix}").write_bytes(data)
                log = [entry.replace(tmp, "<tmp>") for entry in log]
            (where / f"{level}.log").write_text("\n".join(log).replace(str(ROOT) + os.sep, ""))
    return model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--models", default=DEFAULT_MODELS, help="comma-separated folders (relative to the repository)")
    ap.add_argument("--levels", default="27,28,29,30,31,33,34,35")
    ap.add_argument("--targets", default="delegate,nnconv")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    os.chdir(ROOT)  # model paths in reports and logs are relative to the repository
    levels = [int(x) for x in a.levels.split(",")]
    targets = a.targets.split(",")
    jobs = []
    for folder in a.models.split(","):
        for path in sorted(Path(folder).glob("*.tflite")):
            jobs.append((str(path), str(Path(a.out) / folder.replace("/", "_") / path.stem), levels, targets))
    with ProcessPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for done, model in enumerate(pool.map(snapshot_model, jobs, chunksize=1), 1):
            print(f"[{done}/{len(jobs)}] {model}", file=sys.stderr)


if __name__ == "__main__":
    main()
