"""WHILE and IF: subgraphs lowered as referenced NNAPI subgraphs; parity with TFLite and refusals."""

from __future__ import annotations

import numpy as np
import pytest

from harness import TfliteBuilder, assert_parity, assert_refused
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.options import (AddOptions, IfOptions, LessOptions, MulOptions, StridedSliceOptions, SubOptions,
                                   WhileOptions)
from nnconv.tflite.schema_enums import BuiltinOperator

F32 = np.float32
RNG = np.random.default_rng(5)
SHAPE = (2, 3, 4)


def if_model(else_op=BuiltinOperator.MUL, custom_else: bool = False, then_pass_through: bool = False,
             flag_of: int | None = None) -> bytes:
    """IF(cond, x): then = x + a (or x itself), else = x * b (or a custom op, which NNAPI cannot lower).
    `flag_of`: cond is element `flag_of` of a bool input `flags` [3] (a STRIDED_SLICE with shrink)."""
    b = TfliteBuilder()
    if flag_of is None:
        cond = b.input("cond", (1,), np.bool_)
    else:
        cond = b.tensor("cond", (), np.bool_)
        b.op(BuiltinOperator.STRIDED_SLICE, [b.input("flags", (3,), np.bool_), *_index_consts(b, flag_of)], [cond],
             StridedSliceOptions(shrink_axis_mask=1))
    x = b.input("x", SHAPE, F32)
    y = b.tensor("y", SHAPE, F32)
    then_sg = b.subgraph("then")
    tx = then_sg.input("tx", SHAPE, F32)
    ty = then_sg.tensor("ty", SHAPE, F32)
    if then_pass_through:
        then_sg.output(tx)
    else:
        then_sg.op(BuiltinOperator.ADD, [tx, then_sg.const("a", RNG.standard_normal(SHAPE).astype(F32))], [ty],
                   AddOptions())
        then_sg.output(ty)
    else_sg = b.subgraph("else")
    ex = else_sg.input("ex", SHAPE, F32)
    ey = else_sg.tensor("ey", SHAPE, F32)
    if custom_else:
        else_sg.op(BuiltinOperator.CUSTOM, [ex], [ey], custom_code="NoSuchOp")
    else:
        else_sg.op(else_op, [ex, else_sg.const("b", RNG.standard_normal(SHAPE).astype(F32))], [ey], MulOptions())
    else_sg.output(ey)
    b.op(BuiltinOperator.IF, [cond, x], [y], IfOptions(then_subgraph_index=b.subgraph_index(then_sg),
                                                       else_subgraph_index=b.subgraph_index(else_sg)))
    b.output(y)
    return b.finish()


def _index_consts(b, k: int) -> list[int]:
    """begin [k], end [k + 1], strides [1]: element k of a vector, with shrink_axis_mask 1."""
    return [b.const(name, np.array([v], np.int32)) for name, v in (("begin", k), ("end", k + 1), ("strides", 1))]


@pytest.mark.parametrize("flag", [True, False], ids=["then", "else"])
def test_if_predicate_sliced_from_a_bool_input(flag):
    """An IF predicate read from a bool input: NNAPI's STRIDED_SLICE has no bool8, so it goes through uint8."""
    def set_flags(feed: dict) -> dict:
        feed["flags"] = np.array([not flag, flag, not flag])
        return feed
    assert_parity(if_model(flag_of=1), api_level=30, input_fn=set_flags,
                  expect_ops=["SELECT", "STRIDED_SLICE", "NOT_EQUAL", "IF"])


@pytest.mark.parametrize("flag", [True, False], ids=["then", "else"])
def test_if_parity(flag):
    def set_cond(feed: dict) -> dict:
        feed["cond"] = np.array([flag])
        return feed
    assert_parity(if_model(), api_level=30, expect_ops=["IF"], input_fn=set_cond)


@pytest.mark.parametrize("flag", [True, False], ids=["then", "else"])
def test_if_branch_returning_its_input_gets_a_copy(flag):
    def set_cond(feed: dict) -> dict:
        feed["cond"] = np.array([flag])
        return feed
    result = assert_parity(if_model(then_pass_through=True), api_level=30, input_fn=set_cond)
    then_ops = [op.type.name for op in result.converted.model.referenced[0].operations]
    assert then_ops == ["RESHAPE"]


