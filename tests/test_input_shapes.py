"""`--input-shape NAME=D0,D1,...` (tflite/input_shapes.py): a model whose signature leaves extents open (-1)
converts, checks and verifies at the shapes the user chooses, as TFLite runs it after a strict input resize;
an extent the signature fixes, an unknown name, another rank or a malformed value are one line, exit 2."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

import nnconv
from harness import TfliteBuilder
from nnconv.cli import main
from nnconv.errors import InputDataError
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi.serialize import load
from nnconv.targets import Target
from nnconv.tflite.input_shapes import parse_input_shape
from nnconv.tflite.options import (Conv2DOptions, FullyConnectedOptions, PackOptions, ReducerOptions, ShapeOptions,
                                   StridedSliceOptions, TransposeConvOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import Padding, TensorType


def fcn_model() -> bytes:
    """x [1, 8, 8, 3] (signature [-1, -1, -1, 3]) -> 3x3 CONV_2D (SAME) to 4 channels -> MEAN over H, W ->
    FULLY_CONNECTED to 2; every computed tensor declared at the placeholder 1 with -1 in its signature, as
    TensorFlow's converter writes a model with an open batch and image size."""
    rng = np.random.default_rng(3)
    b = TfliteBuilder()
    x = b.input("x", (1, 8, 8, 3), np.float32, shape_signature=(-1, -1, -1, 3))
    w = b.const("w", rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    bias = b.const("b", rng.standard_normal(4).astype(np.float32))
    c = b.tensor("c", (1, 8, 8, 4), np.float32, shape_signature=(-1, -1, -1, 4))
    b.op(B.CONV_2D, [x, w, bias], [c], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1,
                                                      fused_activation_function=1))
    m = b.tensor("m", (1, 4), np.float32, shape_signature=(-1, 4))
    b.op(B.MEAN, [c, b.const("axes", np.array([1, 2], np.int32))], [m], ReducerOptions(keep_dims=False))
    y = b.tensor("y", (1, 2), np.float32, shape_signature=(-1, 2))
    b.op(B.FULLY_CONNECTED, [m, b.const("fw", rng.standard_normal((2, 4)).astype(np.float32)), -1], [y],
         FullyConnectedOptions())
    b.output(y)
    return b.finish()


def test_the_model_converts_and_runs_at_the_chosen_shape(tmp_path):
    model = fcn_model()
    converted = nnconv.convert(model, options=ConversionOptions(input_shapes=(("x", (3, 16, 12, 3)),))).converted
    assert converted.inputs[0].shape == (3, 16, 12, 3) and converted.outputs[0].shape == (3, 2)
    path = tmp_path / "fcn.tflite"
    path.write_bytes(model)
    out = tmp_path / "fcn.nnapi"
    convert = CliRunner().invoke(main, ["convert", str(path), "-o", str(out), "--input-shape", "x=3,16,12,3"])
    assert convert.exit_code == 0, convert.stderr
    assert tuple(load(str(out)).partitions[0].inputs[0].shape) == (3, 16, 12, 3)
    np.savez(tmp_path / "in.npz", x=np.ones((3, 16, 12, 3), np.float32))
    run = CliRunner().invoke(main, ["run", str(out), "--inputs", str(tmp_path / "in.npz"), "-o",
                                    str(tmp_path / "o.npz")])
    assert run.exit_code == 0, run.stderr
    assert np.load(tmp_path / "o.npz")["y"].shape == (3, 2)


def test_verify_resizes_tflite_alike(tmp_path):
    """TFLite's interpreter is resized to the same shape (`TfliteRunner.run`), so the outputs compare."""
    path = tmp_path / "fcn.tflite"
    path.write_bytes(fcn_model())
    for args in (["--input-shape", "x=2,5,7,3"], ["--input-shape", "x=1,8,8,3", "--per-op"], []):
        result = CliRunner().invoke(main, ["verify", str(path), *args, "--format", "json"])
        assert result.exit_code == 0, (args, result.stderr)
    shaped = CliRunner().invoke(main, ["verify", str(path), "--input-shape", "x=2,5,7,3", "--format", "json"])
    assert json.loads(shaped.stdout)["outputs"][0]["shape"] == [2, 2], shaped.stdout
    check = CliRunner().invoke(main, ["check", str(path), "--input-shape", "x=2,5,7,3", "--fail-on", "refused"])
    assert check.exit_code == 0, check.output


