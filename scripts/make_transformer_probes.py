"""Builds attention models at the sizes small on-device transformers use, as TensorFlow's converter writes
them: a 2-layer token encoder (Embedding(1000, 128) + positions, MultiHeadAttention(4x32), GELU MLP,
LayerNormalization, pooled 3-class softmax) over 64 int32 tokens, a 2-layer encoder over [50, 80] features,
a conformer-style block (LayerNorm, 1x1 Conv1D, depthwise Conv1D, batch norm, swish, attention) over
[40, 64] and a causal decoder block (GELU MLP, 100-way head) over [32, 64] (tf_keras), each converted to
float32, dynamic range, full-integer int8 (int8 interface except the token input) and float16 weights.
Not committed: the models go to DIR, and `python scripts/sweep_models.py DIR` checks every command on them
at every level (docs/model-zoo.md, session 16). Each conversion runs in a child process, so a converter
crash is reported per model.

Optional; needs TensorFlow and tf_keras (tested with 2.21). The package and the default tests never import
this file.

    python scripts/make_transformer_probes.py DIR [NAME ...]
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _keras_probes import convert_keras, run_probes  # noqa: E402

SEED = 0
REPRESENTATIVE_SAMPLES = 16
PROBES = ("encoder_tokens", "encoder_features", "conformer_lite", "gpt_block")


def build(name: str):
    """(model, input shape without batch, "int" for token ids or "float")."""
    import numpy as np
    import tf_keras as keras
    from tf_keras import layers

    keras.utils.set_random_seed(SEED + PROBES.index(name) + 1)
    if name == "encoder_tokens":
        i = layers.Input((64,), batch_size=1, dtype="int32")
        x = layers.Embedding(1000, 128)(i) + layers.Embedding(64, 128)(np.arange(64)[None])
        for _ in range(2):
            x = layers.LayerNormalization(epsilon=1e-6)(x + layers.MultiHeadAttention(4, 32)(x, x))
            f = layers.Dense(128)(layers.Dense(256, activation="gelu")(x))
            x = layers.LayerNormalization(epsilon=1e-6)(x + f)
        out = layers.Dense(3, activation="softmax")(layers.GlobalAveragePooling1D()(x))
        return keras.Model(i, out), (64,), "int"
    if name == "encoder_features":
        i = layers.Input((50, 80), batch_size=1)
        x = layers.Dense(96)(i)
        for _ in range(2):
            x = layers.LayerNormalization()(x + layers.MultiHeadAttention(4, 24, dropout=0.1)(x, x))
            x = layers.LayerNormalization()(x + layers.Dense(96)(layers.Dense(192, activation="relu")(x)))
        return keras.Model(i, layers.Dense(10)(x)), (50, 80), "float"
    if name == "conformer_lite":
        i = layers.Input((40, 64), batch_size=1)
        x = layers.Conv1D(128, 1)(layers.LayerNormalization()(i))
        x = layers.DepthwiseConv1D(7, padding="same")(x)
        x = layers.Conv1D(64, 1)(layers.Activation("swish")(layers.BatchNormalization()(x)))
        x = layers.LayerNormalization()(x + layers.MultiHeadAttention(4, 16)(x, x))
        return keras.Model(i, layers.Dense(8)(x)), (40, 64), "float"
    i = layers.Input((32, 64), batch_size=1)
    x = layers.LayerNormalization()(i + layers.MultiHeadAttention(4, 16)(i, i, use_causal_mask=True))
    x = layers.LayerNormalization()(x + layers.Dense(64)(layers.Dense(128, activation="gelu")(x)))
    return keras.Model(i, layers.Dense(100)(x)), (32, 64), "float"


def convert(name: str, variant: str) -> bytes:
    import numpy as np

    model, shape, kind = build(name)
    rng = np.random.default_rng(SEED)
    if kind == "int":
        data = [[rng.integers(0, 1000, (1, *shape)).astype(np.int32)] for _ in range(REPRESENTATIVE_SAMPLES)]
    else:
        data = [[rng.uniform(-1.0, 1.0, (1, *shape)).astype(np.float32)] for _ in range(REPRESENTATIVE_SAMPLES)]
    return convert_keras(model, data, variant, int8_interface=kind != "int")


def main(argv: list[str]) -> int:
    return run_probes(argv, __doc__, __file__, PROBES, convert)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
