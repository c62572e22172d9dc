"""The partition plan (nnconv/lowering/partition.py) and partition-by-partition verification (parity/partitioned.py).

Models are chains or small DAGs of CONV_2D ops: a plain conv lowers at every level, a dilated conv is refused
below API 29 (but TFLite runs it, so partition-wise parity can be checked), a custom op is refused always
(TFLite cannot run it, so it only appears in plan tests).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.errors import ConversionError
from nnconv.lowering.check_report import check_ops
from nnconv.lowering.convert import make_state
from nnconv.lowering.diagnostics import Verdict
from nnconv.nnapi import serialize
from nnconv.parity.partitioned import PartitionedParityReport, verify_model
from nnconv.lowering.partition import build_plan, group_nodes
from nnconv.pipeline import PreparedConversion, analyse, convert_partial
from nnconv.rewrite.state import ConversionOptions
from nnconv.targets import Target
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.options import AddOptions, Conv2DOptions
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator, Padding

SHAPE = (1, 6, 5, 3)  # unequal extents; conv 3x3 SAME keeps it
NBYTES = 6 * 5 * 3 * 4


def _conv(b: TfliteBuilder, rng: np.random.Generator, x: int, y: int, i: int, dilation: int = 1) -> None:
    w = b.const(f"w{i}", (rng.standard_normal((3, 3, 3, 3)) * 0.5).astype(np.float32))
    bias = b.const(f"b{i}", rng.standard_normal(3).astype(np.float32))
    b.op(BuiltinOperator.CONV_2D, [x, w, bias], [y],
         Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1, dilation_w_factor=dilation,
                       dilation_h_factor=dilation))


def add_op(b: TfliteBuilder, rng: np.random.Generator, kind: str, x: int, y: int, i: int) -> None:
    """kind: "conv" (lowers), "dilated" (refused below API 29), "custom" (refused: custom op)."""
    if kind == "custom":
        b.op(BuiltinOperator.CUSTOM, [x], [y], custom_code="MyOp")
    else:
        _conv(b, rng, x, y, i, dilation=2 if kind == "dilated" else 1)


def chain(kinds: list[str], seed: int = 0) -> bytes:
    """x -> op0 -> t0 -> op1 -> t1 ... -> output."""
    rng = np.random.default_rng(seed)
    b = TfliteBuilder()
    cur = b.input("x", SHAPE, np.float32)
    for i, kind in enumerate(kinds):
        y = b.tensor(f"t{i}", SHAPE, np.float32)
        add_op(b, rng, kind, cur, y, i)
        cur = y
    b.output(cur)
    return b.finish()


def branchy(side: str = "custom") -> bytes:
    """op0 conv(x)->a; op1 <side>(x)->c; op2 conv(a)->b; op3 conv(c)->d; outputs b, d.
    op0 and op2 are not consecutive but can run together: the delegate puts them in one partition."""
    rng = np.random.default_rng(1)
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    a, c, bb, d = (b.tensor(n, SHAPE, np.float32) for n in ("a", "c", "b", "d"))
    add_op(b, rng, "conv", x, a, 0)
    add_op(b, rng, side, x, c, 1)
    add_op(b, rng, "conv", a, bb, 2)
    add_op(b, rng, "conv", c, d, 3)
    b.output(bb, d)
    return b.finish()


def plan_of(model: bytes, level: int = 30, max_partitions: int = 3):
    """nnconv's own partition plan (the nnconv target)."""
    return analyse(model, level, ConversionOptions(target=Target.NNCONV), max_partitions=max_partitions)


# -- grouping -------------------------------------------------------------------------------------
def test_partition_is_dependency_closed_not_just_consecutive():
    report, plan = plan_of(branchy())
    assert [p.ops for p in plan.partitions] == [[0, 2], [3]]
    assert [r.index for r in report.ops if r.status == Verdict.CUSTOM] == [1]
    p0 = plan.partitions[0]
    assert [t.name for t in p0.inputs] == ["x"] and [t.name for t in p0.outputs] == ["b"]
    assert plan.partitions[1].inputs[0].peers == ("CPU op #1 CUSTOM(MyOp)",)


