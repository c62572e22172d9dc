"""RNN (NNAPI OperationType 24): one step of a fully connected recurrent cell.

Slots: 0 input [B, I], 1 weights [U, I], 2 recurrent weights [U, U], 3 bias [U], 4 hidden_state_in [B, U],
5 activation (INT32: 0..3 as FuseCode, 4 tanh, 6 sigmoid, as the reference's activation
functor). Outputs: 0 hidden_state_out [B, U], 1 output [B, U] (the same values).
TENSOR_FLOAT32 and TENSOR_FLOAT16 (computed in float32).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import RnnSlot as S
from nnconv.runtime.kernels._rnn_core import rnn_step
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.RNN)
def rnn(call: KernelCall) -> list[np.ndarray]:
    x, w, r, b, h = (call.tensor(i).astype(np.float32) for i in (S.INPUT, S.WEIGHTS, S.RECURRENT_WEIGHTS, S.BIAS,
                                                                   S.HIDDEN_STATE_IN))
    if x.ndim != 2 or w.ndim != 2 or r.ndim != 2 or h.ndim != 2:
        raise call.fail("input, weights, recurrent weights and hidden state must be 2-D")
    if w.shape[1] != x.shape[1] or r.shape != (w.shape[0], w.shape[0]) or b.shape != (w.shape[0],) \
            or h.shape != (x.shape[0], w.shape[0]):
        raise call.fail(f"inconsistent shapes: input {list(x.shape)}, weights {list(w.shape)}, recurrent "
                        f"{list(r.shape)}, bias {list(b.shape)}, state {list(h.shape)}")
    y = rnn_step(x, h, w, r, b, int(call.scalar(S.ACTIVATION)))
    dt = call.out_operands[0].dtype
    return [y.astype(dt), y.astype(dt)]
