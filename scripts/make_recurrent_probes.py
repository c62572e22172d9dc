"""Builds recurrent models at the sizes real sequence models use, as TensorFlow's converter writes them: a
stacked LSTM(64) keyword spotter, a Bidirectional(LSTM(48)) tagger, a Conv1D + LSTM(32) classifier, a
GRU(64) and an LSTM(40) followed by LayerNormalization and pooling (tf_keras, whose LSTM the converter fuses
into UNIDIRECTIONAL_SEQUENCE_LSTM; the GRU stays a WHILE loop), each converted to float32, dynamic range
(int8 weight matrices: hybrid ops), full-integer int8 and float16 weights. Not committed: the models go to
DIR, and `python scripts/sweep_models.py DIR` checks every command on them at every level
(docs/model-zoo.md, session 16).

The full-integer GRU is not written: TensorFlow 2.21's converter crashes (SIGSEGV) calibrating its loop, so
each architecture converts in a child process and a crash is reported as such.

Optional; needs TensorFlow and tf_keras (tested with 2.21). The package and the default tests never import
this file.

    python scripts/make_recurrent_probes.py DIR [NAME ...]
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from _keras_probes import convert_keras, run_probes  # noqa: E402

SEED = 0
REPRESENTATIVE_SAMPLES = 16
# name -> (input [steps, features], what)
PROBES = {
    "kws_stacked_lstm": ((49, 40), "LSTM(64, return_sequences) -> LSTM(64) -> Dense(12, softmax)"),
    "bilstm_48": ((30, 24), "Bidirectional(LSTM(48, return_sequences)) -> Dense(5) per step"),
    "conv1d_lstm": ((50, 13), "Conv1D(32, 3, relu) -> MaxPooling1D(2) -> LSTM(32) -> Dense(4, softmax)"),
    "gru_64": ((20, 16), "GRU(64) -> Dense(3)"),
    "lstm_layernorm_pool": ((25, 10), "LSTM(40, return_sequences) -> LayerNormalization -> average -> Dense(6)"),
}


def build(name: str):
    import tf_keras as keras
    from tf_keras import layers

    keras.utils.set_random_seed(SEED + list(PROBES).index(name))
    shape, _ = PROBES[name]
    i = layers.Input(shape, batch_size=1)
    if name == "kws_stacked_lstm":
        x = layers.LSTM(64)(layers.LSTM(64, return_sequences=True)(i))
        out = layers.Dense(12, activation="softmax")(x)
    elif name == "bilstm_48":
        out = layers.Dense(5)(layers.Bidirectional(layers.LSTM(48, return_sequences=True))(i))
    elif name == "conv1d_lstm":
        x = layers.MaxPooling1D(2)(layers.Conv1D(32, 3, activation="relu")(i))
        out = layers.Dense(4, activation="softmax")(layers.LSTM(32)(x))
    elif name == "gru_64":
        out = layers.Dense(3)(layers.GRU(64)(i))
    else:
        x = layers.LayerNormalization()(layers.LSTM(40, return_sequences=True)(i))
        out = layers.Dense(6)(layers.GlobalAveragePooling1D()(x))
    return keras.Model(i, out)


def convert(name: str, variant: str) -> bytes:
    import numpy as np

    model = build(name)
    rng = np.random.default_rng(SEED)
    shape, _ = PROBES[name]
    data = [[rng.uniform(-1.0, 1.0, (1, *shape)).astype(np.float32)] for _ in range(REPRESENTATIVE_SAMPLES)]
    return convert_keras(model, data, variant)


def main(argv: list[str]) -> int:
    return run_probes(argv, __doc__, __file__, list(PROBES), convert)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