def test_first_ready_node_decides_the_epoch_kind():
    # Execution order C (custom), A, D: the CPU epoch runs first, then A and D form one partition.
    sg = read_model(branchy()).subgraphs[0]
    epochs = group_nodes(sg, [1, 0, 2, 3], delegated={0, 2, 3})
    assert epochs == [(False, [1]), (True, [0, 2, 3])]


def test_side_effect_ops_keep_their_order():
    """Ops touching a resource tensor are chained in execution order (the partitioner's control edges), so
    S2 cannot join S0's CPU epoch ahead of S1, and the delegated ops split into two partitions."""
    from nnconv.tflite.schema_enums import TensorType
    rng = np.random.default_rng(0)
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    r = b.input("r", (1,), TensorType.RESOURCE)
    a, bb, c, d, e = (b.tensor(n, SHAPE, np.float32) for n in "abcde")
    b.op(BuiltinOperator.CUSTOM, [x], [a], custom_code="S0")
    add_op(b, rng, "conv", x, bb, 1)
    b.op(BuiltinOperator.CUSTOM, [bb, r], [c], custom_code="S1")
    b.op(BuiltinOperator.CUSTOM, [x, r], [d], custom_code="S2")
    add_op(b, rng, "conv", d, e, 4)
    b.output(a, c, e)
    sg = read_model(b.finish()).subgraphs[0]
    assert group_nodes(sg, range(5), delegated={1, 4}) == [(False, [0]), (True, [1]), (False, [2, 3]), (True, [4])]


@pytest.mark.parametrize("kinds,expected,boundary", [
    pytest.param(["conv", "conv", "custom", "conv", "conv"], [[0, 1], [3, 4]],
                 [(["x"], ["t1"]), (["t2"], ["t4"])], id="refused-in-the-middle"),
    pytest.param(["custom", "conv", "conv", "conv"], [[1, 2, 3]], [(["t0"], ["t3"])], id="refused-at-start"),
    pytest.param(["conv", "conv", "conv", "custom"], [[0, 1, 2]], [(["x"], ["t2"])], id="refused-at-end"),
    pytest.param(["conv", "conv", "conv"], [[0, 1, 2]], [(["x"], ["t2"])], id="nothing-refused"),
    pytest.param(["custom", "custom"], [], [], id="everything-refused"),
])
def test_partitions_around_refused_ops(kinds, expected, boundary):
    _report, plan = plan_of(chain(kinds))
    assert [p.ops for p in plan.partitions] == expected
    assert [([t.name for t in p.inputs], [t.name for t in p.outputs]) for p in plan.partitions] == boundary
    assert all(t.nbytes == NBYTES for p in plan.partitions for t in [*p.inputs, *p.outputs])
    assert len(plan.converted) == len(expected)


def test_custom_op_in_the_middle_lists_boundary_tensors_with_sizes():
    report, plan = plan_of(chain(["conv", "conv", "custom", "conv", "conv"]))
    assert plan.summary_line() == "2 partitions, 4/5 ops (80%)"
    p0, p1 = plan.partitions
    assert p0.outputs[0].to_json() == {"tensor": 4, "name": "t1", "dtype": "float32", "shape": list(SHAPE),
                                       "bytes": NBYTES, "peers": ["CPU op #2 CUSTOM(MyOp)"]}
    assert p1.inputs[0].peers == ("CPU op #2 CUSTOM(MyOp)",) and p1.outputs[0].peers == ("model output",)
    assert p0.inputs[0].peers == ("model input",)
    assert p0.boundary_bytes == 2 * NBYTES
    assert any("2 partitions" in w for w in plan.warnings())
    # lowered ops report the NNAPI operations actually emitted for them
    assert [r.nnapi_ops for r in report.ops if r.supported] == [["CONV_2D"]] * 4


