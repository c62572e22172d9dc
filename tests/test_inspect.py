"""`nnconv inspect`'s library: summaries, the ops table and Graphviz text of `.tflite` and `.nnapi` files."""

from __future__ import annotations

import json
import pathlib
import re

import pytest

import nnconv
from nnconv.errors import ModelFormatError, NnconvError
from nnconv.inspection import file_kind, load, op_rows, ops_table_text, summarize, summary_text, to_dot
from nnconv.lowering.convert import ConversionOptions
from nnconv.nnapi import serialize
from nnconv.pipeline import convert_partial
from nnconv.targets import Target

MODELS = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, pathlib.Path]:
    d = tmp_path_factory.mktemp("inspect")
    nnconv_target = ConversionOptions(target=Target.NNCONV)  # nnconv's converter lowers gru_keras whole
    gru, _ = nnconv.convert(str(MODELS / "gru_keras.tflite"), api_level=30, options=nnconv_target)
    serialize.save(d / "gru.nnapi", [gru])
    mnv2, _ = nnconv.convert(str(MODELS / "mobilenet_v2_int8.tflite"), api_level=30, options=nnconv_target)
    serialize.save(d / "mnv2.nnapi", [mnv2])
    plan = convert_partial(str(MODELS / "custom_op_middle.tflite"), 30, nnconv_target)
    serialize.save(d / "partial.nnapi", plan.converted, plan=plan.to_json())
    return {"gru.tflite": MODELS / "gru_keras.tflite", "gru.nnapi": d / "gru.nnapi", "mnv2.nnapi": d / "mnv2.nnapi",
            "partial.nnapi": d / "partial.nnapi", "custom.tflite": MODELS / "custom_op_middle.tflite"}


def test_tflite_summary_counts_ops_tensors_constants_subgraphs_signatures_metadata(files):
    s = summarize(files["gru.tflite"])
    model = load(files["gru.tflite"])
    assert s["format"] == "tflite" and len(s["subgraphs"]) == 3
    assert s["operations"] == sum(len(sg.operators) for sg in model.subgraphs) == sum(s["ops_by_type"].values())
    assert s["ops_by_type"]["WHILE"] == 1
    assert s["tensors"] == sum(len(sg.tensors) for sg in model.subgraphs)
    sizes = [t.data.nbytes for sg in model.subgraphs for t in sg.tensors if t.data is not None]
    assert s["constants"]["count"] == len(sizes) and s["constants"]["bytes"] == sum(sizes)
    assert [c["bytes"] for c in s["constants"]["largest"]] == sorted(sizes, reverse=True)[:5]
    assert s["signatures"] == [{"key": "serving_default", "subgraph": 0, "inputs": ["sequence"], "outputs": ["scores"]}]
    assert {m["name"] for m in s["metadata"]} >= {"min_runtime_version"}
    json.dumps(s)  # --format json prints it as is


def test_nnapi_summary_splits_constants_by_lifetime_and_gives_provenance(files):
    s = summarize(files["mnv2.nnapi"])
    nn = serialize.load(files["mnv2.nnapi"])
    operands = [od for p in nn.partitions for sg in p.model.subgraphs() for od in sg.operands]
    copy = [od.location.length for od in operands if od.lifetime.name == "CONSTANT_COPY"]
    ref = [od.location.length for od in operands if od.lifetime.name == "CONSTANT_REFERENCE"]
    assert s["constants"]["CONSTANT_COPY"]["bytes"] == sum(copy)
    assert s["constants"]["CONSTANT_COPY"]["count"] == len(copy)
    assert s["constants"]["CONSTANT_REFERENCE"]["bytes"] == sum(ref) > 10_000
    assert max(copy) <= 128
    assert s["provenance"]["producer"].startswith("nnconv") and s["provenance"]["api_level"] == 30
    assert s["provenance"]["partial"] is False
    assert s["operations"] == sum(s["ops_by_type"].values()) == len(nn.partitions[0].model.main.operations)
    json.dumps(s)


