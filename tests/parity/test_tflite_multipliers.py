"""NNAPI and TFLite form a convolution's requantization multiplier differently (input x filter scale in
float32 vs double): verify explains a quantized difference that comes only from that, and still fails
one that does not."""

from __future__ import annotations

import numpy as np
import pytest

from harness import QuantParams, TfliteBuilder
from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import conv_multipliers, multiply_by_quantized_multiplier
from nnconv.parity.session import VerifyOptions, verify
from nnconv.runtime.kernels import KERNELS
from nnconv.tflite.options import FullyConnectedOptions
from nnconv.tflite.schema_enums import BuiltinOperator

# Scales whose float32 product rounds the 31-bit multiplier 44 units away from the double product's, and
# four accumulators that the two multipliers requantize one step apart (found by a search over scales).
IN_SCALE, FILTER_SCALE, OUT_SCALE = 0.035474796, 0.0012608023, 0.08906603
TIE_ACCUMULATORS = np.array([-226016, -108527, 108527, 226016], dtype=np.int32)


def test_the_two_products_give_different_multipliers_and_outputs():
    nnapi_m, nnapi_s = conv_multipliers(IN_SCALE, np.asarray([FILTER_SCALE]), OUT_SCALE)
    tflite_m, tflite_s = conv_multipliers(IN_SCALE, np.asarray([FILTER_SCALE]), OUT_SCALE, float32_product=False)
    assert (int(nnapi_m[0]), int(tflite_m[0])) == (1104293809, 1104293765) and nnapi_s[0] == tflite_s[0]
    acc = TIE_ACCUMULATORS.astype(np.int64)[:, None]
    nnapi = multiply_by_quantized_multiplier(acc, nnapi_m, nnapi_s)[:, 0]
    tflite = multiply_by_quantized_multiplier(acc, tflite_m, tflite_s)[:, 0]
    assert nnapi.tolist() == [-114, -55, 55, 114] and tflite.tolist() == [-113, -54, 54, 113]


def amplified_tie_model() -> bytes:
    """FC1 with zero weights outputs requant(bias) = the tie accumulators' values (NNAPI: -114, -55, 55,
    114; TFLite one step closer to 0); FC2 subtracts NNAPI's values and scales the remainder by ~3.3, so
    the two arithmetics end 3 LSB apart, beyond the 1 LSB tolerance."""
    b = TfliteBuilder()
    x = b.input("x", (1, 4), np.int8, quant=QuantParams(IN_SCALE, 0))
    w1 = b.const("w1", np.zeros((4, 4), np.int8), quant=QuantParams(FILTER_SCALE, 0))
    b1 = b.const("b1", TIE_ACCUMULATORS, quant=QuantParams(IN_SCALE * FILTER_SCALE, 0))
    h = b.tensor("h", (1, 4), np.int8, quant=QuantParams(OUT_SCALE, 0))
    b.op(BuiltinOperator.FULLY_CONNECTED, [x, w1, b1], [h], FullyConnectedOptions())
    w2_scale, gain = 0.01, 3.3
    out_scale = OUT_SCALE * w2_scale * 127 / gain
    w2 = b.const("w2", (127 * np.eye(4)).astype(np.int8), quant=QuantParams(w2_scale, 0))
    b2 = b.const("b2", (-127 * np.array([-114, -55, 55, 114])).astype(np.int32),
                 quant=QuantParams(OUT_SCALE * w2_scale, 0))
    y = b.tensor("y", (1, 4), np.int8, quant=QuantParams(out_scale, 0))
    b.op(BuiltinOperator.FULLY_CONNECTED, [h, w2, b2], [y], FullyConnectedOptions())
    b.output(y)
    return b.finish()


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "ties.tflite"
    path.write_bytes(amplified_tie_model())
    return str(path)


def test_a_difference_from_the_multipliers_alone_passes_and_is_explained(model_path):
    out = verify(model_path, VerifyOptions()).parity.outputs[0]
    assert out.max_lsb == 3  # NNAPI's arithmetic, 3 LSB from TFLite's kernels: out of the 1 LSB tolerance
    assert out.passed
    assert "NNAPI's own arithmetic" in out.detail and "within 0 LSB" in out.detail


def test_a_fault_on_top_still_fails(model_path):
    real = KERNELS[OperationType.FULLY_CONNECTED]

    def faulty(call):  # a test-only fault: every quantized FULLY_CONNECTED result 2 steps higher
        return [np.clip(out.astype(np.int32) + 2, -128, 127).astype(out.dtype) for out in real(call)]
    out = verify(model_path, VerifyOptions(executor_options={
        "kernel_overrides": {OperationType.FULLY_CONNECTED: faulty}})).parity.outputs[0]
    assert not out.passed
    assert "NNAPI's own arithmetic" not in out.detail