def test_one_partition_has_no_warning():
    _report, plan = plan_of(chain(["conv", "conv"]))
    assert plan.summary_line() == "1 partition, 2/2 ops (100%)"
    assert plan.warnings() == []


def test_max_partitions_keeps_the_largest():
    kinds = ["conv", "custom", "conv", "conv", "conv", "custom", "conv", "custom", "conv", "conv"]
    _r, plan = plan_of(chain(kinds), max_partitions=2)
    assert [p.ops for p in plan.partitions] == [[2, 3, 4], [8, 9]]
    assert plan.partitions_formed == 4 and plan.dropped == [[0], [6]]
    assert plan.ops_delegated == 5 and len(plan.converted) == 2
    assert any("--max-partitions" in w for w in plan.warnings())
    # ties go to the partition that runs first
    _r, plan = plan_of(chain(kinds), max_partitions=3)
    assert [p.ops for p in plan.partitions] == [[0], [2, 3, 4], [8, 9]]
    _r, plan = plan_of(chain(kinds), max_partitions=0)  # unlimited
    assert len(plan.partitions) == 4 and not plan.dropped


def test_dropped_partition_ops_still_name_their_nnapi_ops():
    report, plan = plan_of(chain(["conv", "custom", "conv", "conv"]), max_partitions=1)
    assert [p.ops for p in plan.partitions] == [[2, 3]]
    assert report.ops[0].nnapi_ops == ["CONV_2D"] and plan.partition_of(0) is None


def test_folded_ops_are_constants_not_nodes():
    m = read_model(chain(["conv", "conv", "conv"]))
    state = make_state(m, 30)
    state.folded[(0, m.subgraphs[0].operators[0].outputs[0])] = np.zeros(SHAPE, np.float32)
    report = check_ops(state)
    assert report.ops[0].status == Verdict.FOLDED
    plan = build_plan(state, report)
    assert [p.ops for p in plan.partitions] == [[1, 2]] and plan.folded == [0]
    assert plan.partitions[0].inputs == []  # its only input is now a constant
    assert plan.summary_line() == "1 partition, 3/3 ops (100%)"


def test_no_partition_means_no_coverage_even_with_folded_ops():
    """Issue 35: a model whose only lowerable ops are folded runs wholly on TFLite's CPU kernels: folded ops
    count towards coverage only when some partition runs (an AI Edge Quantizer 16x8 model printed
    `0 partitions, 48/319 ops (15%)` and passed `--min-coverage 10`)."""
    m = read_model(chain(["custom", "custom", "custom"]))
    state = make_state(m, 30)
    state.folded[(0, m.subgraphs[0].operators[0].outputs[0])] = np.zeros(SHAPE, np.float32)
    report = check_ops(state)
    plan = build_plan(state, report)
    assert plan.partitions == [] and plan.folded == [0]
    assert (plan.ops_delegated, plan.coverage) == (0, 0.0)
    assert plan.summary_line() == "0 partitions, 0/3 ops (0%)"
    assert "no op is delegated: the whole model runs on the TFLite CPU kernels" in plan.warnings()


# -- convert_partial ------------------------------------------------------------------------------
def test_convert_partial_one_model_per_partition():
    plan = convert_partial(chain(["conv", "dilated", "conv", "conv"]), 28)
    assert [cm.tflite_ops for cm in plan.converted] == [[0], [2, 3]]
    assert [s.name for s in plan.converted[1].inputs] == ["t1"]
    data = plan.to_json()
    assert data["api_level"] == 28 and [p["ops"] for p in data["partitions"]] == [[0], [2, 3]]
    assert plan.summary_line() == "2 partitions, 3/4 ops (75%)"
    assert convert_partial(chain(["conv", "dilated"]), 29).summary_line() == "1 partition, 2/2 ops (100%)"


