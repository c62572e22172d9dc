"""TFLite's INT4 tensors: two signed 4-bit values per byte.

TFLite stores an INT4 constant densely packed (tensor_utils::UnpackDenseInt4IntoInt8): element 2i is the low
nibble of byte i and element 2i+1 its high nibble, each sign-extended from 4 bits (-8..7); an odd count
leaves the last byte's high nibble unused. The reader keeps the packed bytes as they are (`Tensor.data` of an
INT4 tensor is the raw uint8 buffer, so a model copied through our writer keeps them bit for bit);
`unpack_int4` gives the values, which int8 holds exactly.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

INT4_MIN, INT4_MAX = -8, 7


def packed_size(count: int) -> int:
    """Bytes that `count` packed int4 values take."""
    return (count + 1) // 2


def unpack_int4(raw: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The int8 values of a packed INT4 buffer, shaped `shape`. `raw` holds at least
    `packed_size(prod(shape))` bytes (the reader checks it); bytes after those are ignored, as TFLite does."""
    count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    data = np.asarray(raw).view(np.uint8).reshape(-1)[:packed_size(count)]
    # Shifting the nibble into the top of an int8 and back sign-extends it (an arithmetic shift).
    low = (data << 4).view(np.int8) >> 4
    high = data.view(np.int8) >> 4
    values = np.empty(2 * data.size, dtype=np.int8)
    values[0::2], values[1::2] = low, high
    return values[:count].reshape(tuple(shape))


def pack_int4(values: np.ndarray) -> bytes:
    """Packs int values in -8..7 (any shape, row-major) as TFLite stores them. Raises ValueError outside."""
    flat = np.asarray(values).reshape(-1)
    if flat.size and (flat.min() < INT4_MIN or flat.max() > INT4_MAX):
        raise ValueError(f"int4 values must lie in {INT4_MIN}..{INT4_MAX}")
    nibbles = (flat.astype(np.int16) & 0xF).astype(np.uint8)
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()