def test_if_needs_api30():
    assert_refused(if_model(), 29, Code.API_LEVEL, min_api_level=30)


def test_if_reports_problems_inside_a_branch():
    diags = assert_refused(if_model(custom_else=True), 30, Code.CUSTOM_OPERATOR)
    inner = [d for d in diags if d.code is Code.CUSTOM_OPERATOR]
    assert inner and inner[0].subgraph == 2


def run_once_while_model(pass_through: bool = False, dynamic_batch: bool = False) -> bytes:
    """WHILE(done=False, x): cond = NOT done; body: done' = done OR true, x' = x * 2 + x. Runs once."""
    b = TfliteBuilder()
    done = b.input("done", (1,), np.bool_)
    x = b.input("x", SHAPE, F32, shape_signature=(-1, *SHAPE[1:]) if dynamic_batch else None)
    done_out, x_out = b.tensor("done_out", (1,), np.bool_), b.tensor("x_out", SHAPE, F32)
    cond = b.subgraph("cond")
    cd, cx = cond.input("cd", (1,), np.bool_), cond.input("cx", SHAPE, F32)
    keep_going = cond.tensor("keep_going", (1,), np.bool_)
    cond.op(BuiltinOperator.LOGICAL_NOT, [cd], [keep_going])
    cond.output(keep_going)
    body = b.subgraph("body")
    bd, bx = body.input("bd", (1,), np.bool_), body.input("bx", SHAPE, F32)
    bd2 = body.tensor("bd2", (1,), np.bool_)
    body.op(BuiltinOperator.LOGICAL_OR, [bd, body.const("true", np.array([True]))], [bd2])
    if pass_through:
        body.output(bd2, bx)
    else:
        twice = body.tensor("twice", SHAPE, F32)
        bx2 = body.tensor("bx2", SHAPE, F32)
        body.op(BuiltinOperator.MUL, [bx, body.const("two", np.full(SHAPE, 2, F32))], [twice], MulOptions())
        body.op(BuiltinOperator.ADD, [twice, bx], [bx2], AddOptions())
        body.output(bd2, bx2)
    b.op(BuiltinOperator.WHILE, [done, x], [done_out, x_out],
         WhileOptions(cond_subgraph_index=b.subgraph_index(cond), body_subgraph_index=b.subgraph_index(body)))
    b.output(done_out, x_out)
    return b.finish()


def _not_done(feed: dict) -> dict:
    feed["done"] = np.array([False])
    return feed


def test_while_parity_runs_body():
    result = assert_parity(run_once_while_model(), api_level=30, expect_ops=["WHILE"], input_fn=_not_done)
    model = result.converted.model
    assert len(model.referenced) == 2
    assert [op.type.name for op in model.referenced[1].operations] == ["LOGICAL_OR", "MUL", "ADD"]


def test_while_needs_api30():
    assert_refused(run_once_while_model(), 29, Code.API_LEVEL, min_api_level=30)


def test_while_with_dynamic_loop_variable_refused():
    assert_refused(run_once_while_model(dynamic_batch=True), 30, Code.DYNAMIC_SHAPE)


def test_while_invariant_model_output_is_copied():
    # The body returns x unchanged and x_out is a model output: x becomes an input-only loop operand and
    # x_out a RESHAPE copy of the WHILE's input.
    result = assert_parity(run_once_while_model(pass_through=True), api_level=30, input_fn=_not_done)
    assert [op.type.name for op in result.converted.model.main.operations] == ["WHILE", "RESHAPE"]