def test_convert_partial_refuses_when_nothing_lowers():
    with pytest.raises(ConversionError, match="none of the 2 ops"):
        convert_partial(chain(["custom", "custom"]), 30, ConversionOptions(target=Target.NNCONV))


# -- partition-by-partition verification -------------------------------------------------------------
def test_verify_falls_back_to_partitions(tmp_path):
    path = tmp_path / "mid.tflite"
    path.write_bytes(chain(["conv", "dilated", "conv", "conv"], seed=3))
    report = verify_model(str(path), 28, ConversionOptions(target=Target.NNCONV))
    assert isinstance(report, PartitionedParityReport) and report.passed
    assert [p.ops for p in report.partitions] == [[0], [2, 3]]
    assert [o.name for o in report.outputs] == ["p0/t0", "p1/t3"]
    data = report.to_json()
    assert data["mode"] == "partitioned" and "full conversion refused" in data["note"]
    assert all(p["passed"] for p in data["partitions"])
    # At API 29 the whole model lowers: an ordinary whole-model report.
    whole = verify_model(str(path), 29, ConversionOptions(target=Target.NNCONV))
    assert not isinstance(whole, PartitionedParityReport) and whole.passed


def test_partition_verification_catches_a_wrong_partition(tmp_path, monkeypatch):
    """Feeding boundary tensors really matters: corrupt partition 1's weights and only its row fails."""
    path = tmp_path / "mid.tflite"
    path.write_bytes(chain(["conv", "dilated", "conv"], seed=4))
    real = PreparedConversion.partial

    def corrupted(self, *args, **kwargs):
        plan = real(self, *args, **kwargs)
        model = plan.converted[1].model
        assert model.pools, "the 3x3x3x3 float weights (324 bytes) live in a pool"
        flipped = []
        for pool in model.pools:
            raw = np.frombuffer(bytes(memoryview(pool).cast("B")), np.uint8).copy()
            raw[3::4] ^= 0x80  # flips the sign of every little-endian float32
            flipped.append(raw)
        model.pools = flipped
        return plan
    monkeypatch.setattr(PreparedConversion, "partial", corrupted)
    report = verify_model(str(path), 28, ConversionOptions(target=Target.NNCONV))
    assert report.partitions[0].passed and not report.passed
    assert "fresh conversion of the same ops passes" in report.partitions[1].diagnosis
    assert report.partitions[0].diagnosis == ""


def test_failing_partition_names_the_op_at_fault(tmp_path, monkeypatch):
    """A kernel bug in one op: the partition fails and, run alone on TFLite's tensors, that op is named."""
    from nnconv.runtime.kernels import registry as kreg
    from nnconv.nnapi.enums import OperationType
    path = tmp_path / "mid.tflite"
    path.write_bytes(chain(["conv", "dilated", "conv", "conv"], seed=9))
    real = kreg.KERNELS[OperationType.CONV_2D]

    def off_by_a_bit(call):
        outs = real(call)
        return [o + np.float32(0.5) for o in outs]
    monkeypatch.setitem(kreg.KERNELS, OperationType.CONV_2D, off_by_a_bit)
    report = verify_model(str(path), 28)
    bad = report.partitions[1]
    assert not bad.passed and [f["index"] for f in bad.ops_at_fault] == [2, 3]
    assert bad.diagnosis.startswith("ops out of tolerance on their own: #2 CONV_2D, #3 CONV_2D")
    assert bad.to_json()["ops_at_fault"][0]["op"] == "CONV_2D"


def test_verify_multi_partition_nnapi_file(tmp_path):
    src = tmp_path / "model.tflite"
    src.write_bytes(chain(["conv", "conv", "dilated", "conv", "dilated", "conv"], seed=5))
    plan = convert_partial(str(src), 27)
    assert len(plan.converted) == 3
    out = tmp_path / "model.nnapi"
    serialize.save(out, plan.converted, plan=plan.to_json())
    report = verify_model(str(out), 27)
    assert isinstance(report, PartitionedParityReport) and report.passed
    assert [p.ops for p in report.partitions] == [[0, 1], [3], [5]]
    assert "3 partitions" in report.note


