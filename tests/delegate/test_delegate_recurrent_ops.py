"""The delegate target on recurrent, embedding and hashing ops the recordings do not cover: LSTM (the full
20- and 24-input kernel in float and hybrid, the int8 kernel as QUANTIZED_LSTM from feature level 4, the
basic 5-input kernel as QUANTIZED_16BIT_LSTM), RNN, SVDF, BIDIRECTIONAL_SEQUENCE_LSTM, EMBEDDING_LOOKUP,
HASHTABLE_LOOKUP and LSH_PROJECTION.

(a) verdicts and messages, (b) the NNAPI graph (operands in the delegate's order, the scalars it appends, the
state outputs it adds as model outputs), (c) parity on our executor against TFLite, over several invocations
where the op keeps state (the delegate copies each state output back into its TFLite tensor after each
invocation). Expected values are read off `nnapi_delegate.cc` and `quant_lstm_sup.cc` (LiteRT f67457790c9c)."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pytest

from harness import QuantParams, single_op_model
from nnconv.delegate.plan import Outcome
from nnconv.tflite.options import LSHProjectionOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

from delegate_kit import (accepted_levels, assert_outputs_close, assert_verified, graph, prepared, run_both,
                          run_steps, verdict)
from recurrent_models import (basic_lstm_model, bidi_lstm_model, int8_lstm_model, lsh_model, lstm_model, q8,
                              rnn_model, svdf_model, w)

FLOAT_T = "TENSOR_FLOAT32"
U8 = "TENSOR_QUANT8_ASYMM"
S8 = "TENSOR_QUANT8_ASYMM_SIGNED"
SYMM = "TENSOR_QUANT8_SYMM"
Q16 = "TENSOR_QUANT16_SYMM"
I32 = "TENSOR_INT32"
OMITTED_F = (FLOAT_T, "omitted", (0,), 0.0)


def f(*dims) -> tuple:
    return (FLOAT_T, tuple(dims), 0.0, 0)


def s(x) -> float:
    return float(np.float32(x))


def xs(shape, steps=3, lo=-1.0, hi=1.0, seed: int = 1618) -> list[dict]:
    """Seeded inputs for `steps` invocations (the same whatever ran before)."""
    r = np.random.default_rng(seed)
    return [{"x": r.uniform(lo, hi, shape).astype(np.float32)} for _ in range(steps)]


def assert_steps_close(steps, hybrid: bool = False) -> None:
    for k, (ours, theirs) in enumerate(steps):
        try:
            assert_outputs_close(ours, theirs, hybrid)
        except AssertionError as e:
            raise AssertionError(f"invocation {k}: {e}") from None


# -- LSTM, full kernel ---------------------------------------------------------------------------------------
def test_lstm_verdicts():
    bug = "NNAPI 1.0 has a bug for optional tensors which would affect LSTM."
    assert verdict(lstm_model(), 27) == (False, [bug])
    assert accepted_levels(lstm_model()) == [28, 29, 30, 31, 33, 34, 35]
    # 24 inputs (layer normalization) from NNAPI 1.2
    assert verdict(lstm_model(layer_norm=True), 28) == (False, ["Android sdk version less than 29"])
    assert verdict(lstm_model(layer_norm=True), 27) == (False, [bug, "Android sdk version less than 29"])
    assert accepted_levels(lstm_model(layer_norm=True)) == [29, 30, 31, 33, 34, 35]


def lstm_inputs(n_in, n_cell, n_out, cifg=False, peephole=False, projection=False) -> list[tuple]:
    """TFLite's inputs 0..19 of the float LSTM as the delegate adds them (omitted ones as empty float
    vectors), batch 2."""
    ops = [f(2, n_in)]
    ops += [OMITTED_F if cifg and g == "i" else f(n_cell, n_in) for g in "ifco"]
    ops += [OMITTED_F if cifg and g == "i" else f(n_cell, n_out) for g in "ifco"]
    ops += [f(n_cell) if peephole and not (cifg and g == "i") else OMITTED_F for g in "ifo"]
    ops += [OMITTED_F if cifg and g == "i" else f(n_cell) for g in "ifco"]
    ops += [f(n_out, n_cell), f(n_out)] if projection else [OMITTED_F, OMITTED_F]
    return ops + [f(2, n_out), f(2, n_cell)]


def test_lstm_20_inputs_graph():
    """Inputs 0..19, then activation, cell clip and projection clip; outputs: the scratch buffer (float32 of
    rank 2, dims 0), the new output state and cell state (AddStateFloat32Tensor), then the output. The two
    new states are model outputs after the partition's own."""
    g = graph(lstm_model(peephole=True, projection=True, n_out=3, cell_clip=0.5, proj_clip=0.25, act=1), 28)
    assert g.ops() == [("LSTM", lstm_inputs(5, 4, 3, peephole=True, projection=True) +
                        [("INT32", 1), ("FLOAT32", 0.5), ("FLOAT32", 0.25)],
                        [f(0, 0), f(2, 3), f(2, 4), f(2, 3)])]
    op = g.model.main.operations[0]
    assert g.model.main.output_indexes == [op.outputs[3], op.outputs[1], op.outputs[2]]
    assert g.model.main.input_indexes == [op.inputs[0], op.inputs[18], op.inputs[19]]
    assert [o.name for o in g.converted.outputs] == ["y", "h_state (new state)", "c_state (new state)"]


