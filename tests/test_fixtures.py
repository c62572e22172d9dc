"""End-to-end tests on real TensorFlow-converted models (examples/models/, built by
examples/make_fixtures.py): whole-model conversion at the API levels each model family targets, and parity
with TFLite's interpreter under the tolerance policy of nnconv.parity (float: 1e-4 of the output range;
quantized: 1 LSB)."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

import nnconv
from harness import assert_bit_exact, nnconv_options
from nnconv.errors import ConversionError
from nnconv.lowering.diagnostics import Code, Verdict
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.program import IoTensor
from nnconv.parity import random_inputs, run_parity
from nnconv.parity.tflite_runner import BUILTIN_KERNELS, REFERENCE_KERNELS

MODELS = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"

INT8_MODELS = ("mobilenet_v2_int8", "mobilenet_v3_int8", "mobilenet_v2_uint8io", "mobilenet_v3_uint8io")


def path(name: str) -> str:
    p = MODELS / f"{name}.tflite"
    if not p.is_file():  # the fixtures are committed; a missing one is a packaging error, not a skip
        raise FileNotFoundError(p)
    return str(p)


def convert_or_explain(name: str, api_level: int, options: nnconv.ConversionOptions | None = None
                       ) -> nnconv.ConversionResult:
    """nnconv.convert; a refusal fails the test naming each refused op and why (not just a count)."""
    try:
        return nnconv.convert(path(name), api_level=api_level, options=options)
    except ConversionError as e:
        refused = [r for r in e.report.ops if not r.supported]  # type: ignore[attr-defined]
        pytest.fail(f"{name} refused at API {api_level}: " + "; ".join(
            f"#{r.index} {r.op}({','.join(r.input_dtypes)}): {r.reason}" for r in refused))


def structured_inputs(specs: list[IoTensor], seed: int) -> dict[str, np.ndarray]:
    """Blocky images (8x8 random cells plus a little noise, in [-1, 1], quantized with the input's own
    scale and zero point) for image inputs; i.i.d. noise averages out in global pooling, these do not, so
    the outputs move with the input. Other inputs: `random_inputs`."""
    rng = np.random.default_rng(seed)
    feed = random_inputs(specs, seed)
    for spec in specs:
        if len(spec.shape) != 4 or spec.shape[1] % 8 or spec.shape[2] % 8:
            continue
        n, h, w, c = spec.shape
        x = np.kron(rng.uniform(-1.0, 1.0, (n, 8, 8, c)), np.ones((1, h // 8, w // 8, 1)))
        x = np.clip(x + rng.uniform(-0.1, 0.1, x.shape), -1.0, 1.0)
        dt = spec.np_dtype
        if dt.kind in "iu":
            info = np.iinfo(dt)
            x = np.clip(np.round(x / spec.scale) + spec.zero_point, info.min, info.max)
        feed[spec.name] = x.astype(dt)
    return feed


def assert_model_parity(name: str, api_level: int, options: nnconv.ConversionOptions | None = None,
                        reference: str | None = None, kernels: str = BUILTIN_KERNELS) -> nnconv.ConversionResult:
    """Converts the whole model at `api_level`, runs both engines (TFLite on `reference`, default the model
    itself) on full-range random inputs and on structured images, and fails on any output outside
    tolerance (the message names every failing output)."""
    result = convert_or_explain(name, api_level, options)
    specs = result.converted.inputs
    for label, feed in (("random", random_inputs(specs, 0)), ("structured", structured_inputs(specs, 1))):
        report = run_parity(path(reference or name), result.converted, feed, kernels=kernels)
        bad = [o for o in report.outputs if not o.passed]
        assert not bad, f"{name} at API {api_level}, {label} inputs: " + "; ".join(
            f"{o.name}: max|diff|={o.max_abs:.3g} rel={o.max_rel:.3g} lsb={o.max_lsb} {o.detail}" for o in bad)
    return result


def operand_types(result: nnconv.ConversionResult) -> set[OperandType]:
    model = result.converted.model
    return {o.type for sg in [model.main, *model.referenced] for o in sg.operands}


def operation_types(result: nnconv.ConversionResult) -> list[OperationType]:
    model = result.converted.model
    return [op.type for sg in [model.main, *model.referenced] for op in sg.operations]


def refusal(name: str, api_level: int, options: nnconv.ConversionOptions | None = None) -> ConversionError:
    with pytest.raises(ConversionError) as info:
        nnconv.convert(path(name), api_level=api_level, options=options)
    return info.value


# -- float MobileNetV2 and its float16-weight variant --------------------------------------------------
@pytest.mark.parametrize("api_level", [27, 28, 29, 30])
@pytest.mark.parametrize("name", ["mobilenet_v2_float", "mobilenet_v2_fp16"])
def test_float_mobilenet_v2(name: str, api_level: int) -> None:
    result = assert_model_parity(name, api_level)
    ops = operation_types(result)
    assert ops.count(OperationType.CONV_2D) == 11 and ops.count(OperationType.DEPTHWISE_CONV_2D) == 5
    assert OperandType.TENSOR_FLOAT16 not in operand_types(result)  # float16 weights become float32


@pytest.mark.parametrize("api_level", [27, 30])
def test_fp16_weights_become_float32_constants(api_level: int) -> None:
    """Every DEQUANTIZE of a float16 weight is evaluated at conversion time (the delegate's HALF_TO_FLOAT
    constant conversion): accepted, and no NNAPI operation emitted for it."""
    result = convert_or_explain("mobilenet_v2_fp16", api_level)
    dequantize = [r for r in result.report.ops if r.op == "DEQUANTIZE"]
    assert len(dequantize) == 34  # every weight and bias of the model
    assert all(r.supported and r.nnapi_ops == [] for r in dequantize)
    emitted = operation_types(result)
    assert OperationType.DEQUANTIZE not in emitted and OperationType.CAST not in emitted


# -- full-integer MobileNetV2 / V3 --------------------------------------------------------------------
@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_api29_uint8_path(name: str) -> None:
    """Below API 30 the int8 activations travel as TENSOR_QUANT8_ASYMM with zero point +128."""
    result = assert_model_parity(name, 29, nnconv_options())
    types = operand_types(result)
    assert OperandType.TENSOR_QUANT8_ASYMM in types
    assert OperandType.TENSOR_QUANT8_ASYMM_SIGNED not in types
    assert OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL in types  # the per-channel int8 filters
    spec = result.converted.inputs[0]
    assert spec.offset == (128 if spec.dtype == "int8" else 0)


@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_api30_signed_path(name: str) -> None:
    result = assert_model_parity(name, 30)
    types = operand_types(result)
    assert OperandType.TENSOR_QUANT8_ASYMM_SIGNED in types
    assert OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL in types
    assert result.converted.inputs[0].offset == 0


@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_refused_at_api27(name: str) -> None:
    """Per-channel int8 filters need API 29: every convolution is refused saying so, with API 29 as its lowest
    accepting level; no refused op needs more than API 29 (the model converts there)."""
    err = refusal(name, 27, nnconv_options())
    ops = err.report.ops  # type: ignore[attr-defined]
    refused = [r for r in ops if not r.supported]
    convs = [r for r in refused if r.op in ("CONV_2D", "DEPTHWISE_CONV_2D")]
    assert len(convs) == sum(1 for r in ops if r.op in ("CONV_2D", "DEPTHWISE_CONV_2D"))
    assert all("per-channel" in r.reason.lower() for r in convs), [r.reason for r in convs]
    assert {r.min_api_level for r in convs} == {29}
    assert all(r.min_api_level is not None and r.min_api_level <= 29 for r in refused)
    assert Code.API_LEVEL in {d.code for d in err.diagnostics}


@pytest.mark.parametrize("api_level", [29, 30])
@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_against_reference_kernels(name: str, api_level: int) -> None:
    """Also within 1 LSB of TFLite's reference kernels, the ones the NNAPI reference CPU follows."""
    assert_model_parity(name, api_level, nnconv_options(), kernels=REFERENCE_KERNELS)


