"""UNIDIRECTIONAL_SEQUENCE_RNN (NNAPI OperationType 93): the RNN cell run over a sequence.

Slots: 0 input [B, T, I] (or [T, B, I] when time-major), 1 weights [U, I], 2 recurrent weights [U, U],
3 bias [U], 4 hidden_state_in [B, U], 5 activation (INT32, as RNN's), 6 time_major (INT32 0/1).
Outputs: 0 output [B, T, U] (or time-major), from feature level 4 optionally 1 hidden_state_out [B, U].
TENSOR_FLOAT32 and TENSOR_FLOAT16 (computed in float32).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import SequenceRnnSlot as S
from nnconv.runtime.kernels._rnn_core import rnn_sequence
from nnconv.runtime.kernels._sequence import sequence_input, time_major_view
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.UNIDIRECTIONAL_SEQUENCE_RNN)
def unidirectional_sequence_rnn(call: KernelCall) -> list[np.ndarray]:
    x = sequence_input(call, S.INPUT)
    w, r, b, h = (call.tensor(i).astype(np.float32) for i in (S.WEIGHTS, S.RECURRENT_WEIGHTS, S.BIAS,
                                                               S.HIDDEN_STATE_IN))
    time_major = bool(call.scalar(S.TIME_MAJOR))
    xt = time_major_view(x, time_major)
    if w.shape[1] != x.shape[2] or h.shape != (xt.shape[1], w.shape[0]):
        raise call.fail(f"inconsistent shapes: input {list(x.shape)}, weights {list(w.shape)}, state "
                        f"{list(h.shape)}")
    outs, h = rnn_sequence(xt, h, w, r, b, int(call.scalar(S.ACTIVATION)))
    y = time_major_view(outs, time_major)
    dt = call.out_operands[0].dtype
    results = [np.ascontiguousarray(y).astype(dt)]
    if len(call.out_operands) > 1:
        results.append(h.astype(dt))
    return results