def test_nnapi_file_finds_its_source_from_another_folder(tmp_path, monkeypatch):
    from nnconv.errors import NnconvError
    (tmp_path / "src").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "src" / "m.tflite").write_bytes(chain(["conv", "dilated", "conv"], seed=6))
    monkeypatch.chdir(tmp_path / "src")
    plan = convert_partial("m.tflite", 28)  # a relative path, as typed on a command line
    out = tmp_path / "src" / "m.nnapi"
    serialize.save(out, plan.converted, plan=plan.to_json())
    monkeypatch.chdir(tmp_path / "elsewhere")
    assert verify_model(str(out), 28).passed
    (tmp_path / "src" / "m.tflite").unlink()
    with pytest.raises(NnconvError, match="source model m.tflite is not found"):
        verify_model(str(out), 28)
    serialize.save(out, plan.converted)  # no plan: nothing names the source
    with pytest.raises(NnconvError, match="records no source"):
        verify_model(str(out), 28)


def test_tensor_read_only_by_a_folded_op_is_not_a_partition_output():
    """Like SHAPE of a computed tensor: once folded, nothing reads that tensor at runtime."""
    rng = np.random.default_rng(0)
    b = TfliteBuilder()
    x = b.input("x", SHAPE, np.float32)
    t0, t1 = b.tensor("t0", SHAPE, np.float32), b.tensor("t1", SHAPE, np.float32)
    s = b.tensor("s", (4,), np.int32)
    add_op(b, rng, "conv", x, t0, 0)
    b.op(BuiltinOperator.CUSTOM, [t0], [s], custom_code="ShapeLike")
    add_op(b, rng, "conv", t0, t1, 2)
    b.output(t1)
    m = read_model(b.finish())
    state = make_state(m, 30)
    state.folded[(0, s)] = np.asarray(SHAPE, np.int32)
    report = check_ops(state)
    plan = build_plan(state, report)
    assert [p.ops for p in plan.partitions] == [[0, 2]]
    assert [t.name for t in plan.partitions[0].outputs] == ["t1"]
    assert [cm.outputs[0].name for cm in plan.converted] == ["t1"]


def test_partition_verify_takes_user_inputs(tmp_path):
    from nnconv.errors import InputDataError
    path = tmp_path / "mid.tflite"
    path.write_bytes(chain(["conv", "dilated", "conv"], seed=7))
    x = np.random.default_rng(1).uniform(-1, 1, SHAPE).astype(np.float32)
    by_name = verify_model(str(path), 28, inputs={"x": x})
    by_position = verify_model(str(path), 28, inputs={"arr_0": x})
    assert by_name.passed and [o.max_abs for o in by_name.outputs] == [o.max_abs for o in by_position.outputs]
    with pytest.raises(InputDataError, match="float32"):
        verify_model(str(path), 28, inputs={"x": x.astype(np.float64)})
    with pytest.raises(InputDataError, match="missing input 'x'"):
        verify_model(str(path), 28, inputs={"y": x})


# -- properties of the grouping on random DAGs -------------------------------------------------------
@st.composite
def random_graph(draw):
    """A random DAG in execution order: op k reads 1-3 tensors among the model input and earlier outputs."""
    n = draw(st.integers(1, 14))
    ops = []
    for k in range(n):
        reads = draw(st.lists(st.integers(0, k), min_size=1, max_size=3, unique=True))  # tensor j = output of op j-1
        ops.append(SimpleNamespace(inputs=tuple(reads), outputs=(k + 1,), builtin_code=0))
    tensors = [SimpleNamespace(type=0) for _ in range(n + 1)]
    supported = draw(st.sets(st.integers(0, n - 1)))
    return SimpleNamespace(index=0, operators=ops, tensors=tensors), supported


