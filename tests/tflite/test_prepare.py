"""`nnconv.tflite.prepare` against TFLite's own interpreter (ai-edge-litert) and the delegate recordings.

What TFLite shows from Python after `allocate_tensors()`: each tensor's dims (a dynamic tensor keeps stale
ones), and whether its data is allocated. A kTfLiteDynamic tensor has no data until Eval, and neither has the
output of a node after the one where preparation stopped; an output of a prepared node that is not dynamic
has. So for every model: our shapes must equal TFLite's for every tensor we do not call dynamic, a tensor we
call dynamic must have no data, the outputs of nodes we call prepared must have data, and values we say a
kernel computed at Prepare must equal TFLite's. TFLite runs in a child process (a hostile file may crash it).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.ir import TfliteModel
from nnconv.tflite.options import (ConcatenationOptions, Conv2DOptions, GatherOptions, IfOptions, MulOptions,
                                   PackOptions, ReducerOptions, ReshapeOptions, ShapeOptions, StridedSliceOptions,
                                   TransposeConvOptions, UniqueOptions, VarHandleOptions, WhileOptions)
from nnconv.tflite.prepare import Allocation, PreparedSubgraph, prepare_subgraph
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType

ROOT = Path(__file__).resolve().parents[2]
# tests/data holds the delegate recordings' single-op models too (tests/data/delegate/ops)
CORPORA = {"tests/data": ROOT / "tests" / "data", "examples/models": ROOT / "examples" / "models"}
# TFLite's AllocateTensors fails for it after every Prepare succeeded: planning a 32 GiB activation arena
# fails (or not, with enough memory). No kernel's Prepare fails, so `failure` stays None.
ARENA_FAILURES = {"lstm_billion_time_steps.tflite"}
NO_DATA_TYPES = (TensorType.STRING, TensorType.RESOURCE, TensorType.VARIANT)

_WORKER = r"""
import json, sys
from ai_edge_litert.interpreter import Interpreter, OpResolverType
out = open(sys.argv[2], "a")
for path in open(sys.argv[1]).read().split("\n"):
    if not path:
        continue
    print(json.dumps({"path": path, "started": True}), file=out, flush=True)
    r = {"path": path}
    try:
        it = Interpreter(model_path=path,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    except Exception as e:
        r["load"] = str(e)
        print(json.dumps(r), file=out, flush=True)
        continue
    try:
        it.allocate_tensors()
    except Exception as e:
        r["alloc"] = str(e)
    details = sorted(it.get_tensor_details(), key=lambda d: d["index"])
    r["shapes"] = [[int(x) for x in d["shape"]] for d in details]
    r["nulls"], r["values"] = [], {}
    if "alloc" not in r:
        for d in details:
            if d["dtype"].__name__ in ("object_", "bytes_", "str_"):
                continue  # reading a string tensor without data crashes the wrapper
            try:
                v = it.get_tensor(d["index"])
            except ValueError:
                r["nulls"].append(d["index"])
                continue
            if v.size <= 64:
                r["values"][d["index"]] = v.reshape(-1).tolist()
    print(json.dumps(r), file=out, flush=True)
"""


def tflite_truth(paths: list[Path], workdir: Path) -> dict[str, dict[str, Any]]:
    """What TFLite reports for each model, from a child process restarted past any model that crashes it."""
    results: dict[str, dict[str, Any]] = {}
    out = workdir / "truth.jsonl"
    todo = [str(p) for p in paths]
    while todo:
        listing = workdir / "todo.txt"
        listing.write_text("\n".join(todo) + "\n")
        run = subprocess.run([sys.executable, "-c", _WORKER, str(listing), str(out)], capture_output=True,
                             text=True, check=False)
        started = None
        for line in out.read_text().splitlines() if out.exists() else []:
            rec = json.loads(line)
            if rec.pop("started", False):
                started = rec["path"]
            else:
                results[rec["path"]], started = rec, None
        if started is not None:
            results[started] = {"path": started, "crash": True}
        left = [p for p in todo if p not in results]
        if len(left) == len(todo):  # the worker died before its first model: TFLite cannot be run here
            raise RuntimeError(f"the TFLite worker made no progress: {run.stderr[-2000:]}")
        todo = left
    return results


def _dropped_while_outputs(sg: Any, model: TfliteModel) -> set[int]:
    """WHILE outputs the body passes through and nothing reads: while.cc removes them from the node and
    frees them, so TFLite leaves them without data (and at their declared shape)."""
    used = {t for op in sg.operators for t in op.inputs} | set(sg.outputs)
    dropped = set()
    for op in sg.operators:
        if op.builtin_code == B.WHILE:
            body = model.subgraphs[op.options.body_subgraph_index]
            dropped |= {t for k, t in enumerate(op.outputs)
                        if k < len(body.inputs) and body.inputs[k] == body.outputs[k] and t not in used}
    return dropped


def disagreements(model: TfliteModel, got: PreparedSubgraph, truth: dict[str, Any]) -> list[str]:
    """How our simulation of subgraph 0 differs from what TFLite reported for the same file."""
    name = Path(truth["path"]).name.split("__")[-1]  # an altered copy is named <folder>__<file>
    if "alloc" in truth:
        unresolved = any(msg in truth["alloc"] for _, msg in got.unresolved_custom_ops)
        if got.failure is None and name not in ARENA_FAILURES and not unresolved:
            return [f"TFLite fails ({truth['alloc'][:120]!r}), we do not"]
        return []
    if got.failure is not None:
        return [f"we fail ({got.failure[:120]!r}), TFLite does not"]
    sg, problems = model.main, []
    nulls = set(truth["nulls"])
    producer = {t: i for i, op in enumerate(sg.operators) for t in op.outputs if t >= 0}
    dropped = _dropped_while_outputs(sg, model)
    for t, tensor in enumerate(sg.tensors):
        dynamic = got.allocation[t] == Allocation.DYNAMIC
        if not dynamic and tuple(truth["shapes"][t]) != got.shapes[t]:
            problems.append(f"tensor {t}: TFLite {truth['shapes'][t]}, we {list(got.shapes[t])}")
        if tensor.type in NO_DATA_TYPES or 0 in got.shapes[t] or t in dropped:
            continue
        if dynamic and t not in nulls:
            problems.append(f"tensor {t}: we say dynamic, TFLite allocated it")
        prepared = t in producer and producer[t] < got.prepared_nodes
        if prepared and not dynamic and t in nulls:
            problems.append(f"tensor {t}: output of prepared node {producer[t]}, TFLite left it unallocated")
        if got.allocation[t] == Allocation.PERSISTENT_RO and t in got.values and str(t) in truth["values"]:
            if got.values[t].reshape(-1).tolist() != truth["values"][str(t)]:
                problems.append(f"tensor {t}: value {got.values[t].reshape(-1).tolist()}, TFLite "
                                f"{truth['values'][str(t)]}")
    return problems


def compare_models(paths: list[Path], workdir: Path) -> tuple[list[str], int, int]:
    """(problems, models compared, tensors compared) of every model our reader and TFLite both load."""
    loaded: dict[Path, TfliteModel] = {}
    for p in paths:
        try:
            loaded[p] = read_model(str(p))
        except Exception:  # noqa: BLE001 - a file nnconv refuses as bad input has nothing to compare
            continue
    truths = tflite_truth(list(loaded), workdir)
    problems, models, tensors = [], 0, 0
    for p, model in loaded.items():
        truth = truths[str(p)]
        if "crash" in truth or "load" in truth:
            continue
        got = prepare_subgraph(model)
        problems += [f"{p.name}: {d}" for d in disagreements(model, got, truth)]
        models += 1
        tensors += sum(1 for a in got.allocation if a != Allocation.DYNAMIC)
    return problems, models, tensors


# -- every model of the repository -------------------------------------------------------------
@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_agrees_with_tflite_on_every_model(corpus: str, tmp_path: Path) -> None:
    folder = CORPORA[corpus]
    paths = sorted(folder.rglob("*.tflite"))
    problems, models, tensors = compare_models(paths, tmp_path)
    assert models > 0 and tensors > 0
    assert not problems, "\n".join(problems)


def _altered(path: Path, kind: str) -> bytes:
    """A copy of a model that makes its kernels compute what the declared shapes do not say."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema

    m = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(path.read_bytes(), 0))
    sg = m.subgraphs[0]
    tensors = sg.tensors or []
    inputs = list(sg.inputs if sg.inputs is not None else [])

    def is_const(t: Any) -> bool:
        return t.buffer != 0 and m.buffers[t.buffer].data is not None and len(m.buffers[t.buffer].data) > 0

    if kind == "scrambled":  # every computed tensor declared 3 larger on each axis
        for i in {o for op in sg.operators or [] for o in op.outputs if o >= 0}:
            if tensors[i].shape is not None:
                tensors[i].shape = np.array([d + 3 if d > 0 else d for d in tensors[i].shape], np.int32)
    elif kind == "signature":  # Keras-style signatures: -1 on the first axis of every non-constant tensor
        for t in tensors:
            if not is_const(t) and t.shape is not None and len(t.shape):
                t.shapeSignature = np.array([-1, *t.shape[1:]], np.int32)
    elif kind == "unconst":  # integer constants that ops read (shapes, axes, paddings...) become inputs
        for op in sg.operators or []:
            for k, i in enumerate(op.inputs if op.inputs is not None else []):
                if k > 0 and i >= 0 and is_const(tensors[i]) and tensors[i].type in (2, 4) and i not in inputs:
                    tensors[i].buffer = 0
                    inputs.append(i)
        sg.inputs = np.array(inputs, np.int32)
    elif kind == "batch":  # graph inputs with another first extent
        for i in inputs:
            if tensors[i].shape is not None and len(tensors[i].shape) and not is_const(tensors[i]):
                tensors[i].shape = np.array([tensors[i].shape[0] * 2 + 1, *tensors[i].shape[1:]], np.int32)
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


