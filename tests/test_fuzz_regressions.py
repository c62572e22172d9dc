"""Mutants the fuzzer found (tests/data/fuzz_regressions/), each of which once ended in exit 4 or in check and
convert disagreeing. Now: check and convert give the same documented outcome, with one error line."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

from nnconv.cli import main
from nnconv.errors import InputDataError
from nnconv.npz import load_npz
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator

DATA = pathlib.Path(__file__).resolve().parent / "data" / "fuzz_regressions"


def _error_lines(stderr: str) -> list[str]:
    """The `nnconv: error:` lines of a command's stderr (each failure prints exactly one)."""
    return [line for line in stderr.splitlines() if line.startswith("nnconv: error:")]


CASES = [
    # (file, exit code of check --fail-on refused, of convert, a fragment of convert's error line or, for a
    # refused op, of its diagnostic above that line)
    pytest.param("lstm_bias_rank2.tflite", 2, 2, "input 13 'arith.constant8' has shape [8, 8]", id="lstm-bias"),
    # Mutants TFLite's interpreter refuses before running anything (tests/tflite/test_flatbuffer_verifier.py):
    # the flatbuffers Verifier's failures or InterpreterBuilder's, and so does the reader now (exit 2)
    pytest.param("lstm_state_unknown_shape.tflite", 2, 2, "TFLite refuses this file: tensor 3 of subgraph 0 has "
                 "shape [-1, -1], whose size TFLite cannot compute", id="lstm-state"),
    pytest.param("int8_mean_without_scale.tflite", 2, 2, "TFLite refuses this file: not a valid flatbuffer "
                 "(model.subgraphs[0].tensors[3].name: its offset at byte 540 is 0", id="int8-mean-no-scale"),
    pytest.param("depthwise_dilation_65536.tflite", 2, 2, "TFLite refuses this file: not a valid flatbuffer "
                 "(model.subgraphs[0].tensors[45].name: string at byte 36564 claims 4294967167 bytes",
                 id="dilation-65536"),
    pytest.param("lstm_dimension_over_uint32.tflite", 2, 2, "dimensions [6442450944, 3] do not fit in uint32",
                 id="dimension-over-uint32"),
    pytest.param("read_before_write.tflite", 2, 2, "TFLite refuses this file: tensor 16 of subgraph 0 has shape "
                 "[1, 3, 3, 48], more than its buffer's 0 bytes hold", id="read-before-write"),
    # The second long run's leftovers and the next run's findings (docs/robustness.md): once exit 4 in the
    # lowering (options or mandatory tensors missing, shapes the lowering divided by) or in `run`'s kernels.
    pytest.param("lstm_options_missing.tflite", 1, 3, "its options are none, not the "
                 "UnidirectionalSequenceLSTMOptions", id="lstm-options-missing"),
    pytest.param("fully_connected_weights_omitted.tflite", 1, 3, "FULLY_CONNECTED: weights is missing",
                 id="fc-weights-omitted"),
    pytest.param("hybrid_fc_input_omitted.tflite", 2, 2, "TFLite refuses this file: not a valid flatbuffer "
                 "(model.operator_codes[0]: OperatorCode table at byte 536: its vtable at byte 524 has an odd size",
                 id="hybrid-fc-input-omitted"),
    pytest.param("lstm_recurrent_weights_columns.tflite", 2, 2, "input 5 'arith.constant6' has shape [8, 5]; with "
                 "8 cell units, 5 inputs and 8 outputs it must be [8, 8]", id="lstm-weight-columns"),
    # its DEQUANTIZE declares [48] for a [1, 3, 3, 96] input: taken as TFLite's Prepare computes it, it is a
    # 4-D bias, which the NNAPI runtime refuses
    pytest.param("dequantize_output_shape_differs.tflite", 1, 3, "input 2 (bias) must be 1-D, got [1, 3, 3, 96]",
                 id="dequantize-shape"),
    pytest.param("while_body_add_input_omitted.tflite", 1, 3, "body subgraph 2, op #0 ADD: input 0 is omitted "
                 "(-1) but the op needs it", id="while-body-add-input-omitted"),
    pytest.param("sparse_scalar.tflite", 2, 2, "TFLite refuses this file: not a valid flatbuffer "
                 "(model.subgraphs[0].tensors[1].shape: vector at byte 489: its length is not 4-byte aligned)",
                 id="sparse-scalar"),
    pytest.param("lstm_state_huge_batch.tflite", 2, 2, "variable tensor of shape [1900671690, 8] would take "
                 "over 2 GiB", id="lstm-state-huge-batch"),
    pytest.param("output_is_an_input.tflite", 3, 3, "output tensor 'x' is not computed by any lowered "
                 "operation", id="output-is-an-input"),
    # A 6-minute run of seed 13 on session 11's code: both once exit 4 in the lowering.
    pytest.param("lstm_cell_state_rank1.tflite", 2, 2, "input 19 'arith.constant11' has shape [8]; with 8 cell "
                 "units, 5 inputs and 8 outputs it must be [1, 8]", id="lstm-cell-state-rank1"),
    pytest.param("mean_with_unpack_options.tflite", 2, 2, "TFLite refuses this file: not a valid flatbuffer "
                 "(model.subgraphs[0].operators[1].builtin_options: UnpackOptions table: field 'num' misaligned at "
                 "byte 275", id="mean-with-unpack-options"),
    # Seed 14 (12 minutes) after those fixes: a DENSIFY whose dense shape differs from its output's, read by
    # a FULLY_CONNECTED as a constant (exit 4); see also the model input flagged variable below.
    pytest.param("densify_shape_differs_feeding_fc.tflite", 1, 3, "densified shape [6, 8388616] differs from the "
                 "output's [6, 8]", id="densify-shape-differs"),
    pytest.param("densify_huge_shape_feeding_fc.tflite", 2, 2, "TFLite refuses this file: not a valid flatbuffer "
                 "(model.subgraphs[0].tensors[1].name: string at byte 708 claims 134220800 bytes",
                 id="densify-huge-shape"),
    # Seed 22 (session 15): a CONV_2D whose bias has 72 values for 64 filters passed check and failed in run's
    # kernel (exit 4); the bias length is a prepare rule of the reference (nnapi/operations/conv.py)
    pytest.param("conv_bias_length_differs.tflite", 1, 3, "input 2 (bias) has 72 values for the filter's 64 "
                 "output channels", id="conv-bias-length"),
    # Seed 26 (session 16), on the new int8 LSTM fixture: a weight slot pointing at a tensor without
    # quantization (exit 4 in the lowering, which read its scale)
    pytest.param("int8_lstm_weight_without_scale.tflite", 2, 2, "TFLite refuses this file: not a valid flatbuffer "
                 "(model.subgraphs[0].tensors[8].quantization: its offset at byte 3204 is 0",
                 id="int8-lstm-weight-without-scale"),
    # seed 27: its cell state's scale turned infinite (exit 4: the check took log2 of it)
    pytest.param("int8_lstm_cell_scale_infinite.tflite", 1, 3, "has no finite positive quantization scale",
                 id="int8-lstm-cell-scale-infinite"),
]


