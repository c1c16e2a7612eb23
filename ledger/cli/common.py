"""Shared CLI plumbing: the one place errors become exit codes, options, output.

Exit codes: 0 ok; 1 a check found a problem; 2 usage; 3 bad input or not found;
4 refused by ledger rules. Errors print one line ``error: ...`` on stderr.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperGroup

from ledger.errors import LedgerError

DEFAULT_DB = "ledger.db"


def fail_line(message: str) -> str:
    """One-line error text: newlines folded so stderr stays one line per error."""
    return "error: " + " ".join(message.split())


class ProvGroup(TyperGroup):
    """Root command group mapping every ``LedgerError`` to its exit code."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except LedgerError as exc:
            typer.echo(fail_line(str(exc)), err=True)
            ctx.exit(exc.exit_code)
        except sqlite3.Error as exc:
            typer.echo(
                fail_line(f"database error, got '{exc}', expected a usable ledger"), err=True
            )
            ctx.exit(3)
        except OSError as exc:
            typer.echo(fail_line(f"{exc.strerror or exc}: {exc.filename or ''}".strip()), err=True)
            ctx.exit(3)
        return None


def new_app(help_text: str) -> typer.Typer:
    """A typer app with the project's settings (no completion, no locals in tracebacks)."""
    return typer.Typer(
        help=help_text,
        cls=ProvGroup,
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


DbOption = Annotated[
    Path,
    typer.Option(
        "--db",
        envvar="PROVLEDGER_DB",
        help="Ledger file (default ./ledger.db, or $PROVLEDGER_DB).",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]


def emit_json(value: Any) -> None:
    """Print JSON with sorted keys: the documented, stable output form."""
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def interactive() -> bool:
    """True when progress may be drawn (stderr is a terminal)."""
    return sys.stderr.isatty() and os.environ.get("PROVLEDGER_NO_PROGRESS") is None


@contextmanager
def progress(
    total: int | None, label: str, enabled: bool = True
) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; draws a rich bar only on a terminal and when enabled."""
    if not (enabled and interactive()):
        yield lambda _n: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    with Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        transient=True,
        console=_stderr_console(),
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _stderr_console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


#: Width used when stdout is not a terminal: wide enough that no value is ever wrapped
#: or cut (rich otherwise assumes 80 columns and truncates table cells).
PIPE_WIDTH = 1_000_000


def console() -> Any:
    """A rich console on stdout for human output.

    Not a terminal: no colour, no wrapping, no truncation (a huge width). User text
    must still be escaped (``rich.markup.escape``) before it is printed with markup.
    """
    from rich.console import Console

    if sys.stdout.isatty():
        return Console(highlight=False, soft_wrap=True)
    return Console(highlight=False, soft_wrap=True, width=PIPE_WIDTH, no_color=True)


def plain_lines(lines: Iterable[str]) -> None:
    """Write text lines as they are: no markup, no wrapping, nothing cut."""
    sys.stdout.write("".join(line + "\n" for line in lines))


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """A table of plain strings (escaped: never read as markup), whole on a pipe."""
    from rich.markup import escape
    from rich.table import Table

    grid = Table(*[escape(h) for h in headers])
    for row in rows:
        grid.add_row(*[escape(cell) for cell in row])
    out = console()
    if sys.stdout.isatty():
        out.print(grid)
        return
    for column in grid.columns:
        column.no_wrap = True
        column.overflow = "ignore"
    with out.capture() as captured:
        out.print(grid)
    # Rich pads every row to the table's width; trailing blanks carry nothing.
    plain_lines(line.rstrip() for line in captured.get().splitlines())


def read_input(name: str, max_bytes: int | None = None) -> bytes:
    """Bytes of a file argument; ``-`` is standard input. Missing files are NotFound.

    ``max_bytes`` (default: the document size limit) is enforced before the whole input
    is held in memory, so an oversized file costs nothing.
    """
    from ledger.encoding.canonical import DEFAULT_MAX_BYTES
    from ledger.errors import DocumentTooLargeError, NotFound

    limit = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    if name == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        path = Path(name)
        if not path.is_file():
            raise NotFound(f"input file not found, got {name}, expected a readable file")
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    if len(data) > limit:
        raise DocumentTooLargeError(
            f"document too large, got more than {limit} bytes, expected at most {limit}"
        )
    return data
