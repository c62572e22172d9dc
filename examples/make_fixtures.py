"""Builds the real TensorFlow-converted fixture models of `examples/models/` (see its README).

Optional to run; needs TensorFlow (tested with tensorflow-cpu 2.20 and tf_keras 2.20, because only the
Keras 2 LSTM layer is fused into UNIDIRECTIONAL_SEQUENCE_LSTM by the converter). The package and the tests
never import this file: they only read the committed .tflite files.

    python examples/make_fixtures.py [--out examples/models] [--only name ...]
    python examples/make_fixtures.py --full-size DIR   # full-size Keras applications, not committed

Every model has seeded random weights (nothing is downloaded) and is small enough for the test suite.
Batch-norm parameters and biases are randomized and the batch-norm statistics measured on blocky random
images, so that the folded weights are non-trivial and the outputs depend on the input.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

try:
    import tf_keras as keras  # Keras 2: its LSTM carries the annotation the converter fuses
except ImportError:  # pragma: no cover - only the RNN fixtures need it
    keras = tf.keras

layers = keras.layers
SEED = 1234
IMAGE = (64, 64, 3)
CLASSES = 10


# -- model definitions --------------------------------------------------------------------------------
def _bn(x):
    return layers.BatchNormalization(epsilon=1e-3, momentum=0.999)(x)


def _inverted_residual(x, expansion: int, filters: int, stride: int):
    """MobileNetV2's block: 1x1 expand + ReLU6, 3x3 depthwise (zero-padded when strided) + ReLU6,
    1x1 linear projection, residual add when shapes match."""
    in_ch = x.shape[-1]
    h = x
    if expansion != 1:
        h = layers.ReLU(6.0)(_bn(layers.Conv2D(in_ch * expansion, 1, use_bias=False)(h)))
    if stride == 2:
        h = layers.ZeroPadding2D(((0, 1), (0, 1)))(h)  # Keras MobileNetV2 pads before strided depthwise
    h = layers.DepthwiseConv2D(3, strides=stride, padding="valid" if stride == 2 else "same", use_bias=False)(h)
    h = layers.ReLU(6.0)(_bn(h))
    h = _bn(layers.Conv2D(filters, 1, use_bias=False)(h))
    if stride == 1 and in_ch == filters:
        h = layers.Add()([x, h])
    return h


def mobilenet_v2() -> keras.Model:
    inp = layers.Input(IMAGE, batch_size=1, name="image")
    x = layers.ZeroPadding2D(((0, 1), (0, 1)))(inp)
    x = layers.ReLU(6.0)(_bn(layers.Conv2D(16, 3, strides=2, use_bias=False)(x)))
    for expansion, filters, stride in ((1, 8, 1), (6, 12, 2), (6, 12, 1), (6, 16, 2), (6, 16, 1)):
        x = _inverted_residual(x, expansion, filters, stride)
    x = layers.ReLU(6.0)(_bn(layers.Conv2D(64, 1, use_bias=False)(x)))
    # Average pool over the whole map as in the reference TF-slim MobileNetV2 .tflite (AVERAGE_POOL_2D, an API 27
    # op; Keras' GlobalAveragePooling2D would give MEAN, which NNAPI only has from API 28).
    x = layers.AveragePooling2D(pool_size=tuple(x.shape[1:3]))(x)
    x = layers.Flatten()(x)
    x = layers.Dense(CLASSES, activation="softmax", name="probabilities")(x)
    return keras.Model(inp, x, name="mobilenet_v2_mini")


def _hard_sigmoid(x):
    return layers.ReLU(6.0)(x + 3.0) * (1.0 / 6.0)


def _hard_swish(x):
    # the converter pattern-matches x * relu6(x + 3) / 6 into HARD_SWISH
    return layers.Multiply()([x, _hard_sigmoid(x)])


def _act(x, name: str):
    return _hard_swish(x) if name == "hs" else layers.ReLU()(x)


def _squeeze_excite(x, ratio: float = 0.25):
    ch = x.shape[-1]
    s = layers.GlobalAveragePooling2D(keepdims=True)(x)
    s = layers.Conv2D(max(8, int(ch * ratio)), 1, activation="relu")(s)
    s = _hard_sigmoid(layers.Conv2D(ch, 1)(s))
    return layers.Multiply()([x, s])


def _v3_block(x, expanded: int, filters: int, kernel: int, stride: int, se: bool, act: str):
    in_ch = x.shape[-1]
    h = x
    if expanded != in_ch:
        h = _act(_bn(layers.Conv2D(expanded, 1, use_bias=False)(h)), act)
    h = _act(_bn(layers.DepthwiseConv2D(kernel, strides=stride, padding="same", use_bias=False)(h)), act)
    if se:
        h = _squeeze_excite(h)
    h = _bn(layers.Conv2D(filters, 1, use_bias=False)(h))
    if stride == 1 and in_ch == filters:
        h = layers.Add()([x, h])
    return h


def mobilenet_v3_small() -> keras.Model:
    inp = layers.Input(IMAGE, batch_size=1, name="image")
    x = _hard_swish(_bn(layers.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(inp)))
    x = _v3_block(x, 16, 16, 3, 2, True, "re")
    x = _v3_block(x, 48, 24, 3, 2, False, "re")
    x = _v3_block(x, 64, 24, 5, 1, True, "hs")
    x = _hard_swish(_bn(layers.Conv2D(96, 1, use_bias=False)(x)))
    x = layers.GlobalAveragePooling2D(keepdims=True)(x)
    x = _hard_swish(layers.Conv2D(64, 1)(x))
    x = layers.Flatten()(layers.Conv2D(CLASSES, 1)(x))
    x = layers.Softmax(name="probabilities")(x)
    return keras.Model(inp, x, name="mobilenet_v3_small_mini")


def efficientnet_se() -> keras.Model:
    """EfficientNet's MBConv with swish and squeeze-excite. The excitation is reshaped with the batch
    taken from the tensor (`tf.shape(x)[0]`) and the model is traced with a None batch, so the converter
    keeps SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE like the published EfficientNet-Lite files."""
    inp = layers.Input(IMAGE[:2] + (3,), name="image")  # batch None: keeps the dynamic-batch reshape
    x = layers.Activation("swish")(_bn(layers.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(inp)))
    for expanded, filters in ((64, 24), (96, 24)):
        in_ch = x.shape[-1]
        h = layers.Activation("swish")(_bn(layers.Conv2D(expanded, 1, use_bias=False)(x)))
        h = layers.Activation("swish")(_bn(layers.DepthwiseConv2D(3, strides=2 if in_ch != filters else 1,
                                                                  padding="same", use_bias=False)(h)))
        s = layers.GlobalAveragePooling2D()(h)
        s = layers.Dense(8, activation="swish")(s)
        s = layers.Dense(expanded, activation="sigmoid")(s)
        s = layers.Lambda(lambda t: tf.reshape(t, [tf.shape(t)[0], 1, 1, t.shape[-1]]))(s)
        h = layers.Multiply()([h, s])
        h = _bn(layers.Conv2D(filters, 1, use_bias=False)(h))
        x = layers.Add()([x, h]) if in_ch == filters else h
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.Dense(CLASSES, activation="softmax", name="probabilities")(x)
    return keras.Model(inp, x, name="efficientnet_se_mini")


def recurrent(kind: str) -> keras.Model:
    inp = layers.Input((6, 5), batch_size=1, name="sequence")
    # The LSTM returns every step (UNIDIRECTIONAL_SEQUENCE_LSTM does); the GRU only its last state: with
    # return_sequences the converter writes the outputs through lowered tensor lists (SLICE/CONCATENATION
    # with dynamic shapes inside the loop body), which no NNAPI model can express.
    if kind == "lstm":
        x = layers.LSTM(8, return_sequences=True)(inp)
    else:
        x = layers.GRU(8)(inp)
    x = layers.Dense(3, name="scores")(x)
    return keras.Model(inp, x, name=f"{kind}_mini")


def structured_images(rng: np.random.Generator, count: int, shape: tuple = IMAGE) -> np.ndarray:
    """Blocky images in [-1, 1] (8x8 random cells plus a little noise): unlike i.i.d. noise, whose global
    average is the same for every draw, they move the pooled features, so outputs depend on the input."""
    cells = rng.uniform(-1.0, 1.0, (count, 8, 8, shape[2]))
    # each pixel takes its cell (the same as a Kronecker upsampling when the side is a multiple of 8;
    # InceptionV3's 299 is not)
    rows, cols = np.arange(shape[0]) * 8 // shape[0], np.arange(shape[1]) * 8 // shape[1]
    up = cells[:, rows][:, :, cols]
    return np.clip(up + rng.uniform(-0.1, 0.1, up.shape), -1.0, 1.0).astype(np.float32)


def randomize_statistics(model: keras.Model, rng: np.random.Generator, shape: tuple = IMAGE) -> None:
    """Random biases and batch-norm scales/offsets, then batch-norm moving statistics measured on one batch
    of structured images (one training-mode pass with momentum 0): activations keep unit scale through the
    network instead of fading into the biases, which would make every output the same whatever the input.
    (Keras initializes biases to zero, and the converter drops all-zero biases, which would also leave the
    bias paths of the lowering untested.)"""
    norms = []
    for layer in model.layers:
        bias = getattr(getattr(layer, "cell", layer), "bias", None)
        if bias is not None and not isinstance(layer, layers.BatchNormalization):
            bias.assign(rng.uniform(-0.1, 0.1, tuple(bias.shape)).astype(np.float32))
        if isinstance(layer, layers.BatchNormalization):
            # a layer built with scale=False or center=False (InceptionV3's) has no gamma or beta
            if layer.gamma is not None:
                layer.gamma.assign(rng.uniform(0.5, 1.5, tuple(layer.gamma.shape)).astype(np.float32))
            if layer.beta is not None:
                layer.beta.assign(rng.uniform(-0.2, 0.2, tuple(layer.beta.shape)).astype(np.float32))
            layer.momentum = 0.0
            norms.append(layer)
    if norms:
        model(structured_images(rng, 16 if shape == IMAGE else 4, shape), training=True)


# -- conversion ---------------------------------------------------------------------------------------
def representative_images(count: int = 32):
    rng = np.random.default_rng(SEED + 1)

    def gen():
        for image in structured_images(rng, count):
            yield [image[None]]
    return gen


def representative_sequences(count: int = 32):
    """Calibration sequences for the recurrent models' [1, 6, 5] input: uniform in [-1, 1]."""
    rng = np.random.default_rng(SEED + 2)

    def gen():
        for _ in range(count):
            yield [rng.uniform(-1.0, 1.0, (1, 6, 5)).astype(np.float32)]
    return gen


