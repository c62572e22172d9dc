"""The quantized convolutions' constant-derived data (CONV_2D, GROUPED_CONV_2D, and the per-channel scales
DEPTHWISE_CONV_2D and TRANSPOSE_CONV_2D read): the filter as an exact matmul operand, the fused bias and
requantization, and the epilogue `conv_nhwc` runs on a block of accumulators."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from nnconv.nnapi.enums import OperandType
from nnconv.nnapi.quantization import Requantizer, max_abs_offset, qrange
from nnconv.runtime.kernels._matmul import exact_matmul_dtype, float32_chunks
from nnconv.runtime.kernels.registry import KernelCall

# A float KxK convolution of at most this many input channels gathers its im2col block tap-major.
TAP_MAJOR_MAX_CHANNELS = 4


def filter_scales(call: KernelCall, slot: int) -> np.ndarray:
    od = call.in_operands[slot]
    if od.type is OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL:
        return np.asarray(od.channel_quant.scales, dtype=np.float32)
    return np.asarray([od.scale], dtype=np.float32)


@dataclass
class QuantFilter:
    """Constant-derived data of a quantized convolution, built once per operation (`KernelCall.memo`)."""

    mats: list[np.ndarray]  # per group: (filter - zp) as a [KH*KW*C/G, O/G] matrix in `dtype` (none with
    # `scaled` or `chunks`, which replace it)
    dtype: type  # float32 or float64: the BLAS dtype proven exact for this filter (`exact_matmul_dtype`)
    requantizer: Requantizer | None  # the fused bias + requantization, None when its bound check fails
    multipliers: np.ndarray
    shifts: np.ndarray
    # True: the matmul reads the raw input q_x and the bias absorbs -zp_x * sum_k(w_k - zp_w); padding is
    # then zp_x (it must contribute 0 after that correction). False: it reads (q_x - zp_x), padding 0.
    folded: bool
    bias: np.ndarray | None  # the int64 bias the accumulators take (the corrected one when folded)
    # [mats[0] * alpha; kappa] in float64 (see FloatRequantizer.scaled_filter): the GEMM of [cols, 1] by it
    # gives the requantization's multiply-add exactly, so only its clamp and cast remain. For narrow inputs
    # (K + 1 <= O / SCALED_FILTER_RATIO), where the requantization's passes cost more than the float64 GEMM.
    scaled: np.ndarray | None = None
    # Where float64 would be needed (sums reaching 2^24), runs [k0, k1) of the reduction whose float32
    # products are each exact (`float32_chunks`), with mats[0]'s rows of each run as float32: the im2col
    # rows are float32 and each run's float32 GEMM is summed exactly in float64.
    chunks: list[tuple[int, int]] | None = None
    chunk_mats: list[np.ndarray] | None = None
    single_rounding: bool = False  # as the call's requantization says (`KernelCall.conv_requantization`)


def quant_filter(call: KernelCall, w: np.ndarray, b: np.ndarray | None, activation: int,
                 groups: int, pixels: int = 0) -> QuantFilter:
    """(q_w - zp_w) per group as a matmul operand, the exactness bound and the per-channel requantization.

    sum_k (x_k - zp_x) w'_k = sum_k x_k w'_k - zp_x sum_k w'_k: folding the input's zero point into the
    bias saves a pass over the input, and is exact when the raw products stay within the BLAS dtype's exact
    range as well. |acc_c| <= sum_k |w'_ck| * max|x| bounds every accumulator (padding contributes 0).
    `pixels`: output pixels per sample, which decide where the scaled filter pays (SCALED_FILTER_MIN_PIXELS)."""
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    o = w.shape[0]
    w_zp = w_od.zero_point if w_od.type is not OperandType.TENSOR_QUANT8_SYMM_PER_CHANNEL else 0
    ws = w.reshape(o, -1).astype(np.int64) - w_zp
    abs_sum = np.abs(ws).sum(axis=1)
    m, sh, single = call.conv_requantization(in_od.scale, filter_scales(call, 1), out_od.scale)
    b64 = None if b is None else b.astype(np.int64)
    lo, hi = qrange(in_od.type)
    centered_bound = abs_sum * max_abs_offset(in_od.type, in_od.zero_point)
    raw_bound = abs_sum * max(abs(lo), abs(hi))
    folded_bias = (0 if b64 is None else b64) - in_od.zero_point * ws.sum(axis=1)
    og = o // groups
    folded_rq = Requantizer.build(m, sh, folded_bias, out_od, activation, raw_bound, single)
    centered_dtype = exact_matmul_dtype(int(centered_bound.max(initial=0)))
    raw_dtype = exact_matmul_dtype(int(raw_bound.max(initial=0)))
    # fold unless it would cost a wider matmul or the fused requantization; folding can also narrow it: an
    # input zero point at the range's end (-128 after a RELU) centers to 0..255, where the raw values stay
    # within +-128 (DenseNet-121 int8's 3x3x128 convolutions: float32 raw, float64 centered)
    folded = folded_rq is not None and (raw_dtype is centered_dtype or raw_dtype is np.float32)
    dtype = raw_dtype if folded else centered_dtype
    if folded:
        rq, bias = folded_rq, folded_bias
    else:
        rq, bias = Requantizer.build(m, sh, b64, out_od, activation, centered_bound, single), b64
    chunks = chunk_mats = None
    if dtype is np.float64 and groups == 1:
        x_bound = max(abs(lo), abs(hi)) if folded else max_abs_offset(in_od.type, in_od.zero_point)
        chunks = float32_chunks(np.abs(ws).max(axis=0, initial=0) * x_bound)
        if chunks is not None:
            chunk_mats = [np.ascontiguousarray(ws[:, k0:k1].T, dtype=np.float32) for k0, k1 in chunks]
    scaled = None
    k1 = ws.shape[1] + 1
    _o, kh, kw, c = w.shape
    # the scaled filter also for a KxK filter over few channels (an RGB stem, tap-major im2col): its
    # requantization passes over O outputs per pixel cost more than the float64 GEMM's K + 1 <= 28 terms
    # (MobileNetV2 int8's 224x224x3 -> 32 stem with the tap-major rows 1.64 -> 1.39 ms)
    few_inputs = kh * kw > 1 and c <= TAP_MAJOR_MAX_CHANNELS
    any_map = k1 <= SCALED_ANY_MAP_MAX_K1 and k1 * SCALED_ANY_MAP_RATIO <= o
    large_map = k1 <= SCALED_FILTER_MAX_K1 and k1 * SCALED_FILTER_RATIO <= o and pixels >= SCALED_FILTER_MIN_PIXELS
    stem = few_inputs and k1 <= SCALED_ANY_MAP_MAX_K1
    if groups == 1 and rq is not None and rq.fast is not None and (any_map or large_map or stem):
        scaled = rq.fast.scaled_filter(ws.T, raw_bound if folded else centered_bound, rq.shift)
    # the whole filter matrix only where the GEMM reads it: the scaled filter and the float32 chunks replace
    # it (kept, it doubled what a chunked int8 model keeps: ResNet50 int8 212 -> 100 MB)
    mats = [] if scaled is not None or chunks is not None else \
        [np.ascontiguousarray(ws[g * og:(g + 1) * og].T, dtype=dtype) for g in range(groups)]
    return QuantFilter(mats, dtype, rq, m, sh, folded, bias, scaled,
                       None if scaled is not None else chunks, None if scaled is not None else chunk_mats, single)


# A quantized convolution with K + 1 <= SCALED_FILTER_MAX_K1 and <= O / SCALED_FILTER_RATIO takes the float64
# scaled-filter GEMM (in situ MobileNetV2: 112x112x16 -> 96 3.15 -> 2.50 ms, 56x56x24 -> 144 1.29 -> 1.11
# ms). Round 9, on the AVX-512 Xeon of issue 28 (the kernel alone at 224-input layer shapes, A/B paired in one
# process): the 1x1 expansions with K + 1 up to 97 and O >= 2(K + 1) gain too (28x28x32 -> 192 0.73x,
# 14x14x64 -> 384 0.87x, 14x14x96 -> 576 0.90x, 56x56x24 -> 72 0.72x, 28x28x40 -> 120 0.93x), K + 1 = 113 is
# even and 193 loses 19% (the float64 GEMM's extra cost grows with K), projections (O < K) gain nothing.
# Round 3 measured the 32..320 -> 6x expansions 7% slower on an AMD EPYC (Zen, 512 KiB L2): re-measure on
# another CPU before trusting these limits there.
# On maps of a few pixels the GEMM reads mostly the filter, which float64 doubles: 4x4x64 -> 384 lost 14%,
# 8x8x32 -> 192 gained 18%, so these wider limits hold from SCALED_FILTER_MIN_PIXELS output pixels per
# sample on (per sample: the choice is the operation's, whatever the batch; both choices are exact).
SCALED_FILTER_MAX_K1 = 100
SCALED_FILTER_RATIO = 2
SCALED_FILTER_MIN_PIXELS = 64
# Round 3's limits, at any map size; an RGB stem (a KxK filter over few channels, 3x3x3: K + 1 = 28; measured
# round 4) takes the scaled filter up to the same K + 1.
SCALED_ANY_MAP_MAX_K1 = 32
SCALED_ANY_MAP_RATIO = 4


def quant_epilogue(qf: QuantFilter, rows: int | None = None) -> Callable[[np.ndarray, np.ndarray], object]:
    """conv_nhwc's requantization of a block: the scaled filter's clamp, or the fused requantizer; bound to
    blocks of exactly `rows` rows where that is given and the float requantizer takes it (a small map)."""
    fast = qf.requantizer.fast if qf.requantizer is not None else None
    bound = fast.bind(rows, scaled=qf.scaled is not None) if fast is not None and rows is not None else None
    if bound is not None:
        return bound
    if qf.scaled is not None:
        return lambda acc, dest: qf.requantizer.fast(acc, dest, scaled=True)
    return lambda acc, dest: qf.requantizer(acc, out=dest)