def test_lstm_24_inputs_graph():
    """The four layer-normalization weights go last (Map adds them after the clips); an omitted one (CIFG's
    input gate) is an empty float vector."""
    g = graph(lstm_model(cifg=True, layer_norm=True), 29)
    assert g.ops() == [("LSTM", lstm_inputs(5, 4, 4, cifg=True) + [("INT32", 4), ("FLOAT32", 0.0), ("FLOAT32", 0.0),
                                                                   OMITTED_F, f(4), f(4), f(4)],
                        [f(0, 0), f(2, 4), f(2, 4), f(2, 4)])]


@pytest.mark.parametrize("api,kw", [(28, dict()), (28, dict(peephole=True, projection=True, n_out=3, proj_clip=0.25)),
                                    (29, dict(cifg=True, layer_norm=True, cell_clip=0.5)), (30, dict(layer_norm=True)),
                                    (35, dict(act=1))])
def test_lstm_parity_over_invocations(api, kw):
    m = lstm_model(**kw)
    assert_verified(m, api)
    assert_steps_close(run_steps(m, api, xs((2, 5))))


# -- LSTM, hybrid --------------------------------------------------------------------------------------------
def test_lstm_hybrid_verdicts():
    assert verdict(lstm_model(hybrid="int8"), 28) == (
        False, ["Hybrid operators not supported before NNAPI 1.2.", "Weight has to be Float32 or UINT8"])
    # int8 weights from API 30 only (29 takes float32 or uint8 weights)
    assert verdict(lstm_model(hybrid="int8"), 29) == (False, ["Weight has to be Float32 or UINT8"])
    assert accepted_levels(lstm_model(hybrid="int8")) == [30, 31, 33, 34, 35]
    assert accepted_levels(lstm_model(hybrid="uint8")) == [29, 30, 31, 33, 34, 35]
    assert verdict(lstm_model(hybrid="int8", layer_norm=True), 28) == (
        False, ["Hybrid operators not supported before NNAPI 1.2.", "Android sdk version less than 29",
                "Weight has to be Float32 or UINT8"])


