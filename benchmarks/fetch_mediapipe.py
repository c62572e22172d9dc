"""Extracts MediaPipe's production .tflite models from the mediapipe wheel on PyPI, for benchmarks and sweeps.

mediapipe 0.10.14 ships its solution models (face, hand, palm, pose, iris, selfie segmentation) inside the
wheel under `mediapipe/modules/`; later releases dropped them. This downloads that one wheel with pip
(`--no-deps`, nothing installed) and writes its `.tflite` files flat into OUT. Needs network access to PyPI;
the models are not ours to commit (Apache 2.0, Google): keep OUT outside the repository.

    python benchmarks/fetch_mediapipe.py MEDIAPIPE_DIR
    python benchmarks/run.py MEDIAPIPE_DIR --clock cpu --runs 10 --warmup 2 --profile
"""

from __future__ import annotations

import argparse
import pathlib
import subprocess
import sys
import tempfile
import zipfile

WHEEL_VERSION = "0.10.14"  # the last release whose wheel carries mediapipe/modules/**/*.tflite
PLATFORM = "manylinux_2_17_x86_64"  # the models are the same in every platform's wheel


def download_wheel(into: pathlib.Path) -> pathlib.Path:
    """The mediapipe wheel for this interpreter (or, failing that, CPython 3.11 on x86-64 Linux)."""
    base = [sys.executable, "-m", "pip", "download", f"mediapipe=={WHEEL_VERSION}", "--no-deps", "-q", "-d",
            str(into)]
    attempts = [base, base + ["--only-binary=:all:", "--platform", PLATFORM, "--python-version", "3.11"]]
    for cmd in attempts:
        if subprocess.run(cmd, check=False).returncode == 0:
            wheels = sorted(into.glob("mediapipe-*.whl"))
            if wheels:
                return wheels[0]
    raise SystemExit(f"could not download mediapipe=={WHEEL_VERSION} from PyPI (network needed)")


def extract_models(wheel: pathlib.Path, out: pathlib.Path) -> list[pathlib.Path]:
    """Writes every `.tflite` of the wheel into `out` under its base name; returns the written paths."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with zipfile.ZipFile(wheel) as z:
        for name in sorted(z.namelist()):
            if name.endswith(".tflite"):
                path = out / pathlib.PurePosixPath(name).name
                path.write_bytes(z.read(name))
                written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="directory for the .tflite files (outside the repository)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = download_wheel(pathlib.Path(tmp))
        for path in extract_models(wheel, pathlib.Path(args.out)):
            print(f"{path}: {path.stat().st_size / 1e6:.1f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
