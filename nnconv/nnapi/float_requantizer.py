"""The fused requantization of `Requantizer` in float64, for the layers where float64 provably gives the
reference's integers: four cheap passes over an output block instead of the int64 pipeline's five or more.

With x = acc + b, M' = M << left and D = 2^(31+e) (e the right shift), the reference's
RDBPOT(SRDHM(x << left, M), e) + zp is floor(y) with the real

    y = (x*M' + C + 1/2) / D + zp,   C = 2^30 + 2^(30+e)*[e > 0],

minus 2^-e where SRDHM's result is negative (e > 0; RDBPOT rounds ties away from zero, downward there),
as derived in `Requantizer`. The extra 1/2 in the numerator keeps floor(y) unchanged (the numerator is an
integer) and moves y off the integers by at least 1/(2D) on both sides, so any float evaluation of y that
is off by less than 1/(2D) has the same floor. At run time

    y = fl(fl(acc * alpha) + kappa)    (alpha = M'/D exactly, kappa = y's constant part rounded once)

costs three roundings of at most half an ulp each; `FloatRequantizer.build` bounds them per channel over
the only region where an error could change an output (|y| <= 2^9 once shifted so that the output dtype's
minimum is 0: every clamp bound lies inside, and farther out an error below 1/4 cannot reach a clamp
bound) and declines when the bound is not below 1/(2D). With e <= 10 (multipliers >= 2^-11) it holds.

The negative-SRDHM side is exactly y < zp + 1/2 (with the 1/(2D) margin on both sides, so the float y
decides it exactly), where 2^-e is subtracted (one more rounding, in the budget).

Per-channel constants are tiled along a wide row of about `WIDE_ROW_ELEMENTS` so each ufunc runs one long
inner loop instead of one short loop per pixel (numpy's per-row overhead made the per-channel passes
cost 2x on 16..96 channels).
"""

from __future__ import annotations

import math
import threading
from typing import Callable

import numpy as np


# Elements per wide row (per-channel constants tiled to this width) and per block of float64 work.
WIDE_ROW_ELEMENTS = 2048
BLOCK_ELEMENTS = 1 << 16
# At most this many outputs take a bound requantization (`FloatRequantizer.bind`), whose scratch is a
# thread's own pair of buffers of this size (64 KiB in all).
BOUND_ELEMENTS = 1 << 12
# |y| bound of the region where rounding errors matter: y lies in [-1, 256] there (see module docstring).
_REGION = float(1 << 9)
# The float64 work buffers, shared by every requantizer of a thread: one per requantizer kept ~0.5-1 MiB
# each alive between runs (31 MB over MobileNetV2 int8's 62 requantizers). Per thread, because numpy
# releases the GIL inside the passes and executors may run in several threads.
_WORK = threading.local()


def _half_ulp(z: float) -> float:
    """An upper bound of half an ulp of every float64 of magnitude <= z."""
    if z <= 0.0:
        return 0.0
    return math.ldexp(1.0, math.frexp(z)[1] - 54)


