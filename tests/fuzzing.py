"""A seeded mutation fuzzer of nnconv's commands, run in-process through click's CliRunner.

Each case takes a seed model (`fuzz_seeds.SEEDS`), mutates its bytes (a `.tflite`, the `.nnapi` file it
converts to, or the `.npz` of its inputs), and runs `check`, `convert`, `run` on the result. Every outcome
must be a documented one (docs/errors.md): exit 0..3 with, on an error, exactly one `nnconv: error:` line
and no traceback; `check` must agree with `convert` (check exit 0 with --fail-on refused => convert exit 0;
check exit 2 <=> convert exit 2). Exit 4 (our bug), an exception escaping the command, a call slower than
the time limit and a disagreement are findings. Used by tests/test_fuzz.py (a short run in CI) and by
scripts/fuzz.py (the long run).

Mutations target the bytes that are not weight data (the flatbuffer tables: offsets, counts, shapes,
quantization, options, indices) most of the time, since random weights only change numbers.
"""

from __future__ import annotations

import io
import json
import os
import random
import signal
import struct
import tempfile
import time
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import tflite
from click.testing import CliRunner

from fuzz_seeds import SEEDS, Seed
from nnconv.cli import main

DOCUMENTED_EXITS = {"check": {0, 1, 2, 3}, "convert": {0, 2, 3}, "run": {0, 2}}
CALL_TIME_LIMIT = 20.0  # seconds; a call slower than this counts as a hang
RUN_MAX_MEMORY = "256M"  # the --max-memory given to `run` (bounded fuzzing on a shared machine)

_INT32_EDGES = (0, 1, 2, 3, 4, 7, 8, 255, 256, 127, 128, -1, -2, -128, -129, 32767, 65535, 65536,
                0x7FFFFFFF, -0x80000000, 0x40000000, 1 << 20)
_INT64_EDGES = (0, 1, -1, 255, -129, 1 << 31, -(1 << 31) - 1, (1 << 63) - 1, -(1 << 63), 1 << 40)
_FLOAT_EDGES = (float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-45, 1e-38, 3.4e38, -1.0, -0.5,
                1e30, 1e-30, 2.0)


class CallTimeout(BaseException):
    """Raised by the alarm when one command exceeds CALL_TIME_LIMIT (BaseException: no handler eats it)."""


@dataclass
class Finding:
    case: str
    what: str
    detail: str
    data: bytes = field(repr=False, default=b"")


@dataclass
class Tally:
    cases: int = 0
    mutated_files: int = 0
    calls: int = 0
    exits: Counter = field(default_factory=Counter)  # (command, exit code) -> count
    findings: list[Finding] = field(default_factory=list)
    reasons: Counter = field(default_factory=Counter)  # first words of exit-2 messages
    slowest: float = 0.0
    slowest_case: str = ""
    seconds_by_seed: Counter = field(default_factory=Counter)  # wall time spent on each seed's mutants

    def add(self, other: "Tally") -> None:
        self.cases += other.cases
        self.mutated_files += other.mutated_files
        self.calls += other.calls
        self.exits.update(other.exits)
        self.findings += other.findings
        self.reasons.update(other.reasons)
        self.slowest = max(self.slowest, other.slowest)
        self.seconds_by_seed.update(other.seconds_by_seed)


# -- mutations ----------------------------------------------------------------------------------------
def tflite_data_spans(data: bytes) -> list[tuple[int, int]]:
    """(offset, size) of every buffer's bytes in a valid .tflite (the weights)."""
    m = tflite.Model.GetRootAs(data, 0)
    spans = []
    for i in range(m.BuffersLength()):
        b = m.Buffers(i)
        n = b.DataLength()
        if n:
            spans.append((b._tab.Vector(b._tab.Offset(4)), n))
    return spans


def structure_offsets(size: int, data_spans: list[tuple[int, int]]) -> np.ndarray:
    """Offsets of the bytes outside the weight data (the flatbuffer tables)."""
    mask = np.ones(size, dtype=bool)
    for off, n in data_spans:
        mask[off:off + n] = False
    return np.flatnonzero(mask)


