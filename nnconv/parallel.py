"""Running one function over many models in parallel processes (`verify --jobs`, `check --jobs`)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Callable, Iterator, Sequence, TypeVar

from nnconv.errors import failure_line

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


@dataclass(frozen=True)
class Failed:
    """One model of a folder run that could not be processed: its one-line reason and the exit code it gives
    alone (nnconv.errors.failure_line)."""

    path: str
    error: str
    exit_code: int

    def to_json(self) -> dict:
        return {"model": self.path, "status": "error", "error": self.error, "exit_code": self.exit_code}


def guarded(item: str, fn: Callable[[str], R]) -> R | Failed:
    """`fn(item)`, or the Failed record of the error it raised (one broken model never stops the others).
    Module-level so that `functools.partial(guarded, fn=...)` can be sent to worker processes."""
    try:
        return fn(item)
    except Exception as e:  # noqa: BLE001 - the row says why, with the exit code the model gives alone
        line, code = failure_line(e)
        return Failed(item, line, code)
