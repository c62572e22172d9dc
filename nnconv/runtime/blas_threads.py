"""Thread counts: numpy's BLAS pool while the executor runs (through threadpoolctl), and the default count
that `--threads N` sets for our executor and TFLite's interpreter alike.

The executor's matmuls are small (a MobileNet layer is ~1000 x 100 x 100); OpenBLAS splits them over all
cores anyway, and on a busy machine the worker hand-offs stall for milliseconds per call (measured: 7 ms
for a 1024x16 @ 16x64 product that takes 30 us on one thread). So the executor runs with 1 BLAS thread by
default, which is also what the TFLite comparison (`nnconv verify`, the benchmarks) uses; `--threads N`
(`use_threads`) raises both sides to N together so that they stay comparable.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Iterator

_THREADS: ContextVar[int] = ContextVar("nnconv_threads", default=1)
_blas: list[Any] | None = None  # threadpoolctl's controllers of the BLAS libraries loaded (numpy's, ...)


def default_threads() -> int:
    """The thread count our executor and TFLite's interpreter use unless told otherwise (1, or `use_threads`)."""
    return _THREADS.get()


@contextmanager
def use_threads(n: int) -> Iterator[None]:
    """Runs the body with `n` as the default thread count of executors and TFLite runners it creates."""
    if n < 1:
        raise ValueError(f"thread count must be at least 1, got {n}")
    token = _THREADS.set(n)
    try:
        yield
    finally:
        _THREADS.reset(token)


def _controllers() -> list[Any]:
    """The BLAS libraries' controllers, found once: threadpoolctl's per-call `limit` re-scans every loaded
    library (milliseconds), too slow for a per-run cap."""
    global _blas
    if _blas is None:
        import numpy  # noqa: F401  (maps numpy's BLAS into the process first)
        from threadpoolctl import ThreadpoolController
        _blas = list(ThreadpoolController().select(user_api="blas").lib_controllers)
    return _blas


def blas_num_threads() -> int | None:
    """The (first) BLAS pool's current thread count, or None when no BLAS can be controlled."""
    libs = _controllers()
    return int(libs[0].get_num_threads()) if libs else None


@contextmanager
def limit_blas_threads(n: int | None) -> Iterator[None]:
    """Runs the body with `n` BLAS threads (None: unchanged) and restores the previous counts. The setting
    is process-wide, as with any BLAS."""
    restore: list[tuple[Any, int]] = []
    if n is not None:
        for lib in _controllers():
            previous = int(lib.get_num_threads())
            if previous != n:
                lib.set_num_threads(n)
                restore.append((lib, previous))
    try:
        yield
    finally:
        for lib, previous in restore:
            lib.set_num_threads(previous)
