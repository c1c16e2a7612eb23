"""``provledger copy SRC DST``: the same ledger on another backend (SQLite <-> PostgreSQL)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import JsonOption, console, emit_json, progress
from ledger.store.location import DbLocation, PostgresURL, SQLitePath, parse_location

if TYPE_CHECKING:
    from ledger.store.postgres import PostgresStore
    from ledger.store.sqlite import SQLiteStore

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
    from ledger.errors import RuleViolation
    from ledger.store.backends import open_store
    from ledger.store.copy import copy_ledger

    if src == dst:
        raise RuleViolation(f"copy, got the same ledger twice ({src}), expected two ledgers")
    with (
        open_store(src, readonly=True) as source,
        _open_or_create(dst) as target,
        progress(source.size(), "copying") as advance,
    ):
        summary = copy_ledger(source, target, advance=advance)
    if json_out:
        emit_json({"src": str(src), "dst": str(dst), **summary.to_json()})
        return
    out = console()
    out.print(
        f"copied {summary.copied} entries ({summary.already} already present),"
        f" {summary.checkpoints} checkpoints: {src} -> {dst}",
        markup=False,
    )
    for size, root in sorted(summary.roots.items()):
        sys.stdout.write(f"checkpoint {size} root {root} (same in both)\n")


def _open_or_create(dst: DbLocation) -> SQLiteStore | PostgresStore:
    from ledger.store.backends import open_store

    if isinstance(dst, PostgresURL):
        from ledger.store import postgres

        if not postgres.has_ledger_tables(dst):
            store, pending = postgres.create_store(dst)
            for statement in pending:
                typer.echo(
                    f"warning: roles not created; a role administrator must run: {statement};",
                    err=True,
                )
            return store
        return open_store(dst)
    if isinstance(dst, SQLitePath) and not dst.path.exists():
        from ledger.store.sqlite import create_store

        return create_store(dst.path)
    return open_store(dst)
