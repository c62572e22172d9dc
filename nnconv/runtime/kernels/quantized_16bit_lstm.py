"""QUANTIZED_16BIT_LSTM (NNAPI OperationType 73): one step of the basic quantized LSTM cell.

Slots: 0 input [B, I] (TENSOR_QUANT8_ASYMM, scale 1/128, zero point 128); 1..4 input-to-{input, forget,
cell, output} weights [O, I] and 5..8 recurrent-to-* weights [O, O] (TENSOR_QUANT8_ASYMM, one shared scale
and zero point); 9..12 {input, forget, cell, output} gate bias [O] (TENSOR_INT32, scale weights_scale/128);
13 previous cell state [B, O] (TENSOR_QUANT16_SYMM, scale 2^-11: 4 integer bits); 14 previous output [B, O]
(TENSOR_QUANT8_ASYMM, scale 1/128, zero point 128).
Outputs: 0 cell state out [B, O] (TENSOR_QUANT16_SYMM), 1 output [B, O] (TENSOR_QUANT8_ASYMM).

Bit-exact with the reference: one int32 fully connected layer of the concatenated [input, previous
output] rows (values - 128) against weight rows stacked per gate as [recurrent | input] columns. The two
orders differ when I != O; the reference pairs them exactly so and the CTS vectors encode it (the
semantically aligned pairing fails them), so we do the same. Then requantization by 4096 * bias_scale to
Q3.12 int16; gemmlowp int16
logistic / tanh; new cell state = sat(Rescale<4>(i * g) + f * c); output = o * tanh(Rescale<3>(c)),
rounding-divided by 2^8, clamped to int8 and offset by 128.
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import Quantized16BitLstmSlot as S, per_gate
from nnconv.nnapi.quantization import multiply_by_quantized_multiplier, quantize_multiplier, rounding_divide_by_pot
from nnconv.runtime.kernels._fixedpoint import FP16 as fp
from nnconv.runtime.kernels._matmul import exact_int_matmul
from nnconv.runtime.kernels.registry import KernelCall, kernel

STATE_INTEGER_BITS = 4
_INPUT_W, _RECURRENT_W = per_gate(S, "INPUT_TO_{}_WEIGHTS"), per_gate(S, "RECURRENT_TO_{}_WEIGHTS")
_BIAS = (S.INPUT_GATE_BIAS, S.FORGET_GATE_BIAS, S.CELL_BIAS, S.OUTPUT_GATE_BIAS)


@kernel(OperationType.QUANTIZED_16BIT_LSTM)
def quantized_16bit_lstm(call: KernelCall) -> list[np.ndarray]:
    x = call.tensor(S.INPUT).astype(np.int64)
    prev_out = call.tensor(S.PREV_OUTPUT).astype(np.int64)
    prev_c = call.tensor(S.PREV_CELL_STATE).astype(np.int64)
    if x.ndim != 2 or prev_out.ndim != 2 or prev_c.shape != prev_out.shape:
        raise call.fail("input, previous output and previous cell state must be 2-D with matching shapes")
    batch, n_in = x.shape
    n_out = prev_out.shape[1]
    w_od = call.in_operands[S.INPUT_TO_INPUT_WEIGHTS]
    # Gate order of the stacked weights, biases and activations: input, cell, forget, output.
    order = (0, 2, 1, 3)
    rows = []
    for g in order:
        wi, wr = call.tensor(_INPUT_W[g]), call.tensor(_RECURRENT_W[g])
        if wi.shape != (n_out, n_in) or wr.shape != (n_out, n_out):
            raise call.fail(f"gate weights {list(wi.shape)} / {list(wr.shape)} do not match input {n_in} and "
                            f"output {n_out}")
        rows.append(np.concatenate([wr, wi], axis=1))
    weights = np.concatenate(rows, axis=0).astype(np.int64) - w_od.zero_point  # [4 O, O + I]
    bias = np.concatenate([call.tensor(_BIAS[g]).astype(np.int64) for g in order])
    concat = np.concatenate([x, prev_out], axis=1) - 128  # [B, I + O]
    acc = exact_int_matmul(concat, weights.T) + bias
    mult, shift = quantize_multiplier(4096.0 * float(call.in_operands[S.INPUT_GATE_BIAS].scale))
    acc = np.clip(multiply_by_quantized_multiplier(acc, mult, shift), fp.min, fp.max)
    a_in, a_cell, a_forget, a_out = (acc[:, k * n_out:(k + 1) * n_out] for k in range(4))
    i_gate = fp.logistic(a_in, 3)
    g_cell = fp.tanh(a_cell, 3)
    f_gate = fp.logistic(a_forget, 3)
    o_gate = fp.logistic(a_out, 3)
    new_c = fp.saturating_add(fp.rescale(fp.mul(i_gate, g_cell), 0, STATE_INTEGER_BITS), fp.mul(f_gate, prev_c))
    activ = fp.mul(o_gate, fp.tanh(fp.rescale(new_c, STATE_INTEGER_BITS, 3), 3))
    out = np.clip(rounding_divide_by_pot(activ, 8), -128, 127) + 128
    return [new_c.astype(np.int16), out.astype(np.uint8)]  # in `Quantized16BitLstmOutput` order
