"""QUANTIZED_LSTM (NNAPI OperationType 95, feature level 4): one step of the int8 LSTM with int16 gates.

Slots (`recurrent.QuantizedLstmSlot`): 0 input [B, I] (TENSOR_QUANT8_ASYMM_SIGNED); 1..4 input-to-{input,
forget, cell, output} weights [C, I] and 5..8 recurrent-to-* weights [C, O] (TENSOR_QUANT8_SYMM; 1 and 5
omitted with CIFG); 9..11 cell-to-{input, forget, output} peephole weights [C] (TENSOR_QUANT16_SYMM,
optional); 12..15 gate biases [C] (TENSOR_INT32; 12 omitted with CIFG); 16 projection weights [O, C]
(TENSOR_QUANT8_SYMM) and 17 projection bias [O] (TENSOR_INT32), optional; 18 previous output [B, O]
(QUANT8_ASYMM_SIGNED); 19 previous cell state [B, C] (TENSOR_QUANT16_SYMM, scale a power of two <= 2^-9);
20..23 layer-norm weights [C] (TENSOR_QUANT16_SYMM, optional); 24 cell clip, 25 projection clip, 26..29 the
scales of the {input, forget, cell, output} gates' matmul results (FLOAT32); 30 hidden state zero point
(INT32), 31 hidden state scale (FLOAT32).
Outputs: 0 output state [B, O], 1 cell state [B, C] (TENSOR_QUANT16_SYMM), 2 output [B, O].

Bit-exact with the reference integer pipeline: each gate accumulates (x - zp) W^T and (h - zp) R^T through
their own requantization to int16 (saturating after each), the peephole term, then layer normalization
(which is where the gate bias enters; without layer norm the reference uses no gate bias), then gemmlowp
int16 logistic (Q3.12 input) or tanh; the cell is (f * c) >> 15 + (i * g) >> (30 + log2 cell_scale),
saturated and clipped; the hidden state o * tanh(c) requantized to int8 with the hidden zero point
(subtracted, as the reference does); the optional projection gives the output, else the hidden state.
The peepholes read the previous cell state (the current one for the output gate), as TFLite does (the
reference reads its not-yet-written output buffer for the input and forget gates), and apply the
reference's and TFLite's shared element count quirk (see `_peephole`).
"""

from __future__ import annotations

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.recurrent import QuantizedLstmSlot as S, cell_shift as checked_cell_shift, per_gate
from nnconv.nnapi.quantization import multiply_by_quantized_multiplier, quantize_multiplier, rounding_divide_by_pot
from nnconv.runtime.kernels._fixedpoint import FP16 as fp
from nnconv.runtime.kernels._lstm_core import present
from nnconv.runtime.kernels._matmul import exact_int_matmul
from nnconv.runtime.kernels.l2_normalization import inv_sqrt_quantized_multiplier_exp
from nnconv.runtime.kernels.registry import KernelCall, kernel

F32 = np.float32
# Per gate (input, forget, cell, output): the weights, peephole (none for the cell gate), bias, layer norm and
# intermediate scale slots.
_INPUT_W, _RECURRENT_W = per_gate(S, "INPUT_TO_{}_WEIGHTS"), per_gate(S, "RECURRENT_TO_{}_WEIGHTS")
_PEEPHOLE, _BIAS = per_gate(S, "CELL_TO_{}_WEIGHTS"), (S.INPUT_GATE_BIAS, S.FORGET_GATE_BIAS, S.CELL_BIAS,
                                                       S.OUTPUT_GATE_BIAS)
_LAYER_NORM, _INTERMEDIATE = per_gate(S, "{}_LAYER_NORM_WEIGHTS"), per_gate(S, "{}_INTERMEDIATE_SCALE")
_REQUIRED = (*_INPUT_W[1:], *_RECURRENT_W[1:], *_BIAS[1:])  # the input gate's are omitted with CIFG


def _qm(scale: float) -> tuple[int, int]:
    """QuantizeMultiplier of a scale the reference holds as float32."""
    return quantize_multiplier(float(F32(scale)))


