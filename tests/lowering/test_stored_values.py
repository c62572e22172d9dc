"""Data-movement ops whose int8 / uint8 output is quantized apart from their input.

TFLite's kernels for these ops copy stored values whatever the two tensors' quantization (measured for each
op below: the output bytes are the same with equal or different output parameters), and the converter
writes such pairs (a bidirectional LSTM's REVERSE_V2). The lowering writes the NNAPI op's result with the
input's parameters and carries the bytes to the output with a same-type CAST (`Rule.stored_values_from`).
"""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, assert_bit_exact, assert_parity, assert_refused, single_op_model
from nnconv.lowering.diagnostics import Code
from nnconv.parity import random_inputs
from nnconv.tflite.options import (DepthToSpaceOptions, GatherOptions, PadOptions, ReshapeOptions, ReverseV2Options,
                                   SpaceToDepthOptions, SqueezeOptions, StridedSliceOptions, TileOptions,
                                   TransposeOptions)
from nnconv.tflite.schema_enums import BuiltinOperator as B

I32 = np.int32
# op -> (input shape, output shape, constant inputs, options, NNAPI ops before the CAST at API 30)
CASES = {
    B.TRANSPOSE: ((2, 3, 4), (4, 3, 2), [np.array([2, 1, 0], I32)], TransposeOptions()),
    B.REVERSE_V2: ((2, 3, 4), (2, 3, 4), [np.array([1], I32)], ReverseV2Options()),
    B.RESHAPE: ((2, 3, 4), (6, 4), [np.array([6, 4], I32)], ReshapeOptions(new_shape=[6, 4])),
    B.SQUEEZE: ((1, 3, 4), (3, 4), [], SqueezeOptions(squeeze_dims=[0])),
    B.SLICE: ((2, 3, 4), (1, 2, 3), [np.array([1, 1, 1], I32), np.array([1, 2, 3], I32)], None),
    B.STRIDED_SLICE: ((2, 3, 4), (1, 3, 2), [np.array([1, 0, 0], I32), np.array([2, 3, 4], I32),
                                             np.array([1, 1, 2], I32)], StridedSliceOptions()),
    B.GATHER: ((2, 3, 4), (2, 2, 4), [np.array([2, 0], I32)], GatherOptions(axis=1)),
    B.TILE: ((2, 3), (4, 3), [np.array([2, 1], I32)], TileOptions()),
    B.DEPTH_TO_SPACE: ((1, 2, 2, 4), (1, 4, 4, 1), [], DepthToSpaceOptions(block_size=2)),
    B.SPACE_TO_DEPTH: ((1, 4, 4, 1), (1, 2, 2, 4), [], SpaceToDepthOptions(block_size=2)),
}


def apart_model(op: B, dtype, out_quant=(0.13, -2)) -> bytes:
    """The op on x (scale 0.1) with its output quantized as `out_quant` (zero points relative to x's)."""
    x_shape, y_shape, consts, options = CASES[op]
    zp = 3 if dtype == np.int8 else 130
    inputs = [("x", x_shape, dtype, QuantParams(0.1, zp))] + [(f"c{k}", v) for k, v in enumerate(consts)]
    return single_op_model(op, inputs, [("y", y_shape, dtype, QuantParams(out_quant[0], zp + out_quant[1]))],
                           options)


@pytest.mark.parametrize("op", list(CASES), ids=[op.name for op in CASES])
@pytest.mark.parametrize("dtype,api", [(np.uint8, 29), (np.int8, 29), (np.int8, 30)],
                         ids=["uint8-api29", "int8-api29", "int8-api30"])
def test_output_quantized_apart_gets_the_input_stored_values(op, dtype, api):
    m = apart_model(op, dtype)
    converted = assert_parity(m, api_level=api).converted
    assert converted.model.main.operations[-1].type.name == "CAST"
    for seed in range(2):
        assert_bit_exact(m, api, random_inputs(converted.inputs, seed))


def test_output_quantized_like_the_input_needs_no_cast():
    m = apart_model(B.TRANSPOSE, np.int8, out_quant=(0.1, 0))
    assert_parity(m, api_level=30, expect_ops=["TRANSPOSE"])


def test_quantized_apart_needs_api29_for_the_cast():
    assert_refused(apart_model(B.TRANSPOSE, np.uint8), 28, Code.API_LEVEL, min_api_level=29)


def test_pad_quantized_apart_still_refused():
    """TFLite's PAD fills with the output's zero point, so its bytes are not the input's: no CAST can help."""
    m = single_op_model(B.PAD, [("x", (1, 3, 4), np.int8, QuantParams(0.1, 3)),
                                ("p", np.array([[0, 0], [1, 1], [0, 0]], I32))],
                        [("y", (1, 5, 4), np.int8, QuantParams(0.13, 1))], PadOptions())
    assert_refused(m, 30, Code.QUANTIZATION)