@settings(max_examples=200, deadline=None)
@given(random_graph())
def test_grouping_properties(case):
    sg, supported = case
    n = len(sg.operators)
    epochs = group_nodes(sg, list(range(n)), supported)
    epoch_of = {k: i for i, (_, members) in enumerate(epochs) for k in members}
    assert sorted(epoch_of) == list(range(n))  # every op exactly once
    for i, (kind, members) in enumerate(epochs):
        assert all((k in supported) == kind for k in members)  # one kind per epoch
        if i:
            assert epochs[i - 1][0] != kind  # maximal: the next epoch is always of the other kind
    for k, op in enumerate(sg.operators):  # data only flows forward, so every partition runs as one unit
        for t in op.inputs:
            if t:
                assert epoch_of[t - 1] <= epoch_of[k]


def test_custom_op_fixture_two_partitions_verified_one_by_one():
    """examples/models/custom_op_middle.tflite: MUL, ADD, AudioSpectrogram (a custom op TFLite's interpreter
    runs), FULLY_CONNECTED, SOFTMAX: two partitions around the custom op, each verified on TFLite's tensors."""
    import pathlib
    path = pathlib.Path(__file__).resolve().parent.parent / "examples" / "models" / "custom_op_middle.tflite"
    report, plan = analyse(str(path), 30)
    assert [p.ops for p in plan.partitions] == [[0, 1], [3, 4]]
    assert report.ops[2].status == Verdict.CUSTOM
    p0, p1 = plan.partitions
    assert [(t.name, t.nbytes, t.peers) for t in p0.outputs] == [("add", 512 * 4, ("CPU op #2 CUSTOM(AudioSpectrogram)",))]
    assert [(t.name, t.peers) for t in p1.inputs] == [("AudioSpectrogram", ("CPU op #2 CUSTOM(AudioSpectrogram)",))]
    result = verify_model(str(path), 30)
    assert isinstance(result, PartitionedParityReport) and result.passed
    assert [p.ops for p in result.partitions] == [[0, 1], [3, 4]]


def test_cli_convert_allow_partial_then_verify_the_nnapi_file(tmp_path):
    import json

    from click.testing import CliRunner

    from nnconv.cli import main
    src = tmp_path / "m.tflite"
    src.write_bytes(chain(["conv", "dilated", "conv", "dilated", "conv"], seed=8))
    out = tmp_path / "m.nnapi"
    runner = CliRunner()
    res = runner.invoke(main, ["convert", str(src), "-o", str(out), "--api-level", "28", "--allow-partial"])
    assert res.exit_code == 0, res.output
    assert "3 partitions, 3/5 ops (60%)" in res.stderr
    res = runner.invoke(main, ["verify", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert data["mode"] == "partitioned" and [p["ops"] for p in data["partitions"]] == [[0], [2], [4]]
    assert data["passed"] is True


def test_verify_with_nothing_lowerable_is_a_conversion_error(tmp_path):
    path = tmp_path / "none.tflite"
    path.write_bytes(chain(["custom", "custom"]))
    with pytest.raises(ConversionError, match="none of the 2 ops can be lowered at API 30"):
        verify_model(str(path), 30, ConversionOptions(target=Target.NNCONV))


def test_zeros_like_never_crosses_a_partition_boundary(tmp_path):
    """ZEROS_LIKE(x) is a constant of x's shape (no NNAPI operation): read by a lowered ADD and by an EXP
    refused at API 27 (CPU), it is not an output of the ADD's partition (a constant cannot be one: check
    exited 3 on Keras' GroupNormalization), and partition-wise parity holds."""
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 3), np.float32)
    z = b.tensor("z", (1, 4, 3), np.float32)
    b.op(BuiltinOperator.ZEROS_LIKE, [x], [z])
    s = b.tensor("s", (1, 4, 3), np.float32)
    b.op(BuiltinOperator.ADD, [x, z], [s], AddOptions())
    e = b.tensor("e", (1, 4, 3), np.float32)
    b.op(BuiltinOperator.EXP, [z], [e])
    y = b.tensor("y", (1, 4, 3), np.float32)
    b.op(BuiltinOperator.ADD, [s, e], [y], AddOptions())
    b.output(y)
    path = tmp_path / "zeros_like.tflite"
    path.write_bytes(b.finish())
    plan = convert_partial(str(path), 27)
    assert plan.partitions and not any(p.error for p in plan.partitions)
    report = verify_model(str(path), 27)
    assert report.passed


