"""`verify --image` (resize, normalization, quantized range) and the Model Explorer node-data overlays of
`check --node-data` and `verify --per-op --node-data`."""

from __future__ import annotations

import json
import pathlib

import numpy as np
import pytest
from click.testing import CliRunner

from chain_models import add_mul_sub_chain
from harness import QuantParams, TfliteBuilder
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.program import IoTensor
from nnconv.parity import inputs as parity_inputs
from nnconv.parity.inputs import image_inputs, read_image, resize_bilinear
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import AddOptions
from nnconv.tflite.schema_enums import BuiltinOperator as B

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "models"


def _ppm(path: pathlib.Path, pixels: np.ndarray) -> None:
    h, w, _ = pixels.shape
    path.write_bytes(b"P6\n# made by a test\n%d %d\n255\n" % (w, h) + pixels.astype(np.uint8).tobytes())


def test_ppm_is_read_without_pillow(tmp_path, monkeypatch):
    pixels = np.arange(4 * 3 * 3).reshape(4, 3, 3) * 7
    _ppm(tmp_path / "a.ppm", pixels)
    monkeypatch.setitem(__import__("sys").modules, "PIL", None)  # as if Pillow were not installed
    assert np.array_equal(read_image(tmp_path / "a.ppm", 3), pixels)
    (tmp_path / "a.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(parity_inputs.InputDataError, match="install Pillow"):
        read_image(tmp_path / "a.png", 3)


def test_bilinear_resize_half_pixel_centers():
    src = np.array([[0.0, 10.0], [20.0, 30.0]])[:, :, None]
    out = resize_bilinear(src, 4, 4)[:, :, 0]
    # half-pixel centers: output x 0..3 samples input x -0.25, 0.25, 0.75, 1.25 (clamped to 0..1)
    assert out[0].tolist() == [0.0, 2.5, 7.5, 10.0] and out[:, 0].tolist() == [0.0, 5.0, 15.0, 20.0]
    assert np.array_equal(resize_bilinear(src, 2, 2), src)


def test_image_to_float_and_quantized_inputs(tmp_path):
    _ppm(tmp_path / "img.ppm", np.full((8, 6, 3), 255))  # white
    white = tmp_path / "img.ppm"
    f = IoTensor("x", 0, "float32", (1, 4, 4, 3))
    assert np.all(image_inputs(white, [f])["x"] == 1.0)  # default range [-1, 1]
    assert np.all(image_inputs(white, [f], (0.0, 0.5))["x"] == 0.5)
    q = IoTensor("x", 0, "int8", (1, 4, 4, 3), scale=1 / 128, zero_point=-128)  # real range [0, 1.99]
    values = image_inputs(white, [q], (0.0, 1.0))["x"]
    assert values.dtype == np.int8 and np.all(values == 0)  # 1.0 / (1/128) - 128
    with pytest.raises(parity_inputs.InputDataError, match="one image input"):
        image_inputs(white, [IoTensor("x", 0, "float32", (1, 10))])


def test_cli_image(tmp_path):
    b = TfliteBuilder()
    x = b.input("x", (1, 5, 4, 3), np.uint8, quant=QuantParams(1 / 255, 0))
    y = b.tensor("y", (1, 5, 4, 3), np.uint8, quant=QuantParams(2 / 255, 0))
    b.op(B.ADD, [x, x], [y], AddOptions())
    b.output(y)
    model = tmp_path / "img.tflite"
    model.write_bytes(b.finish())
    _ppm(tmp_path / "img.ppm", np.random.default_rng(1).integers(0, 256, (9, 7, 3)))
    result = CliRunner().invoke(main, ["verify", str(model), "--image", str(tmp_path / "img.ppm"), "--input-range",
                                       "0", "1", "--format", "json"])
    assert result.exit_code == EXIT_OK, result.output
    assert json.loads(result.stdout)["inputs"]["image"].endswith("img.ppm")
    both = CliRunner().invoke(main, ["verify", str(model), "--image", str(tmp_path / "img.ppm"), "--seed", "1"])
    assert both.exit_code == EXIT_BAD_INPUT


def _check_format(data: dict) -> None:
    """The documented GraphNodeData format; with Model Explorer installed, also its own dataclasses."""
    assert set(data) == {"name", "results"} and isinstance(data["name"], str)
    for key, result in data["results"].items():
        assert isinstance(key, str) and set(result) == {"value", "bgColor"}
        assert isinstance(result["value"], (int, float)) and result["bgColor"].startswith("#")
    try:
        from model_explorer.node_data_builder import GraphNodeData, NodeDataResult
    except ImportError:
        return  # Model Explorer is optional: the documented format above is what is checked then
    built = GraphNodeData(name=data["name"], results={k: NodeDataResult(**v) for k, v in data["results"].items()})
    again = json.loads(built.to_json_string())  # their serialisation adds their optional fields' defaults
    assert (again["name"], again["results"]) == (data["name"], data["results"])


def _explorer_tensor_names(model: str) -> set[str] | None:
    """The `tensor_name`s Model Explorer's own TFLite adapter gives the op nodes (None if not installed)."""
    try:
        import ai_edge_model_explorer_adapter as adapter
    except ImportError:
        return None
    graphs = json.loads(adapter.ConvertFlatbufferDirectlyToJson(adapter.VisualizeConfig(), model))
    return {a["value"] for n in graphs[0]["subgraphs"][0]["nodes"] for m in n.get("outputsMetadata", [])
            for a in m["attrs"] if a["key"] == "tensor_name"}


def test_check_node_data(tmp_path):
    model = str(FIXTURES / "custom_op_middle.tflite")
    out = tmp_path / "nd.json"
    result = CliRunner().invoke(main, ["check", model, "--node-data", str(out)])
    assert result.exit_code == EXIT_OK, result.output
    data = json.loads(out.read_text())
    _check_format(data)
    values = {k: v["value"] for k, v in data["results"].items()}
    assert values["AudioSpectrogram"] == 0  # the custom op stays on the CPU, between partitions 1 and 2
    assert {values["mul"], values["Identity"]} == {1, 2}
    names = _explorer_tensor_names(model)
    if names is not None:
        assert set(data["results"]) <= names


def test_verify_per_op_node_data(tmp_path, monkeypatch):
    model = tmp_path / "chain.tflite"
    model.write_bytes(add_mul_sub_chain())
    real = KERNELS[OperationType.SUB]
    monkeypatch.setitem(KERNELS, OperationType.SUB, lambda call: [o * 2 for o in real(call)])
    out = tmp_path / "err.json"
    result = CliRunner().invoke(main, ["verify", str(model), "--per-op", "--node-data", str(out)])
    assert result.exit_code == EXIT_FAILURE
    data = json.loads(out.read_text())
    _check_format(data)
    assert data["results"]["a"]["value"] == 0.0 and data["results"]["y"]["value"] > 0.1
    assert data["results"]["y"]["bgColor"] != data["results"]["a"]["bgColor"]
    needs = CliRunner().invoke(main, ["verify", str(model), "--node-data", str(out)])
    assert needs.exit_code == EXIT_BAD_INPUT and "--per-op" in needs.stderr
