"""Running one function over many models in parallel processes (`verify --jobs`, `check --jobs`)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import Callable, Iterator, Sequence, TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_in_processes(fn: Callable[[T], R], items: Sequence[T], jobs: int) -> Iterator[R]:
    """Yields `fn(item)` for every item, in order. With `jobs` > 1 and several items, in that many
    processes started with "spawn" (no interpreter or BLAS state is inherited from this one); `fn` and the
    items must then be picklable (a module-level function or a functools.partial of one). An exception
    raised by `fn` is raised here when its item's turn comes."""
    if jobs <= 1 or len(items) < 2:
        for item in items:
            yield fn(item)
        return
    with ProcessPoolExecutor(max_workers=min(jobs, len(items)), mp_context=get_context("spawn")) as pool:
        futures = [pool.submit(fn, item) for item in items]
        try:
            for f in futures:
                yield f.result()
        finally:
            for f in futures:
                f.cancel()
