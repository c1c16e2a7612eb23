"""``provledger serve``: Datasette over the browse database, read-only.

The database is opened immutable (read-only, no locking, never written). The server
binds 127.0.0.1 unless told otherwise. Metadata comes from ``tables`` (a title and a
description for every table and column) plus canned queries for the questions auditors
ask. A small plugin (``DigestLinks``) renders every digest as a link to an object page
``/-/object/<digest>``: the canonical JSON pretty-printed, its attestations, its
inclusion proof against the newest checkpoint (recomputed from the projected tree
nodes and checked against that checkpoint's root and signature), and, for a
VerificationResult, its provenance checks run live on the ledger (``--db``).
Datasette 0.65 has no write API; no canned query is writable.

Datasette is optional (``pip install 'provledger[web]'``); only ``serve`` needs it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cohorts.browse.names import DATABASE
from cohorts.browse.queries import CANNED_QUERIES
from cohorts.browse.tables import TABLES, VIEWS
from ledger.errors import LedgerError
from ledger.store.location import DbLocation

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


class WebUnavailable(LedgerError):
    """The optional web extra is not installed."""

    exit_code = 3


def metadata(title: str) -> dict[str, Any]:
    """Datasette metadata: every table, view and column described; the canned queries."""
    tables: dict[str, Any] = {}
    for table in TABLES:
        entry: dict[str, Any] = {
            "title": table.title,
            "description": table.description,
            "columns": {c.name: c.description for c in table.columns},
        }
        if table.sort:
            entry["sort"] = table.sort
        tables[table.name] = entry
    for view in VIEWS:
        tables[view.name] = {"title": view.title, "description": view.description}
    return {
        "title": title,
        "description": (
            "A read-only view of a provledger ledger. Every digest links to its object:"
            " canonical JSON, attestations, inclusion proof and provenance checks."
        ),
        "extra_css_urls": ["/provledger-static/browse.css"],
        "databases": {
            DATABASE: {
                "description": "Projection of the ledger built by `provledger index`.",
                "tables": tables,
                "queries": CANNED_QUERIES,
            }
        },
    }


def _require_datasette() -> Any:
    try:
        import datasette.app  # noqa: F401
        import uvicorn
    except ImportError:
        raise WebUnavailable(
            "provledger serve needs Datasette, got no datasette module,"
            " expected it installed: pip install 'provledger[web]'"
        ) from None
    return uvicorn


def make_app(
    browse: Path, title: str | None = None, ledger: DbLocation | Path | None = None
) -> Any:
    """A Datasette instance on ``browse`` opened immutable, with our plugin registered.

    ``ledger`` (opened read-only per request) lets result pages run provenance checks."""
    _require_datasette()
    from datasette.app import Datasette
    from datasette.database import Database
    from datasette.plugins import pm

    from cohorts.browse import plugin

    if not pm.is_registered(plugin):
        pm.register(plugin, name="provledger-browse")
    ds = Datasette(
        [],
        metadata=metadata(title or "provledger ledger"),
        template_dir=str(TEMPLATES),
        static_mounts=[("provledger-static", str(STATIC))],
        settings={"allow_download": False},
    )
    if "_memory" in ds.databases:
        # No scratch database: the only database served is the browse file.
        ds.remove_database("_memory")
    ds.add_database(Database(ds, path=str(browse), is_mutable=False), name=DATABASE)
    ds.provledger_ledger = ledger
    return ds


@dataclass(frozen=True)
class ServeOptions:
    browse: Path
    host: str
    port: int
    ledger: DbLocation | Path | None = None
    title: str | None = None


def serve(options: ServeOptions) -> None:
    """Run the server until interrupted."""
    uvicorn = _require_datasette()
    from datasette.cli import check_databases, run_sync

    ds = make_app(options.browse, options.title, options.ledger)

    run_sync(ds.invoke_startup)
    run_sync(lambda: check_databases(ds))
    uvicorn.run(ds.app(), host=options.host, port=options.port, log_level="warning")