def test_uint8_io_keeps_uint8_interface() -> None:
    """The uint8 model's QUANTIZE edges: users feed and read uint8 at both levels."""
    for name in ("mobilenet_v2_uint8io", "mobilenet_v3_uint8io"):
        for level in (29, 30):
            converted = nnconv.convert(path(name), api_level=level, options=nnconv_options()).converted
            assert [s.dtype for s in converted.inputs] == ["uint8"]
            assert [s.dtype for s in converted.outputs] == ["uint8"]


@pytest.mark.parametrize("name", ["mobilenet_v3_int8", "mobilenet_v3_uint8io"])
def test_mobilenet_v3_lowers_hard_swish(name: str) -> None:
    result = nnconv.convert(path(name), api_level=30)
    assert operation_types(result).count(OperationType.HARD_SWISH) == 5


# -- dynamic-range (hybrid) MobileNetV2 -------------------------------------------------------------
# NNAPI computes a hybrid op as DEQUANTIZE(weights) + a float op, while TFLite's hybrid kernels quantize the
# activations to int8 on the fly (about 1e-3 of the output range here). The exact reference is therefore
# TFLite running the model's float twin (every int8 weight replaced by q * scale, see make_fixtures.py);
# the hybrid model itself is compared within the activation-quantization error.
HYBRID_RTOL = 1e-2


