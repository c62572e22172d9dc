"""Builds the model zoo: small Keras architectures and layer idioms converted by TensorFlow's own converter.

Optional; needs TensorFlow (tested with tensorflow-cpu 2.21 and tf_keras 2.21). The package and the default
tests never import this file. Every model has seeded random weights (`weights=None`: nothing is downloaded,
nothing is trained) and a batch-1 input, as mobile deployments fix it. Each architecture is written in five
variants, named `<model>.<variant>.tflite`:

- `float32`: the default conversion;
- `fp16`: float16 weights behind DEQUANTIZE (`supported_types=[tf.float16]`);
- `dynamic`: dynamic-range quantization (int8 weights, float activations; no representative dataset);
- `int8`: full-integer quantization with a seeded representative dataset, int8 input and output;
- `uint8io`: the same with a uint8 interface (QUANTIZE at both edges).

A variant the converter refuses is skipped and listed, with the converter's message, in `manifest.json`.
`scripts/run_model_zoo.py DIR` then checks and verifies the zoo and prints the tables of `docs/model-zoo.md`.

    python scripts/make_model_zoo.py ZOO_DIR [--only NAME ...] [--variants int8 ...]
                                                        [--skip-existing] [--open-batch]

The whole zoo (21 architectures x 5 variants) takes ~10 minutes of one idle core; keras.applications'
models take most of it (TensorFlow's converter needs 10-60 s for each of their variants).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import time
from dataclasses import dataclass
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras as keras  # noqa: E402  Keras 2: its LSTM carries the annotation the converter fuses

layers = keras.layers
SEED = 1234
CLASSES = 10
VARIANTS = ("float32", "fp16", "dynamic", "int8", "uint8io")
REPRESENTATIVE_SAMPLES = 16
# The inputs' batch: 1, as mobile deployments fix it, or None with --open-batch (Keras' default, -1 in the
# inputs' shape_signature: TensorFlow's converter then writes SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE
# chains where a layer needs the batch, which `nnconv rewrite` folds). A one-element list: set once by main.
BATCH: list[int | None] = [1]


# -- inputs -------------------------------------------------------------------------------------------
def blocky_images(rng: np.random.Generator, count: int, shape: tuple[int, ...]) -> np.ndarray:
    """Images in [-1, 1] made of 8x8 random cells plus a little noise: unlike i.i.d. noise, whose global
    average barely moves between draws, they move pooled features, so outputs depend on the input."""
    h, w, c = shape
    cells = rng.uniform(-1.0, 1.0, (count, 8, 8, c))
    # cells of ceil(h/8) x ceil(w/8) pixels, cropped: any size (a 12x12 or 37x29 input too)
    up = np.kron(cells, np.ones((1, -(-h // 8), -(-w // 8), 1)))[:, :h, :w]
    return np.clip(up + rng.uniform(-0.1, 0.1, up.shape), -1.0, 1.0).astype(np.float32)


def sample_inputs(model: keras.Model, rng: np.random.Generator, count: int) -> list[list[np.ndarray]]:
    """`count` input tuples for the model: blocky images for rank-4 inputs, integer tokens for integer
    inputs (below the embedding's vocabulary), standard normal values otherwise."""
    per_input = []
    for spec in model.inputs:
        shape = tuple(int(d) for d in spec.shape[1:])
        dtype = tf.as_dtype(spec.dtype)  # a DType in tf_keras, a string in Keras 3
        if dtype.is_integer:
            per_input.append(rng.integers(0, VOCAB, (count, 1) + shape).astype(dtype.as_numpy_dtype))
        elif len(shape) == 3:
            per_input.append(blocky_images(rng, count, shape)[:, None])
        else:
            per_input.append(rng.normal(0.0, 1.0, (count, 1) + shape).astype(np.float32))
    return [[arr[i] for arr in per_input] for i in range(count)]


def randomize(model: keras.Model, rng: np.random.Generator) -> None:
    """Random biases and batch-norm affine parameters, then batch-norm moving statistics measured on one
    batch of inputs (a training-mode pass with momentum 0): activations keep unit scale through the network
    instead of fading into the biases (Keras initializes biases to zero and the converter drops all-zero
    biases, which would leave the bias paths of the lowering untested)."""
    norms = []
    # tf_keras lists nested layers (attention's projections) in `submodules`; Keras 3 models have `layers`
    for layer in getattr(model, "submodules", None) or model.layers:
        if isinstance(layer, layers.BatchNormalization):
            layer.gamma.assign(rng.uniform(0.5, 1.5, tuple(layer.gamma.shape)).astype(np.float32))
            layer.beta.assign(rng.uniform(-0.2, 0.2, tuple(layer.beta.shape)).astype(np.float32))
            layer.momentum = 0.0
            norms.append(layer)
            continue
        bias = getattr(getattr(layer, "cell", layer), "bias", None)
        if isinstance(bias, tf.Variable):
            bias.assign(rng.uniform(-0.1, 0.1, tuple(bias.shape)).astype(np.float32))
    if norms:
        batch = sample_inputs(model, rng, 8)
        model([np.concatenate([b[i] for b in batch]) for i in range(len(model.inputs))], training=True)


# -- architectures ------------------------------------------------------------------------------------
IMAGE = (64, 64, 3)
VOCAB = 50


def _image(shape: tuple[int, ...] = IMAGE) -> keras.layers.Layer:
    return layers.Input(shape, batch_size=BATCH[0], name="image")


def mobilenet_v2() -> keras.Model:
    return keras.applications.MobileNetV2(input_tensor=_image(), alpha=0.35, weights=None, classes=CLASSES)


def mobilenet_v3_small() -> keras.Model:
    return keras.applications.MobileNetV3Small(input_tensor=_image(), alpha=0.75, weights=None, classes=CLASSES,
                                               include_preprocessing=False)


def efficientnet_mini() -> keras.Model:
    """EfficientNet (keras.applications' own builder, B0's block list and idioms: Rescaling/Normalization
    stem, swish, squeeze-excite through Reshape) scaled to width 0.25 and depth 0.25 (one block per stage),
    since B0 itself takes minutes to convert."""
    from tf_keras.src.applications.efficientnet import EfficientNet  # the builder behind B0..B7
    return EfficientNet(0.25, 0.25, IMAGE[0], 0.2, model_name="efficientnet_mini", input_tensor=_image(),
                        weights=None, classes=CLASSES)


def resnet_mini() -> keras.Model:
    """ResNet's basic blocks: 3x3 convs with batch norm, strided projection shortcuts, max pool stem."""
    inp = _image()
    x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(16, 3, strides=2, padding="same")(inp)))
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    for filters, stride in ((16, 1), (32, 2), (48, 2)):
        h = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(filters, 3, strides=stride, padding="same")(x)))
        h = layers.BatchNormalization()(layers.Conv2D(filters, 3, padding="same")(h))
        if stride != 1 or x.shape[-1] != filters:
            x = layers.BatchNormalization()(layers.Conv2D(filters, 1, strides=stride)(x))
        x = layers.ReLU()(layers.Add()([x, h]))
    x = layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, layers.Dense(CLASSES, activation="softmax")(x), name="resnet_mini")


