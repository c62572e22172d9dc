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
