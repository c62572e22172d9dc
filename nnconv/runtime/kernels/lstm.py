"""LSTM (NNAPI OperationType 16): one time step of a long short-term memory cell.

Slots: 0 input [B, I]; 1..4 input-to-{input, forget, cell, output} weights [C, I] (1 optional: CIFG);
5..8 recurrent-to-* weights [C, O] (5 optional); 9..11 cell-to-{input, forget, output} peephole [C]
(optional); 12..15 {input, forget, cell, output} gate bias [C] (12 omitted with CIFG); 16 projection
weights [O, C] and 17 projection bias [O] (optional); 18 output_state_in [B, O]; 19 cell_state_in [B, C];
20 activation (INT32), 21 cell_clip, 22 proj_clip (FLOAT32, FLOAT16 for float16 models);
[23..26 layer-norm weights {input, forget, cell, output} [C], the 27-input form of feature level 3].
Outputs: 0 scratch buffer [B, 3C or 4C], 1 output_state_out [B, O], 2 cell_state_out [B, C],
3 output [B, O]. TENSOR_FLOAT32 and TENSOR_FLOAT16 (computed in float32).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import LstmOutput, LstmSlot as S
from nnconv.runtime.kernels._lstm_core import check_step_inputs, lstm_step, read_clips, read_weights
from nnconv.runtime.kernels.registry import KernelCall, kernel

# The 23-input form of feature level 1 ends with the clips; the 27-input one adds the layer-norm weights.
_WITHOUT_LAYER_NORM = int(S.PROJ_CLIP) + 1


@kernel(OperationType.LSTM)
def lstm(call: KernelCall) -> list[np.ndarray]:
    if call.num_inputs not in (_WITHOUT_LAYER_NORM, len(S)):
        raise call.fail(f"takes {_WITHOUT_LAYER_NORM} or {len(S)} inputs, got {call.num_inputs}")
    x = call.tensor(S.INPUT).astype(np.float32)
    if x.ndim != 2:
        raise call.fail(f"input 0 must be 2-D [batch, input], got {list(x.shape)}")
    w = read_weights(call, S.INPUT_TO_INPUT_WEIGHTS, S.INPUT_LAYER_NORM_WEIGHTS if call.num_inputs == len(S) else None)
    h = call.tensor(S.OUTPUT_STATE_IN).astype(np.float32)
    c = call.tensor(S.CELL_STATE_IN).astype(np.float32)
    act = int(call.scalar(S.ACTIVATION))
    cell_clip, proj_clip = read_clips(call, S.CELL_CLIP, S.PROJ_CLIP)
    check_step_inputs(call, w, x.shape[1], h, c, x.shape[0])
    out, new_c, scratch = lstm_step(w, x, h, c, act, cell_clip, proj_clip)
    dt = call.out_operands[LstmOutput.OUTPUT].dtype
    return [scratch.astype(dt), out.astype(dt), new_c.astype(dt), out.astype(dt)]  # in `LstmOutput` order