def ssd_head() -> keras.Model:
    """A detector's head: two feature maps, per-anchor box and class convolutions reshaped to [1, N, 4] and
    [1, N, classes] (Keras' Reshape with a -1 axis), concatenated over the maps, sigmoid scores."""
    inp = _image()
    x = layers.ReLU(6.0)(layers.Conv2D(16, 3, strides=2, padding="same")(inp))
    f1 = layers.ReLU(6.0)(layers.Conv2D(24, 3, strides=2, padding="same")(x))
    f2 = layers.ReLU(6.0)(layers.Conv2D(32, 3, strides=2, padding="same")(f1))
    boxes, scores = [], []
    for f in (f1, f2):
        boxes.append(layers.Reshape((-1, 4))(layers.Conv2D(3 * 4, 3, padding="same")(f)))
        scores.append(layers.Reshape((-1, 5))(layers.SeparableConv2D(3 * 5, 3, padding="same")(f)))
    box = layers.Concatenate(axis=1, name="boxes")(boxes)
    score = layers.Activation("sigmoid", name="scores")(layers.Concatenate(axis=1)(scores))
    return keras.Model(inp, [box, score], name="ssd_head")


def unet_mini() -> keras.Model:
    """Segmentation: an encoder of convs and max pools, a decoder of UpSampling2D (nearest) and
    Conv2DTranspose with concatenated skips, per-pixel softmax."""
    inp = _image()
    e1 = layers.Conv2D(8, 3, padding="same", activation="relu")(inp)
    e2 = layers.Conv2D(16, 3, padding="same", activation="relu")(layers.MaxPooling2D()(e1))
    b = layers.Conv2D(24, 3, padding="same", activation="relu")(layers.MaxPooling2D()(e2))
    d2 = layers.Concatenate()([layers.UpSampling2D()(b), e2])
    d2 = layers.Conv2D(16, 3, padding="same", activation="relu")(d2)
    d1 = layers.Concatenate()([layers.Conv2DTranspose(8, 2, strides=2)(d2), e1])
    out = layers.Conv2D(4, 1, activation="softmax")(d1)
    return keras.Model(inp, out, name="unet_mini")


