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

from nnconv.kernels._lstm_core import lstm_sequence, present, read_weights
from nnconv.kernels.registry import KernelCall, kernel
from nnconv.nnapi.enums import OperationType


@kernel(OperationType.BIDIRECTIONAL_SEQUENCE_LSTM)
def bidirectional_sequence_lstm(call: KernelCall) -> list[np.ndarray]:
    if call.num_inputs != 61:
        raise call.fail(f"takes 61 inputs, got {call.num_inputs}")
    x = call.tensor(0).astype(np.float32)
    if x.ndim != 3:
        raise call.fail(f"input 0 must be 3-D, got {list(x.shape)}")
    act = int(call.scalar(48))
    cell_clip, proj_clip = float(call.scalar(49)), float(call.scalar(50))
    merge = bool(call.scalar(51))
    time_major = bool(call.scalar(52))
    if cell_clip < 0 or proj_clip < 0:
        raise call.fail("cell_clip and proj_clip must not be negative")

    def tm(a: np.ndarray) -> np.ndarray:
        return a if time_major else np.swapaxes(a, 0, 1)

    has_aux = present(call, 39)
    has_aux_w = present(call, 41)
    if has_aux_w and not has_aux:
        raise call.fail("aux input weights are given without an aux input (slot 39)")
    fw = read_weights(call, 1, 53, 40 if has_aux_w else None)
    bw = read_weights(call, 18, 57, 44 if has_aux_w else None)
    xt = tm(x)
    aux = tm(call.tensor(39).astype(np.float32)) if has_aux else None
    bw_x, cross_aux = xt, aux
    if has_aux and not has_aux_w:
        bw_x, cross_aux = aux, None  # parallel linking: the backward cell reads the aux input
    fw_out, fw_h, fw_c = lstm_sequence(fw, xt, call.tensor(35).astype(np.float32),
                                       call.tensor(36).astype(np.float32), act, cell_clip, proj_clip, cross_aux)
    bw_out, bw_h, bw_c = lstm_sequence(bw, bw_x, call.tensor(37).astype(np.float32),
                                       call.tensor(38).astype(np.float32), act, cell_clip, proj_clip, cross_aux,
                                       reverse=True)
    dt = call.out_operands[0].dtype
    if merge:
        results = [np.ascontiguousarray(tm(np.concatenate([fw_out, bw_out], axis=2))).astype(dt)]
    else:
        results = [np.ascontiguousarray(tm(fw_out)).astype(dt), np.ascontiguousarray(tm(bw_out)).astype(dt)]
    if len(call.out_operands) > len(results):
        results += [fw_h.astype(dt), fw_c.astype(dt), bw_h.astype(dt), bw_c.astype(dt)]
    return results
