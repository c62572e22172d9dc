"""Shape / data-movement / index kernels beyond the CTS vectors: the feature-level 6/7 ops (PACK,
MIRROR_PAD, REVERSE), requantizing copies, shrink-axis validation, HASHTABLE_LOOKUP misses, TOPK ties."""

from __future__ import annotations

import numpy as np
import pytest

from nnconv.errors import ExecutionError
from nnconv.nnapi.enums import OperandType as T, OperationType as Op
from nnconv.nnapi.model import Operand, Operation
from nnconv.nnapi.quantization import requantize_to
from nnconv.runtime.kernels import KERNELS, KernelCall


def run(op, inputs, outs):
    """`inputs`: (array, type[, (scale, zp)]); `outs`: (type, shape[, (scale, zp)]). Returns every output."""
    ods = [Operand(type=s[1], dimensions=np.shape(s[0]), scale=s[2][0] if len(s) > 2 else 0.0,
                   zero_point=s[2][1] if len(s) > 2 else 0) for s in inputs]
    out_ods = [Operand(type=o[0], dimensions=tuple(o[1]), scale=o[2][0] if len(o) > 2 else 0.0,
                       zero_point=o[2][1] if len(o) > 2 else 0) for o in outs]
    call = KernelCall(Operation(op, list(range(len(inputs))), list(range(len(inputs), len(inputs) + len(outs)))),
                      [None if s[0] is None else np.asarray(s[0]) for s in inputs], ods, out_ods)
    return KERNELS[op](call)


def i32(v):
    return (np.asarray(v, np.int32), T.INT32 if np.ndim(v) == 0 else T.TENSOR_INT32)


X = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)


def test_pack_stacks_on_a_new_axis():
    a, b = X, X + 100
    (y,) = run(Op.PACK, [i32(-1), (a, T.TENSOR_FLOAT32), (b, T.TENSOR_FLOAT32)], [(T.TENSOR_FLOAT32, (2, 3, 4, 2))])
    np.testing.assert_array_equal(y, np.stack([a, b], axis=-1))


@pytest.mark.parametrize("mode,np_mode", [(0, "reflect"), (1, "symmetric")])
def test_mirror_pad_modes(mode, np_mode):
    pads = np.array([[1, 0], [2, 2], [0, 3]], np.int32)
    (y,) = run(Op.MIRROR_PAD, [(X, T.TENSOR_FLOAT32), i32(pads), i32(mode)], [(T.TENSOR_FLOAT32, (3, 7, 7))])
    np.testing.assert_array_equal(y, np.pad(X, pads, mode=np_mode))


def test_mirror_pad_reflect_cannot_exceed_extent_minus_one():
    with pytest.raises(ExecutionError):
        run(Op.MIRROR_PAD, [(X, T.TENSOR_FLOAT32), i32([[2, 0], [0, 0], [0, 0]]), i32(0)],
            [(T.TENSOR_FLOAT32, (4, 3, 4))])


def test_reverse_one_axis():
    (y,) = run(Op.REVERSE, [(X, T.TENSOR_FLOAT32), i32([-2])], [(T.TENSOR_FLOAT32, X.shape)])
    np.testing.assert_array_equal(y, X[:, ::-1, :])


def test_requantize_to_matches_the_real_values():
    src = Operand(type=T.TENSOR_QUANT8_ASYMM, scale=0.1, zero_point=10)
    dst = Operand(type=T.TENSOR_QUANT8_ASYMM_SIGNED, scale=0.07, zero_point=-3)
    q = np.arange(256, dtype=np.uint8)
    got = requantize_to(q, src, dst)
    real = (q.astype(np.float64) - 10) * 0.1
    want = np.clip(np.floor(real / 0.07 + 0.5) - 3, -128, 127)
    assert np.abs(got.astype(np.int64) - want).max() <= 1
    assert requantize_to(q, src, src) is q  # identical parameters: a plain copy


def test_transpose_requantizes_a_differently_quantized_output():
    x = np.array([[0, 128], [255, 64]], np.uint8)
    (y,) = run(Op.TRANSPOSE, [(x, T.TENSOR_QUANT8_ASYMM, (0.5, 128)), (None, T.TENSOR_INT32)],
               [(T.TENSOR_QUANT8_ASYMM, (2, 2), (1.0, 128))])
    np.testing.assert_array_equal(y, [[64, 192], [128, 96]])


def test_strided_slice_shrink_must_select_one_element():
    args = [(X, T.TENSOR_FLOAT32), i32([0, 0, 0]), i32([2, 3, 4]), i32([1, 1, 1]), i32(0), i32(0), i32(1)]
    with pytest.raises(ExecutionError):
        run(Op.STRIDED_SLICE, args, [(T.TENSOR_FLOAT32, (3, 4))])
    args[2] = i32([1, 3, 4])
    (y,) = run(Op.STRIDED_SLICE, args, [(T.TENSOR_FLOAT32, (3, 4))])
    np.testing.assert_array_equal(y, X[0])


def test_hashtable_lookup_misses_give_zero_rows():
    keys = np.array([1, 4, 9], np.int32)
    values = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)
    out, hits = run(Op.HASHTABLE_LOOKUP, [i32([9, 2, 1, 10, 0]), i32(keys), (values, T.TENSOR_FLOAT32)],
                    [(T.TENSOR_FLOAT32, (5, 2)), (T.TENSOR_QUANT8_ASYMM, (5,), (1.0, 0))])
    np.testing.assert_array_equal(hits, [1, 0, 1, 0, 0])
    np.testing.assert_array_equal(out, [[5, 6], [0, 0], [1, 2], [0, 0], [0, 0]])


def test_topk_ties_keep_the_lower_index_first():
    x = np.array([[3, 7, 7, 1, 7]], np.int32)
    vals, idx = run(Op.TOPK_V2, [(x, T.TENSOR_INT32), i32(3)], [(T.TENSOR_INT32, (1, 3)), (T.TENSOR_INT32, (1, 3))])
    np.testing.assert_array_equal(vals, [[7, 7, 7]])
    np.testing.assert_array_equal(idx, [[1, 2, 4]])


def test_mean_quantized_truncates_toward_zero():
    x = np.array([[1, 2, 2]], np.uint8)  # sum 5 over 3 -> 1 (truncated), not 2 (rounded)
    (y,) = run(Op.MEAN, [(x, T.TENSOR_QUANT8_ASYMM, (1.0, 0)), i32([1]), i32(0)],
               [(T.TENSOR_QUANT8_ASYMM, (1,), (1.0, 0))])
    np.testing.assert_array_equal(y, [1])
