"""Table lookups: EMBEDDING_LOOKUP and HASHTABLE_LOOKUP (float32 values, as TFLite's NNAPI delegate)."""

from __future__ import annotations

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import F32, I32, U8
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.schema_enums import BuiltinOperator


@lowering_rule(BuiltinOperator.EMBEDDING_LOOKUP)
class EmbeddingLookup(Rule):
    """TFLite EMBEDDING_LOOKUP(lookup int32 [n], value [rows, ...]) -> NNAPI EMBEDDING_LOOKUP(lookups,
    values) (API 27). Float32 values only: TFLite dequantizes int8/uint8 tables on the fly (hybrid), which
    NNAPI's lookup does not."""

    nnapi_ops = (OperationType.EMBEDDING_LOOKUP,)
    dtypes = ("int32", "float32")
    constraints = "int32 lookups; float32 values; rank <= 4"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        c.require_dtype(c.input(0), (I32,), "lookup")
        c.require_rank(c.input(0), 1, 1, "lookup")
        c.require_dtype(c.input(1), (F32,), "value")
        c.require_dtype(c.output(), (F32,), "output")
        c.require_rank(c.input(1), 4, 1, "value")
        c.require_static_shapes()

    def lower(self, c: LowerContext) -> None:
        c.emit(OperationType.EMBEDDING_LOOKUP, [c.in_(0), c.in_(1)], [c.out()])


@lowering_rule(BuiltinOperator.HASHTABLE_LOOKUP)
class HashtableLookup(Rule):
    """TFLite HASHTABLE_LOOKUP(lookup int32, key int32, value) -> (output, hits uint8) maps slot for slot to
    NNAPI HASHTABLE_LOOKUP (API 27); hits becomes TENSOR_QUANT8_ASYMM (scale 1). Float32 values only."""

    nnapi_ops = (OperationType.HASHTABLE_LOOKUP,)
    dtypes = ("int32", "float32")
    constraints = "int32 lookups and keys; float32 values"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(3):
            return
        c.require_dtype(c.input(0), (I32,), "lookup")
        c.require_dtype(c.input(1), (I32,), "key")
        c.require_rank(c.input(0), 1, 1, "lookup")
        c.require_rank(c.input(1), 1, 1, "key")
        c.require_dtype(c.input(2), (F32,), "value")
        c.require_dtype(c.output(0), (F32,), "output")
        c.require_dtype(c.output(1), (U8,), "hits")
        c.require_static_shapes()

    def lower(self, c: LowerContext) -> None:
        c.emit(OperationType.HASHTABLE_LOOKUP, [c.in_(0), c.in_(1), c.in_(2)], [c.out(0), c.out(1)])
