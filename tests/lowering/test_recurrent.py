"""Recurrent / sequence ops: parity with TFLite (variable state tensors start at zero) and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder, assert_bit_exact, assert_parity, assert_refused, nnconv_options
from nnconv.lowering.diagnostics import Code
from nnconv.parity import random_inputs
from nnconv.tflite.options import (BidirectionalSequenceLSTMOptions, BidirectionalSequenceRNNOptions,
                                   LSHProjectionOptions, LSTMOptions, RNNOptions, SequenceRNNOptions,
                                   SVDFOptions, UnidirectionalSequenceLSTMOptions)
from nnconv.tflite.schema_enums import BuiltinOperator

RNG = np.random.default_rng(11)
F32 = np.float32


def w(*shape: int, scale: float = 0.4) -> np.ndarray:
    return (RNG.standard_normal(shape) * scale).astype(F32)


def lstm_weights(b: TfliteBuilder, prefix: str, n_in: int, n_cell: int, n_out: int, cifg: bool = False,
                 peephole: bool = False, projection: bool = False, proj_bias: bool = False) -> list[int]:
    """The 17 weight slots of a TFLite LSTM cell (-1 for omitted ones)."""
    gates = ("i", "f", "c", "o")
    ids = []
    for g in gates:
        ids.append(-1 if cifg and g == "i" else b.const(f"{prefix}w_x{g}", w(n_cell, n_in)))
    for g in gates:
        ids.append(-1 if cifg and g == "i" else b.const(f"{prefix}w_h{g}", w(n_cell, n_out)))
    for g in ("i", "f", "o"):
        ids.append(b.const(f"{prefix}p_{g}", w(n_cell)) if peephole and not (cifg and g == "i") else -1)
    for g in gates:
        ids.append(-1 if cifg and g == "i" else b.const(f"{prefix}b_{g}", w(n_cell, scale=0.2)))
    ids.append(b.const(f"{prefix}proj_w", w(n_out, n_cell)) if projection else -1)
    ids.append(b.const(f"{prefix}proj_b", w(n_out, scale=0.1)) if projection and proj_bias else -1)
    return ids


def lstm_model(batch=2, n_in=5, n_cell=4, n_out=4, cifg=False, peephole=False, projection=False,
               layer_norm=False, act=4, cell_clip=0.0, proj_clip=0.0) -> bytes:
    if not projection:
        n_out = n_cell
    b = TfliteBuilder()
    x = b.input("x", (batch, n_in), F32)
    ws = lstm_weights(b, "", n_in, n_cell, n_out, cifg, peephole, projection, proj_bias=projection)
    h = b.tensor("h_state", (batch, n_out), F32, is_variable=True)
    cst = b.tensor("c_state", (batch, n_cell), F32, is_variable=True)
    ins = [x, *ws, h, cst]
    if layer_norm:
        ins += [-1 if cifg and g == "i" else b.const(f"ln_{g}", (1 + w(n_cell, scale=0.1)).astype(F32))
                for g in ("i", "f", "c", "o")]
    y = b.tensor("y", (batch, n_out), F32)
    b.op(BuiltinOperator.LSTM, ins, [y], LSTMOptions(fused_activation_function=act, cell_clip=cell_clip,
                                                     proj_clip=proj_clip), version=1)
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("kw", [
    pytest.param({}, id="basic"),
    pytest.param({"cifg": True, "peephole": True}, id="cifg-peephole"),
    pytest.param({"peephole": True, "projection": True, "n_out": 3, "proj_clip": 0.3}, id="peephole-proj-clip"),
    pytest.param({"cell_clip": 0.5, "act": 1}, id="cellclip-relu"),
])
def test_lstm_parity(kw):
    m = lstm_model(**kw)
    assert_parity(m, api_level=28, expect_ops=["LSTM"])
    assert_parity(m, api_level=30, expect_ops=["LSTM"])


def test_lstm_layer_norm_needs_api29():
    m = lstm_model(layer_norm=True, peephole=True, batch=3, n_in=6, n_cell=5)
    assert_parity(m, api_level=29, expect_ops=["LSTM"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_lstm_layer_norm_cifg_parity():
    assert_parity(lstm_model(layer_norm=True, cifg=True, projection=True, n_out=3), api_level=29)


def test_lstm_refused_at_27():
    assert_refused(lstm_model(), 27, Code.API_LEVEL, min_api_level=28)


@pytest.mark.parametrize("act", [5, 6], ids=["sign-bit", "sigmoid"])
def test_lstm_activation_refused(act):
    assert_refused(lstm_model(act=act), 30, Code.OPTION)


@pytest.mark.parametrize("act", [2, 3], ids=["relu1", "relu6"])
def test_lstm_other_activations_parity(act):
    assert_parity(lstm_model(act=act), api_level=30)


@pytest.mark.parametrize("clip", [{"cell_clip": -1.0}, {"proj_clip": -0.5, "projection": True, "n_out": 3}],
                         ids=["cell", "proj"])
def test_lstm_negative_clip_refused(clip):
    # NNAPI rejects a negative clip operand (TFLite's kernel too, at prepare time).
    assert_refused(lstm_model(**clip), 30, Code.OPTION)


def seq_lstm_model(batch=2, steps=3, n_in=5, n_cell=4, n_out=4, time_major=False, cifg=False, peephole=False,
                   projection=False, layer_norm=False, act=4, cell_clip=0.0, diagonal=False, out_shape=None) -> bytes:
    if not projection:
        n_out = n_cell
    b = TfliteBuilder()
    shape = (steps, batch, n_in) if time_major else (batch, steps, n_in)
    x = b.input("x", shape, F32)
    ws = lstm_weights(b, "", n_in, n_cell, n_out, cifg, peephole, projection)
    h = b.tensor("h_state", (batch, n_out), F32, is_variable=True)
    cst = b.tensor("c_state", (batch, n_cell), F32, is_variable=True)
    ins = [x, *ws, h, cst]
    if layer_norm:
        ins += [-1 if cifg and g == "i" else b.const(f"ln_{g}", (1 + w(n_cell, scale=0.1)).astype(F32))
                for g in ("i", "f", "c", "o")]
    y = b.tensor("y", (shape[0], shape[1], n_out) if out_shape is None else out_shape, F32)
    b.op(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [y],
         UnidirectionalSequenceLSTMOptions(fused_activation_function=act, cell_clip=cell_clip,
                                           time_major=time_major, diagonal_recurrent_tensors=diagonal))
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("kw", [
    pytest.param({}, id="batch-major"),
    pytest.param({"time_major": True, "steps": 4}, id="time-major"),
    pytest.param({"cifg": True, "peephole": True, "projection": True, "n_out": 3}, id="cifg-peephole-proj"),
    pytest.param({"layer_norm": True, "peephole": True, "cell_clip": 0.8}, id="layer-norm"),
])
def test_unidirectional_sequence_lstm_parity(kw):
    assert_parity(seq_lstm_model(**kw), api_level=29, expect_ops=["UNIDIRECTIONAL_SEQUENCE_LSTM"])


@pytest.mark.parametrize("kw", [
    pytest.param({}, id="batch-major"),
    pytest.param({"time_major": True, "steps": 4}, id="time-major"),
    pytest.param({"cifg": True, "peephole": True, "projection": True, "n_out": 3, "cell_clip": 0.6},
                 id="cifg-peephole-proj"),
    pytest.param({"steps": 1}, id="one-step"),
])
def test_unidirectional_sequence_lstm_unrolled_at_api28(kw):
    m = seq_lstm_model(**kw)
    steps = kw.get("steps", 3)
    ops = ["STRIDED_SLICE"] * steps + ["LSTM"] * steps + (["CONCATENATION"] if steps > 1 else []) + ["RESHAPE"]
    assert_parity(m, api_level=28, expect_ops=ops)


def test_unidirectional_sequence_lstm_diagonal_recurrent_weights_refused():
    assert_refused(seq_lstm_model(diagonal=True), 29, Code.OPTION)


def test_unidirectional_sequence_lstm_negative_cell_clip_refused():
    assert_refused(seq_lstm_model(cell_clip=-1.0), 29, Code.OPTION)


def test_unidirectional_sequence_lstm_refusals_below_29():
    assert_refused(seq_lstm_model(), 27, Code.API_LEVEL, min_api_level=28)
    assert_refused(seq_lstm_model(layer_norm=True), 28, Code.API_LEVEL, min_api_level=29)


def bidi_lstm_model(batch=2, steps=3, n_in=4, n_cell=3, merge=False, time_major=True, aux: str | bool = False,
                    bw_cell_shape: tuple | None = None) -> bytes:
    b = TfliteBuilder()
    shape = (steps, batch, n_in) if time_major else (batch, steps, n_in)
    x = b.input("x", shape, F32)
    fw = lstm_weights(b, "fw_", n_in, n_cell, n_cell)
    bw = lstm_weights(b, "bw_", n_in, n_cell, n_cell, cifg=True, peephole=True)
    states = [b.tensor(n, bw_cell_shape if n == "bw_c" and bw_cell_shape else (batch, n_cell), F32, is_variable=True)
              for n in ("fw_h", "fw_c", "bw_h", "bw_c")]
    ins = [x, *fw, *bw, *states]
    if aux is True:
        n_aux = 2
        ins.append(b.input("aux", shape[:2] + (n_aux,), F32))
        ins += [b.const(f"fw_aux_{g}", w(n_cell, n_aux)) for g in "ifco"]
        ins += [-1] + [b.const(f"bw_aux_{g}", w(n_cell, n_aux)) for g in "fco"]
    elif aux == "parallel":  # the backward cell reads the aux input, which TFLite needs as wide as the input
        ins.append(b.input("aux", shape, F32))
        ins += [-1] * 8
    else:
        ins += [-1] * 9
    outs = [b.tensor("y_fw", shape[:2] + (2 * n_cell if merge else n_cell,), F32)]
    if not merge:
        outs.append(b.tensor("y_bw", shape[:2] + (n_cell,), F32))
    b.op(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_LSTM, ins, outs,
         BidirectionalSequenceLSTMOptions(fused_activation_function=4, merge_outputs=merge, time_major=time_major))
    b.output(*outs)
    return b.finish()


@pytest.mark.parametrize("kw", [
    pytest.param({}, id="time-major"),
    pytest.param({"time_major": False}, id="batch-major"),
    pytest.param({"merge": True}, id="merged-time-major"),
    pytest.param({"aux": True}, id="aux-input-cross-linking"),
    pytest.param({"aux": "parallel"}, id="aux-input-parallel-linking"),
    pytest.param({"aux": "parallel", "time_major": False}, id="aux-input-parallel-batch-major"),
])
def test_bidirectional_sequence_lstm_parity(kw):
    m = bidi_lstm_model(**kw)
    assert_parity(m, api_level=29, expect_ops=["BIDIRECTIONAL_SEQUENCE_LSTM"])
    result = assert_parity(m, api_level=28)  # unrolled into single-step LSTMs
    ops = [op.type.name for op in result.converted.model.main.operations]
    assert ops.count("LSTM") == 2 * 3 and "BIDIRECTIONAL_SEQUENCE_LSTM" not in ops


def test_bidirectional_sequence_lstm_merged_batch_major_refused():
    assert_refused(bidi_lstm_model(merge=True, time_major=False), 30, Code.OPTION)


@pytest.mark.parametrize("bw_cell_shape", [(3,), (2, 4), (5, 3)], ids=["rank1", "cells", "batch"])
def test_bidirectional_sequence_lstm_state_shapes_are_validated(bw_cell_shape):
    """The backward cell state must be [n_batch, n_cell] like the forward one: the reader refuses (exit 2)
    what TFLite's kernel refuses, before the unrolled lowering reads its extents."""
    from nnconv.errors import ModelFormatError
    from nnconv.tflite.reader import read_model
    with pytest.raises(ModelFormatError, match="input 38 'bw_c'"):
        read_model(bidi_lstm_model(bw_cell_shape=bw_cell_shape))


