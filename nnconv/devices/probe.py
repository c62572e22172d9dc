"""`nnconv probe`: an NDK program that asks a phone's NNAPI drivers what they take of one model, and writes
what they said as device profiles (`profile.py`'s format) that `check --device` reads.

`write_probe(model, out_dir, api_level)` converts the model (every partition that lowers, without the
delegate's partition limit) and writes into `out_dir`:

- `model.nnapi`, `model.c` / `model.h`: the converted model and the C that builds it (`convert --emit-c`);
- `probe.c`: a `main(argc, argv)` run as `nnconv_probe model.nnapi OUT_DIR`. From API 29 it enumerates the
  devices (`ANeuralNetworks_getDeviceCount`, `_getDevice`, `ANeuralNetworksDevice_getName` / `_getType` /
  `_getFeatureLevel` / `_getVersion`) and, for each device and each partition, asks
  `ANeuralNetworksModel_getSupportedOperationsForDevices` about every operation and tries
  `ANeuralNetworksCompilation_createForDevices` + `_finish`; it writes `OUT_DIR/profile-<device>.json`.
  Below API 29 there are no devices to name: it compiles each partition with `ANeuralNetworksCompilation_create`
  and writes `profile-nnapi-runtime.json`, whose operations are those of the partitions that compiled
  (NNAPI took them, on some driver or its CPU fallback);
- `build.sh`: builds `nnconv_probe` with the NDK's clang for an ABI (`ANDROID_NDK=... ./build.sh arm64-v8a`);
- `run_on_device.sh`: pushes the program and the model with `adb`, runs it, pulls the profiles. Always written:
  it runs where a phone is attached, which is seldom the machine that converts (the script checks for `adb`).

A probe profile lists, per NNAPI operation, the input-0 / output-0 type pairs of the operations the device
took (one entry per distinct pair); its `probe` field keeps the raw answers (every operation, each
partition's compilation status). On this machine `run_on_host` builds the same program against nnconv's
NDK header and host recorder, whose fake devices come from `$NNCONV_FAKE_DEVICES`
(`nnapi/ndk/recorder_devices.c`).
"""

from __future__ import annotations

import os
import pathlib
import subprocess
from dataclasses import dataclass

from nnconv.errors import NnconvError
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.emit_c import c_comment, write_c
from nnconv.nnapi.ndk.check import C_FLAGS, INCLUDE_DIR, NDK_DIR, RECORDER_SOURCES, CheckError, find_compiler
from nnconv.nnapi.serialize import NnapiFile, load, save
from nnconv.pipeline import prepare
from nnconv.safe_write import write_text

from nnconv.devices.probe_c import probe_source
from nnconv.devices.profile import FORMAT, FORMAT_VERSION

PREFIX = "model"
DEVICE_SOURCES = ("recorder_devices.c",)
FIRST_DEVICE_API = 29  # ANeuralNetworks_getDeviceCount and getSupportedOperationsForDevices: Android 10
HOST_RUN_TIMEOUT_SECONDS = 120
# NDK clang targets per Android ABI.
ABI_TARGETS = {"arm64-v8a": "aarch64-linux-android", "armeabi-v7a": "armv7a-linux-androideabi",
               "x86_64": "x86_64-linux-android", "x86": "i686-linux-android"}
DEVICE_DIR = "/data/local/tmp/nnconv_probe"
# With the NDK: no -Werror nor -pedantic, whose verdicts on the NDK's own headers change between NDK releases
# (the host build in `run_on_host` keeps them: it is the check of the generated code).
NDK_FLAGS = "-std=c99 -Wall -Wextra -O2"


@dataclass(frozen=True)
class ProbeFiles:
    """What `write_probe` wrote."""

    out_dir: pathlib.Path
    nnapi: NnapiFile
    files: tuple[str, ...]  # names inside out_dir
    api_level: int


def _build_script(api_level: int) -> str:
    targets = " ".join(f"{abi}) TARGET={t} ;;" for abi, t in ABI_TARGETS.items())
    return f"""#!/bin/sh
# Builds nnconv_probe with the Android NDK's clang (written by `nnconv probe`).
#   ANDROID_NDK=/path/to/android-ndk ./build.sh [ABI]     ABI: {', '.join(ABI_TARGETS)} (default arm64-v8a)
set -eu
: "${{ANDROID_NDK:?set ANDROID_NDK to the root of the Android NDK (r21 or later)}}"
ABI="${{1:-arm64-v8a}}"
case "$ABI" in {targets} *) echo "unknown ABI $ABI" >&2; exit 2 ;; esac
API={max(api_level, 27)}
HOST_TAG=$(ls "$ANDROID_NDK/toolchains/llvm/prebuilt" | head -n 1)
CC="$ANDROID_NDK/toolchains/llvm/prebuilt/$HOST_TAG/bin/clang"
cd "$(dirname "$0")"
"$CC" --target="$TARGET$API" {NDK_FLAGS} probe.c {PREFIX}.c -o nnconv_probe -lneuralnetworks -lm
echo "built $(pwd)/nnconv_probe for $ABI, API $API"
"""


def _adb_script() -> str:
    return f"""#!/bin/sh
# Pushes nnconv_probe and the model to the phone adb sees, runs it, and pulls the device profiles it
# wrote into ./phone/ (written by `nnconv probe`; build first with ./build.sh).  Then:
#   nnconv check MODEL.tflite --device phone/
set -eu
cd "$(dirname "$0")"
command -v adb >/dev/null 2>&1 || {{ echo "run_on_device.sh: adb is not on PATH (Android SDK platform-tools)" >&2; exit 127; }}
adb shell mkdir -p {DEVICE_DIR}
adb push nnconv_probe {PREFIX}.nnapi {DEVICE_DIR}/
adb shell "cd {DEVICE_DIR} && rm -f profile-*.json && chmod 755 nnconv_probe && ./nnconv_probe {PREFIX}.nnapi ."
mkdir -p phone
for f in $(adb shell "ls {DEVICE_DIR}/profile-*.json" | tr -d '\\r'); do adb pull "$f" phone/; done
echo "device profiles in $(pwd)/phone"
"""


