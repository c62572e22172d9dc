"""SVDF (NNAPI OperationType 27): singular value decomposition filter, one time step.

Slots: 0 input [B, I], 1 weights_feature [F, I], 2 weights_time [F, M], 3 bias [U] (optional),
4 state_in [B, M * F], 5 rank (INT32, F = U * rank), 6 activation (INT32, as RNN's).
Outputs: 0 state_out [B, M * F], 1 output [B, U]. TENSOR_FLOAT32 and TENSOR_FLOAT16 (computed in float32).

As the reference: the state is viewed as [B, F, M]; its newest column (M - 1) receives x W_f^T; each
filter's activation is its state row dotted with its weights_time row; each unit sums its `rank` filters
(plus bias) and goes through the activation; finally every state row shifts one place left with a zero
entering on the right, so state_out holds the history for the next step.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import SvdfOutput, SvdfSlot as S
from nnconv.runtime.kernels._lstm_core import apply_activation, present
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.SVDF)
def svdf(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(S.INPUT).astype(np.float32)
    wf = call.tensor(S.WEIGHTS_FEATURE).astype(np.float32)
    wt = call.tensor(S.WEIGHTS_TIME).astype(np.float32)
    state = call.tensor(S.STATE_IN).astype(np.float32)
    rank = int(call.scalar(S.RANK))
    act = int(call.scalar(S.ACTIVATION))
    if x.ndim != 2 or wf.ndim != 2 or wt.ndim != 2:
        raise call.fail("input, weights_feature and weights_time must be 2-D")
    batch, filters, memory = x.shape[0], wf.shape[0], wt.shape[1]
    if rank < 1 or filters % rank:
        raise call.fail(f"rank {rank} does not divide the {filters} filters")
    units = filters // rank
    if wf.shape[1] != x.shape[1] or wt.shape[0] != filters or state.size != batch * memory * filters:
        raise call.fail(f"inconsistent shapes: input {list(x.shape)}, weights_feature {list(wf.shape)}, "
                        f"weights_time {list(wt.shape)}, state {list(state.shape)}")
    s = state.reshape(batch, filters, memory).copy()
    s[:, :, memory - 1] = x @ wf.T
    scratch = np.einsum("bfm,fm->bf", s, wt, dtype=np.float32)
    out = scratch.reshape(batch, units, rank).sum(axis=2, dtype=np.float32)
    if present(call, S.BIAS):
        out = call.tensor(S.BIAS).astype(np.float32) + out
    out = apply_activation(out.astype(np.float32), act)
    shifted = np.zeros_like(s)
    shifted[:, :, :-1] = s[:, :, 1:]
    dt = call.out_operands[SvdfOutput.OUTPUT].dtype
    return [shifted.reshape(batch, memory * filters).astype(dt), out.astype(dt)]
