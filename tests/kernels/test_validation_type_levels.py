"""The feature level each input type of ADD, SUB, MUL, DIV and RESHAPE needs, and LSTM's two forms, as
Android's validation has them (Broadcast.cpp, Reshape.cpp's validateReshape, LegacyUtils.cpp's LSTM case):
an older operand type is not enough where the operation took it later (int32 RESHAPE at feature level 6, int32
DIV at 4, quant8 SUB at 3), and a type the operation never takes (quant8 DIV, bool RESHAPE) is refused at every
level. The executor, the `.nnapi` loader and `check` run this validation, so a graph Android refuses at the
level does not pass as runnable."""

from __future__ import annotations

import pytest

from nnconv.nnapi.enums import OperandType as O, OperationType as T
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.operations import OperationRefused, OperationView, validate_operation
from nnconv.nnapi.operations.recurrent import LstmSlot

SHAPE = (2, 3)


def _binary(op: T, t: O) -> OperationView:
    q = dict(scale=0.5, zero_point=0) if t in (O.TENSOR_QUANT8_ASYMM, O.TENSOR_QUANT8_ASYMM_SIGNED) else {}
    x = Operand(t, SHAPE, **q)
    ins = [x, x, Operand(O.INT32, ())]
    return OperationView(Operation(op, [0, 1, 2], [3]), ins, [Operand(t, SHAPE, **q)])


def _reshape(t: O) -> OperationView:
    ins = [Operand(t, SHAPE), Operand(O.TENSOR_INT32, (2,))]
    return OperationView(Operation(T.RESHAPE, [0, 1], [2]), ins, [Operand(t, (3, 2))])


CASES = [  # (what, view, the feature level Android validates it at)
    ("int32 ADD", lambda: _binary(T.ADD, O.TENSOR_INT32), 4),
    ("int32 MUL", lambda: _binary(T.MUL, O.TENSOR_INT32), 4),
    ("int32 SUB", lambda: _binary(T.SUB, O.TENSOR_INT32), 4),
    ("int32 DIV", lambda: _binary(T.DIV, O.TENSOR_INT32), 4),
    ("float DIV", lambda: _binary(T.DIV, O.TENSOR_FLOAT32), 2),
    ("quant8 SUB", lambda: _binary(T.SUB, O.TENSOR_QUANT8_ASYMM), 3),
    ("quant8 ADD", lambda: _binary(T.ADD, O.TENSOR_QUANT8_ASYMM), 1),
    ("signed quant8 MUL", lambda: _binary(T.MUL, O.TENSOR_QUANT8_ASYMM_SIGNED), 4),
    ("int32 RESHAPE", lambda: _reshape(O.TENSOR_INT32), 6),
    ("float RESHAPE", lambda: _reshape(O.TENSOR_FLOAT32), 1),
    ("float16 RESHAPE", lambda: _reshape(O.TENSOR_FLOAT16), 3),
]


@pytest.mark.parametrize("what, make, level", CASES, ids=[c[0] for c in CASES])
def test_the_level_android_validates_it_at(what, make, level):
    assert validate_operation(make(), 8) == level
    if level > 1:  # one level below: refused, naming the level it needs
        with pytest.raises(OperationRefused, match=f"needs NNAPI feature level {level}"):
            validate_operation(make(), level - 1)


@pytest.mark.parametrize("make", [lambda: _binary(T.DIV, O.TENSOR_QUANT8_ASYMM), lambda: _reshape(O.TENSOR_BOOL8)],
                         ids=["quant8 DIV", "bool RESHAPE"])
def test_a_type_the_operation_never_takes_is_refused_at_every_level(make):
    with pytest.raises(OperationRefused, match="takes"):
        validate_operation(make(), 8)


def _lstm(n_inputs: int, t: O = O.TENSOR_FLOAT32) -> OperationView:
    ins = [Operand(t, (1, 4)) for _ in range(n_inputs)]
    ins[LstmSlot.ACTIVATION] = Operand(O.INT32, ())
    ins[LstmSlot.CELL_CLIP] = ins[LstmSlot.PROJ_CLIP] = Operand(O.FLOAT32, ())
    outs = [Operand(t, (1, 4)) for _ in range(4)]
    return OperationView(Operation(T.LSTM, list(range(n_inputs)), list(range(n_inputs, n_inputs + 4))), ins, outs)


def test_lstm_with_layer_norm_weights_needs_feature_level_3():
    assert validate_operation(_lstm(23), 8) == 1
    assert validate_operation(_lstm(27), 8) == 3
    with pytest.raises(OperationRefused, match="needs NNAPI feature level 3"):
        validate_operation(_lstm(27), 2)


def test_lstm_takes_23_or_27_inputs_of_float_data():
    with pytest.raises(OperationRefused, match="23 or 27 inputs"):
        validate_operation(_lstm(25), 8)
    with pytest.raises(OperationRefused, match="TENSOR_FLOAT32 or TENSOR_FLOAT16"):
        validate_operation(_lstm(23, O.TENSOR_INT32), 8)