def write_probe(model: str, out_dir: str | os.PathLike, api_level: int,
                options: ConversionOptions | None = None) -> ProbeFiles:
    """Converts `model` at `api_level` and writes the probe's files into `out_dir` (created)."""
    out = pathlib.Path(out_dir)
    if out.exists() and not out.is_dir():
        raise NnconvError(f"-o {out_dir}: exists and is not a folder")
    prepared = prepare(model, api_level, options)
    # Every partition, no limit: the delegate asks the device about every node it validated (the limit
    # applies after), and `check --device` matches the probe's answers with this same plan.
    plan = prepared.partial(0)  # ConversionError (exit 3) when no op lowers: there is nothing to ask
    out.mkdir(parents=True, exist_ok=True)
    nnapi_path = out / f"{PREFIX}.nnapi"
    save(nnapi_path, plan.converted, plan=plan.to_json())
    loaded = load(nnapi_path)
    write_c(out / f"{PREFIX}.c", loaded, str(nnapi_path), PREFIX)
    write_text(out / "probe.c", probe_source(loaded, PREFIX, os.path.basename(model), int(prepared.api_level),
                                             devices=prepared.api_level >= FIRST_DEVICE_API))
    files = [f"{PREFIX}.nnapi", f"{PREFIX}.c", f"{PREFIX}.h", "probe.c", "build.sh", "run_on_device.sh"]
    write_text(out / "build.sh", _build_script(int(prepared.api_level)))
    (out / "build.sh").chmod(0o755)
    # written whatever this machine has: the phone is usually attached elsewhere (the script checks for adb)
    write_text(out / "run_on_device.sh", _adb_script())
    (out / "run_on_device.sh").chmod(0o755)
    return ProbeFiles(out, loaded, tuple(files), int(prepared.api_level))


def run_on_host(probe_dir: str | os.PathLike, result_dir: str | os.PathLike,
                fake_devices: str | os.PathLike | None = None) -> list[pathlib.Path]:
    """Builds the probe in `probe_dir` with the system C compiler against nnconv's NDK header, host recorder
    and fake devices (`fake_devices`: the file $NNCONV_FAKE_DEVICES names), runs it, and returns the
    profiles it wrote into `result_dir`."""
    cc = find_compiler()
    src = pathlib.Path(probe_dir).resolve()
    dest = pathlib.Path(result_dir).resolve()
    dest.mkdir(parents=True, exist_ok=True)
    exe = dest / "nnconv_probe_host"
    sources = [str(src / "probe.c"), str(src / f"{PREFIX}.c")]
    sources += [str(NDK_DIR / s) for s in (*RECORDER_SOURCES, *DEVICE_SOURCES)]
    env = dict(os.environ)
    env.pop("NNCONV_FAKE_DEVICES", None)
    if fake_devices is not None:
        env["NNCONV_FAKE_DEVICES"] = str(pathlib.Path(fake_devices).resolve())
    steps = [([cc, *C_FLAGS, f"-I{INCLUDE_DIR}", f"-I{NDK_DIR}", f"-I{src}", *sources, "-o", str(exe), "-lm"],
              "compiling the probe"),
             ([str(exe), str(src / f"{PREFIX}.nnapi"), str(dest)], "running the probe")]
    for argv, what in steps:
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=HOST_RUN_TIMEOUT_SECONDS,
                                    env=env, cwd=str(dest))
        except (OSError, subprocess.TimeoutExpired) as e:
            raise CheckError(f"{what}: {e}") from None
        if result.returncode != 0:
            lines = (result.stderr or result.stdout).strip().splitlines()
            raise CheckError(f"{what} failed (exit {result.returncode}): {lines[0] if lines else ''}")
    return sorted(dest.glob("profile-*.json"))


def fake_devices_text(profiles: list[dict]) -> str:
    """The $NNCONV_FAKE_DEVICES file of the host recorder for device profiles (as JSON dicts) whose entries
    constrain input types only: each becomes a fake device taking exactly what the profile says."""
    from nnconv.nnapi.enums import OperandType, OperationType
    fl_codes = {1: 27, 2: 28, 3: 29, 4: 30, 5: 31, 6: 1000006, 7: 1000007, 8: 1000008}
    types = {"UNKNOWN": 0, "OTHER": 1, "CPU": 2, "GPU": 3, "ACCELERATOR": 4}
    lines = [f"# fake devices for nnconv's host recorder ({c_comment(FORMAT)} v{FORMAT_VERSION} profiles)"]
    for p in profiles:
        device = p["device"]
        if any("output_types" in e for e in p["operations"]) or p.get("all_operations"):
            raise NnconvError(f"{p['name']}: a fake device takes input-type constraints only")
        if not p["name"] or any(c.isspace() or c == "#" for c in p["name"]):
            raise NnconvError(f"{p['name']!r}: a fake device's name has no spaces nor '#'")
        lines.append(f"device {p['name']} {types[device['type']]} {fl_codes[device['feature_level']]}")
        for e in p["operations"]:
            ins = " ".join(str(int(OperandType[t])) for t in e.get("input_types", []))
            lines.append(f"op {int(OperationType[e['operation']])} {ins}".rstrip())
    return "\n".join(lines) + "\n"

