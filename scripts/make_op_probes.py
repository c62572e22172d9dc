"""Builds single-op probes as TensorFlow's converter writes them: 59 ops and idioms real models use (math,
reductions, activations, resizes, pads, depthwise multipliers, dilations, gathers, arg-max, top-k, ...), each a
`tf.function` on a [1, 8, 8, 6] float input, converted to float32 and to full-integer int8 (a seeded
representative dataset; arg-max / arg-min keep a float output). Not committed: the models go to DIR, and
`python scripts/sweep_models.py DIR` checks every command on them at every level (docs/model-zoo.md, "Single-op
probes").

Optional; needs TensorFlow (tested with 2.21). The package and the default tests never import this file.

    python scripts/make_op_probes.py DIR [NAME ...]
"""

from __future__ import annotations

import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

SEED = 0
REPRESENTATIVE_SAMPLES = 16
rng = np.random.default_rng(SEED)
S = (1, 8, 8, 6)
W3 = tf.constant(rng.standard_normal((3, 3, 6, 1)).astype(np.float32) * 0.3)
W2 = tf.constant(rng.standard_normal((3, 3, 6, 2)).astype(np.float32) * 0.3)
WC = tf.constant(rng.standard_normal((3, 3, 6, 8)).astype(np.float32) * 0.2)
C6 = tf.constant(rng.uniform(0.5, 2.0, (6,)).astype(np.float32))
IDX = tf.constant([3, 0, 5, 1], dtype=tf.int32)
PROBES = {
    "rsqrt": lambda x: tf.math.rsqrt(tf.abs(x) + 0.1),
    "sqrt": lambda x: tf.sqrt(tf.abs(x)),
    "squared_difference": lambda x: tf.math.squared_difference(x, x[:, :, ::-1, :]),
    "reduce_sum": lambda x: tf.reduce_sum(x, axis=[1, 2]),
    "reduce_max": lambda x: tf.reduce_max(x, axis=-1, keepdims=True),
    "reduce_min": lambda x: tf.reduce_min(x, axis=[1]),
    "reduce_prod": lambda x: tf.reduce_prod(x * 0.5 + 1.0, axis=-1),
    "l2_normalize": lambda x: tf.math.l2_normalize(x, axis=-1),
    "abs": lambda x: tf.abs(x),
    "exp": lambda x: tf.exp(x * 0.5),
    "log": lambda x: tf.math.log(tf.abs(x) + 0.5),
    "clip": lambda x: tf.clip_by_value(x, -0.5, 1.5),
    "leaky_relu": lambda x: tf.nn.leaky_relu(x, 0.15),
    "elu": lambda x: tf.nn.elu(x),
    "hard_sigmoid": lambda x: tf.nn.relu6(x + 3.0) / 6.0,
    "gelu_tanh": lambda x: tf.nn.gelu(x, approximate=True),
    "gelu_erf": lambda x: tf.nn.gelu(x, approximate=False),
    "softplus": lambda x: tf.math.softplus(x),
    "sin": lambda x: tf.sin(x),
    "cos": lambda x: tf.cos(x),
    "round": lambda x: tf.round(x * 3.0),
    "sign": lambda x: tf.sign(x),
    "floor_div": lambda x: tf.math.floordiv(x, 0.7),
    "gather_axis3": lambda x: tf.gather(x, IDX, axis=3),
    "select_v2": lambda x: tf.where(x > 0.2, x, x * x),
    "depthwise_mult2": lambda x: tf.nn.depthwise_conv2d(x, W2, [1, 1, 1, 1], "SAME"),
    "depthwise_dilated": lambda x: tf.nn.depthwise_conv2d(x, W3, [1, 1, 1, 1], "SAME", dilations=[2, 2]),
    "conv_dilated": lambda x: tf.nn.conv2d(x, WC, 1, "SAME", dilations=2),
    "conv_stride2_valid": lambda x: tf.nn.conv2d(x, WC, 2, "VALID"),
    "avg_pool_same": lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME"),
    "max_pool_same": lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME"),
    "space_to_depth": lambda x: tf.nn.space_to_depth(x, 2),
    "depth_to_space": lambda x: tf.nn.depth_to_space(tf.concat([x, x], -1)[..., :8], 2),
    "resize_nearest_hp": lambda x: tf.compat.v1.image.resize_nearest_neighbor(x, (16, 16), half_pixel_centers=True),
    "resize_bilinear_ac": lambda x: tf.compat.v1.image.resize_bilinear(x, (15, 15), align_corners=True),
    "resize_bilinear_down": lambda x: tf.image.resize(x, (5, 3)),
    "pad_reflect": lambda x: tf.pad(x, [[0, 0], [2, 1], [1, 2], [0, 0]], mode="REFLECT"),
    "pad_const": lambda x: tf.pad(x, [[0, 0], [1, 1], [2, 0], [0, 0]], constant_values=0.5),
    "concat_scales": lambda x: tf.concat([x, x * 3.0, tf.nn.relu(x)], axis=-1),
    "mul_channel": lambda x: x * C6,
    "div_channel": lambda x: x / C6,
    "sub_rev": lambda x: 1.0 - x,
    "pow2": lambda x: tf.pow(x, 2.0),
    "square": lambda x: tf.square(x),
    "minimum_const": lambda x: tf.minimum(x, 0.3),
    "maximum_pair": lambda x: tf.maximum(x, x[:, ::-1, :, :]),
    "argmax": lambda x: tf.argmax(x, axis=-1, output_type=tf.int32),
    "argmin": lambda x: tf.argmin(x, axis=-1, output_type=tf.int32),
    "topk_values": lambda x: tf.math.top_k(tf.reshape(x, (1, -1)), 5).values,
    "transpose_nchw": lambda x: tf.transpose(x, (0, 3, 1, 2)),
    "strided_slice_neg": lambda x: x[:, ::-2, 1:-1, ::2],
    "tile": lambda x: tf.tile(x, [1, 2, 1, 1]),
    "batch_matmul_self": lambda x: tf.matmul(tf.reshape(x, (1, 64, 6)), tf.reshape(x, (1, 64, 6)), transpose_a=True),
    "log_softmax_ch": lambda x: tf.nn.log_softmax(x, axis=-1),
    "softmax_axis1": lambda x: tf.nn.softmax(x, axis=1),
    "cumsum": lambda x: tf.cumsum(x, axis=2),
    "mean_keep": lambda x: tf.reduce_mean(x, axis=[1, 2], keepdims=True) * x,
    "swish_hard": lambda x: x * tf.nn.relu6(x + 3.0) / 6.0,
    "expand_squeeze": lambda x: tf.squeeze(tf.expand_dims(x, 1), 1) + 1.0,
}


def convert(name: str, int8: bool) -> bytes:
    fn = tf.function(PROBES[name], input_signature=[tf.TensorSpec(S, tf.float32)])
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    if int8:
        data = np.random.default_rng(SEED).standard_normal((REPRESENTATIVE_SAMPLES,) + S).astype(np.float32)
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: ([d] for d in data)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = tf.int8
        conv.inference_output_type = tf.float32 if name in ("argmax", "argmin") else tf.int8
    return conv.convert()


def main(argv: list[str]) -> int:
    if not argv:
        print(__doc__)
        return 2
    out = pathlib.Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for name in argv[1:] or list(PROBES):
        for variant in ("float32", "int8"):
            path = out / f"{name}.{variant}.tflite"
            try:
                path.write_bytes(convert(name, variant == "int8"))
                print(path)
            except Exception as e:  # noqa: BLE001 - the converter's own failure, reported per probe
                failed += 1
                first = (str(e).splitlines() or [""])[0]
                print(f"{name} {variant}: the converter failed: {type(e).__name__}: {first}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
