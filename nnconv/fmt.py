"""How numbers and long text print in every command's human output: a few significant digits, byte counts
in binary units (KiB, MiB, GiB: the unit of --max-memory and of what a memory allocator counts), durations in ms/s, and text wrapped to the console at spaces only (identifiers never split).
Machine formats (JSON, CSV) keep full precision and do not use these."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # only annotated: the executor's memory messages import this module without rich
    from rich.console import Console


def format_number(value: Any, digits: int = 4) -> str:
    """A scalar at `digits` significant digits: integers exactly, 0.123456789 -> '0.1235', 1e-07 -> '1e-07',
    NaN -> 'nan'."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value)).lower()
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    v = float(value)
    if not np.isfinite(v):  # NaN and infinities ('nan', 'inf', '-inf'): an output may hold them
        return str(v)
    if v == int(v) and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.{digits}g}"


def format_bytes(n: int) -> str:
    """1536 -> '1.5 KiB', 602112 -> '588 KiB', 64 << 20 -> '64 MiB', 12 -> '12 B' (binary units, three
    significant digits at most). Every byte count a person reads goes through here, so that one unit style
    is used throughout: tables, warnings, errors and `inspect`."""
    for unit, size in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{n} B"


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """'1 partition', '2 partitions', '1 NNAPI op', '0 ops' ('copy' -> pass `plural_form`)."""
    return f"{count} {noun if count == 1 else plural_form or noun + 's'}"


def format_seconds(seconds: float) -> str:
    """0.000123 -> '0.123 ms', 0.5 -> '500 ms', 12.3456 -> '12.3 s' (three significant digits at most)."""
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s" if seconds < 100 else f"{seconds:.0f} s"


def format_shape(shape: Any) -> str:
    """(1, 224, 224, 3) -> '1x224x224x3'; a scalar -> 'scalar'."""
    return "x".join(map(str, shape)) if len(shape) else "scalar"


def describe_array(a: np.ndarray) -> str:
    """`dtype shape [min, max]` of an array (no range for empty or boolean arrays)."""
    text = f"{a.dtype} {format_shape(a.shape)}"
    if a.size and a.dtype != np.bool_:
        text += f" [{format_number(a.min())}, {format_number(a.max())}]"
    return text


def wrap(text: str, width: int, indent: str = "", first_indent: str | None = None) -> list[str]:
    """`text` in lines of at most `width` columns, broken at spaces only: op and tensor names stay whole
    even when they are longer than a line."""
    return textwrap.wrap(text, width=max(width, 20), initial_indent=indent if first_indent is None else first_indent,
                         subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [indent]


def print_wrapped(out: Console, text: str, indent: str = "", first_indent: str | None = None,
                  style: str | None = None) -> None:
    """Prints `text` wrapped to the console width (see `wrap`), without markup."""
    for line in wrap(text, out.width, indent, first_indent):
        out.print(line, markup=False, style=style)
