"""Quantizes float .tflite models with AI Edge Quantizer, once per recipe it offers.

Optional; needs `ai-edge-quantizer` (tested with 0.10.0; it brings ai-edge-litert). The package and the
default tests never import this file. For every float model given (files or folders of `*.tflite`) and
every recipe below it writes `OUT/<model>.aeq_<recipe>.tflite`; a recipe the quantizer refuses for a model
is skipped and listed, with its message, in `OUT/manifest.json` (as `scripts/make_model_zoo.py` does).

Recipes (the functions and aliases of `ai_edge_quantizer.recipe` that apply to a whole model):

- `static_wi8_ai8`: int8 weights and activations, calibrated (full-integer, with float edges);
- `static_wi8_ai16`: int8 weights, int16 activations (TFLite's 16x8 mode);
- `dynamic_wi8_afp32`, `dynamic_legacy_wi8_afp32`: int8 weights, activations quantized at run time;
- `dynamic_wi4_afp32`: the same with int4 weights;
- `dynamic_wi8b32_afp32`, `dynamic_wi4b32_afp32`: blockwise (32) weights;
- `dynamic_wi8c_hr_afp32`, `dynamic_wi4c_hr_afp32`: channelwise weights with Hadamard rotations;
- `weight_only_wi8_afp32`, `weight_only_wi4_afp32`: int8 / int4 weights behind DEQUANTIZE, float compute.

Calibration uses 8 seeded random samples per model (uniform in [-1, 1] for float inputs, small integers for
integer ones): the weights are random too, so no data set means anything here.

    python scripts/make_aeq_zoo.py OUT FLOAT.tflite|DIR... [--recipes NAME ...]
                                                       [--skip-existing]

`scripts/make_litert_torch_zoo.py` calls `quantize_all` on its own float models.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import pathlib
import sys
import time
from typing import Any, Callable

os.environ.setdefault("TQDM_DISABLE", "1")  # the quantizer's progress bars

import numpy as np  # noqa: E402

SEED = 1234
CALIBRATION_SAMPLES = 8
RECIPES = (
    "static_wi8_ai8", "static_wi8_ai16",
    "dynamic_wi8_afp32", "dynamic_legacy_wi8_afp32", "dynamic_wi4_afp32",
    "dynamic_wi8b32_afp32", "dynamic_wi4b32_afp32", "dynamic_wi8c_hr_afp32", "dynamic_wi4c_hr_afp32",
    "weight_only_wi8_afp32", "weight_only_wi4_afp32",
)


def recipe_of(name: str) -> Any:
    """The recipe named `name`: a function of `ai_edge_quantizer.recipe` called with no argument."""
    from ai_edge_quantizer import recipe
    make: Callable[[], Any] = getattr(recipe, name)
    return make()


def calibration_data(model: bytes, rng: np.random.Generator) -> dict[str, list[dict[str, np.ndarray]]]:
    """Seeded samples for every signature of the model, keyed as the quantizer's `calibrate` takes them."""
    from ai_edge_litert.interpreter import Interpreter
    interp = Interpreter(model_content=model)
    data: dict[str, list[dict[str, np.ndarray]]] = {}
    for key, sig in interp.get_signature_list().items():
        runner = interp.get_signature_runner(key)
        details = runner.get_input_details()
        samples = []
        for _ in range(CALIBRATION_SAMPLES):
            sample = {}
            for name in sig["inputs"]:
                d = details[name]
                shape, dtype = [max(int(s), 1) for s in d["shape"]], np.dtype(d["dtype"])
                if dtype.kind == "f":
                    sample[name] = rng.uniform(-1.0, 1.0, shape).astype(dtype)
                elif dtype == np.bool_:
                    sample[name] = rng.integers(0, 2, shape).astype(bool)
                else:
                    sample[name] = rng.integers(0, 8, shape).astype(dtype)
            samples.append(sample)
        data[key] = samples
    return data


def quantize(model: bytes, recipe_name: str) -> bytes:
    """The model quantized with one recipe (calibrated on seeded samples when the recipe needs it)."""
    from ai_edge_quantizer import quantizer
    qt = quantizer.Quantizer(bytearray(model))
    qt.load_quantization_recipe(recipe_of(recipe_name))
    calibration = None
    if qt.need_calibration:
        calibration = qt.calibrate(calibration_data(model, np.random.default_rng(SEED)), num_threads=1)
    with contextlib.redirect_stdout(io.StringIO()):  # its size/time report
        result = qt.quantize(calibration, enable_progress_report=False)
    return bytes(result.quantized_model)


def quantize_all(src: pathlib.Path, out: pathlib.Path, recipes: list[str], skip_existing: bool,
                 manifest: dict[str, Any], what: str = "") -> None:
    """Writes `out/<src stem>.aeq_<recipe>.tflite` for each recipe; records outcomes in `manifest`."""
    model = src.read_bytes()
    stem = src.name.removesuffix(".tflite").removesuffix(".float32")
    for name in recipes:
        target = out / f"{stem}.aeq_{name}.tflite"
        key = target.name.removesuffix(".tflite")
        if skip_existing and target.exists():
            continue
        t0 = time.perf_counter()
        entry: dict[str, Any] = {"writer": "AI Edge Quantizer", "recipe": name, "source": src.name,
                                 "architecture": stem, "what": what}
        try:
            target.write_bytes(quantize(model, name))
            entry["bytes"] = target.stat().st_size
        except Exception as e:  # noqa: BLE001 - the quantizer's refusal is itself a result to record
            entry["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
        entry["seconds"] = round(time.perf_counter() - t0, 1)
        manifest[key] = entry
        status = entry.get("error", f"{entry.get('bytes')} bytes")
        print(f"{key}: {status} ({entry['seconds']} s)", file=sys.stderr, flush=True)


def load_manifest(out: pathlib.Path) -> dict[str, Any]:
    path = out / "manifest.json"
    return json.loads(path.read_text()) if path.exists() else {}


def save_manifest(out: pathlib.Path, manifest: dict[str, Any]) -> None:
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=pathlib.Path, help="directory to write to (outside the repository)")
    ap.add_argument("models", nargs="+", type=pathlib.Path, help="float .tflite models or folders of them")
    ap.add_argument("--recipes", nargs="*", default=list(RECIPES), choices=RECIPES)
    ap.add_argument("--skip-existing", action="store_true", help="keep models already in OUT")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest(args.out)
    sources = []
    for p in args.models:
        sources += sorted(p.glob("*.tflite")) if p.is_dir() else [p]
    for src in sources:
        quantize_all(src, args.out, args.recipes, args.skip_existing, manifest)
        save_manifest(args.out, manifest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
