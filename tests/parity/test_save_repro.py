"""`verify --per-op --save-repro DIR`: the first divergent op alone as a one-op model, with TFLite's values at
its inputs and outputs and ours; verifying the repro fails the same way. The divergence is a wrong kernel
injected through the executor's kernel table (the test-only hook the per-op tests use): the repro is run
through the real pipeline, so it fails only if the extracted model really reproduces the op."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from chain_models import add_mul_sub_chain, shifted
from harness import QuantParams, TfliteBuilder
from nnconv.cli import main
from nnconv.errors import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_OK
from nnconv.nnapi.enums import OperationType
from nnconv.parity.repro import one_op_model
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import AddOptions, FullyConnectedOptions
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B


@pytest.fixture
def chain(tmp_path):
    path = tmp_path / "chain.tflite"
    path.write_bytes(add_mul_sub_chain())
    return path


def test_repro_of_the_divergent_op_fails_the_same_way(chain, tmp_path, monkeypatch):
    monkeypatch.setitem(KERNELS, OperationType.MUL, shifted(OperationType.MUL, 0.25))
    out = tmp_path / "repro"
    runner = CliRunner()
    result = runner.invoke(main, ["verify", str(chain), "--per-op", "--save-repro", str(out), "--format", "json"])
    assert result.exit_code == EXIT_FAILURE, result.output
    data = json.loads(result.stdout)
    assert data["repro"]["op"] == "MUL" and data["repro"]["op_index"] == 1
    assert sorted(p.name for p in out.iterdir()) == ["expected.npz", "inputs.npz", "ours.npz", "repro.tflite"]
    model = read_model(str(out / "repro.tflite"))
    sg = model.subgraphs[0]
    assert [op.name for op in sg.operators] == ["MUL"] and [sg.tensors[i].name for i in sg.inputs] == ["a"]
    assert sg.tensors[sg.operators[0].inputs[1]].is_constant  # the constant multiplier is kept
    with np.load(out / "inputs.npz") as i, np.load(out / "expected.npz") as e, np.load(out / "ours.npz") as o:
        assert list(i.files) == ["a"] and list(e.files) == ["m"] and list(o.files) == ["m"]
        np.testing.assert_allclose(e["m"], i["a"] * np.float32(1.5), rtol=1e-6)  # TFLite's MUL by 1.5
        np.testing.assert_allclose(o["m"] - e["m"], 0.25, rtol=1e-5)  # ours, off by the fault
    alone = data["first_divergent_op"]["alone"]["max_abs"]
    again = runner.invoke(main, ["verify", str(out / "repro.tflite"), "--inputs", str(out / "inputs.npz"),
                                 "--format", "json"])
    assert again.exit_code == EXIT_FAILURE, again.output
    assert json.loads(again.stdout)["outputs"][0]["max_abs"] == pytest.approx(alone)
    assert data["repro"]["command"].startswith(f"nnconv verify {out / 'repro.tflite'} --inputs")
    # without the fault, the same repro passes: it carries no error of its own
    monkeypatch.undo()
    fixed = runner.invoke(main, ["verify", str(out / "repro.tflite"), "--inputs", str(out / "inputs.npz")])
    assert fixed.exit_code == EXIT_OK, fixed.output


def test_quantized_op_repro_keeps_quantization(tmp_path):
    rng = np.random.default_rng(4)
    b = TfliteBuilder()
    q_in, q_w, q_out = QuantParams([0.05], [3]), QuantParams([0.02], [0]), QuantParams([0.1], [-5])
    x = b.input("x", (1, 8), np.int8, quant=q_in)
    h = b.tensor("h", (1, 8), np.int8, quant=q_in)
    w = b.const("w", rng.integers(-100, 100, (4, 8)).astype(np.int8), quant=q_w)
    y = b.tensor("y", (1, 4), np.int8, quant=q_out)
    b.op(B.ADD, [x, x], [h], AddOptions())
    b.op(B.FULLY_CONNECTED, [h, w, -1], [y], FullyConnectedOptions())
    b.output(y)
    model = read_model(b.finish())
    repro = read_model(one_op_model(model, 0, 1).data)
    sg = repro.subgraphs[0]
    assert [op.name for op in sg.operators] == ["FULLY_CONNECTED"] and sg.operators[0].inputs[2] == -1
    assert list(sg.tensors[sg.inputs[0]].quantization.scale) == [pytest.approx(0.05)]
    np.testing.assert_array_equal(sg.tensors[sg.operators[0].inputs[1]].data,
                                  model.subgraphs[0].tensors[w].data)


def test_no_divergence_writes_nothing(chain, tmp_path):
    out = tmp_path / "repro"
    result = CliRunner().invoke(main, ["verify", str(chain), "--per-op", "--save-repro", str(out)])
    assert result.exit_code == EXIT_OK and not out.exists() and "no divergent op" in result.stderr


def test_save_repro_needs_per_op(chain, tmp_path):
    result = CliRunner().invoke(main, ["verify", str(chain), "--save-repro", str(tmp_path / "r")])
    assert result.exit_code == EXIT_BAD_INPUT and "--per-op" in result.stderr
