"""Tables of plain strings, on a terminal and on a pipe: every cell shown whole.

Invariants:
- Nothing is ever cut or replaced by an ellipsis. On a terminal a cell wider than its
  column folds onto further lines (at spaces when it has any, else anywhere); when the
  columns cannot all get a useful width (``MIN_FOLD``), each row is shown as a record,
  one ``header  value`` line per column, and only values longer than a line fold.
- On a pipe (stdout not a terminal): one line per row, columns padded with spaces and
  separated by two, the last column unpadded, trailing blanks dropped. No wrapping.
- A cell never spans lines by itself and never reaches the terminal as a control code:
  control and format characters, lone surrogates and line or paragraph separators are
  shown as backslash escapes (``cell_text``). Cells are never read as markup.
- Rows may come in chunks (``stream_table``): each chunk is written as soon as it comes
  (the first line of ``provledger log`` does not wait for the last). The first chunk
  decides the layout; a later, wider cell folds (terminal) or pushes its row's later
  columns right (pipe), never cut.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

#: A column whose widest cell (and header) is at most this wide keeps its whole width
#: when the table must fold: numbers, stages and verdicts never fold.
SHORT = 12
#: A folding column narrower than this (or than its widest cell, when that is less)
#: makes the table a list of records instead: a digest in 8-character pieces is no help.
MIN_FOLD = 20
#: Records put a value below its label when fewer columns than this are left beside it.
NARROW = 12

#: Unicode categories shown as escapes: controls, format characters (bidirectional
#: overrides could make one id read as another), surrogates, line/paragraph separators.
_UNSAFE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def _escaped(char: str) -> str:
    code = ord(char)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def cell_text(value: str) -> str:
    """``value`` with every control or format character, lone surrogate and line or
    paragraph separator as a backslash escape: one line, no terminal control codes."""
    if value.isprintable():  # the usual cell: nothing to do
        return value
    from unicodedata import category

    return "".join(_escaped(c) if category(c) in _UNSAFE else c for c in value)


def terminal_width() -> int | None:
    """The terminal's width in columns when stdout is a terminal, else None."""
    if not sys.stdout.isatty():
        return None
    from rich.console import Console

    return int(Console().width)


def cell_width(text: str) -> int:
    if text.isascii():
        return len(text)
    from rich.cells import cell_len

    return int(cell_len(text))


@dataclass(frozen=True)
class Layout:
    """How a terminal table is drawn: column widths (``table``) or one record per row."""

    widths: tuple[int, ...]
    records: bool
    folds: bool  # a row may take several lines: rows are then ruled apart


def overhead(columns: int) -> int:
    """Characters of a boxed table that are not cell text: borders and padding."""
    return 3 * columns + 1


def layout(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    least: Sequence[int] = (),
    expand_last: bool = False,
) -> Layout:
    """Column widths for ``rows`` on a ``width``-column terminal.

    Every column gets its natural width (widest cell or header; ``least`` gives a floor
    per column, e.g. the widest sequence number a streamed log will show) when the table
    fits. Else short columns (<= ``SHORT``) keep it and the others share what is left,
    max-min fairly; a long column left under ``MIN_FOLD`` (or under its natural width,
    when smaller) means records instead. ``expand_last``: the last column takes the room
    the others leave (a streamed table's later rows may hold longer cells).
    """
    natural = [
        max([cell_width(h), *(cell_width(r[i]) for r in rows), least[i] if i < len(least) else 0])
        for i, h in enumerate(headers)
    ]
    natural = [max(1, n) for n in natural]
    room = width - overhead(len(headers))
    if expand_last and room - sum(natural[:-1]) > natural[-1]:
        natural[-1] = room - sum(natural[:-1])  # room for the longer cells still to come
    if sum(natural) <= room:
        return Layout(tuple(natural), records=False, folds=False)
    widths = list(natural)
    long = [i for i, n in enumerate(natural) if n > SHORT]
    left = room - sum(n for i, n in enumerate(natural) if i not in long)
    # Max-min fair shares: a long column narrower than an equal share keeps its natural
    # width (an id is not folded to make room for prose); the rest share equally.
    pending = sorted(long, key=lambda i: natural[i])
    while pending:
        share = max(0, left) // len(pending)
        if natural[pending[0]] <= share:
            i = pending.pop(0)
            widths[i] = natural[i]
            left -= natural[i]
            continue
        for k, j in enumerate(pending):
            widths[j] = share + (1 if k < max(0, left) % len(pending) else 0)
        break
    records = any(widths[i] < min(MIN_FOLD, natural[i]) for i in long) or not long
    return Layout(tuple(widths), records=records, folds=True)


