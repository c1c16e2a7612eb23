"""``provledger serve``: Datasette over the browse database, read-only.

The database is opened read-only (``mode=ro``: SQLite refuses every write) with SQLite's
locking, so ``provledger index`` may update it in place while it is served: each query
sees it before or after an update, never half of one. The server
binds 127.0.0.1 unless told otherwise. Metadata comes from ``tables`` (a title and a
description for every table and column) plus canned queries for the questions auditors
ask. A small plugin (``DigestLinks``) renders every digest as a link to an object page
``/-/object/<digest>``: the canonical JSON pretty-printed, its attestations, its
inclusion proof against the newest checkpoint (recomputed from the projected tree
nodes and checked against that checkpoint's root and signature), and, for a
VerificationResult, its provenance checks run live on the ledger (``--db``).
Datasette 0.65 has no write API; no canned query is writable.

Bounded SQL (``BOUNDS``; docs/BROWSE.md): every connection to the browse file caps any one
string or blob at ``value_bytes`` (``SQLITE_LIMIT_LENGTH``), so a single long C call such
as ``randomblob(999999999)`` fails at once instead of running past the time limit (which
Datasette checks from SQLite's progress handler, between virtual-machine steps only);
keeps temporary tables and sorts in memory, not in the host's /tmp; and refuses a result
whose values together exceed ``result_bytes``. Datasette's own limits are set explicitly
(time limit, rows returned, CSV size). ``serve`` also caps all of SQLite's memory in the
process (``PRAGMA hard_heap_limit``), so one wide row cannot take the host's memory.

Datasette is optional (``pip install 'provledger[web]'``); only ``serve`` needs it.
"""

from __future__ import annotations

import errno
import socket
import sqlite3
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from cohorts.browse.names import DATABASE
from cohorts.browse.queries import CANNED_QUERIES
from cohorts.browse.tables import TABLES, VIEWS
from ledger.errors import LedgerError
from ledger.store.base import SQLValue
from ledger.store.location import DbLocation

if TYPE_CHECKING:
    # Datasette ships no types: the app made here is untyped to mypy.
    from datasette.app import Datasette

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"


@dataclass(frozen=True)
class SqlBounds:
    """What one query against the served browse database may take (sizes in bytes)."""

    time_limit_ms: int = 1000  # Datasette's sql_time_limit_ms
    max_returned_rows: int = 1000  # Datasette's max_returned_rows
    max_csv_mb: int = 64  # Datasette's max_csv_mb: a streamed CSV download
    value_bytes: int = 32 << 20  # SQLITE_LIMIT_LENGTH: one string or blob, made or read
    result_bytes: int = 64 << 20  # the values of one query's rows together
    heap_bytes: int = 256 << 20  # PRAGMA hard_heap_limit: all of SQLite's memory in serve

    def settings(self) -> dict[str, object]:
        return {
            "sql_time_limit_ms": self.time_limit_ms,
            "max_returned_rows": self.max_returned_rows,
            "max_csv_mb": self.max_csv_mb,
        }


BOUNDS = SqlBounds()


class _BoundedCursor(sqlite3.Cursor):
    """A cursor that refuses results larger than ``BOUNDS.result_bytes`` in all.

    Datasette fetches a query's rows with ``fetchmany``/``fetchall``; every way of reading
    rows goes through :meth:`fetchone` here, which counts the bytes of each row's values.
    """

    used = 0

    def execute(self, sql: str, parameters: SQLValue = (), /) -> _BoundedCursor:
        self.used = 0
        try:
            super().execute(sql, parameters)
        except MemoryError:
            raise _out_of_memory() from None
        return self

    def fetchone(self) -> SQLValue:
        try:
            row = super().fetchone()
        except MemoryError:
            raise _out_of_memory() from None
        if row is not None:
            self.used += sum(len(v) if isinstance(v, str | bytes) else 8 for v in tuple(row))
            if self.used > BOUNDS.result_bytes:
                raise sqlite3.OperationalError(
                    f"result too large, got more than {BOUNDS.result_bytes} bytes of values,"
                    " expected less: select fewer rows or columns"
                )
        return row

    def fetchmany(self, size: int | None = None) -> list[SQLValue]:
        wanted = self.arraysize if size is None else size
        rows: list[SQLValue] = []
        while len(rows) < wanted and (row := self.fetchone()) is not None:
            rows.append(row)
        return rows

    def fetchall(self) -> list[SQLValue]:
        rows: list[SQLValue] = []
        while (row := self.fetchone()) is not None:
            rows.append(row)
        return rows

    def __next__(self) -> SQLValue:
        row = self.fetchone()
        if row is None:
            raise StopIteration
        return row


def _out_of_memory() -> sqlite3.OperationalError:
    return sqlite3.OperationalError(
        f"out of memory, got a query needing more than the {BOUNDS.heap_bytes} bytes SQLite"
        " may use in this server, expected less"
    )


