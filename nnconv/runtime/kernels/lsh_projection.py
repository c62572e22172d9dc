"""LSH_PROJECTION (NNAPI OperationType 15): locality-sensitive hashing of input rows to bits.

Slots: 0 hash [num_hash, num_bits <= 32] (TENSOR_FLOAT32 / TENSOR_FLOAT16 seeds), 1 input [N, ...] (any
tensor type: each of the N rows is hashed as raw bytes), 2 weight [N] (TENSOR_FLOAT32 / FLOAT16, optional
for the sparse types), 3 type (INT32: 1 SPARSE_DEPRECATED, 2 DENSE, 3 SPARSE).
Output: TENSOR_INT32, [num_hash] (sparse) or [num_hash * num_bits] (dense).

Each bit is the sign of sum_i weight_i * double(int64(Fingerprint64(seed_f32 bytes ++ row_i bytes))) (the
weights are 1 when omitted), the seed taken as float32 even for float16 hashes. Dense outputs the bits;
sparse packs each hash's bits MSB first, plus i * 2^num_bits for type 3 (not for the deprecated type 1).
All (seed, row) keys have one length, so every fingerprint is computed in one vectorized call.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._farmhash import fingerprint64
from nnconv.runtime.kernels._lstm_core import present
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType

SPARSE_DEPRECATED, DENSE, SPARSE = 1, 2, 3


@kernel(OperationType.LSH_PROJECTION)
def lsh_projection(call: KernelCall) -> list[np.ndarray]:
    hashes = call.tensor(0)
    x = call.tensor(1)
    kind = int(call.scalar(3))
    if hashes.ndim != 2 or hashes.shape[1] > 32:
        raise call.fail(f"hash must be 2-D with at most 32 bits per hash, got {list(hashes.shape)}")
    if x.ndim < 1:
        raise call.fail("input must have at least one dimension")
    if kind not in (SPARSE_DEPRECATED, DENSE, SPARSE):
        raise call.fail(f"unknown projection type {kind}")
    has_weight = present(call, 2)
    if kind == DENSE and not has_weight:
        raise call.fail("the dense projection needs a weight tensor (slot 2)")
    n = x.shape[0]
    weight = call.tensor(2).astype(np.float64).reshape(-1) if has_weight else np.ones(n, np.float64)
    if weight.shape[0] != n:
        raise call.fail(f"weight has {weight.shape[0]} entries, input has {n} rows")
    num_hash, num_bits = hashes.shape
    seeds = hashes.astype(np.float32).reshape(-1)  # seeds are float32 even for float16 hashes
    rows = np.ascontiguousarray(x).reshape(n, -1).view(np.uint8).reshape(n, -1)
    seed_bytes = seeds.view(np.uint8).reshape(-1, 4)
    keys = np.concatenate([np.repeat(seed_bytes, n, axis=0), np.tile(rows, (seeds.size, 1))], axis=1)
    signed = fingerprint64(keys).view(np.int64).astype(np.float64).reshape(seeds.size, n)
    # A sequential double sum in row order, as the reference accumulates.
    score = np.cumsum(signed * weight, axis=1)[:, -1] if n else np.zeros(seeds.size)
    bits = (score > 0).astype(np.int32).reshape(num_hash, num_bits)
    if kind == DENSE:
        return [bits.reshape(-1)]
    packed = (bits.astype(np.int64) << np.arange(num_bits - 1, -1, -1, dtype=np.int64)).sum(axis=1)
    if kind == SPARSE:
        packed = packed + np.arange(num_hash, dtype=np.int64) * (1 << num_bits)
    return [packed.astype(np.int32)]
