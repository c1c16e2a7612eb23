"""Writing past admission, as a hostile writer would: the rows, not the store.

``raw_rows`` plans exactly the rows the store would write for some objects (entries,
objects, references, tree nodes, per-kind totals), with the code the store itself uses
(``ledger.store.batch.plan_rows``): a writer with the database's rights can compute
them too. ``sqlite_insert`` writes them with ``sqlite3`` alone (a file editor with write
access, no keys); ``pg_insert`` with its own psycopg connection (a PostgreSQL writer
login). Neither runs admission nor writes a batch record, so the file stays internally
consistent (tree, totals, references): only a replay of admission can tell.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ledger.log.merkle import PendingNodes
from ledger.store.backends import open_store
from ledger.store.batch import BatchRows, plan_rows
from ledger.store.location import DbLocation
from ledger.store.prepared import Prepared


def raw_rows(db: Path | DbLocation, items: Sequence[Prepared]) -> BatchRows:
    """The rows appending ``items`` at the end of ``db`` takes (no checkpoint record)."""
    with open_store(db, readonly=True) as store:
        return plan_rows(items, {}, store.size(), PendingNodes(store))


def sqlite_insert(db: Path, items: Sequence[Prepared]) -> list[int]:
    """Append ``items`` to an SQLite ledger file with plain SQL; their seqs."""
    rows = raw_rows(db, items)
    conn = sqlite3.connect(db)
    with conn:
        conn.executemany("INSERT INTO entries VALUES (?,?,?,?)", rows.entries)
        conn.executemany(
            "INSERT INTO objects(digest, seq, kind, schema_version, object_id, object_version,"
            " legacy_digest, legacy_hints, data) VALUES (?,?,?,?,?,?,?,?,?)",
            rows.objects,
        )
        conn.executemany("INSERT INTO refs(from_digest, rel, to_digest) VALUES (?,?,?)", rows.refs)
        conn.executemany("INSERT INTO tree_nodes(level, idx, hash) VALUES (?,?,?)", rows.nodes)
        conn.executemany(
            "INSERT INTO kind_totals(kind, entries, objects, bytes) VALUES (?,?,?,?)"
            " ON CONFLICT(kind) DO UPDATE SET entries = entries + excluded.entries,"
            " objects = objects + excluded.objects, bytes = bytes + excluded.bytes",
            rows.totals_rows(),
        )
    conn.close()
    return [seq for seq, *_ in rows.entries]


def pg_insert(
    url: str,
    items: Sequence[Prepared],
    db: Path | DbLocation | None = None,
    object_id: str | None = None,
) -> list[int]:
    """Append ``items`` to a PostgreSQL ledger through a writer login's own psycopg
    connection: the rows a writer may insert (entries, objects, references); the server
    derives the rest. ``db``: where to plan the rows from (default: ``url``);
    ``object_id``: an id the object rows claim instead of their own (a lie)."""
    import psycopg

    from ledger.store.location import parse_location

    rows = raw_rows(db or parse_location(url), items)
    if object_id is not None:
        rows.objects = [(*o[:4], object_id, *o[5:]) for o in rows.objects]  # type: ignore[misc]
    with psycopg.connect(url) as conn:
        conn.cursor().executemany("INSERT INTO entries VALUES (%s,%s,%s,%s)", rows.entries)
        conn.cursor().executemany(
            "INSERT INTO objects(digest, seq, kind, schema_version, object_id, object_version,"
            " legacy_digest, legacy_hints, data) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s)",
            rows.objects,
        )
        conn.cursor().executemany(
            "INSERT INTO refs(from_digest, rel, to_digest) VALUES (%s,%s,%s)", rows.refs
        )
    return [seq for seq, *_ in rows.entries]


def pg_sql(url: str, statement: str, params: Sequence[Any] = ()) -> None:
    """One statement on a writer login's own connection (committed)."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute(statement, params)
