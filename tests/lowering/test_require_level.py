"""How a lowering rule states a level requirement (docs/adding_an_op.md): `require_operation` /
`require_signature` / `require_operand_type` derive the API level from the NNAPI specs and refuse exactly as
`require_api` with that number would; a `require_api` with a hand-written number says why in a comment, and
where a validator decides that number it must agree with it."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pytest

from harness import single_op_model
from nnconv.lowering.context import CheckContext, spec_api_level
from nnconv.lowering.convert import make_state
from nnconv.lowering.diagnostics import Code
from nnconv.nnapi.enums import OperandType as O, OperationType as T
from nnconv.nnapi.levels import ALL_API_LEVELS, api_level_of_feature_level
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.operations import OperationView, validate_operation
from nnconv.tflite.reader import read_model
from nnconv.tflite.schema_enums import BuiltinOperator

RULES_DIR = Path(__file__).resolve().parents[2] / "nnconv" / "lowering"

# The numbers the rules wrote by hand before they asked the specs (operations, input 0's type): the specs must
# give the same levels, or the conversions would change.
FORMER_NUMBERS = [
    (T.TRANSPOSE, None, 28), (T.FILL, None, 30), (T.DETECTION_POSTPROCESSING, None, 29), (T.PAD, None, 28),
    (T.GATHER, None, 29), (T.TILE, None, 29), (T.PACK, None, 33), (T.STRIDED_SLICE, None, 28),
    (T.SPACE_TO_BATCH_ND, None, 28), (T.BATCH_TO_SPACE_ND, None, 28), (T.SELECT, None, 29),
    (T.EQUAL, None, 29), (T.LOGICAL_AND, None, 29), (T.LOGICAL_NOT, None, 29), (T.QUANTIZED_LSTM, None, 30),
    (T.CAST, None, 29), (T.MEAN, None, 28), (T.REDUCE_SUM, None, 29), (T.REDUCE_ANY, None, 29),
    (T.ARGMAX, None, 29), (T.TOPK_V2, None, 29), (T.QUANTIZE, None, 29), (T.RESIZE_NEAREST_NEIGHBOR, None, 29),
    (T.PRELU, None, 29), (T.WHILE, None, 30), (T.IF, None, 30), (T.GROUPED_CONV_2D, None, 29),
    (T.TRANSPOSE_CONV_2D, None, 29), (T.BATCH_MATMUL, None, 33), (T.LOG_SOFTMAX, None, 29), (T.POW, None, 29),
    (T.MAXIMUM, None, 29), (T.MINIMUM, None, 29),
    ((T.DEQUANTIZE, T.MEAN, T.QUANTIZE), None, 29), ((T.DEQUANTIZE, T.QUANTIZE), None, 29),
    ((T.CAST, T.GATHER), None, 29), ((T.ABS, T.EXP), None, 29), ((T.RELU, T.MINIMUM, T.EXP, T.ADD), None, 29),
    ((T.SELECT, T.STRIDED_SLICE, T.NOT_EQUAL), None, 29), ((T.SLICE, T.GATHER), None, 29),
    ((T.STRIDED_SLICE, T.CONCATENATION), None, 28), ((T.RESHAPE, T.GATHER), None, 29),
    ((T.DIV, T.FLOOR), None, 28), ((T.FLOOR, T.DIV, T.LESS, T.SELECT), None, 29),
    ((T.DEQUANTIZE, T.MUL, T.QUANTIZE), None, 29),
    (T.TILE, O.TENSOR_INT32, 29), (T.EXPAND_DIMS, O.TENSOR_INT32, 29), (T.MAXIMUM, O.TENSOR_INT32, 29),
    (T.NEG, O.TENSOR_INT32, 29), (T.ABS, O.TENSOR_INT32, 30), (T.SLICE, O.TENSOR_INT32, 29),
    (T.SPLIT, O.TENSOR_INT32, 29), (T.DEQUANTIZE, O.TENSOR_QUANT8_SYMM, 29),
    (T.DEQUANTIZE, O.TENSOR_QUANT8_SYMM_PER_CHANNEL, 29),
    (T.RESHAPE, O.TENSOR_INT32, 33), (T.ADD, O.TENSOR_INT32, 30), ((T.SUB, T.MUL), O.TENSOR_INT32, 30),
    (T.DIV, O.TENSOR_INT32, 30), ((T.DIV, T.MUL, T.SUB), O.TENSOR_INT32, 30),
]


def _id(ops, t) -> str:
    names = ops.name if isinstance(ops, T) else "+".join(op.name for op in ops)
    return f"{names}-{t.name}" if t is not None else names


@pytest.mark.parametrize("ops, input_type, number", FORMER_NUMBERS,
                         ids=[_id(ops, t) for ops, t, _ in FORMER_NUMBERS])
def test_spec_level_equals_the_former_number(ops, input_type, number):
    assert spec_api_level(ops, input_type) == number


def test_operand_type_levels():
    assert O.TENSOR_QUANT8_ASYMM_SIGNED.min_feature_level == 4  # API 30: int8 without the uint8 + 128 shift
    assert O.TENSOR_QUANT8_SYMM_PER_CHANNEL.min_feature_level == 3  # API 29: per-channel weights


def test_a_type_the_operation_never_takes_is_a_programming_error():
    with pytest.raises(ValueError, match="ABS takes no TENSOR_QUANT8_ASYMM input"):
        spec_api_level(T.ABS, O.TENSOR_QUANT8_ASYMM)


def _context(level: int) -> CheckContext:
    m = read_model(single_op_model(BuiltinOperator.ABS, [("x", (2, 3), np.float32)], [("y", (2, 3), np.float32)]))
    return CheckContext(make_state(m, level), m.subgraphs[0], m.subgraphs[0].operators[0])


def _diagnostics(level: int, call) -> list:
    c = _context(level)
    ok = call(c)
    return [ok, [(d.code, d.message, d.hint, d.min_api_level) for d in c.diagnostics]]


@pytest.mark.parametrize("level", ALL_API_LEVELS)
def test_helpers_refuse_exactly_as_require_api(level):
    cases = [
        (lambda c: c.require_operation(T.FILL), lambda c: c.require_api(30, "FILL")),
        (lambda c: c.require_operation((T.DEQUANTIZE, T.QUANTIZE), "x (DEQUANTIZE / QUANTIZE)", "h"),
         lambda c: c.require_api(29, "x (DEQUANTIZE / QUANTIZE)", "h")),
        (lambda c: c.require_operation(T.BATCH_MATMUL, "BATCH_MATMUL (NNAPI feature level 6)"),
         lambda c: c.require_api(33, "BATCH_MATMUL (NNAPI feature level 6)")),
        (lambda c: c.require_signature(T.ABS, O.TENSOR_INT32, "int32 ABS"), lambda c: c.require_api(30, "int32 ABS")),
        (lambda c: c.require_operand_type(O.TENSOR_QUANT8_ASYMM_SIGNED, "int8 X", hint="requantize"),
         lambda c: c.require_api(30, "int8 X", hint="requantize")),
        (lambda c: c.require_operation(T.MIRROR_PAD), lambda c: c.require_api(34, "MIRROR_PAD")),
    ]
    for derived, hand_written in cases:
        assert _diagnostics(level, derived) == _diagnostics(level, hand_written)


def test_below_the_spec_level_the_helper_refuses_with_api_level():
    c = _context(29)
    assert not c.require_operation(T.FILL)
    (d,) = c.diagnostics
    assert d.code is Code.API_LEVEL and d.min_api_level == 30 and d.message == "FILL needs API 30"
    assert d.hint == "raise --api-level to 30 or above"
    c = _context(30)
    assert c.require_operation(T.FILL) and c.require_signature(T.ABS, O.TENSOR_INT32, "int32 ABS")
    assert c.diagnostics == []


# -- the numbers that stay hand-written ------------------------------------------------------------------

def _hand_written_calls() -> list[tuple[str, int, int]]:
    """(file, line, number) of every `require_api(<literal>, ...)` in the lowering rules."""
    found = []
    for path in sorted([*RULES_DIR.joinpath("rules").rglob("*.py"), RULES_DIR / "common.py"]):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "require_api"
                    and node.args and isinstance(node.args[0], ast.Constant)):
                found.append((str(path), node.lineno, node.args[0].value))
    return found


def test_every_hand_written_number_says_why():
    """A literal level is a fact of the delegate, of an emulation, or of a validator's operand rule the
    specs' declared facts do not hold: a comment on its line or the line above says which."""
    missing = []
    for file, line, _ in _hand_written_calls():
        lines = Path(file).read_text().splitlines()
        if not any("hand-written" in lines[k] for k in (line - 2, line - 1) if k >= 0):
            missing.append(f"{file}:{line}")
    assert not missing, f"require_api with a number and no '# hand-written: why' comment: {missing}"


