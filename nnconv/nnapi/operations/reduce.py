"""The operations along an axis of their input: MEAN and the REDUCE_* reductions, ARGMAX / ARGMIN, TOPK_V2,
and RANDOM_MULTINOMIAL, which draws class indices per row (the one nondeterministic NNAPI operation)."""

from __future__ import annotations

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.operations.spec import AxisParam, SampleAxis, declare

_T = OperationType

# MEAN's keep_dims is an INT32 (> 0 keeps), the REDUCE_* ones' a BOOL
_REDUCE = "INPUT AXES KEEP_DIMS"
declare(_T.MEAN, level=2, inputs=_REDUCE, same_type_output=True, sample_axis=SampleAxis.REDUCE)
for _op in (_T.REDUCE_MAX, _T.REDUCE_MIN, _T.REDUCE_PROD, _T.REDUCE_SUM):
    declare(_op, level=3, inputs=_REDUCE, same_type_output=True, sample_axis=SampleAxis.REDUCE)
for _op in (_T.REDUCE_ALL, _T.REDUCE_ANY):
    declare(_op, level=3, inputs=_REDUCE, sample_axis=SampleAxis.REDUCE)
for _op in (_T.ARGMAX, _T.ARGMIN):
    declare(_op, level=3, inputs="INPUT AXIS", sample_axis=AxisParam("AXIS", None), float_batched=True)
declare(_T.TOPK_V2, level=3, inputs="INPUT K", outputs="VALUES INDICES", sample_axis=SampleAxis.TOPK)
# N single runs draw N times: never computed once at planning, never batched
declare(_T.RANDOM_MULTINOMIAL, level=3, inputs="INPUT SAMPLE_COUNT SEEDS", deterministic=False)