@pytest.mark.parametrize("kind", ["scrambled", "signature", "unconst", "batch"])
def test_agrees_with_tflite_on_altered_models(kind: str, tmp_path: Path) -> None:
    """The fixtures' declared shapes mostly equal the computed ones; altered copies make every kernel's
    shape rule, dynamic condition and failure count. Not the hostile fuzz regressions: rewritten, some
    become valid files that TFLite takes seconds to allocate."""
    pytest.importorskip("ai_edge_litert.schema_py_generated")
    paths = []
    for corpus in CORPORA.values():
        for p in sorted(corpus.rglob("*.tflite")):
            if p.parent.name == "fuzz_regressions":
                continue
            try:
                read_model(str(p))
                data = _altered(p, kind)
            except Exception:  # noqa: BLE001 - files nnconv refuses, or the schema package cannot unpack
                continue
            q = tmp_path / f"{p.parent.name}__{p.name}"
            q.write_bytes(data)
            paths.append(q)
    problems, models, _ = compare_models(paths, tmp_path)
    assert models > 100
    assert not problems, "\n".join(problems)


# -- the delegate recordings ----------------------------------------------------------------------
def test_dynamic_tensors_match_the_delegate_recordings() -> None:
    """`refused_dynamic_tensors` exactly where we find a dynamic tensor, and the tensor#N TFLite names;
    `cpu_prepare_failed` where we report a failure."""
    from delegate.recordings import recordings

    problems, compared = [], 0
    for recording in recordings():
        rec, rec_path = recording.data, recording.path
        try:
            model = read_model(str(recording.model))
        except Exception:  # noqa: BLE001 - files nnconv refuses as bad input
            continue
        got, compared = prepare_subgraph(model), compared + 1
        outcomes = {level["outcome"] for level in rec["levels"]}
        text = " ".join(str(level.get("error", "")) + json.dumps(level.get("log", "")) for level in rec["levels"])
        named = re.search(r"tensor#(-?\d+) is a dynamic-sized tensor", text)
        refused = "refused_dynamic_tensors" in outcomes
        if (got.dynamic_tensor is not None) != refused:
            problems.append(f"{rec_path.name}: outcomes {sorted(outcomes)}, dynamic tensor {got.dynamic_tensor}")
        elif refused and named and int(named.group(1)) != got.dynamic_tensor:
            problems.append(f"{rec_path.name}: TFLite names tensor#{named.group(1)}, we {got.dynamic_tensor}")
        if "cpu_prepare_failed" in outcomes and got.failure is None:
            problems.append(f"{rec_path.name}: TFLite fails to prepare, we do not")
    assert compared > 300
    assert not problems, "\n".join(problems)