def _validator_level(op: T, t: O, arity: int) -> int:
    """The feature level `op`'s spec and validator give a plain `t` operation (`arity` tensors of `t`, the fused
    activation scalar where the operation has one)."""
    tensor = Operand(t, (2, 3))
    ins = [tensor] * arity + ([Operand(O.INT32, (), lifetime=tensor.lifetime)] if op in (T.ADD, T.SUB, T.MUL, T.DIV)
                              else [])
    view = OperationView(Operation(op, list(range(len(ins))), [len(ins)]), ins, [Operand(t, (2, 3))])
    return validate_operation(view, 8)


# The int32 signatures the rules derive their levels from: the declared `input_levels` must give what the
# whole validation (the spec and its validator, as the executor and `.nnapi` loader run it) gives.
INT32_SIGNATURES = [(T.ADD, 2), (T.SUB, 2), (T.MUL, 2), (T.DIV, 2), (T.RESHAPE, 1)]


@pytest.mark.parametrize("op, arity", INT32_SIGNATURES, ids=[op.name for op, _ in INT32_SIGNATURES])
def test_declared_int32_levels_agree_with_the_validation(op, arity):
    assert spec_api_level(op, O.TENSOR_INT32) == api_level_of_feature_level(
        _validator_level(op, O.TENSOR_INT32, arity))
