"""`nnconv inspect FILE [--ops] [--format text|json] [--dot]` on .tflite and .nnapi files."""

from __future__ import annotations

import json
import pathlib

import pytest
from click.testing import CliRunner

from nnconv.cli import main

MODELS = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"


@pytest.fixture(scope="module")
def partial_nnapi(tmp_path_factory) -> pathlib.Path:
    out = tmp_path_factory.mktemp("inspect_cli") / "p.nnapi"
    result = CliRunner().invoke(main, ["convert", str(MODELS / "custom_op_middle.tflite"), "--allow-partial",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    return out


def invoke(*args: str):
    return CliRunner().invoke(main, ["inspect", *args])


def test_text_summary_of_a_tflite_model():
    result = invoke(str(MODELS / "mobilenet_v2_int8.tflite"))
    assert result.exit_code == 0, result.stderr
    for needle in ("TFLite model", "operations: ", "constants: ", "signature 'serving_default'", "metadata: ",
                   "ops by type: CONV_2D"):
        assert needle in result.stdout


def test_nnapi_summary_ops_table_and_json(partial_nnapi):
    text = invoke(str(partial_nnapi), "--ops")
    assert text.exit_code == 0, text.stderr
    assert "CONSTANT_REFERENCE" in text.stdout and "partition 1:" in text.stdout
    assert "partition  subgraph  index  op" in text.stdout
    data = json.loads(invoke(str(partial_nnapi), "--format", "json", "--ops").stdout)
    assert data["format"] == "nnapi" and len(data["partitions"]) == 2 and len(data["ops"]) == data["operations"]
    assert data["provenance"]["coverage"]["ops_delegated"] == 4


def test_dot_output_is_graphviz(partial_nnapi):
    result = invoke(str(partial_nnapi), "--dot")
    assert result.exit_code == 0 and result.stdout.startswith("digraph nnapi {")
    assert result.stdout.count("subgraph cluster_p") == 2


@pytest.mark.parametrize("args,message", [(["--dot", "--format", "json"], "--dot prints only the Graphviz graph"),
                                          (["--dot", "--ops"], "--dot prints only the Graphviz graph")])
def test_dot_does_not_combine(partial_nnapi, args, message):
    result = invoke(str(partial_nnapi), *args)
    assert result.exit_code == 2 and message in result.stderr


@pytest.mark.parametrize("content", [b"", b"not a model at all", None])
def test_unreadable_files_are_one_line_exit_2(tmp_path, content):
    path = tmp_path / "x.tflite"
    if content is not None:
        path.write_bytes(content)
    result = invoke(str(path))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("nnconv: error: ")