def mutate(data: bytes, rng: random.Random, structure: np.ndarray) -> tuple[bytes, str]:
    """One to three mutations; returns the mutant and a short description."""
    buf = bytearray(data)
    kinds = []
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        if structure.size and rng.random() < 0.9:
            pos = int(structure[rng.randrange(structure.size)])
        else:
            pos = rng.randrange(len(buf))
        pos = min(pos, len(buf) - 1)  # an earlier truncation may have shortened the file
        kind = rng.choice(("int32", "int32", "int64", "float", "byte", "bits", "truncate", "splice", "delta"))
        kinds.append(f"{kind}@{pos}")
        if kind == "int32":
            pos &= ~3
            if pos + 4 <= len(buf):
                buf[pos:pos + 4] = struct.pack("<i", rng.choice(_INT32_EDGES))
        elif kind == "delta":
            pos &= ~3
            if pos + 4 <= len(buf):
                (v,) = struct.unpack_from("<i", buf, pos)
                buf[pos:pos + 4] = struct.pack("<i", max(-2**31, min(2**31 - 1, v + rng.choice((-8, -4, -1, 1, 4, 8)))))
        elif kind == "int64":
            pos &= ~7
            if pos + 8 <= len(buf):
                buf[pos:pos + 8] = struct.pack("<q", rng.choice(_INT64_EDGES))
        elif kind == "float":
            pos &= ~3
            if pos + 4 <= len(buf):
                buf[pos:pos + 4] = struct.pack("<f", rng.choice(_FLOAT_EDGES))
        elif kind == "byte":
            buf[pos] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        elif kind == "bits":
            buf[pos] ^= 1 << rng.randrange(8)
        elif kind == "truncate":
            del buf[max(8, pos):]
        else:  # splice: copy 4..64 bytes from elsewhere in the file
            n = rng.randrange(4, 65)
            src = rng.randrange(max(1, len(buf) - n))
            buf[pos:pos + n] = buf[src:src + n]
    return bytes(buf), "+".join(kinds)


def bad_npz_kinds(good: dict[str, np.ndarray]) -> list[tuple[str, bytes]]:
    """Hand-made hostile .npz files: wrong formats, lying headers, bombs, pickles."""
    def npz(arrays: dict, compress: bool = False) -> bytes:
        f = io.BytesIO()
        (np.savez_compressed if compress else np.savez)(f, **arrays)
        return f.getvalue()

    def raw_member(name: str, header: bytes, payload: bytes = b"", method: int = zipfile.ZIP_STORED) -> bytes:
        f = io.BytesIO()
        with zipfile.ZipFile(f, "w", method) as z:
            z.writestr(name, header + payload)
        return f.getvalue()

    def npy_header(descr: str, shape: tuple, fortran: bool = False) -> bytes:
        d = repr({"descr": descr, "fortran_order": fortran, "shape": shape}).encode()
        pad = 64 - (10 + len(d) + 1) % 64
        return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d) + pad + 1) + d + b" " * pad + b"\n"

    first = next(iter(good)) if good else "x"
    kinds = [
        ("text", b"just some text, not an archive\n"),
        ("empty", b""),
        ("npy", _npy(np.zeros(3, np.float32))),
        ("pickle-object", raw_member(f"{first}.npy", npy_header("|O", (1,)), b"\x80\x04N.")),
        ("huge-shape", raw_member(f"{first}.npy", npy_header("<f4", (1 << 20, 1 << 20)))),
        ("negative-shape", raw_member(f"{first}.npy", npy_header("<f4", (-1,)))),
        ("bad-dtype", raw_member(f"{first}.npy", npy_header("<U9", (2,)), b"\0" * 72)),
        ("short-payload", raw_member(f"{first}.npy", npy_header("<f4", (100,)), b"\0" * 8)),
        ("bomb", raw_member(f"{first}.npy", npy_header("<f4", (64 << 20,)), b"\0" * (256 << 20),
                            zipfile.ZIP_DEFLATED)),
        ("not-npy-member", raw_member(f"{first}.npy", b"garbage" * 10)),
        ("dir-member", raw_member("sub/", b"")),
        ("wrong-name", npz({"no_such_input": np.zeros(2, np.float32)})),
        ("wrong-dtype", npz({k: v.astype(np.float64) for k, v in good.items()})),
        ("wrong-shape", npz({k: np.zeros((3,), v.dtype) for k, v in good.items()})),
        ("missing", npz({})),
        ("truncated", npz(good)[:-20]),
        ("compressed-ok", npz(good, compress=True)),
        ("fortran", raw_member(f"{first}.npy", npy_header("<f4", (2, 2), fortran=True), b"\0" * 16)),
    ]
    return kinds


