"""TFLite LSH_PROJECTION -> NNAPI LSH_PROJECTION."""

from __future__ import annotations

from nnconv.lowering.common import FLOAT
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import MISSING_FROM_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules.recurrent.common import check_static, opt_in
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.options import LSHProjectionOptions
from nnconv.tflite.schema_enums import BuiltinOperator


@lowering_rule(BuiltinOperator.LSH_PROJECTION)
class LshProjection(Rule):
    """TFLite LSH_PROJECTION(hash [H, B], input [N, ...], weight [N]?) -> NNAPI LSH_PROJECTION slots
    0..2 + 3 type. TFLite's SPARSE (1) adds i * 2^B to hash i's code, which is NNAPI's type 3 (API 29);
    NNAPI's type 1 is the deprecated variant without the offset, so sparse needs API 29. DENSE is 2 in both.
    """

    options_type = LSHProjectionOptions

    nnapi_ops = (OperationType.LSH_PROJECTION,)
    dtypes = ("float32", "int32", "uint8", "int8")
    constraints = "float32 hash; sparse projection needs API 29; dense needs the weight; int8 input needs API 30"
    driver_notes = (MISSING_FROM_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2, 3):
            return
        h, x, w = c.input(0), c.input(1), c.input(2)
        c.require_dtype(h, FLOAT, "hash")
        c.require_rank(h, 2, 2, "hash")
        if h is not None and h.rank == 2 and h.shape[1] > 32:
            c.refuse(Code.OPERAND_VALUE, f"{h.shape[1]} bits per hash; NNAPI takes at most 32")
        if x is None or c.nnapi_type(x) is None:
            c.refuse(Code.DTYPE, "the input's type has no NNAPI operand type")
        elif c.int8_shifted(x):
            # The projection hashes raw bytes, so the +128 shift of int8 carried as uint8 would change them.
            c.require_operand_type(OperandType.TENSOR_QUANT8_ASYMM_SIGNED, "an int8 LSH_PROJECTION input (hashed as "
                                   "raw bytes, so it cannot be shifted to uint8)")
        elif x.rank < 1:
            c.refuse(Code.RANK, "input must have at least one dimension")
        if w is not None:
            c.require_dtype(w, FLOAT, "weight")
        kind = c.options.type if c.options is not None else 0
        if kind == 1:
            # hand-written: LSH_PROJECTION's spec has no level for its type operand (NNAPI: type 3 from feature level 3)
            c.require_api(29, "sparse LSH_PROJECTION (NNAPI type 3)")
            if w is not None:  # NNAPI's sparse projection takes exactly hash, input and type (as the delegate)
                c.refuse(Code.OPERAND_VALUE, "NNAPI's sparse LSH_PROJECTION takes no weight tensor")
        elif kind == 2:
            c.require(w is not None, Code.MISSING_OPERAND, "the dense projection needs a weight tensor")
        else:
            c.refuse(Code.OPTION, f"unknown projection type {kind}")
        check_static(c)

    def lower(self, c: LowerContext) -> None:
        kind = 3 if c.options.type == 1 else 2
        ins = [c.input_operand(0), c.input_operand(1), opt_in(c, 2), c.i32(kind)]
        c.emit(OperationType.LSH_PROJECTION, ins, [c.output_operand(0)])
