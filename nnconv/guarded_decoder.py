"""The defensive core shared by the two flatbuffer readers (`tflite.reader` for .tflite models,
`nnapi.serialize` for .nnapi files).

A truncated or hostile file must end in one `ModelFormatError` line, never in a raw flatbuffers exception,
a hang or a huge allocation: every flatbuffer access runs through `guarded`, and every vector length is
checked against the file size and charged to a budget proportional to it (`count`), which bounds the
decoding work by the file size even when many tables point at one huge vector.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, TypeVar

from nnconv.errors import ModelFormatError

_T = TypeVar("_T")


class GuardedDecoder:
    """Base of the readers' decoders. `kind` names the expected format in messages ("a TFLite model");
    `budget` is the number of vector entries the whole file may claim."""

    def __init__(self, buf: Any, name: str, kind: str, budget: int) -> None:
        self.buf = buf
        self.size = len(buf)
        self.name = name
        self.kind = kind
        self.budget = budget

    def fail(self, what: str) -> ModelFormatError:
        return ModelFormatError(f"{self.name}: {what}")

    def guarded(self, what: str, fn: Callable[[], _T]) -> _T:
        """Runs a flatbuffer access, turning low-level decoding errors into ModelFormatError."""
        try:
            return fn()
        except ModelFormatError:
            raise
        except UnicodeDecodeError:
            raise self.fail(f"{what}: text that is not UTF-8 (corrupt file)") from None
        except (struct.error, IndexError, ValueError, TypeError, OverflowError, AttributeError, MemoryError,
                RecursionError) as e:
            detail = (f"an offset or length points outside the file's {self.size} bytes"
                      if isinstance(e, (struct.error, IndexError, ValueError)) else type(e).__name__)
            raise self.fail(f"{what} is corrupt ({detail}; truncated or not {self.kind}?)") from None

    def present(self, table: _T | None, what: str) -> _T:
        """`table`, an entry a vector of tables holds; flatbuffers reads a null entry as None, which in a
        well-formed file never happens: the file is corrupt, and `what` names the entry."""
        if table is None:
            raise self.fail(f"{what} is missing")
        return table

    def count(self, n: int, what: str, elem_size: int = 4) -> int:
        """Checks a vector's claimed length `n` (entries of `elem_size` bytes; 4 for a table vector) against
        the file size and the remaining budget, and charges it; returns `n`."""
        if n < 0 or n * elem_size > self.size or n > self.budget:
            raise self.fail(f"{what} claims {n} entries, more than the file can hold (truncated or corrupt)")
        self.budget -= n
        return n

    def entries(self, table: str, length: Callable[[], int], entry: str, decode: Callable[[int], _T],
                counted_as: str = "") -> list[_T]:
        """Every entry of a table vector: its length read under `guarded` (errors name `table`) and checked by
        `count` (named `counted_as`, by default `table`), then `decode(i)` under `guarded` (`entry i`)."""
        n = self.count(self.guarded(table, length), counted_as or table)
        return [self.guarded(f"{entry} {i}", lambda i=i: decode(i)) for i in range(n)]