# -- models built here, each checked against TFLite, then for the fact it shows ------------------------
I32 = np.int32


def checked(data: bytes, tmp_path: Path) -> PreparedSubgraph:
    """Our simulation of the model, after asserting that TFLite agrees with it."""
    path = tmp_path / "model.tflite"
    path.write_bytes(data)
    model = read_model(str(path))
    got = prepare_subgraph(model)
    truth = tflite_truth([path], tmp_path)[str(path)]
    assert "crash" not in truth and "load" not in truth, truth
    problems = disagreements(model, got, truth)
    assert not problems, "\n".join(problems)
    if "alloc" in truth:
        assert got.failure is not None or got.unresolved_custom_ops
    return got


def _keras_flatten(joiner: B) -> bytes:
    """TensorFlow's Keras export of a flatten with an unknown batch: SHAPE -> STRIDED_SLICE -> PACK (or
    CONCATENATION) -> RESHAPE."""
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 6), np.float32, shape_signature=(-1, 4, 6))
    shape = b.tensor("shape", (3,), I32)
    b.op(B.SHAPE, [x], [shape], ShapeOptions(out_type=TensorType.INT32))
    batch = b.tensor("batch", (), I32)
    b.op(B.STRIDED_SLICE, [shape, b.const("b", np.array([0], I32)), b.const("e", np.array([1], I32)),
                           b.const("s", np.array([1], I32))], [batch], StridedSliceOptions(shrink_axis_mask=1))
    new_shape = b.tensor("new_shape", (2,), I32)
    rest = b.const("rest", np.array(24, I32))
    if joiner == B.PACK:
        b.op(B.PACK, [batch, rest], [new_shape], PackOptions(values_count=2, axis=0))
    else:
        b.op(B.CONCATENATION, [batch, rest], [new_shape], ConcatenationOptions(axis=0))
    y = b.tensor("y", (1, 24), np.float32, shape_signature=(-1, 24))
    b.op(B.RESHAPE, [x, new_shape], [y], ReshapeOptions(new_shape=(-1, 24)))
    z = b.tensor("z", (1, 24), np.float32, shape_signature=(-1, 24))
    b.op(B.RELU, [y], [z])
    b.output(z)
    return b.finish()


