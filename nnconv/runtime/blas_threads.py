"""Caps numpy's BLAS thread pool while the executor runs, without a threadpoolctl dependency.

The executor's matmuls are small (a MobileNet layer is ~1000 x 100 x 100); OpenBLAS splits them over all
cores anyway, and on a busy machine the worker hand-offs stall for milliseconds per call (measured: 7 ms
for a 1024x16 @ 16x64 product that takes 30 us on one thread). One thread is also what the TFLite
comparison (`nnconv verify`, the benchmarks) uses. Only OpenBLAS (numpy's wheels) is handled; anything
else is left alone.
"""

from __future__ import annotations

import ctypes
from contextlib import contextmanager
from typing import Callable, Iterator

_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "openblas_set_num_threads64_")
_GETTERS = ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_")

_Api = tuple[Callable[[], int], Callable[[int], None]]
_apis: list[_Api] | None = None  # one (get, set) pair per OpenBLAS copy in the process (numpy's, scipy's...)


def _loaded_openblas_paths() -> list[str]:
    """Paths of the OpenBLAS libraries already mapped into this process (numpy's own copy)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            paths = {line.split(None, 5)[5].strip() for line in f if "openblas" in line.lower()
                     and len(line.split(None, 5)) == 6}
    except OSError:  # not Linux: leave the BLAS alone
        return []
    return sorted(p for p in paths if p.startswith("/"))


def _find_apis() -> list[_Api]:
    global _apis
    if _apis is not None:
        return _apis
    import numpy  # noqa: F401  (maps numpy's BLAS into the process first)
    found: list[_Api] = []
    for path in _loaded_openblas_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        get = next((getattr(lib, n) for n in _GETTERS if hasattr(lib, n)), None)
        put = next((getattr(lib, n) for n in _SETTERS if hasattr(lib, n)), None)
        if get is not None and put is not None:
            get.restype = ctypes.c_int
            get.argtypes = []
            put.restype = None
            put.argtypes = [ctypes.c_int]
            found.append((get, put))
    _apis = found
    return found


def blas_num_threads() -> int | None:
    """The (first) BLAS pool's current thread count, or None when it cannot be controlled."""
    apis = _find_apis()
    return int(apis[0][0]()) if apis else None


@contextmanager
def limit_blas_threads(n: int | None) -> Iterator[None]:
    """Runs the body with at most `n` BLAS threads (None: unchanged) and restores the previous counts.
    The setting is process-wide, as with threadpoolctl."""
    restore: list[tuple[Callable[[int], None], int]] = []
    if n is not None:
        for get, put in _find_apis():
            previous = int(get())
            if previous > n:
                put(n)
                restore.append((put, previous))
    try:
        yield
    finally:
        for put, previous in restore:
            put(previous)