@pytest.mark.parametrize("hybrid,api", [("int8", 30), ("uint8", 29)])
def test_lstm_hybrid_graph(hybrid, api):
    """Weights as TENSOR_QUANT8_SYMM (legacy uint8 read as int8), each replaced by a DEQUANTIZE into a new
    float32 operand, the DEQUANTIZEs first, in input order; the float biases and layer norm stay."""
    g = graph(lstm_model(hybrid=hybrid, projection=True, n_out=3, layer_norm=True), api)
    weights = [(SYMM, (4, 5), s(0.02), 0)] * 4 + [(SYMM, (4, 3), s(0.02), 0)] * 4 + [(SYMM, (3, 4), s(0.02), 0)]
    assert g.ops()[:9] == [("DEQUANTIZE", [wt], [f(*wt[1])]) for wt in weights]
    name, ins, outs = g.op(9)
    assert name == "LSTM" and ins == lstm_inputs(5, 4, 3, projection=True) + [
        ("INT32", 4), ("FLOAT32", 0.0), ("FLOAT32", 0.0), f(4), f(4), f(4), f(4)]
    lstm = g.model.main.operations[9]
    dequantized = [op.outputs[0] for op in g.model.main.operations[:9]]
    assert [lstm.inputs[i] for i in (*range(1, 9), 16)] == dequantized


@pytest.mark.parametrize("hybrid,api", [("int8", 30), ("uint8", 29), ("int8", 33)])
def test_lstm_hybrid_parity(hybrid, api):
    """Against TFLite's own hybrid kernels (which quantize the activations on the fly), with nnconv's hybrid
    tolerance, over three invocations."""
    m = lstm_model(hybrid=hybrid, projection=True, n_out=3)
    assert_steps_close(run_steps(m, api, xs((2, 5))), hybrid=True)


# -- LSTM, int8 kernel: QUANTIZED_LSTM -------------------------------------------------------------------------
def test_int8_lstm_verdicts():
    assert verdict(int8_lstm_model(), 29) == (False, ["Weight has to be Float32 or UINT8"])
    assert accepted_levels(int8_lstm_model()) == [30, 31, 33, 34, 35]


def test_int8_lstm_graph():
    """From feature level 4: QUANTIZED_LSTM with every input in TFLite's order (omitted weights as int8 [0]
    vectors of scale 1, biases as int32, the rest as int16), only the input and the output state signed,
    then the clips, the four gate scales, the hidden zero point and scale; outputs the two new states
    (AddStateInt8AsymTensor / AddStateInt16Tensor) and the output."""
    g = graph(int8_lstm_model(cifg=True, cell_clip=0.5, proj_clip=0.25, hidden_zp=3), 30)
    wx, wh = (SYMM, (4, 5), s(0.01), 0), (SYMM, (4, 3), s(0.01), 0)
    bias = (I32, (4,), s(1 / 4096 / 1024), 0)
    omitted8, omitted16 = (SYMM, "omitted", (0,), 1.0), (Q16, "omitted", (0,), 1.0)
    ln = (Q16, (4,), s(1 / 4096), 0)
    gate = s(2 ** -12)
    assert g.ops() == [("QUANTIZED_LSTM", [
        (S8, (2, 5), s(1 / 128), 0), omitted8, wx, wx, wx, omitted8, wh, wh, wh, omitted16, omitted16, omitted16,
        (I32, "omitted", (0,), 0.0), bias, bias, bias, (SYMM, (3, 4), s(0.01), 0), (I32, (3,), s(0.01 / 128), 0),
        (S8, (2, 3), s(1 / 128), 0), (Q16, (2, 4), s(2 ** -11), 0), omitted16, ln, ln, ln,
        ("FLOAT32", 0.5), ("FLOAT32", 0.25), ("FLOAT32", gate), ("FLOAT32", gate), ("FLOAT32", gate),
        ("FLOAT32", gate), ("INT32", 3), ("FLOAT32", s(2 ** -7))],
        [(S8, (2, 3), s(1 / 128), 0), (Q16, (2, 4), s(2 ** -11), 0), (S8, (2, 3), s(1 / 128), 0)])]
    assert [o.name for o in g.converted.outputs] == ["y", "h (new state)", "c (new state)"]


