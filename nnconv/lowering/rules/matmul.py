"""BATCH_MATMUL."""

from __future__ import annotations

import math

import numpy as np

from nnconv.lowering.common import bias_operand
from nnconv.lowering.context import INT8_SHIFT, CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import FEATURE_LEVEL_6_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._arith import quant_params
from nnconv.lowering.rules._weights import check_weighted_op
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType

_TYPES = (TensorType.FLOAT32, TensorType.INT32, TensorType.INT8)


def _fc_form(c: CheckContext) -> bool:
    """True when the product can run as FULLY_CONNECTED: a constant right-hand side that is a matrix (its
    leading dimensions all 1), no adj_x, float32 or int8. FC then treats every row of x independently,
    which is exactly a matmul broadcast over x's batch dimensions."""
    x, y, o = c.input(0), c.input(1), c.options
    if x is None or y is None or not c.is_const(y) or y.rank < 2 or any(d != 1 for d in y.shape[:-2]):
        return False
    if o is not None and o.adj_x:
        return False
    return x.type in (TensorType.FLOAT32, TensorType.INT8) and y.type == x.type


def _split_fc_level(c: CheckContext) -> int | None:
    """The API level from which a product of two computed tensors runs as one FULLY_CONNECTED per batch
    element (class docstring), or None when that form does not apply: float32 or int8 with equal batch
    dimensions. SPLIT needs API 29 (several batch elements), TRANSPOSE API 28 (adj_x, or y without adj_y);
    int8 needs API 29, where the quantized FC has no scale restriction (below 30 it is carried as
    uint8 + 128, as for FULLY_CONNECTED: the same arithmetic)."""
    x, y, o = c.input(0), c.input(1), c.options
    if x is None or y is None or x.type not in (TensorType.FLOAT32, TensorType.INT8) or y.type != x.type:
        return None
    adj_x, adj_y = (bool(o.adj_x), bool(o.adj_y)) if o is not None else (False, False)
    if x.rank < 2 or y.rank < 2 or x.shape[:-2] != y.shape[:-2]:
        return None
    if x.shape[-2 if adj_x else -1] != y.shape[-1 if adj_y else -2]:
        return None  # inconsistent inner dimensions: left to the BATCH_MATMUL checks
    level = 29 if math.prod(x.shape[:-2]) > 1 else (28 if adj_x or not adj_y else 27)
    return max(level, 29) if x.type == TensorType.INT8 else level


