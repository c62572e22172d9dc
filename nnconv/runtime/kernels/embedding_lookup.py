"""EMBEDDING_LOOKUP (NNAPI OperationType 7) and HASHTABLE_LOOKUP (10).

EMBEDDING_LOOKUP slots: 0 lookups (TENSOR_INT32 1-D, each in [0, rows)), 1 values (float32/float16/
int32/quant8 asymm/signed, rank >= 2 in the spec); output: values[lookups].
HASHTABLE_LOOKUP slots: 0 lookups (TENSOR_INT32 1-D), 1 keys (TENSOR_INT32 1-D, sorted ascending),
2 values ([keys, ...], float32/int32/quant8 asymm). Outputs: 0 the value rows of found keys (zero bytes
for misses), 1 hits (TENSOR_QUANT8_ASYMM, 1 found / 0 missing).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.EMBEDDING_LOOKUP)
def embedding_lookup(call: KernelCall) -> list[np.ndarray]:
    lookups = call.tensor(0).reshape(-1).astype(np.int64)
    values = call.tensor(1)
    if values.ndim < 1:
        raise call.fail(f"values must have at least one dimension, got shape {list(values.shape)}")
    if lookups.size and (lookups.min() < 0 or lookups.max() >= values.shape[0]):
        raise call.fail(f"lookups must lie in [0, {values.shape[0]})")
    return [np.take(values, lookups, axis=0)]


@kernel(OperationType.HASHTABLE_LOOKUP)
def hashtable_lookup(call: KernelCall) -> list[np.ndarray]:
    lookups = call.tensor(0).reshape(-1)
    keys = call.tensor(1).reshape(-1)
    values = call.tensor(2)
    if values.ndim < 1:  # a value row per key: a scalar (an unspecified-rank temporary) has none
        raise call.fail(f"values must have at least one dimension, got shape {list(values.shape)}")
    if keys.size != values.shape[0]:
        raise call.fail(f"{keys.size} keys for {values.shape[0]} value rows")
    pos = np.clip(np.searchsorted(keys, lookups), 0, max(keys.size - 1, 0))
    hit = (keys[pos] == lookups) if keys.size else np.zeros(lookups.shape, bool)
    rows = np.take(values, pos, axis=0) if keys.size else np.zeros((lookups.size, *values.shape[1:]), values.dtype)
    mask = hit.reshape((-1,) + (1,) * (values.ndim - 1))
    out = np.where(mask, rows, np.zeros((), values.dtype)).astype(values.dtype)
    return [out, hit.astype(np.uint8)]