@pytest.mark.parametrize("name,check_code,convert_code,fragment", CASES)
def test_mutant_has_one_documented_outcome(tmp_path, name, check_code, convert_code, fragment):
    model = str(DATA / name)
    # nnconv's own checks of these mutants (the delegate target's outcomes for the recorded ones are pinned
    # by tests/delegate/test_recordings.py)
    check = CliRunner().invoke(main, ["check", model, "--fail-on", "refused", "--format", "json",
                                      "--target", "nnconv"])
    assert check.exit_code == check_code, check.stderr
    out = tmp_path / "m.nnapi"
    convert = CliRunner().invoke(main, ["convert", model, "-o", str(out), "--target", "nnconv"])
    assert convert.exit_code == convert_code, convert.stderr
    errors = _error_lines(convert.stderr)
    assert len(errors) == 1 and fragment in (errors[0] if convert_code != 3 else convert.stderr), convert.stderr
    assert not out.exists()


def test_operator_code_fields_that_disagree_read_as_tflite_reads_them():
    """A mutant whose operator code says CONCATENATION (2) in deprecated_builtin_code and CONV_2D (3) in
    builtin_code, with Conv2DOptions. It was once refused as a CONCATENATION with the wrong options; TFLite
    takes the larger field, reads a CONV_2D and runs it, and so do check and verify."""
    model = str(DATA / "concatenation_opcode_with_conv_options.tflite")
    assert [op.builtin_code for op in read_model(model).subgraphs[0].operators][-1] == BuiltinOperator.CONV_2D
    for args in (["check", model, "--fail-on", "refused", "--target", "nnconv"], ["verify", model, "--target", "nnconv"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output


def test_a_wrong_static_output_size_is_taken_as_tflite_computes_it():
    """A mutant MEAN declaring [256, 4] for [1, 6, 5, 4] over axes [1, 2]: TFLite's Prepare resizes the output
    to [1, 4] and runs the model, and so do check and verify (both engines agree)."""
    model = str(DATA / "int8_mean_output_size.tflite")
    for args in (["check", model, "--fail-on", "refused", "--target", "nnconv"], ["verify", model, "--target", "nnconv"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output


def test_an_unscaled_int4_constant_reads_as_tflite_reads_it():
    """A mutant turning a float16 filter behind DEQUANTIZE into int4 without quantization parameters (once
    refused: nnconv had no int4). TFLite dequantizes it with scale 0 and runs the model, and so do check and
    verify now that constant int4 weights lower (rules/quantize.py)."""
    model = str(DATA / "dequantize_int4_constant.tflite")
    for args in (["check", model, "--fail-on", "refused", "--target", "nnconv"], ["verify", model, "--target", "nnconv"]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output


def test_a_computed_extent_beyond_int32_is_not_taken(tmp_path):
    """Seed 21 (session 14): a CUSTOM op declaring a [2^30, 3, 129] output feeds a FULLY_CONNECTED whose
    declared [3, 6] output static-shapes overruled with the computed [3 * 2^30, 6], which the .nnapi
    writer could not store (exit 4). TFLite's dimensions are int32: such a shape is left alone, and the
    model converts partially as before."""
    model = str(DATA / "custom_op_huge_output_feeding_fc.tflite")
    out = tmp_path / "m.nnapi"
    convert = CliRunner().invoke(main, ["convert", model, "-o", str(out), "--allow-partial"])
    assert convert.exit_code == 0, convert.stderr
    check = CliRunner().invoke(main, ["check", model, "--fail-on", "refused"])
    assert check.exit_code == 1 and "AudioSpectrogram" in check.output


def test_billions_of_time_steps_are_not_unrolled(tmp_path):
    """Seed 15: a sequence LSTM whose input claims 2^30 time steps. Below API 29 the op is unrolled step by
    step, and check (which also asks each op's lowest level) hung unrolling it; now more than
    MAX_UNROLLED_STEPS steps need the native operation of API 29 (exit 1 under --fail-on refused at 28, and
    convert 3), while at API 30 the native operation takes it."""
    model = str(DATA / "lstm_billion_time_steps.tflite")
    check = CliRunner().invoke(main, ["check", model, "--api-level", "28", "--fail-on", "refused", "--format",
                                      "json", "--target", "nnconv"])
    assert check.exit_code == 1 and "unrolling 1073741824 time steps" in check.stdout, check.output
    out = tmp_path / "m.nnapi"
    convert = CliRunner().invoke(main, ["convert", model, "--api-level", "28", "-o", str(out), "--target", "nnconv"])
    assert convert.exit_code == 3 and not out.exists(), convert.stderr
    assert CliRunner().invoke(main, ["check", model, "--api-level", "30", "--fail-on", "refused",
                                     "--target", "nnconv"]).exit_code == 0


@pytest.mark.parametrize("name,inputs,fragment", [
    # seed 15: a converted int8 model's AVERAGE_POOL_2D output retyped FLOAT32 (exit 4 in the quantized kernel)
    pytest.param("average_pool_output_type_differs.nnapi", {"image": np.zeros((1, 64, 64, 3), np.int8)},
                 "AVERAGE_POOL_2D: output 0 is FLOAT32", id="average-pool-output-type"),
    pytest.param("softmax_output_retyped_float32.nnapi", {"x": np.zeros((1, 10), np.uint8)},
                 "SOFTMAX: output 0 is FLOAT32, input 0 is TENSOR_QUANT8_ASYMM", id="softmax-output-type"),
    pytest.param("conv_filter_and_bias_slots_name_the_input.nnapi", {"x": np.zeros((1, 6, 5, 3), np.int8)},
                 "CONV_2D: a TENSOR_QUANT8_ASYMM_SIGNED input needs a TENSOR_QUANT8_ASYMM_SIGNED or "
                 "TENSOR_QUANT8_SYMM_PER_CHANNEL filter and a TENSOR_INT32 bias", id="conv-bias-type"),
    # seed 22: an opcode turned HASHTABLE_LOOKUP inside a WHILE body, its values a scalar temporary
    pytest.param("while_hashtable_lookup_scalar_values.nnapi", {"i": np.zeros(1, np.int32),
                                                                "x": np.zeros((2, 2), np.float32)},
                 "HASHTABLE_LOOKUP: values must have at least one dimension", id="hashtable-scalar-values"),
    # seed 29: an operation turned AVERAGE_POOL_2D with no inputs (exit 4 in the kernel)
    pytest.param("average_pool_without_inputs.nnapi", {"x": np.zeros((1, 6, 5, 3), np.int8)},
                 "AVERAGE_POOL_2D: takes 7 or 8 inputs (implicit padding) or 10 or 11 (explicit padding), got 0",
                 id="average-pool-without-inputs"),
    # seed 26: a QUANTIZED_LSTM step whose recurrent weights claim [8, 7] (exit 4 in the kernel's matmul)
    pytest.param("quantized_lstm_weight_shape_differs.nnapi", {"sequence": np.zeros((1, 6, 5), np.int8)},
                 "QUANTIZED_LSTM: input 6 has dimensions [8, 7], expected [8, 8]", id="qlstm-weight-shape"),
    # seed 27: its cell state's scale -0.0 (exit 4: the kernel took its log)
    pytest.param("quantized_lstm_cell_scale_negative_zero.nnapi", {"sequence": np.zeros((1, 6, 5), np.int8)},
                 "QUANTIZED_LSTM: input 19 (cell state) scale -0.0 must be a power of two", id="qlstm-cell-scale"),
])
def test_operand_types_the_reference_validates_are_checked_on_load(tmp_path, name, inputs, fragment):
    """Seeds 15 and 16: outputs retyped FLOAT32 (a quantized AVERAGE_POOL_2D, a quantized SOFTMAX), a CONV_2D whose
    filter and bias slots name its input: exit 4 in the kernels, now the loader's refusal (exit 2), from
    the reference's type rules (`OperationSpec.same_type_output`, `operations/conv.py`)."""
    np.savez(tmp_path / "in.npz", **inputs)
    result = CliRunner().invoke(main, ["run", str(DATA / name), "--inputs", str(tmp_path / "in.npz"), "-o",
                                       str(tmp_path / "o.npz")])
    assert result.exit_code == 2, result.stderr
    assert fragment in result.stderr and not (tmp_path / "o.npz").exists()


def test_a_model_input_flagged_variable_converts_and_checks_alike(tmp_path):
    """Seed 14: the LSTM's sequence input (a subgraph input) flagged as a variable tensor. check lowered the
    op alone without it as an input (variables are recurrent state, lowered as zero constants), so the
    runtime refused the partition (exit 2) while convert, which takes the subgraph inputs as they are,
    wrote the model (exit 0). The mutant also flagged constant weights variable, which TFLite's
    InterpreterBuilder refuses ("Tensor 1 is a variable tensor with buffer"): both now refuse it alike, with
    the same exit code and the same one error line."""
    model = str(DATA / "lstm_input_flagged_variable.tflite")
    check = CliRunner().invoke(main, ["check", model, "--fail-on", "refused", "--format", "json"])
    out = tmp_path / "m.nnapi"
    convert = CliRunner().invoke(main, ["convert", model, "-o", str(out)])
    assert (check.exit_code, convert.exit_code) == (2, 2) and not out.exists(), check.stderr + convert.stderr
    assert check.stdout == "" and _error_lines(check.stderr) == _error_lines(convert.stderr) == [
        f"nnconv: error: {model}: TFLite refuses this file: tensor 1 of subgraph 0 is a variable tensor with a "
        "constant buffer"]


def test_an_nnapi_file_whose_operation_the_runtime_refuses_is_bad_input(tmp_path):
    """A bit flip in a converted uint8 SOFTMAX's output scale: the loader validates each operation as Android
    does before compiling, so `run` says exit 2 naming the operation (it was exit 4, 'please report', as if
    nnconv had written it)."""
    np.savez(tmp_path / "in.npz", x=np.zeros((1, 10), np.uint8))
    result = CliRunner().invoke(main, ["run", str(DATA / "softmax_output_scale_bit_flip.nnapi"), "--inputs",
                                       str(tmp_path / "in.npz"), "-o", str(tmp_path / "o.npz")])
    assert result.exit_code == 2, result.stderr
    errors = _error_lines(result.stderr)
    assert len(errors) == 1 and "partition 0: the NNAPI runtime refuses operation 1 SOFTMAX: output 0 must " \
        "have scale 1/256" in errors[0], result.stderr
    assert not (tmp_path / "o.npz").exists()


@pytest.mark.parametrize("name,inputs,fragment", [
    pytest.param("add_operation_one_input.nnapi", {"x": np.zeros((1, 10), np.uint8)}, "ADD: input 1 is required "
                 "but missing", id="add-one-input"),
    pytest.param("mul_operation_one_input.nnapi", {"x": np.zeros((1, 6, 5, 3), np.int8)}, "MUL: input 1 is "
                 "required but missing", id="mul-one-input"),
    pytest.param("while_l2_pool_without_input.nnapi", {"i": np.zeros(1, np.int32), "x": np.ones((2, 2), np.float32)},
                 "L2_POOL_2D: takes 7 or 8 inputs (implicit padding) or 10 or 11 (explicit padding), got 0",
                 id="l2-pool-no-input"),  # the validator now refuses it on load (was the kernel's message)
    # seed 10 of the long run: an LSTM slot naming another weight operand was a numpy error (exit 4)
    pytest.param("lstm_recurrent_weight_slot_swapped.nnapi", {"sequence": np.zeros((1, 6, 5), np.float32)},
                 "recurrent weights of the cell gate: shape [8, 5], expected [8, 8]", id="lstm-recurrent-weight"),
    pytest.param("lstm_bias_slot_swapped.nnapi", {"sequence": np.zeros((1, 6, 5), np.float32)},
                 "bias of the output gate: shape [8, 5], expected [8]", id="lstm-bias"),
])
def test_an_operation_missing_an_operand_fails_in_one_line(tmp_path, name, inputs, fragment):
    """.nnapi mutants whose operations lost operands or name the wrong ones: the kernels name the slot (exit
    2, the runtime's OP_FAILED) instead of an IndexError or a numpy shape error (exit 4)."""
    np.savez(tmp_path / "in.npz", **inputs)
    result = CliRunner().invoke(main, ["run", str(DATA / name), "--inputs", str(tmp_path / "in.npz"), "-o",
                                       str(tmp_path / "o.npz")])
    errors = _error_lines(result.stderr)
    assert result.exit_code == 2 and len(errors) == 1 and fragment in errors[0], result.stderr
    assert not (tmp_path / "o.npz").exists()


def test_a_model_without_operators_converts_as_check_reports_it(tmp_path):
    """A mutant of the custom-op seed with no tensor and no operator left: check said 0 (0 ops, 100%) while
    convert --allow-partial said 3 ("none of the 0 ops can be lowered"). Its subgraph has no tensors vector at
    all, which TFLite's InterpreterBuilder refuses ("Did not get tensors in subgraph 0"): check and convert,
    with or without --allow-partial, now refuse it alike (exit 2, the same one error line)."""
    model = str(DATA / "custom_op_model_without_ops.tflite")
    check = CliRunner().invoke(main, ["check", model, "--format", "json"])
    refusal = [f"nnconv: error: {model}: TFLite refuses this file: subgraph 0 has no tensors vector"]
    assert check.exit_code == 2 and _error_lines(check.stderr) == refusal, check.stderr
    for extra in ([], ["--allow-partial"]):
        out = tmp_path / "m.nnapi"
        result = CliRunner().invoke(main, ["convert", model, "-o", str(out), *extra])
        assert result.exit_code == 2 and not out.exists(), result.stderr
        assert _error_lines(result.stderr) == refusal, result.stderr



def test_zip_member_with_an_empty_name_is_one_line():
    with pytest.raises(InputDataError, match="not a readable .npz file"):
        load_npz(str(DATA / "zip_empty_member_name.npz"), 1 << 20)


def test_the_dilation_refusal_names_the_option():
    """The mutant's dilation of 65536 came with a tensor name whose length claims 4 GiB: TFLite's Verifier refuses
    the file, and so does check, naming the field (the option itself is never reached)."""
    result = CliRunner().invoke(main, ["check", str(DATA / "depthwise_dilation_65536.tflite"), "--format", "json"])
    assert result.exit_code == 2 and "tensors[45].name: string at byte 36564" in result.stderr, result.output
