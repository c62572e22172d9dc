"""Named operand slots: an operation's input list written by slot name instead of by position.

Every `OperationSpec` names its slots with an IntEnum (`SoftmaxSlot.BETA`, `QuantizedLstmSlot.CELL_STATE_IN`);
the kernels read operands by those names, the validators refuse naming them ("input 19 (cell_state_in)"), and
the lowering rules write an operation's inputs as {slot: operand} through `slot_operands`, so that no
reader or writer of an operation counts slots.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Mapping


def slot_operands(by_slot: Mapping[IntEnum, int]) -> list[int]:
    """The operation's input list from {slot: operand index}: the slots in order, with no gap (an optional
    slot may be left out only with every one after it)."""
    ordered = sorted(by_slot.items())
    if [int(slot) for slot, _ in ordered] != list(range(len(ordered))):
        missing = sorted(set(range(int(ordered[-1][0]) + 1)) - {int(slot) for slot, _ in ordered})
        raise ValueError(f"operand slots {missing} are missing")
    return [index for _slot, index in ordered]