def deeplab_mini() -> keras.Model:
    """Dilated convolutions, an image-pooling branch broadcast back by bilinear UpSampling2D, bilinear
    upsampling of the logits (DeepLab's ASPP head in miniature)."""
    inp = _image()
    x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(16, 3, strides=4, padding="same")(inp)))
    a1 = layers.Conv2D(16, 1, activation="relu")(x)
    a2 = layers.Conv2D(16, 3, dilation_rate=2, padding="same", activation="relu")(x)
    pool = layers.GlobalAveragePooling2D(keepdims=True)(x)
    pool = layers.UpSampling2D(tuple(x.shape[1:3]), interpolation="bilinear")(layers.Conv2D(16, 1)(pool))
    x = layers.Conv2D(5, 1)(layers.Concatenate()([a1, a2, pool]))
    x = layers.UpSampling2D(4, interpolation="bilinear")(x)
    return keras.Model(inp, layers.Softmax()(x), name="deeplab_mini")


def audio_conv1d() -> keras.Model:
    """Keyword spotting over 40 MFCC-like features per frame: Conv1D stack, max pool, global max pool."""
    inp = layers.Input((98, 40), batch_size=BATCH[0], name="features")
    x = layers.Conv1D(32, 5, activation="relu")(inp)
    x = layers.MaxPooling1D(2)(x)
    x = layers.Conv1D(32, 3, padding="same", activation="relu", dilation_rate=2)(x)
    x = layers.GlobalMaxPooling1D()(x)
    return keras.Model(inp, layers.Dense(CLASSES, activation="softmax")(x), name="audio_conv1d")


def _sequence() -> keras.layers.Layer:
    return layers.Input((8, 6), batch_size=BATCH[0], name="sequence")


def lstm() -> keras.Model:
    inp = _sequence()
    x = layers.LSTM(12, return_sequences=True)(inp)
    return keras.Model(inp, layers.Dense(3)(x), name="lstm")


def gru() -> keras.Model:
    inp = _sequence()
    return keras.Model(inp, layers.Dense(3)(layers.GRU(12)(inp)), name="gru")


def bidirectional_lstm() -> keras.Model:
    inp = _sequence()
    x = layers.Bidirectional(layers.LSTM(8, return_sequences=True))(inp)
    return keras.Model(inp, layers.Dense(3)(x), name="bidirectional_lstm")


def simple_rnn() -> keras.Model:
    inp = _sequence()
    x = layers.SimpleRNN(10, return_sequences=True)(inp)
    return keras.Model(inp, layers.Dense(3)(x), name="simple_rnn")


def keras3_lstm() -> object:
    """Keras 3's LSTM (tf.keras in TF >= 2.16): not fused, a WHILE loop over the time steps."""
    k3 = tf.keras
    inp = k3.Input((8, 6), batch_size=BATCH[0], name="sequence")
    x = k3.layers.LSTM(12)(inp)
    return k3.Model(inp, k3.layers.Dense(3)(x), name="keras3_lstm")


