"""``provledger copy SRC DST``: the same ledger on another backend (SQLite <-> PostgreSQL)."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ledger.cli.common import JsonOption, console, emit_json, progress
from ledger.store.location import DbLocation, parse_location

LedgerArg = Annotated[
    DbLocation,
    typer.Argument(parser=parse_location, help="Ledger file or postgresql:// URL."),
]


def copy(src: LedgerArg, dst: LedgerArg, json_out: JsonOption = False) -> None:
    """Copy a ledger entry by entry between SQLite and PostgreSQL, with its checkpoints.

    DST must be empty or a prefix of SRC (an interrupted copy is completed by running it
    again); DST is created when it is a missing file or a database without ledger tables. Key
    files are not copied: the log and authority keys stay where they are. Exit 0 when
    every checkpoint of SRC has the same root in DST.
    """
    from ledger.api import open_ledger

    with (
        open_ledger(src, readonly=True) as book,
        progress(book.store.size(), "copying") as advance,
    ):
        done = book.copy_to(dst, progress=advance)
    for statement in done.pg_grants:
        typer.echo(
            f"warning: roles not created; a role administrator must run: {statement};", err=True
        )
    if json_out:
        emit_json(done.to_json())
        return
    out = console()
    out.print(
        f"copied {done.copied} entries ({done.already_present} already present),"
        f" {done.checkpoints} checkpoints: {src} -> {dst}",
        markup=False,
    )
    for size, root in sorted(done.roots.items()):
        sys.stdout.write(f"checkpoint {size} root {root} (same in both)\n")
