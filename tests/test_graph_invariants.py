"""The graph invariants Android checks before it compiles a model (`nnconv/nnapi/graph_invariants.py`):
each one broken on a hand-built NNAPI model (its kind and message), in the main subgraph and in an IF
branch; `validate_model` and the executor refuse such a model before anything runs; a `.nnapi` file breaking
one is bad input for `run` (one line, exit 2); a lowering rule breaking one is refused at check time at its
TFLite op (NNC031), and a lowered partition breaking one is a bug of nnconv (exit 4) naming the op."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

import nnconv
from harness import TfliteBuilder, assert_refused, nnconv_options
from nnconv.cli import main
from nnconv.errors import EXIT_INTERNAL, InternalError, ModelValidationError
from nnconv.lowering.convert import lower_ops
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import RULES
from nnconv.nnapi import serialize
from nnconv.nnapi.builder import ModelBuilder
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.graph_invariants import Invariant, graph_violations
from nnconv.nnapi.model import Model
from nnconv.nnapi.validate import validate_model
from nnconv.runtime.executor import Executor
from nnconv.tflite.schema_enums import BuiltinOperator as B

F32 = OperandType.TENSOR_FLOAT32
RELU, ADD = OperationType.RELU, OperationType.ADD
SHAPE = (2, 3)


def _add(sg, a: int, b: int, out: int) -> None:
    sg.add_operation(ADD, [a, b, sg.add_scalar(0)], [out])


def _broken(case: str) -> Model:
    """x -> RELU -> t -> ADD(t, t) -> y, wired to break the invariant `case` (u: a fourth operand, for the
    cases that need one)."""
    mb = ModelBuilder()
    sg = mb.main
    x, t, y = (sg.add_tensor(F32, SHAPE, name=n) for n in ("x", "t", "y"))
    u = sg.add_tensor(F32, SHAPE, name="u") if case in ("read-unwritten", "output-never-written",
                                                        "temporary-never-written") else -1
    if case == "read-before-write":  # the ADD placed before the RELU that writes its input
        _add(sg, t, t, y)
        sg.add_operation(RELU, [x], [t])
    elif case == "reads-own-output":
        sg.add_operation(RELU, [x], [t])
        _add(sg, t, y, y)
    elif case == "read-unwritten":  # u: a temporary nothing writes
        sg.add_operation(RELU, [x], [t])
        _add(sg, t, u, y)
    elif case == "writes-non-temporary":  # the RELU writes the model input
        sg.add_operation(RELU, [x], [t])
        _add(sg, t, t, y)
        sg.add_operation(RELU, [t], [x])
    elif case == "written-twice":
        sg.add_operation(RELU, [x], [t])
        sg.add_operation(RELU, [x], [t])
        _add(sg, t, t, y)
    elif case == "output-never-written":
        sg.add_operation(RELU, [x], [t])
        _add(sg, t, t, u)
        sg.set_io([x], [y, u])
        return mb.model
    elif case == "temporary-never-written":  # unread, but Android wants every operand written
        sg.add_operation(RELU, [x], [t])
        _add(sg, t, t, y)
    sg.set_io([x], [y])
    return mb.model


CASES = [
    ("read-before-write", "main operation 0 (ADD): reads operand 1 (t) before operation 1 (RELU) writes it: "
                          "the operations are out of execution order"),
    ("reads-own-output", "main operation 1 (ADD): reads operand 2 (y), its own output"),
    ("read-unwritten", "main operation 1 (ADD): reads operand 3 (u), which has no value: it is neither a constant, "
                       "an input nor the output of an earlier operation"),
    ("writes-non-temporary", "main operation 2 (RELU): writes operand 0 (x), whose lifetime is SUBGRAPH_INPUT"),
    ("written-twice", "main operation 1 (RELU): writes operand 1 (t) a second time (operation 0 (RELU) wrote it)"),
    ("output-never-written", "main: output operand 2 (y) is never written"),
    ("temporary-never-written", "main: temporary operand 3 (u) is never written"),
]


@pytest.mark.parametrize("case,message", CASES, ids=[c for c, _ in CASES])
def test_each_invariant_on_a_hand_built_model(case, message):
    found = graph_violations(_broken(case))
    assert [v.invariant for v in found] == [Invariant(case)]
    assert str(found[0]).startswith(message)
    with pytest.raises(ModelValidationError) as e:
        validate_model(_broken(case))
    assert any(p.startswith(message) for p in e.value.problems)
    with pytest.raises(ModelValidationError):  # the executor validates as the loader does, before any run
        Executor(_broken(case))


def test_constants_omitted_inputs_and_inputs_have_values():
    """Every lifetime with a value before the first operation may be read by it: a constant, an omitted
    optional input (NO_VALUE), a model input; and operations in order see their producers' outputs."""
    mb = ModelBuilder()
    sg = mb.main
    x, t, y = (sg.add_tensor(F32, SHAPE) for _ in range(3))
    sg.add_operation(RELU, [x], [t])
    _add(sg, t, sg.add_constant(F32, np.ones(SHAPE, np.float32)), y)
    sg.set_io([x], [y])
    validate_model(mb.model, 30)
    got = Executor(mb.model).run([np.full(SHAPE, -2.0, np.float32)])
    np.testing.assert_array_equal(got["out_0"], np.ones(SHAPE, np.float32))
    # (the graph only: which inputs an operation may omit is its own validate's business)
    sg.add_operation(OperationType.PRELU, [sg.add_no_value(F32), y], [sg.add_tensor(F32, SHAPE)])
    assert graph_violations(mb.model) == []