@lowering_rule(BuiltinOperator.BATCH_MATMUL)
class BatchMatMul(Rule):
    """TFLite BATCH_MATMUL(x [..., M, K], y [..., K, N]) with adj_x / adj_y -> NNAPI BATCH_MATMUL
    (x, y, adj_x BOOL, adj_y BOOL), feature level 6 (API 33), as TFLite's delegate does; NNAPI's op takes
    float32, int32 or int8 (TENSOR_QUANT8_ASYMM_SIGNED, per-tensor) with both inputs of the same type,
    ranks 2..4 and equal batch dimensions (no broadcasting).

    When y is a constant matrix and adj_x is false (the usual "x times weights" of transformer layers), the
    product is FULLY_CONNECTED(x, weights = y^T [N, K] (y itself with adj_y), zero bias) instead, followed by
    a RESHAPE to [..., M, N] when x has batch dimensions. That form runs from API 27 (int8 as uint8 + 128
    below 30; quantized scale restriction below 29), broadcasts over x's batch, and is used below API 33
    and wherever BATCH_MATMUL itself would need broadcasting (beyond TFLite's delegate).

    Below API 33, a product of two computed tensors (attention's Q.K^T and P.V) with equal batch dimensions
    runs as one FULLY_CONNECTED per batch element, whose weights operand is the (non-constant) batch
    element of y: NNAPI's FC does not require constant weights. x and y are reshaped to [B, M, K] and
    [B, K, N], y is transposed to [B, N, K] unless adj_y (x to [B, M, K] when adj_x), both are SPLIT into B
    pieces, FC(x_b, y_b reshaped to [N, K], zero bias) gives [M, N], and a CONCATENATION plus RESHAPE
    gives [..., M, N]. Per batch element that is the same int32 accumulation and requantization as TFLite's
    kernel. float32 from API 27 (28 with a TRANSPOSE, 29 with several batch elements), int8 from API 29.
    Beyond TFLite's delegate, which waits for BATCH_MATMUL (API 33).
    `asymmetric_quantize_inputs` concerns only TFLite's hybrid kernel (float x, int8 y), which is refused
    here since both inputs must share one type.
    """

    nnapi_ops = (OperationType.BATCH_MATMUL, OperationType.FULLY_CONNECTED, OperationType.RESHAPE,
                 OperationType.TRANSPOSE, OperationType.SPLIT, OperationType.CONCATENATION)
    min_api_level = 27
    dtypes = ("float32", "int32", "int8")
    constraints = ("API 33 (BATCH_MATMUL: same dtype, rank 2..4, equal batch dims); from API 27 with a constant "
                   "matrix y and no adj_x (FULLY_CONNECTED); below 33 two computed float32 tensors with equal "
                   "batch dims as FULLY_CONNECTED per batch element (27/28/29; int8 29)")
    driver_notes = (FEATURE_LEVEL_6_ARMNN,)

    def check(self, c: CheckContext) -> None:
        if not c.require_inputs(2):
            return
        x, y, out = c.input(0), c.input(1), c.output(0)
        if c.require_dtype(x, _TYPES):
            c.require_dtype(y, (x.type,), "second input")
            c.require_dtype(out, (x.type,), "output")
            if x.type == TensorType.INT8:
                for t in (x, y, out):
                    if t is not None and (t.quantization.is_per_channel or not t.quantization.scale):
                        c.refuse(Code.QUANTIZATION, f"'{t.name}' needs per-tensor quantization")
        c.require_rank(x, 4, 2)
        c.require_rank(y, 4, 2, "second input")
        c.require_static_shapes()
        if not c.ok:
            return
        if _fc_form(c):
            check_weighted_op(c, x, y, None, "BATCH_MATMUL as FULLY_CONNECTED", per_channel=False)
            return
        split_level = _split_fc_level(c)
        if split_level is not None and c.api_level < 33:
            # hand-written: the split form's level, computed from the operations it emits (_split_fc_level)
            c.require_api(split_level, "BATCH_MATMUL of two computed tensors as FULLY_CONNECTED per batch element")
            return
        c.require_operation(OperationType.BATCH_MATMUL, "BATCH_MATMUL (NNAPI feature level 6)",
                            hint="raise --api-level to 33; a constant right-hand side without adj_x lowers earlier")
        if x.shape[:-2] != y.shape[:-2]:
            c.refuse(Code.OPERAND_VALUE, f"batch dimensions {list(x.shape[:-2])} and {list(y.shape[:-2])} differ; "
                     "NNAPI's BATCH_MATMUL does not broadcast")

    def lower(self, c: LowerContext) -> None:
        o = c.options
        adj_x = bool(o.adj_x) if o is not None else False
        adj_y = bool(o.adj_y) if o is not None else False
        x_t, y_t = c.input(0), c.input(1)
        use_fc = _fc_form(c) and (c.api_level < 33 or x_t.shape[:-2] != y_t.shape[:-2])
        if not use_fc and c.api_level < 33:
            self._lower_split_fc(c, adj_x, adj_y)
            return
        if not use_fc:
            c.emit(OperationType.BATCH_MATMUL, [c.input_operand(0), c.input_operand(1), c.boolean(adj_x),
                                                c.boolean(adj_y)],
                   [c.output_operand(0)])
            return
        y = np.asarray(c.const_value(y_t)).reshape(y_t.shape[-2:])
        weights = y if adj_y else y.T  # FC weights are [units, input_size]
        ntype = c.nnapi_type(y_t)
        scale, zp = quant_params(y_t)
        if c.int8_shifted(y_t):
            weights, zp = (weights.astype(np.int16) + INT8_SHIFT).astype(np.uint8), zp + INT8_SHIFT
        w = c.constant(ntype, np.ascontiguousarray(weights), scale=float(scale), zero_point=int(zp),
                       name=f"{y_t.name}/fc_weights")
        x = c.input_operand(0)
        units = weights.shape[0]
        bias = bias_operand(c, 2, units, x, w)  # TFLite has no third input: always a zero bias
        out_t = c.output(0)
        rows = math.prod(x_t.shape[:-1])
        if out_t.rank == 2:
            c.emit(OperationType.FULLY_CONNECTED, [x, w, bias, c.i32(0)], [c.output_operand(0)])
            return
        flat = c.temp_like(c.output_operand(0), (rows, units))
        c.emit(OperationType.FULLY_CONNECTED, [x, w, bias, c.i32(0)], [flat])
        c.emit(OperationType.RESHAPE, [flat, c.i32_vector(list(out_t.shape))], [c.output_operand(0)])

    @staticmethod
    def _lower_split_fc(c: LowerContext, adj_x: bool, adj_y: bool) -> None:
        """One FULLY_CONNECTED per batch element (class docstring)."""
        x_t, y_t, out_t = c.input(0), c.input(1), c.output(0)
        batch = math.prod(x_t.shape[:-2])
        m, k = (x_t.shape[-1], x_t.shape[-2]) if adj_x else (x_t.shape[-2], x_t.shape[-1])
        n = y_t.shape[-2] if adj_y else y_t.shape[-1]

        def as_bmk(operand: int, shape: tuple, transpose: bool) -> int:
            """operand as [B, rows, cols], transposed to [B, cols, rows] when asked."""
            three = c.temp_like(operand, (batch,) + tuple(shape[-2:]))
            c.emit(OperationType.RESHAPE, [operand, c.i32_vector([batch, *shape[-2:]])], [three])
            if not transpose:
                return three
            swapped = c.temp_like(operand, (batch, shape[-1], shape[-2]))
            c.emit(OperationType.TRANSPOSE, [three, c.i32_vector([0, 2, 1])], [swapped])
            return swapped

        xs = as_bmk(c.input_operand(0), x_t.shape, adj_x)  # [B, M, K]
        ys = as_bmk(c.input_operand(1), y_t.shape, not adj_y)  # [B, N, K]
        if batch > 1:
            x_parts = [c.temp_like(xs, (1, m, k)) for _ in range(batch)]
            y_parts = [c.temp_like(ys, (1, n, k)) for _ in range(batch)]
            c.emit(OperationType.SPLIT, [xs, c.i32(0), c.i32(batch)], x_parts)
            c.emit(OperationType.SPLIT, [ys, c.i32(0), c.i32(batch)], y_parts)
        else:
            x_parts, y_parts = [xs], [ys]
        rows = []
        for xb, yb in zip(x_parts, y_parts):
            w = c.temp_like(yb, (n, k))
            c.emit(OperationType.RESHAPE, [yb, c.i32_vector([n, k])], [w])
            bias = bias_operand(c, 2, n, xb, w)  # TFLite has no third input: always a zero bias
            row = c.temp_like(c.output_operand(0), (m, n))
            c.emit(OperationType.FULLY_CONNECTED, [xb, w, bias, c.i32(0)], [row])
            rows.append(row)
        if batch > 1:
            joined = c.temp_like(c.output_operand(0), (batch * m, n))
            c.emit(OperationType.CONCATENATION, [*rows, c.i32(0)], [joined])
        else:
            joined = rows[0]
        c.emit(OperationType.RESHAPE, [joined, c.i32_vector(list(out_t.shape))], [c.output_operand(0)])
