"""`via_quant8_table` gives the same bits as running the kernel's arithmetic on every element."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.runtime.kernels._quant8_table import via_quant8_table
from nnconv.runtime.kernels.hard_swish import _hard_swish_quant
from nnconv.runtime.kernels.registry import KernelCall


@pytest.mark.parametrize("t,dtype,zp_in,zp_out", [(OperandType.TENSOR_QUANT8_ASYMM, np.uint8, 131, 120),
                                                  (OperandType.TENSOR_QUANT8_ASYMM_SIGNED, np.int8, -7, 4)])
@pytest.mark.parametrize("s_in,s_out", [(0.05, 0.04), (0.2, 0.11), (0.004, 0.003)])
def test_table_equals_direct_arithmetic(t, dtype, zp_in, zp_out, s_in, s_out):
    info = np.iinfo(dtype)
    x = np.random.default_rng(3).integers(info.min, info.max + 1, (2, 3, 5, 7)).astype(dtype)
    call = KernelCall(Operation(OperationType.HARD_SWISH, [0], [1]), [x], [Operand(t, x.shape, s_in, zp_in)],
                      [Operand(t, x.shape, s_out, zp_out)], cache={})
    direct = _hard_swish_quant(call)
    np.testing.assert_array_equal(via_quant8_table(call, _hard_swish_quant), direct)
    np.testing.assert_array_equal(via_quant8_table(call, _hard_swish_quant), direct)  # from the memo
    assert len(call.cache) == 1


@pytest.mark.parametrize("op", [OperationType.MUL, OperationType.ADD, OperationType.SUB])
@pytest.mark.parametrize("constant_slot", [0, 1])
@pytest.mark.parametrize("t,dtype", [(OperandType.TENSOR_QUANT8_ASYMM, np.uint8),
                                     (OperandType.TENSOR_QUANT8_ASYMM_SIGNED, np.int8)])
def test_constant_scalar_operand_table_equals_direct_arithmetic(op, constant_slot, t, dtype):
    """A one-element constant input (x * 1/6, x + 3) makes the binary op a 256-entry table of the other
    input: every byte of it, through the kernel, equals the kernel's direct arithmetic; a non-constant
    scalar input is computed directly and memoizes nothing."""
    from nnconv.nnapi.enums import FuseCode, OperandLifeTime
    from nnconv.runtime.kernels._elementwise import quant_add, quant_mul
    from nnconv.runtime.kernels._quant8_table import via_quant8_pair_table
    info = np.iinfo(dtype)
    x = np.arange(info.min, info.max + 1, dtype=np.int64).astype(dtype).reshape(1, 4, 4, 16)
    scalar = np.array([info.min + 77], dtype=dtype)
    if op is OperationType.MUL:
        compute = lambda c: quant_mul(c, FuseCode.RELU6)  # noqa: E731
    else:
        compute = lambda c: quant_add(c, FuseCode.NONE, subtract=op is OperationType.SUB)  # noqa: E731
    for lifetime, entries in ((OperandLifeTime.CONSTANT_COPY, 1), (OperandLifeTime.TEMPORARY_VARIABLE, 0)):
        ods = [Operand(t, x.shape, 0.05, info.min + 130), Operand(t, x.shape, 0.05, info.min + 130)]
        ods[constant_slot] = Operand(t, (1,), 0.004, info.min + 9, lifetime=lifetime)
        inputs = [scalar, x] if constant_slot == 0 else [x, scalar]
        call = KernelCall(Operation(op, [0, 1], [2]), inputs, ods, [Operand(t, x.shape, 0.07, info.min + 100)],
                          cache={})
        direct = compute(KernelCall(Operation(op, [0, 1], [2]), inputs, ods, call.out_operands))
        for _ in range(2):
            got = via_quant8_pair_table(call, compute, ("test", op))
            assert got.shape == x.shape
            np.testing.assert_array_equal(got, direct)
        assert len([k for k in call.cache if k[0] == "quant8_constant_table"]) == entries


@pytest.mark.parametrize("op", [OperationType.MUL, OperationType.ADD, OperationType.SUB])
@pytest.mark.parametrize("t,dtype", [(OperandType.TENSOR_QUANT8_ASYMM, np.uint8),
                                     (OperandType.TENSOR_QUANT8_ASYMM_SIGNED, np.int8)])
@pytest.mark.parametrize("shape,second_run_table", [((1, 28, 11, 17), True), ((3, 5, 7), False)],
                         ids=["5236-elements", "105-elements"])
def test_small_pair_outputs_use_the_table_from_the_second_run_on(op, t, dtype, shape, second_run_table):
    """Outputs below PAIR_TABLE_MIN_ELEMENTS are computed directly on an operation's first run (a model run
    once builds no table) and, from PAIR_TABLE_REPEAT_MIN_ELEMENTS up, through the 256 x 256 table from its
    second run on, with the same bits (every run checked against the kernel's direct arithmetic); without
    a memo they are always direct."""
    from nnconv.nnapi.enums import FuseCode
    from nnconv.runtime.kernels import _quant8_table
    from nnconv.runtime.kernels._elementwise import quant_add, quant_mul
    from nnconv.runtime.kernels._quant8_table import via_quant8_pair_table
    assert _quant8_table.PAIR_TABLE_REPEAT_MIN_ELEMENTS <= 5236 < _quant8_table.PAIR_TABLE_MIN_ELEMENTS
    info = np.iinfo(dtype)
    rng = np.random.default_rng(8)
    a, b = (rng.integers(info.min, info.max + 1, shape).astype(dtype) for _ in range(2))
    if op is OperationType.MUL:
        compute = lambda c: quant_mul(c, FuseCode.NONE)  # noqa: E731
    else:
        compute = lambda c: quant_add(c, FuseCode.RELU, subtract=op is OperationType.SUB)  # noqa: E731
    ods = [Operand(t, shape, 0.05, info.min + 131), Operand(t, shape, 0.03, info.min + 100)]
    out = [Operand(t, shape, 0.07 if op is not OperationType.MUL else 0.02, info.min + 120)]
    direct = compute(KernelCall(Operation(op, [0, 1], [2]), [a, b], ods, out))
    assert len(np.unique(direct)) > 20
    call = KernelCall(Operation(op, [0, 1], [2]), [a, b], ods, out, cache={})
    for run in range(3):
        np.testing.assert_array_equal(via_quant8_pair_table(call, compute, ("test", op)), direct)
        tables = [k for k in call.cache if k[0] == "quant8_pair_table"]
        assert len(tables) == (1 if second_run_table and run > 0 else 0)
    memoless = KernelCall(Operation(op, [0, 1], [2]), [a, b], ods, out)
    for _ in range(2):
        np.testing.assert_array_equal(via_quant8_pair_table(memoless, compute, ("test", op)), direct)