def test_bidirectional_sequence_lstm_needs_api28():
    assert_refused(bidi_lstm_model(), 27, Code.API_LEVEL, min_api_level=28)


def rnn_model(op, batch=2, steps=3, n_in=5, units=4, act=1, time_major=False, out_shape=None) -> bytes:
    """`out_shape` declares the output with another shape (TensorFlow leaves some undeclared, `()`)."""
    b = TfliteBuilder()
    seq = op != BuiltinOperator.RNN
    shape = ((steps, batch, n_in) if time_major else (batch, steps, n_in)) if seq else (batch, n_in)
    x = b.input("x", shape, F32)
    ins = [x, b.const("w", w(units, n_in)), b.const("r", w(units, units)), b.const("b", w(units, scale=0.1)),
           b.tensor("h", (batch, units), F32, is_variable=True)]
    y = b.tensor("y", shape[:-1] + (units,) if out_shape is None else out_shape, F32)
    opts = SequenceRNNOptions(time_major=time_major, fused_activation_function=act) if seq else \
        RNNOptions(fused_activation_function=act)
    b.op(op, ins, [y], opts)
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("act", [1, 4, 6], ids=["relu", "tanh", "sigmoid"])
def test_rnn_parity(act):
    m = rnn_model(BuiltinOperator.RNN, act=act)
    assert_parity(m, api_level=27, expect_ops=["RNN"])


