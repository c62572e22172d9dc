"""Tables sized so that nothing a user searches for is split: rich shrinks columns by itself, which breaks
op and tensor names mid-word (`FULLY_CO|NNECTED`) at 80 columns. Here every column's width is chosen up
front: columns of identifiers and numbers get their longest cell, wrapping columns at least their longest
word, and the spare width goes to the wrapping columns in the order given. When even that does not fit,
the caller prints its compact form instead."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from rich.markup import escape
from rich.table import Table

TABLE_FRAME_PER_COLUMN = 3  # a border and one space of padding either side
TABLE_FRAME = 1  # the last border


@dataclass(frozen=True)
class Col:
    header: str
    wrap: bool = False  # False: the cell is never wrapped (identifiers, numbers)
    justify: str = "left"
    grow: int = 0  # wrapping columns receive spare width in increasing `grow` order
    # a wrapping column of free text (notes, error messages) whose long words (paths) may be folded: its
    # least width is FOLD_MIN, so the table's layout does not depend on the longest word of a message
    fold: bool = False


FOLD_MIN = 16

def _lines(cell: str) -> list[str]:
    return cell.split("\n")


def fitted_table(cols: Sequence[Col], rows: Sequence[Sequence[str]], width: int,
                 title: str | None = None) -> Table | None:
    """An empty rich Table (add `rows` to it, markup-escaped as needed) whose columns hold `rows` (plain text)
    without splitting a word, or None when `width` is too narrow for that."""
    fixed: dict[int, int] = {}
    low: dict[int, int] = {}
    high: dict[int, int] = {}
    for i, col in enumerate(cols):
        cells = [row[i] for row in rows]
        longest_line = max([len(col.header)] + [len(line) for cell in cells for line in _lines(cell)])
        if not col.wrap:
            fixed[i] = longest_line
        else:
            words = col.header.split() + [w for cell in cells for w in cell.split()]
            low[i] = max([len(w) for w in words] + [1])
            if col.fold:
                low[i] = min(low[i], max(FOLD_MIN, len(col.header)))
            high[i] = longest_line
    available = width - TABLE_FRAME - TABLE_FRAME_PER_COLUMN * len(cols) - sum(fixed.values())
    if available < sum(low.values()):
        return None
    widths = {**fixed, **low}
    spare = available - sum(low.values())
    for i in sorted(low, key=lambda k: cols[k].grow):
        give = min(spare, high[i] - low[i])
        widths[i] += give
        spare -= give
    table = Table(title=title)
    for i, col in enumerate(cols):
        table.add_column(escape(col.header), width=widths[i], no_wrap=not col.wrap, justify=col.justify,  # type: ignore[arg-type]
                         overflow="fold" if col.fold else "ellipsis")
    return table