def _if_model(body_case: str | None = None, cyclic: bool = False) -> Model:
    """IF(cond, x) whose branches are x -> RELU; `body_case` breaks the then-branch (its operations out of
    order), `cyclic` makes the else-branch an IF that calls its own subgraph."""
    mb = ModelBuilder()
    refs = []
    for branch in ("then", "else"):
        k, b = mb.add_referenced()
        bx, bt, by = (b.add_tensor(F32, SHAPE, name=f"{branch}_{n}") for n in ("x", "t", "y"))
        if branch == "then" and body_case == "read-before-write":
            b.add_operation(RELU, [bt], [by])
            b.add_operation(RELU, [bx], [bt])
        elif branch == "else" and cyclic:
            bc = b.add_constant(OperandType.TENSOR_BOOL8, np.array([True]))
            b.add_operation(RELU, [bx], [bt])
            b.add_operation(OperationType.IF, [bc, b.add_subgraph_ref(k), b.add_subgraph_ref(k), bt], [by])
        else:
            b.add_operation(RELU, [bx], [bt])
            b.add_operation(RELU, [bt], [by])
        b.set_io([bx], [by])
        refs.append(k)
    sg = mb.main
    cond, x, y = sg.add_tensor(OperandType.TENSOR_BOOL8, (1,)), sg.add_tensor(F32, SHAPE), sg.add_tensor(F32, SHAPE)
    sg.add_operation(OperationType.IF, [cond, sg.add_subgraph_ref(refs[0]), sg.add_subgraph_ref(refs[1]), x], [y])
    sg.set_io([cond, x], [y])
    return mb.model


def test_if_branches_are_checked_as_subgraphs():
    assert graph_violations(_if_model()) == []
    found = graph_violations(_if_model("read-before-write"))
    assert [(v.invariant, v.subgraph, v.operation) for v in found] == [(Invariant.READ_BEFORE_WRITE, 1, 0)]
    assert str(found[0]).startswith("referenced[0] operation 0 (RELU): reads operand 1 (then_t) before "
                                    "operation 1 (RELU) writes it")


