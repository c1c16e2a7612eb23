"""Bulk import of JSON Lines: ``provledger import jsonl`` (mounted by ``ledger.cli.COMMANDS``)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ledger.cli.common import (
    DEFAULT_DB,
    DbOption,
    DryRunOption,
    JsonOption,
    dry_run_note,
    emit_json,
    progress,
)
from ledger.errors import RejectionsReported

# Kept equal to ledger.store.bulk.DEFAULT_BATCH; not imported so `--help` stays light.
_DEFAULT_BATCH = 6000


def jsonl(
    file: Annotated[
        str, typer.Argument(help="JSON Lines file, one document per line; - reads stdin.")
    ],
    db: DbOption = DEFAULT_DB,
    kind: Annotated[
        str | None, typer.Option(help="Kind of every line (else inferred per line).")
    ] = None,
    batch: Annotated[
        int, typer.Option("--batch", min=1, help="Valid lines per transaction.")
    ] = _DEFAULT_BATCH,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Processes preparing lines (default: min(2, CPUs); 1 = in this process).",
            show_default=False,
        ),
    ] = None,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Validate every line like `append`; append the valid ones in ordered batches.

    Rejected lines (the first 1,000 listed with line numbers and reasons, the rest
    counted) are never written; the others are.
    Exit 0 when no line was rejected, 3 when any was. A batch that breaks the ledger's
    admission rules (e.g. a governed record without the authority's attestation in the
    same batch) stops the import with exit 4; earlier batches stay.
    """
    from ledger.api import open_ledger
    from ledger.errors import NotFound

    if file == "-":
        source = sys.stdin.buffer
        total: int | None = None
    else:
        path = Path(file)
        if not path.is_file():
            raise NotFound(f"input file not found, got {file}, expected a readable file")
        source = path.open("rb")
        total = path.stat().st_size
    try:
        with (
            open_ledger(db, dry_run=dry_run) as book,
            progress(total, "importing", enabled=not json_out, unit="bytes") as advance,
        ):
            summary = book.import_jsonl(
                source, kind=kind, batch=batch, workers=workers, progress=advance
            )
    finally:
        if source is not sys.stdin.buffer:
            source.close()
    if json_out:
        emit_json(summary.to_json())
    else:
        for r in summary.rejected:
            typer.echo(f"error: line {r.line}: {r.reason}", err=True)
        unlisted = summary.rejected_count - len(summary.rejected)
        if unlisted:
            typer.echo(
                f"error: {unlisted} more line(s) rejected, not listed (only the first"
                f" {len(summary.rejected)} are)",
                err=True,
            )
        sys.stdout.write(
            f"imported {summary.lines} lines: {summary.new} new, {summary.present} already"
            f" present, {summary.rejected_count} rejected, {summary.blank} blank;"
            f" ledger size {summary.size}\n"
        )
    dry_run_note(dry_run)
    if not summary.ok:
        raise RejectionsReported(f"{summary.rejected_count} line(s) rejected")
