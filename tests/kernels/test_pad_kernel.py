"""PAD / PAD_V2 kernels against np.pad of the requantized input: every rank up to 4, zero and nonzero
amounts on every dimension, empty dimensions, float32 / float16 / uint8 / int8, pad values and an output
quantization differing from the input's; the memoized plan and pooled output buffers reused across runs."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from nnconv.nnapi.enums import OperandLifeTime
from nnconv.nnapi.enums import OperandType as T
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels import KERNELS, KernelCall
from nnconv.runtime.buffers import BufferPool

KINDS = {np.float32: T.TENSOR_FLOAT32, np.float16: T.TENSOR_FLOAT16, np.uint8: T.TENSOR_QUANT8_ASYMM,
         np.int8: T.TENSOR_QUANT8_ASYMM_SIGNED}


def _run(op, x, pads, in_q, out_q, value=None, pool=None, cache=None):
    kind = KINDS[x.dtype.type]
    const = OperandLifeTime.CONSTANT_COPY
    ods = [Operand(type=kind, dimensions=x.shape, scale=in_q[0], zero_point=in_q[1]),
           Operand(type=T.TENSOR_INT32, dimensions=pads.shape, lifetime=const)]
    arrays = [x, pads]
    if op is OperationType.PAD_V2:
        scalar = {T.TENSOR_FLOAT32: (T.FLOAT32, np.float32), T.TENSOR_FLOAT16: (T.FLOAT16, np.float16)}.get(
            kind, (T.INT32, np.int32))
        ods.append(Operand(type=scalar[0], lifetime=const))
        arrays.append(np.array(value, scalar[1]))
    out_shape = tuple(int(n + a + b) for n, (a, b) in zip(x.shape, pads))
    out = Operand(type=kind, dimensions=out_shape, scale=out_q[0], zero_point=out_q[1])
    runner = type("Runner", (), {"pool": pool})() if pool is not None else None
    call = KernelCall(Operation(op, list(range(len(arrays))), [len(arrays)]), arrays, ods, [out], runner=runner,
                      cache=cache)
    return KERNELS[op](call)[0], ods[0], out


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_pad_is_np_pad_of_the_requantized_input(data):
    dtype = data.draw(st.sampled_from(list(KINDS)))
    rank = data.draw(st.integers(1, 4))
    shape = tuple(data.draw(st.integers(0 if d == 0 else 1, 5)) for d in range(rank))
    pads = np.array([[data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))] for _ in range(rank)], np.int32)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    quant = dtype in (np.uint8, np.int8)
    if quant:
        info = np.iinfo(dtype)
        x = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
        in_q = (0.5, int(rng.integers(info.min, info.max, endpoint=True)))
        out_q = in_q if data.draw(st.booleans()) else (0.25, int(rng.integers(info.min, info.max, endpoint=True)))
    else:
        x = rng.standard_normal(shape).astype(dtype)
        in_q = out_q = (0.0, 0)
    op = data.draw(st.sampled_from([OperationType.PAD, OperationType.PAD_V2]))
    if op is OperationType.PAD_V2:
        value = int(rng.integers(info.min, info.max, endpoint=True)) if quant else float(rng.standard_normal())
    else:
        value = out_q[1] if quant else 0.0
    pool, cache = BufferPool(plan=False), {}
    for _ in range(2):  # the second run: the memoized plan, and a reused pooled buffer holding the first output
        got, in_od, out_od = _run(op, x, pads, in_q, out_q, value, pool, cache)
        want = np.pad(requantize_to(x, in_od, out_od), pads.tolist(), constant_values=np.array(value, dtype))
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)
        pool.give(got)
