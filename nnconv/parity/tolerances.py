"""The tolerance policy of `nnconv verify` and of the parity tests, in one table.

| output dtype | passes when | why |
| --- | --- | --- |
| float32 / float16 | max |diff| <= atol + rtol * max |expected| over the output (rtol 1e-4 of the output's magnitude, atol 1e-5; `expected`: TFLite's value, or the `--reference` one) | BLAS summation order and libm differ between TFLite's kernels and numpy; out of it, an output no further from TFLite than TFLite's builtin and reference kernels are from each other passes (parity/kernel_spread.py: deep models amplify rounding) |
| float32 of a dynamic-range (hybrid) model | compared with TFLite on its float twin (hybrid weights dequantized, `parity/twin.py`): the float tolerance above; only without a twin (sparse weights), rtol 1e-2 of the output's magnitude against TFLite's hybrid kernels | TFLite's hybrid kernels quantize each activation to int8 on the fly; NNAPI (and nnconv) dequantize the weights and compute in float, so the two differ by the activation rounding, which grows with depth (measured: 3e-4 on the MobileNetV2 fixture, 3e-2 to 7e-2 on deeper random-weight MobileNets); `verify` reports that gap in each output's detail |
| uint8 / int8 / int16 | max |diff| <= 1 LSB against TFLite's builtin kernels, or else against TFLite's reference kernels (the report says which) | the NNAPI reference CPU follows TFLite's reference integer arithmetic; TFLite's optimized int8 kernels round ~0.05% of values one step differently, which a deep network can grow to several LSB; a difference that disappears with TFLite's requantization arithmetic (multipliers from the double input x filter scale instead of NNAPI's float32 one; FULLY_CONNECTED rounded once instead of twice; quantized RESIZE_BILINEAR in Q10 integers; a requantizing QUANTIZE with one multiplier; int8 AVERAGE_POOL_2D rounded in int8 below API 30; int8 SQUARED_DIFFERENCE in TFLite's fixed point instead of nnconv's float form) is NNAPI's own arithmetic and passes, explained |
| float32 dequantized from a uint8 / int8 / int16 tensor (a DEQUANTIZE of an activation, `parity/dequantized.py`) | max |diff| <= 1 LSB of that tensor (its scale) + the float tolerance | its values are steps of that scale: a 1 LSB difference of the quantized tensor, within its tolerance, is one scale here |
| int32 / int64 / bool | exact | integer results of index ops, comparisons, casts |

Relative to the magnitude, max |expected|, not to the span max - min of the values: float rounding scales
with the magnitude of what is computed (each float32 step is 2^-24 of it, float16's 2^-11), so an output
with an offset (values in [-11.09, -11.08], a logit bias) rounds like any value near 11. A tolerance on the
span would be smaller than one rounding step of such values and fail engines that compute them as well as
float allows; whether the span is too small for the comparison to mean much is what `uninformative` says
(metrics.is_uninformative).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

FLOAT_RTOL = 1e-4
FLOAT_ATOL = 1e-5
HYBRID_RTOL = 1e-2
QUANT_LSB = 1


@dataclass(frozen=True)
class Tolerance:
    kind: str  # "float", "quant" or "exact"
    rtol: float = 0.0
    atol: float = 0.0
    lsb: int = 0
    # float tensors dequantized from a quantized one (parity/dequantized.py): `lsb` steps of this scale more
    lsb_scale: float = 0.0
    lsb_of: str = ""  # the quantized tensor's dtype, for the description

    def describe(self) -> str:
        if self.kind == "float" and self.lsb_scale:
            return (f"|diff| <= {self.lsb} LSB of {self.lsb_of} ({self.lsb * self.lsb_scale:.3g}) + {self.atol:g} + "
                    f"{self.rtol:g} * max |expected|")
        if self.kind == "float":
            return f"|diff| <= {self.atol:g} + {self.rtol:g} * max |expected|"
        if self.kind == "quant":
            return f"<= {self.lsb} LSB"
        return "exact"


@dataclass(frozen=True)
class ToleranceOverrides:
    """The user's `--atol / --rtol / --max-lsb`: each replaces the policy's value where given (None keeps
    it). atol/rtol apply to float tensors, max_lsb to quantized ones; integer and boolean stay exact."""

    atol: float | None = None
    rtol: float | None = None
    max_lsb: int | None = None

    def apply(self, tol: Tolerance) -> Tolerance:
        if tol.kind == "float":
            return replace(tol, atol=tol.atol if self.atol is None else self.atol,
                           rtol=tol.rtol if self.rtol is None else self.rtol,
                           lsb=tol.lsb if self.max_lsb is None or not tol.lsb_scale else self.max_lsb)
        if tol.kind == "quant" and self.max_lsb is not None:
            return replace(tol, lsb=self.max_lsb)
        return tol

    def to_json(self) -> dict:
        return {"atol": self.atol, "rtol": self.rtol, "max_lsb": self.max_lsb}


def tolerance_for(dtype: np.dtype, hybrid: bool = False, overrides: ToleranceOverrides | None = None,
                  lsb_scale: float = 0.0, lsb_of: str = "") -> Tolerance:
    """The tolerance of one output; `hybrid` for float outputs of models with dynamic-range ops; `lsb_scale`
    for a float output dequantized from a `lsb_of` tensor of that scale (parity/dequantized.py): the
    quantized tolerance in steps of it, plus the float one."""
    tol = _policy(np.dtype(dtype), hybrid)
    if tol.kind == "float" and lsb_scale > 0:
        tol = replace(tol, lsb=QUANT_LSB, lsb_scale=lsb_scale, lsb_of=lsb_of)
    return overrides.apply(tol) if overrides is not None else tol


def _policy(dtype: np.dtype, hybrid: bool) -> Tolerance:
    if dtype.kind == "f":
        if hybrid:
            return Tolerance("float", rtol=HYBRID_RTOL, atol=FLOAT_ATOL)
        return Tolerance("float", rtol=FLOAT_RTOL, atol=FLOAT_ATOL)
    if dtype in (np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16)):
        return Tolerance("quant", lsb=QUANT_LSB)
    return Tolerance("exact")
