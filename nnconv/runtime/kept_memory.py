"""The memory an executor keeps from run to run outside its buffer pool.

Besides the pool's arena (`BufferPool.retained_bytes`), a runner keeps what its operations derived once:
converted filters, requantization constants and byte tables (`KernelCall.memo`), the buffers of operations
prepared for small maps (`kernels/_conv_small.py`, `_depthwise_small.py`), and the outputs of operations
folded at plan time (`SubgraphRunner._fold`). `benchmarks/run.py` reports it as "kept MB" beside a warm
run's allocations; views of the model's own constants (the mmap) are not counted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from nnconv.runtime.buffers import BufferPool


def kept_bytes(runner: Any) -> int:
    """Bytes of the arrays `runner` (a SubgraphRunner) keeps in its operations' caches and plans, each
    underlying buffer counted once."""
    owners: dict[int, int] = {}
    # the runner itself (a cached KernelCall refers back to it) and its buffer pool, reported on its own
    # (`BufferPool.retained_bytes`), are not walked into
    seen: set[int] = {id(runner), id(runner.pool)}
    stack: list[Any] = [runner._op_caches, [step.fixed for plan in runner._plans.values() for step in plan]]
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            owner = item
            while isinstance(owner.base, np.ndarray):
                owner = owner.base
            if owner.base is None:  # owns its memory (a view of the model's mmap has a non-array base)
                owners[id(owner)] = owner.nbytes
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif hasattr(item, "__dict__") and not callable(item) and not isinstance(item, BufferPool):
            stack.extend(vars(item).values())
    return sum(owners.values())