@pytest.mark.parametrize("time_major", [False, True], ids=["batch-major", "time-major"])
def test_unidirectional_sequence_rnn_parity(time_major):
    m = rnn_model(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, time_major=time_major, act=4)
    assert_parity(m, api_level=29, expect_ops=["UNIDIRECTIONAL_SEQUENCE_RNN"])
    # Below API 29 the sequence is unrolled into one RNN per step.
    assert_parity(m, api_level=28, expect_ops=["STRIDED_SLICE"] * 3 + ["RNN"] * 3 + ["CONCATENATION", "RESHAPE"])
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)


@pytest.mark.parametrize("time_major", [False, True], ids=["batch-major", "time-major"])
def test_sequence_output_shape_as_tflite_computes_it(time_major):
    """TensorFlow's converter leaves a sequence op's output shape undeclared (`[]`, from an OpHint stub);
    TFLite's kernel resizes it at Prepare and so does the output-shapes rewrite (nnconv/rewrite/
    output_shapes.py): the model lowers, matches TFLite and the report names the rewrite."""
    from nnconv.pipeline import check_model
    rnn = rnn_model(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_RNN, time_major=time_major, act=4, steps=6,
                    out_shape=())
    lstm = seq_lstm_model(time_major=time_major, out_shape=(), projection=True, n_out=3)
    for m, api in ((rnn, 28), (rnn, 29), (lstm, 29), (lstm, 30)):
        assert_parity(m, api_level=api)
        notes = [n for r in check_model(m, api, options=nnconv_options()).ops for n in r.notes]
        assert any("output-shapes" in n for n in notes), notes