def test_int8_lstm_without_layer_norm_crashes_the_delegate():
    """The converter leaves the four gate intermediates of an int8 LSTM without layer normalization float32
    without quantization (TFLite's kernel ignores them); the delegate reads their scales through a null
    quantization pointer: the app crashes (delegate_crash), it does not fall back to the CPU."""
    p = prepared(int8_lstm_model(layer_norm=False), 30)
    plan = p.delegate_plan()
    assert plan.outcome is Outcome.DELEGATE_CRASH and not plan.partitions
    assert "intermediate tensor #" in plan.error and "'inter_i'" in plan.error
    partitions = p.plan()
    assert partitions.outcome == "delegate_crash" and not partitions.converted
    assert [d.code.value for d in partitions.diagnostics] == ["NNC046"]


@pytest.mark.parametrize("api,kw", [(30, dict()), (30, dict(cifg=True, hidden_zp=3)), (33, dict(projection=False)),
                                    (35, dict(cell_clip=0.5))])
def test_int8_lstm_parity_over_invocations(api, kw):
    m = int8_lstm_model(**kw)
    assert_verified(m, api)
    r = np.random.default_rng(1618)
    steps = [{"x": r.integers(-128, 128, (2, 5)).astype(np.int8)} for _ in range(3)]
    assert_steps_close(run_steps(m, api, steps))


# -- LSTM, basic kernel: QUANTIZED_16BIT_LSTM ------------------------------------------------------------------
def test_basic_lstm_verdicts():
    m, _, _ = basic_lstm_model()
    assert verdict(m, 27) == (False, ["NNAPI 1.0 has a bug for optional tensors which would affect LSTM."])
    assert accepted_levels(m) == [28, 29, 30, 31, 33, 34, 35]
    bad_w, _, _ = basic_lstm_model(weights_dtype=np.int8)
    assert verdict(bad_w, 29) == (False, ["Basic LSTM Kernels support only UINT8 weights"])
    bad_x, _, _ = basic_lstm_model(x_quant=(1 / 128, 127))
    assert verdict(bad_x, 29) == (False, ["Invalid input quantization"])
    # scale 2^-11 or zero point 0 will do: both wrong is refused
    assert verdict(basic_lstm_model(cell_quant=(2 ** -10, 0))[0], 29) == (True, [])
    assert verdict(basic_lstm_model(cell_quant=(2 ** -10, 3))[0], 29) == (False, ["Invalid cell state quantization"])


def test_basic_lstm_graph():
    """QUANTIZED_16BIT_LSTM: the concatenated weights cut into 8 uint8 constants (input-to-{input, forget, cell,
    output} [n_out, n_in], then recurrent-to-* [n_out, n_out]) and the biases into 4 int32 constants, with the
    weights' / biases' params; then the previous cell state and the previous activation; outputs the new cell
    state and the activation (DecomposeQuantLstmWeightsTensor: rows by gate in the order input, cell, forget,
    output, recurrent columns first)."""
    m, weights, biases = basic_lstm_model(batch=2, n_in=3, n_out=4)
    g = graph(m, 29)
    wi, wr, b = (U8, (4, 3), s(0.004), 100), (U8, (4, 4), s(0.004), 100), (I32, (4,), s(0.004 / 128), 0)
    assert g.ops() == [("QUANTIZED_16BIT_LSTM", [(U8, (2, 3), s(1 / 128), 128), wi, wi, wi, wi, wr, wr, wr, wr,
                                                 b, b, b, b, (Q16, (2, 4), s(2 ** -11), 0),
                                                 (U8, (2, 4), s(1 / 128), 128)],
                        [(Q16, (2, 4), s(2 ** -11), 0), (U8, (2, 4), s(1 / 128), 128)])]
    rows = {"input": slice(0, 4), "cell": slice(4, 8), "forget": slice(8, 12), "output": slice(12, 16)}
    order = ("input", "forget", "cell", "output")
    for k, gate in enumerate(order):
        np.testing.assert_array_equal(g.input_value(0, 1 + k), weights[rows[gate], 4:].reshape(-1))
        np.testing.assert_array_equal(g.input_value(0, 5 + k), weights[rows[gate], :4].reshape(-1))
        np.testing.assert_array_equal(g.input_value(0, 9 + k), biases[rows[gate]])


