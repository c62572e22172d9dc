"""Table lookups: EMBEDDING_LOOKUP (float, quantized and hybrid tables) and HASHTABLE_LOOKUP."""

from __future__ import annotations

from nnconv.lowering.common import check_int8
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._shape_common import F32, I32, I8, U8, check_same_quant
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.schema_enums import BuiltinOperator


@lowering_rule(BuiltinOperator.EMBEDDING_LOOKUP)
class EmbeddingLookup(Rule):
    """TFLite EMBEDDING_LOOKUP(lookup int32 [n], value [rows, ...]) -> NNAPI EMBEDDING_LOOKUP(lookups,
    values) (API 27).

    Float32 tables, and uint8 / int8 tables whose output has the same type and quantization (a plain row
    copy; the delegate takes float32 only). A quantized table with a float32 output is TFLite's hybrid
    lookup, `row * scale`: for an int8 table with a per-tensor scale and zero point 0 it is the quantized
    lookup followed by DEQUANTIZE, which computes exactly that (TFLite reads uint8 tables as int8 there, so
    those are refused)."""

    nnapi_ops = (OperationType.EMBEDDING_LOOKUP, OperationType.DEQUANTIZE)
    dtypes = ("int32", "float32", "uint8", "int8")
    constraints = "int32 lookups; float32 or quantized values; hybrid tables per-tensor with zero point 0"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        c.require_dtype(c.input(0), (I32,), "lookup")
        c.require_rank(c.input(0), 1, 1, "lookup")
        v, out = c.input(1), c.output()
        if not c.require_dtype(v, (F32, U8, I8), "value"):
            return
        c.require_rank(v, 4, 1, "value")
        c.require_static_shapes()
        if v.type == F32 or out.type != F32:
            if c.require_dtype(out, (v.type,), "output"):
                check_same_quant(c, v, out)
        elif v.type == U8:
            # TFLite's hybrid kernel reads the stored bytes as int8, which no NNAPI dequantization matches.
            c.refuse(Code.DTYPE, "a hybrid lookup of a uint8 table (TFLite reinterprets its bytes as int8)")
        elif v.quantization.is_per_channel or (v.quantization.zero_point and v.quantization.zero_point[0] != 0):
            c.refuse(Code.QUANTIZATION, "a hybrid lookup table needs one scale and zero point 0",
                     "TFLite multiplies stored values by the scale; NNAPI's DEQUANTIZE takes one scale")
        check_int8(c, shiftable=True)  # the table is a constant or a copy; +128 carries it as uint8

    def lower(self, c: LowerContext) -> None:
        v, out = c.input(1), c.output()
        if v.type == F32 or out.type != F32:
            c.emit(OperationType.EMBEDDING_LOOKUP, [c.input_operand(0), c.input_operand(1)], [c.output_operand()])
            return
        od = c.info(c.input_operand(1))
        rows = c.temp(od.type, c.info(c.output_operand()).dimensions, od.scale, od.zero_point)
        c.emit(OperationType.EMBEDDING_LOOKUP, [c.input_operand(0), c.input_operand(1)], [rows])
        c.emit(OperationType.DEQUANTIZE, [rows], [c.output_operand()])


@lowering_rule(BuiltinOperator.HASHTABLE_LOOKUP)
class HashtableLookup(Rule):
    """TFLite HASHTABLE_LOOKUP(lookup int32, key int32, value) -> (output, hits uint8) maps slot for slot to
    NNAPI HASHTABLE_LOOKUP (API 27); hits becomes TENSOR_QUANT8_ASYMM (scale 1). Both copy the value row of
    a found key and zeros for a missing one, so float32, int32 and uint8 tables (the types NNAPI lists) are
    taken, the output having the table's type and quantization (the delegate takes float32 only)."""

    nnapi_ops = (OperationType.HASHTABLE_LOOKUP,)
    dtypes = ("int32", "float32", "uint8")
    constraints = "int32 lookups and keys; float32, int32 or uint8 values"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(3):
            return
        c.require_dtype(c.input(0), (I32,), "lookup")
        c.require_dtype(c.input(1), (I32,), "key")
        c.require_rank(c.input(0), 1, 1, "lookup")
        c.require_rank(c.input(1), 1, 1, "key")
        v = c.input(2)
        if c.require_dtype(v, (F32, I32, U8), "value") and c.require_dtype(c.output(0), (v.type,), "output"):
            check_same_quant(c, v, c.output(0))
        c.require_dtype(c.output(1), (U8,), "hits")
        c.require_static_shapes()

    def lower(self, c: LowerContext) -> None:
        c.emit(OperationType.HASHTABLE_LOOKUP, [c.input_operand(0), c.input_operand(1), c.input_operand(2)],
               [c.output_operand(0), c.output_operand(1)])