def bidi_rnn_model(batch=2, steps=4, n_in=3, units=5, merge=False, time_major=False, aux: str = "") -> bytes:
    """aux: "" none, "cross" aux input + constant aux weights ("cross-variable": aux weights as model
    inputs), "parallel" aux input read by the backward cell."""
    b = TfliteBuilder()
    shape = (steps, batch, n_in) if time_major else (batch, steps, n_in)
    x = b.input("x", shape, F32)
    ins = [x]
    for d in ("fw", "bw"):
        ins += [b.const(f"{d}_w", w(units, n_in)), b.const(f"{d}_r", w(units, units)),
                b.const(f"{d}_b", w(units, scale=0.1)), b.tensor(f"{d}_h", (batch, units), F32, is_variable=True)]
    if aux == "cross":
        ins += [b.input("aux", shape[:2] + (2,), F32), b.const("fw_aux_w", w(units, 2)),
                b.const("bw_aux_w", w(units, 2))]
    elif aux == "cross-variable":  # aux weights fed as model inputs
        ins += [b.input("aux", shape[:2] + (2,), F32), b.input("fw_aux_w", (units, 2), F32),
                b.input("bw_aux_w", (units, 2), F32)]
    elif aux == "parallel":  # TFLite needs the aux input as wide as the input here
        ins += [b.input("aux", shape, F32), -1, -1]
    else:
        ins += [-1, -1, -1]
    outs = [b.tensor("y_fw", shape[:2] + (2 * units if merge else units,), F32)]
    if not merge:
        outs.append(b.tensor("y_bw", shape[:2] + (units,), F32))
    b.op(BuiltinOperator.BIDIRECTIONAL_SEQUENCE_RNN, ins, outs,
         BidirectionalSequenceRNNOptions(time_major=time_major, fused_activation_function=4, merge_outputs=merge))
    b.output(*outs)
    return b.finish()


@pytest.mark.parametrize("kw", [pytest.param({}, id="batch-major"),
                                pytest.param({"merge": True, "time_major": True}, id="merged-time-major"),
                                pytest.param({"merge": True}, id="merged-batch-major"),
                                pytest.param({"aux": "cross"}, id="aux-cross-linking"),
                                pytest.param({"aux": "parallel", "time_major": True}, id="aux-parallel-time-major")])
def test_bidirectional_sequence_rnn_parity(kw):
    m = bidi_rnn_model(**kw)
    assert_parity(m, api_level=29, expect_ops=["BIDIRECTIONAL_SEQUENCE_RNN"])
    result = assert_parity(m, api_level=28)  # unrolled into single-step RNNs
    ops = [op.type.name for op in result.converted.model.main.operations]
    assert ops.count("RNN") == 2 * 4 and "BIDIRECTIONAL_SEQUENCE_RNN" not in ops
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)


def test_bidirectional_sequence_rnn_cross_linking_with_variable_aux_weights_needs_api29():
    m = bidi_rnn_model(aux="cross-variable")
    assert_parity(m, api_level=29, expect_ops=["BIDIRECTIONAL_SEQUENCE_RNN"])
    assert_refused(m, 28, Code.NON_CONSTANT, min_api_level=29)


def test_bidirectional_sequence_rnn_parallel_aux_batch_major_refused():
    assert_refused(bidi_rnn_model(aux="parallel"), 30, Code.OPTION)


def svdf_model(batch=2, n_in=5, units=3, rank=2, memory=4, bias=True, act=0) -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (batch, n_in), F32)
    filters = units * rank
    ins = [x, b.const("wf", w(filters, n_in)), b.const("wt", w(filters, memory)),
           b.const("bias", w(units, scale=0.1)) if bias else -1,
           b.tensor("state", (batch, memory * filters), F32, is_variable=True)]
    y = b.tensor("y", (batch, units), F32)
    b.op(BuiltinOperator.SVDF, ins, [y], SVDFOptions(rank=rank, fused_activation_function=act))
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("kw", [pytest.param({}, id="bias"), pytest.param({"bias": False, "act": 1}, id="nobias-relu"),
                                pytest.param({"rank": 1, "units": 4}, id="rank1"),
                                pytest.param({"act": 6}, id="sigmoid-is-none-in-tflite")])
def test_svdf_parity(kw):
    m = svdf_model(**kw)
    assert_parity(m, api_level=28, expect_ops=["SVDF"])
    assert_refused(m, 27, Code.API_LEVEL, min_api_level=28)


def lsh_model(kind: int, weight: bool = True, in_dtype=np.int32) -> bytes:
    b = TfliteBuilder()
    hashes = RNG.uniform(-1, 1, (4, 3)).astype(F32)
    ins = [b.const("hash", hashes), b.input("x", (5, 2), in_dtype)]
    if weight:  # TFLite's kernel takes exactly 2 inputs when there is no weight
        ins.append(b.const("weight", RNG.uniform(0.1, 1, 5).astype(F32)))
    y = b.tensor("y", (4,) if kind == 1 else (12,), np.int32)
    b.op(BuiltinOperator.LSH_PROJECTION, ins, [y], LSHProjectionOptions(type=kind))
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("dtype", [np.int32, F32, np.uint8], ids=["int32", "float32", "uint8"])
def test_lsh_projection_dense_parity(dtype):
    assert_parity(lsh_model(2, in_dtype=dtype), api_level=27, expect_ops=["LSH_PROJECTION"])


def test_lsh_projection_int8_input_needs_api30():
    m = lsh_model(2, in_dtype=np.int8)
    assert_parity(m, api_level=30, expect_ops=["LSH_PROJECTION"])
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


def test_lsh_projection_sparse_needs_api29():
    m = lsh_model(1, weight=False)
    assert_parity(m, api_level=29, expect_ops=["LSH_PROJECTION"])
    assert_refused(m, 28, Code.API_LEVEL, min_api_level=29)


def test_lsh_projection_sparse_with_weight_refused():
    assert_refused(lsh_model(1, weight=True), 30, Code.OPERAND_VALUE)


def test_lsh_projection_dense_without_weight_refused():
    assert_refused(lsh_model(2, weight=False), 30, Code.MISSING_OPERAND)


