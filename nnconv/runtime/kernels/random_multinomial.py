"""RANDOM_MULTINOMIAL (NNAPI OperationType 74): draws class indices from per-row categorical distributions.

Slots: 0 input [batches, classes] unnormalized log-probabilities (TENSOR_FLOAT32 or TENSOR_FLOAT16),
1 sample count (INT32), 2 seeds (TENSOR_INT32 [2]). Output TENSOR_INT32 [batches, samples].
As in the reference, each row's CDF is built from exp(logit - max) over the finite logits (in double) and a
sample is the first class whose CDF exceeds u * total, u uniform in [0, 1). The uniform numbers come from
numpy's PCG64 seeded by the two seed values, not from TensorFlow's Philox stream: the samples follow the
same distribution but are not the same sequence (the CTS checks this op statistically).
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.RANDOM_MULTINOMIAL)
def random_multinomial(call: KernelCall) -> list[np.ndarray]:
    if call.type(0) not in FLOAT_TYPES:
        raise call.fail(f"input 0 has unsupported type {call.type(0).name}")
    logits = call.tensor(0).astype(np.float32)
    if logits.ndim != 2:
        raise call.fail(f"input 0 must be 2-D [batches, classes], got {list(logits.shape)}")
    samples = int(call.scalar(1))
    seeds = call.tensor(2).reshape(-1)
    if samples < 0 or seeds.size < 2:
        raise call.fail("needs a non-negative sample count and two seeds")
    finite = np.isfinite(logits)
    row_max = np.max(np.where(finite, logits, np.finfo(np.float32).min), axis=1, keepdims=True)
    weights = np.where(finite, np.exp(logits.astype(np.float64) - row_max.astype(np.float64)), 0.0)
    cdf = np.cumsum(weights, axis=1)
    rng = np.random.default_rng([int(seeds[0]) & 0xFFFFFFFF, int(seeds[1]) & 0xFFFFFFFF])
    batches, classes = logits.shape
    targets = rng.random((batches, samples)) * cdf[:, -1:]
    # upper_bound per row as one searchsorted: row b's CDF, scaled to [0, 1] and shifted by 2b, is a
    # strictly separated, non-decreasing run of one flat array (memory O(batches * (classes + samples))).
    total = np.where(cdf[:, -1:] > 0, cdf[:, -1:], 1.0)
    offset = 2.0 * np.arange(batches, dtype=np.float64)[:, None]
    flat = (cdf / total + offset).reshape(-1)
    pos = np.searchsorted(flat, (targets / total + offset).reshape(-1), side="right").reshape(batches, samples)
    idx = pos - np.arange(batches)[:, None] * classes
    return [np.minimum(idx, classes - 1).astype(np.int32)]
