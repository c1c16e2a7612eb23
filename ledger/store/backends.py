"""Opening a ledger wherever ``--db`` points: an SQLite file or a PostgreSQL database.

The only module that chooses a backend; commands call ``open_store`` here and then
speak the ``Store`` protocol only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.store.location import DbLocation, PostgresURL, SQLitePath, parse_location

if TYPE_CHECKING:
    from ledger.store.postgres import PostgresStore
    from ledger.store.sqlite import SQLiteStore
    from ledger.trust.admission import AdmissionPolicy


def open_store(
    db: DbLocation | Path,
    *,
    readonly: bool = False,
    max_page_count: int | None = None,
    policy: AdmissionPolicy | None = None,
    dry_run: bool = False,
) -> SQLiteStore | PostgresStore:
    """The ledger at ``db``: ``PostgresStore`` for a ``PostgresURL``, else ``SQLiteStore``
    (a ``Path`` is an SQLite file).

    ``policy`` is the admission policy the store applies to every append and hands to
    every judgement of its records; None means the package's default
    (``ledger.trust.admission.default_policy``, IDKMesh's rules), ``CORE_ONLY`` the
    generic core alone. ``max_page_count`` caps an SQLite file's size (tests of a full
    disk); a server has its own limits.
    """
    location = parse_location(db)
    if isinstance(location, PostgresURL):
        from ledger.store import postgres

        return postgres.open_store(location, readonly=readonly, policy=policy, dry_run=dry_run)
    if not isinstance(location, SQLitePath):
        raise TypeError(f"ledger location, got {location!r}, expected a file or a database")
    from ledger.store import sqlite

    # Only what was given: a caller that wraps ``sqlite.open_store`` (a test capping the
    # file's size with ``functools.partial``) keeps its own arguments.
    options: dict[str, Any] = {"readonly": readonly, "policy": policy, "dry_run": dry_run}
    if max_page_count is not None:
        options["max_page_count"] = max_page_count
    return sqlite.open_store(location.path, **options)