def test_partial_nnapi_summary_names_partitions_and_coverage(files):
    s = summarize(files["partial.nnapi"])
    assert [p["tflite_ops"] for p in s["partitions"]] == [[0, 1], [3, 4]]
    assert s["provenance"]["coverage"] == {"ops_delegated": 4, "ops_total": 5, "percent": 80.0}
    assert s["provenance"]["source_model"].endswith("custom_op_middle.tflite")
    text = summary_text(s)
    assert "partial conversion: 4/5 TFLite ops on NNAPI (80.0%)" in text
    assert "partition 1: API 30, TFLite subgraph 0 ops 3..4 (2)" in text


def test_while_model_counts_its_referenced_subgraphs(files):
    s = summarize(files["gru.nnapi"])
    assert s["subgraphs"] == 3 and s["partitions"][0]["referenced_subgraphs"] == 2
    assert s["ops_by_type"]["WHILE"] == 1


def test_ops_table_has_one_row_per_operation(files):
    nn = load(files["gru.nnapi"])
    rows = op_rows(nn)
    assert len(rows) == sum(len(sg.operations) for sg in nn.partitions[0].model.subgraphs())
    table = ops_table_text(rows).splitlines()
    assert table[0].split()[:5] == ["partition", "subgraph", "index", "op", "tflite_op"]
    assert len(table) == len(rows) + 1 and any(" WHILE " in line for line in table)
    tfl_rows = op_rows(load(files["custom.tflite"]))
    assert [r["op"] for r in tfl_rows][2].startswith("CUSTOM(")


def test_dot_draws_partitions_as_clusters_joined_at_their_tensors(files):
    dot = to_dot(load(files["partial.nnapi"]))
    assert dot.startswith("digraph nnapi {") and dot.rstrip().endswith("}")
    assert dot.count("subgraph cluster_p") == 2
    nn = serialize.load(files["partial.nnapi"])
    # Each partition's outputs are drawn once, named after their TFLite tensors, with an edge into them.
    for part in nn.partitions:
        for io in part.outputs:
            assert re.search(rf"-> t{io.tflite_tensor};", dot)
    assert dot.count("{") == dot.count("}")


def test_dot_of_a_while_model_nests_its_subgraphs(files):
    dot = to_dot(load(files["gru.nnapi"]))
    assert "subgraph cluster_p0_s1" in dot and "subgraph cluster_p0_s2" in dot
    tdot = to_dot(load(files["gru.tflite"]))
    assert tdot.count("subgraph cluster_sg") == 3
    # Every operator is a node, every edge joins declared nodes.
    nodes = set(re.findall(r"^\s+(\w+) \[", tdot, flags=re.M))
    for a, b in re.findall(r"^\s+(\w+) -> (\w+);", tdot, flags=re.M):
        assert a in nodes and b in nodes


@pytest.mark.parametrize("content,message", [(b"", "neither a TFLite model"),
                                             (b"12345678abcdef", "neither a TFLite model")])
def test_other_files_are_refused_with_one_line(tmp_path, content, message):
    path = tmp_path / "x.bin"
    path.write_bytes(content)
    with pytest.raises(ModelFormatError, match=message):
        file_kind(path)


def test_a_directory_is_refused(tmp_path):
    with pytest.raises(NnconvError, match="is a directory"):
        summarize(tmp_path)


def test_a_whole_conversion_records_its_source_model(tmp_path):
    """Issue 35: a partial `.nnapi` named its source model in its provenance, a whole one did not (so `inspect`
    could not say where it came from and `verify OUT.nnapi` could not find its model)."""
    from click.testing import CliRunner
    from nnconv.cli import main
    from nnconv.nnapi import serialize
    model = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models" / "mobilenet_v2_float.tflite"
    out = tmp_path / "whole.nnapi"
    runner = CliRunner()
    assert runner.invoke(main, ["convert", str(model), "-o", str(out)]).exit_code == 0
    plan = serialize.load(out).plan
    assert plan["whole"] is True and plan["model"] == str(model) and plan["ops_total"] == plan["ops_delegated"]
    shown = runner.invoke(main, ["inspect", str(out)]).stdout
    assert f"target API 30, from {model}" in shown and "partial conversion" not in shown
    assert runner.invoke(main, ["verify", str(out), "-q"]).stdout == "PASS\n"
