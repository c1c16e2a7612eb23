"""``provledger index``, ``provledger serve`` and the ``verify --browse`` check.

Mounted by the composition root ``ledger/cli/__init__.py``. Heavy imports (sqlite-utils,
Datasette) happen inside the commands so ``--help`` stays light.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import DEFAULT_DB, DbOption, JsonOption, emit_json

if TYPE_CHECKING:
    from ledger.store.base import AuditSource

BrowseOut = Annotated[
    Path | None,
    typer.Option("--out", help="Browse database to write (default: <db stem>.browse.db)."),
]


def index_cmd(
    db: DbOption = DEFAULT_DB,
    out: BrowseOut = None,
    full: Annotated[
        bool, typer.Option("--full", help="Rebuild from the first entry instead of updating.")
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Project the ledger into a browse database for auditors (the ledger is only read).

    Incremental: only entries after the last one projected are read. JSON:
    {"out", "previous_size", "size", "new_entries", "checkpoints", "results"}.
    """
    from cohorts.api import build_index
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        report = build_index(book, out, full=full)
    if json_out:
        emit_json(report.to_json())
        return
    typer.echo(
        f"indexed {report.new_entries} new entries into {report.out}"
        f" (ledger size {report.size}, {report.checkpoints} checkpoints,"
        f" {report.results} results)"
    )


def serve_cmd(
    db: DbOption = DEFAULT_DB,
    browse: Annotated[
        Path | None,
        typer.Option("--browse", help="Browse database (default: <db stem>.browse.db)."),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="Address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port.")] = 8001,
) -> None:
    """Serve the browse database read-only with Datasette (needs the optional web extra).

    Result pages run provenance checks on the ledger (--db), opened read-only. A missing
    web extra or an address in use is one error line (exit 3), before "serving" is said.
    """
    from cohorts.api import default_browse_file, serve_browse

    target = browse if browse is not None else default_browse_file(db)
    serve_browse(
        target,
        ledger=db,
        host=host,
        port=port,
        started=lambda url: typer.echo(
            f"serving {target} read-only at {url} (Ctrl-C stops)", err=True
        ),
    )


def browse_findings(store: AuditSource, file: Path) -> list[dict[str, str]]:
    """The ``verify --browse`` check, as JSON-ready findings."""
    from cohorts.browse.check import check_browse

    return [f.to_json() for f in check_browse(store, file)]
