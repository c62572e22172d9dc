"""RESIZE_BILINEAR with half_pixel_centers below API 30, for integer upscales by 2, 4, 8 or 16.

NNAPI's RESIZE_BILINEAR takes half_pixel_centers from API 30 only, and TFLite's delegate leaves such ops on
the CPU below it. MediaPipe's detectors and segmenters upsample their feature pyramids exactly this way
(TF2's `tf.image.resize`, 2x), so at API 28-29 each of them split the model into three partitions.

The identity. Upscaling by f on both axes with half-pixel centers, output row y = i*f + d (0 <= d < f)
samples the input at i + p_d with p_d = (d + 0.5)/f - 0.5 in (-1/2, 1/2): it interpolates rows i + lo and
i + lo + 1 (lo = floor(p_d), -1 or 0) with weights 1 - t and t (t = p_d - lo), the rows clamped into the
image. So every output phase (dy, dx) is a 3x3 depthwise convolution of the input padded by one replicated
row/column on each side, whose taps are the outer product of the two axes' weights. With f a power of two,
p_d and t are exact binary fractions, so these taps equal the weights TFLite's kernel computes in float32
(`(y + 0.5) * (1/f) - 0.5` and its floor) for every row: the two differ only in the order of the four
products' float32 sum (documented float tolerance). At the borders TFLite clamps the two rows to the same
row, and the replicated row gives that row the whole weight too.

NNAPI (API 28): STRIDED_SLICE + CONCATENATION twice (the replicated border), one DEPTHWISE_CONV_2D with
depth multiplier f*f (output channel c*f*f + phase), RESHAPE [N*H*W, C, f*f] + TRANSPOSE to phase-major +
RESHAPE, and DEPTH_TO_SPACE with block f, which puts channel phase*C + c of pixel (h, w) at
(h*f + phase // f, w*f + phase % f). Float32 only: the quantized kernels' rounding differs.
"""

from __future__ import annotations

import numpy as np

from nnconv.lowering.context import CheckContext, LowerContext
from nnconv.lowering.rules.slicing import emit_box_slice
from nnconv.nnapi.enums import OperandType, OperationType
from nnconv.tflite.schema_enums import TensorType

PHASE_OPS = (OperationType.STRIDED_SLICE, OperationType.CONCATENATION, OperationType.DEPTHWISE_CONV_2D,
             OperationType.RESHAPE, OperationType.TRANSPOSE, OperationType.DEPTH_TO_SPACE)
PHASE_MIN_API = 28  # STRIDED_SLICE and TRANSPOSE
_FACTORS = (2, 4, 8, 16)


def half_pixel_upscale(c: CheckContext) -> int | None:
    """f when the op is a float32 RESIZE_BILINEAR with half_pixel_centers (not align_corners) whose
    constant size is f times the static input on both axes, f in 2, 4, 8, 16; else None."""
    x, size, o = c.input(0), c.input(1), c.options
    if o is None or not o.half_pixel_centers or o.align_corners:
        return None
    if x is None or size is None or x.type != TensorType.FLOAT32 or x.rank != 4 or not c.is_const(size):
        return None
    if any(d < 1 for d in x.shape) or (x.shape_signature is not None and any(d < 0 for d in x.shape_signature)):
        return None
    value = np.asarray(c.const_value(size)).reshape(-1)
    if value.size != 2:
        return None
    h, w = int(value[0]), int(value[1])
    in_h, in_w = x.shape[1], x.shape[2]
    if h % in_h or w % in_w or h // in_h != w // in_w or h // in_h not in _FACTORS:
        return None
    return h // in_h


def _axis_taps(f: int) -> np.ndarray:
    """[f, 3]: per phase d, the weights of input offsets -1, 0, +1 (the module docstring)."""
    taps = np.zeros((f, 3), dtype=np.float64)
    for d in range(f):
        p = (d + 0.5) / f - 0.5
        lo = int(np.floor(p))
        t = p - lo
        taps[d, lo + 1] += 1.0 - t
        taps[d, lo + 2] += t
    return taps


def phase_filter(f: int, channels: int) -> np.ndarray:
    """The depthwise filter [1, 3, 3, C*f*f]: channel c*f*f + (dy*f + dx) holds phase (dy, dx)'s taps."""
    ty = _axis_taps(f)
    per_phase = np.einsum("ak,bl->abkl", ty, ty).reshape(f * f, 3, 3)  # exact: products of binary fractions
    filt = np.broadcast_to(per_phase.transpose(1, 2, 0)[:, :, None, :], (3, 3, channels, f * f))
    return np.ascontiguousarray(filt.reshape(1, 3, 3, channels * f * f), dtype=np.float32)


def lower_half_pixel_upscale(c: LowerContext, f: int) -> None:
    """Emits the NNAPI operations of the module docstring for the op's input 0 -> output 0."""
    n, h, w, ch = c.input(0).shape
    x = c.input_operand(0)
    padded, shape = x, [n, h, w, ch]
    for axis in (1, 2):  # one replicated row, then one replicated column, on each side
        extent = shape[axis]
        edges = []
        for start in (0, extent - 1):
            begin, size = [0, 0, 0, 0], list(shape)
            begin[axis], size[axis] = start, 1
            edge = c.temp_like(x, size)
            emit_box_slice(c, padded, begin, size, edge)
            edges.append(edge)
        shape[axis] = extent + 2
        grown = c.temp_like(x, list(shape))
        c.emit(OperationType.CONCATENATION, [edges[0], padded, edges[1], c.i32(axis)], [grown])
        padded = grown
    phases = f * f
    filt = c.constant(OperandType.TENSOR_FLOAT32, phase_filter(f, ch), name=f"op{c.op.index}_half_pixel_taps")
    bias = c.constant(OperandType.TENSOR_FLOAT32, np.zeros(ch * phases, np.float32))
    by_channel = c.temp_like(x, [n, h, w, ch * phases])
    # explicit padding 0 on every side, strides 1, depth multiplier f*f, no activation
    c.emit(OperationType.DEPTHWISE_CONV_2D, [padded, filt, bias, c.i32(0), c.i32(0), c.i32(0), c.i32(0),
                                             c.i32(1), c.i32(1), c.i32(phases), c.i32(0)], [by_channel])
    rows = c.temp_like(x, [n * h * w, ch, phases])
    c.emit(OperationType.RESHAPE, [by_channel, c.i32_vector([n * h * w, ch, phases])], [rows])
    phase_major = c.temp_like(x, [n * h * w, phases, ch])
    c.emit(OperationType.TRANSPOSE, [rows, c.i32_vector([0, 2, 1])], [phase_major])
    stacked = c.temp_like(x, [n, h, w, phases * ch])
    c.emit(OperationType.RESHAPE, [phase_major, c.i32_vector([n, h, w, phases * ch])], [stacked])
    c.emit(OperationType.DEPTH_TO_SPACE, [stacked, c.i32(f)], [c.output_operand(0)])
    c.explain(f"half-pixel {f}x upscale as a 3x3 depthwise per output phase + DEPTH_TO_SPACE, within float tolerance")
