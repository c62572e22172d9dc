"""The float LSTM cell shared by LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM and BIDIRECTIONAL_SEQUENCE_LSTM.

The arithmetic follows the Android reference `LSTMCell::LSTMStep`: each gate starts from its bias (or from
zero with layer normalization, which adds the bias after normalizing), accumulates input x W^T, then
recurrent h x R^T (then the auxiliary input's contribution when present), then the peephole term c * w;
the cell is `f * c + act(g) * i` (CIFG: i = 1 - f), clipped when cell_clip > 0; the output gate's peephole
reads the new cell state; the projection (optional bias, clipped when proj_clip > 0) gives the output.
Everything runs in float32 (float16 operands are widened first and narrowed at the end, as the reference's
float16 path does). Vectorized over batch and units; the sequence kernels loop over time steps only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.errors import ExecutionError
from nnconv.runtime.kernels.registry import KernelCall

LAYER_NORM_EPSILON = np.float32(1e-8)

# Gate order used for the 4-tuples below: input, forget, cell, output.
GATES = ("input", "forget", "cell", "output")


def present(call: KernelCall, i: int) -> bool:
    """An optional operand counts as given when it has a value with elements (CTS passes omitted optional
    tensors declared with a 0 dimension as empty buffers, which the runtime treats as no value)."""
    return call.has(i) and call.inputs[i].size > 0  # type: ignore[union-attr]


def opt_f32(call: KernelCall, i: int) -> np.ndarray | None:
    """Optional input `i` as float32, or None when omitted."""
    return call.tensor(i).astype(np.float32) if present(call, i) else None


@dataclass
class LstmWeights:
    """One direction's parameters in float32; entries of the 4-tuples are None when omitted."""

    input_w: tuple  # [n_cell, n_input] per gate (input gate None with CIFG)
    recurrent_w: tuple  # [n_cell, n_output] per gate
    peephole: tuple  # [n_cell] per gate (the cell gate entry is always None)
    bias: tuple  # [n_cell] per gate
    projection_w: np.ndarray | None  # [n_output, n_cell]
    projection_b: np.ndarray | None  # [n_output]
    layer_norm: tuple  # [n_cell] per gate (the input gate's None with CIFG)
    aux_w: tuple = (None, None, None, None)  # [n_cell, n_aux_input] per gate

    @property
    def cifg(self) -> bool:
        return self.input_w[0] is None

    @property
    def use_layer_norm(self) -> bool:
        return any(w is not None for w in self.layer_norm)

    @property
    def n_cell(self) -> int:
        return self.input_w[3].shape[0]

    @property
    def n_output(self) -> int:
        return self.recurrent_w[3].shape[1]


def read_clips(call: KernelCall, cell_clip_slot: int, proj_clip_slot: int) -> tuple[float, float]:
    """(cell_clip, proj_clip) from their scalar slots; NNAPI disables clipping with 0 and rejects negative
    values."""
    cell_clip, proj_clip = float(call.scalar(cell_clip_slot)), float(call.scalar(proj_clip_slot))
    if cell_clip < 0 or proj_clip < 0:
        raise call.fail("cell_clip and proj_clip must not be negative")
    return cell_clip, proj_clip


def read_weights(call: KernelCall, first: int, layer_norm_first: int | None,
                 aux_first: int | None = None) -> LstmWeights:
    """Reads one cell's block of 17 weight slots from `first` on, in `recurrent.LSTM_WEIGHTS` order: input-to-*
    (first..first+3), recurrent-to-* (+4..+7), cell-to-* (+8..+10), biases (+11..+14), projection weights and
    bias (+15, +16); plus the four layer-norm slots from `layer_norm_first` and aux slots from `aux_first`."""
    f = [opt_f32(call, first + k) for k in range(17)]
    ln = tuple(opt_f32(call, layer_norm_first + k) if layer_norm_first is not None
               and layer_norm_first + k < call.num_inputs else None for k in range(4))
    aux = tuple(opt_f32(call, aux_first + k) for k in range(4)) if aux_first is not None else (None,) * 4
    w = LstmWeights(input_w=tuple(f[0:4]), recurrent_w=tuple(f[4:8]), peephole=(f[8], f[9], None, f[10]),
                    bias=tuple(f[11:15]), projection_w=f[15], projection_b=f[16], layer_norm=ln, aux_w=aux)
    check_weights(call, w)
    return w