def transformer_block() -> keras.Model:
    """A post-norm transformer encoder block: multi-head self-attention, residual, layer norm, GELU MLP."""
    inp = layers.Input((16, 32), batch_size=BATCH[0], name="tokens")
    att = layers.MultiHeadAttention(num_heads=4, key_dim=8)(inp, inp)
    x = layers.LayerNormalization()(layers.Add()([inp, att]))
    h = layers.Dense(32)(layers.Dense(64, activation="gelu")(x))
    x = layers.LayerNormalization()(layers.Add()([x, h]))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(CLASSES, activation="softmax")(x), name="transformer_block")


def text_embedding() -> keras.Model:
    """Token ids -> Embedding -> average over the sequence -> dense classifier."""
    inp = layers.Input((20,), batch_size=BATCH[0], dtype="int32", name="tokens")
    x = layers.Embedding(VOCAB, 16)(inp)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dense(16, activation="relu")(x)
    return keras.Model(inp, layers.Dense(CLASSES, activation="softmax")(x), name="text_embedding")


def flatten_mlp() -> keras.Model:
    """Small CNN with Flatten into dense layers (the classic LeNet/MNIST shape), with dropout."""
    inp = _image((32, 32, 3))
    x = layers.MaxPooling2D()(layers.Conv2D(8, 3, activation="relu")(inp))
    x = layers.MaxPooling2D()(layers.Conv2D(16, 3, activation="relu")(x))
    x = layers.Dropout(0.2)(layers.Flatten()(x))
    x = layers.Dense(32, activation="relu")(x)
    return keras.Model(inp, layers.Dense(CLASSES, activation="softmax")(x), name="flatten_mlp")


def repeat_idioms() -> keras.Model:
    """Layer idioms TensorFlow lowers through rank-5 tensors or TILE: tf.repeat along height and width,
    tf.tile, RepeatVector, and a Reshape that splits channels into groups (channel shuffle)."""
    inp = _image((16, 16, 8))
    x = layers.Conv2D(8, 3, strides=2, padding="same", activation="relu")(inp)
    r = layers.Lambda(lambda t: tf.repeat(tf.repeat(t, 2, axis=1), 2, axis=2), name="repeat_hw")(x)
    t = layers.Lambda(lambda t: tf.tile(t, [1, 2, 2, 1]), name="tile")(x)
    x = layers.Concatenate()([r, t])
    x = layers.Reshape((16, 16, 2, 8))(x)
    x = layers.Permute((1, 2, 4, 3))(x)
    x = layers.Reshape((16, 16, 16))(x)
    v = layers.RepeatVector(4)(layers.Dense(8)(layers.GlobalAveragePooling2D()(x)))
    return keras.Model(inp, [x, layers.Flatten()(v)], name="repeat_idioms")


def separable_maxpool() -> keras.Model:
    """Xception-style separable convolutions, global max pooling, PReLU and leaky ReLU activations."""
    inp = _image()
    x = layers.PReLU(shared_axes=[1, 2])(layers.Conv2D(16, 3, strides=2, padding="same")(inp))
    x = layers.LeakyReLU(0.1)(layers.BatchNormalization()(layers.SeparableConv2D(24, 3, padding="same")(x)))
    x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
    x = layers.Activation("elu")(layers.SeparableConv2D(32, 3, padding="same")(x))
    x = layers.GlobalMaxPooling2D()(x)
    return keras.Model(inp, layers.Dense(CLASSES, activation="softmax")(x), name="separable_maxpool")


