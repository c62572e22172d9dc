"""Why the delegate refuses a node: its `NNAPIValidationFailureType`s, in its own words, and the checks that
produce them (`Expect`, `ExpectMaxOpVersion`, `ExpectMinAndroidSdkVersion`, `EXPECT_INPUT_TYPE_IN`, ...).

The delegate keeps checking after a failure, so a node collects every reason; compiled with
`NNAPI_VERBOSE_VALIDATION` (as its BUILD file does) it logs each as "Operator %s (v%d) refused by NNAPI
delegate: %s". `NodeCheck` is one node under validation: the helpers below write the same messages, so a
report can quote the delegate.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Iterable

from nnconv.delegate.graph import OPTIONAL, DelegateGraph, Node, TensorInfo, names
from nnconv.delegate.setup import DelegateSetup
from nnconv.tflite.schema_enums import TensorType

T = TensorType


class FailureType(enum.IntEnum):
    """`NNAPIValidationFailureType` (values as the delegate numbers them)."""

    UNSUPPORTED_OPERATOR = 0
    UNSUPPORTED_ANDROID_VERSION = 1
    UNSUPPORTED_OPERATOR_VERSION = 2
    UNSUPPORTED_INPUT_TYPE = 3
    NOT_RESTRICTED_SCALE_COMPLIANT = 4
    UNSUPPORTED_OUTPUT_TYPE = 5
    UNSUPPORTED_OPERAND_SIZE = 6
    UNSUPPORTED_OPERAND_VALUE = 7
    UNSUPPORTED_HYBRID_OPERATOR = 8
    UNSUPPORTED_QUANTIZATION_TYPE = 9
    MISSING_REQUIRED_OPERAND = 10
    UNSUPPORTED_OPERAND_RANK = 11
    INPUT_TENSOR_SHOULD_HAVE_CONSTANT_SHAPE = 12
    UNSUPPORTED_OPERATOR_VARIANT = 13
    NO_ACTIVATION_EXPECTED = 14
    UNSUPPORTED_QUANTIZATION_PARAMETERS = 15


@dataclass(frozen=True)
class Failure:
    """One `NNAPIValidationFailure`: its type and the delegate's message, verbatim."""

    type: FailureType
    message: str


F = FailureType
FLOAT = (T.FLOAT32,)
QUANT8 = (T.UINT8, T.INT8)


class NodeCheck:
    """One node under `Validate`: the delegate's inputs (graph, node, target feature level, whether an
    accelerator is specified) and the failures found so far."""

    def __init__(self, graph: DelegateGraph, node: Node, setup: DelegateSetup) -> None:
        self.graph = graph
        self.node = node
        self.sdk = setup.feature_level  # the `android_sdk_version` argument: the target feature level
        self.accelerator = setup.accelerator_specified
        self.version = node.version
        self.options = node.options
        self.failures: list[Failure] = []
        self.silent_refusal = False  # refused without a message (DENSIFY of a non-constant tensor)

    @property
    def valid(self) -> bool:
        return not self.failures and not self.silent_refusal

    # -- the node's tensors -----------------------------------------------------------------------
    @property
    def n_inputs(self) -> int:
        return len(self.node.inputs)

    def input(self, i: int) -> TensorInfo | None:
        """Input `i`; None when the node has fewer inputs or it is omitted (-1)."""
        if i >= len(self.node.inputs) or self.node.inputs[i] == OPTIONAL:
            return None
        return self.graph.tensor(self.node.inputs[i])

    def output(self, i: int = 0) -> TensorInfo | None:
        if i >= len(self.node.outputs) or self.node.outputs[i] == OPTIONAL:
            return None
        return self.graph.tensor(self.node.outputs[i])

    def in_type(self, i: int = 0) -> TensorType | None:
        t = self.input(i)
        return t.type if t is not None else None

    def rank(self, i: int = 0) -> int:
        t = self.input(i)
        return t.rank if t is not None else 0

    def option(self, name: str, default: object = 0) -> object:
        return getattr(self.options, name, default) if self.options is not None else default

    # -- Expect and friends -----------------------------------------------------------------------
    def expect(self, condition: bool, type: FailureType, message: str) -> bool:
        if not condition:
            self.failures.append(Failure(type, message))
        return bool(condition)

    def max_version(self, highest: int) -> bool:
        """`ExpectMaxOpVersion`."""
        return self.expect(self.version <= highest, F.UNSUPPORTED_OPERATOR_VERSION, f"OP Version higher than {highest}")

    def op_version(self, highest: int) -> bool:
        """`ExpectOpVersion`: it tests `<=` but says "different from"."""
        return self.expect(self.version <= highest, F.UNSUPPORTED_OPERATOR_VERSION,
                           f"OP Version different from {highest}")

    def min_sdk(self, level: int) -> bool:
        """`ExpectMinAndroidSdkVersion` (the number is the delegate's: 1000006 and up from Android 13)."""
        return self.expect(self.sdk >= level, F.UNSUPPORTED_ANDROID_VERSION, f"Android sdk version less than {level}")

    def type_in(self, actual: TensorType | None, allowed: Iterable[TensorType]) -> bool:
        """`EXPECT_INPUT_TYPE_IN`, whose message lists the allowed TfLiteTypes as written in the source."""
        allowed = tuple(allowed)
        return self.expect(actual in allowed, F.UNSUPPORTED_INPUT_TYPE,
                           f"Input type not in expected list {names(allowed)}")

    def _input0_in(self, allowed: tuple[TensorType, ...], message: str) -> bool:
        return self.expect(self.in_type(0) in allowed, F.UNSUPPORTED_INPUT_TYPE, message)

    def float_op(self) -> bool:
        return self._input0_in(FLOAT, "Input should be Float")

    def float_or_uint8_op(self) -> bool:
        return self._input0_in((T.FLOAT32, T.UINT8), "Input should be Float or UINT8")

    def float_or_quant8_op(self) -> bool:
        return self._input0_in((T.FLOAT32, *QUANT8), "Input should be Float or Quant8")

    def float_or_int32_op(self) -> bool:
        return self._input0_in((T.FLOAT32, T.INT32), "Input should be Float or Int32")

    def float_quant8_or_int32_op(self) -> bool:
        return self._input0_in((T.FLOAT32, *QUANT8, T.INT32), "Input should be Float, Quant8, or Int32")

    def restricted_scales(self) -> bool:
        """`ExpectIsRestrictedScalesCompliant`: NNAPI 1.0/1.1 need input_scale * filter_scale < output_scale
        (legacy per-tensor params: a per-channel filter reads scale 0)."""
        x, w, y = self.input(0), self.input(1), self.output(0)
        product = (x.scale if x else 0.0) * (w.scale if w else 0.0)
        return self.expect(product < (y.scale if y else 0.0), F.NOT_RESTRICTED_SCALE_COMPLIANT,
                           "When using NN API version 1.0 or 1.1, input_scale * filter_scale < output_scale.")

    def input_ranks_at_most_4(self, message: str = "Input rank must be <= 4") -> bool:
        return self.expect(self.rank(0) <= 4 and self.rank(1) <= 4, F.UNSUPPORTED_OPERAND_RANK, message)

    def constant_input(self, i: int) -> bool:
        t = self.input(i)
        return t is not None and t.constant


def is_float(t: TensorType | None) -> bool:
    return t == T.FLOAT32


def is_quantized(t: TensorType | None) -> bool:
    """`IsQuantized`: uint8 and int8 (int16 is not a quantized type to the delegate)."""
    return t in QUANT8
