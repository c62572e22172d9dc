"""Whether TFLite's reference kernels can run a model without aborting the process.

Some of TFLite's reference kernels stop the whole process (a failed TFLITE_CHECK, SIGABRT) on parameters its
optimized kernels accept: a quantized SOFTMAX whose beta * input_scale * 2^26 is not above 1 (a Keras
classifier with random weights has logits quantized at ~1e-8) aborts in `QuantizeMultiplierGreaterThanOne`
at Prepare, where the optimized kernel builds its lookup table instead. nnconv consults the reference
kernels on its own (per-op parity and quantized outputs are re-judged against them, since the NNAPI
reference CPU follows their arithmetic), and an abort would end `verify` without a word (exit 134).

So before an interpreter with reference kernels is made, the model is run once with them in a child
process: an abort there (a negative return code, a signal) means the reference kernels are not usable for
this model. Callers that consult them on their own skip that step; `--kernels reference` reports it. The
verdict is kept per model content for the life of the process.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

from nnconv.errors import NnconvError

# The child: load the model from stdin, run it once with TFLite's reference kernels on zero inputs.
_PROBE = """
import sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
interp = Interpreter(model_content=sys.stdin.buffer.read(), experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
interp.allocate_tensors()
for d in interp.get_input_details():
    interp.set_tensor(d["index"], np.zeros(d["shape"], d["dtype"]))
interp.invoke()
"""
# A probe still running after this long did not abort at Prepare (where the known checks are): the caller's
# own interpreter goes ahead.
PROBE_TIMEOUT_SECONDS = 120.0
_VERDICTS: dict[str, bool] = {}


class ReferenceKernelsAbort(NnconvError):
    """TFLite's reference kernels abort the process on this model."""


def _model_bytes(model: str | os.PathLike | bytes) -> bytes:
    if isinstance(model, (bytes, bytearray)):
        return bytes(model)
    with open(model, "rb") as f:
        return f.read()


def reference_kernels_survive(model: str | os.PathLike | bytes) -> bool:
    """False when running `model` with TFLite's reference kernels kills the process (see the module
    docstring). Any other outcome, including an ordinary error, is True: the caller's own interpreter
    then reports it as usual."""
    try:
        data = _model_bytes(model)
    except OSError:
        return True  # the caller's interpreter reports the unreadable file
    key = hashlib.sha256(data).hexdigest()
    verdict = _VERDICTS.get(key)
    if verdict is None:
        try:
            done = subprocess.run([sys.executable, "-c", _PROBE], input=data, capture_output=True,
                                  timeout=PROBE_TIMEOUT_SECONDS, check=False)
            verdict = done.returncode >= 0
        except subprocess.TimeoutExpired:
            verdict = True
        _VERDICTS[key] = verdict
    return verdict


def require_reference_kernels(model: str | os.PathLike | bytes) -> None:
    """Raises ReferenceKernelsAbort (exit 2, one line) when TFLite's reference kernels abort on `model`."""
    if not reference_kernels_survive(model):
        raise ReferenceKernelsAbort(
            "TFLite's reference kernels abort on this model (a fatal check of theirs, e.g. a quantized SOFTMAX "
            "whose beta * input scale * 2^26 is not above 1); compare with --kernels builtin or xnnpack")
