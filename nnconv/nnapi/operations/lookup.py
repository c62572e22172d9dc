"""The table lookups and hashing: EMBEDDING_LOOKUP, HASHTABLE_LOOKUP and LSH_PROJECTION, with the
validate-time rule of LSHProjection.cpp of the NNAPI reference operations."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.spec import SampleAxis, declare, operation
from nnconv.nnapi.operations.view import OperationView

_T = OperationType


class LshProjectionSlot(IntEnum):
    HASH = 0
    INPUT = 1
    WEIGHT = 2  # may be omitted (NO_VALUE), but the slot is there
    TYPE = 3


@operation(_T.LSH_PROJECTION, level=1, inputs=LshProjectionSlot)
def validate_lsh_projection(view: OperationView, feature_level: int) -> int:
    """LSHProjection.cpp: exactly four inputs, the weight slot present even when omitted."""
    if len(view.in_operands) != len(LshProjectionSlot):
        raise view.refuse(f"{len(view.in_operands)} inputs; LSH_PROJECTION takes {len(LshProjectionSlot)} (hash, "
                          "input, weight (which may be omitted), type)")
    return 1


declare(_T.EMBEDDING_LOOKUP, level=1, inputs="LOOKUPS VALUES", sample_axis=SampleAxis.EMBEDDING_LOOKUP,
        float_batched=True)
declare(_T.HASHTABLE_LOOKUP, level=1, inputs="LOOKUPS KEYS VALUES", outputs="OUTPUT HITS")
