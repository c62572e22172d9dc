"""The conversion guard of run.py: a synthetic ~100 MB float model must convert fast and without copies.

The model comes from `bench_convert.build_model` (nnconv's own builder: three 3x3 convolutions, then
fully-connected layers sized to reach the requested size). A fresh child process reads it, converts it and
writes the .nnapi file, timing each step and tracing the peak memory allocated meanwhile (tracemalloc) and
its peak RSS growth over the RSS after imports (VmHWM; it counts the mmapped weights as they are paged in
by the write). Limits: read + lower within `TIME_LIMIT_S`, the write within a small factor of a plain
durable (fsynced) write of the mmapped model file, and both memory figures under 1.5x the model's size (the weights stay views of the mmap, so a conversion holds no copy of them).
"""

from __future__ import annotations

import json
import os
import mmap
import subprocess
import sys
import tempfile
import time
import tracemalloc

from bench_convert import ROOT, build_model, peak_rss_kb

# Reading and lowering a 100 MB model takes ~0.03 s (nothing is copied); the write moves every weight byte
# into the .nnapi file once, so it is held to one write of the mmapped .tflite file into a new file (the
# floor of that, measured in the same child) times WRITE_FACTOR plus WRITE_SLACK_S, not to a fixed figure.
TIME_LIMIT_S = 0.1
WRITE_FACTOR = 1.5
WRITE_SLACK_S = 0.02
MEMORY_FACTOR = 1.5
WARMUP_MODEL = ROOT / "examples" / "models" / "mobilenet_v2_float.tflite"


def _child(path: str, api_level: int) -> dict:
    sys.path.insert(0, str(ROOT))
    import nnconv
    from nnconv.nnapi import serialize
    from nnconv.tflite.reader import read_model

    # One conversion of a small fixture first: lazy imports and registries are not the conversion's cost.
    warm = os.path.join(os.path.dirname(path), "warm.nnapi")
    serialize.save(warm, [nnconv.convert(read_model(str(WARMUP_MODEL)), api_level=api_level).converted])
    baseline = peak_rss_kb()
    tracemalloc.start()
    t0 = time.perf_counter()
    model = read_model(path)
    t1 = time.perf_counter()
    converted, _report = nnconv.convert(model, api_level=api_level)
    t2 = time.perf_counter()
    serialize.save(os.path.join(os.path.dirname(path), "model.nnapi"), [converted])
    t3 = time.perf_counter()
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss_growth_mb = (peak_rss_kb() - baseline) / 1024
    # The floor of any durable write that takes the weights from the mmap: one write of the whole mapped
    # file (a fresh mapping, so its pages fault in as the conversion's did), flushed and fsynced as
    # `nnconv.safe_write` does before its rename (without the fsync the floor is the page cache's speed:
    # 64 ms against 200-250 ms with it on an idle machine, and the guard compared unlike writes).
    t4 = time.perf_counter()
    with open(path, "rb") as src, open(os.path.join(os.path.dirname(path), "copy.tflite"), "wb") as dst:
        with mmap.mmap(src.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            dst.write(mapped)
        dst.flush()
        os.fsync(dst.fileno())
    copy_s = time.perf_counter() - t4
    return {"copy_s": copy_s, "read_s": t1 - t0, "convert_s": t2 - t1, "write_s": t3 - t2, "total_s": t3 - t0,
            "traced_peak_mb": traced / 2**20, "rss_growth_mb": rss_growth_mb}


def run_guard(megabytes: float = 100.0, api_level: int = 30) -> dict:
    with tempfile.TemporaryDirectory(prefix="nnconv-guard-") as tmp:
        path = os.path.join(tmp, "large.tflite")
        build_model(path, megabytes)
        size_mb = os.path.getsize(path) / 2**20
        # best of 3 fresh processes for the time (the first may find a cold page cache); memory of the last
        results = []
        for _ in range(3):
            proc = subprocess.run([sys.executable, __file__, path, str(api_level)], capture_output=True, text=True)
            if proc.returncode != 0:
                tail = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "the child failed"
                return {"model_mb": size_mb, "ok": False, "error": tail}
            results.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    best = min(results, key=lambda r: r["total_s"])
    out = dict(best, traced_peak_mb=results[-1]["traced_peak_mb"], rss_growth_mb=results[-1]["rss_growth_mb"],
               model_mb=size_mb, time_limit_s=TIME_LIMIT_S, memory_limit_mb=MEMORY_FACTOR * size_mb)
    out["write_limit_s"] = WRITE_FACTOR * out["copy_s"] + WRITE_SLACK_S
    out["ok"] = (out["read_s"] + out["convert_s"] <= TIME_LIMIT_S and out["write_s"] <= out["write_limit_s"]
                 and out["traced_peak_mb"] < out["memory_limit_mb"]
                 and out["rss_growth_mb"] < out["memory_limit_mb"])
    return out


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], int(sys.argv[2]))))
