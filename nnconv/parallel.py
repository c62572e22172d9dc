"""Running one function over many models: in this process, in parallel processes (`--jobs`), or as one task
each on a Dask distributed cluster (`--scheduler ADDRESS`, `pip install 'nnconv[distributed]'`)."""

from __future__ import annotations

from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, Callable, Iterator, Sequence, TypeVar

from nnconv.errors import NnconvError, failure_line

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


def map_items(fn: Callable[[T], R], items: Sequence[T], jobs: int = 1, scheduler: str | None = None) -> Iterator[R]:
    """`fn(item)` for every item, in order: on the Dask cluster at `scheduler` when given, else as
    `map_in_processes` (`jobs`)."""
    if scheduler is not None:
        return map_on_cluster(fn, items, scheduler)
    return map_in_processes(fn, items, jobs)


def map_on_cluster(fn: Callable[[T], R], items: Sequence[T], address: str) -> Iterator[R]:
    """Yields `fn(item)` for every item, in order, each computed as one task on the Dask distributed
    cluster whose scheduler listens at `address` (e.g. tcp://10.0.0.5:8786). `fn` and the items travel by
    pickle (cloudpickle), so every worker needs nnconv (and what `fn` needs, e.g. ai-edge-litert) installed;
    the models are read by the workers from their paths, so the paths must be valid there (a shared file
    system or the same checkout). Tasks are not retried on another worker when `fn` raises: the exception
    is raised here, when its item's turn comes (callers pass `guarded` functions, so it never does)."""
    try:
        from distributed import Client
    except ImportError:
        raise NnconvError("--scheduler needs Dask distributed: pip install 'nnconv[distributed]'") from None
    try:
        client = Client(address, timeout="10s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as e:
        raise NnconvError(f"--scheduler {address}: cannot connect to a Dask scheduler ({e})") from None
    with client:
        # pure=False: each item is its own task even when two items are equal (the same model twice).
        futures = client.map(fn, list(items), pure=False)
        try:
            for f in futures:
                yield f.result()
        finally:
            client.cancel(futures)


@dataclass(frozen=True)
class Failed:
    """One model of a folder run (at one level, for per-level tasks) that could not be processed: its
    one-line reason and the exit code it gives alone (nnconv.errors.failure_line)."""

    path: str
    error: str
    exit_code: int
    level: int | None = None
    name: str = ""  # what tables call it (relative to the folder given); else path

    @property
    def label(self) -> str:
        return self.name or self.path

    def to_json(self) -> dict:
        data = {"model": self.path, "name": self.label, "status": "error", "error": self.error,
                "exit_code": self.exit_code}
        if self.level is not None:
            data["api_level"] = self.level
        return data


def guarded(item: str | tuple[str, int], fn: Callable[[Any], R]) -> R | Failed:
    """`fn(item)`, or the Failed record of the error it raised (one broken model never stops the others);
    `item` is a model's path or a (path, API level) pair. Module-level so that `functools.partial(guarded,
    fn=...)` can be sent to worker processes and cluster workers."""
    try:
        return fn(item)
    except Exception as e:  # noqa: BLE001 - the row says why, with the exit code the model gives alone
        line, code = failure_line(e)
        if isinstance(item, str):
            return Failed(item, line, code)
        return Failed(item[0], line, code, item[1])
