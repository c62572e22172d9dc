"""Builds fully uint8 models the way the classic `*_quant.tflite` files (mobilenet_v1_1.0_224_quant and its
kin, the NNAPI delegate's first customers) were made: a TF1 graph with fake-quantization nodes on every
activation and weight, converted by the v1 converter with `inference_type=uint8` (per-tensor asymmetric
uint8 everywhere, input stats (127.5, 127.5)). Two networks: a MobileNetV1-style stack at 64x64 and a
small ResNet with a max pool, a concatenation, a spatial mean, a dense layer and softmax. Not committed:
the models go to DIR; `python scripts/sweep_models.py DIR` checks them (docs/model-zoo.md, session 16).

Optional; needs TensorFlow (tested with 2.21). The package and the default tests never import this file.

    python scripts/make_uint8_probes.py DIR
"""

from __future__ import annotations

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf1 = tf.compat.v1
SEED = 0

rng = np.random.default_rng(SEED)


def fq(x, lo: float, hi: float):
    """A fake-quantization node: the converter takes [lo, hi] as the tensor's uint8 range."""
    return tf1.quantization.fake_quant_with_min_max_vars(tf.cast(x, tf.float32), float(lo), float(hi),
                                                         num_bits=8)


def wq(shape: tuple, scale: float = 0.3):
    """A fake-quantized constant weight tensor of N(0, scale^2) values."""
    w = tf.constant(rng.standard_normal(shape).astype(np.float32) * scale)
    return fq(w, -3 * scale, 3 * scale)


def conv(x, cin: int, cout: int, k: int = 3, s: int = 1, act: bool = True, dw: bool = False):
    """A (depthwise) convolution with bias, then ReLU6 into [0, 6] or a linear output in [-4, 4]."""
    if dw:
        y = tf.nn.depthwise_conv2d(x, wq((k, k, cin, 1)), [1, s, s, 1], "SAME")
        cout = cin
    else:
        y = tf.nn.conv2d(x, wq((k, k, cin, cout), 0.3 / np.sqrt(k * k * cin / 9)), [1, s, s, 1], "SAME")
    y = tf.nn.bias_add(y, tf.constant(rng.standard_normal(cout).astype(np.float32) * 0.1))
    if act:
        y = tf.nn.relu6(y)
        return fq(y, 0.0, 6.0)
    return fq(y, -4.0, 4.0)


def mobilenet_v1_mini():
    """MobileNetV1-style: a stride-2 stem, five depthwise-separable blocks, average pool, 1x1 classifier."""
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [1, 64, 64, 3], name="input")
        y = fq(x, -1.0, 1.0)
        y = conv(y, 3, 16, s=2)
        for cin, cout, s in [(16, 32, 1), (32, 64, 2), (64, 64, 1), (64, 128, 2), (128, 128, 1)]:
            y = conv(y, cin, cin, s=s, dw=True)
            y = conv(y, cin, cout, k=1)
        y = tf.nn.avg_pool2d(y, [1, 8, 8, 1], [1, 1, 1, 1], "VALID")
        y = fq(y, 0.0, 6.0)
        y = conv(y, 128, 10, k=1, act=False)
        y = tf.reshape(y, [1, 10])
        y = tf.nn.softmax(y)
        y = fq(y, 0.0, 1.0)
        out = tf.identity(y, name="output")
    return g, x, out


def resnet_mini():
    """Two residual blocks, a max pool, a concatenation, a spatial mean, a dense layer, softmax."""
    g = tf1.Graph()
    with g.as_default():
        x = tf1.placeholder(tf.float32, [1, 32, 32, 3], name="input")
        y = conv(fq(x, -1.0, 1.0), 3, 16)
        for _ in range(2):
            r = conv(y, 16, 16)
            r = conv(r, 16, 16, act=False)
            y = fq(tf.nn.relu6(fq(y + r, -8.0, 8.0)), 0.0, 6.0)
        y = tf.nn.max_pool2d(y, 2, 2, "VALID")
        y = fq(tf.concat([y, conv(y, 16, 8)], axis=3), 0.0, 6.0)
        y = tf.reduce_mean(y, axis=[1, 2])
        y = fq(y, 0.0, 6.0)
        w = fq(tf.constant(rng.standard_normal((24, 5)).astype(np.float32) * 0.3), -0.9, 0.9)
        y = fq(tf.matmul(y, w), -6.0, 6.0)
        out = tf.identity(fq(tf.nn.softmax(y), 0.0, 1.0), name="output")
    return g, x, out

PROBES = {"mobilenet_v1_mini_quant": mobilenet_v1_mini, "resnet_mini_quant": resnet_mini}


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    tf1.disable_eager_execution()
    out = pathlib.Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name, make in PROBES.items():
        g, x, y = make()
        with tf1.Session(graph=g) as sess:
            converter = tf1.lite.TFLiteConverter.from_session(sess, [x], [y])
            converter.inference_type = tf.uint8
            converter.quantized_input_stats = {"input": (127.5, 127.5)}
            try:
                (out / f"{name}.tflite").write_bytes(converter.convert())
                print(out / f"{name}.tflite")
            except Exception as e:  # noqa: BLE001 - the converter's own failure, reported per model
                failed += 1
                print(f"{name}: the converter failed: {type(e).__name__}: {(str(e).splitlines() or [''])[0]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