def assert_close_to_hybrid_tflite(result: nnconv.ConversionResult) -> None:
    from nnconv.parity.tflite_runner import TfliteRunner
    feed = structured_inputs(result.converted.inputs, 1)
    ours = nnconv.Executor(result.converted).run(feed)
    runner = TfliteRunner(path("mobilenet_v2_dynamic_range"))
    theirs = runner.run({runner.input_details()[0]["index"]: feed[result.converted.inputs[0].name]})
    (expected,) = theirs.values()
    (actual,) = ours.values()
    assert np.abs(actual - expected).max() <= HYBRID_RTOL * np.abs(expected).max()


def test_dynamic_range_api29() -> None:
    result = assert_model_parity("mobilenet_v2_dynamic_range", 29,
                                 reference="mobilenet_v2_dynamic_range_dequantized")
    assert OperationType.DEQUANTIZE in operation_types(result)  # the int8 filters stay int8 in the graph
    assert_close_to_hybrid_tflite(result)


def test_dynamic_range_api27_with_folded_weights() -> None:
    options = nnconv.ConversionOptions(fold_dynamic_range_weights=True, target=nnconv.Target.NNCONV)
    result = assert_model_parity("mobilenet_v2_dynamic_range", 27, options,
                                 reference="mobilenet_v2_dynamic_range_dequantized")
    assert not [t for t in operand_types(result) if "QUANT" in t.name]  # weights folded to float32
    assert_close_to_hybrid_tflite(result)


def test_dynamic_range_api27_refused_without_folding() -> None:
    err = refusal("mobilenet_v2_dynamic_range", 27)
    refused = [r for r in err.report.ops if not r.supported]  # type: ignore[attr-defined]
    hybrid = [r for r in refused if "int8" in r.input_dtypes]
    assert [r.op for r in hybrid] == ["CONV_2D"] * 4  # the four convolutions with int8 filters
    assert {r.min_api_level for r in hybrid} == {29}
    assert all(r.min_api_level is not None and r.min_api_level <= 29 for r in refused)


