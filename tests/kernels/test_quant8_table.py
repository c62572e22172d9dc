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
