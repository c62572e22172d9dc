"""How far TFLite's int8 REDUCE_PROD can stray from the exact product: the bound that decides whether the
float form (DEQUANTIZE -> REDUCE_PROD -> QUANTIZE) stays within 1 LSB of it (no rules here).

TFLite's kernel (reference_ops::QuantizedReduceProd, its optimized twin alike) scales each multiplication
by k = s_in / s_out^(1/n) (`GetQuantProdScaling`, n values reduced per output) to keep the product in
int32: p_1 = a_1, p_i = MBQM(p_{i-1} * a_i, k) for i = 2..n, output = MBQM(p_n, k) + zp_out, where
a_i = q_i - zp_in and MBQM is its int64 MultiplyByQuantizedMultiplier, which rounds the product to an
integer and uses k to 16 significant bits. The exact result is prod(a_i) * k^n.

With |a_i| <= F = max(127 - zp_in, zp_in + 128), each p_i is off the exact partial product by
e_i = e_{i-1} * a_i * k + d_i, |d_i| <= 1/2, so the output, before its own rounding, is off by at most
    B = k / 2 * sum_{j=0}^{n-2} (F k)^j
output steps; the 16-bit multiplier adds a relative n * 2^-15 on the outputs that are not clamped on both
sides (at most ~129 steps from zero), the float form's own rounding a relative 2(n + 1) * 2^-24. Two reals
less than 1 apart round to integers at most 1 apart, so below a total of 1 the float form is within 1 LSB
of TFLite. The partial products must also stay inside int32 (TFLite's cast to int32 would wrap them).
"""

from __future__ import annotations

INT32_LIMIT = float(1 << 30)  # margin below 2^31 for the bound on the partial products


def int8_prod_deviation(zero_point: int, s_in: float, s_out: float, n: int) -> tuple[float, str]:
    """(the bound on |float form - TFLite| in output steps, '' or why TFLite's partial products may wrap)."""
    k = s_in / s_out ** (1.0 / n)
    f = float(max(127 - zero_point, zero_point + 128))
    rounding, term, partial = 0.0, 1.0, f
    for i in range(2, n + 1):
        rounding += term
        term *= f * k
        partial *= f * k
        if partial > INT32_LIMIT or term > INT32_LIMIT:
            return float("inf"), (f"its running product of {i} values can reach {partial:.3g}, beyond int32, "
                                  "where TFLite's kernel wraps it")
    bound = k / 2 * rounding
    relative = n * 2.0 ** -15 + 2 * (n + 1) * 2.0 ** -24
    return bound + (129 + bound) * relative, ""
