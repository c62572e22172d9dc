"""The operations along an axis of their input: MEAN and the REDUCE_* reductions, ARGMAX / ARGMIN, TOPK_V2,
and RANDOM_MULTINOMIAL, which draws class indices per row (the one nondeterministic NNAPI operation)."""

from __future__ import annotations

from enum import IntEnum

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.spec import AxisParam, SampleAxis, declare

_T = OperationType


class ReduceSlot(IntEnum):
    """MEAN (keep_dims an INT32, > 0 keeps) and REDUCE_* (a BOOL)."""
    INPUT = 0
    AXES = 1
    KEEP_DIMS = 2


class ArgSlot(IntEnum):
    """ARGMAX, ARGMIN."""
    INPUT = 0
    AXIS = 1


class TopKSlot(IntEnum):
    INPUT = 0
    K = 1


class TopKOutput(IntEnum):
    VALUES = 0
    INDICES = 1


class RandomMultinomialSlot(IntEnum):
    INPUT = 0
    SAMPLE_COUNT = 1
    SEEDS = 2


declare(_T.MEAN, level=2, inputs=ReduceSlot, same_type_output=True, sample_axis=SampleAxis.REDUCE)
for _op in (_T.REDUCE_MAX, _T.REDUCE_MIN, _T.REDUCE_PROD, _T.REDUCE_SUM):
    declare(_op, level=3, inputs=ReduceSlot, same_type_output=True, sample_axis=SampleAxis.REDUCE)
for _op in (_T.REDUCE_ALL, _T.REDUCE_ANY):
    declare(_op, level=3, inputs=ReduceSlot, sample_axis=SampleAxis.REDUCE)
for _op in (_T.ARGMAX, _T.ARGMIN):
    declare(_op, level=3, inputs=ArgSlot, sample_axis=AxisParam(ArgSlot.AXIS, None), float_batched=True)
declare(_T.TOPK_V2, level=3, inputs=TopKSlot, outputs=TopKOutput, sample_axis=SampleAxis.TOPK)
# N single runs draw N times: never computed once at planning, never batched
declare(_T.RANDOM_MULTINOMIAL, level=3, inputs=RandomMultinomialSlot, deterministic=False)