def conv1d_dilated() -> keras.Model:
    """Conv1D with a dilation rate (causal padding), SeparableConv1D, DepthwiseConv1D, strided Conv1D, 1-D
    pooling: the dilated Conv1D is written as rank-3 SPACE_TO_BATCH_ND -> conv -> BATCH_TO_SPACE_ND, whose
    intermediate shapes the converter declares with batch 1 where TFLite computes batch x 2."""
    inp = keras.Input((64, 12))
    x = layers.Conv1D(16, 3, dilation_rate=2, padding="causal", activation="relu")(inp)
    x = layers.SeparableConv1D(16, 5, padding="same", activation="swish")(x)
    x = layers.DepthwiseConv1D(3, padding="same")(x)
    x = layers.Conv1D(8, 4, strides=2, padding="valid")(x)
    x = layers.MaxPooling1D(2)(x)
    x = layers.AveragePooling1D(2, padding="same")(x)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(5)(x), name="conv1d_dilated")


def convnext_mini() -> keras.Model:
    """ConvNeXt blocks: patchify stem, 7x7 depthwise, LayerNormalization on NHWC maps and on the pooled
    vector (its FILLs of ones and zeros over a [1, C] input), pointwise Dense on rank 4, GELU, residual."""
    inp = keras.Input((32, 32, 3))
    x = layers.Conv2D(24, 4, strides=4)(inp)
    x = layers.LayerNormalization(epsilon=1e-6)(x)
    for _ in range(2):
        skip = x
        x = layers.DepthwiseConv2D(7, padding="same")(x)
        x = layers.LayerNormalization(epsilon=1e-6)(x)
        x = layers.Dense(96)(x)
        x = layers.Activation("gelu")(x)
        x = layers.Dense(24)(x)
        x = layers.Add()([skip, x])
    x = layers.GlobalAveragePooling2D()(x)
    x = layers.LayerNormalization()(x)
    return keras.Model(inp, layers.Dense(CLASSES)(x), name="convnext_mini")


def causal_attention() -> keras.Model:
    """MultiHeadAttention(2x8) with a causal mask, residual, LayerNormalization (Keras 2 reshapes [batch,
    time, features] to [1, batch*time, features, 1], declared with 1 row), dense, global max pool."""
    inp = keras.Input((12, 16))
    a = layers.MultiHeadAttention(2, 8)(inp, inp, use_causal_mask=True)
    x = layers.LayerNormalization()(inp + a)
    x = layers.Dense(16, activation="relu")(x)
    return keras.Model(inp, layers.GlobalMaxPooling1D()(x), name="causal_attention")


@dataclass(frozen=True)
class Architecture:
    name: str
    build: Callable[[], object]
    what: str


ARCHITECTURES = (
    Architecture("mobilenet_v2", mobilenet_v2, "keras.applications.MobileNetV2, alpha 0.35, 64x64x3, 10 classes"),
    Architecture("mobilenet_v3_small", mobilenet_v3_small,
                 "keras.applications.MobileNetV3Small, alpha 0.75, 64x64x3, 10 classes"),
    Architecture("efficientnet_mini", efficientnet_mini,
                 "keras.applications' EfficientNet builder, width/depth 0.25, 64x64x3, 10 classes"),
    Architecture("resnet_mini", resnet_mini, "ResNet basic blocks, projection shortcuts, max-pool stem"),
    Architecture("ssd_head", ssd_head, "detector head: box/class convs reshaped [1,N,4]/[1,N,5], concatenated"),
    Architecture("unet_mini", unet_mini, "segmentation: UpSampling2D (nearest), Conv2DTranspose, skips"),
    Architecture("deeplab_mini", deeplab_mini, "dilated convs, image pooling, bilinear UpSampling2D"),
    Architecture("audio_conv1d", audio_conv1d, "Conv1D keyword spotting over [98, 40] features"),
    Architecture("lstm", lstm, "tf_keras LSTM(12, return_sequences) over [8, 6] (fused)"),
    Architecture("gru", gru, "tf_keras GRU(12) over [8, 6] (a WHILE loop)"),
    Architecture("bidirectional_lstm", bidirectional_lstm, "tf_keras Bidirectional(LSTM(8)) over [8, 6]"),
    Architecture("simple_rnn", simple_rnn, "tf_keras SimpleRNN(10, return_sequences) over [8, 6]"),
    Architecture("keras3_lstm", keras3_lstm, "Keras 3 LSTM(12) over [8, 6] (a WHILE loop)"),
    Architecture("transformer_block", transformer_block, "MultiHeadAttention(4x8) + LayerNorm + GELU MLP, [16, 32]"),
    Architecture("text_embedding", text_embedding, "int32 tokens [20] -> Embedding(50, 16) -> average -> dense"),
    Architecture("flatten_mlp", flatten_mlp, "LeNet-style CNN, Flatten, dropout, dense"),
    Architecture("repeat_idioms", repeat_idioms, "tf.repeat / tf.tile / RepeatVector / channel-shuffle reshapes"),
    Architecture("separable_maxpool", separable_maxpool, "SeparableConv2D, PReLU, LeakyReLU, ELU, global max pool"),
    Architecture("conv1d_dilated", conv1d_dilated,
                 "dilated causal Conv1D, SeparableConv1D, DepthwiseConv1D over [64, 12]"),
    Architecture("convnext_mini", convnext_mini, "ConvNeXt blocks: 7x7 depthwise, LayerNorm, GELU MLP, 32x32x3"),
    Architecture("causal_attention", causal_attention, "causal MultiHeadAttention(2x8) + LayerNorm over [12, 16]"),
)


