"""BIDIRECTIONAL_SEQUENCE_LSTM (NNAPI OperationType 42): a forward and a backward LSTM over a sequence.

Slots: 0 input [T, B, I] (or [B, T, I] when batch-major); 1..17 the forward cell's weights in LSTM's
slot order 1..17; 18..34 the backward cell's; 35/36 forward output/cell state in; 37/38 backward ones;
39 aux input (optional); 40..43 forward aux-input-to-{input, forget, cell, output} weights; 44..47 backward
ones (optional); 48 activation, 49 cell_clip, 50 proj_clip, 51 merge_outputs (BOOL), 52 time_major (BOOL);
53..56 forward and 57..60 backward layer-norm weights (optional).
Aux input linking (as the reference): no aux input -> none; aux input without aux weights ("parallel
linking") -> the backward cell reads the aux input instead of the input; aux input with aux weights
("cross linking") -> both cells add aux x W_aux^T to their gates.
Outputs: 0 forward output (the concatenation [fw, bw] on the last axis when merging), 1 backward output
(absent when merging), then from feature level 4 optionally the forward output and cell states and the
backward ones. TENSOR_FLOAT32 and TENSOR_FLOAT16 (computed in float32).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import BidirectionalLstmSlot as S
from nnconv.runtime.kernels._lstm_core import (check_step_inputs, lstm_sequence, present, read_clips,
                                                read_weights)
from nnconv.runtime.kernels._sequence import bidirectional_results, sequence_input, time_major_view
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.BIDIRECTIONAL_SEQUENCE_LSTM)
def bidirectional_sequence_lstm(call: KernelCall) -> list[np.ndarray]:
    x = sequence_input(call, S.INPUT, num_inputs=len(S))
    act = int(call.scalar(S.ACTIVATION))
    cell_clip, proj_clip = read_clips(call, S.CELL_CLIP, S.PROJ_CLIP)
    merge = bool(call.scalar(S.MERGE_OUTPUTS))
    time_major = bool(call.scalar(S.TIME_MAJOR))

    has_aux = present(call, S.AUX_INPUT)
    has_aux_w = present(call, S.FW_AUX_INPUT_TO_FORGET_WEIGHTS)
    if has_aux_w and not has_aux:
        raise call.fail(f"aux input weights are given without an aux input (slot {int(S.AUX_INPUT)})")
    fw = read_weights(call, S.FW_INPUT_TO_INPUT_WEIGHTS, S.FW_INPUT_LAYER_NORM_WEIGHTS,
                      S.FW_AUX_INPUT_TO_INPUT_WEIGHTS if has_aux_w else None)
    bw = read_weights(call, S.BW_INPUT_TO_INPUT_WEIGHTS, S.BW_INPUT_LAYER_NORM_WEIGHTS,
                      S.BW_AUX_INPUT_TO_INPUT_WEIGHTS if has_aux_w else None)
    xt = time_major_view(x, time_major)
    aux = time_major_view(call.tensor(S.AUX_INPUT).astype(np.float32), time_major) if has_aux else None
    bw_x, cross_aux = xt, aux
    if has_aux and not has_aux_w:
        bw_x, cross_aux = aux, None  # parallel linking: the backward cell reads the aux input
    states = [call.tensor(k).astype(np.float32) for k in (S.FW_OUTPUT_STATE_IN, S.FW_CELL_STATE_IN,
                                                           S.BW_OUTPUT_STATE_IN, S.BW_CELL_STATE_IN)]
    check_step_inputs(call, fw, xt.shape[2], states[0], states[1], xt.shape[1], "forward ")
    check_step_inputs(call, bw, bw_x.shape[2], states[2], states[3], bw_x.shape[1], "backward ")
    if cross_aux is not None:
        for cell, name in ((fw, "forward"), (bw, "backward")):
            width = next(a.shape[1] for a in cell.aux_w if a is not None)
            if cross_aux.shape[2] != width or cross_aux.shape[:2] != xt.shape[:2]:
                raise call.fail(f"aux input {list(cross_aux.shape)} does not match the {name} aux weights' "
                                f"{width} inputs or the input's time and batch {list(xt.shape[:2])}")
    fw_out, fw_h, fw_c = lstm_sequence(fw, xt, states[0], states[1], act, cell_clip, proj_clip, cross_aux)
    bw_out, bw_h, bw_c = lstm_sequence(bw, bw_x, states[2], states[3], act, cell_clip, proj_clip, cross_aux,
                                       reverse=True)
    return bidirectional_results(call, fw_out, bw_out, time_major, merge, [fw_h, fw_c, bw_h, bw_c])