def test_keras_flatten_through_pack_stops_preparation(tmp_path: Path) -> None:
    # SHAPE and STRIDED_SLICE are computed at Prepare, but PACK is not: RESHAPE's shape input is then
    # unknown, it returns kTfLiteOutputShapeNotKnown, and TFLite stops there naming tensor#-1
    got = checked(_keras_flatten(B.PACK), tmp_path)
    shape, batch, new_shape, relu = 1, 2, 6, 9  # tensor indices in `_keras_flatten`
    assert got.allocation[shape] == got.allocation[batch] == Allocation.PERSISTENT_RO
    assert got.values[shape].tolist() == [1, 4, 6] and got.values[batch].tolist() == 1
    assert got.allocation[new_shape] == Allocation.ARENA_RW
    assert (got.dynamic_tensor, got.dynamic_node, got.prepared_nodes) == (-1, 3, 4)
    assert got.shapes[relu] == (1, 24)  # never prepared: the declared shape


def test_keras_flatten_through_concatenation_is_static(tmp_path: Path) -> None:
    got = checked(_keras_flatten(B.CONCATENATION), tmp_path)
    new_shape = 6
    assert got.allocation[new_shape] == Allocation.PERSISTENT_RO and got.values[new_shape].tolist() == [1, 24]
    assert got.dynamic_tensor is None and got.prepared_nodes == 5


def test_values_computed_at_prepare_feed_later_shapes(tmp_path: Path) -> None:
    b = TfliteBuilder()
    x = b.input("x", (2, 3, 5), np.float32)
    shape = b.tensor("shape", (3,), I32)
    b.op(B.SHAPE, [x], [shape], ShapeOptions(out_type=TensorType.INT32))
    picked = b.tensor("picked", (2,), I32)
    b.op(B.GATHER, [shape, b.const("at", np.array([2, 0], I32))], [picked], GatherOptions(axis=0))
    prod = b.tensor("prod", (), I32)
    b.op(B.REDUCE_PROD, [picked, b.const("axis", np.array([0], I32))], [prod], ReducerOptions())
    doubled = b.tensor("doubled", (2,), I32)
    b.op(B.MUL, [picked, b.const("two", np.array(2, I32))], [doubled], MulOptions())
    filled = b.tensor("filled", (1, 1), np.float32)
    b.op(B.FILL, [doubled, b.const("v", np.array(1.5, np.float32))], [filled])
    ramp = b.tensor("ramp", (1,), I32)
    b.op(B.RANGE, [b.const("r0", np.array(0, I32)), prod, b.const("r1", np.array(3, I32))], [ramp])
    tiled = b.tensor("tiled", (1, 1), I32)
    b.op(B.TILE, [b.const("tv", np.array([[1, 2]], I32)), picked], [tiled])
    b.output(filled, ramp, tiled)
    got = checked(b.finish(), tmp_path)
    assert got.shapes[filled] == (10, 4) and got.shapes[ramp] == (4,) and got.shapes[tiled] == (5, 4)
    assert got.values[ramp].tolist() == [0, 3, 6, 9]
    assert got.allocation[filled] == Allocation.ARENA_RW  # FILL sizes its output but never computes it