def converter_for(model: keras.Model) -> tf.lite.TFLiteConverter:
    return tf.lite.TFLiteConverter.from_keras_model(model)


def full_integer(conv: tf.lite.TFLiteConverter, io_type, dataset=None) -> None:
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = dataset or representative_images()
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = io_type
    conv.inference_output_type = io_type
    # Per-tensor FULLY_CONNECTED weights, as in the published quantized MobileNets: NNAPI's FULLY_CONNECTED
    # has no per-channel weight type (TF >= 2.16 quantizes dense layers per channel by default).
    conv._experimental_disable_per_channel_quantization_for_dense_layers = True


def fix_batch(flatbuffer: bytes) -> bytes:
    """Drops the -1 batch of every shape_signature: the model keeps its SHAPE/PACK/RESHAPE ops but
    declares static batch-1 shapes, as models produced by the older converters do."""
    from tensorflow.lite.tools import flatbuffer_utils as fbu
    model = fbu.convert_bytearray_to_object(bytearray(flatbuffer))
    for sg in model.subgraphs:
        for t in sg.tensors:
            if t.shapeSignature is not None and any(d < 0 for d in t.shapeSignature):
                t.shapeSignature = None
    return bytes(fbu.convert_object_to_bytearray(model))


def custom_op_middle() -> bytes:
    """Builtins around a custom op the TFLite interpreter can run: MUL/ADD -> AudioSpectrogram (a custom
    op registered by TFLite's builtin op resolver; the converter writes its attributes as the flexbuffer map
    that kernel reads) -> FULLY_CONNECTED -> SOFTMAX. Partial delegation: two partitions around the CPU op."""
    rng = np.random.default_rng(SEED)
    weights = tf.constant(rng.normal(0.0, 0.02, (129, 6)).astype(np.float32))
    bias = tf.constant(rng.uniform(-0.1, 0.1, (6,)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([512, 1], tf.float32, name="audio")])
    def model(audio):
        x = audio * 0.5 + 0.1
        spec = tf.raw_ops.AudioSpectrogram(input=x, window_size=256, stride=128, magnitude_squared=False)
        frames = tf.reshape(spec, [-1, 129])
        return tf.nn.softmax(tf.matmul(frames, weights) + bias)

    conv = tf.lite.TFLiteConverter.from_concrete_functions([model.get_concrete_function()], model)
    conv.allow_custom_ops = True
    return conv.convert()


