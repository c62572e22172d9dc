"""BATCH_MATMUL."""

from __future__ import annotations

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

_TYPES = (TensorType.FLOAT32, TensorType.INT32, TensorType.INT8)


@lowering_rule(BuiltinOperator.BATCH_MATMUL)
class BatchMatMul(Rule):
    """TFLite BATCH_MATMUL(x [..., M, K], y [..., K, N]) with adj_x / adj_y -> NNAPI BATCH_MATMUL
    (x, y, adj_x BOOL, adj_y BOOL), feature level 6 (API 33).

    NNAPI takes float32, int32 or int8 (TENSOR_QUANT8_ASYMM_SIGNED, per-tensor) with both inputs of the
    same type, ranks 2..4 and equal batch dimensions (no broadcasting, unlike TFLite); a hybrid float x int8
    product has no NNAPI form.
    """

    nnapi_ops = (OperationType.BATCH_MATMUL,)
    min_api_level = 33
    dtypes = ("float32", "int32", "int8")
    constraints = "API 33; same dtype on both inputs; rank 2..4; equal batch dimensions"

    def check(self, c: CheckContext) -> None:
        c.require_api(33, "BATCH_MATMUL (NNAPI feature level 6)")
        if not c.require_inputs(2):
            return
        x, y, out = c.input(0), c.input(1), c.output(0)
        if c.require_dtype(x, _TYPES):
            c.require_dtype(y, (x.type,), "second input")
            c.require_dtype(out, (x.type,), "output")
            if x.type == TensorType.INT8:
                for t in (x, y, out):
                    if t.quantization.is_per_channel or not t.quantization.scale:
                        c.refuse(Code.QUANTIZATION, f"'{t.name}' needs per-tensor quantization")
        c.require_rank(x, 4, 2)
        c.require_rank(y, 4, 2, "second input")
        c.require_static_shapes()
        if x is not None and y is not None and x.shape[:-2] != y.shape[:-2]:
            c.refuse(Code.OPERAND_VALUE, f"batch dimensions {list(x.shape[:-2])} and {list(y.shape[:-2])} differ; "
                     "NNAPI's BATCH_MATMUL does not broadcast")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        adj_x = bool(o.adj_x) if o is not None else False
        adj_y = bool(o.adj_y) if o is not None else False
        c.emit(OperationType.BATCH_MATMUL, [c.in_(0), c.in_(1), c.boolean(adj_x), c.boolean(adj_y)], [c.out(0)])