def _matmul_acc(x: np.ndarray, x_zp: int, w: np.ndarray, scale: float, acc: np.ndarray | None,
                out_zp: int = 0, lo: int = fp.min, hi: int = fp.max,
                bias: np.ndarray | None = None) -> np.ndarray:
    """`MatrixBatchVectorMultiplyAccumulate`: requantized (x - zp) W^T (+ bias) + out_zp, added to `acc`
    and saturated."""
    m, s = _qm(scale)
    raw = exact_int_matmul(x.astype(np.int64) - x_zp, w.astype(np.int64).T)
    if bias is not None:
        raw = raw + bias
    y = multiply_by_quantized_multiplier(raw, m, s) + out_zp
    if acc is not None:
        y = y + acc
    return np.clip(y, lo, hi)


def _layer_norm(x: np.ndarray, weights: np.ndarray, bias: np.ndarray, norm_scale: float) -> np.ndarray:
    """`ApplyLayerNorm` of int16 gate values, per batch row."""
    n = x.shape[1]
    x = x.astype(np.int64)
    s = x.sum(axis=1, keepdims=True)
    sq = (x * x).sum(axis=1, keepdims=True)
    mean = _trunc_div(s * 1024, n)
    variance = sq * ((1 << 20) // n) - mean * mean
    variance2 = _trunc_div(variance, 1 << 20)
    limit = min(1, int(F32(10000) * F32(norm_scale)))
    variance2 = np.where(variance2 < 1, limit, variance2)
    inv_a, inv_b = inv_sqrt_quantized_multiplier_exp(variance2)
    shifted = 1024 * x - mean
    rescaled = multiply_by_quantized_multiplier(shifted, inv_a, inv_b)
    val3 = rescaled * weights.astype(np.int64) + bias.astype(np.int64)
    val4 = _trunc_div(np.where(val3 > 0, val3 + 512, val3 - 512), 1024)
    a, b = _qm(norm_scale)
    return np.clip(multiply_by_quantized_multiplier(val4, a, b + 12), fp.min, fp.max)


def _trunc_div(a: np.ndarray, b: int) -> np.ndarray:
    """C++ integer division (truncation toward zero)."""
    q = np.abs(a) // abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _peephole(acc: np.ndarray, w: np.ndarray, cell: np.ndarray, scale: float, n_output: int) -> np.ndarray:
    """`VectorBatchVectorCwiseProductAccumulate(w, n_output, cell, n_batch, ...)` as the reference (and
    TFLite's integer LSTM) call it: with the vector size `n_output`, not the cell count. Over the flattened
    [B, C] buffers it updates the first B * n_output elements, element i taking weight i % n_output and cell
    value i; without a projection (n_output == C) that is the plain per-cell product."""
    m, s = _qm(scale)
    batch, n_cell = acc.shape
    k = batch * n_output
    flat_acc = acc.reshape(-1).copy()
    flat_cell = cell.reshape(-1)[:k]
    weights = np.tile(w.astype(np.int64)[:n_output], batch)
    prod = multiply_by_quantized_multiplier(weights * flat_cell, m, s)
    flat_acc[:k] = np.clip(prod + flat_acc[:k], fp.min, fp.max)
    return flat_acc.reshape(batch, n_cell)


@kernel(OperationType.QUANTIZED_LSTM)
def quantized_lstm(call: KernelCall) -> list[np.ndarray]:
    if call.num_inputs != len(S):
        raise call.fail(f"takes {len(S)} inputs, got {call.num_inputs}")
    ods = call.in_operands
    x = call.tensor(S.INPUT).astype(np.int64)
    h = call.tensor(S.OUTPUT_STATE_IN).astype(np.int64)
    c = call.tensor(S.CELL_STATE_IN).astype(np.int64)
    cifg = not present(call, S.INPUT_TO_INPUT_WEIGHTS)
    if cifg != (not present(call, S.RECURRENT_TO_INPUT_WEIGHTS)):
        raise call.fail("input-to-input and recurrent-to-input weights must be both given or both omitted")
    for slot in _REQUIRED:
        if not present(call, slot):
            raise call.fail(f"input {int(slot)} is required")
    x_scale, x_zp = ods[S.INPUT].scale, ods[S.INPUT].zero_point
    h_scale, h_zp = ods[S.OUTPUT_STATE_IN].scale, ods[S.OUTPUT_STATE_IN].zero_point
    cell_scale = ods[S.CELL_STATE_IN].scale
    cell_shift = checked_cell_shift(cell_scale)
    if cell_shift is None:
        raise call.fail(f"the cell state scale {cell_scale} must be a power of two <= 2^-9")
    cell_clip, proj_clip = float(call.scalar(S.CELL_CLIP)), float(call.scalar(S.PROJECTION_CLIP))
    inter = [float(call.scalar(slot)) for slot in _INTERMEDIATE]
    hidden_zp, hidden_scale = int(call.scalar(S.HIDDEN_STATE_ZERO_POINT)), float(call.scalar(S.HIDDEN_STATE_SCALE))
    layer_norm = [present(call, slot) for slot in _LAYER_NORM]

    def gate(k: int, cell: np.ndarray | None) -> np.ndarray:
        """Pre-activation int16 value of gate k (0 input, 1 forget, 2 cell, 3 output)."""
        w, r = _INPUT_W[k], _RECURRENT_W[k]
        acc = _matmul_acc(x, x_zp, call.tensor(w), F32(ods[w].scale) * F32(x_scale) / F32(inter[k]), None)
        acc = _matmul_acc(h, h_zp, call.tensor(r), F32(ods[r].scale) * F32(h_scale) / F32(inter[k]), acc)
        peep = _PEEPHOLE[k]
        if cell is not None and peep is not None and present(call, peep):
            scale = F32(2.0 ** cell_shift * float(F32(ods[peep].scale)) / float(F32(inter[k])))
            acc = _peephole(acc, call.tensor(peep), cell, float(scale), h.shape[1])
        if layer_norm[k]:
            norm = _LAYER_NORM[k]
            acc = _layer_norm(acc, call.tensor(norm), call.tensor(_BIAS[k]), ods[norm].scale)
        return acc

    f_gate = fp.logistic(gate(1, c), 3)
    g_cell = fp.tanh(gate(2, None), 3)
    i_gate = fp.wrap(32767 - f_gate) if cifg else fp.logistic(gate(0, c), 3)
    forget_part = fp.wrap(rounding_divide_by_pot(f_gate * c, 15))
    input_part = fp.wrap(rounding_divide_by_pot(i_gate * g_cell, 30 + cell_shift))
    new_c = np.clip(forget_part + input_part, fp.min, fp.max)
    if cell_clip > 0:
        q_clip = int(min(max(F32(cell_clip) / F32(cell_scale), F32(-32768)), F32(32767)))
        new_c = np.clip(new_c, -q_clip, q_clip)
    o_gate = fp.logistic(gate(3, new_c), 3)
    # The reference's ApplyTanh dispatches on 0..6 integer bits and writes nothing otherwise (a cell scale
    # below 2^-15): its destination, the input-gate buffer, then still holds the input gate (or 1 - forget
    # with CIFG), which is what multiplies the output gate. TFLite's 8x8_16 kernel does the same without CIFG.
    tanh_c = fp.tanh(new_c, cell_shift + 15) if 0 <= cell_shift + 15 <= 6 else i_gate
    hm, hs = quantize_multiplier(float(F32(2.0 ** -15 / float(F32(hidden_scale)) * 2.0 ** -15)))
    hidden = np.clip(multiply_by_quantized_multiplier(o_gate * tanh_c, hm, hs) - hidden_zp, -128, 127)
    if present(call, S.PROJECTION_WEIGHTS):
        pw = call.tensor(S.PROJECTION_WEIGHTS)
        pb = call.tensor(S.PROJECTION_BIAS).astype(np.int64) if present(call, S.PROJECTION_BIAS) \
            else np.zeros(pw.shape[0], np.int64)
        pw_scale = ods[S.PROJECTION_WEIGHTS].scale
        # The reference folds the hidden zero point into the bias with a plus sign, matching its subtraction
        # above: hidden values are stored as q - zp.
        bias = pb + hidden_zp * pw.astype(np.int64).sum(axis=1)
        out = _matmul_acc(hidden, 0, pw, F32(pw_scale) * F32(hidden_scale) / F32(h_scale), None,
                          out_zp=h_zp, lo=-128, hi=127, bias=bias)
        if proj_clip > 0:
            q_clip = int(min(max(F32(proj_clip) / F32(pw_scale), F32(-128)), F32(127)))
            out = np.clip(out, -q_clip, q_clip)
    else:
        out = hidden
    out8 = out.astype(np.int8)
    return [out8, new_c.astype(np.int16), out8.copy()]  # in `QuantizedLstmOutput` order