def dequantized_twin(flatbuffer: bytes) -> bytes:
    """The dynamic-range model with every int8 weight replaced by its float32 dequantization (q * scale per
    channel): what NNAPI computes for a hybrid op (DEQUANTIZE the weights, then a float op). TFLite's own
    hybrid kernels quantize the activations on the fly instead, which differs by ~1e-2 of the range, so
    the tests check our conversion against TFLite running this twin."""
    from tensorflow.lite.tools import flatbuffer_utils as fbu
    model = fbu.convert_bytearray_to_object(bytearray(flatbuffer))
    int8, float32 = 9, 0  # schema TensorType values
    for sg in model.subgraphs:
        for t in sg.tensors:
            buf = model.buffers[t.buffer]
            if t.type != int8 or buf.data is None or len(buf.data) == 0 or t.quantization is None:
                continue
            q = np.frombuffer(bytes(buf.data), np.int8).reshape(t.shape).astype(np.float32)
            scale = np.asarray(t.quantization.scale, np.float32)
            axis = t.quantization.quantizedDimension if scale.size > 1 else 0
            shape = [1] * q.ndim
            shape[axis] = scale.size
            buf.data = np.frombuffer((q * scale.reshape(shape)).astype(np.float32).tobytes(), np.uint8)
            t.type, t.quantization = float32, None
    return bytes(fbu.convert_object_to_bytearray(model))