def check_weights(call: KernelCall, w: LstmWeights) -> None:
    """The reference's all-or-none rules of the LSTM weights (CIFG, peepholes, projection)."""
    for k in (1, 2, 3):
        if w.input_w[k] is None or w.recurrent_w[k] is None or w.bias[k] is None:
            raise call.fail(f"the {GATES[k]} gate weights and bias are required")
    if (w.input_w[0] is None) != (w.recurrent_w[0] is None):
        raise call.fail("input-to-input and recurrent-to-input weights must be both given or both omitted")
    if w.cifg and w.bias[0] is not None and w.bias[0].size:
        raise call.fail("a CIFG LSTM (no input gate weights) takes no input gate bias")
    if not w.cifg and w.bias[0] is None:
        raise call.fail("the input gate bias is required without CIFG")
    if w.projection_w is None and w.projection_b is not None:
        raise call.fail("a projection bias needs projection weights")
    # The shapes the reference's CheckInputTensorDimensions requires: a .nnapi file can name any operand
    # in any slot, and a mismatch must be the runtime's refusal, not a numpy error inside a matmul.
    if w.input_w[3].ndim != 2 or w.recurrent_w[3].ndim != 2:
        raise call.fail("the cell gate's input and recurrent weights must be 2-D")
    n_cell, n_input, n_output = w.input_w[3].shape[0], w.input_w[3].shape[1], w.recurrent_w[3].shape[1]
    expected = [(w.input_w, (n_cell, n_input), "input weights"),
                (w.recurrent_w, (n_cell, n_output), "recurrent weights"),
                (w.peephole, (n_cell,), "peephole weights"),
                (w.bias, (n_cell,), "bias"),
                (w.layer_norm, (n_cell,), "layer-norm weights")]
    aux = [a for a in w.aux_w if a is not None]
    if aux:
        expected.append((w.aux_w, (n_cell, aux[0].shape[-1] if aux[0].ndim else 0), "aux input weights"))
    for arrays, shape, what in expected:
        for k, arr in enumerate(arrays):
            # an omitted CIFG input-gate bias may come as an empty tensor (checked above)
            if arr is not None and arr.shape != shape and not (what == "bias" and k == 0 and w.cifg):
                raise call.fail(f"{what} of the {GATES[k]} gate: shape {list(arr.shape)}, expected {list(shape)} "
                                f"({n_cell} cells, {n_input} inputs, {n_output} outputs)")
    if w.projection_w is not None:
        if w.projection_w.shape != (n_output, n_cell):
            raise call.fail(f"projection weights have shape {list(w.projection_w.shape)}, expected "
                            f"{[n_output, n_cell]}")
        if w.projection_b is not None and w.projection_b.shape != (n_output,):
            raise call.fail(f"projection bias has shape {list(w.projection_b.shape)}, expected {[n_output]}")
    elif n_output != n_cell:
        raise call.fail(f"without projection the output size ({n_output}) must equal the cell count ({n_cell})")


def check_step_inputs(call: KernelCall, w: LstmWeights, x_width: int, h: np.ndarray, c: np.ndarray,
                      batch: int, what: str = "") -> None:
    """The input's feature size and the state shapes against the weights (`what` names the direction)."""
    if x_width != w.input_w[3].shape[1]:
        raise call.fail(f"{what}input size {x_width} differs from the weights' {w.input_w[3].shape[1]}")
    if h.shape != (batch, w.n_output) or c.shape != (batch, w.n_cell):
        raise call.fail(f"{what}state shapes {list(h.shape)} / {list(c.shape)} do not match batch {batch}, "
                        f"{w.n_output} outputs and {w.n_cell} cells")


