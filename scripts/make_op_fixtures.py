"""Builds the single-op regression fixtures of tests/data/zoo: ops as TensorFlow's converter really writes them.

Optional; needs TensorFlow (tested with tensorflow-cpu 2.21). The package and the default tests never import
this file; the fixtures it writes are committed. Each is a `tf.function` converted by `TFLiteConverter`
(full-integer int8 ones with a seeded representative dataset), except `unidirectional_rnn.float32`: TensorFlow
2 has no layer that converts to UNIDIRECTIONAL_SEQUENCE_RNN, whose only producer is the converter's
legalization of a `UnidirectionalSequenceRnn` OpHint stub; the stub is written into a GraphDef without shape
annotations, as the OpHint tooling left them, and converted with the TF1 converter (its output shape is left
undeclared).

    python scripts/make_op_fixtures.py tests/data/zoo
"""

from __future__ import annotations

import os
import pathlib
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

SEED = 1234
REPRESENTATIVE_SAMPLES = 16


def convert(fn, specs: list[tf.TensorSpec], int8: bool) -> bytes:
    concrete = tf.function(fn).get_concrete_function(*specs)
    conv = tf.lite.TFLiteConverter.from_concrete_functions([concrete], fn)
    if int8:
        rng = np.random.default_rng(SEED)
        samples = [[rng.normal(0, 2, s.shape).astype(np.float32) for s in specs]
                   for _ in range(REPRESENTATIVE_SAMPLES)]
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = lambda: iter(samples)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
    return conv.convert()


def f32(*shape: int) -> tf.TensorSpec:
    return tf.TensorSpec(shape, tf.float32)


def if_computed(x):
    """tf.cond on a predicate computed from the input: IF with a TENSOR_BOOL8 [] condition."""
    return tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)


def while_data(x):
    """A WHILE whose trip count (0..4) is computed from the input."""
    n = tf.cast(tf.reduce_sum(tf.abs(x)), tf.int32) % 5
    _, y = tf.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 0.5 + 1.0), [tf.constant(0), x])
    return y


def x_minus_mean(x):
    """`x - mean` whose difference feeds a float-only FLOOR (DEQUANTIZE -> FLOOR -> QUANTIZE) and an int8 ABS."""
    d = x - tf.reduce_mean(x, axis=-1, keepdims=True)
    return tf.floor(d), tf.abs(d)


def fixtures() -> dict[str, tuple]:
    """name -> (function, input specs, int8)."""
    w = tf.constant(np.random.default_rng(SEED).normal(0, 1, (6, 5)).astype(np.float32))
    return {
        "log_softmax.int8": (lambda x: tf.nn.log_softmax(tf.matmul(x, w)), [f32(2, 6)], True),
        "cumsum.int8": (lambda x: tf.cumsum(x, axis=1, exclusive=True, reverse=True), [f32(2, 7, 3)], True),
        "floor_mod.int8": (lambda x, y: tf.math.floormod(x, y + 3.0 * tf.sign(y) + 0.5), [f32(2, 8), f32(2, 8)],
                           True),
        "atan2.int8": (tf.math.atan2, [f32(2, 8), f32(2, 8)], True),
        "gather_int64.float32": (
            lambda x, f: tf.gather(x, tf.cast(tf.clip_by_value(f, 0.0, 3.9) * 2.0, tf.int64), axis=1),
            [f32(2, 8), f32(3)], False),
        "if_computed.float32": (if_computed, [f32(1, 4)], False),
        "while_data.float32": (while_data, [f32(1, 4)], False),
        "x_minus_mean.int8": (x_minus_mean, [f32(1, 8, 16)], True),
    }


def unidirectional_rnn() -> bytes:
    """A time-major UNIDIRECTIONAL_SEQUENCE_RNN [6, 1, 3] -> [6, 1, 4] from an OpHint stub (see module doc)."""
    from tensorflow.core.framework import types_pb2
    v1 = tf.compat.v1
    rng = np.random.default_rng(SEED)
    steps, batch, features, units = 6, 1, 3, 4
    graph = v1.Graph()
    with graph.as_default():
        v1.placeholder(tf.float32, (steps, batch, features), name="input")
        tf.constant(rng.normal(0, 0.5, (units, features)).astype(np.float32), name="weights")
        tf.constant(rng.normal(0, 0.5, (units, units)).astype(np.float32), name="recurrent_weights")
        tf.constant(rng.normal(0, 0.1, (units,)).astype(np.float32), name="bias")
        tf.constant(np.zeros((batch, units), np.float32), name="hidden_state")
    gd = graph.as_graph_def()
    stub = gd.node.add()
    stub.name, stub.op = "rnn", "UnidirectionalSequenceRnn"
    stub.input.extend(["input", "weights", "recurrent_weights", "bias", "hidden_state"])
    stub.attr["_tflite_input_indices"].list.i.extend([0, 1, 2, 3, 4])
    stub.attr["T"].type = types_pb2.DT_FLOAT
    stub.attr["_output_types"].list.type.extend([types_pb2.DT_FLOAT, types_pb2.DT_FLOAT])
    out = gd.node.add()
    out.name, out.op = "output", "Identity"
    out.input.append("rnn:1")  # the legalization keeps the stub's second output
    out.attr["T"].type = types_pb2.DT_FLOAT
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "rnn.pb")
        with open(path, "wb") as f:
            f.write(gd.SerializeToString())
        conv = v1.lite.TFLiteConverter.from_frozen_graph(path, ["input"], ["output"],
                                                          {"input": [steps, batch, features]})
        conv.allow_custom_ops = True
        return conv.convert()


def main(argv: list[str]) -> int:
    out = pathlib.Path(argv[0] if argv else "tests/data/zoo")
    out.mkdir(parents=True, exist_ok=True)
    tf.keras.utils.set_random_seed(SEED)
    for name, (fn, specs, int8) in fixtures().items():
        data = convert(fn, specs, int8)
        (out / f"{name}.tflite").write_bytes(data)
        print(f"{name}: {len(data)} B", flush=True)
    data = unidirectional_rnn()
    (out / "unidirectional_rnn.float32.tflite").write_bytes(data)
    print(f"unidirectional_rnn.float32: {len(data)} B")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
