"""farmhash `Fingerprint64` (the farmhashna 64-bit hash), vectorized over many keys of one length.

LSH_PROJECTION hashes (seed, input row) byte strings with it. Written from the published algorithm:
keys of 0..16, 17..32 and 33..64 bytes have closed forms; longer keys run the 64-byte block loop. All
arithmetic is on numpy uint64 arrays, which wrap modulo 2^64 exactly as the C++ unsigned arithmetic does.
"""

from __future__ import annotations

import numpy as np

U64 = np.uint64
K0 = U64(0xC3A5C85C97CB3127)
K1 = U64(0xB492B66FBE98F273)
K2 = U64(0x9AE16A3B2F90404F)


def _rot(v: np.ndarray, shift: int) -> np.ndarray:
    if shift == 0:
        return v
    return (v >> U64(shift)) | (v << U64(64 - shift))


def _shift_mix(v: np.ndarray) -> np.ndarray:
    return v ^ (v >> U64(47))


def _len16(u: np.ndarray, v: np.ndarray, mul: np.ndarray) -> np.ndarray:
    a = (u ^ v) * mul
    a = a ^ (a >> U64(47))
    b = (v ^ a) * mul
    b = b ^ (b >> U64(47))
    return b * mul


def _f64(keys: np.ndarray, off: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, off:off + 8]).view("<u8")[:, 0].astype(U64)


def _f32(keys: np.ndarray, off: int) -> np.ndarray:
    return np.ascontiguousarray(keys[:, off:off + 4]).view("<u4")[:, 0].astype(U64)


def _len0to16(s: np.ndarray, n: int) -> np.ndarray:
    rows = s.shape[0]
    if n >= 8:
        mul = K2 + U64(n * 2)
        a = _f64(s, 0) + K2
        b = _f64(s, n - 8)
        c = _rot(b, 37) * mul + a
        d = (_rot(a, 25) + b) * mul
        return _len16(c, d, mul)
    if n >= 4:
        mul = K2 + U64(n * 2)
        a = _f32(s, 0)
        return _len16(U64(n) + (a << U64(3)), _f32(s, n - 4), mul)
    if n > 0:
        a = s[:, 0].astype(U64)
        b = s[:, n >> 1].astype(U64)
        c = s[:, n - 1].astype(U64)
        y = (a + (b << U64(8))) & U64(0xFFFFFFFF)
        z = (U64(n) + (c << U64(2))) & U64(0xFFFFFFFF)
        return _shift_mix(y * K2 ^ z * K0) * K2
    return np.full(rows, K2, dtype=U64)


def _ends(s: np.ndarray, n: int, k: np.uint64) -> tuple[np.uint64, np.ndarray, np.ndarray, np.ndarray]:
    """The mix of the first and the last 16 bytes that HashLen17to32 returns (as z) and HashLen33to64 starts
    from; they differ only in the first word's multiplier `k` (K1, K2). Returns (mul, a, y, z)."""
    mul = K2 + U64(n * 2)
    a = _f64(s, 0) * k
    b = _f64(s, 8)
    c = _f64(s, n - 8) * mul
    d = _f64(s, n - 16) * K2
    y = _rot(a + b, 43) + _rot(c, 30) + d
    return mul, a, y, _len16(y, a + _rot(b + K2, 18) + c, mul)


def _len17to32(s: np.ndarray, n: int) -> np.ndarray:
    return _ends(s, n, K1)[3]


def _len33to64(s: np.ndarray, n: int) -> np.ndarray:
    mul, a, y, z = _ends(s, n, K2)
    e = _f64(s, 16) * mul
    f = _f64(s, 24)
    g = (y + _f64(s, n - 32)) * mul
    h = (z + _f64(s, n - 24)) * mul
    return _len16(_rot(e + f, 43) + _rot(g, 30) + h, e + _rot(f + a, 18) + g, mul)


def _weak32(s: np.ndarray, off: int, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w, x, y, z = _f64(s, off), _f64(s, off + 8), _f64(s, off + 16), _f64(s, off + 24)
    a = a + w
    b = _rot(b + a + z, 21)
    c = a
    a = a + x
    a = a + y
    b = b + _rot(a, 44)
    return a + z, b + c


def _long(s: np.ndarray, n: int) -> np.ndarray:
    rows = s.shape[0]
    seed = U64(81)
    x = np.full(rows, seed, U64)
    y = np.full(rows, seed * K1 + U64(113), U64)
    z = _shift_mix(y * K2 + U64(113)) * K2
    v0 = v1 = w0 = w1 = np.zeros(rows, U64)
    x = x * K2 + _f64(s, 0)
    end = ((n - 1) // 64) * 64
    last64 = end + ((n - 1) & 63) - 63
    off = 0
    while True:
        x = _rot(x + y + v0 + _f64(s, off + 8), 37) * K1
        y = _rot(y + v1 + _f64(s, off + 48), 42) * K1
        x = x ^ w1
        y = y + v0 + _f64(s, off + 40)
        z = _rot(z + w0, 33) * K1
        v0, v1 = _weak32(s, off, v1 * K1, x + w0)
        w0, w1 = _weak32(s, off + 32, z + w1, y + _f64(s, off + 16))
        z, x = x, z
        off += 64
        if off == end:
            break
    mul = K1 + ((z & U64(0xFF)) << U64(1))
    off = last64
    w0 = w0 + U64((n - 1) & 63)
    v0 = v0 + w0
    w0 = w0 + v0
    x = _rot(x + y + v0 + _f64(s, off + 8), 37) * mul
    y = _rot(y + v1 + _f64(s, off + 48), 42) * mul
    x = x ^ (w1 * U64(9))
    y = y + v0 * U64(9) + _f64(s, off + 40)
    z = _rot(z + w0, 33) * mul
    v0, v1 = _weak32(s, off, v1 * mul, x + w0)
    w0, w1 = _weak32(s, off + 32, z + w1, y + _f64(s, off + 16))
    z, x = x, z
    return _len16(_len16(v0, w0, mul) + _shift_mix(y) * K0 + z, _len16(v1, w1, mul) + x, mul)


def fingerprint64(keys: np.ndarray) -> np.ndarray:
    """Fingerprint64 of each row of a [K, L] uint8 array, as uint64 [K]."""
    keys = np.ascontiguousarray(keys, dtype=np.uint8)
    n = keys.shape[1]
    with np.errstate(over="ignore"):
        if n <= 16:
            return _len0to16(keys, n)
        if n <= 32:
            return _len17to32(keys, n)
        if n <= 64:
            return _len33to64(keys, n)
        return _long(keys, n)