class TableWriter:
    """Writes one table chunk by chunk (module invariants); ``close`` ends it."""

    def __init__(
        self,
        headers: Sequence[str],
        width: int | None,
        least: Sequence[int] = (),
        streamed: bool = False,
    ) -> None:
        self.headers = [cell_text(h) for h in headers]
        self.width = width
        self.least = least
        # Later chunks may hold wider cells than the first: the last column takes the room
        # left, and rows are ruled apart (one of them may fold).
        self.streamed = streamed
        self._layout: Layout | None = None
        self._pipe_widths: list[int] | None = None
        self._held: str | None = None  # a terminal table's bottom border, held back
        self._records = 0

    def write(self, rows: Iterable[Sequence[str]]) -> None:
        chunk = [[cell_text(c) for c in row] for row in rows]
        if not chunk:
            return
        if self.width is None:
            self._pipe(chunk)
        else:
            self._terminal(chunk, self.width)
        sys.stdout.flush()

    def close(self) -> None:
        """End the table (a table with no rows is its header alone)."""
        if self.width is None:
            if self._pipe_widths is None:
                self._pipe([])
        elif self._layout is None:
            self._layout = self._decide([], self.width)
            lines = _render(self._table([], True), self.width)
            sys.stdout.write("".join(line + "\n" for line in lines))
        if self._held is not None:
            sys.stdout.write(self._held + "\n")
            self._held = None
        sys.stdout.flush()

    # -- a pipe -------------------------------------------------------------------------
    def _pipe(self, chunk: list[list[str]]) -> None:
        lines = []
        if self._pipe_widths is None:
            n = len(self.headers)
            self._pipe_widths = [
                max(
                    [
                        cell_width(self.headers[i]),
                        *(cell_width(r[i]) for r in chunk),
                        self.least[i] if i < len(self.least) else 0,
                    ]
                )
                for i in range(n)
            ]
            lines.append(self._pipe_line(self.headers))
        lines.extend(self._pipe_line(row) for row in chunk)
        sys.stdout.write("".join(line + "\n" for line in lines))

    def _pipe_line(self, cells: Sequence[str]) -> str:
        widths = self._pipe_widths or []
        parts = []
        for i, cell in enumerate(cells):
            if i == len(cells) - 1:
                parts.append(cell)
            else:
                parts.append(cell + " " * (widths[i] - cell_width(cell)))
        return "  ".join(parts).rstrip()

    # -- a terminal ---------------------------------------------------------------------
    def _terminal(self, chunk: list[list[str]], width: int) -> None:
        first = self._layout is None
        if self._layout is None:
            self._layout = self._decide(chunk, width)
        if self._layout.records:
            self._write_records(chunk, width)
            return
        lines = _render(self._table(chunk, first), width)
        out: list[str] = []
        if not first:
            lines = lines[1:]  # its top border: the table goes on
            if self._layout.folds:
                out.append(self._row_rule())
        out.extend(lines[:-1])
        self._held = lines[-1]  # the bottom border, until the table ends
        sys.stdout.write("".join(line + "\n" for line in out))

    def _decide(self, chunk: list[list[str]], width: int) -> Layout:
        found = layout(self.headers, chunk, width, self.least, expand_last=self.streamed)
        if self.streamed and not found.records:
            return Layout(found.widths, records=False, folds=True)
        return found

    def _table(self, chunk: list[list[str]], header: bool) -> Table:
        from rich.table import Table
        from rich.text import Text

        assert self._layout is not None
        grid = Table(show_header=header, show_lines=self._layout.folds)
        for name, w in zip(self.headers, self._layout.widths, strict=True):
            grid.add_column(Text(name), width=w, min_width=w, max_width=w, overflow="fold")
        for row in chunk:
            grid.add_row(*[Text(c) for c in row])
        return grid

    def _row_rule(self) -> str:
        from rich import box

        assert self._layout is not None
        return box.HEAVY_HEAD.get_row([w + 2 for w in self._layout.widths], "row", edge=True)

    def _write_records(self, chunk: list[list[str]], width: int) -> None:
        from rich.table import Table
        from rich.text import Text

        if not chunk:
            return
        label = max(cell_width(h) for h in self.headers)
        beside = width - label - 2 >= NARROW  # values beside their labels, else below
        grid = Table.grid(padding=(0, 2) if beside else 0)
        if beside:
            grid.add_column(width=label, no_wrap=True)
        grid.add_column(width=width - label - 2 if beside else max(1, width), overflow="fold")
        for row in chunk:
            if self._records:
                grid.add_row(*[""] * len(grid.columns))
            for name, cell in zip(self.headers, row, strict=True):
                if beside:
                    grid.add_row(Text(name), Text(cell))
                else:
                    grid.add_row(Text(name + ":"))
                    grid.add_row(Text(cell))
            self._records += 1
        sys.stdout.write("".join(line + "\n" for line in _render(grid, width)))


def _render(renderable: RenderableType, width: int) -> list[str]:
    from rich.console import Console

    console = Console(width=width, highlight=False, markup=False, no_color=True)
    with console.capture() as captured:
        console.print(renderable)
    return [line.rstrip() for line in captured.get().splitlines()]


def stream_table(
    headers: Sequence[str],
    chunks: Iterable[Iterable[Sequence[str]]],
    least: Sequence[int] = (),
    streamed: bool = True,
) -> None:
    """Write a table whose rows come in chunks (module invariants), to the terminal's
    width when stdout is one (``terminal_width``), else as a pipe's plain lines.

    ``streamed=False``: the first chunk holds every row (``ledger.cli.common.table``).
    """
    writer = TableWriter(headers, terminal_width(), least, streamed=streamed)
    for chunk in chunks:
        writer.write(chunk)
    writer.close()