def apply_activation(x: np.ndarray, code: int) -> np.ndarray:
    """TfLiteFusedActivation codes as LSTM/RNN/SVDF take them: 0 none, 1 relu, 2 relu_n1_to_1, 3 relu6,
    4 tanh, 6 sigmoid."""
    if code == 0:
        return x
    if code == 1:
        return np.maximum(x, np.float32(0))
    if code == 2:
        return np.clip(x, np.float32(-1), np.float32(1))
    if code == 3:
        return np.clip(x, np.float32(0), np.float32(6))
    if code == 4:
        return np.tanh(x)
    if code == 6:
        return sigmoid(x)
    raise ExecutionError(f"unsupported activation code {code}")


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)) in float32; an overflowing exp gives 0 without a warning."""
    with np.errstate(over="ignore"):
        return (np.float32(1) / (np.float32(1) + np.exp(-x))).astype(np.float32)


def mean_stddev_normalize(x: np.ndarray) -> np.ndarray:
    """Per-row (x - mean) / sqrt(variance + eps), variance = E[x^2] - mean^2, all in float32."""
    n = np.float32(x.shape[-1])
    mean = x.sum(axis=-1, keepdims=True, dtype=np.float32) / n
    sq = (x * x).sum(axis=-1, keepdims=True, dtype=np.float32) / n
    var = sq - mean * mean
    return ((x - mean) * (np.float32(1) / np.sqrt(var + LAYER_NORM_EPSILON))).astype(np.float32)


def lstm_step(w: LstmWeights, x: np.ndarray, h: np.ndarray, c: np.ndarray, activation: int,
              cell_clip: float, proj_clip: float, aux: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One time step for a batch: returns (output [B, n_output], cell state [B, n_cell], scratch
    [B, 3 or 4 * n_cell] holding the gates as the reference's scratch buffer does)."""
    b = x.shape[0]
    pre = []
    for k in range(4):
        if k == 0 and w.cifg:
            pre.append(None)
            continue
        if w.use_layer_norm:
            g = np.zeros((b, w.n_cell), np.float32)
        else:
            g = np.broadcast_to(w.bias[k], (b, w.n_cell)).astype(np.float32)
        g = g + x @ w.input_w[k].T
        g = g + h @ w.recurrent_w[k].T
        if aux is not None and w.aux_w[k] is not None:
            g = g + aux @ w.aux_w[k].T
        pre.append(g.astype(np.float32))

    def finish_gate(k: int, g: np.ndarray, cell: np.ndarray | None) -> np.ndarray:
        if cell is not None and w.peephole[k] is not None:
            g = g + w.peephole[k] * cell
        if w.use_layer_norm:
            g = mean_stddev_normalize(g) * w.layer_norm[k] + w.bias[k]
        return g.astype(np.float32)

    i_gate = None if w.cifg else sigmoid(finish_gate(0, pre[0], c))
    f_gate = sigmoid(finish_gate(1, pre[1], c))
    g_cell = apply_activation(finish_gate(2, pre[2], None), activation)
    new_c = f_gate * c
    new_c = new_c + g_cell * ((np.float32(1) - f_gate) if w.cifg else i_gate)
    if cell_clip > 0:
        new_c = np.clip(new_c, -np.float32(cell_clip), np.float32(cell_clip))
    o_gate = sigmoid(finish_gate(3, pre[3], new_c))
    hidden = (o_gate * apply_activation(new_c, activation)).astype(np.float32)
    if w.projection_w is not None:
        out = np.zeros((b, w.n_output), np.float32) if w.projection_b is None else \
            np.broadcast_to(w.projection_b, (b, w.n_output)).astype(np.float32)
        out = (out + hidden @ w.projection_w.T).astype(np.float32)
        if proj_clip > 0:
            out = np.clip(out, -np.float32(proj_clip), np.float32(proj_clip))
    else:
        out = hidden
    gates = [g for g in (i_gate, g_cell, f_gate, o_gate) if g is not None]
    return out.astype(np.float32), new_c.astype(np.float32), np.concatenate(gates, axis=1)


def lstm_sequence(w: LstmWeights, x: np.ndarray, h: np.ndarray, c: np.ndarray, activation: int,
                  cell_clip: float, proj_clip: float, aux: np.ndarray | None = None, reverse: bool = False
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs time-major x [T, B, I] (aux [T, B, A]) from state (h, c); returns (outputs [T, B, O], h, c).
    `reverse` walks the time steps backwards (the backward direction of a bidirectional LSTM); outputs stay
    indexed by time step."""
    steps = x.shape[0]
    outs = np.empty((steps, x.shape[1], w.n_output), np.float32)
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for t in order:
        h, c, _ = lstm_step(w, x[t], h, c, activation, cell_clip, proj_clip, None if aux is None else aux[t])
        outs[t] = h
    return outs, h, c
