"""Times the conversion of a large (~20 MB) model and reports its peak memory.

    python benchmarks/bench_convert.py [--mb 20] [--api-level 30] [--json] [--keep DIR]

The model is generated with nnconv's own .tflite builder into a temporary directory (not committed):
CONV_2D 3x3 stride 2 (64->256), CONV_2D 3x3 stride 2 (256->256), CONV_2D 3x3 (256->256), then
FULLY_CONNECTED layers on the flattened 4x4x256 map, the first one sized so the file reaches `--mb`.
The conversion runs in a fresh child process so that its peak RSS (VmHWM) is not polluted by building
the model; the report gives the child's RSS after importing nnconv as the baseline. The timed steps are
read (mmap), check + lower + validate (`nnconv.convert`), and writing the .nnapi file.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def build_model(path: str, megabytes: float) -> None:
    sys.path.insert(0, str(ROOT))
    import numpy as np

    from nnconv.tflite.builder import TfliteBuilder
    from nnconv.tflite.options import Conv2DOptions, FullyConnectedOptions
    from nnconv.tflite.schema_enums import BuiltinOperator, Padding

    rng = np.random.default_rng(0)
    b = TfliteBuilder("nnconv conversion benchmark")
    x = b.input("image", (1, 16, 16, 64), np.float32)
    shape = (1, 16, 16, 64)
    used = 0
    for k, (cout, stride) in enumerate(((256, 2), (256, 2), (256, 1))):
        cin = shape[3]
        w = (rng.standard_normal((cout, 3, 3, cin)) * (1.0 / np.sqrt(9 * cin))).astype(np.float32)
        bias = rng.uniform(-0.1, 0.1, cout).astype(np.float32)
        shape = (1, shape[1] // stride, shape[2] // stride, cout)
        y = b.tensor(f"conv{k}", shape, np.float32)
        b.op(BuiltinOperator.CONV_2D, [x, b.const(f"conv{k}/w", w), b.const(f"conv{k}/b", bias)], [y],
             Conv2DOptions(padding=Padding.SAME, stride_w=stride, stride_h=stride, fused_activation_function=1))
        used += w.nbytes + bias.nbytes
        x = y
    flat = shape[1] * shape[2] * shape[3]
    tail = 10 * 1024 * 4 + 10 * 4
    units = max(16, int((megabytes * 2**20 - used - tail) / (4 * (flat + 10 + 1))))
    for k, (nin, nout, act) in enumerate(((flat, units, 1), (units, 10, 0))):
        w = (rng.standard_normal((nout, nin)) * (1.0 / np.sqrt(nin))).astype(np.float32)
        bias = rng.uniform(-0.1, 0.1, nout).astype(np.float32)
        y = b.tensor(f"fc{k}", (1, nout), np.float32)
        b.op(BuiltinOperator.FULLY_CONNECTED, [x, b.const(f"fc{k}/w", w), b.const(f"fc{k}/b", bias)], [y],
             FullyConnectedOptions(fused_activation_function=act))
        x = y
    b.output(x)
    with open(path, "wb") as f:
        f.write(b.finish())


def peak_rss_kb() -> int:
    """This process's peak resident set (VmHWM). Not getrusage's ru_maxrss: Linux carries that across
    execve, so a child would inherit the parent's peak from building the model."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # other systems: best effort


def child(path: str, api_level: int, out_dir: str) -> dict:
    """Runs inside the fresh process: imports, converts, writes, and reports times and peak RSS."""
    sys.path.insert(0, str(ROOT))
    import nnconv
    from nnconv.nnapi import serialize
    from nnconv.tflite.reader import read_model

    baseline = peak_rss_kb()
    t0 = time.perf_counter()
    model = read_model(path)
    t1 = time.perf_counter()
    converted, report = nnconv.convert(model, api_level=api_level)
    t2 = time.perf_counter()
    after_convert = peak_rss_kb()  # weights are still mmap views nobody has read
    out = os.path.join(out_dir, "model.nnapi")
    serialize.save(out, [converted])
    t3 = time.perf_counter()
    return {"model_mb": os.path.getsize(path) / 2**20, "api_level": api_level, "ops": len(report.ops),
            "nnapi_operations": len(converted.model.main.operations), "read_s": t1 - t0, "convert_s": t2 - t1,
            "write_s": t3 - t2, "total_s": t3 - t0, "nnapi_file_mb": os.path.getsize(out) / 2**20,
            "baseline_rss_mb": baseline / 1024, "convert_peak_rss_mb": after_convert / 1024,
            "peak_rss_mb": peak_rss_kb() / 1024}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=20.0, help="approximate model size in MB")
    ap.add_argument("--api-level", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keep", default=None, help="write the model and .nnapi file here instead of a temp dir")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.api_level, os.path.dirname(args.child))))
        return 0
    with tempfile.TemporaryDirectory(prefix="nnconv-bench-") as tmp:
        work = args.keep or tmp
        os.makedirs(work, exist_ok=True)
        path = os.path.join(work, "large.tflite")
        build_model(path, args.mb)
        proc = subprocess.run([sys.executable, __file__, "--child", path, "--api-level", str(args.api_level)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "conversion failed",
                  file=sys.stderr)
            return 1
        result = json.loads(proc.stdout.strip().splitlines()[-1])
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"model {result['model_mb']:.1f} MB, {result['ops']} TFLite ops -> {result['nnapi_operations']} NNAPI "
          f"operations at API {result['api_level']}")
    print(f"read {result['read_s']:.3f} s, convert {result['convert_s']:.3f} s, write .nnapi "
          f"{result['write_s']:.3f} s ({result['nnapi_file_mb']:.1f} MB), total {result['total_s']:.3f} s")
    base = result["baseline_rss_mb"]
    print(f"peak RSS {result['peak_rss_mb']:.0f} MB: {base:.0f} MB after imports, "
          f"+{result['convert_peak_rss_mb'] - base:.0f} MB through the conversion, "
          f"+{result['peak_rss_mb'] - base:.0f} MB once the .nnapi file is written (its pools are read from "
          "the mmapped .tflite)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
