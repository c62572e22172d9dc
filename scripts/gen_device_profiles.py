"""Writes the device profiles nnconv ships (nnconv/devices/data/*.json, format: docs/devices.md).

    python scripts/gen_device_profiles.py NnapiSupport.txt --commit SHA [--out nnconv/devices/data]

- `armnn-hal1.0` .. `armnn-hal1.3`: the Arm NN NNAPI driver (ARM-software/android-nn-driver), from its
  published `NnapiSupport.txt` at commit SHA (the table "AndroidNN operator / Tensor type supported"). The
  driver implements HAL 1.0-1.3; the profile of HAL version 1.x keeps the listed operations and operand
  types that version of the HAL defines (an operation or type the NNAPI spec introduced at a later
  feature level cannot reach a 1.x driver), and its device feature level is that of the HAL version.
- `reference`: the NNAPI reference CPU, `all_operations`: what the spec takes at the level checked (what
  `nnconv check` reports without a device).

Type names in the table are NNAPI tensor types without `TENSOR_`; "X (output only)" constrains output 0,
"A and B (input only)" input 0, a plain list input 0 (the spec's "supported tensor OperandCode").
"""

from __future__ import annotations

import argparse
import json
import pathlib
import re

from nnconv.devices.profile import FORMAT, FORMAT_VERSION
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.operations import operation_level

HAL_FEATURE_LEVELS = {"1.0": 1, "1.1": 2, "1.2": 3, "1.3": 4}
REPO = "https://github.com/ARM-software/android-nn-driver"
OUT = pathlib.Path(__file__).resolve().parent.parent / "nnconv" / "devices" / "data"


def _type(name: str) -> OperandType:
    return OperandType[f"TENSOR_{name.strip()}"]


def parse_table(text: str) -> dict[str, tuple[list[OperandType], list[OperandType] | None]]:
    """{operation: (input 0 types, output 0 types or None)} from the table's lines."""
    rows: dict[str, tuple[list[OperandType], list[OperandType] | None]] = {}
    for line in text.splitlines():
        m = re.match(r"^([A-Z0-9_]+)\s+\((.*)\)\s*$", line)
        if not m or m.group(1) not in OperationType.__members__:
            continue
        inputs: list[OperandType] = []
        outputs: list[OperandType] | None = None
        for item in re.split(r",\s*(?![^()]*\))", m.group(2)):
            qualified = re.match(r"^(.*)\((input|output) only\)$", item.strip())
            names = re.split(r"\s+and\s+", (qualified.group(1) if qualified else item).strip())
            types = [_type(n) for n in names]
            if qualified and qualified.group(2) == "output":
                outputs = (outputs or []) + types
            else:
                inputs += types
        rows[m.group(1)] = (inputs, outputs)
    return rows


def armnn_profile(rows: dict, hal: str, commit: str) -> dict:
    level = HAL_FEATURE_LEVELS[hal]
    ops = []
    for name, (inputs, outputs) in sorted(rows.items()):
        op = OperationType[name]
        if operation_level(op) > level:
            continue
        ins = sorted(t.name for t in inputs if t.min_feature_level <= level)
        outs = None if outputs is None else sorted(t.name for t in outputs if t.min_feature_level <= level)
        if not ins or outs == []:
            continue
        entry: dict = {"operation": name, "input_types": ins}
        if outs is not None:
            entry["output_types"] = outs
        ops.append(entry)
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "name": f"armnn-hal{hal}",
            "device": {"name": "armnn", "type": "GPU", "feature_level": level},
            "source": {"kind": "published",
                       "description": f"Arm NN NNAPI driver's supported-operation list (NnapiSupport.txt), "
                                      f"restricted to what HAL {hal} defines",
                       "reference": f"{REPO}/blob/{commit}/NnapiSupport.txt"},
            "all_operations": False, "operations": ops,
            "notes": ["The list names only the tensor types every Arm NN backend (CpuAcc, GpuAcc, CpuRef) "
                      "supports; FLOAT16 is partly supported on GpuAcc and CpuRef but not CpuAcc.",
                      "Types are those of input 0 (output 0 where the list says 'output only'); constraints the "
                      "list does not state (shapes, ranks, parameter values) are not modelled."]}


def reference_profile() -> dict:
    return {"format": FORMAT, "format_version": FORMAT_VERSION, "name": "reference",
            "device": {"name": "nnapi-reference", "type": "CPU", "feature_level": None},
            "source": {"kind": "spec",
                       "description": "NNAPI reference CPU implementation: every operation the NNAPI specification "
                                      "takes at the level checked (nnconv's own validation, nnconv/nnapi/operations)",
                       "reference": "https://android.googlesource.com/platform/packages/modules/NeuralNetworks/"
                                    "+/refs/heads/main/common/cpu_operations/"},
            "all_operations": True, "operations": []}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("support_txt", help="android-nn-driver's NnapiSupport.txt")
    parser.add_argument("--commit", required=True, help="the android-nn-driver commit the file comes from")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    rows = parse_table(pathlib.Path(args.support_txt).read_text(encoding="utf-8"))
    out = pathlib.Path(args.out)
    profiles = [armnn_profile(rows, hal, args.commit) for hal in HAL_FEATURE_LEVELS] + [reference_profile()]
    for p in profiles:
        (out / f"{p['name']}.json").write_text(json.dumps(p, indent=1) + "\n", encoding="utf-8")
        print(f"{p['name']}: {len(p['operations'])} operation entries")


if __name__ == "__main__":
    main()