def rename_io(flatbuffer: bytes, inputs: list[str], outputs: list[str]) -> bytes:
    """Names the main subgraph's input and output tensors after the Keras inputs and output layers
    ("image", "probabilities") instead of the converter's "serving_default_image:0" and
    "StatefulPartitionedCall:0", so reports and `nnconv run` outputs read naturally."""
    from tensorflow.lite.tools import flatbuffer_utils as fbu
    model = fbu.convert_bytearray_to_object(bytearray(flatbuffer))
    sg = model.subgraphs[0]
    for indices, names in ((sg.inputs, inputs), (sg.outputs, outputs)):
        if len(indices) == len(names):
            for index, new_name in zip(indices, names):
                sg.tensors[index].name = new_name.encode()
    return bytes(fbu.convert_object_to_bytearray(model))


def build(name: str) -> bytes:
    if name == "custom_op_middle":
        return custom_op_middle()
    if name == "mobilenet_v2_dynamic_range_dequantized":
        return dequantized_twin(build("mobilenet_v2_dynamic_range"))
    keras.backend.clear_session()  # layer and tensor names independent of what was built before
    keras.utils.set_random_seed(SEED)
    rng = np.random.default_rng(SEED)
    if name.startswith("mobilenet_v2"):
        model = mobilenet_v2()
    elif name.startswith("mobilenet_v3"):
        model = mobilenet_v3_small()
    elif name.startswith("efficientnet"):
        model = efficientnet_se()
    else:
        model = recurrent(name.split("_")[0])
    randomize_statistics(model, rng)
    conv = converter_for(model)
    if name.endswith("_fp16"):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.target_spec.supported_types = [tf.float16]
    elif name.endswith("_int8"):
        full_integer(conv, tf.int8, representative_sequences() if name.startswith("lstm") else None)
    elif name.endswith("_uint8io"):
        full_integer(conv, tf.uint8)
    elif name.endswith("_dynamic_range"):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]  # no representative dataset: int8 weights only
    data = conv.convert()
    if name.startswith("efficientnet"):
        data = fix_batch(data)
    return rename_io(data, list(model.input_names), list(model.output_names))


