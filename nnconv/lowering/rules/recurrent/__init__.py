"""Recurrent and sequence ops: LSTM, UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM, RNN,
UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN, SVDF, LSH_PROJECTION.

State tensors. TFLite keeps an RNN's recurrent state in *variable* tensors (`is_variable`): an op input
that is not a model input, zeroed when the interpreter allocates its tensors and updated in place by each
invocation. TFLite's NNAPI delegate turns each into an extra NNAPI model input (fed from the variable) and an
extra model output (copied back into the variable after every run), so the NNAPI model stays stateless
while the delegate carries the state between invocations.

nnconv converts a model for one inference from its initial state, the way the interpreter runs it right
after `allocate_tensors()`: a variable state input becomes a zero-filled NNAPI constant of its shape and
type, and the state outputs NNAPI requires (output_state_out, cell_state_out, the LSTM scratch buffer,
RNN's hidden_state_out, SVDF's state_out) become temporaries that nothing reads. The converted model then
keeps exactly the TFLite model's inputs and outputs, a variable never leaks into the I/O signature, and
parity with the interpreter holds by construction. The cost is that streaming use (carrying state across
invocations) needs the caller to run the whole sequence in one call, i.e. to use the sequence ops.
(TFLite's kernels insist on variable state tensors; should a state input be an ordinary tensor anyway, it
is passed through as one.)

Fused activations: the recurrent kernels take TFLite's activation codes as they are (NONE, RELU,
RELU_N1_TO_1, RELU6, TANH; the delegate passes them untranslated). SIGMOID (6) is a special case: TFLite's
`ApplyActivationToVector` in these kernels applies nothing for it (measured against the interpreter for RNN,
sequence RNN and SVDF), so it is lowered as NONE to keep parity with what the model computes under TFLite.
The LSTM kernels compute something else again for it, neither a sigmoid nor any other NNAPI activation
(measured), so the LSTM rules refuse it. SIGN_BIT is refused.

One module per family: `common` (shared checks and state operands), `unroll` (sequence ops below API 29),
`lstm`, `sequence_lstm`, `rnn`, `svdf`, `lsh_projection`. Importing this package registers their rules.
"""

from __future__ import annotations

from nnconv.lowering.rules.recurrent import lsh_projection, lstm, rnn, sequence_lstm, svdf

__all__ = ["lsh_projection", "lstm", "rnn", "sequence_lstm", "svdf"]