def test_strided_slice_masks_on_constants(tmp_path: Path) -> None:
    b = TfliteBuilder()
    x = b.const("x", np.arange(120, dtype=I32).reshape(2, 3, 4, 5))
    specs = [([0, 1], [0, -1], [1, 2], dict(ellipsis_mask=1)),
             ([1, 0, -1], [2, 0, 0], [1, 1, -1], dict(new_axis_mask=2, shrink_axis_mask=1, end_mask=4)),
             ([-1, 0], [0, 3], [-1, 1], dict(begin_mask=1, end_mask=1)),
             ([0, 0, 0, 0], [1, 1, 1, 1], [1, 1, 1, 1], dict(shrink_axis_mask=15)),
             ([5], [-10], [-2], {}), ([0, 2], [0, 0], [1, -1], dict(ellipsis_mask=1, end_mask=2))]
    outs = []
    for k, (begin, end, strides, masks) in enumerate(specs):
        y = b.tensor(f"y{k}", (1,), I32)
        b.op(B.STRIDED_SLICE, [x, b.const(f"b{k}", np.array(begin, I32)), b.const(f"e{k}", np.array(end, I32)),
                               b.const(f"s{k}", np.array(strides, I32))], [y], StridedSliceOptions(**masks))
        outs.append(y)
    b.output(*outs)
    got = checked(b.finish(), tmp_path)
    assert all(got.allocation[y] == Allocation.PERSISTENT_RO and y in got.values for y in outs)


@pytest.mark.parametrize("op", [B.PAD, B.TILE, B.RESHAPE], ids=lambda op: op.name)
def test_runtime_sizes_make_outputs_dynamic(op: B, tmp_path: Path) -> None:
    b = TfliteBuilder()
    x = b.input("x", (2, 3), np.float32)
    relu = b.tensor("relu", (2, 3), np.float32)
    b.op(B.RELU, [x], [relu])
    sizes = b.input("sizes", (2, 2) if op == B.PAD else (2,), I32)
    y = b.tensor("y", (4, 6) if op != B.RESHAPE else (3, 2), np.float32)
    b.op(op, [relu, sizes], [y], ReshapeOptions(new_shape=(3, 2)) if op == B.RESHAPE else None)
    b.output(y)
    got = checked(b.finish(), tmp_path)
    if op == B.RESHAPE:  # sized at Eval but not kTfLiteDynamic: TFLite names no tensor
        assert (got.dynamic_tensor, got.allocation[y]) == (-1, Allocation.ARENA_RW)
    else:
        assert (got.dynamic_tensor, got.allocation[y]) == (y, Allocation.DYNAMIC)
    assert (got.dynamic_node, got.prepared_nodes) == (1, 2)


def test_pad_of_a_scalar_is_dynamic(tmp_path: Path) -> None:
    b = TfliteBuilder()
    x = b.input("x", (), np.float32)
    y = b.tensor("y", (), np.float32)
    b.op(B.PAD, [x, b.const("p", np.zeros((0, 2), I32))], [y])
    b.output(y)
    assert checked(b.finish(), tmp_path).dynamic_tensor == y


@pytest.mark.parametrize("declared, in_signature, want", [
    ((2, 3), None, "static"), ((7, 7), None, "failure"), ((6,), None, "failure"), ((), None, "static"),
    ((2, 4), (-1, 6), "kept"), ((1, 3), (-1, 6), "dynamic")])
def test_slice_trusts_a_fully_specified_output(declared: tuple, in_signature: tuple | None, want: str,
                                                tmp_path: Path) -> None:
    # slice.cc keeps a declared output whose signature has no -1 (the 2.3.0 runtime checks it when it can
    # compute it); a -1 in the input's signature makes an unspecified output dynamic
    b = TfliteBuilder()
    x = b.input("x", (4, 6), np.float32, shape_signature=in_signature)
    out_sig = (-1, 3) if want == "dynamic" else None
    y = b.tensor("y", declared, np.float32, shape_signature=out_sig)
    b.op(B.SLICE, [x, b.const("b", np.array([1, 2], I32)), b.const("s", np.array([2, 3], I32))], [y])
    b.output(y)
    got = checked(b.finish(), tmp_path)
    assert (got.failure is not None) == (want == "failure")
    assert (got.dynamic_tensor == y) == (want == "dynamic")
    if want == "static":
        assert got.shapes[y] == (2, 3)
    if want == "kept":
        assert got.shapes[y] == (2, 4)


