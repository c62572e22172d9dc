"""DENSIFY and sparse constants: densified at conversion time, parity with TFLite's DENSIFY kernel."""

from __future__ import annotations

import numpy as np
import pytest

from harness import assert_parity, assert_refused, filter_csr
from nnconv.lowering.diagnostics import Code
from nnconv.tflite.builder import TfliteBuilder
from nnconv.tflite.ir import DimensionMetadata, Sparsity
from nnconv.tflite.options import AddOptions, Conv2DOptions, FullyConnectedOptions
from nnconv.tflite.schema_enums import BuiltinOperator, Padding
from nnconv.tflite.sparsity import densify

RNG = np.random.default_rng(11)


def csr_2d(dense: np.ndarray) -> tuple[np.ndarray, Sparsity]:
    """Row-major CSR over the last axis of a 2-D array: dim 0 DENSE, dim 1 SPARSE_CSR."""
    rows, cols = np.nonzero(dense)
    segs = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))])
    sp = Sparsity(traversal_order=(0, 1), block_map=(),
                  dim_metadata=(DimensionMetadata(0, dense.shape[0]),
                                DimensionMetadata(1, 0, tuple(int(s) for s in segs), tuple(int(c) for c in cols))))
    return dense[rows, cols], sp


def block_csr(dense: np.ndarray, block: int) -> tuple[np.ndarray, Sparsity]:
    """1 x `block` blocks along dim 1 (TFLite's sparse FULLY_CONNECTED format): levels d0 DENSE,
    d1 SPARSE_CSR over column blocks, d2 DENSE of the block."""
    o, i = dense.shape
    blocks = dense.reshape(o, i // block, block)
    keep = np.abs(blocks).sum(axis=2) != 0
    rows, bcols = np.nonzero(keep)
    segs = np.concatenate([[0], np.cumsum(keep.sum(axis=1))])
    sp = Sparsity(traversal_order=(0, 1, 2), block_map=(1,),
                  dim_metadata=(DimensionMetadata(0, o),
                                DimensionMetadata(1, 0, tuple(int(s) for s in segs), tuple(int(c) for c in bcols)),
                                DimensionMetadata(0, block)))
    return blocks[rows, bcols].reshape(-1), sp


def sparse_matrix(shape, density=0.3, block=1) -> np.ndarray:
    o, i = shape
    mask = RNG.random((o, i // block)) < density
    return (RNG.standard_normal(shape) * np.repeat(mask, block, axis=1)).astype(np.float32)


@pytest.mark.parametrize("block", [1, 4])
def test_densify_matches_dense(block):
    dense = sparse_matrix((6, 12), block=block)
    values, sp = csr_2d(dense) if block == 1 else block_csr(dense, block)
    np.testing.assert_array_equal(densify(values, dense.shape, sp), dense)


def test_densify_rejects_inconsistent_metadata():
    dense = sparse_matrix((4, 6))
    values, sp = csr_2d(dense)
    bad = Sparsity(sp.traversal_order, sp.block_map,
                   (sp.dim_metadata[0], DimensionMetadata(1, 0, sp.dim_metadata[1].array_segments,
                                                          tuple(i + 50 for i in sp.dim_metadata[1].array_indices))))
    from nnconv.tflite.sparsity import SparsityError
    with pytest.raises(SparsityError):
        densify(values, dense.shape, bad)


@pytest.mark.parametrize("api", [27, 30])
@pytest.mark.parametrize("block", [1, 4])
def test_densify_feeding_add_parity(api, block):
    dense = sparse_matrix((5, 8), block=block)
    values, sp = csr_2d(dense) if block == 1 else block_csr(dense, block)
    b = TfliteBuilder()
    x = b.input("x", (5, 8), np.float32)
    w_sparse = b.const("w_sparse", values, shape=(5, 8), sparsity=sp)
    w = b.tensor("w", (5, 8), np.float32)
    y = b.tensor("y", (5, 8), np.float32)
    b.op(BuiltinOperator.DENSIFY, [w_sparse], [w])
    b.op(BuiltinOperator.ADD, [x, w], [y], AddOptions())
    b.output(y)
    assert_parity(b.finish(), api_level=api, expect_ops=["ADD"])


def test_densify_conv_filter_parity():
    dense = (RNG.standard_normal((3, 2, 3, 4)) * (RNG.random((3, 2, 3, 4)) < 0.4)).astype(np.float32)
    values, sp = filter_csr(dense)
    b = TfliteBuilder()
    x = b.input("x", (1, 7, 6, 4), np.float32)
    w_sparse = b.const("w_sparse", values, shape=dense.shape, sparsity=sp)
    w = b.tensor("w", dense.shape, np.float32)
    bias = b.const("bias", RNG.standard_normal(3).astype(np.float32))
    y = b.tensor("y", (1, 7, 6, 3), np.float32)
    b.op(BuiltinOperator.DENSIFY, [w_sparse], [w])
    b.op(BuiltinOperator.CONV_2D, [x, w, bias], [y],
         Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y)
    assert_parity(b.finish(), api_level=27, expect_ops=["CONV_2D"])


def test_densify_of_a_dense_tensor_is_refused():
    b = TfliteBuilder()
    x = b.input("x", (2, 3), np.float32)
    w0 = b.const("w0", np.ones((2, 3), np.float32))
    w = b.tensor("w", (2, 3), np.float32)
    y = b.tensor("y", (2, 3), np.float32)
    b.op(BuiltinOperator.DENSIFY, [w0], [w])
    b.op(BuiltinOperator.ADD, [x, w], [y], AddOptions())
    b.output(y)
    assert_refused(b.finish(), 30, Code.OPERAND_VALUE)


def test_sparse_fully_connected_weights_are_densified():
    dense = sparse_matrix((6, 8), block=4)
    values, sp = block_csr(dense, 4)
    b = TfliteBuilder()
    x = b.input("x", (3, 8), np.float32)
    w = b.const("w", values, shape=(6, 8), sparsity=sp)
    bias = b.const("bias", RNG.standard_normal(6).astype(np.float32))
    y = b.tensor("y", (3, 6), np.float32)
    b.op(BuiltinOperator.FULLY_CONNECTED, [x, w, bias], [y], FullyConnectedOptions())
    b.output(y)
    assert_parity(b.finish(), api_level=27)


@pytest.mark.parametrize("api", [27, 29, 30])
def test_sparse_float16_filter_through_dequantize_is_a_constant(api):
    """MediaPipe's sparse float16 weights: DENSIFY -> DEQUANTIZE (float16 -> float32) -> CONV_2D filter. The
    DEQUANTIZE of the densified constant folds into a float32 constant filter at every level: no CAST (API
    29) and no runtime filter."""
    dense = (RNG.standard_normal((3, 1, 1, 4)) * (RNG.random((3, 1, 1, 4)) < 0.5)).astype(np.float16)
    values, sp = filter_csr(dense)
    b = TfliteBuilder()
    x = b.input("x", (1, 5, 4, 4), np.float32)
    w_sparse = b.const("w_sparse", values, shape=dense.shape, sparsity=sp)
    w16 = b.tensor("w16", dense.shape, np.float16)
    w = b.tensor("w", dense.shape, np.float32)
    y = b.tensor("y", (1, 5, 4, 3), np.float32)
    b.op(BuiltinOperator.DENSIFY, [w_sparse], [w16])
    b.op(BuiltinOperator.DEQUANTIZE, [w16], [w])
    bias = b.const("bias", RNG.standard_normal(3).astype(np.float32))
    b.op(BuiltinOperator.CONV_2D, [x, w, bias], [y], Conv2DOptions(padding=Padding.SAME, stride_w=1, stride_h=1))
    b.output(y)
    result = assert_parity(b.finish(), api_level=api, expect_ops=["CONV_2D"])
    conv = result.converted.model.main
    assert conv.operands[conv.operations[0].inputs[1]].is_constant  # the filter is a constant operand
