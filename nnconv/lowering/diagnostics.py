"""Diagnostics: why an op is refused (or what to watch for), with a stable code, a hint and the lowest
API level that would accept it. The CLI's report, `nnconv ops` and the exit codes all read these."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace


class Verdict(str, enum.Enum):
    """What the report says of one TFLite operator."""

    LOWERED = "lowered"
    FOLDED = "folded"  # evaluated at conversion time into a constant
    REFUSED_LEVEL = "refused_level"  # NNAPI has no such operation (or variant) at this level
    REFUSED_OPERAND = "refused_operand"  # an operand property: dtype, rank, dynamic shape, quantization...
    CUSTOM = "custom"  # custom op without an NNAPI equivalent
    UNSUPPORTED = "unsupported"  # a builtin nnconv has no lowering for
    DRIVER_WARNING = "driver_warning"  # accepted by the spec; drivers (or TFLite's CPU fallback) may refuse it


class Code(str, enum.Enum):
    """Diagnostic codes. Values are stable: CI scripts and tests match them."""

    UNSUPPORTED_OPERATOR = "NNC001"  # no lowering rule for this builtin
    CUSTOM_OPERATOR = "NNC002"
    OPERATOR_VERSION = "NNC003"  # TFLite op version beyond what the rule knows
    API_LEVEL = "NNC010"  # needs a higher API level (the op itself or a variant of it)
    DTYPE = "NNC020"
    RANK = "NNC021"
    DYNAMIC_SHAPE = "NNC022"
    NON_CONSTANT = "NNC023"  # a parameter NNAPI needs as a constant
    QUANTIZATION = "NNC024"  # quantization scheme or parameters
    OPTION = "NNC025"  # a builtin option value NNAPI cannot express
    OPERAND_VALUE = "NNC026"  # an operand value out of NNAPI's range (e.g. zero-sized dimension)
    MISSING_OPERAND = "NNC027"
    MALFORMED = "NNC028"  # the operator's tensors or options do not have the shape its kind requires
    RUNTIME_REFUSED = "NNC030"  # the NNAPI runtime's validation refuses an operation the op lowers to
    GRAPH_INVARIANT = "NNC031"  # the operations the op lowers to break a graph invariant (nnapi/graph_invariants.py)
    # The delegate target (`nnconv/delegate/`): what happens to the whole model on a phone.
    DELEGATE_DYNAMIC_TENSORS = "NNC040"  # TFLite refuses the delegate: the graph has dynamic-sized tensors
    DELEGATE_BUILD_FAILED = "NNC041"  # the delegate fails building a partition (e.g. a tensor type it cannot add)
    DELEGATE_PREPARE_FAILED = "NNC042"  # a kernel's Prepare fails once the delegate is applied
    DELEGATE_NULL_API = "NNC043"  # the delegate calls an NNAPI function the API level does not have (a crash)
    TFLITE_PREPARE_FAILED = "NNC044"  # TFLite itself cannot prepare the model
    DELEGATE_GRAPH_REFUSED = "NNC045"  # Android's NNAPI runtime refuses an operation the delegate builds
    DELEGATE_CRASH = "NNC046"  # the delegate dereferences a null pointer while it builds (a crash)
    DRIVER_SUPPORT = "NNW100"  # warning: commonly refused by drivers
    TFLITE_REFUSES = "NNW101"  # warning: NNAPI takes it, TFLite's own CPU kernel refuses the op
    APP_CUSTOM_OP = "NNW111"  # warning: a custom op stock TFLite lacks; the plan assumes the app registers it
    DELEGATE_TENSOR_REALLOC = "NNW110"  # warning: the delegate adds enough tensors to move TFLite's tensor array

    @property
    def verdict(self) -> Verdict:
        if self is Code.UNSUPPORTED_OPERATOR:
            return Verdict.UNSUPPORTED
        if self is Code.CUSTOM_OPERATOR:
            return Verdict.CUSTOM
        if self is Code.API_LEVEL:
            return Verdict.REFUSED_LEVEL
        if self.value.startswith("NNW"):
            return Verdict.DRIVER_WARNING
        return Verdict.REFUSED_OPERAND


@dataclass(frozen=True)
class Diagnostic:
    code: Code
    message: str
    op_index: int | None = None
    op_name: str = ""
    hint: str = ""
    min_api_level: int | None = None  # lowest API level at which this particular problem goes away
    subgraph: int = 0

    @property
    def is_error(self) -> bool:
        return not self.code.value.startswith("NNW")

    @property
    def verdict(self) -> Verdict:
        return self.code.verdict

    def at(self, op_index: int, op_name: str, subgraph: int = 0) -> "Diagnostic":
        return replace(self, op_index=op_index, op_name=op_name, subgraph=subgraph)

    def one_line(self) -> str:
        where = f"op #{self.op_index} {self.op_name}: " if self.op_index is not None else ""
        hint = f" ({self.hint})" if self.hint else ""
        return f"{self.code.value} {where}{self.message}{hint}"

    def to_json(self) -> dict:
        return {"code": self.code.value, "op_index": self.op_index, "op": self.op_name,
                "message": self.message, "hint": self.hint, "min_api_level": self.min_api_level,
                "verdict": self.verdict.value, "severity": "error" if self.is_error else "warning"}
