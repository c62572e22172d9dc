"""Runs a model on TFLite's own interpreter (`ai-edge-litert`), the reference side of parity."""

from __future__ import annotations

import os
from typing import Mapping

import numpy as np

from nnconv.errors import NnconvError

BUILTIN_KERNELS = "builtin"  # TFLite's optimized builtin kernels, no delegate
REFERENCE_KERNELS = "reference"  # TFLite's reference kernels (what the NNAPI reference CPU follows)
XNNPACK = "xnnpack"  # the default delegate path (XNNPACK for float models)
KERNEL_CHOICES = (BUILTIN_KERNELS, REFERENCE_KERNELS, XNNPACK)


class InterpreterUnavailable(NnconvError):
    """ai-edge-litert is not installed."""


def _interpreter_class():
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:  # pragma: no cover - depends on the environment
        raise InterpreterUnavailable("the TFLite interpreter is not installed: pip install 'nnconv[verify]'") from None
    return Interpreter, OpResolverType


class TfliteRunner:
    """One interpreter per model. `kernels` chooses TFLite's builtin kernels (default, no XNNPACK) or XNNPACK.

    `preserve_all_tensors` keeps intermediates readable (partition-by-partition verification)."""

    def __init__(self, model_path_or_bytes: str | os.PathLike | bytes, kernels: str = BUILTIN_KERNELS,
                 num_threads: int = 1, preserve_all_tensors: bool = False) -> None:
        Interpreter, OpResolverType = _interpreter_class()
        resolver = {BUILTIN_KERNELS: OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                    REFERENCE_KERNELS: OpResolverType.BUILTIN_REF,
                    XNNPACK: OpResolverType.AUTO}[kernels]
        kw = dict(num_threads=num_threads, experimental_op_resolver_type=resolver,
                  experimental_preserve_all_tensors=preserve_all_tensors)
        try:
            if isinstance(model_path_or_bytes, (bytes, bytearray)):
                self.interp = Interpreter(model_content=bytes(model_path_or_bytes), **kw)
            else:
                self.interp = Interpreter(model_path=os.fspath(model_path_or_bytes), **kw)
            self.interp.allocate_tensors()
        except (ValueError, RuntimeError) as e:
            raise NnconvError(f"the TFLite interpreter rejected the model: {str(e).splitlines()[0]}") from None
        self.kernels = kernels

    def input_details(self) -> list[dict]:
        return self.interp.get_input_details()

    def output_details(self) -> list[dict]:
        return self.interp.get_output_details()

    def run(self, inputs: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Inputs and outputs keyed by TFLite tensor index."""
        for d in self.input_details():
            self.interp.set_tensor(d["index"], inputs[d["index"]])
        self.interp.invoke()
        return {d["index"]: self.interp.get_tensor(d["index"]).copy() for d in self.output_details()}

    def tensor(self, index: int) -> np.ndarray:
        return self.interp.get_tensor(index).copy()