def counting_while_model(limit: int = 5, custom_cond: bool = False, limits_input: bool = False) -> bytes:
    """WHILE(i=0, x): cond = i < limit; body: i' = i + 1, x' = x * 0.5 - 1. Runs `limit` times.
    `limits_input`: the limit is element 1 of an int32 input `limits` [3] that the loop carries unchanged
    (a data-dependent trip count: the cond slices it)."""
    b = TfliteBuilder()
    i = b.input("i", (1,), np.int32)
    x = b.input("x", SHAPE, F32)
    i_out, x_out = b.tensor("i_out", (1,), np.int32), b.tensor("x_out", SHAPE, F32)
    cond = b.subgraph("cond")
    ci, cx = cond.input("ci", (1,), np.int32), cond.input("cx", SHAPE, F32)
    more = cond.tensor("more", (1,), np.bool_)
    if custom_cond:
        cond.op(BuiltinOperator.CUSTOM, [ci], [more], custom_code="NoSuchOp")
    elif limits_input:
        sliced = cond.tensor("limit", (), np.int32)
        cond.op(BuiltinOperator.STRIDED_SLICE, [cond.input("cl", (3,), np.int32), *_index_consts(cond, 1)],
                [sliced], StridedSliceOptions(shrink_axis_mask=1))
        cond.op(BuiltinOperator.LESS, [ci, sliced], [more], LessOptions())
    else:
        cond.op(BuiltinOperator.LESS, [ci, cond.const("limit", np.array([limit], np.int32))], [more],
                LessOptions())
    cond.output(more)
    body = b.subgraph("body")
    bi, bx = body.input("bi", (1,), np.int32), body.input("bx", SHAPE, F32)
    limits = [body.input("bl", (3,), np.int32)] if limits_input else []
    bi2 = body.tensor("bi2", (1,), np.int32)
    half, bx2 = body.tensor("half", SHAPE, F32), body.tensor("bx2", SHAPE, F32)
    body.op(BuiltinOperator.ADD, [bi, body.const("one", np.array([1], np.int32))], [bi2], AddOptions())
    body.op(BuiltinOperator.MUL, [bx, body.const("h", np.full(SHAPE, 0.5, F32))], [half], MulOptions())
    body.op(BuiltinOperator.SUB, [half, body.const("m1", np.ones(SHAPE, F32))], [bx2], SubOptions())
    body.output(bi2, bx2, *limits)
    extra_in = [b.input("limits", (3,), np.int32)] if limits_input else []
    extra_out = [b.tensor("limits_out", (3,), np.int32)] if limits_input else []
    b.op(BuiltinOperator.WHILE, [i, x, *extra_in], [i_out, x_out, *extra_out],
         WhileOptions(cond_subgraph_index=b.subgraph_index(cond), body_subgraph_index=b.subgraph_index(body)))
    b.output(i_out, x_out)
    return b.finish()


def test_while_counting_loop_parity():
    def start_at_zero(feed: dict) -> dict:
        feed["i"] = np.array([0], np.int32)
        return feed
    m = counting_while_model()
    assert_parity(m, api_level=30, expect_ops=["WHILE"], input_fn=start_at_zero)
    assert_refused(m, 29, Code.API_LEVEL, min_api_level=30)


@pytest.mark.parametrize("limit", [0, 1, 4])
def test_while_trip_count_sliced_from_an_int32_input(limit):
    """The cond reads its limit from an int32 loop variable (STRIDED_SLICE, which NNAPI lacks for int32:
    a SLICE)."""
    def feed_limits(feed: dict) -> dict:
        feed["i"] = np.array([0], np.int32)
        feed["limits"] = np.array([100, limit, -100], np.int32)
        return feed
    m = counting_while_model(limits_input=True)
    result = assert_parity(m, api_level=30, input_fn=feed_limits)
    cond = result.converted.model.referenced[0]
    assert [op.type.name for op in cond.operations] == ["SLICE", "LESS"]


def test_while_problem_inside_cond_reported():
    diags = assert_refused(counting_while_model(custom_cond=True), 30, Code.CUSTOM_OPERATOR)
    inner = [d for d in diags if d.code is Code.CUSTOM_OPERATOR]
    assert inner and inner[0].subgraph == 1


