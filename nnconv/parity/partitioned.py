"""`nnconv verify`: convert, run both engines, compare."""

from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from nnconv.lowering.convert import ConversionOptions, convert
from nnconv.parity.tflite_runner import BUILTIN_KERNELS
from nnconv.parity.verify import ParityReport, random_inputs, run_parity
from nnconv.tflite.reader import read_model


def verify_model(path: str | os.PathLike, api_level: int, options: ConversionOptions | None = None,
                 inputs: Mapping[str, np.ndarray] | None = None, seed: int = 0,
                 kernels: str = BUILTIN_KERNELS) -> ParityReport:
    """Converts the whole model (raises ConversionError when refused) and compares it with TFLite."""
    model = read_model(path)
    converted, _report = convert(model, api_level, options)
    feed = dict(inputs) if inputs is not None else random_inputs(converted.inputs, seed)
    if inputs is not None:
        from nnconv.executor import Executor
        feed = _named(Executor(converted), feed)
    return run_parity(path, converted, feed, kernels=kernels)


def _named(ex, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Accepts positional `arr_k` names as well as input names; returns arrays keyed by input name."""
    arrays = ex._bind(feed)
    return {spec.name: a for spec, a in zip(ex.input_specs, arrays)}