def _npy(a: np.ndarray) -> bytes:
    f = io.BytesIO()
    np.save(f, a)
    return f.getvalue()


# -- running the commands ---------------------------------------------------------------------------
class Harness:
    """Runs commands in-process and checks each outcome; collects a Tally."""

    def __init__(self, workdir: str, time_limit: float = CALL_TIME_LIMIT) -> None:
        self.dir = workdir
        self.runner = CliRunner()
        self.time_limit = time_limit
        self.tally = Tally()
        self.last_stdout = ""

    def path(self, name: str) -> str:
        return os.path.join(self.dir, name)

    def write(self, name: str, data: bytes) -> str:
        p = self.path(name)
        with open(p, "wb") as f:
            f.write(data)
        return p

    def call(self, case: str, command: str, args: list[str], data: bytes = b"") -> tuple[int, str]:
        """Runs `nnconv COMMAND ARGS`; returns (exit code, stderr) and records any finding."""
        def on_alarm(signum: int, frame: object) -> None:
            raise CallTimeout()
        start = time.monotonic()
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, self.time_limit)
        try:
            result = self.runner.invoke(main, [command, *args], catch_exceptions=True)
        except CallTimeout:
            self.finding(case, "hang", f"{command} took over {self.time_limit:g} s", data)
            return -1, ""
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        elapsed = time.monotonic() - start
        if elapsed > self.tally.slowest:
            self.tally.slowest, self.tally.slowest_case = elapsed, f"{case}: {command}"
        self.tally.calls += 1
        code = result.exit_code
        self.tally.exits[(command, code)] += 1
        stderr = result.stderr
        self.last_stdout = result.stdout
        exc = result.exception
        if exc is not None and not isinstance(exc, SystemExit):
            self.finding(case, "exception", f"{command}: {type(exc).__name__}: {exc}", data)
            return -1, stderr
        if "Traceback" in stderr:
            self.finding(case, "traceback", f"{command}: {stderr[-300:]}", data)
        if code not in DOCUMENTED_EXITS[command]:
            self.finding(case, f"exit {code}", f"{command}: {last_line(stderr)}", data)
        if code != 0:
            errors = [ln for ln in stderr.splitlines() if ln.startswith("nnconv: error:")]
            if code in (2, 4) and len(errors) != 1:
                self.finding(case, "not one line", f"{command} exit {code}: {stderr[-300:]!r}", data)
            if code == 2 and errors:
                self.tally.reasons[reason_class(errors[0])] += 1
        return code, stderr

    def finding(self, case: str, what: str, detail: str, data: bytes) -> None:
        self.tally.findings.append(Finding(case, what, " ".join(detail.split())[:400], data))

    # -- one case -----------------------------------------------------------------------------------
    def tflite_case(self, case: str, seed: Seed, data: bytes) -> None:
        """check, convert and (when it converts) run one .tflite; check and convert must agree."""
        model = self.write("m.tflite", data)
        level = ["--api-level", str(seed.api_level)]
        fold = ["--fold-weights"] if seed.fold_weights else []
        partial = ["--allow-partial"] if seed.partial else []
        # the seeds are made for nnconv's own converter (some need --fold-weights): the nnconv target
        check_code, _ = self.call(case, "check", [model, "--target", "nnconv", *level, *fold, "--format", "json",
                                                  *([] if seed.partial else ["--fail-on", "refused"])], data)
        # For a partial seed, check (no --fail-on) promises `convert --allow-partial` a file only when it
        # reports a partition, or when there is no op at all (the model then lowers whole): with ops but no
        # partition, convert --allow-partial's exit 3 is the agreed outcome.
        nothing_delegated = seed.partial and check_code == 0 and _no_partition(self.last_stdout)
        out = self.path("m.nnapi")
        if os.path.exists(out):
            os.unlink(out)
        conv_code, conv_err = self.call(case, "convert", [model, "--target", "nnconv", "-o", out, *level, *fold,
                                                          *partial], data)
        if check_code == 0 and conv_code != 0 and not (nothing_delegated and conv_code == 3):
            self.finding(case, "check/convert disagree", f"check exit 0, convert exit {conv_code}: "
                                                         f"{last_line(conv_err)}", data)
        if (check_code == 2) != (conv_code == 2) and -1 not in (check_code, conv_code):
            self.finding(case, "check/convert disagree", f"check exit {check_code}, convert exit {conv_code}: "
                                                         f"{last_line(conv_err)}", data)
        if conv_code != 0 and os.path.exists(out):
            self.finding(case, "partial output", f"convert exit {conv_code} left {out}", data)
        if conv_code == 0:
            self.run_case(case, out, data, seed)

    def run_case(self, case: str, nnapi_path: str, data: bytes, seed: Seed,
                 inputs: bytes | None = None) -> int:
        args = [nnapi_path]
        if seed.partial:
            args += ["--partition", "0"]
        if inputs is None:
            inputs = self.inputs_for(nnapi_path, seed)
        in_path = self.write("in.npz", inputs)
        out = self.path("out.npz")
        if os.path.exists(out):
            os.unlink(out)
        limit = ["--max-memory", RUN_MAX_MEMORY] if RUN_MAX_MEMORY else []
        code, _ = self.call(case, "run", [*args, "--inputs", in_path, "-o", out, *limit], data)
        if code != 0 and os.path.exists(out):
            self.finding(case, "partial output", f"run exit {code} left {out}", data)
        return code

    def inputs_for(self, nnapi_path: str, seed: Seed) -> bytes:
        """Seeded inputs for the file's partition 0 (tiny placeholders for absurd declared shapes, which
        `run` must then refuse by itself)."""
        from nnconv.errors import NnconvError
        from nnconv.nnapi import serialize
        from nnconv.parity import random_inputs
        try:
            specs = serialize.load(nnapi_path).partitions[0].inputs
        except NnconvError:
            return _npz_bytes({"x": np.zeros(1, np.float32)})
        if any(int(np.prod([max(d, 1) for d in s.shape], dtype=np.float64)) > 1 << 22 for s in specs):
            return _npz_bytes({s.name: np.zeros(1, np.float32) for s in specs})
        arrays = random_inputs(specs, 0)
        if seed.name == "while_signature" and "i" in arrays:
            arrays["i"] = np.zeros_like(arrays["i"])
        return _npz_bytes(arrays)


