"""The Python API in one page: convert a model, read the report, run it, compare it with TFLite.

    python examples/quickstart.py [model.tflite] [--api-level 29]
"""

from __future__ import annotations

import argparse
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

import nnconv  # noqa: E402
from nnconv.parity import random_inputs, run_parity  # noqa: E402

DEFAULT = pathlib.Path(__file__).resolve().parent / "models" / "mobilenet_v2_float.tflite"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=str(DEFAULT))
    ap.add_argument("--api-level", type=int, default=30)
    args = ap.parse_args(argv)

    # 1. Offline compatibility report: every op's verdict, without lowering anything.
    report = nnconv.check_model(args.model, api_level=args.api_level)
    for op in report.ops:
        line = f"#{op.index:<3} {op.op:<24} {op.status.value}"
        print(line if op.supported else f"{line}: {op.reason} (lowest API {op.min_api_level})")
    if not report.ok:
        print("not convertible as a whole at this level; try `nnconv check` for the partition plan")
        return 3

    # 2. Convert, then run the NNAPI graph on the bundled reference executor.
    model, _report = nnconv.convert(args.model, api_level=args.api_level)
    inputs = random_inputs(model.inputs, seed=0)  # {input name: array}, the dtypes the .tflite declares
    outputs = nnconv.Executor(model).run(inputs)
    for name, value in outputs.items():
        print(f"output {name}: {value.dtype}{list(value.shape)}")

    # 3. Parity with TFLite's interpreter on the same inputs.
    parity = run_parity(args.model, model, inputs)
    for o in parity.outputs:
        print(f"{o.name}: max |diff| {o.max_abs:.3g} ({o.tolerance.describe()}) {'PASS' if o.passed else 'FAIL'}")
    return 0 if parity.passed else 1


if __name__ == "__main__":
    sys.exit(main())