class FloatRequantizer:
    """`Requantizer`'s arithmetic in float64 (see the module docstring), output into 8-bit storage."""

    def __init__(self, alpha: np.ndarray, kappa: np.ndarray, eps: np.ndarray | None, lo: float, hi: float,
                 zp_half: float, flip: bool) -> None:
        self.alpha, self.kappa, self.eps = alpha, kappa, eps
        self.lo, self.hi, self.zp_half, self.flip = lo, hi, zp_half, flip
        channels = alpha.shape[0]
        self.wide_rows = max(1, WIDE_ROW_ELEMENTS // channels)
        self.block_rows = max(1, BLOCK_ELEMENTS // (channels * self.wide_rows)) * self.wide_rows
        self._views: dict[int, tuple[int, list]] = {}
        self.wide = [np.tile(c, self.wide_rows) if c is not None else None for c in (alpha, kappa, eps)]

    @classmethod
    def build(cls, mults: list[int], rights: list[int], biases: list[int], bounds: list[int], zp: int,
              lo: int, hi: int, dtype: np.dtype, correct: bool,
              reference: Callable[[np.ndarray], np.ndarray] | None = None,
              single_rounding: bool = False) -> "FloatRequantizer | None":
        """Per channel: M' (the multiplier after the left shift), the right shift e, the bias, the bound of
        |acc|. `correct`: the negative-SRDHM correction can change an output. None unless the output is
        8-bit and the error bound holds on every channel, or else `reference` (accumulators [rows,
        channels] int64 -> output storage) is given and `verify` proves the float path equal to it."""
        dtype = np.dtype(dtype)
        if dtype not in (np.dtype(np.int8), np.dtype(np.uint8)):
            return None
        dmin = int(np.iinfo(dtype).min)
        alpha, kappa, eps = [], [], []
        proven = True  # by the error bound; else `verify` must prove it
        for mp, right, b, bound in zip(mults, rights, biases, bounds):
            d = 1 << (31 + right)
            # TFLite's single rounding (its FULLY_CONNECTED): C = 2^(30+e) and never a correction
            c = (1 << (30 + right)) if single_rounding else (1 << 30) + ((1 << (30 + right)) if right else 0)
            # kappa = (b*M' + C + 1/2)/D + zp - dmin, rounded once (Python's int division is correctly rounded)
            k = (2 * (b * mp + c) + 1 + 2 * (zp - dmin) * d) / (2 * d)
            a = math.ldexp(mp, -(31 + right))  # exact: M' has at most 31 significant bits
            fix = right > 0 and correct and not single_rounding
            err = (_half_ulp(_REGION + abs(k)) + _half_ulp(_REGION) + _half_ulp(abs(k))
                   + (_half_ulp(_REGION) if fix else 0.0))
            far = bound * a + abs(k) + _REGION
            if err >= math.ldexp(1.0, -(32 + right)) or 4 * _half_ulp(far) >= 0.25:
                if reference is None:
                    return None
                proven = False
            alpha.append(a)
            kappa.append(k)
            eps.append(math.ldexp(1.0, -right) if fix else 0.0)
        any_fix = any(e > 0.0 for e in eps)
        fast = cls(np.asarray(alpha, dtype=np.float64), np.asarray(kappa, dtype=np.float64),
                   np.asarray(eps, dtype=np.float64) if any_fix else None, float(lo - dmin), float(hi - dmin),
                   float(zp - dmin) + 0.5, dmin != 0)
        if proven or fast.verify(reference, np.asarray(bounds, dtype=np.int64), (lo, hi)):
            return fast
        return None

    def __call__(self, acc: np.ndarray, y: np.ndarray, scaled: bool = False) -> None:
        """acc: [rows, channels] integer-valued accumulators (bias excluded, any numeric dtype holding them
        exactly); y: [rows, channels] output storage (int8/uint8), written. `scaled`: acc already holds
        acc * alpha + kappa exactly, in float64 (`scaled_filter`), which this then overwrites."""
        rows, channels = acc.shape
        if acc.size == 0:  # zero-sized tensors (NNAPI allows them): nothing to write
            return
        u = y.view(np.uint8)
        contiguous = acc.flags.c_contiguous and u.flags.c_contiguous
        scratch, mask = self._scratch(min(rows, self.block_rows) * channels)
        if rows <= self.block_rows and contiguous:  # one block (most calls): no loop
            width, consts = self._wide_view(rows)
            self._pass(acc.reshape(-1, width), u.reshape(-1, width), consts, scratch, mask, scaled)
            rows = 0
        for r0 in range(0, rows, self.block_rows):
            r1 = min(rows, r0 + self.block_rows)
            a, v = acc[r0:r1], u[r0:r1]
            if contiguous:
                width, consts = self._wide_view(r1 - r0)
                self._pass(a.reshape(-1, width), v.reshape(-1, width), consts, scratch, mask, scaled)
            else:
                self._pass(a, v, (self.alpha, self.kappa, self.eps), scratch, mask, scaled)
        if self.flip:
            # the work ran in the domain shifted by -dmin = 128: storage int8 = uint8 - 128, the top bit flipped
            np.bitwise_xor(u, np.uint8(0x80), out=u)

    def bind(self, rows: int, scaled: bool = False) -> Callable[[np.ndarray, np.ndarray], None] | None:
        """`self(acc, y, scaled)` for C-contiguous [rows, channels] accumulators and 8-bit output of at most
        BOUND_ELEMENTS values, with the wide view and constants chosen once: the same `_pass` (the same
        bits) without `Requantizer` and `__call__`'s per-call dispatch (measured in one process on a [1, 64]
        output: 15.7 -> 12.1 us with the negative-rounding correction, 11.7 -> 8.2 us without). None for
        larger maps (the blocked `__call__`)."""
        channels = self.alpha.shape[0]
        size = rows * channels
        if size == 0 or size > BOUND_ELEMENTS:
            return None
        width, consts = self._wide_view(rows)
        shape = (size // width, width)
        passes, flip = self._pass, self.flip

        def requantize(acc: np.ndarray, y: np.ndarray) -> None:
            work = getattr(_WORK, "bound", None)
            if work is None:
                work = _WORK.bound = (np.empty(BOUND_ELEMENTS), np.empty(BOUND_ELEMENTS))
            u = y.view(np.uint8).reshape(shape)
            passes(acc.reshape(shape), u, consts, work[0], work[1], scaled)
            if flip:
                np.bitwise_xor(u, np.uint8(0x80), out=u)

        return requantize

    def verify(self, reference, bound: np.ndarray, levels: tuple[int, int]) -> bool:
        """True when this requantizer equals `reference` (accumulators [rows, channels] int64 -> output
        storage) on every accumulator with |acc| <= bound (per channel).

        Both are monotone non-decreasing in acc (every float step rounds monotonically; the correction only
        lowers values below zp + 1/2), so they agree everywhere iff for every output level q their first
        accumulator reaching q is the same. The reference's crossing is located within a window of five
        accumulators around the float estimate (q - kappa)/alpha and both are compared there and at the
        range's ends; a crossing outside its window fails the check."""
        lo, hi = levels
        dmin = -128 if self.flip else 0
        alpha, kappa = self.alpha, self.kappa
        eps = np.zeros_like(alpha) if self.eps is None else self.eps
        q = np.arange(lo + 1, hi + 1, dtype=np.float64)[:, None] - dmin  # levels in the shifted domain
        shift = np.where(q <= self.zp_half, eps, 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):  # a zero multiplier: no crossing anywhere
            centre = np.nan_to_num(np.ceil((q - kappa + shift) / alpha), nan=0.0)
        b = bound.astype(np.float64)
        window = np.clip(centre[:, None, :] + np.arange(-2, 3)[None, :, None], -b, b)  # [levels, 5, ch]
        ends = np.stack([-b, b])  # [2, ch]
        acc = np.concatenate([window.reshape(-1, alpha.size), ends]).astype(np.int64)
        want = reference(acc).astype(np.int64)
        got = np.empty(acc.shape, dtype=np.int8 if self.flip else np.uint8)
        self(acc, got)
        got = got.astype(np.int64)
        levels_q = np.arange(lo + 1, hi + 1)[:, None, None]
        nl = levels_q.shape[0]
        w_want, w_got = want[:-2].reshape(nl, 5, alpha.size), got[:-2].reshape(nl, 5, alpha.size)
        e_want, e_got = want[-2:], got[-2:]
        if not ((w_want >= levels_q) == (w_got >= levels_q)).all():
            return False
        if not ((e_want[None] >= levels_q) == (e_got[None] >= levels_q)).all():
            return False
        crossing = (w_want[:, 0] < levels_q[:, 0]) & (w_want[:, 4] >= levels_q[:, 0])
        below = e_want[0][None] >= levels_q[:, 0]  # reached at -bound already
        above = e_want[1][None] < levels_q[:, 0]  # never reached within the bound
        return bool((crossing | below | above).all())

    def scaled_filter(self, filt: np.ndarray, bound: np.ndarray, shifts: np.ndarray) -> np.ndarray | None:
        """[filt * alpha; kappa] in float64 ([K + 1, channels] from the integer filter matrix `filt` [K,
        channels]), when a float64 GEMM of [cols, 1] by it gives acc * alpha + kappa exactly in any summation
        order; else None. Every product x*w*alpha is a multiple of 1/D (w*M' has at most 39 bits, x*w*M' 47)
        and kappa one of 1/(2D), so every partial sum is exact while bound*alpha + |kappa| < 2^52 / D
        (`shifts`: 31 + e per channel, D = 2^shifts). The floor of the exact value needs no error budget."""
        d = np.ldexp(1.0, np.broadcast_to(np.asarray(shifts, dtype=np.int64), self.alpha.shape))
        reach = (bound.astype(np.float64) * self.alpha + np.abs(self.kappa) + 1.0) * d
        if not (reach < 2.0 ** 51).all():
            return None
        return np.vstack([filt.astype(np.float64) * self.alpha, self.kappa[None]])

    def _wide_view(self, rows: int) -> tuple[int, list]:
        """(width, constants) of the wide rows a block of `rows` rows is viewed as: g rows per wide row,
        g the largest divisor of `rows` up to `wide_rows`, so that the block is one 2-D pass. The tiled
        constants repeat with period `channels`, so their first g*channels elements are the g-row tile."""
        got = self._views.get(rows)
        if got is None and self.alpha.shape[0] == 1:  # one channel: the whole block is one row
            got = self._views[rows] = (rows, [self.alpha, self.kappa, self.eps])
        if got is None:
            g = next(d for d in range(min(self.wide_rows, rows), 0, -1) if rows % d == 0)
            width = g * self.alpha.shape[0]
            got = self._views[rows] = (width, [None if c is None else c[:width] for c in self.wide])
        return got

    def _scratch(self, size: int) -> tuple[np.ndarray, np.ndarray | None]:
        """Float64 work buffers of at least `size` elements (the mask only with the correction), kept
        between calls and shared by the thread's requantizers: a fresh 512 KiB array per call costs page
        faults that showed as up to 2x on a 12544x16 block."""
        work = getattr(_WORK, "buffers", None)
        if work is None or work[0].size < size:
            work = _WORK.buffers = (np.empty(size, dtype=np.float64), np.empty(size, dtype=np.float64))
        return work[0], None if self.eps is None else work[1]

    def _pass(self, acc: np.ndarray, u: np.ndarray, consts: list, scratch: np.ndarray,
              mask: np.ndarray | None, scaled: bool) -> None:
        alpha, kappa, eps = consts
        if scaled:
            t = acc
        else:
            t = scratch[:acc.size].reshape(acc.shape)
            np.multiply(acc, alpha, out=t)
            t += kappa
        if eps is not None:
            # t - eps where t < zp + 1/2: the mask as 0.0/1.0 times eps (6x faster than a `where=` subtract)
            fix = mask[:acc.size].reshape(acc.shape)
            np.less(t, self.zp_half, out=fix)
            fix *= eps
            t -= fix
        # values are >= 0 after the clamp, where the cast's truncation is the floor
        t.clip(self.lo, self.hi, out=t)
        np.copyto(u, t, casting="unsafe")