def test_transpose_conv_needs_a_file_constant_output_shape(tmp_path: Path) -> None:
    # IsConstantTensor, not IsConstantOrPersistentTensor: an output_shape SHAPE computed is not enough
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 4, 2), np.float32)
    like = b.input("like", (1, 8, 8, 3), np.float32)
    shape = b.tensor("shape", (4,), I32)
    b.op(B.SHAPE, [like], [shape], ShapeOptions(out_type=TensorType.INT32))
    y = b.tensor("y", (1, 8, 8, 3), np.float32)
    b.op(B.TRANSPOSE_CONV, [shape, b.const("w", np.zeros((3, 3, 3, 2), np.float32)), x], [y],
         TransposeConvOptions(padding=0, stride_w=2, stride_h=2))
    b.output(y)
    got = checked(b.finish(), tmp_path)
    assert got.allocation[shape] == Allocation.PERSISTENT_RO
    assert (got.dynamic_tensor, got.dynamic_node) == (y, 1)


def test_topk_waits_for_eval_when_the_input_signature_has_a_minus_one(tmp_path: Path) -> None:
    b = TfliteBuilder()
    x = b.input("x", (2, 5), np.float32, shape_signature=(-1, 5))
    values, indices = b.tensor("values", (2, 2), np.float32), b.tensor("indices", (2, 2), I32)
    b.op(B.TOPK_V2, [x, b.const("k", np.array(2, I32))], [values, indices])
    b.output(values, indices)
    assert checked(b.finish(), tmp_path).dynamic_tensor == values


@pytest.mark.parametrize("same", [True, False])
def test_if_takes_its_shapes_from_the_branches(same: bool, tmp_path: Path) -> None:
    b = TfliteBuilder()
    cond, x = b.input("cond", (1,), np.bool_), b.input("x", (2, 3), np.float32)
    then = b.subgraph("then")
    tx, ty = then.input("tx", (2, 3), np.float32), then.tensor("ty", (2, 3), np.float32)
    then.op(B.RELU, [tx], [ty])
    then.output(ty)
    other = b.subgraph("else")
    ex = other.input("ex", (2, 3), np.float32)
    ey = other.tensor("ey", (2, 3) if same else (3, 2), np.float32)
    other.op(B.TANH if same else B.RESHAPE, [ex], [ey], None if same else ReshapeOptions(new_shape=(3, 2)))
    other.output(ey)
    y = b.tensor("y", (9, 9), np.float32)
    b.op(B.IF, [cond, x], [y], IfOptions(then_subgraph_index=1, else_subgraph_index=2))
    b.output(y)
    got = checked(b.finish(), tmp_path)
    assert (got.shapes[y], got.dynamic_tensor) == (((2, 3), None) if same else ((9, 9), y))


@pytest.mark.parametrize("grows", [False, True])
def test_while_takes_its_shapes_from_the_body(grows: bool, tmp_path: Path) -> None:
    b = TfliteBuilder()
    n, x = b.input("n", (), I32), b.input("x", (2, 3), np.float32)
    cond = b.subgraph("cond")
    ci, _ = cond.input("ci", (), I32), cond.input("cx", (2, 3), np.float32)
    co = cond.tensor("co", (), np.bool_)
    cond.op(B.LESS, [ci, cond.const("ten", np.array(10, I32))], [co])
    cond.output(co)
    body = b.subgraph("body")
    bi, bx = body.input("bi", (), I32), body.input("bx", (2, 3), np.float32)
    bo = body.tensor("bo", (), I32)
    body.op(B.ADD, [bi, body.const("one", np.array(1, I32))], [bo])
    by = body.tensor("by", (4, 3) if grows else (2, 3), np.float32)
    if grows:
        body.op(B.CONCATENATION, [bx, bx], [by], ConcatenationOptions(axis=0))
    else:
        body.op(B.RELU, [bx], [by])
    body.output(bo, by)
    on, ox = b.tensor("on", (), I32), b.tensor("ox", (7, 7), np.float32)
    b.op(B.WHILE, [n, x], [on, ox], WhileOptions(cond_subgraph_index=1, body_subgraph_index=2))
    b.output(on, ox)
    got = checked(b.finish(), tmp_path)
    # a body whose outputs differ from its inputs makes every output dynamic; the first names the refusal
    assert (got.shapes[ox], got.dynamic_tensor) == (((7, 7), on) if grows else ((2, 3), None))