def test_basic_lstm_at_28_is_refused_by_the_runtime():
    """Validate takes it from API 28, but QUANTIZED_16BIT_LSTM is NNAPI 1.2's: the runtime refuses it there."""
    m, _, _ = basic_lstm_model()
    assert "QUANTIZED_16BIT_LSTM" in graph(m, 28).error and not graph(m, 29).error


@pytest.mark.parametrize("api", [29, 30, 34])
def test_basic_lstm_parity(api):
    m, _, _ = basic_lstm_model()
    assert_verified(m, api)


@pytest.mark.parametrize("seed", range(4))
def test_basic_lstm_over_invocations_gap(seed):
    """The delegate's feedback loops copy the activation and the cell state back into the previous ones after
    each invocation, as TFLite's kernel updates them in place. One step is within nnconv's 1 LSB (NNAPI
    derives its multipliers from float32 scales, TFLite from doubles); fed back, the int16 cell state's
    1-LSB differences accumulate, by construction: asserted as the documented gap, the output within 1 LSB
    and the cell state within 2 LSB per invocation, over 4 invocations."""
    m, _, _ = basic_lstm_model()
    r = np.random.default_rng(seed)
    steps = [{"x": r.integers(0, 256, (2, 3)).astype(np.uint8)} for _ in range(4)]
    for k, (ours, theirs) in enumerate(run_steps(m, 30, steps, feedback=[("y", "h"), ("c_out", "c")])):
        assert np.abs(ours["y"].astype(int) - theirs["y"].astype(int)).max() <= 1
        assert np.abs(ours["c_out"].astype(int) - theirs["c_out"].astype(int)).max() <= 2 * (k + 1)


# -- RNN ------------------------------------------------------------------------------------------------------
def test_rnn_verdicts():
    assert accepted_levels(rnn_model()) == [27, 28, 29, 30, 31, 33, 34, 35]
    assert verdict(rnn_model(weights=np.int8), 30) == (
        False, ["OP Version different from 1", "NNAPI only support float32 weights."])


def test_rnn_graph():
    """The new hidden state is an extra output before the output (AddStateFloat32Tensor of input 4), and a model
    output after the partition's."""
    g = graph(rnn_model(act=3), 27)
    assert g.ops() == [("RNN", [f(2, 5), f(4, 5), f(4, 4), f(4), f(2, 4), ("INT32", 3)], [f(2, 4), f(2, 4)])]
    op = g.model.main.operations[0]
    assert g.model.main.output_indexes == [op.outputs[1], op.outputs[0]]
    assert [o.name for o in g.converted.outputs] == ["y", "h (new state)"]


@pytest.mark.parametrize("api,act", [(27, 1), (29, 4), (33, 3)])
def test_rnn_parity_over_invocations(api, act):
    m = rnn_model(act=act)
    assert_verified(m, api)
    assert_steps_close(run_steps(m, api, xs((2, 5))))


# -- SVDF -----------------------------------------------------------------------------------------------------
def test_svdf_verdicts():
    assert verdict(svdf_model(), 27) == (False, ["SVDF does not support rank > 1 on NNAPI 1.0."])
    assert accepted_levels(svdf_model()) == [28, 29, 30, 31, 33, 34, 35]
    assert verdict(svdf_model(weights=np.int8), 30) == (
        False, ["OP Version different from 1", "NNAPI only support float32 weights.", "Weights should be Float32"])