# -- EfficientNet squeeze-excite, LSTM, GRU: one partition at API 30 ----------------------------------
@pytest.mark.parametrize("name", ["efficientnet_se_float", "lstm_keras", "lstm_keras_int8", "gru_keras"])
def test_single_partition_api30(name: str) -> None:
    from nnconv.pipeline import analyse
    report, plan = analyse(path(name), 30, nnconv_options())
    assert report.ok, "; ".join(f"#{r.index} {r.op}: {r.reason}" for r in report.ops if not r.supported)
    assert len(plan.partitions) == 1, plan.summary_line()
    assert not plan.partitions[0].error, plan.partitions[0].error
    assert_model_parity(name, 30, nnconv_options())


def test_efficientnet_dynamic_batch_reshape_is_folded() -> None:
    """SHAPE -> STRIDED_SLICE -> PACK computes the reshape target from the static batch-1 input shape:
    the chain folds to a constant and the RESHAPE keeps a constant shape operand."""
    report = nnconv.check_model(path("efficientnet_se_float"), api_level=30, options=nnconv_options())
    by_op: dict[str, set] = {}
    for r in report.ops:
        by_op.setdefault(r.op, set()).add(r.status)
    assert by_op["SHAPE"] == by_op["STRIDED_SLICE"] == by_op["PACK"] == {Verdict.FOLDED}
    assert by_op["RESHAPE"] == {Verdict.LOWERED}


def test_lstm_is_one_sequence_op() -> None:
    ops = operation_types(nnconv.convert(path("lstm_keras"), api_level=30))
    assert OperationType.UNIDIRECTIONAL_SEQUENCE_LSTM in ops


def test_int8_lstm_is_quantized_lstm_steps_bit_exact() -> None:
    """The full-integer LSTM (TFLite's 8x8_16 kernel without layer norm, no projection, a hidden zero point,
    the output quantized apart from the state) as QUANTIZED_LSTM steps: TFLite's bytes on several inputs."""
    ops = operation_types(nnconv.convert(path("lstm_keras_int8"), api_level=30, options=nnconv_options()))
    assert ops.count(OperationType.QUANTIZED_LSTM) == 6 and OperationType.CONCATENATION in ops
    converted = nnconv.convert(path("lstm_keras_int8"), api_level=30, options=nnconv_options()).converted
    for seed in range(3):
        assert_bit_exact(path("lstm_keras_int8"), 30, random_inputs(converted.inputs, seed))


def test_gru_keeps_its_while_loop() -> None:
    result = nnconv.convert(path("gru_keras"), api_level=30, options=nnconv_options())
    assert OperationType.WHILE in [op.type for op in result.converted.model.main.operations]
    assert len(result.converted.model.referenced) == 2  # condition and body


# -- a custom op between builtins: partial delegation ----------------------------------------------------
def test_custom_op_middle_refused_whole() -> None:
    err = refusal("custom_op_middle", 30)
    refused = [r for r in err.report.ops if not r.supported]  # type: ignore[attr-defined]
    assert [(r.op, r.status) for r in refused] == [("CUSTOM(AudioSpectrogram)", Verdict.CUSTOM)]
    assert Code.CUSTOM_OPERATOR in {d.code for d in err.diagnostics}


def test_custom_op_middle_partitions_verify() -> None:
    """Two partitions around the CPU-only custom op, each verified on TFLite's own boundary tensors."""
    from nnconv.parity.partitioned import verify_model
    from nnconv.pipeline import analyse
    _report, plan = analyse(path("custom_op_middle"), 30)
    assert [p.ops for p in plan.partitions] == [[0, 1], [3, 4]], plan.summary_line()
    report = verify_model(path("custom_op_middle"), 30)
    assert report.passed, report.to_json()
    assert len(report.partitions) == 2  # type: ignore[attr-defined]


# -- every accepted level ------------------------------------------------------------------------------
SWEEP_LEVELS = (27, 28, 29, 30, 31, 33, 34, 35)  # 32 is 31 for NNAPI; each level may lower differently
REFERENCES = {"mobilenet_v2_dynamic_range": "mobilenet_v2_dynamic_range_dequantized"}


