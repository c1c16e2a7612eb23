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
    from cohorts.browse.build import build_index, default_out
    from ledger.store.backends import open_store

    target = out if out is not None else default_out(db)
    with open_store(db, readonly=True) as store:
        report = build_index(store, target, full=full)
    if json_out:
        emit_json(report.to_json())
        return
    typer.echo(
        f"indexed {report.new_entries} new entries into {target}"
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
    from cohorts.browse.build import default_out
    from cohorts.browse.web import ServeOptions, serve
    from ledger.errors import NotFound
    from ledger.store.location import SQLitePath

    target = browse if browse is not None else default_out(db)
    if not target.is_file():
        raise NotFound(
            f"browse database not found, got {target}, expected one made by `provledger index`"
        )
    # A server's ledger is always given; a file only when there is one (without it,
    # result pages say how to run the checks).
    ledger = None if isinstance(db, SQLitePath) and not db.path.is_file() else db
    serve(
        ServeOptions(target, host, port, ledger=ledger),
        started=lambda url: typer.echo(
            f"serving {target} read-only at {url} (Ctrl-C stops)", err=True
        ),
    )


def browse_findings(store: AuditSource, file: Path) -> list[dict[str, str]]:
    """The ``verify --browse`` check, as JSON-ready findings."""
    from cohorts.browse.check import check_browse

    return [f.to_json() for f in check_browse(store, file)]
