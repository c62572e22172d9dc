"""Builds the benchmark model zoo: Keras applications with seeded random weights, converted to TFLite.

Needs TensorFlow (not a dependency of nnconv); nothing is downloaded (`weights=None`). The models are tens
of MB each: write them outside the repository and never commit them.

    python benchmarks/make_zoo.py MODELS_DIR [--only resnet50_224_float ...]

Float models keep the converter's float32 graph; `_int8` models are fully integer (int8 inputs and outputs,
per-channel convolution filters) from 8 representative random images, as `examples/make_fixtures.py`
builds its own int8 fixtures. Batch-norm statistics are randomized with the fixtures' own helper so that the
folded weights are not trivial.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "examples"))

import make_fixtures as mf  # noqa: E402  (TensorFlow and the fixtures' helpers)

tf, keras, layers = mf.tf, mf.keras, mf.layers

# name -> (Keras application constructor name, input side)
ZOO = {
    "mobilenet_v1_224_float": ("MobileNet", 224),
    "mobilenet_v3_large_224_float": ("MobileNetV3Large", 224),
    "resnet50_224_float": ("ResNet50", 224),
    "densenet121_224_float": ("DenseNet121", 224),
    "resnet50_224_int8": ("ResNet50", 224),
    "densenet121_224_int8": ("DenseNet121", 224),
    "nasnetmobile_224_int8": ("NASNetMobile", 224),
    "efficientnet_b0_224_int8": ("EfficientNetB0", 224),  # 49 swish blocks: int8 LOGISTIC + MUL pairs
    "mobilenet_v3_large_224_int8": ("MobileNetV3Large", 224),
    "efficientnet_v2_b0_224_int8": ("EfficientNetV2B0", 224),
    "inception_v3_299_int8": ("InceptionV3", 299),
    # issue 28's held-out table, at its input sides
    "resnet50_160_int8": ("ResNet50", 160),
    "densenet121_128_int8": ("DenseNet121", 128),
    "mobilenet_v2_224_int8": ("MobileNetV2", 224),
    "resnet50_160_float": ("ResNet50", 160),
    "mobilenet_v2_224_float": ("MobileNetV2", 224),
    "efficientnet_b0_224_float": ("EfficientNetB0", 224),
}


def build(name: str) -> bytes:
    ctor, side = ZOO[name]
    keras.backend.clear_session()
    keras.utils.set_random_seed(mf.SEED)
    rng = mf.np.random.default_rng(mf.SEED)
    shape = (side, side, 3)
    image = layers.Input(shape, batch_size=1, name="image")
    model = getattr(keras.applications, ctor)(input_tensor=image, weights=None)
    mf.randomize_statistics(model, rng, shape)
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    if name.endswith("_int8"):
        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        images = rng.uniform(-1.0, 1.0, (8,) + shape).astype(mf.np.float32)
        conv.representative_dataset = lambda: ([im[None]] for im in images)
        conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        conv.inference_input_type = conv.inference_output_type = tf.int8
    return conv.convert()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="directory for the .tflite files (outside the repository)")
    ap.add_argument("--only", nargs="*", default=None, choices=sorted(ZOO))
    args = ap.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    for name in args.only or list(ZOO):
        path = os.path.join(args.out, f"{name}.tflite")
        if os.path.exists(path):
            print(f"{path}: exists, kept")
            continue
        data = build(name)
        with open(path, "wb") as f:
            f.write(data)
        print(f"{path}: {len(data) / 1e6:.1f} MB", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
