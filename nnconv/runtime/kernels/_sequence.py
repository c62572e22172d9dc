"""Operand handling shared by the sequence kernels (UNIDIRECTIONAL_ / BIDIRECTIONAL_SEQUENCE_LSTM and _RNN).

The cells (`_lstm_core`, `_rnn_core`) work on time-major [T, B, ...] arrays; these helpers read the input
sequence, switch between the batch-major and time-major layouts, and assemble a bidirectional op's
outputs. (A leading underscore keeps this module out of the kernel auto-discovery.)
"""

from __future__ import annotations

import numpy as np

from nnconv.runtime.kernels._elementwise import FLOAT_TYPES
from nnconv.runtime.kernels.registry import KernelCall


def sequence_input(call: KernelCall, slot: int = 0, num_inputs: int | None = None) -> np.ndarray:
    """Input `slot` as a 3-D float32 sequence ([T, B, I] or [B, T, I]); float16 is widened. `num_inputs`: the
    operation's fixed input count, checked first."""
    if num_inputs is not None and call.num_inputs != num_inputs:
        raise call.fail(f"takes {num_inputs} inputs, got {call.num_inputs}")
    if call.type(slot) not in FLOAT_TYPES:
        # NNAPI's sequence LSTMs and RNNs are float operations: widening 8-bit storage values to float
        # would run the cell on them as if they were real values
        raise call.fail(f"input {slot} is {call.type(slot).name}; the operation takes TENSOR_FLOAT32 or "
                        "TENSOR_FLOAT16")
    x = call.tensor(slot).astype(np.float32)
    if x.ndim != 3:
        raise call.fail(f"input {slot} must be 3-D, got {list(x.shape)}")
    return x


def time_major_view(a: np.ndarray, time_major: bool) -> np.ndarray:
    """Swaps the first two axes of a batch-major sequence (a view; its own inverse)."""
    return a if time_major else np.swapaxes(a, 0, 1)


def bidirectional_results(call: KernelCall, fw_out: np.ndarray, bw_out: np.ndarray, time_major: bool,
                          merge: bool, states: list[np.ndarray]) -> list[np.ndarray]:
    """A bidirectional op's outputs from the time-major forward and backward outputs: the two sequences in
    the op's layout, or one concatenated on the last axis when merging; then the final `states` when the
    operation asks for them (feature level 4). Every output takes output 0's dtype."""
    dt = call.out_operands[0].dtype
    if merge:
        seqs = [np.concatenate([fw_out, bw_out], axis=2)]
    else:
        seqs = [fw_out, bw_out]
    results = [np.ascontiguousarray(time_major_view(s, time_major)).astype(dt) for s in seqs]
    if len(call.out_operands) > len(results):
        results += [s.astype(dt) for s in states]
    return results