@pytest.mark.parametrize("bias", [True, False])
def test_svdf_graph(bias):
    g = graph(svdf_model(rank=2, bias=bias, act=1), 28)
    assert g.ops() == [("SVDF", [f(2, 5), f(6, 5), f(6, 4), f(3) if bias else OMITTED_F, f(2, 24), ("INT32", 2),
                                 ("INT32", 1)], [f(2, 24), f(2, 3)])]
    assert [o.name for o in g.converted.outputs] == ["y", "state (new state)"]


@pytest.mark.parametrize("api,kw", [(28, dict()), (30, dict(bias=False, act=1)), (34, dict(rank=1, units=4))])
def test_svdf_parity_over_invocations(api, kw):
    """The outputs match TFLite's over invocations. The new state does not equal TFLite's state tensor: NNAPI's
    SVDF shifts its history after the step (state_out is ready for the next one), TFLite's kernel shifts
    before it; asserted here as that relation: TFLite's state is ours shifted right by one column, its
    newest column being the one ours already dropped."""
    m = svdf_model(**kw)
    steps = run_steps(m, api, xs((2, 5), steps=4))
    for k, (ours, theirs) in enumerate(steps):
        assert_outputs_close({"y": ours["y"]}, {"y": theirs["y"]})
    # one invocation, then compare the states: ours[:, :, :-1] == TFLite's[:, :, 1:]
    from nnconv.runtime.executor import Executor
    from nnconv.parity.tflite_runner import TfliteRunner
    g = graph(m, api)
    feed = xs((2, 5), steps=1)[0]
    ours = Executor(g.converted).run(feed)["state (new state)"]
    runner = TfliteRunner(m)
    runner.run({runner.input_details()[0]["index"]: feed["x"]})
    theirs = runner.tensor(next(i.tflite_tensor for i in g.converted.inputs if i.name == "state"))
    filters, memory = ours.shape[1] // 4, 4
    o, t = ours.reshape(2, filters, memory), theirs.reshape(2, filters, memory)
    np.testing.assert_allclose(o[:, :, :-1], t[:, :, 1:], rtol=1e-5, atol=1e-6)
    assert not o[:, :, -1].any()


# -- BIDIRECTIONAL_SEQUENCE_LSTM ------------------------------------------------------------------------------
def test_bidirectional_lstm_verdicts():
    assert verdict(bidi_lstm_model(), 28) == (False, ["Android sdk version less than 29"])
    assert accepted_levels(bidi_lstm_model()) == [29, 30, 31, 33, 34, 35]
    assert verdict(bidi_lstm_model(hybrid="int8"), 30) == (
        False, ["Hybrid version of this op is not supported by NN API."])


@pytest.mark.parametrize("merge,time_major", [(False, True), (True, False)])
def test_bidirectional_lstm_graph(merge, time_major):
    """TFLite's 48 inputs (omitted ones as empty float vectors), then activation, cell clip, projection clip,
    merge_outputs, time_major and NNAPI's 8 layer-normalization inputs, all omitted."""
    g = graph(bidi_lstm_model(merge=merge, time_major=time_major), 29)
    name, ins, outs = g.op(0)
    x = f(3, 2, 4) if time_major else f(2, 3, 4)
    fw = lstm_inputs(4, 3, 3)[1:18]
    bw = lstm_inputs(4, 3, 3, cifg=True, peephole=True)[1:18]
    assert name == "BIDIRECTIONAL_SEQUENCE_LSTM" and len(ins) == 61
    assert ins == [x, *fw, *bw, f(2, 3), f(2, 3), f(2, 3), f(2, 3)] + [OMITTED_F] * 9 + [
        ("INT32", 4), ("FLOAT32", 0.75), ("FLOAT32", 0.0), ("BOOL", merge), ("BOOL", time_major)] + [OMITTED_F] * 8
    seq = (3, 2) if time_major else (2, 3)
    assert outs == ([f(*seq, 6)] if merge else [f(*seq, 3), f(*seq, 3)])
    # no state output: the delegate never writes the four state tensors back
    assert len(g.model.main.output_indexes) == len(outs)


