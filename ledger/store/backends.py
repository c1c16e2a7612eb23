"""Opening a ledger wherever ``--db`` points: an SQLite file or a PostgreSQL database.

The only module that chooses a backend; commands call ``open_store`` here and then
speak the ``Store`` protocol only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ledger.store.location import DatabaseURL

if TYPE_CHECKING:
    from ledger.store.postgres import PostgresStore
    from ledger.store.sqlite import SQLiteStore


def open_store(db: Path, *, readonly: bool = False) -> SQLiteStore | PostgresStore:
    """The ledger at ``db``: ``PostgresStore`` for a ``DatabaseURL``, else ``SQLiteStore``."""
    if isinstance(db, DatabaseURL):
        from ledger.store import postgres

        return postgres.open_store(db, readonly=readonly)
    from ledger.store import sqlite

    return sqlite.open_store(db, readonly=readonly)