def test_prepare_failures(tmp_path: Path) -> None:
    b = TfliteBuilder()  # conv.cc requires the bias input
    x = b.input("x", (1, 8, 8, 3), np.float32)
    y = b.tensor("y", (1, 8, 8, 4), np.float32)
    b.op(B.CONV_2D, [x, b.const("w", np.zeros((4, 3, 3, 3), np.float32))], [y],
         Conv2DOptions(padding=0, stride_w=1, stride_h=1))
    b.output(y)
    assert "has_bias" in (checked(b.finish(), tmp_path).failure or "")
    # a custom op the builtin resolver does not know fails stock TFLite at its Prepare; the app that runs
    # the model registers it, so preparation goes on (its outputs keep their shapes) and the op is noted
    b = TfliteBuilder()
    x = b.input("x", (2, 3), np.float32)
    r, z = b.tensor("r", (2, 3), np.float32), b.tensor("z", (2, 3), np.float32)
    b.op(B.RELU, [x], [r])
    b.op(B.CUSTOM, [r], [z], custom_code="MyOp")
    b.output(z)
    got = checked(b.finish(), tmp_path)
    assert got.failure is None and got.prepared_nodes == 2
    assert got.unresolved_custom_ops == ((1, "Encountered unresolved custom op: MyOp."),)


def test_a_string_output_is_dynamic_from_the_start() -> None:
    b = TfliteBuilder()
    s, f = b.input("s", (3,), TensorType.STRING), b.input("f", (2,), np.float32)
    y = b.tensor("y", (2,), np.float32)
    b.op(B.RELU, [f], [y])
    b.output(y, s)
    got = prepare_subgraph(read_model(b.finish()))
    assert (got.dynamic_tensor, got.dynamic_node, got.prepared_nodes) == (s, None, 1)


def _unique() -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (6,), np.float32)
    b.op(B.UNIQUE, [x], [b.tensor("values", (6,), np.float32), b.tensor("index", (6,), I32)],
         UniqueOptions(idx_out_type=TensorType.INT32))
    b.output(1, 2)
    return b.finish()


def _var_handle() -> bytes:
    b = TfliteBuilder()
    handle = b.tensor("handle", (), TensorType.RESOURCE)
    b.op(B.VAR_HANDLE, [], [handle], VarHandleOptions(shared_name="v"))
    value = b.tensor("value", (2, 3), np.float32)
    b.op(B.READ_VARIABLE, [handle], [value])
    b.output(value)
    return b.finish()


def _dilate(runtime: bool) -> bytes:
    b = TfliteBuilder()
    x = b.input("x", (2, 3), np.float32)
    factors = b.input("f", (2,), I32) if runtime else b.const("f", np.array([2, 3], I32))
    y = b.tensor("y", (1, 1), np.float32)
    b.op(B.DILATE, [x, factors, b.const("pad", np.array(0, np.float32))], [y])
    b.output(y)
    return b.finish()


def _where() -> bytes:
    b = TfliteBuilder()
    y = b.tensor("y", (1, 1), np.int64)
    b.op(B.WHERE, [b.const("c", np.array([[True, False], [True, True]]))], [y])
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("build, dynamic, shapes", [
    (_unique, 1, {2: (6,)}),  # how many values are unique is known only at Eval
    (_var_handle, 0, {}),  # a resource output is dynamic from the start: preparation stops at once
    (lambda: _dilate(False), None, {2: (3, 7)}),
    (lambda: _dilate(True), 2, {}),
    (_where, None, {0: (3, 2)}),  # a constant condition sizes WHERE's output
], ids=["unique", "var_handle", "dilate", "dilate_runtime", "where_const"])
def test_kernels_that_rarely_appear(build: Any, dynamic: int | None, shapes: dict, tmp_path: Path) -> None:
    got = checked(build(), tmp_path)
    assert got.dynamic_tensor == dynamic
    assert all(got.shapes[t] == s for t, s in shapes.items())