FIXTURES = ("mobilenet_v2_float", "mobilenet_v2_fp16", "mobilenet_v2_int8", "mobilenet_v2_uint8io",
            "mobilenet_v3_int8", "mobilenet_v3_uint8io", "mobilenet_v2_dynamic_range",
            "mobilenet_v2_dynamic_range_dequantized", "efficientnet_se_float", "lstm_keras", "lstm_keras_int8",
            "gru_keras", "custom_op_middle")


def op_names(data: bytes) -> list[str]:
    import warnings
    warnings.filterwarnings("ignore", category=UserWarning)  # tf.lite.Interpreter's deprecation notice
    interp = tf.lite.Interpreter(model_content=data)
    return sorted({d["op_name"] for d in interp._get_ops_details()})


# Full-size Keras applications (random weights, weights=None), for benchmarks and manual end-to-end checks;
# several MB each, never committed: `--full-size DIR`.
FULL_SIZE = ("mobilenet_v2_1.0_224_float", "mobilenet_v2_1.0_224_int8", "mobilenet_v3_small_224_int8",
             "efficientnet_b0_224_float")


def build_full_size(name: str) -> bytes:
    keras.backend.clear_session()
    keras.utils.set_random_seed(SEED)
    rng = np.random.default_rng(SEED)
    shape = (224, 224, 3)
    # batch 1: with the applications' default None batch every tensor's shape_signature starts with -1
    image = layers.Input(shape, batch_size=1, name="image")
    if name.startswith("mobilenet_v2"):
        model = keras.applications.MobileNetV2(input_tensor=image, alpha=1.0, weights=None)
    elif name.startswith("mobilenet_v3"):
        model = keras.applications.MobileNetV3Small(input_tensor=image, weights=None)
    else:
        model = keras.applications.EfficientNetB0(input_tensor=image, weights=None)
    randomize_statistics(model, rng, shape)
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if name.endswith("_int8"):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        images = rng.uniform(-1.0, 1.0, (8,) + shape).astype(np.float32)
        if name.startswith("mobilenet_v3"):  # this application rescales [0, 255] itself
            images = (images + 1.0) * 127.5
        conv.representative_dataset = lambda: ([image[None]] for image in images)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
        conv._experimental_disable_per_channel_quantization_for_dense_layers = True
    return conv.convert()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(pathlib.Path(__file__).parent / "models"))
    ap.add_argument("--only", nargs="*", default=None, choices=FIXTURES + FULL_SIZE)
    ap.add_argument("--full-size", metavar="DIR", default=None,
                    help=f"write the full-size models ({', '.join(FULL_SIZE)}) to DIR instead")
    args = ap.parse_args(argv)
    if args.full_size:
        args.out = args.full_size
    os.makedirs(args.out, exist_ok=True)
    names = args.only or (FULL_SIZE if args.full_size else FIXTURES)
    for name in names:
        data = build_full_size(name) if name in FULL_SIZE else build(name)
        path = os.path.join(args.out, f"{name}.tflite")
        with open(path, "wb") as f:
            f.write(data)
        print(f"{path}: {len(data) / 1024:.1f} KB, ops {', '.join(op_names(data))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
