"""Core commands: init, append, show, log, stats."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import (
    DEFAULT_DB,
    DbOption,
    DryRunOption,
    JsonOption,
    console,
    dry_run_note,
    emit_json,
    emit_json_rows,
    progress,
    read_input,
)
from ledger.cli.tables import stream_table
from ledger.store.location import DbLocation

if TYPE_CHECKING:
    from ledger.store.base import Entry


def log_key_path(db: DbLocation | Path, given: Path | None = None) -> Path:
    """The log's private key file: --log-key, else next to the database (a ``Path`` is
    an SQLite file; ``ledger.api.default_log_key``)."""
    from ledger.api import default_log_key

    return given if given is not None else default_log_key(db)


def authority_key_path(db: DbLocation | Path, given: Path | None = None) -> Path:
    """The authority's private key file: --authority-key, else next to the database."""
    from ledger.api import default_authority_key

    return given if given is not None else default_authority_key(db)


def init(
    db: DbOption = DEFAULT_DB,
    origin: Annotated[
        str | None, typer.Option(help="Log origin line for checkpoints (default: derived).")
    ] = None,
    log_key: Annotated[
        Path | None, typer.Option("--log-key", help="Where to write the log's private key.")
    ] = None,
    authority_key: Annotated[
        Path | None,
        typer.Option("--authority-key", help="Where to write the authority's private key."),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Create a ledger, its log key and its authority key; print the log verifier key."""
    from ledger.api import init_ledger

    created = init_ledger(db, origin=origin, log_key=log_key, authority_key=authority_key)
    if json_out:
        emit_json(created.to_json())
        return
    out = console()
    out.print(f"created ledger {created.db}")
    out.print(f"origin          {created.origin}")
    out.print(f"log key         {created.log_key_file} (key id {created.log_key_id})")
    out.print(f"authority key   {created.authority_key_file} (key id {created.authority_key_id})")
    if created.pg_grants is not None:
        state = " not created yet: see the warnings" if created.pg_grants else ""
        out.print(f"writer role     {created.pg_writer_role} (INSERT, SELECT){state}", markup=False)
        out.print(f"auditor role    {created.pg_auditor_role} (SELECT){state}", markup=False)
        for statement in created.pg_grants:
            typer.echo(
                f"warning: roles not created; a role administrator must run: {statement};",
                err=True,
            )
    out.print("log verifier key (give this to auditors):")
    sys.stdout.write(created.log_verifier_key + "\n")


def append(
    files: Annotated[list[str], typer.Argument(help="JSON files to append; - reads stdin.")],
    db: DbOption = DEFAULT_DB,
    kind: Annotated[
        str | None,
        typer.Option(help="Kind of every input (else inferred); 'blob' stores raw bytes."),
    ] = None,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Validate every input fully, then append all of them in one transaction.

    Every input passes the ledger's admission rules: an authority-governed record (a
    frozen or burned cohort, burn notice, binding, identity, revocation) needs the
    authority's attestation among the same inputs, else nothing is written (exit 4).
    """
    from ledger.api import open_ledger, prepare_document
    from ledger.errors import LedgerError

    # Open first so a missing ledger is reported before any work; nothing is written
    # until every input has been read (blobs too obey the 16 MiB limit) and validated.
    with open_ledger(db, dry_run=dry_run) as book:
        prepared = []
        with progress(len(files), "validating", enabled=not json_out and len(files) > 1) as advance:
            for name in files:
                try:
                    prepared.append(prepare_document(read_input(name), kind))
                except LedgerError as exc:
                    raise type(exc)(f"{name}: {exc}") from None
                advance(1)
        appended = book.append_prepared(prepared)
    rows = [{"file": name, **done.to_json()} for name, done in zip(files, appended, strict=True)]
    if json_out:
        emit_json(rows)
    else:
        for name, done in zip(files, appended, strict=True):
            status = "new" if done.new else "already present"
            sys.stdout.write(f"{done.digest} seq={done.seq} {done.kind} {status} {name}\n")
    dry_run_note(dry_run)


def show(
    ref: Annotated[str, typer.Argument(help="Digest, legacy digest, ID or ID@VERSION.")],
    db: DbOption = DEFAULT_DB,
    raw: Annotated[bool, typer.Option("--raw", help="Write the exact stored bytes.")] = False,
    json_out: JsonOption = False,
) -> None:
    """Show one object by digest, legacy digest or id."""
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        obj = book.get(ref, notes=not raw)
    if raw:
        sys.stdout.buffer.write(obj.data)
        sys.stdout.buffer.flush()
        return
    info = obj.to_json()
    if json_out:
        emit_json(info)
        return
    out = console()
    for key in (
        "digest",
        "seq",
        "kind",
        "schema_version",
        "object_id",
        "object_version",
        "legacy_digest",
        "appended_at",
        "size",
    ):
        if info[key] is not None:
            out.print(f"{key:15} {info[key]}", markup=False)
    for note in obj.notes:
        out.print(f"{'note':15} {note}", markup=False)
    if info["object"] is not None:
        out.print_json(data=info["object"])


#: Entries whose ids ``log`` looks up first, then per chunk: the first rows are printed
#: after a few lookups, and later ones in batches of the store's ``ids_of`` query.
LOG_FIRST_CHUNK = 50
LOG_CHUNK = 2000


def log(
    db: DbOption = DEFAULT_DB,
    kind: Annotated[
        str | None, typer.Option(help="Only entries of this kind (a registered kind or blob).")
    ] = None,
    since: Annotated[int, typer.Option(min=0, help="First sequence number.")] = 0,
    limit: Annotated[int | None, typer.Option(min=1, help="At most N entries.")] = None,
    json_out: JsonOption = False,
) -> None:
    """List log entries in sequence order: seq, kind, full digest, time, object id.

    Streams: the first entries are printed at once and the work done follows what is
    printed (--since, --limit, a reader that stops reading), not the ledger's size.
    JSON: an array of {"seq", "digest", "kind", "appended_at"}.
    """
    import itertools

    from ledger.schema.kinds import BLOB, KINDS, get_kind
    from ledger.store.backends import open_store

    if kind is not None and kind != BLOB:
        get_kind(kind)  # unknown kinds: exit 3 with the list of known ones
    with open_store(db, readonly=True) as store:
        entries = store.entries(since=since, limit=limit, kind=kind)
        if json_out:
            # The documented shape: ids are for people (``show`` has them all).
            emit_json_rows(
                {"seq": e.seq, "digest": e.digest, "kind": e.kind, "appended_at": e.appended_at}
                for e in entries
            )
            return

        def chunks() -> Iterator[list[list[str]]]:
            size = LOG_FIRST_CHUNK
            while chunk := list(itertools.islice(entries, size)):
                # (object id, version) read from each object's checked bytes
                ids = store.ids_of([e.digest for e in chunk])
                yield [_log_row(e, ids.get(e.digest, (None, None))) for e in chunk]
                size = LOG_CHUNK

        # Column floors known before the first row: the widest seq and kind there are.
        widest_seq = len(str(max(store.size() - 1, 0)))
        widest_kind = max(len(name) for name in (*KINDS, BLOB))
        stream_table(
            ["seq", "kind", "digest", "appended at", "id"], chunks(), [widest_seq, widest_kind]
        )


def _log_row(entry: Entry, ids: tuple[str | None, int | None]) -> list[str]:
    object_id, version = ids
    shown = "-" if object_id is None else object_id + ("" if version is None else f"@{version}")
    return [str(entry.seq), str(entry.kind), str(entry.digest), str(entry.appended_at), shown]


def stats(db: DbOption = DEFAULT_DB, json_out: JsonOption = False) -> None:
    """Entry counts by kind, sizes and the latest checkpoint."""
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        figures = book.stats()  # every figure from the same snapshot of the log
    if json_out:
        emit_json(figures.to_json())
        return
    out = console()
    out.print(f"ledger          {figures.db}")
    out.print(f"origin          {figures.origin}")
    out.print(f"entries         {figures.entries}")
    for k, n in figures.by_kind.items():
        out.print(f"  {k:22} {n}")
    out.print(f"object bytes    {figures.object_bytes}")
    out.print(f"file bytes      {figures.file_bytes}")
    out.print(f"checkpoint      {figures.latest_checkpoint_size}")


def migrate(db: DbOption = DEFAULT_DB, json_out: JsonOption = False) -> None:
    """Bring a ledger made by an earlier release to the current file layout, in place."""
    from ledger.api import migrate_ledger

    done = migrate_ledger(db)
    if json_out:
        emit_json(done.to_json())
        return
    out = console()
    if done.from_format is None:
        out.print(f"ledger {db} is already {done.to_format}; nothing to do")
    else:
        out.print(f"migrated ledger {db} from {done.from_format} to {done.to_format}")