def _no_partition(check_json: str) -> bool:
    """True when `check --format json` reported ops but no partition to delegate."""
    try:
        summary = json.loads(check_json)["summary"]
    except (ValueError, KeyError, TypeError):
        return False
    return summary.get("ops_total", 0) > 0 and summary.get("partitions", 0) == 0


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    f = io.BytesIO()
    np.savez(f, **arrays)
    return f.getvalue()


def last_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def reason_class(line: str) -> str:
    """A coarse class of an error line, for the figures: its words after the file name, numbers removed."""
    text = line.removeprefix("nnconv: error:").strip()
    if ": " in text:
        text = text.split(": ", 1)[1]
    words = [w for w in text.replace("'", " ").split() if not any(c.isdigit() for c in w)][:5]
    return " ".join(words)


# -- the loop -----------------------------------------------------------------------------------------
@dataclass
class Prepared:
    seed: Seed
    tflite: bytes
    tflite_structure: np.ndarray
    nnapi: bytes
    nnapi_structure: np.ndarray
    inputs: bytes
    good_inputs: dict[str, np.ndarray]


def prepare(h: Harness, seeds: tuple[Seed, ...] = SEEDS) -> list[Prepared]:
    """Converts every seed once (they must convert: a seed that does not is a broken fuzzer)."""
    from nnconv.nnapi import serialize
    out = []
    for seed in seeds:
        data = seed.build()
        model = h.write("seed.tflite", data)
        nnapi = h.path("seed.nnapi")
        args = [model, "--target", "nnconv", "-o", nnapi, "--api-level", str(seed.api_level)]
        args += ["--fold-weights"] if seed.fold_weights else []
        args += ["--allow-partial"] if seed.partial else []
        result = h.runner.invoke(main, ["convert", *args])
        if result.exit_code != 0:
            raise RuntimeError(f"seed {seed.name} does not convert: {result.stderr}")
        nn_bytes = open(nnapi, "rb").read()
        loaded = serialize.load(nnapi)
        first_pool = min((off for row in loaded.pool_spans for off, _ in row), default=len(nn_bytes))
        del loaded
        inputs = h.inputs_for(nnapi, seed)
        with np.load(io.BytesIO(inputs)) as z:
            good = {k: z[k] for k in z.files}
        out.append(Prepared(seed, data, structure_offsets(len(data), tflite_data_spans(data)), nn_bytes,
                            np.arange(first_pool), inputs, good))
    return out


