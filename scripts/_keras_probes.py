"""Shared by the optional probe generators (make_recurrent_probes.py, make_transformer_probes.py): the
converter settings of the four variants, and a main loop that converts each model in a child process, so a
converter crash (TensorFlow 2.21 segfaults calibrating some recurrent loops) is reported per model."""

from __future__ import annotations

import pathlib
import subprocess
import sys
from typing import Callable, Sequence

VARIANTS = ("float32", "dynamic", "int8", "fp16")


def convert_keras(model, data: list, variant: str, int8_interface: bool = True) -> bytes:
    """`model` converted as `variant`: float32, dynamic range (int8 weights), full integer (calibrated on
    `data`; an int8 interface unless `int8_interface` is False, for token inputs) or float16 weights."""
    import tensorflow as tf

    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if variant != "float32":
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "int8":
        conv.representative_dataset = lambda: iter(data)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if int8_interface:
            conv.inference_input_type = conv.inference_output_type = tf.int8
    elif variant == "fp16":
        conv.target_spec.supported_types = [tf.float16]
    return conv.convert()


def run_probes(argv: Sequence[str], doc: str, script: str, names: Sequence[str],
               convert: Callable[[str, str], bytes]) -> int:
    """`script DIR [NAME ...]`: every named probe (all by default) in every variant into DIR, each converted
    by `script --one NAME VARIANT` in a child process; 1 when any conversion failed."""
    if not argv:
        print(doc)
        return 2
    if argv[0] == "--one":  # child process: one model to stdout
        sys.stdout.buffer.write(convert(argv[1], argv[2]))
        return 0
    out = pathlib.Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in argv[1:] or list(names):
        for variant in VARIANTS:
            path = out / f"{name}.{variant}.tflite"
            child = subprocess.run([sys.executable, script, "--one", name, variant], capture_output=True)
            if child.returncode == 0 and child.stdout:
                path.write_bytes(child.stdout)
                print(path)
                continue
            failed += 1
            why = f"signal {-child.returncode}" if child.returncode < 0 else f"exit {child.returncode}"
            print(f"{name} {variant}: the converter failed ({why})")
    return 1 if failed else 0