def invariant_while_model(consume_invariant_output: bool = False) -> bytes:
    """WHILE(i, x, limit, scale) as TF's while_loop lowers it: the body returns limit and scale unchanged.
    cond = i < limit; body: i' = i + 1, x' = x * scale + 1."""
    b = TfliteBuilder()
    i = b.input("i", (1,), np.int32)
    x = b.input("x", SHAPE, F32)
    limit = b.input("limit", (1,), np.int32)
    scale = b.const("scale", np.full(SHAPE, 0.75, F32))
    outs = [b.tensor("i_out", (1,), np.int32), b.tensor("x_out", SHAPE, F32),
            b.tensor("limit_out", (1,), np.int32), b.tensor("scale_out", SHAPE, F32)]
    cond = b.subgraph("cond")
    ci, _cx, cl, _cs = (cond.input("ci", (1,), np.int32), cond.input("cx", SHAPE, F32),
                        cond.input("cl", (1,), np.int32), cond.input("cs", SHAPE, F32))
    more = cond.tensor("more", (1,), np.bool_)
    cond.op(BuiltinOperator.LESS, [ci, cl], [more], LessOptions())
    cond.output(more)
    body = b.subgraph("body")
    bi, bx, bl, bs = (body.input("bi", (1,), np.int32), body.input("bx", SHAPE, F32),
                      body.input("bl", (1,), np.int32), body.input("bs", SHAPE, F32))
    bi2 = body.tensor("bi2", (1,), np.int32)
    scaled, bx2 = body.tensor("scaled", SHAPE, F32), body.tensor("bx2", SHAPE, F32)
    body.op(BuiltinOperator.ADD, [bi, body.const("one", np.array([1], np.int32))], [bi2], AddOptions())
    body.op(BuiltinOperator.MUL, [bx, bs], [scaled], MulOptions())
    body.op(BuiltinOperator.ADD, [scaled, body.const("c1", np.ones(SHAPE, F32))], [bx2], AddOptions())
    body.output(bi2, bx2, bl, bs)
    b.op(BuiltinOperator.WHILE, [i, x, limit, scale], outs,
         WhileOptions(cond_subgraph_index=b.subgraph_index(cond), body_subgraph_index=b.subgraph_index(body)))
    if consume_invariant_output:
        # A consumer of the loop-invariant output reads the WHILE's input operand itself.
        y = b.tensor("y", SHAPE, F32)
        b.op(BuiltinOperator.MUL, [outs[1], outs[3]], [y], MulOptions())
        b.output(outs[0], y)
    else:
        b.output(outs[0], outs[1])
    return b.finish()


@pytest.mark.parametrize("consume", [False, True], ids=["invariants-unused", "invariant-output-consumed"])
def test_while_loop_invariants_become_input_only_operands(consume):
    def feed(d: dict) -> dict:
        d["i"] = np.array([1], np.int32)
        d["limit"] = np.array([4], np.int32)
        return d
    result = assert_parity(invariant_while_model(consume), api_level=30, input_fn=feed)
    model = result.converted.model
    (loop,) = [op for op in model.main.operations if op.type.name == "WHILE"]
    assert len(loop.inputs) == 2 + 4 and len(loop.outputs) == 2
    assert len(model.referenced[1].output_indexes) == 2  # the body returns the computed i and x only


def flag_cond_while_model() -> bytes:
    """WHILE(go, x): the cond returns the bool variable `go` itself; body: go' = go AND false, x' = 3x."""
    b = TfliteBuilder()
    go, x = b.input("go", (1,), np.bool_), b.input("x", SHAPE, F32)
    go_out, x_out = b.tensor("go_out", (1,), np.bool_), b.tensor("x_out", SHAPE, F32)
    cond = b.subgraph("cond")
    cg, _cx = cond.input("cg", (1,), np.bool_), cond.input("cx", SHAPE, F32)
    cond.output(cg)
    body = b.subgraph("body")
    bg, bx = body.input("bg", (1,), np.bool_), body.input("bx", SHAPE, F32)
    bg2, bx2 = body.tensor("bg2", (1,), np.bool_), body.tensor("bx2", SHAPE, F32)
    body.op(BuiltinOperator.LOGICAL_AND, [bg, body.const("false", np.array([False]))], [bg2])
    body.op(BuiltinOperator.MUL, [bx, body.const("three", np.full(SHAPE, 3, F32))], [bx2], MulOptions())
    body.output(bg2, bx2)
    b.op(BuiltinOperator.WHILE, [go, x], [go_out, x_out],
         WhileOptions(cond_subgraph_index=b.subgraph_index(cond), body_subgraph_index=b.subgraph_index(body)))
    b.output(x_out)
    return b.finish()


def test_while_cond_returning_a_loop_variable_gets_a_copy():
    def go(feed: dict) -> dict:
        feed["go"] = np.array([True])
        return feed
    result = assert_parity(flag_cond_while_model(), api_level=30, input_fn=go)
    assert [op.type.name for op in result.converted.model.referenced[0].operations] == ["LOGICAL_AND"]