def cases(prepared: list[Prepared], rng: random.Random) -> Iterator[tuple[str, Prepared, Callable[[Harness, str], None]]]:
    """An endless, seeded stream of cases: mostly mutated .tflite files, then .nnapi files and .npz inputs."""
    n = 0
    while True:
        p = prepared[n % len(prepared)]
        n += 1
        r = rng.random()
        if r < 0.7:
            data, how = mutate(p.tflite, rng, p.tflite_structure)
            yield (f"{p.seed.name}.tflite {how}", p,
                   lambda h, case, p=p, data=data: h.tflite_case(case, p.seed, data))
        elif r < 0.92:
            data, how = mutate(p.nnapi, rng, p.nnapi_structure)

            def nnapi_case(h: Harness, case: str, p: Prepared = p, data: bytes = data) -> None:
                path = h.write("m.nnapi", data)
                h.run_case(case, path, data, p.seed, inputs=p.inputs)
            yield f"{p.seed.name}.nnapi {how}", p, nnapi_case
        else:
            if rng.random() < 0.5:
                kinds = bad_npz_kinds(p.good_inputs) if rng.random() < 0.3 else []
                if kinds:
                    name, data = rng.choice([k for k in kinds if k[0] != "bomb"] if rng.random() < 0.9 else kinds)
                    how = f"npz {name}"
                else:
                    data, how = mutate(p.inputs, rng, np.arange(0))
                    how = f"npz {how}"
            else:
                data, how = mutate(p.inputs, rng, np.arange(0))
                how = f"npz {how}"

            def npz_case(h: Harness, case: str, p: Prepared = p, data: bytes = data) -> None:
                path = h.write("m.nnapi", p.nnapi)
                h.run_case(case, path, data, p.seed, inputs=data)
            yield f"{p.seed.name} {how}", p, npz_case


def fuzz(seed: int, max_cases: int | None = None, seconds: float | None = None,
         workdir: str | None = None, progress: Callable[[Tally], None] | None = None) -> Tally:
    """Runs cases until `max_cases` or `seconds` is reached; returns the tally."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory(dir=workdir) as d:
        h = Harness(d)
        prepared = prepare(h)
        deadline = None if seconds is None else time.monotonic() + seconds
        for name, p, run in cases(prepared, rng):
            if max_cases is not None and h.tally.cases >= max_cases:
                break
            if deadline is not None and time.monotonic() >= deadline:
                break
            h.tally.cases += 1
            h.tally.mutated_files += 1
            started = time.monotonic()
            run(h, f"#{h.tally.cases} {name}")
            h.tally.seconds_by_seed[p.seed.name] += time.monotonic() - started
            if progress is not None and h.tally.cases % 200 == 0:
                progress(h.tally)
        return h.tally
