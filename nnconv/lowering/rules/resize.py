"""RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR."""

from __future__ import annotations

import numpy as np

from nnconv.lowering.common import FLOAT_OR_QUANT8, check_int8
from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.diagnostics import Code
from nnconv.lowering.driver_support import NO_SIGNED_INT8_ARMNN
from nnconv.lowering.registry import Rule, lowering_rule
from nnconv.lowering.rules._resize_phases import PHASE_MIN_API, PHASE_OPS, half_pixel_upscale, lower_half_pixel_upscale
from nnconv.nnapi.enums import OperationType
from nnconv.tflite.schema_enums import BuiltinOperator, TensorType


class _Resize(Rule):
    """TFLite <OP>(input [N,H,W,C], size [2] = [new_h, new_w]) -> NNAPI <OP>(input, output WIDTH,
    output HEIGHT[, NCHW=false[, align_corners, half_pixel_centers]]). NNAPI takes the width before the
    height, as INT32 scalars, so the size tensor must be constant. align_corners / half_pixel_centers exist
    in NNAPI from API 30. Quantized output keeps the input's scale and zero point."""

    int8_shiftable = True
    nnapi_op: OperationType
    dtypes = ("float32", "uint8", "int8")
    quant_api = 29  # NNAPI's first level with a quantized variant

    def check(self, c: CheckContext) -> None:
        self.check_level(c)
        if not c.require_inputs(2):
            return
        x, size, out = c.input(0), c.input(1), c.output(0)
        if c.require_dtype(x, FLOAT_OR_QUANT8):
            c.require_dtype(out, (x.type,), "output")
            if x.type != TensorType.FLOAT32:
                c.require_api(self.quant_level(c), f"quantized {c.op.name}")  # hand-written: per rule (quant_level)
                xq, oq = x.quantization, out.quantization
                if (list(xq.scale), list(xq.zero_point)) != (list(oq.scale), list(oq.zero_point)):
                    c.refuse(Code.QUANTIZATION, "the output's scale and zero point differ from the input's")
        c.require_rank(x, 4, 4)
        c.require_static_shapes()
        if c.require_const(size, "size"):
            value = np.asarray(c.const_value(size)).reshape(-1)
            if value.size != 2 or value.min() < 1:
                c.refuse(Code.OPERAND_VALUE, f"size {value.tolist()} is not two positive extents")
        o = c.options
        if o is not None and (o.align_corners or o.half_pixel_centers) and self.flags_matter(c):
            # hand-written: per rule (flags_level); the flag operands' level is not a declared spec fact
            c.require_api(self.flags_level(c), f"{c.op.name} with align_corners / half_pixel_centers")
            if o.align_corners and o.half_pixel_centers:
                c.refuse(Code.OPTION, "align_corners and half_pixel_centers together")
        check_int8(c)

    def check_level(self, c: CheckContext) -> None:
        """Level of the op itself."""

    def flags_matter(self, c: CheckContext) -> bool:
        """False when align_corners / half_pixel_centers do not change the result (then not emitted)."""
        return True

    def quant_level(self, c: CheckContext) -> int:
        """Lowest level of the quantized variant."""
        return self.quant_api

    def flags_level(self, c: CheckContext) -> int:
        """Lowest level that computes align_corners / half_pixel_centers (NNAPI's flags: 30)."""
        return 30

    def lower(self, c: LowerContext) -> None:
        h, w = (int(v) for v in np.asarray(c.const_value(c.input(1))).reshape(-1))
        o = c.options
        flags = o is not None and self.flags_matter(c)
        align = bool(o.align_corners) if flags else False
        half = bool(o.half_pixel_centers) if flags else False
        args = [c.input_operand(0), c.i32(w), c.i32(h)]
        if align or half or self.nnapi_op is OperationType.RESIZE_NEAREST_NEIGHBOR:
            args.append(c.boolean(False))  # NCHW; NEAREST_NEIGHBOR requires the operand
        if align or half:
            args += [c.boolean(align), c.boolean(half)]
        c.emit(self.nnapi_op, args, [c.output_operand(0)])


