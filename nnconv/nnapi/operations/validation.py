"""Operation validation: would the NNAPI runtime accept this operation, with these operands, at a feature level?

Android validates every operation of a model before it compiles it (each operation file's `validate`,
returning the feature level the operation needs with its operands), and the reference CPU's `prepare`
refuses some more from the constant parameters alone (a quantized multiplier out of range, an output
scale the kernel prescribes). Both are gathered per operation family in this package:

    class SoftmaxSlot(IntEnum):
        INPUT = 0
        BETA = 1

    @validator(OperationType.SOFTMAX)
    def validate_softmax(view: OperationView, feature_level: int) -> int:
        beta = view.scalar(SoftmaxSlot.BETA)
        ...  # returns the feature level needed, or raises view.refuse(f"{view.describe(SoftmaxSlot.BETA)} ...")

Operand slots are named by an `IntEnum` per operation signature (the kernels index their operands with the
same enums), so a refusal names the slot at fault: "input 1 (beta)". Validators are kept apart from the
kernels (`nnconv/runtime/kernels`, a later stage that imports them), so how a kernel computes can change
without touching what the runtime accepts. Where an operation has no validator of its own,
`default_feature_level` applies: the operation's own introduction and its operand types'. The model
validator (`nnconv/nnapi/validate.py`) calls `validate_operation` for every operation; the lowering calls
it on what the rules emit (so `check` refuses what the runtime would), and the executor calls it before it
runs a model.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Callable, Sequence

import numpy as np

from nnconv.nnapi.enums import OperandLifeTime, OperandType, OperationType
from nnconv.nnapi.levels import api_level_of_feature_level
from nnconv.nnapi.model import Model, Operand, Operation

_CONSTANT = (OperandLifeTime.CONSTANT_COPY, OperandLifeTime.CONSTANT_REFERENCE)


class OperationRefused(Exception):
    """Raised by a validator: why the runtime refuses the operation, naming the operand slot at fault."""


@dataclass(frozen=True)
class OperationView:
    """What a validator sees of one operation: its operands' descriptions and the values of its constant
    inputs (validation never sees runtime data, as on Android)."""

    operation: Operation
    in_operands: Sequence[Operand | None]  # None: an omitted optional input (NO_VALUE)
    out_operands: Sequence[Operand]
    model: Model | None = None  # where constant values live
    in_types: Sequence[OperandType] = ()  # every input's declared type, omitted ones' too

    @classmethod
    def of(cls, model: Model, subgraph_index: int, operation: Operation) -> "OperationView":
        sg = model.subgraphs()[subgraph_index]
        ins = [None if sg.operands[i].lifetime is OperandLifeTime.NO_VALUE else sg.operands[i]
               for i in operation.inputs]
        return cls(operation, ins, [sg.operands[o] for o in operation.outputs], model,
                   [sg.operands[i].type for i in operation.inputs])

    @property
    def name(self) -> str:
        return self.operation.type.name

    def refuse(self, message: str) -> OperationRefused:
        return OperationRefused(message)

    def input(self, slot: int) -> Operand | None:
        return self.in_operands[slot] if slot < len(self.in_operands) else None

    def type_at(self, slot: int) -> OperandType | None:
        """The declared type of input `slot` (an omitted one's too), None beyond the inputs."""
        if self.in_types:
            return self.in_types[slot] if slot < len(self.in_types) else None
        od = self.input(slot)
        return None if od is None else od.type

    def constant(self, slot: int) -> np.ndarray | None:
        """The value of input `slot` when it is a constant operand, else None."""
        od = self.input(slot)
        if od is None or od.lifetime not in _CONSTANT or self.model is None:
            return None
        return self.model.constant_value(od)

    def scalar(self, slot: int, default: float | int | bool | None = None) -> float | int | bool | None:
        """Constant scalar input `slot` as a Python value; `default` when omitted or not constant."""
        v = self.constant(slot)
        return default if v is None or v.size != 1 else v.reshape(()).item()

    @staticmethod
    def describe(slot: int) -> str:
        """'input 1 (beta)' for a named slot (a member of the operation's slot enum), 'input 1' otherwise."""
        return f"input {int(slot)} ({slot.name.lower()})" if isinstance(slot, IntEnum) else f"input {slot}"


ValidateFn = Callable[[OperationView, int], int]
VALIDATORS: dict[OperationType, ValidateFn] = {}


def validator(*op_types: OperationType) -> Callable[[ValidateFn], ValidateFn]:
    """Registers the decorated function as the validator of each of `op_types` (one per operation type)."""
    def register(fn: ValidateFn) -> ValidateFn:
        for op_type in op_types:
            if op_type in VALIDATORS:
                raise RuntimeError(f"two validators registered for {op_type.name}")
            VALIDATORS[op_type] = fn
        return fn
    return register


def default_feature_level(view: OperationView) -> int:
    """The feature level the operation itself and its operand types were introduced at."""
    types = [od.type for od in (*view.in_operands, *view.out_operands) if od is not None]
    return max([view.operation.type.min_feature_level, *(t.min_feature_level for t in types)])


# Operations whose output 0 has input 0's type in every signature of NeuralNetworksTypes.h (the reference
# validates it with validateOutputTypes(context, {inputType})): a file whose output slot names an operand of
# another type is refused here, never reaching a kernel that takes the types for granted.
_T = OperationType
SAME_TYPE_OUTPUT = frozenset({
    _T.SOFTMAX, _T.LOG_SOFTMAX, _T.RELU, _T.RELU1, _T.RELU6, _T.LOGISTIC, _T.TANH, _T.ELU, _T.HARD_SWISH,
    _T.L2_NORMALIZATION, _T.LOCAL_RESPONSE_NORMALIZATION, _T.AVERAGE_POOL_2D, _T.MAX_POOL_2D, _T.L2_POOL_2D,
    _T.RESHAPE, _T.SQUEEZE, _T.TRANSPOSE, _T.PAD, _T.PAD_V2, _T.DEPTH_TO_SPACE, _T.SPACE_TO_DEPTH,
    _T.BATCH_TO_SPACE_ND, _T.SPACE_TO_BATCH_ND, _T.STRIDED_SLICE, _T.SLICE, _T.RESIZE_BILINEAR,
    _T.RESIZE_NEAREST_NEIGHBOR, _T.MAXIMUM, _T.MINIMUM, _T.ABS, _T.NEG, _T.FLOOR, _T.SQRT, _T.RSQRT, _T.EXP,
    _T.LOG, _T.SIN, _T.REDUCE_MAX, _T.REDUCE_MIN, _T.REDUCE_SUM, _T.REDUCE_PROD, _T.MEAN, _T.TILE,
    _T.CHANNEL_SHUFFLE, _T.PRELU, _T.CONCATENATION})


def validate_operation(view: OperationView, feature_level: int) -> int:
    """The feature level the operation needs with its operands; raises OperationRefused when the runtime
    refuses it at every level or needs a level above `feature_level`."""
    if view.operation.type in SAME_TYPE_OUTPUT and view.in_operands and view.out_operands:
        x, out = view.in_operands[0], view.out_operands[0]
        if x is not None and out.type is not x.type:
            raise view.refuse(f"output 0 is {out.type.name}, {view.describe(0)} is {x.type.name}: the output must "
                              "have the input's type")
    needed = default_feature_level(view)
    specific = VALIDATORS.get(view.operation.type)
    if specific is not None:
        needed = max(needed, specific(view, feature_level))
    if needed > feature_level:
        raise view.refuse(f"needs NNAPI feature level {needed} (API {api_level_of_feature_level(needed)}) "
                          f"with these operands, the model targets feature level {feature_level}")
    return needed


def f32(x: float) -> float:
    """`x` rounded to float32, as the reference holds operand scales."""
    return float(np.float32(x))


def check_fixed_output(view: OperationView, scale: float, zero_point: int, shown: str | None = None) -> None:
    """Refuses an output 0 whose (scale, zero point) is not the fixed one the operation prescribes for its
    quantized type (SOFTMAX, LOGISTIC, TANH, L2_NORMALIZATION); `shown` writes the scale in the message."""
    out = view.out_operands[0]
    if np.float32(out.scale) != np.float32(scale) or out.zero_point != zero_point:
        shown = shown or f"{scale:g}"
        raise view.refuse(f"output 0 must have scale {shown} and zero point {zero_point}, got {out.scale:g} and "
                          f"{out.zero_point}")