def test_rnn_hybrid_weights_refused():
    b = TfliteBuilder()
    x = b.input("x", (2, 5), F32)
    wq = b.const("w", RNG.integers(-127, 128, (4, 5)).astype(np.int8), quant=QuantParams(0.02, 0))
    ins = [x, wq, b.const("r", w(4, 4)), b.const("b", w(4)), b.tensor("h", (2, 4), F32, is_variable=True)]
    y = b.tensor("y", (2, 4), F32)
    b.op(BuiltinOperator.RNN, ins, [y], RNNOptions(fused_activation_function=1))
    b.output(y)
    assert_refused(b.finish(), 30, Code.DTYPE)


def int8_gate_inputs(b: TfliteBuilder, n_in: int, n_cell: int, n_o: int, cifg: bool, peephole: bool,
                     layer_norm: bool, bias_range: int | None, x_scale: float = 1 / 128) -> list[int]:
    """Inputs 1..15 of TFLite's integer LSTM: int8 weights (scale 0.01), int16 peepholes, int32 gate biases.
    With layer norm the biases are in units of ln_scale / 1024 (they act after the normalization); without,
    in units of the input-to-gate product (weight scale * input scale), as the converter writes them."""
    def wq(name, shape):
        return b.const(name, RNG.integers(-100, 101, shape).astype(np.int8), quant=QuantParams(0.01, 0))
    ins = [-1 if cifg and g == "i" else wq(f"wx_{g}", (n_cell, n_in)) for g in "ifco"]
    ins += [-1 if cifg and g == "i" else wq(f"wh_{g}", (n_cell, n_o)) for g in "ifco"]
    if peephole:
        ins += [-1 if cifg and g == "i" else
                b.const(f"p_{g}", RNG.integers(-3000, 3000, n_cell).astype(np.int16), quant=QuantParams(2 ** -12, 0))
                for g in "ifo"]
    else:
        ins += [-1, -1, -1]
    bias_scale = 1 / 4096 / 1024 if layer_norm else 0.01 * x_scale
    top = bias_range if bias_range is not None else (1_000_000 if layer_norm else 30_000)
    ins += [-1 if cifg and g == "i" else
            b.const(f"b_{g}", RNG.integers(-top, top, n_cell).astype(np.int32), quant=QuantParams(bias_scale, 0))
            for g in "ifco"]
    return ins


def int8_projection_and_state(b: TfliteBuilder, batch: int, n_cell: int, n_out: int, projection: bool,
                              cell_scale: float) -> list[int]:
    """Inputs 16..19: the projection (int8 weights, int32 bias) or two omitted slots, then the output state
    (int8, [batch, n_out], or n_cell without projection) and the int16 cell state, both variables."""
    ins = [-1, -1]
    if projection:
        ins = [b.const("proj_w", RNG.integers(-100, 101, (n_out, n_cell)).astype(np.int8), quant=QuantParams(0.01, 0)),
               b.const("proj_b", RNG.integers(-500, 500, n_out).astype(np.int32), quant=QuantParams(0.01 / 128, 0))]
    n_o = n_out if projection else n_cell
    return ins + [b.tensor("h", (batch, n_o), np.int8, quant=QuantParams(1 / 128, 0), is_variable=True),
                  b.tensor("c", (batch, n_cell), np.int16, quant=QuantParams(cell_scale, 0), is_variable=True)]


def int8_intermediates(b: TfliteBuilder, layer_norm: bool, hidden_zp: int, count: int = 5) -> list[int]:
    """The converter's intermediates: four gate scales (Q3.12 with layer norm; unquantized float32 without,
    where TFLite ignores them) and the hidden state's."""
    if layer_norm:
        inter = [b.tensor(f"inter_{g}", (0,), np.int16, quant=QuantParams(2 ** -12, 0)) for g in "ifco"]
    else:
        inter = [b.tensor(f"inter_{g}", (0,), F32) for g in "ifco"]
    inter.append(b.tensor("inter_hidden", (0,), np.int8, quant=QuantParams(2 ** -7, hidden_zp)))
    inter += [b.tensor(f"inter_extra{k}", (0,), np.int16, quant=QuantParams(2 ** -12, 0)) for k in range(count - 5)]
    return inter


