"""Runs a model on TFLite's own interpreter (`ai-edge-litert`), the reference side of parity."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from typing import Iterator, Mapping

import numpy as np

from nnconv.errors import NnconvError
from nnconv.runtime.blas_threads import default_threads

BUILTIN_KERNELS = "builtin"  # TFLite's optimized builtin kernels, no delegate
REFERENCE_KERNELS = "reference"  # TFLite's reference kernels (what the NNAPI reference CPU follows)
XNNPACK = "xnnpack"  # the default delegate path (XNNPACK for float models)
KERNEL_CHOICES = (BUILTIN_KERNELS, REFERENCE_KERNELS, XNNPACK)


@contextlib.contextmanager
def _quiet_native_stderr() -> Iterator[None]:
    """Silences file descriptor 2 while TFLite's native code runs: it logs lines such as "INFO: Created
    TensorFlow Lite XNNPACK delegate for CPU." straight to fd 2, past Python's sys.stderr, and nnconv's
    stderr carries only its own messages. Its errors still reach the user: the Python exceptions it raises
    carry them."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no fd 2 (embedded interpreters): nothing to silence
        yield
        return
    try:
        with open(os.devnull, "wb") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class InterpreterUnavailable(NnconvError):
    """ai-edge-litert is not installed."""


def _interpreter_class():
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError as e:  # pragma: no cover - depends on the environment
        if _caused_by_interrupt(e):
            # The extension's initialisation turns a Ctrl-C that lands in it into "ImportError:
            # initialization failed" (the KeyboardInterrupt is its cause): that is an interrupt, not a
            # missing package.
            raise KeyboardInterrupt from None
        raise InterpreterUnavailable("the TFLite interpreter is not installed: pip install 'nnconv[verify]'") from None
    return Interpreter, OpResolverType


def _caused_by_interrupt(e: BaseException) -> bool:
    seen: set[int] = set()
    cause: BaseException | None = e
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def interpreter_message(e: BaseException) -> str:
    """TFLite's error as one readable line: its kernel's message and the failing node are run together
    ("Division by 0Node number 2 (DIV) failed to invoke.", "...was not true.Node number 3"): separated."""
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    return re.sub(r"(?<=[^\s.])\.?(?=Node number)", ". ", first).rstrip(".")


def interpreter_version() -> str | None:
    """The installed ai-edge-litert version (for reports), or None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return version("ai-edge-litert")
    except PackageNotFoundError:
        return None


class TfliteRunner:
    """One interpreter per model. `kernels` chooses TFLite's builtin kernels (default, no XNNPACK) or XNNPACK.

    `preserve_all_tensors` keeps intermediates readable (partition-by-partition verification)."""

    def __init__(self, model_path_or_bytes: str | os.PathLike | bytes, kernels: str = BUILTIN_KERNELS,
                 num_threads: int | None = None, preserve_all_tensors: bool = False) -> None:
        Interpreter, OpResolverType = _interpreter_class()
        if kernels == REFERENCE_KERNELS:
            # some reference kernels abort the whole process on parameters the others accept: probe first
            from nnconv.parity.reference_probe import require_reference_kernels
            require_reference_kernels(model_path_or_bytes)
        resolver = {BUILTIN_KERNELS: OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES,
                    REFERENCE_KERNELS: OpResolverType.BUILTIN_REF,
                    XNNPACK: OpResolverType.AUTO}[kernels]
        if num_threads is None:  # 1, or the N of `--threads N`, as for our executor
            num_threads = default_threads()
        kw = dict(num_threads=num_threads, experimental_op_resolver_type=resolver,
                  experimental_preserve_all_tensors=preserve_all_tensors)
        try:
            with _quiet_native_stderr():
                if isinstance(model_path_or_bytes, (bytes, bytearray)):
                    self.interp = Interpreter(model_content=bytes(model_path_or_bytes), **kw)
                else:
                    self.interp = Interpreter(model_path=os.fspath(model_path_or_bytes), **kw)
                self.interp.allocate_tensors()
        except (ValueError, RuntimeError) as e:
            reason = interpreter_message(e)
            raise NnconvError(f"the TFLite interpreter rejected the model: {reason}; there is no TFLite result "
                              "to compare with (`nnconv check` warns NNW101 where it knows the cause)") from None
        self.kernels = kernels

    def input_details(self) -> list[dict]:
        return self.interp.get_input_details()

    def output_details(self) -> list[dict]:
        return self.interp.get_output_details()

    def run(self, inputs: Mapping[int, np.ndarray]) -> dict[int, np.ndarray]:
        """Inputs and outputs keyed by TFLite tensor index. Inputs of another shape than the interpreter's
        resize it first, as an app does (`resize_tensor_input` + `allocate_tensors`): a model converted with
        `--input-shape` is fed at that shape."""
        details = self.input_details()
        resized = [d for d in details if tuple(np.shape(inputs[d["index"]])) != tuple(d["shape"])]
        if resized:
            try:
                for d in resized:
                    self.interp.resize_tensor_input(d["index"], list(np.shape(inputs[d["index"]])))
                with _quiet_native_stderr():
                    self.interp.allocate_tensors()
            except (ValueError, RuntimeError) as e:
                raise NnconvError(f"the TFLite interpreter could not resize its inputs: {str(e).splitlines()[0]}") \
                    from None
        for d in details:
            self.interp.set_tensor(d["index"], inputs[d["index"]])
        try:
            with _quiet_native_stderr():
                self.interp.invoke()
        except RuntimeError as e:
            # TFLite prepares some kernels only at the first invoke (a BROADCAST_TO whose shape is computed):
            # a model TFLite itself cannot run is the user's input, not our failure
            raise NnconvError(f"the TFLite interpreter failed to run the model: {interpreter_message(e)}") from None
        return {d["index"]: self.interp.get_tensor(d["index"]).copy() for d in self.output_details()}

    def tensor(self, index: int) -> np.ndarray:
        return self.interp.get_tensor(index).copy()