@pytest.mark.parametrize("api,kw", [(29, dict()), (30, dict(merge=True)), (33, dict(time_major=False))])
def test_bidirectional_lstm_parity(api, kw):
    # (merged batch-major outputs are left out: TFLite's own builtin and reference kernels disagree there)
    assert_verified(bidi_lstm_model(**kw), api)


def test_bidirectional_lstm_state_is_not_carried_over():
    """The delegate adds no state output for BIDIRECTIONAL_SEQUENCE_LSTM: its states stay at zero on NNAPI while
    TFLite's kernel carries them from one invocation to the next. The first invocation matches; the second
    differs from TFLite by construction, and equals a fresh first invocation on the same input."""
    m = bidi_lstm_model()
    x = np.random.default_rng(1618).uniform(-1, 1, (3, 2, 4)).astype(np.float32)
    steps = run_steps(m, 30, [{"x": x}, {"x": x}])
    assert_outputs_close(*steps[0])
    (ours, theirs) = steps[1]
    assert np.abs(ours["y_fw"] - theirs["y_fw"]).max() > 1e-3
    np.testing.assert_array_equal(ours["y_fw"], steps[0][0]["y_fw"])


# -- EMBEDDING_LOOKUP, HASHTABLE_LOOKUP -----------------------------------------------------------------------
def embedding_model(table=None, quant=None, version=1) -> bytes:
    table = w(8, 3, 2) if table is None else table
    out = ("y", (6,) + table.shape[1:], np.float32)
    return single_op_model(B.EMBEDDING_LOOKUP, [("ids", (6,), np.int32), ("table", table, quant)], [out],
                           version=version)


def test_embedding_lookup():
    assert accepted_levels(embedding_model()) == [27, 28, 29, 30, 31, 33, 34, 35]
    assert verdict(embedding_model(q8(w(8, 3), 0.1), QuantParams(0.1)), 30) == (
        False, ["NNAPI only support float32 values."])
    assert verdict(embedding_model(version=2), 30) == (False, ["OP Version different from 1"])
    g = graph(embedding_model(), 27)
    assert g.ops() == [("EMBEDDING_LOOKUP", [(I32, (6,), 0.0, 0), f(8, 3, 2)], [f(6, 3, 2)])]


@pytest.mark.parametrize("api", [27, 30, 35])
def test_embedding_lookup_parity(api):
    assert_verified(embedding_model(), api, {"ids": np.array([7, 0, 3, 3, 5, 1], np.int32)})


KEYS = np.array([-3, 0, 2, 5, 7], np.int32)


def hashtable_model(values=None) -> bytes:
    values = w(5, 4) if values is None else values
    return single_op_model(B.HASHTABLE_LOOKUP, [("ids", (7,), np.int32), ("keys", KEYS), ("values", values)],
                           [("y", (7,) + values.shape[1:], values.dtype), ("hits", (7,), np.uint8)])


def test_hashtable_lookup():
    assert accepted_levels(hashtable_model()) == [27, 28, 29, 30, 31, 33, 34, 35]
    assert verdict(hashtable_model(np.arange(10, dtype=np.int32).reshape(5, 2)), 27) == (
        False, ["NNAPI only support float32 output."])
    g = graph(hashtable_model(), 27)
    # the uint8 hits tensor has no quantization: AddTensor gives a QUANT8_ASYMM scale 1
    assert g.ops() == [("HASHTABLE_LOOKUP", [(I32, (7,), 0.0, 0), (I32, (5,), 0.0, 0), f(5, 4)],
                        [f(7, 4), (U8, (7,), 1.0, 0)])]