@pytest.mark.parametrize("value,fragment", [
    ("x=1,8,8,4", "input 'x' fixes dimension 3 at 3 (signature [-1, -1, -1, 3]); only its -1 dimensions can "
                  "change"),
    ("y=1,8,8,3", "the model has no input 'y' (its inputs: x)"),
    ("x=1,8,3", "input 'x' has rank 4 (signature [-1, -1, -1, 3]), not 3"),
    ("x=1,8,a,3", "--input-shape 'x=1,8,a,3': expected NAME=D0,D1,..."),
    ("x=1,0,8,3", "dimensions must be positive"),
    ("1,8,8,3", "expected NAME=D0,D1,..."),
])
def test_a_shape_the_model_cannot_take_is_one_line(tmp_path, value, fragment):
    path = tmp_path / "fcn.tflite"
    path.write_bytes(fcn_model())
    for command in (["check", str(path)], ["convert", str(path), "-o", str(tmp_path / "o.nnapi")],
                    ["verify", str(path)]):
        result = CliRunner().invoke(main, [*command, "--input-shape", value])
        errors = [ln for ln in result.stderr.splitlines() if ln.startswith("nnconv: error:")]
        assert result.exit_code == 2 and len(errors) == 1 and fragment in errors[0], (command, result.stderr)
    assert not (tmp_path / "o.nnapi").exists()


def test_parse_input_shape():
    assert parse_input_shape("serving_default_x:0=1,224,224,3") == ("serving_default_x:0", (1, 224, 224, 3))
    with pytest.raises(InputDataError):
        parse_input_shape("=1,2")


def test_inspect_shows_the_open_extents(tmp_path):
    """`inspect` names the signature of an input that leaves extents open, so the user sees what
    --input-shape can choose; a static input has no signature entry."""
    path = tmp_path / "fcn.tflite"
    path.write_bytes(fcn_model())
    result = CliRunner().invoke(main, ["inspect", str(path), "--format", "json"])
    inputs = json.loads(result.stdout)["subgraphs"][0]["inputs"]
    assert inputs == [{"name": "x", "dtype": "float32", "shape": [1, 8, 8, 3], "shape_signature": [-1, -1, -1, 3]}]
    text = CliRunner().invoke(main, ["inspect", str(path)]).stdout
    assert "x float32[1, 8, 8, 3] (signature [-1, -1, -1, 3])" in text


def keras_transpose_conv_model() -> bytes:
    """Keras' Conv2DTranspose with an open batch, as TensorFlow writes it: output_shape = PACK(SHAPE(x)[0],
    16, 16, 6), a TRANSPOSE_CONV whose output is declared at the placeholder batch 1."""
    rng = np.random.default_rng(4)
    b = TfliteBuilder()
    x = b.input("img", (1, 8, 8, 4), np.float32, shape_signature=(-1, 8, 8, 4))
    shape = b.tensor("shape", (4,), np.int32)
    b.op(B.SHAPE, [x], [shape], ShapeOptions(out_type=TensorType.INT32))
    batch = b.tensor("batch", (), np.int32)
    slice_args = [b.const(name, np.array([v], np.int32)) for name, v in (("begin", 0), ("end", 1), ("strides", 1))]
    b.op(B.STRIDED_SLICE, [shape, *slice_args], [batch], StridedSliceOptions(shrink_axis_mask=1))
    out_shape = b.tensor("out_shape", (4,), np.int32)
    b.op(B.PACK, [batch, *(b.const(f"d{k}", np.array(v, np.int32)) for k, v in enumerate((16, 16, 6)))], [out_shape],
         PackOptions(values_count=4, axis=0))
    y = b.tensor("y", (1, 16, 16, 6), np.float32, shape_signature=(-1, 16, 16, 6))
    b.op(B.TRANSPOSE_CONV, [out_shape, b.const("w", rng.standard_normal((6, 3, 3, 4)).astype(np.float32)), x], [y],
         TransposeConvOptions(padding=Padding.SAME, stride_w=2, stride_h=2))
    b.output(y)
    return b.finish()


def test_a_transpose_conv_takes_the_shape_it_computes(tmp_path):
    """TRANSPOSE_CONV's Prepare sizes its output from output_shape, which a resized batch changes (once
    SHAPE folds): static-shapes computes it (it was left at the placeholder and the op refused), so the
    model converts, runs and matches TFLite at batch 3."""
    model = keras_transpose_conv_model()
    options = ConversionOptions(input_shapes=(("img", (3, 8, 8, 4)),), target=Target.NNCONV)
    assert nnconv.convert(model, options=options).converted.outputs[0].shape == (3, 16, 16, 6)
    path = tmp_path / "tconv.tflite"
    path.write_bytes(model)
    result = CliRunner().invoke(main, ["verify", str(path), "--target", "nnconv", "--input-shape", "img=3,8,8,4"])
    assert result.exit_code == 0, result.output