@lowering_rule(BuiltinOperator.RESIZE_BILINEAR)
class ResizeBilinear(_Resize):
    doc_more = """
    Float from API 27; quantized from API 29 (int8 as uint8 + 128 below 30, exact since the interpolation
    commutes with the shift). TFLite's delegate also asks out H == W below 29, a restriction of old drivers
    that NNAPI 1.0 itself does not have. Known difference: TFLite's own int8 kernel interpolates in 10-bit
    fixed point (scales rounded to 1/1024), NNAPI's reference in float32, so int8 results can differ from
    the TFLite interpreter by about 1 + 255 * out / 2048 LSB when the scale is not a multiple of 1/1024 (the
    position error accumulates along the axis: 2 LSB at 9 outputs, 5 at a 16 -> 32 align_corners resize of
    random data; uint8 stays within 1 LSB).
    Below API 30, a float32 half_pixel_centers upscale by 2, 4, 8 or 16 on both axes (TF2's `tf.image.resize`
    in MediaPipe's feature pyramids) lowers from API 28 as a phase decomposition (`_resize_phases.py`:
    a 3x3 depthwise convolution per output phase of the replicate-padded input, then DEPTH_TO_SPACE),
    within float tolerance; beyond TFLite's delegate, which keeps such ops on the CPU below 30."""
    nnapi_op = OperationType.RESIZE_BILINEAR
    nnapi_ops = (OperationType.RESIZE_BILINEAR,) + PHASE_OPS
    constraints = ("rank-4 input; constant size; quantized needs API 29; align_corners/half_pixel_centers API 30, "
                   "or API 28 for a float32 half-pixel upscale by 2, 4, 8 or 16")

    def flags_level(self, c: CheckContext) -> int:
        return PHASE_MIN_API if half_pixel_upscale(c) is not None else 30

    def lower(self, c: LowerContext) -> None:
        f = half_pixel_upscale(c) if c.api_level < 30 else None
        if f is None:
            super().lower(c)
            return
        lower_half_pixel_upscale(c, f)


def integer_upscale(c: CheckContext) -> int | None:
    """The factor f when the nearest-neighbour resize repeats every pixel f x f times: output = f * input
    on both axes and the source index floor((y + offset) * (in / out)), in float32 as the kernels compute
    it (offset 0.5 with half_pixel_centers, else 0), equals y // f for every output row and column. With
    half_pixel_centers that holds too: for y = q*f + r, (y + 0.5) / f = q + (r + 0.5) / f < q + 1, so the
    flag changes nothing and the plain operation (API 29, or below it the repeat) computes the same.
    None otherwise (and always with align_corners)."""
    x, size, o = c.input(0), c.input(1), c.options
    if x is None or size is None or x.rank != 4 or not c.is_const(size):
        return None
    if o is not None and o.align_corners:
        return None
    offset = np.float32(0.5) if o is not None and o.half_pixel_centers else np.float32(0.0)
    h, w = (int(v) for v in np.asarray(c.const_value(size)).reshape(-1)[:2])
    in_h, in_w = x.shape[1], x.shape[2]
    if in_h < 1 or in_w < 1 or h % in_h or w % in_w or h // in_h != w // in_w or h // in_h < 2:
        return None
    f = h // in_h
    for n_in, n_out in ((in_h, h), (in_w, w)):
        pos = np.arange(n_out, dtype=np.float32)
        idx = np.floor((pos + offset) * (np.float32(n_in) / np.float32(n_out))).astype(np.int64)
        if not np.array_equal(np.minimum(idx, n_in - 1), np.arange(n_out) // f):
            return None
    return f


@lowering_rule(BuiltinOperator.RESIZE_NEAREST_NEIGHBOR)
class ResizeNearestNeighbor(_Resize):
    doc_more = """
    The operation exists from API 29 (with the NCHW operand always present). An upscale by the same integer
    factor f on both axes (no flag, or half_pixel_centers, which then changes nothing: Keras' UpSampling2D
    in TF >= 2.x) is exactly "repeat each pixel f x f times": the plain operation from API 29, and below it
    CONCATENATION of f*f copies on the channel axis, then DEPTH_TO_SPACE with block f (beyond TFLite's
    delegate, which needs API 29)."""
    nnapi_op = OperationType.RESIZE_NEAREST_NEIGHBOR
    nnapi_ops = (OperationType.RESIZE_NEAREST_NEIGHBOR, OperationType.CONCATENATION, OperationType.DEPTH_TO_SPACE)
    min_api_level = 27
    constraints = ("rank-4 input; constant size; API 29, or below an equal integer upscale on both axes; "
                   "align_corners/half_pixel_centers API 30")
    driver_notes = (NO_SIGNED_INT8_ARMNN,)

    def check_level(self, c: CheckContext) -> None:
        if integer_upscale(c) is None:
            c.require_operation(OperationType.RESIZE_NEAREST_NEIGHBOR,
                                hint="raise --api-level to 29; below 29 only an equal integer upscale of both axes "
                                     "lowers (CONCATENATION + DEPTH_TO_SPACE)")

    def quant_level(self, c: CheckContext) -> int:
        return 27 if integer_upscale(c) is not None else 29

    def flags_matter(self, c: CheckContext) -> bool:
        return integer_upscale(c) is None

    def lower(self, c: LowerContext) -> None:
        f = integer_upscale(c) if c.api_level < 29 else None
        if f is None:
            super().lower(c)
            return
        x_t = c.input(0)
        x = c.input_operand(0)
        n, h, w, ch = x_t.shape
        stacked = c.temp_like(x, (n, h, w, ch * f * f))
        c.emit(OperationType.CONCATENATION, [x] * (f * f) + [c.i32(3)], [stacked])
        c.emit(OperationType.DEPTH_TO_SPACE, [stacked, c.i32(f)], [c.output_operand(0)])
