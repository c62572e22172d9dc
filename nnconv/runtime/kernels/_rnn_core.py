"""The basic RNN cell shared by RNN, UNIDIRECTIONAL_SEQUENCE_RNN and BIDIRECTIONAL_SEQUENCE_RNN.

h_t = act(bias + x_t W^T [+ aux_t W_aux^T] + h_{t-1} R^T), accumulated in that order in float32 as the
reference `RNN::RNNStep` does; float16 operands are computed in float32.
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._lstm_core import apply_activation


def rnn_step(x: np.ndarray, h: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray, activation: int,
             aux: np.ndarray | None = None, aux_w: np.ndarray | None = None) -> np.ndarray:
    """One RNN step: act(bias + x W^T [+ aux W_aux^T] + h R^T), accumulated in the reference's order."""
    acc = np.broadcast_to(b, (x.shape[0], w.shape[0])).astype(np.float32)
    acc = acc + x @ w.T
    if aux is not None and aux_w is not None:
        acc = acc + aux @ aux_w.T
    acc = acc + h @ r.T
    return apply_activation(acc.astype(np.float32), activation).astype(np.float32)


def rnn_sequence(x: np.ndarray, h: np.ndarray, w: np.ndarray, r: np.ndarray, b: np.ndarray, activation: int,
                 aux: np.ndarray | None = None, aux_w: np.ndarray | None = None, reverse: bool = False
                 ) -> tuple[np.ndarray, np.ndarray]:
    """Time-major x [T, B, I] -> (outputs [T, B, U], last hidden state); `reverse` walks time backwards."""
    steps = x.shape[0]
    outs = np.empty((steps, x.shape[1], w.shape[0]), np.float32)
    for t in (range(steps - 1, -1, -1) if reverse else range(steps)):
        h = rnn_step(x[t], h, w, r, b, activation, None if aux is None else aux[t], aux_w)
        outs[t] = h
    return outs, h