def int8_lstm_model(batch=2, n_in=5, n_cell=4, n_out=3, projection=True, cifg=False, x_zp=0,
                    layer_norm=True, cell_clip=0.0, hidden_zp=0, peephole=False, bias_range=None,
                    out_quant=(1 / 128, 0), intermediates=5, cell_scale=2 ** -11) -> bytes:
    """TFLite's integer (8x8_16) LSTM: int8 activations and weights, int16 cell state / layer norm, five
    intermediates. Scales follow the kernel's fixed-point formats: gates in Q3.12, cell state in Q4.11.
    `out_quant`: the output's (scale, zero point), which the converter may make differ from the state's."""
    b = TfliteBuilder()
    x = b.input("x", (batch, n_in), np.int8, quant=QuantParams(1 / 128, x_zp))
    n_o = n_out if projection else n_cell
    ins = [x] + int8_gate_inputs(b, n_in, n_cell, n_o, cifg, peephole, layer_norm, bias_range)
    ins += int8_projection_and_state(b, batch, n_cell, n_out, projection, cell_scale)
    if layer_norm:
        ins += [-1 if cifg and g == "i" else
                b.const(f"ln_{g}", RNG.integers(3000, 5000, n_cell).astype(np.int16), quant=QuantParams(1 / 4096, 0))
                for g in "ifco"]
    y = b.tensor("y", (batch, n_o), np.int8, quant=QuantParams(*out_quant))
    b.op(BuiltinOperator.LSTM, ins, [y], LSTMOptions(fused_activation_function=4, cell_clip=cell_clip),
         intermediates=int8_intermediates(b, layer_norm, hidden_zp, intermediates), version=4)
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("kw", [
    pytest.param({}, id="projection"),
    pytest.param({"x_zp": 5, "batch": 3}, id="input-zero-point"),
    pytest.param({"cifg": True}, id="cifg"),
    pytest.param({"cell_clip": 0.25}, id="cell-clip"),
    pytest.param({"hidden_zp": 3}, id="hidden-zero-point"),
    pytest.param({"projection": False}, id="no-projection"),
    pytest.param({"projection": False, "hidden_zp": -7}, id="no-projection-hidden-zero-point"),
    pytest.param({"peephole": True, "cell_clip": 0.5}, id="peephole-projection"),
    pytest.param({"peephole": True, "cifg": True, "projection": False}, id="peephole-cifg"),
    pytest.param({"projection": False, "out_quant": (0.01, -3)}, id="output-quantized-apart"),
])
def test_int8_lstm_parity(kw):
    m = int8_lstm_model(**kw)
    ops = ["QUANTIZED_LSTM"] + (["CAST"] if "out_quant" in kw else [])
    assert_parity(m, api_level=30, expect_ops=ops)


@pytest.mark.parametrize("kw", [
    pytest.param({}, id="projection"),
    pytest.param({"projection": False, "hidden_zp": -7, "x_zp": -25}, id="keras"),  # as tf_keras LSTM converts
    pytest.param({"x_zp": 127, "cifg": True, "peephole": True}, id="cifg-peephole-top-zero-point"),
    pytest.param({"x_zp": -128, "bias_range": 2_000_000, "batch": 1}, id="wide-bias"),
    pytest.param({"bias_range": 1, "projection": False}, id="zero-bias"),  # integers(-1, 1): some zeros
    # below 2^-15 (a small calibrated cell range) both kernels skip tanh(cell) and use the input gate
    pytest.param({"cell_scale": 2 ** -16, "projection": False}, id="cell-scale-2^-16"),
    pytest.param({"cell_scale": 2 ** -15}, id="cell-scale-2^-15"),
])
def test_int8_lstm_without_layer_norm_bit_exact(kw):
    """TFLite's 8x8_16 kernel without layer norm adds the gate biases before rescaling, which QUANTIZED_LSTM
    cannot: they ride on constant input columns (int8_lstm_bias), and the result is TFLite's bit for bit."""
    m = int8_lstm_model(layer_norm=False, **kw)
    converted = assert_parity(m, api_level=30, expect_ops=["CONCATENATION", "QUANTIZED_LSTM"]).converted
    for seed in range(3):
        assert_bit_exact(m, 30, random_inputs(converted.inputs, seed))


def test_int8_lstm_needs_api30():
    assert_refused(int8_lstm_model(), 29, Code.API_LEVEL, min_api_level=30)


def test_int8_lstm_without_projection_with_hidden_zero_point_minus_128_refused():
    assert_refused(int8_lstm_model(projection=False, hidden_zp=-128), 30, Code.QUANTIZATION)


def test_int8_cifg_lstm_with_cell_scale_below_2_to_the_minus_15_refused():
    assert_refused(int8_lstm_model(cifg=True, cell_scale=2 ** -16), 30, Code.QUANTIZATION)


def test_int8_lstm_8x8_8_kernel_refused():
    assert_refused(int8_lstm_model(layer_norm=False, intermediates=12), 30, Code.OPTION)


def test_int8_lstm_bias_beyond_the_input_columns_refused():
    assert_refused(int8_lstm_model(layer_norm=False, bias_range=2 ** 31 - 1), 30, Code.OPERAND_VALUE)


def test_basic_uint8_lstm_kernel_refused():
    b = TfliteBuilder()
    batch, n_in, n_out = 2, 3, 4
    x = b.input("x", (batch, n_in), np.uint8, quant=QuantParams(1 / 128, 128))
    h = b.tensor("h", (batch, n_out), np.uint8, quant=QuantParams(1 / 128, 128), is_variable=True)
    wt = b.const("w", RNG.integers(0, 256, (4 * n_out, n_in + n_out)).astype(np.uint8), quant=QuantParams(0.004, 100))
    bt = b.const("b", RNG.integers(-3000, 3000, 4 * n_out).astype(np.int32), quant=QuantParams(0.004 / 128, 0))
    c = b.tensor("c", (batch, n_out), np.int16, quant=QuantParams(2 ** -11, 0), is_variable=True)
    outs = [b.tensor("y", (batch, n_out), np.uint8, quant=QuantParams(1 / 128, 128)),
            b.tensor("c_out", (batch, n_out), np.int16, quant=QuantParams(2 ** -11, 0)),
            b.tensor("concat", (batch, n_in + n_out), np.uint8, quant=QuantParams(1 / 128, 128)),
            b.tensor("activ", (batch, 4 * n_out), np.int16, quant=QuantParams(2 ** -12, 0))]
    b.op(BuiltinOperator.LSTM, [x, h, wt, bt, c], outs, LSTMOptions(fused_activation_function=4, kernel_type=1),
         version=2)
    b.output(outs[0])
    assert_refused(b.finish(), 30, Code.OPTION)


