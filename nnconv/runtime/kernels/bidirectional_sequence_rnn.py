"""BIDIRECTIONAL_SEQUENCE_RNN (NNAPI OperationType 43): forward and backward RNN cells over a sequence.

Slots: 0 input [B, T, I] (or time-major [T, B, I]); 1 fw weights [U, I], 2 fw recurrent [U, U], 3 fw bias,
4 fw hidden state [B, U]; 5..8 the same for the backward cell; 9 aux input (optional), 10 fw aux weights,
11 bw aux weights (optional); 12 activation (INT32), 13 time_major (BOOL), 14 merge_outputs (BOOL).
Aux linking as BIDIRECTIONAL_SEQUENCE_LSTM: aux input without aux weights -> the backward cell reads it
(parallel linking); with aux weights -> both cells add aux x W_aux^T (cross linking).
Outputs: 0 fw output (the [fw, bw] concatenation on the last axis when merging), 1 bw output (absent when
merging), then from feature level 4 optionally fw and bw hidden states. TENSOR_FLOAT32 / TENSOR_FLOAT16.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import BidirectionalRnnSlot as S
from nnconv.runtime.kernels._lstm_core import present
from nnconv.runtime.kernels._rnn_core import rnn_sequence
from nnconv.runtime.kernels._sequence import bidirectional_results, sequence_input, time_major_view
from nnconv.runtime.kernels.registry import KernelCall, kernel

# One direction's cell: weights, recurrent weights, bias, hidden state.
_FW = (S.FW_WEIGHTS, S.FW_RECURRENT_WEIGHTS, S.FW_BIAS, S.FW_HIDDEN_STATE_IN)
_BW = (S.BW_WEIGHTS, S.BW_RECURRENT_WEIGHTS, S.BW_BIAS, S.BW_HIDDEN_STATE_IN)


@kernel(OperationType.BIDIRECTIONAL_SEQUENCE_RNN)
def bidirectional_sequence_rnn(call: KernelCall) -> list[np.ndarray]:
    x = sequence_input(call, S.INPUT)
    fw = [call.tensor(i).astype(np.float32) for i in _FW]
    bw = [call.tensor(i).astype(np.float32) for i in _BW]
    act = int(call.scalar(S.ACTIVATION))
    time_major = bool(call.scalar(S.TIME_MAJOR))
    merge = bool(call.scalar(S.MERGE_OUTPUTS))

    has_aux, has_aux_w = present(call, S.AUX_INPUT), present(call, S.FW_AUX_WEIGHTS)
    if has_aux_w and not has_aux:
        raise call.fail(f"aux weights are given without an aux input (slot {int(S.AUX_INPUT)})")
    xt = time_major_view(x, time_major)
    aux = time_major_view(call.tensor(S.AUX_INPUT).astype(np.float32), time_major) if has_aux else None
    fw_aux_w = call.tensor(S.FW_AUX_WEIGHTS).astype(np.float32) if has_aux_w else None
    bw_aux_w = call.tensor(S.BW_AUX_WEIGHTS).astype(np.float32) if has_aux_w else None
    bw_x = xt
    if has_aux and not has_aux_w:
        bw_x, aux = aux, None  # parallel linking
    fw_out, fw_h = rnn_sequence(xt, fw[3], fw[0], fw[1], fw[2], act, aux, fw_aux_w)
    bw_out, bw_h = rnn_sequence(bw_x, bw[3], bw[0], bw[1], bw[2], act, aux, bw_aux_w, reverse=True)
    return bidirectional_results(call, fw_out, bw_out, time_major, merge, [fw_h, bw_h])
