"""What a validator sees of one operation (`OperationView`: its operands' descriptions and constant values,
never runtime data, as on Android) and how it refuses (`OperationRefused`, naming the operand slot at fault:
"input 1 (beta)"), with the small helpers several families' validators share.

The validators themselves are part of each operation's `OperationSpec` (`spec.py`), declared in the family
modules of this package; `validation.py` runs them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Sequence

import numpy as np

from nnconv.nnapi.enums import OperandLifeTime, OperandType
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