# -- conversion ---------------------------------------------------------------------------------------
def converter(model: object, variant: str, rng: np.random.Generator) -> tf.lite.TFLiteConverter:
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if variant == "float32":
        return conv
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "fp16":
        conv.target_spec.supported_types = [tf.float16]
    elif variant in ("int8", "uint8io"):
        samples = sample_inputs(model, rng, REPRESENTATIVE_SAMPLES)
        conv.representative_dataset = lambda: iter(samples)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        io_type = tf.int8 if variant == "int8" else tf.uint8
        conv.inference_input_type = conv.inference_output_type = io_type
    return conv


def convert(arch: Architecture, variant: str) -> bytes:
    keras.backend.clear_session()  # layer and tensor names independent of what was built before
    tf.keras.backend.clear_session()
    keras.utils.set_random_seed(SEED)
    tf.keras.utils.set_random_seed(SEED)
    rng = np.random.default_rng(SEED)
    model = arch.build()
    randomize(model, rng)
    return converter(model, variant, rng).convert()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="directory to write the zoo to (outside the repository)")
    ap.add_argument("--only", nargs="*", default=None, choices=[a.name for a in ARCHITECTURES])
    ap.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=VARIANTS)
    ap.add_argument("--skip-existing", action="store_true", help="keep models already in OUT")
    ap.add_argument("--open-batch", action="store_true",
                    help="leave the inputs' batch open (Keras' default) instead of fixing it at 1")
    args = ap.parse_args(argv)
    BATCH[0] = None if args.open_batch else 1
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    by_name = {a.name: a for a in ARCHITECTURES}
    for arch in [by_name[n] for n in args.only] if args.only else ARCHITECTURES:  # --only's order
        for variant in args.variants:
            name = f"{arch.name}.{variant}"
            if args.skip_existing and (out / f"{name}.tflite").exists():
                continue
            started = time.monotonic()
            entry = {"architecture": arch.name, "variant": variant, "what": arch.what}
            try:
                data = convert(arch, variant)
            except Exception as e:  # noqa: BLE001 - the converter's refusal is a result worth listing
                entry["error"] = " ".join(str(e).split())[:300]
                print(f"{name}: not converted: {entry['error']}", flush=True)
            else:
                (out / f"{name}.tflite").write_bytes(data)
                entry["bytes"] = len(data)
                print(f"{name}: {len(data) / 1024:.0f} KB in {time.monotonic() - started:.1f} s", flush=True)
            record(out / "manifest.json", name, entry)
    return 0


def record(manifest_path: pathlib.Path, name: str, entry: dict) -> None:
    """Adds one model to the manifest, re-read just before and replaced atomically, so that several
    builders (e.g. one per `--only` group) can share one directory."""
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest[name] = entry
    tmp = manifest_path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, manifest_path)


if __name__ == "__main__":
    sys.exit(main())
