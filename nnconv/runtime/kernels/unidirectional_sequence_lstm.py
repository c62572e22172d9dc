"""UNIDIRECTIONAL_SEQUENCE_LSTM (NNAPI OperationType 92): an LSTM run over a whole sequence.

Slots 0..19 as LSTM's (0 is the input sequence [T, B, I], or [B, T, I] when batch-major), 20 activation,
21 cell_clip, 22 proj_clip, 23 time_major (BOOL), 24..27 layer-norm weights (optional).
Outputs: 0 output [T, B, O] (or [B, T, O]); from feature level 4 optionally 1 output_state_out [B, O] and
2 cell_state_out [B, C]. TENSOR_FLOAT32 and TENSOR_FLOAT16 (computed in float32).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import SequenceLstmSlot as S
from nnconv.runtime.kernels._lstm_core import check_step_inputs, lstm_sequence, read_clips, read_weights
from nnconv.runtime.kernels._sequence import sequence_input, time_major_view
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM)
def unidirectional_sequence_lstm(call: KernelCall) -> list[np.ndarray]:
    x = sequence_input(call, S.INPUT, num_inputs=len(S))
    time_major = bool(call.scalar(S.TIME_MAJOR))
    xt = time_major_view(x, time_major)
    w = read_weights(call, S.INPUT_TO_INPUT_WEIGHTS, S.INPUT_LAYER_NORM_WEIGHTS)
    h = call.tensor(S.OUTPUT_STATE_IN).astype(np.float32)
    c = call.tensor(S.CELL_STATE_IN).astype(np.float32)
    cell_clip, proj_clip = read_clips(call, S.CELL_CLIP, S.PROJ_CLIP)
    check_step_inputs(call, w, x.shape[2], h, c, xt.shape[1])
    outs, h, c = lstm_sequence(w, xt, h, c, int(call.scalar(S.ACTIVATION)), cell_clip, proj_clip)
    y = time_major_view(outs, time_major)
    dt = call.out_operands[0].dtype
    results = [np.ascontiguousarray(y).astype(dt)]
    if len(call.out_operands) >= 3:
        results += [h.astype(dt), c.astype(dt)]
    return results