@pytest.mark.parametrize("name", sorted(p.stem for p in MODELS.glob("*.tflite") if p.stem != "custom_op_middle"))
def test_parity_at_every_accepted_level(name: str) -> None:
    """Wherever the checker accepts a fixture, the lowering at that level must match TFLite (the API gates
    switch lowerings: uint8+128 vs signed int8, composites below an op's level, operand forms...)."""
    accepted = [lvl for lvl in SWEEP_LEVELS if nnconv.check_model(path(name), api_level=lvl,
                                                                  options=nnconv_options()).ok]
    assert 30 in accepted, f"{name} is not accepted at API 30"
    for level in accepted:
        assert_model_parity(name, level, nnconv_options(), reference=REFERENCES.get(name))


# -- the README's quick start -------------------------------------------------------------------------
def test_quick_start_verify_command() -> None:
    from nnconv.cli import main
    res = CliRunner().invoke(main, ["verify", path("mobilenet_v2_float"), "--format", "json"])
    assert res.exit_code == 0, res.output
    assert '"passed": true' in res.output
    assert '"mode": "partitioned"' not in res.output  # the whole model converted, not partition by partition


def test_fixtures_are_small() -> None:
    sizes = {p.name: p.stat().st_size for p in MODELS.glob("*.tflite")}
    assert len(sizes) >= 12
    assert max(sizes.values()) < 400_000 and sum(sizes.values()) < 3_000_000, sizes


def test_benchmark_scripts_run(capsys: pytest.CaptureFixture[str]) -> None:
    """The benchmarks are not timed here, only kept working: one run each, JSON output."""
    import importlib.util
    import json

    def load(name: str):
        spec = importlib.util.spec_from_file_location(name, MODELS.parent.parent / "benchmarks" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)  # type: ignore[union-attr]
        return module

    out = MODELS.parent.parent / "benchmarks" / ".test-run.json"
    try:
        assert load("run").main([path("lstm_keras"), path("custom_op_middle"), "--runs", "1", "--warmup", "0",
                                 "--profile", "--no-guard", "--json", str(out)]) == 0
        report = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    rows = report["results"]
    assert rows[0]["nnconv_ms"] > 0 and rows[0]["builtin_ms"] > 0 and rows[0]["reference_ms"] > 0
    assert rows[0]["profile"]["operations"] == rows[0]["operations"] and "error" in rows[1]
    assert report["overhead_probe"]["us_per_op"] > 0
    try:
        assert load("floor").main([path("mobilenet_v2_float"), "--by-type", "--budget-ms", "1", "--json",
                                   str(out)]) == 0
        floor = json.loads(out.read_text())[0]
    finally:
        out.unlink(missing_ok=True)
    assert 0 < floor["floor_ms"] and floor["xnnpack_ms"] > 0 and floor["by_type"][0]["count"] >= 1
    assert floor["builtin_ms"] > 0 and floor["floor_over_builtin"] > 0
    try:
        assert load("paired").main([path("mobilenet_v2_int8"), path("custom_op_middle"), "--rounds", "1",
                                    "--batch", "2", "--json", str(out)]) == 0
        paired = json.loads(out.read_text())
    finally:
        out.unlink(missing_ok=True)
    assert paired[0]["quantized"] and paired[0]["batched_ms"] > 0 and paired[0]["batch_reason"] == ""
    assert all(paired[0][k] > 0 for k in ("ours_over_xnnpack", "ours_over_builtin", "batched_over_builtin"))
    assert "error" in paired[1]
    capsys.readouterr()
    # the conversion guard's memory figures (not its timings: no timed tests) on a small model
    guard = load("convert_guard").run_guard(4.0)
    assert guard["model_mb"] > 3.9 and guard["traced_peak_mb"] < 1.5 * guard["model_mb"], guard
    assert load("bench_convert").main(["--mb", "8", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert 7.9 < result["model_mb"] < 8.1 and result["nnapi_operations"] == 5