class _BoundedConnection(sqlite3.Connection):
    """Every cursor is a :class:`_BoundedCursor`, ``execute`` on the connection included
    (``sqlite3.Connection.execute`` would make a plain cursor)."""

    def cursor(self, factory: SQLValue = _BoundedCursor) -> SQLValue:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: SQLValue = (), /) -> SQLValue:
        return self.cursor().execute(sql, parameters)

    def executemany(self, sql: str, parameters: SQLValue, /) -> SQLValue:
        raise sqlite3.OperationalError("the browse database is served read-only")

    def executescript(self, script: str, /) -> SQLValue:
        raise sqlite3.OperationalError("the browse database is served read-only")


def bounded_connection(path: Path) -> sqlite3.Connection:
    """A read-only connection to ``path`` under ``BOUNDS`` (``mode=ro`` with SQLite's
    locking: ``index`` may update the file in place; each query sees it before or after)."""
    uri = "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, check_same_thread=False, factory=_BoundedConnection)
    conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, BOUNDS.value_bytes)
    conn.execute("PRAGMA temp_store = MEMORY")  # sorts and temporary tables off the disk
    return conn


def limit_sqlite_heap() -> None:
    """Cap all of SQLite's memory in this process (``serve`` only: it is process-wide)."""
    sqlite3.connect(":memory:").execute(f"PRAGMA hard_heap_limit = {BOUNDS.heap_bytes}")


class WebUnavailable(LedgerError):
    """The optional web extra is not installed."""

    exit_code = 3


def metadata(title: str) -> dict[str, object]:
    """Datasette metadata: every table, view and column described; the canned queries."""
    tables: dict[str, object] = {}
    for table in TABLES:
        entry: dict[str, object] = {
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


def _require_datasette() -> ModuleType:
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
) -> Datasette:
    """A Datasette instance on ``browse`` opened read-only, with our plugin registered.

    ``ledger`` (opened read-only per request) lets result pages run provenance checks."""
    _require_datasette()
    from datasette.app import Datasette
    from datasette.database import Database
    from datasette.plugins import pm

    from cohorts.browse import plugin

    if not pm.is_registered(plugin):
        pm.register(plugin, name="provledger-browse")
    if pm.get_plugin("datasette.handle_exception") is not None:
        # plugin.handle_exception answers every error instead (it prints no locals).
        pm.unregister(name="datasette.handle_exception")

    class BoundedDatabase(Database):  # type: ignore[misc]
        """The browse file, read through :func:`bounded_connection` only."""

        def connect(self, write: bool = False) -> sqlite3.Connection:
            if write:
                raise sqlite3.OperationalError("the browse database is served read-only")
            return bounded_connection(browse)

    ds = Datasette(
        [],
        metadata=metadata(title or "provledger ledger"),
        template_dir=str(TEMPLATES),
        static_mounts=[("provledger-static", str(STATIC))],
        settings={"allow_download": False, **BOUNDS.settings()},
    )
    if "_memory" in ds.databases:
        # No scratch database: the only database served is the browse file.
        ds.remove_database("_memory")
    # "Mutable" in Datasette's sense: opened mode=ro with locking, not immutable=1 (which
    # would let a reader see an in-place update of ``index`` half written).
    ds.add_database(BoundedDatabase(ds, path=str(browse), is_mutable=True), name=DATABASE)
    ds.provledger_ledger = ledger
    return ds


@dataclass(frozen=True)
class ServeOptions:
    browse: Path
    host: str
    port: int
    ledger: DbLocation | Path | None = None
    title: str | None = None


class ServeError(LedgerError):
    """The server cannot start: its address is in use or cannot be bound."""

    exit_code = 3


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port`` (port 0: any free one); refusals are one
    ``ServeError`` line instead of the server's log and traceback."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as exc:
        raise ServeError(
            f"cannot serve on {host}:{port}, got '{exc.strerror or exc}', expected an address"
            " of this machine (--host)"
        ) from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as exc:
        sock.close()
        expected = {
            errno.EADDRINUSE: "a free port (--port)",
            errno.EADDRNOTAVAIL: "an address of this machine (--host)",
            errno.EACCES: "a port this user may bind (--port above 1023)",
        }.get(exc.errno or 0, "an address and port this process may bind")
        raise ServeError(
            f"cannot serve on {host}:{port}, got '{exc.strerror or exc}', expected {expected}"
        ) from None
    return sock


def serve(options: ServeOptions, started: Callable[[str], None] = lambda url: None) -> None:
    """Run the server until interrupted. Everything that can refuse to start (Datasette
    missing, the browse file, the address) is checked before ``started(url)`` is called."""
    uvicorn = _require_datasette()
    from datasette.cli import check_databases, run_sync

    limit_sqlite_heap()
    ds = make_app(options.browse, options.title, options.ledger)

    run_sync(ds.invoke_startup)
    run_sync(lambda: check_databases(ds))
    sock = listen(options.host, options.port)
    host, port = sock.getsockname()[:2]
    started(f"http://{f'[{host}]' if ':' in host else host}:{port}/")
    config = uvicorn.Config(ds.app(), log_level="warning")
    uvicorn.Server(config).run(sockets=[sock])
