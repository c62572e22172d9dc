"""Data as users have it (issue 35): NCHW image inputs (torchvision / litert-torch models), per-channel
mean/std normalization, quantized inputs from float images, a single `.npy` with a sample axis, and a
corrupt image that becomes a row with its error while the other samples are compared."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

from harness import QuantParams, TfliteBuilder
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_OK
from nnconv.nnapi.program import IoTensor
from nnconv.parity.inputs import image_inputs
from nnconv.parity.preprocess import ImagePreprocessing
from nnconv.parity.session import VerifyOptions, verify
from nnconv.tflite.options import AddOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

NCHW = (1, 3, 8, 6)
TORCH_MEAN, TORCH_STD = (123.675, 116.28, 103.53), (58.395, 57.12, 57.375)


def _ppm(path: pathlib.Path, pixels: np.ndarray) -> None:
    h, w, _ = pixels.shape
    path.write_bytes(b"P6\n%d %d\n255\n" % (w, h) + pixels.astype(np.uint8).tobytes())


def _colour_image(path: pathlib.Path) -> np.ndarray:
    """An 8x6 image whose three channels differ: R rises along H, G along W, B is constant."""
    h, w = np.meshgrid(np.arange(8), np.arange(6), indexing="ij")
    pixels = np.stack([h * 30, w * 50, np.full((8, 6), 200)], axis=-1)
    _ppm(path, pixels)
    return pixels.astype(np.float64)


def _model(dtype=np.float32, q: QuantParams | None = None) -> bytes:
    """x [1, 3, 8, 6] (NCHW, as PyTorch exports it) + a per-channel constant."""
    b = TfliteBuilder()
    x = b.input("x", NCHW, dtype, quant=q)
    y = b.tensor("y", NCHW, dtype, quant=q)
    c = np.zeros(NCHW, np.float32) if q is None else np.full(NCHW, q.zero_point, dtype)
    b.op(B.ADD, [x, b.const("c", c.astype(dtype), quant=q)], [y], AddOptions())
    b.output(y)
    return b.finish()


def test_nchw_images_with_per_channel_normalization(tmp_path):
    pixels = _colour_image(tmp_path / "img.ppm")
    spec = IoTensor("x", 0, "float32", NCHW)
    got = image_inputs(tmp_path / "img.ppm", [spec], ImagePreprocessing(mean=TORCH_MEAN, std=TORCH_STD))["x"]
    want = ((pixels - np.array(TORCH_MEAN)) / np.array(TORCH_STD)).transpose(2, 0, 1)[None].astype(np.float32)
    np.testing.assert_array_equal(got, want)
    # the default maps pixels onto [-1, 1], channel by channel, in the input's layout
    np.testing.assert_allclose(image_inputs(tmp_path / "img.ppm", [spec])["x"][0, 2], 200 / 127.5 - 1, rtol=1e-6)


def test_quantized_nchw_input_from_a_float_normalized_image(tmp_path):
    pixels = _colour_image(tmp_path / "img.ppm")
    spec = IoTensor("x", 0, "int8", NCHW, scale=1 / 64, zero_point=-3)
    got = image_inputs(tmp_path / "img.ppm", [spec], ImagePreprocessing(mean=(127.5,), std=(127.5,)))["x"]
    real = (pixels / 127.5 - 1).transpose(2, 0, 1)[None]
    assert got.dtype == np.int8 and np.array_equal(got, np.clip(np.rint(real * 64) - 3, -128, 127).astype(np.int8))


def test_verify_nchw_image_end_to_end(tmp_path):
    _colour_image(tmp_path / "img.ppm")
    (tmp_path / "m.tflite").write_bytes(_model())
    res = CliRunner().invoke(main, ["verify", str(tmp_path / "m.tflite"), "--image", str(tmp_path / "img.ppm"),
                                    "--input-mean", ",".join(map(str, TORCH_MEAN)), "--input-std",
                                    ",".join(map(str, TORCH_STD)), "--format", "json"])
    assert res.exit_code == EXIT_OK, res.output
    data = json.loads(res.stdout)
    assert data["inputs"]["preprocessing"] == {"layout": None, "mean": list(TORCH_MEAN), "std": list(TORCH_STD),
                                               "range": None}


@pytest.mark.parametrize("args, message", [
    (["--input-mean", "1,2"], "--input-mean gives 2 values; the image input has 3 channel(s)"),
    (["--input-mean", "0.5", "--input-range", "0", "1"], "--input-range and --input-mean/--input-std"),
    (["--input-std", "0"], "a standard deviation of 0"),
    (["--input-layout", "nhwc"], "one image input [1, H, W, 1 or 3] (--input-layout nhwc)"),
    (["--input-mean", "x"], "give numbers"),
])
def test_preprocessing_errors_are_one_line(tmp_path, args, message):
    _colour_image(tmp_path / "img.ppm")
    (tmp_path / "m.tflite").write_bytes(_model())
    res = CliRunner().invoke(main, ["verify", str(tmp_path / "m.tflite"), "--image", str(tmp_path / "img.ppm"),
                                    *args])
    assert res.exit_code == EXIT_BAD_INPUT and message in res.stderr and len(res.stderr.splitlines()) == 1


def test_preprocessing_needs_images(tmp_path):
    (tmp_path / "m.tflite").write_bytes(_model())
    res = CliRunner().invoke(main, ["verify", str(tmp_path / "m.tflite"), "--input-mean", "127.5"])
    assert res.exit_code == EXIT_BAD_INPUT and "need --image or --dataset" in res.stderr


def test_a_corrupt_image_is_a_row_and_the_others_are_compared(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    for name in ("a.ppm", "c.ppm"):
        _colour_image(folder / name)
    (folder / "b.ppm").write_bytes(b"P6\n8 6\n255\n" + b"\x00" * 10)  # truncated
    (tmp_path / "m.tflite").write_bytes(_model())
    report = verify(str(tmp_path / "m.tflite"), VerifyOptions(dataset=str(folder)))
    assert report.parity_passed and report.dataset["samples"] == 2
    assert [u["sample"] for u in report.dataset["unreadable"]] == ["b.ppm"]
    assert "truncated" in report.dataset["unreadable"][0]["error"]
    res = CliRunner().invoke(main, ["verify", str(tmp_path / "m.tflite"), "--dataset", str(folder)])
    assert res.exit_code == EXIT_BAD_INPUT  # the readable samples pass; the corrupt one is bad input
    assert "2 samples, 0 failing, 1 unreadable" in res.stdout and "sample b.ppm: ERROR" in res.stdout
    assert res.stderr.startswith("nnconv: error: 1 of 3 samples of")


def test_one_npy_with_a_sample_axis(tmp_path):
    (tmp_path / "m.tflite").write_bytes(_model())
    rng = np.random.default_rng(0)
    np.save(tmp_path / "batch.npy", rng.uniform(-1, 1, (5, 3, 8, 6)).astype(np.float32))  # [N, C, H, W]
    report = verify(str(tmp_path / "m.tflite"), VerifyOptions(dataset=str(tmp_path / "batch.npy")))
    assert report.passed and report.dataset["samples"] == 5
    np.save(tmp_path / "full.npy", rng.uniform(-1, 1, (4, *NCHW)).astype(np.float32))  # [N, 1, C, H, W]
    assert verify(str(tmp_path / "m.tflite"), VerifyOptions(dataset=str(tmp_path / "full.npy"))).dataset["samples"] == 4


def test_float_samples_for_a_quantized_input_are_quantized(tmp_path):
    q = QuantParams(1 / 64, -3)
    (tmp_path / "q.tflite").write_bytes(_model(np.int8, q))
    np.save(tmp_path / "floats.npy", np.random.default_rng(1).uniform(-1, 1, (3, 3, 8, 6)))  # float64 images
    report = verify(str(tmp_path / "q.tflite"), VerifyOptions(dataset=str(tmp_path / "floats.npy")))
    assert report.passed and report.dataset["samples"] == 3
