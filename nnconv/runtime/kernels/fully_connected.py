"""FULLY_CONNECTED (NNAPI OperationType 9).

Slots: 0 input [..., input_size] (rank >= 2, flattened to [batch, input_size] with
input_size = weights.dim[1]), 1 weights [num_units, input_size], 2 bias [num_units] (may be omitted from
API 30 for float), 3 fused activation. Output [batch, num_units].
Types: float32, float16 (computed in float32), quant8 asymm / asymm signed with an int32 bias: the int32
accumulator of (q - zp) products plus the bias, requantized by the reference convolution multiplier.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from nnconv.nnapi.enums import OperationType
from nnconv.nnapi.quantization import Requantizer, is_quant8, max_abs_offset, requantize_accumulator
from nnconv.runtime.kernels._float_activation import apply_float_activation
from nnconv.runtime.kernels._matmul import exact_matmul_dtype, float32_chunks
from nnconv.runtime.kernels.registry import KernelCall, kernel


@kernel(OperationType.FULLY_CONNECTED)
def fully_connected(call: KernelCall) -> list[np.ndarray]:
    x, w = call.tensor(0), call.tensor(1)
    b = call.inputs[2] if call.num_inputs > 2 else None
    act = int(call.scalar(3))
    if w.ndim != 2:
        raise call.fail(f"weights must be 2-D, got {w.ndim}-D")
    if x.ndim < 2:
        raise call.fail(f"input must have rank >= 2, got {x.ndim}")
    units, input_size = w.shape
    if x.size % input_size:
        raise call.fail(f"input of {x.size} elements is not a multiple of input_size {input_size}")
    if b is not None and b.shape != (units,):
        raise call.fail(f"bias shape {list(b.shape)} differs from [{units}]")
    x2 = x.reshape(-1, input_size)
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    if is_quant8(in_od.type):
        if w_od.type is not in_od.type:
            # FullyConnected.cpp takes no per-channel weights (their operand scale is 0: the requantization
            # would silently give the zero point everywhere); the validator refuses them first
            raise call.fail(f"weights are {w_od.type.name}, input 0 is {in_od.type.name}: FULLY_CONNECTED takes "
                            "weights of the input's type")
        qw: QuantWeights = call.memo(("fc", act), (1, 2), lambda: _quant_weights(call, w, b, act))
        if qw.chunks is not None:
            # float32 runs of the reduction, each exact, summed exactly in float64
            xc = np.subtract(x2, np.float32(in_od.zero_point), dtype=np.float32)
            acc = np.zeros((x2.shape[0], units), dtype=np.float64)
            for (k0, k1), part in zip(qw.chunks, qw.chunk_matrices):
                acc += xc[:, k0:k1] @ part
        else:
            acc = np.subtract(x2, qw.dtype(in_od.zero_point), dtype=qw.dtype) @ qw.matrix
        if qw.requantizer is not None:
            return [qw.requantizer(acc)]
        acc = np.rint(acc).astype(np.int64)
        if b is not None:
            acc = acc + b.astype(np.int64)
        return [requantize_accumulator(acc, qw.multipliers, qw.shifts, out_od, act, qw.single_rounding)]
    # the weights as float32 (a view when they already are), kept per operation; the matmul reads .T
    wf = call.memo("fc_float", (1,), lambda: np.asarray(w, dtype=np.float32))
    acc = x2.astype(np.float32) @ wf.T
    if b is not None:
        acc += b.astype(np.float32)
    return [apply_float_activation(acc, act).astype(out_od.dtype, copy=False)]


@dataclass
class QuantWeights:
    """Constant-derived data of a quantized FULLY_CONNECTED, built once per operation (`KernelCall.memo`)."""

    matrix: np.ndarray | None  # (w - zp_w).T, [input_size, units], in `dtype` (None when chunked)
    dtype: type  # float32 or float64: exact for this weight matrix (`exact_matmul_dtype`)
    requantizer: Requantizer | None
    multipliers: np.ndarray
    shifts: np.ndarray
    # float64 weights only: runs of input_size whose float32 products are exact (`float32_chunks`) and the
    # weights of each run as float32 [k1 - k0, units]; the product reads half the bytes (a 1280x1000
    # classifier: 0.6 -> 0.3 ms)
    chunks: list[tuple[int, int]] | None = None
    chunk_matrices: list[np.ndarray] | None = None
    single_rounding: bool = False  # as the call's requantization says (`KernelCall.conv_requantization`)


def _quant_weights(call: KernelCall, w: np.ndarray, b: np.ndarray | None, act: int) -> QuantWeights:
    """|acc_u| <= sum_i |w_ui - zp_w| * max|x - zp_x| bounds each unit's accumulator."""
    in_od, w_od, out_od = call.in_operands[0], call.in_operands[1], call.out_operands[0]
    ws = w.astype(np.int64) - w_od.zero_point
    bound = np.abs(ws).sum(axis=1) * max_abs_offset(in_od.type, in_od.zero_point)
    dtype = exact_matmul_dtype(int(bound.max(initial=0)))
    m, sh, single = call.conv_requantization(in_od.scale, np.asarray([w_od.scale]), out_od.scale)
    chunks = None
    if dtype is np.float64:
        chunks = float32_chunks(np.abs(ws).max(axis=0, initial=0) * max_abs_offset(in_od.type, in_od.zero_point))
    mats = None if chunks is None else [np.ascontiguousarray(ws[:, k0:k1].T, dtype=np.float32) for k0, k1 in chunks]
    return QuantWeights(None if chunks is not None else np.ascontiguousarray(ws.T, dtype=dtype), dtype,
                        Requantizer.build(m, sh, b, out_od, act, bound, single), m, sh, chunks, mats, single)
