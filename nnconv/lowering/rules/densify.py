"""DENSIFY: a sparse constant made dense at conversion time (NNAPI has no sparse operands)."""

from __future__ import annotations

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType
from nnconv.tflite.sparsity import SparsityError


@lowering_rule(BuiltinOperator.DENSIFY)
class Densify(Rule):
    """TFLite DENSIFY(input: sparse constant) -> no NNAPI operation: the dense value becomes a constant
    operand (CONSTANT_REFERENCE when over 128 bytes) that the op's consumers read directly.

    TFLite's NNAPI delegate does the same, but only from API 30 and only for a CONV_2D filter; since the
    densified value is an ordinary constant, nnconv accepts it at every level and for any consumer
    (float32, float16 widened to float32, int8 under the usual int8 policy). Its output counts as a constant
    for the rules of its readers (`context.conversion_constants`): a DEQUANTIZE of densified float16 weights
    folds into a float32 constant too, at every level.
    """

    nnapi_ops = ()
    becomes_constant = True
    beyond_delegate = False
    dtypes = ("float32", "float16", "int8")
    constraints = "input must be a constant sparse tensor; densified at conversion time, any API level"

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(1):
            return
        x = c.input(0)
        if not c.require_const(x, "DENSIFY input"):
            return
        c.require_dtype(x, (TensorType.FLOAT32, TensorType.FLOAT16, TensorType.INT8))
        if x.sparsity is None:
            c.refuse(Code.OPERAND_VALUE, f"DENSIFY input '{x.name}' has no sparsity parameters")
            return
        try:
            dense = c.const_value(x)
        except SparsityError as e:
            c.refuse(Code.MALFORMED, f"sparse tensor '{x.name}' is inconsistent: {e}")
            return
        out = c.output(0)
        if tuple(dense.shape) != tuple(out.shape):
            c.refuse(Code.MALFORMED, f"densified shape {list(dense.shape)} differs from the output's "
                     f"{list(out.shape)}")

    def lower(self, c: LowerContext) -> None:
        # The input operand is created from the densified value (CheckContext.const_value).
        c.alias(c.op.outputs[0], c.input_operand(0))
