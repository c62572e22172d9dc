"""Recurrent, embedding and hashing models for the delegate's per-op tests (`test_delegate_recurrent_ops.py`),
built with the project's `.tflite` builder: every extent different, variable state tensors, and weights from
a generator seeded per model (`seed`), so a model is the same whatever ran before it (pytest-xdist)."""

from __future__ import annotations

import numpy as np

from harness import QuantParams, TfliteBuilder
from nnconv.tflite.options import (BidirectionalSequenceLSTMOptions,
                                   LSHProjectionOptions, LSTMOptions, RNNOptions, SVDFOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B

F32 = np.float32
SEED = 27182


class Weights:
    """Seeded weight values for one model."""

    def __init__(self, seed: int = SEED) -> None:
        self.rng = np.random.default_rng(seed)

    def __call__(self, *shape: int, scale: float = 0.4) -> np.ndarray:
        return (self.rng.standard_normal(shape) * scale).astype(F32)

    def integers(self, lo: int, hi: int, shape, dtype) -> np.ndarray:
        return self.rng.integers(lo, hi, shape).astype(dtype)

    def uniform(self, lo: float, hi: float, shape) -> np.ndarray:
        return self.rng.uniform(lo, hi, shape).astype(F32)


def w(*shape: int, scale: float = 0.4, seed: int = SEED) -> np.ndarray:
    """Seeded float32 values of `shape` (the same for the same arguments)."""
    return Weights(seed)(*shape, scale=scale)


def q8(a: np.ndarray, scale: float) -> np.ndarray:
    return np.clip(np.round(a / scale), -127, 127).astype(np.int8)


# -- LSTM (full kernel: 20 or 24 inputs) --------------------------------------------------------------------
def lstm_weights(b: TfliteBuilder, w: Weights, n_in: int, n_cell: int, n_out: int, cifg: bool = False,
                 peephole: bool = False, projection: bool = False, hybrid: str = "", prefix: str = "") -> list[int]:
    """Inputs 1..17 of TFLite's LSTM (-1 for omitted ones). `hybrid`: "int8" or "uint8" weight matrices
    (scale 0.02; uint8 holds int8 values, TFLite's legacy hybrid weights) with float biases."""
    def mat(name, *shape):
        m = w(*shape)
        if not hybrid:
            return b.const(name, m)
        v = q8(m, 0.02)
        return b.const(prefix + name, v.view(np.uint8) if hybrid == "uint8" else v, quant=QuantParams(0.02, 0))
    ids = [-1 if cifg and g == "i" else mat(f"w_x{g}", n_cell, n_in) for g in "ifco"]
    ids += [-1 if cifg and g == "i" else mat(f"w_h{g}", n_cell, n_out) for g in "ifco"]
    ids += [b.const(f"{prefix}p_{g}", w(n_cell)) if peephole and not (cifg and g == "i") else -1 for g in "ifo"]
    ids += [-1 if cifg and g == "i" else b.const(f"{prefix}b_{g}", w(n_cell, scale=0.2)) for g in "ifco"]
    ids.append(mat("proj_w", n_out, n_cell) if projection else -1)
    ids.append(b.const(prefix + "proj_b", w(n_out, scale=0.1)) if projection else -1)
    return ids


def lstm_model(batch=2, n_in=5, n_cell=4, n_out=3, cifg=False, peephole=False, projection=False,
               layer_norm=False, act=4, cell_clip=0.0, proj_clip=0.0, hybrid: str = "", seed: int = SEED) -> bytes:
    if not projection:
        n_out = n_cell
    w = Weights(seed)
    b = TfliteBuilder()
    x = b.input("x", (batch, n_in), F32)
    ws = lstm_weights(b, w, n_in, n_cell, n_out, cifg, peephole, projection, hybrid)
    h = b.tensor("h_state", (batch, n_out), F32, is_variable=True)
    c = b.tensor("c_state", (batch, n_cell), F32, is_variable=True)
    ins = [x, *ws, h, c]
    if layer_norm:
        ins += [-1 if cifg and g == "i" else b.const(f"ln_{g}", (1 + w(n_cell, scale=0.1)).astype(F32))
                for g in "ifco"]
    y = b.tensor("y", (batch, n_out), F32)
    b.op(B.LSTM, ins, [y], LSTMOptions(fused_activation_function=act, cell_clip=cell_clip, proj_clip=proj_clip),
         version=3 if hybrid else 1)
    b.output(y)
    return b.finish()


def int8_lstm_model(batch=2, n_in=5, n_cell=4, n_out=3, projection=True, cifg=False, layer_norm=True,
                    cell_clip=0.0, proj_clip=0.0, hidden_zp=0, seed: int = SEED) -> bytes:
    """TFLite's integer (8x8_16) LSTM: int8 activations and weights, int16 cell state and layer norm, five
    intermediates (gate scales in Q3.12, the hidden state's scale and zero point last)."""
    rng = np.random.default_rng(seed)
    b = TfliteBuilder()
    x = b.input("x", (batch, n_in), np.int8, quant=QuantParams(1 / 128, 0))
    n_o = n_out if projection else n_cell

    def wq(name, shape):
        return b.const(name, rng.integers(-100, 101, shape).astype(np.int8), quant=QuantParams(0.01, 0))
    ins = [x] + [-1 if cifg and g == "i" else wq(f"wx_{g}", (n_cell, n_in)) for g in "ifco"]
    ins += [-1 if cifg and g == "i" else wq(f"wh_{g}", (n_cell, n_o)) for g in "ifco"]
    ins += [-1, -1, -1]
    bias_scale = 1 / 4096 / 1024 if layer_norm else 0.01 / 128
    ins += [-1 if cifg and g == "i" else
            b.const(f"b_{g}", rng.integers(-30000, 30000, n_cell).astype(np.int32), quant=QuantParams(bias_scale, 0))
            for g in "ifco"]
    if projection:
        ins += [b.const("proj_w", rng.integers(-100, 101, (n_out, n_cell)).astype(np.int8), quant=QuantParams(0.01, 0)),
                b.const("proj_b", rng.integers(-500, 500, n_out).astype(np.int32), quant=QuantParams(0.01 / 128, 0))]
    else:
        ins += [-1, -1]
    ins += [b.tensor("h", (batch, n_o), np.int8, quant=QuantParams(1 / 128, 0), is_variable=True),
            b.tensor("c", (batch, n_cell), np.int16, quant=QuantParams(2 ** -11, 0), is_variable=True)]
    if layer_norm:
        ins += [-1 if cifg and g == "i" else
                b.const(f"ln_{g}", rng.integers(3000, 5000, n_cell).astype(np.int16), quant=QuantParams(1 / 4096, 0))
                for g in "ifco"]
    if layer_norm:
        inter = [b.tensor(f"inter_{g}", (0,), np.int16, quant=QuantParams(2 ** -12, 0)) for g in "ifco"]
    else:
        inter = [b.tensor(f"inter_{g}", (0,), F32) for g in "ifco"]
    inter.append(b.tensor("inter_hidden", (0,), np.int8, quant=QuantParams(2 ** -7, hidden_zp)))
    y = b.tensor("y", (batch, n_o), np.int8, quant=QuantParams(1 / 128, 0))
    b.op(B.LSTM, ins, [y], LSTMOptions(fused_activation_function=4, cell_clip=cell_clip, proj_clip=proj_clip),
         intermediates=inter, version=1)  # (op_version.cc: the 8x8_16 full kernel is version 1)
    b.output(y)
    return b.finish()


def basic_lstm_model(batch=2, n_in=3, n_out=4, weights_dtype=np.uint8, x_quant=(1 / 128, 128),
                     cell_quant=(2 ** -11, 0), seed: int = SEED) -> tuple[bytes, np.ndarray, np.ndarray]:
    """TFLite's basic (5-input, uint8) LSTM kernel: inputs x, previous activation, concatenated weights
    [4 * n_out, n_in + n_out] (gate order input, cell, forget, output; recurrent columns first), biases,
    previous cell state; outputs activation, cell state, concat and activation temporaries."""
    rng = np.random.default_rng(seed)
    b = TfliteBuilder()
    x = b.input("x", (batch, n_in), np.uint8, quant=QuantParams(*x_quant))
    h = b.tensor("h", (batch, n_out), np.uint8, quant=QuantParams(1 / 128, 128), is_variable=True)
    weights = rng.integers(0, 256, (4 * n_out, n_in + n_out)).astype(weights_dtype)
    wt = b.const("w", weights, quant=QuantParams(0.004, 100))
    biases = rng.integers(-3000, 3000, 4 * n_out).astype(np.int32)
    bt = b.const("b", biases, quant=QuantParams(0.004 / 128, 0))
    c = b.tensor("c", (batch, n_out), np.int16, quant=QuantParams(2 ** -11, 0), is_variable=True)
    outs = [b.tensor("y", (batch, n_out), np.uint8, quant=QuantParams(1 / 128, 128)),
            b.tensor("c_out", (batch, n_out), np.int16, quant=QuantParams(*cell_quant)),
            b.tensor("concat", (batch, n_in + n_out), np.uint8, quant=QuantParams(1 / 128, 128)),
            b.tensor("activ", (batch, 4 * n_out), np.int16, quant=QuantParams(2 ** -12, 0))]
    b.op(B.LSTM, [x, h, wt, bt, c], outs, LSTMOptions(fused_activation_function=4, kernel_type=1), version=2)
    b.output(outs[0], outs[1])
    return b.finish(), weights, biases


# -- RNN, SVDF, BIDIRECTIONAL_SEQUENCE_LSTM -----------------------------------------------------------------
def rnn_model(batch=2, n_in=5, units=4, act=1, weights=F32, seed: int = SEED) -> bytes:
    w = Weights(seed)
    b = TfliteBuilder()
    x = b.input("x", (batch, n_in), F32)
    wt = b.const("w", w(units, n_in)) if weights == F32 else \
        b.const("w", q8(w(units, n_in), 0.02), quant=QuantParams(0.02, 0))
    ins = [x, wt, b.const("r", w(units, units)), b.const("b", w(units, scale=0.1)),
           b.tensor("h", (batch, units), F32, is_variable=True)]
    y = b.tensor("y", (batch, units), F32)
    b.op(B.RNN, ins, [y], RNNOptions(fused_activation_function=act), version=1 if weights == F32 else 2)
    b.output(y)
    return b.finish()


def svdf_model(batch=2, n_in=5, units=3, rank=2, memory=4, bias=True, act=0, weights=F32, seed: int = SEED) -> bytes:
    w = Weights(seed)
    b = TfliteBuilder()
    x = b.input("x", (batch, n_in), F32)
    filters = units * rank
    wf = b.const("wf", w(filters, n_in)) if weights == F32 else \
        b.const("wf", q8(w(filters, n_in), 0.02), quant=QuantParams(0.02, 0))
    ins = [x, wf, b.const("wt", w(filters, memory)), b.const("bias", w(units, scale=0.1)) if bias else -1,
           b.tensor("state", (batch, memory * filters), F32, is_variable=True)]
    y = b.tensor("y", (batch, units), F32)
    b.op(B.SVDF, ins, [y], SVDFOptions(rank=rank, fused_activation_function=act), version=1 if weights == F32 else 2)
    b.output(y)
    return b.finish()


def bidi_lstm_model(batch=2, steps=3, n_in=4, n_cell=3, merge=False, time_major=True, hybrid: str = "",
                    seed: int = SEED) -> bytes:
    """TFLite's 48-input BIDIRECTIONAL_SEQUENCE_LSTM: forward weights (no CIFG), backward weights (CIFG with
    peepholes), four variable states, no aux input (9 omitted slots)."""
    w = Weights(seed)
    b = TfliteBuilder()
    shape = (steps, batch, n_in) if time_major else (batch, steps, n_in)
    x = b.input("x", shape, F32)
    fw = lstm_weights(b, w, n_in, n_cell, n_cell, hybrid=hybrid, prefix="fw_")
    bw = lstm_weights(b, w, n_in, n_cell, n_cell, cifg=True, peephole=True, hybrid=hybrid, prefix="bw_")
    states = [b.tensor(n, (batch, n_cell), F32, is_variable=True) for n in ("fw_h", "fw_c", "bw_h", "bw_c")]
    ins = [x, *fw, *bw, *states] + [-1] * 9
    outs = [b.tensor("y_fw", shape[:2] + (2 * n_cell if merge else n_cell,), F32)]
    if not merge:
        outs.append(b.tensor("y_bw", shape[:2] + (n_cell,), F32))
    b.op(B.BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs,
         BidirectionalSequenceLSTMOptions(fused_activation_function=4, cell_clip=0.75, proj_clip=0.0,
                                          merge_outputs=merge, time_major=time_major))
    b.output(*outs)
    return b.finish()


# -- LSH_PROJECTION -----------------------------------------------------------------------------------------
def lsh_model(kind: int, weight: bool = True, in_dtype=np.int32, seed: int = SEED) -> bytes:
    """kind 1 SPARSE, 2 DENSE; TFLite's kernel takes exactly 2 inputs when there is no weight."""
    rng = np.random.default_rng(seed)
    b = TfliteBuilder()
    ins = [b.const("hash", rng.uniform(-1, 1, (4, 3)).astype(F32)), b.input("x", (5, 2), in_dtype)]
    if weight:
        ins.append(b.const("weight", rng.uniform(0.1, 1, 5).astype(F32)))
    y = b.tensor("y", (4,) if kind == 1 else (12,), np.int32)
    b.op(B.LSH_PROJECTION, ins, [y], LSHProjectionOptions(type=kind))
    b.output(y)
    return b.finish()