def test_state_variable_shared_by_two_ops_refused():
    b = TfliteBuilder()
    x = b.input("x", (2, 5), F32)
    h = b.tensor("h", (2, 4), F32, is_variable=True)
    y1, y2 = b.tensor("y1", (2, 4), F32), b.tensor("y2", (2, 4), F32)
    for y in (y1, y2):
        b.op(BuiltinOperator.RNN, [x, b.const(f"w_{y}", w(4, 5)), b.const(f"r_{y}", w(4, 4)),
                                   b.const(f"b_{y}", w(4)), h], [y], RNNOptions(fused_activation_function=1))
    b.output(y1, y2)
    assert_refused(b.finish(), 30, Code.OPTION)


def int8_seq_lstm_model(batch=2, steps=3, n_in=5, n_cell=4, n_out=3, time_major=False, layer_norm=True,
                        projection=True, hidden_zp=0, x_zp=0, out_quant=(1 / 128, 0)) -> bytes:
    """TFLite's integer (8x8_16) UNIDIRECTIONAL_SEQUENCE_LSTM, quantized as `int8_lstm_model`."""
    b = TfliteBuilder()
    shape = (steps, batch, n_in) if time_major else (batch, steps, n_in)
    x = b.input("x", shape, np.int8, quant=QuantParams(1 / 128, x_zp))
    n_o = n_out if projection else n_cell
    ins = [x] + int8_gate_inputs(b, n_in, n_cell, n_o, False, False, layer_norm, None)
    ins += int8_projection_and_state(b, batch, n_cell, n_out, projection, 2 ** -11)
    if layer_norm:
        ins += [b.const(f"ln_{g}", RNG.integers(3000, 5000, n_cell).astype(np.int16), quant=QuantParams(1 / 4096, 0))
                for g in "ifco"]
    y = b.tensor("y", shape[:2] + (n_o,), np.int8, quant=QuantParams(*out_quant))
    b.op(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [y],
         UnidirectionalSequenceLSTMOptions(fused_activation_function=4, time_major=time_major),
         intermediates=int8_intermediates(b, layer_norm, hidden_zp), version=3)
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("time_major", [False, True], ids=["batch-major", "time-major"])
def test_int8_unidirectional_sequence_lstm_unrolled_into_quantized_lstm(time_major):
    m = int8_seq_lstm_model(time_major=time_major, steps=4)
    ops = ["STRIDED_SLICE"] * 4 + ["QUANTIZED_LSTM"] * 4 + ["CONCATENATION", "RESHAPE"]
    assert_parity(m, api_level=30, expect_ops=ops)
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


@pytest.mark.parametrize("time_major", [False, True], ids=["batch-major", "time-major"])
def test_int8_sequence_lstm_as_keras_converts_it_bit_exact(time_major):
    """A tf_keras LSTM converted to full integer: no layer norm (the biases ride on input columns, joined to the
    whole sequence once), no projection with a hidden zero point, an output quantized apart from the state
    (its bytes carried over by a CAST, as TFLite's kernel copies them)."""
    m = int8_seq_lstm_model(time_major=time_major, steps=4, layer_norm=False, projection=False, hidden_zp=-7,
                            x_zp=-25, out_quant=(0.004, 8))
    ops = ["CONCATENATION"] + ["STRIDED_SLICE"] * 4 + ["QUANTIZED_LSTM"] * 4 + ["CONCATENATION", "RESHAPE", "CAST"]
    converted = assert_parity(m, api_level=30, expect_ops=ops).converted
    for seed in range(3):
        assert_bit_exact(m, 30, random_inputs(converted.inputs, seed))


def hybrid_lstm_models(batch=2, n_in=5, n_cell=4, n_out=3, dtype=np.int8, steps=None) -> tuple[bytes, bytes]:
    """A dynamic-range LSTM (float activations, quantized weight matrices, peepholes and projection) and its
    float twin with those weights dequantized: what NNAPI computes for the hybrid op. With `steps`, a
    batch-major UNIDIRECTIONAL_SEQUENCE_LSTM over that many steps."""
    zp = 0 if dtype == np.int8 else 128
    quant = {}
    for name, shape in [*[(f"wx_{g}", (n_cell, n_in)) for g in "ifco"],
                        *[(f"wh_{g}", (n_cell, n_out)) for g in "ifco"],
                        *[(f"p_{g}", (n_cell,)) for g in "ifo"], ("proj", (n_out, n_cell))]:
        q = RNG.integers(-127, 128, shape) + zp
        quant[name] = (q.astype(dtype), float(RNG.uniform(0.002, 0.006)))
    biases = {g: w(n_cell, scale=0.2) for g in "ifco"}
    models = []
    for hybrid in (True, False):
        b = TfliteBuilder()
        x = b.input("x", (batch, n_in) if steps is None else (batch, steps, n_in), F32)

        def weight(name):
            q, scale = quant[name]
            if hybrid:
                return b.const(name, q, quant=QuantParams(scale, zp))
            return b.const(name, ((q.astype(np.float32) - zp) * np.float32(scale)).astype(F32))
        ins = [x] + [weight(f"wx_{g}") for g in "ifco"] + [weight(f"wh_{g}") for g in "ifco"]
        ins += [weight(f"p_{g}") for g in "ifo"] + [b.const(f"b_{g}", biases[g]) for g in "ifco"]
        ins += [weight("proj"), -1]
        ins += [b.tensor("h", (batch, n_out), F32, is_variable=True),
                b.tensor("c", (batch, n_cell), F32, is_variable=True)]
        if steps is None:
            y = b.tensor("y", (batch, n_out), F32)
            b.op(BuiltinOperator.LSTM, ins, [y], LSTMOptions(fused_activation_function=4), version=3)
        else:
            y = b.tensor("y", (batch, steps, n_out), F32)
            b.op(BuiltinOperator.UNIDIRECTIONAL_SEQUENCE_LSTM, ins, [y],
                 UnidirectionalSequenceLSTMOptions(fused_activation_function=4), version=3)
        b.output(y)
        models.append(b.finish())
    return models[0], models[1]