def test_a_subgraph_calling_itself_is_refused():
    """Android refuses circular subgraph references; run would recurse without end."""
    found = graph_violations(_if_model(cyclic=True))
    assert [(v.invariant, v.subgraph) for v in found] == [(Invariant.SUBGRAPH_CYCLE, 2)]
    assert str(found[0]) == "referenced[1]: reaches itself through its IF / WHILE references (1 -> 1)"
    with pytest.raises(ModelValidationError, match="reaches itself"):
        Executor(_if_model(cyclic=True))


def relu_chain_model() -> bytes:
    """x -> RELU -> h -> RELU -> y (float32)."""
    b = TfliteBuilder()
    x = b.input("x", (1, 4, 5), np.float32)
    h = b.tensor("h", (1, 4, 5), np.float32)
    b.op(B.RELU, [x], [h])
    y = b.tensor("y", (1, 4, 5), np.float32)
    b.op(B.RELU, [h], [y])
    b.output(y)
    return b.finish()


@pytest.mark.parametrize("order", ["reversed", "first-twice"])
def test_an_nnapi_file_breaking_an_invariant_is_bad_input_for_run(tmp_path, order):
    """A converted model whose operations were reordered (or one duplicated over the other) on disk: run
    refuses it on load, one line, exit 2, writing nothing."""
    converted = nnconv.convert(relu_chain_model(), api_level=30).converted
    ops = converted.model.main.operations
    converted.model.main.operations = ops[::-1] if order == "reversed" else [ops[0], ops[0]]
    path = tmp_path / "m.nnapi"
    serialize.save(path, [converted])
    np.savez(tmp_path / "in.npz", x=np.ones((1, 4, 5), np.float32))
    result = CliRunner().invoke(main, ["run", str(path), "--inputs", str(tmp_path / "in.npz"), "-o",
                                       str(tmp_path / "o.npz")])
    assert result.exit_code == 2, result.stderr
    errors = [ln for ln in result.stderr.splitlines() if ln.strip()]
    fragment = ("before operation 1 (RELU) writes it" if order == "reversed"
                else "a second time (operation 0 (RELU) wrote it)")
    assert len(errors) == 1 and errors[0].startswith("nnconv: error:") and fragment in errors[0], result.stderr
    assert not (tmp_path / "o.npz").exists()


def _emit_out_of_order(c) -> None:
    """A faulty RELU lowering: RELU(t) -> y emitted before RELU(x) -> t."""
    t = c.temp_like(c.input_operand(0))
    c.emit(OperationType.RELU, [t], [c.output_operand(0)])
    c.emit(OperationType.RELU, [c.input_operand(0)], [t])


def test_a_lowering_breaking_an_invariant_is_refused_at_its_op(monkeypatch):
    """check lowers each op alone and checks the graph of what it emits: the op is refused (NNC031) with the
    broken invariant, where `run` would otherwise have failed after `convert` said 0."""
    monkeypatch.setattr(RULES[B.RELU], "lower", _emit_out_of_order)
    diagnostics = assert_refused(relu_chain_model(), 30, Code.GRAPH_INVARIANT)
    assert [(d.code, d.op_index, d.op_name) for d in diagnostics] == [(Code.GRAPH_INVARIANT, 0, "RELU"),
                                                                       (Code.GRAPH_INVARIANT, 1, "RELU")]
    assert "break a graph invariant (read-before-write): main operation 0 (RELU): reads operand" in \
        diagnostics[0].message


def test_a_lowered_partition_breaking_an_invariant_is_a_bug_naming_the_op(monkeypatch):
    """Lowered without the check (the ops' own graphs unchecked), the partition's broken graph is nnconv's
    bug, exit 4, in the words of the TFLite model."""
    state = nnconv.prepare(relu_chain_model(), 30, options=nnconv_options()).state
    monkeypatch.setattr(RULES[B.RELU], "lower", _emit_out_of_order)
    with pytest.raises(InternalError) as e:
        lower_ops(state)
    assert e.value.exit_code == EXIT_INTERNAL
    assert str(e.value).startswith("the lowered NNAPI model breaks a graph invariant: TFLite op #0 RELU: main "
                                   "operation 0 (RELU): reads operand")
