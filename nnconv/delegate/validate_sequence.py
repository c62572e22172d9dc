"""The delegate's checks of recurrent, embedding and hashing builtins (`NNAPIDelegateKernel::Validate`)."""

from __future__ import annotations

from nnconv.delegate.failures import FailureType, NodeCheck
from nnconv.delegate.node_facts import is_hybrid, is_lstm_basic
from nnconv.delegate.setup import SDK_28, SDK_29, SDK_30
from nnconv.delegate.validator_registry import validator
from nnconv.tflite.schema_enums import BuiltinOperator as B
from nnconv.tflite.schema_enums import TensorType as T

F = FailureType
_HYBRID = "Hybrid version of this op is not supported by NN API."
_LSH_SPARSE = 1  # LSHProjectionType.SPARSE


@validator(B.UNIDIRECTIONAL_SEQUENCE_LSTM)
def _sequence_lstm(c: NodeCheck) -> None:
    c.max_version(2)
    c.min_sdk(SDK_29)
    c.expect(not is_hybrid(c.graph, c.node), F.UNSUPPORTED_HYBRID_OPERATOR, _HYBRID)
    c.expect(c.n_inputs in (20, 24), F.UNSUPPORTED_OPERATOR_VARIANT, "Supporting only operation with 20 or 24 inputs")


@validator(B.UNIDIRECTIONAL_SEQUENCE_RNN)
def _sequence_rnn(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    c.expect(not is_hybrid(c.graph, c.node), F.UNSUPPORTED_HYBRID_OPERATOR, _HYBRID)


@validator(B.BIDIRECTIONAL_SEQUENCE_LSTM)
def _bidirectional_lstm(c: NodeCheck) -> None:
    c.op_version(1)
    c.min_sdk(SDK_29)
    c.expect(not is_hybrid(c.graph, c.node), F.UNSUPPORTED_HYBRID_OPERATOR, _HYBRID)


@validator(B.LSTM)
def _lstm(c: NodeCheck) -> None:
    c.max_version(3)
    c.expect(c.sdk >= SDK_28, F.UNSUPPORTED_ANDROID_VERSION,
             "NNAPI 1.0 has a bug for optional tensors which would affect LSTM.")
    c.expect(c.sdk >= SDK_29 or not is_hybrid(c.graph, c.node), F.UNSUPPORTED_HYBRID_OPERATOR,
             "Hybrid operators not supported before NNAPI 1.2.")
    basic = is_lstm_basic(c.node)
    weights = c.in_type(2 if basic else 4)
    if basic:
        c.expect(weights == T.UINT8, F.UNSUPPORTED_INPUT_TYPE, "Basic LSTM Kernels support only UINT8 weights")
        x, y, cell = c.input(0), c.output(0), c.output(1)
        c.expect(x is not None and x.scale == 1.0 / 128.0 and x.zero_point == 128,
                 F.UNSUPPORTED_QUANTIZATION_PARAMETERS, "Invalid input quantization")
        c.expect(y is not None and y.scale == 1.0 / 128.0 and y.zero_point == 128,
                 F.UNSUPPORTED_QUANTIZATION_PARAMETERS, "Invalid output quantization")
        c.expect(cell is not None and (cell.scale == 16.0 / 32768.0 or cell.zero_point == 0),
                 F.UNSUPPORTED_QUANTIZATION_PARAMETERS, "Invalid cell state quantization")
        c.expect(c.constant_input(2), F.INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE, "Weights tensor should be constant")
        c.expect(c.constant_input(3), F.INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE, "Biases tensor should be constant")
        return
    if c.n_inputs == 24:
        c.min_sdk(SDK_29)
    if c.sdk >= SDK_30:
        c.expect(weights in (T.FLOAT32, T.UINT8, T.INT8), F.UNSUPPORTED_INPUT_TYPE,
                 "Weight has to be Float32 or UINT8 or INT8")
    else:
        c.expect(weights in (T.FLOAT32, T.UINT8), F.UNSUPPORTED_INPUT_TYPE, "Weight has to be Float32 or UINT8")


def _float32_weights(c: NodeCheck) -> None:
    """RNN's and SVDF's weights check (input 1), which the delegate makes only when that input exists."""
    if c.n_inputs >= 2:
        c.expect(c.in_type(1) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "NNAPI only support float32 weights.")


@validator(B.RNN)
def _rnn(c: NodeCheck) -> None:
    c.op_version(1)
    c.expect(c.n_inputs == 5, F.UNSUPPORTED_OPERATOR_VARIANT, "Expected 5 input")
    _float32_weights(c)


@validator(B.SVDF)
def _svdf(c: NodeCheck) -> None:
    c.op_version(1)
    c.expect(c.n_inputs == 5, F.UNSUPPORTED_OPERAND_RANK, "Expected input of rank 5")
    _float32_weights(c)
    c.expect(c.sdk >= SDK_28, F.UNSUPPORTED_OPERAND_RANK, "SVDF does not support rank > 1 on NNAPI 1.0.")
    c.expect(c.in_type(1) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "Weights should be Float32")


@validator(B.EMBEDDING_LOOKUP)
def _embedding_lookup(c: NodeCheck) -> None:
    c.op_version(1)
    c.expect(c.in_type(1) == T.FLOAT32, F.UNSUPPORTED_INPUT_TYPE, "NNAPI only support float32 values.")


@validator(B.HASHTABLE_LOOKUP)
def _hashtable_lookup(c: NodeCheck) -> None:
    c.op_version(1)
    out = c.output(0)
    c.expect(out is not None and out.type == T.FLOAT32, F.UNSUPPORTED_OUTPUT_TYPE,
             "NNAPI only support float32 output.")


@validator(B.LSH_PROJECTION)
def _lsh_projection(c: NodeCheck) -> None:
    c.op_version(1)
    if c.option("type") == _LSH_SPARSE:
        # NNAPI's sparse projection is wrong before Android 10 (upstream b/111751836)
        c.expect(c.sdk >= SDK_29, F.UNSUPPORTED_INPUT_TYPE, "NNAPI does not support sparse projection correctly pre-Q")
        # (the delegate's message, leading space included)
        c.expect(c.n_inputs == 2, F.UNSUPPORTED_OPERATOR_VARIANT,
                 " NNAPI does not support weights for sparse projects.")