def test_hybrid_lstm_dequantize_at_29_and_fold_at_28(dtype=np.int8):
    import nnconv
    from nnconv.runtime.executor import Executor
    from nnconv.lowering.convert import ConversionOptions
    from nnconv.parity.tflite_runner import TfliteRunner

    hybrid, twin = hybrid_lstm_models(dtype=dtype)
    assert_parity(twin, api_level=28)  # the float computation NNAPI runs, checked against TFLite
    x = {"x": RNG.uniform(-1, 1, (2, 5)).astype(F32)}
    ref = Executor(nnconv.convert(twin, api_level=28, options=nnconv_options()).converted).run(x)["y"]
    at29 = nnconv.convert(hybrid, api_level=29, options=nnconv_options()).converted
    assert [o.type.name for o in at29.model.main.operations] == ["DEQUANTIZE"] * 12 + ["LSTM"]
    np.testing.assert_allclose(Executor(at29).run(x)["y"], ref, rtol=0, atol=1e-6)
    folded = nnconv.convert(hybrid, api_level=28,
                            options=nnconv_options(ConversionOptions(fold_dynamic_range_weights=True)))
    assert [o.type.name for o in folded.converted.model.main.operations] == ["LSTM"]
    np.testing.assert_allclose(Executor(folded.converted).run(x)["y"], ref, rtol=0, atol=1e-6)
    # TFLite's own hybrid kernel quantizes the activations on the fly: agreement to within that error.
    tfl = TfliteRunner(hybrid)
    expected = next(iter(tfl.run({tfl.input_details()[0]["index"]: x["x"]}).values()))
    assert np.max(np.abs(expected - ref)) <= 0.02 * np.max(np.abs(ref))


def test_hybrid_lstm_refused_at_28_without_folding():
    diags = assert_refused(hybrid_lstm_models()[0], 28, Code.API_LEVEL, min_api_level=29)
    assert any("--fold-weights" in d.hint for d in diags)


def test_hybrid_lstm_with_uint8_weights_refused():
    assert_refused(hybrid_lstm_models(dtype=np.uint8)[0], 30, Code.DTYPE)


def test_hybrid_sequence_lstm_dequantized_at_29_and_folded_unrolled_at_28():
    """A dynamic-range UNIDIRECTIONAL_SEQUENCE_LSTM (what the converter writes for Keras LSTMs with >= 1024
    weights) lowers as the LSTM rule lowers hybrid weights, beyond TFLite's delegate: DEQUANTIZE at API 29,
    folded float32 constants (here unrolled into LSTM steps) at 28; both compute the float twin."""
    import nnconv
    from nnconv.runtime.executor import Executor
    from nnconv.lowering.convert import ConversionOptions
    from nnconv.parity.tflite_runner import TfliteRunner

    hybrid, twin = hybrid_lstm_models(steps=3)
    assert_parity(twin, api_level=29)
    x = {"x": RNG.uniform(-1, 1, (2, 3, 5)).astype(F32)}
    ref = Executor(nnconv.convert(twin, api_level=29, options=nnconv_options()).converted).run(x)["y"]
    at29 = nnconv.convert(hybrid, api_level=29, options=nnconv_options()).converted
    assert [o.type.name for o in at29.model.main.operations] == ["DEQUANTIZE"] * 12 + ["UNIDIRECTIONAL_SEQUENCE_LSTM"]
    np.testing.assert_allclose(Executor(at29).run(x)["y"], ref, rtol=0, atol=1e-6)
    folded = nnconv.convert(hybrid, api_level=28,
                            options=nnconv_options(ConversionOptions(fold_dynamic_range_weights=True)))
    assert [o.type.name for o in folded.converted.model.main.operations].count("LSTM") == 3
    np.testing.assert_allclose(Executor(folded.converted).run(x)["y"], ref, rtol=0, atol=1e-6)
    tfl = TfliteRunner(hybrid)
    expected = next(iter(tfl.run({tfl.input_details()[0]["index"]: x["x"]}).values()))
    assert np.max(np.abs(expected - ref)) <= 0.02 * np.max(np.abs(ref))
    assert_refused(hybrid, 28, Code.API_LEVEL, min_api_level=29)