@pytest.mark.parametrize("api", [27, 30])
def test_hashtable_lookup_parity(api):
    ours, theirs = run_both(hashtable_model(), api, {"ids": np.array([0, 1, 2, 7, -3, 6, 5], np.int32)})
    assert_outputs_close(ours, theirs)
    assert list(theirs["hits"]) == [1, 0, 1, 1, 1, 0, 1]


# -- LSH_PROJECTION -------------------------------------------------------------------------------------------
def test_lsh_projection_verdicts():
    pre_q = "NNAPI does not support sparse projection correctly pre-Q"
    assert verdict(lsh_model(1, weight=False), 28) == (False, [pre_q])
    assert accepted_levels(lsh_model(1, weight=False)) == [29, 30, 31, 33, 34, 35]
    # (the delegate's message starts with a space)
    assert verdict(lsh_model(1, weight=True), 29) == (False, [" NNAPI does not support weights for sparse projects."])
    assert verdict(lsh_model(1, weight=True), 28) == (
        False, ["NNAPI does not support sparse projection correctly pre-Q",
                " NNAPI does not support weights for sparse projects."])
    assert accepted_levels(lsh_model(2)) == [27, 28, 29, 30, 31, 33, 34, 35]
    m = single_op_model(B.LSH_PROJECTION, [("hash", w(4, 3)), ("x", (5, 2), np.int32)], [("y", (12,), np.int32)],
                        LSHProjectionOptions(type=2), version=2)
    assert verdict(m, 30) == (False, ["OP Version different from 1"])


def test_lsh_projection_graph():
    # sparse: NNAPI 1.2 numbers it 3 and takes a (null) weight operand
    g = graph(lsh_model(1, weight=False), 29)
    assert g.ops() == [("LSH_PROJECTION", [f(4, 3), (I32, (5, 2), 0.0, 0), OMITTED_F, ("INT32", 3)],
                        [(I32, (4,), 0.0, 0)])]
    g = graph(lsh_model(2, in_dtype=np.float32), 27)
    assert g.ops() == [("LSH_PROJECTION", [f(4, 3), f(5, 2), f(5), ("INT32", 2)], [(I32, (12,), 0.0, 0)])]


def test_lsh_projection_dense_without_weight_is_refused_by_the_runtime():
    """A dense projection without weight: the delegate adds the two tensors and the type, three inputs where
    NNAPI's LSH_PROJECTION takes four, which the runtime refuses."""
    g = graph(lsh_model(2, weight=False), 29)
    assert g.op(0)[1] == [f(4, 3), (I32, (5, 2), 0.0, 0), ("INT32", 2)]
    assert "LSH_PROJECTION" in g.error


@pytest.mark.parametrize("api,kind,dtype", [(29, 1, np.int32), (27, 2, np.int32), (30, 2, np.float32),
                                            (33, 1, np.int32)])
def test_lsh_projection_parity(api, kind, dtype):
    assert_verified(lsh_model(kind, weight=kind == 2, in_dtype=dtype), api)


@pytest.mark.parametrize("make", [svdf_model, rnn_model])
def test_verify_compares_the_model_outputs_not_the_carried_state(make):
    """The delegate reads each new state back from an extra NNAPI output, in NNAPI's layout (SVDF's is shifted
    against TFLite's tensor, above): verify compares the model's own outputs and leaves that carry alone, and
    `--per-op` feeds the state as TFLite starts it (zeros), not the new state TFLite's tensor holds after the run."""
    from nnconv.parity.session import VerifyOptions, verify as verify_one
    m = make()
    g = graph(m, 30)
    assert [o.name.endswith(" (new state)") for o in g.converted.outputs if o.variable] == [True]
    assert [o.name for o in g.converted.model_outputs] == ["y"]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.tflite")
        with open(path, "wb") as f:
            f.write(m)
        report = verify_one(path, VerifyOptions(api_level=30, per_op=True, seed=5))
    assert report.passed and [o.name for o in report.parity.outputs] == ["y"]