# -- boundary tensors TFLite resizes (issue 35) ---------------------------------------------------
def _nms_then_gather(declared: tuple[int, ...]) -> bytes:
    """NON_MAX_SUPPRESSION_V4 (refused: the CPU) -> GATHER of the boxes (a partition), its selected indices
    declared `declared`: TensorFlow's converter wrote [1, 5] where TFLite's Prepare makes [max_output_size]."""
    from nnconv.tflite.options import GatherOptions, NonMaxSuppressionV4Options
    b = TfliteBuilder()
    boxes = b.input("boxes", (6, 4), np.float32)
    scores = b.input("scores", (6,), np.float32)
    idx, n = b.tensor("idx", declared, np.int32), b.tensor("n", (), np.int32)
    b.op(BuiltinOperator.NON_MAX_SUPPRESSION_V4, [boxes, scores, b.const("max_out", np.array(5, np.int32)),
                                                  b.const("iou", np.array(0.5, np.float32)),
                                                  b.const("score", np.array(0.0, np.float32))], [idx, n],
         NonMaxSuppressionV4Options())
    g = b.tensor("g", (5, 4), np.float32)
    b.op(BuiltinOperator.GATHER, [boxes, idx], [g], GatherOptions(axis=0))
    b.output(g, n)
    return b.finish()


def test_nms_outputs_take_the_shape_tflite_gives_them(tmp_path):
    """`verify non_max_suppression_v4.f32 --api-level 33 --allow-partial` exited 2 ("has shape [5], the model
    takes [1, 5] (... --input-shape)"): the partition now takes the [5] TFLite computes."""
    path = tmp_path / "nms.tflite"
    path.write_bytes(_nms_then_gather((1, 5)))
    plan = convert_partial(str(path), 33)
    assert [s.shape for s in plan.converted[0].inputs if s.name == "idx"] == [(5,)]
    report = verify_model(str(path), 33)
    assert report.passed and isinstance(report, PartitionedParityReport)


def test_a_boundary_shape_tflite_does_not_produce_is_named(tmp_path, monkeypatch):
    """Without the shape rule (an op nnconv's shape inference does not know): the same elements are fed in the
    declared arrangement with a note; another size fails the partition, saying why, instead of an exit 2
    whose hint (--input-shape) cannot help."""
    import nnconv.rewrite.static_shapes as static_shapes
    monkeypatch.setattr(static_shapes, "_MULTI_SHAPE_FNS", {})
    path = tmp_path / "nms.tflite"
    path.write_bytes(_nms_then_gather((1, 5)))
    report = verify_model(str(path), 33, ConversionOptions(target=Target.NNCONV))
    assert report.passed
    assert "TFLite computes boundary tensor 'idx' as [5]; taken as the declared [1, 5]" in report.outputs[0].detail
    path.write_bytes(_nms_then_gather((1, 4)))
    report = verify_model(str(path), 33, ConversionOptions(target=Target.NNCONV))
    (row,) = report.partitions
    assert not report.passed and not row.passed
    assert row.diagnosis.startswith("TFLite computes boundary tensor 'idx' as [5], but the partition was converted "
                                    "for its declared shape [1, 4]")
