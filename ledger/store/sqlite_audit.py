"""What ``provledger verify`` asks of an SQLite ledger file beyond the log itself.

The SQLite half of ``AuditSource``: the exact schema (``sqlite_master`` against
``schema_script()``), the append-only triggers, ``PRAGMA integrity_check`` and, when it
fails, which objects the digest index no longer leads to; and the raw reads the audit
compares with the log (meta, checkpoints, tree nodes, orphans, references). Every SQLite
statement an audit runs is here, so ``ledger.audit.full`` stays backend-neutral.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from ledger.store.base import SQLValue, StorageFinding

_MAX_LISTED = 100  # cap on objects named one by one by the digest index probe


def schema_findings(
    conn: sqlite3.Connection, expected_rows: tuple[tuple[str, str, str, str | None], ...]
) -> list[StorageFinding]:
    """``sqlite_master`` must be exactly the schema the store creates (no more, no less).

    Triggers keep their own codes (``trigger-missing``, ``trigger-altered``,
    ``trigger-unexpected``); tables, indexes and views are ``schema-missing``,
    ``schema-altered``, ``schema-extra``.
    """
    expected = {(t, n): (tb, q) for t, n, tb, q in expected_rows}
    present = {
        (str(t), str(n)): (str(tb), None if q is None else str(q))
        for t, n, tb, q in conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
    }
    found = []
    for (kind, name), want in sorted(expected.items()):
        got = present.get((kind, name))
        if kind == "trigger":
            if got is None:
                found.append(
                    StorageFinding("trigger-missing", f"append-only trigger {name} is missing")
                )
            elif got != want:
                table, op = name.rsplit("_no_", 1)
                found.append(
                    StorageFinding(
                        "trigger-altered",
                        f"append-only trigger {name} is not an unconditional abort on {op}"
                        f" of {table}",
                    )
                )
        elif got is None:
            found.append(
                StorageFinding("schema-missing", f"{kind} {name} is missing from the file")
            )
        elif got != want:
            found.append(
                StorageFinding(
                    "schema-altered", f"{kind} {name} differs, got {got[1]!r}, expected {want[1]!r}"
                )
            )
    for (kind, name), (table, _sql) in sorted(present.items()):
        if (kind, name) in expected:
            continue
        if kind == "trigger":
            found.append(
                StorageFinding("trigger-unexpected", f"trigger {name} on table {table} is unknown")
            )
        else:
            found.append(
                StorageFinding("schema-extra", f"{kind} {name} is not part of a ledger's schema")
            )
    return found


def integrity_findings(conn: sqlite3.Connection) -> list[StorageFinding]:
    """``PRAGMA integrity_check``, and the digest index probe when it fails.

    integrity_check, not quick_check: it also compares every index with its table, so
    an index pointed at another row (``writable_schema``) is found.

    It runs with a page cache of at least ``INTEGRITY_CACHE_KIB`` (the connection's own
    restored after): comparing an index with its table looks up each row's key in the
    index, at random for the random-keyed ones (digests), and SQLite's default 2 MB
    cache re-read their pages from the file again and again (more than half of the
    check's CPU at 200k entries was the kernel copying pages). The check is the same.
    """
    with _cache_of_at_least(conn, INTEGRITY_CACHE_KIB):
        integrity = [str(r[0]) for r in conn.execute("PRAGMA integrity_check")]
    if integrity == ["ok"]:
        return []
    return [
        StorageFinding("database-corrupt", "; ".join(integrity[:5])),
        *_digest_index_probe(conn),
    ]


#: The page cache ``integrity_findings`` runs with, KiB (allocated as pages are read):
#: the random-keyed indexes of a 1M-object ledger are ~50 MB.
INTEGRITY_CACHE_KIB = 65536


@contextmanager
def _cache_of_at_least(conn: sqlite3.Connection, kib: int) -> Iterator[None]:
    """``conn``'s page cache raised to ``kib`` KiB inside (never lowered), then restored."""
    (old,) = conn.execute("PRAGMA cache_size").fetchone()
    (page_size,) = conn.execute("PRAGMA page_size").fetchone()
    # cache_size: negative is KiB, positive is pages.
    if (-old if old < 0 else old * page_size // 1024) >= kib:
        yield
        return
    conn.execute(f"PRAGMA cache_size = -{int(kib)}")
    try:
        yield
    finally:
        # An interrupted check (``Aside.stop``) may see this interrupted too; the
        # connection is then closed with the larger cache, which changes nothing.
        with suppress(sqlite3.Error):
            conn.execute(f"PRAGMA cache_size = {int(old)}")


def _digest_index_probe(conn: sqlite3.Connection) -> list[StorageFinding]:
    """Name the objects the digest index does not lead to (run once integrity fails).

    A B-tree index edited on disk (or through ``writable_schema``) can send a lookup of
    one digest to another object's row; every read by digest goes through this index.
    """
    found: list[StorageFinding] = []
    try:
        rows = conn.execute("SELECT rowid, seq, digest FROM objects NOT INDEXED").fetchall()
        for rowid, seq, digest in rows:
            hits = conn.execute(
                "SELECT rowid FROM objects INDEXED BY objects_by_digest"
                " WHERE substr(digest, 8, 16) = substr(?, 8, 16) AND +digest = ?",
                (digest, digest),
            ).fetchall()
            if rowid not in [hit for (hit,) in hits]:
                found.append(
                    StorageFinding(
                        "digest-index-mismatch",
                        f"the digest index leads {digest} to rows {[h for (h,) in hits]},"
                        f" expected its own row {rowid}",
                        seq if isinstance(seq, int) else None,
                        str(digest),
                    )
                )
                if len(found) >= _MAX_LISTED:
                    break
    except sqlite3.Error as exc:
        found.append(StorageFinding("database-corrupt", f"digest index unreadable: {exc}"))
    return found


def meta_rows(conn: sqlite3.Connection) -> list[tuple[object, object]]:
    return [(k, v) for k, v in conn.execute("SELECT key, value FROM meta ORDER BY key")]


def raw_checkpoints(conn: sqlite3.Connection) -> list[tuple[object, object, object, object]]:
    return [
        (s, r, n, c)
        for s, r, n, c in conn.execute(
            "SELECT size, root, note, created_at FROM checkpoints ORDER BY size"
        )
    ]


def tree_node_count(conn: sqlite3.Connection) -> int:
    (total,) = conn.execute("SELECT count(*) FROM tree_nodes").fetchone()
    return int(total)


def tree_nodes_outside(
    conn: sqlite3.Connection, size: int, limit: int
) -> list[tuple[object, object]]:
    # typeof: a tampered file may hold a level or index of another SQL type.
    return [
        (level, idx)
        for level, idx in conn.execute(
            "SELECT level, idx FROM tree_nodes WHERE level < 0 OR level > 63 OR idx < 0"
            " OR typeof(level) != 'integer' OR typeof(idx) != 'integer' OR idx >= (? >> level)"
            " ORDER BY level, idx LIMIT ?",
            (size, limit),
        )
    ]


def tree_nodes_past(conn: sqlite3.Connection, size: int, limit: int) -> list[tuple[int, object]]:
    """Nodes at or past the end of a ``size`` log, level by level (a resumed audit)."""
    found: list[tuple[int, object]] = []
    for level in range(64):
        found += [
            (level, idx)
            for (idx,) in conn.execute(
                "SELECT idx FROM tree_nodes WHERE level = ? AND idx >= ? ORDER BY idx LIMIT ?",
                (level, size >> level, limit),
            )
        ]
    return found


def orphan_objects(conn: sqlite3.Connection, start: int = 0) -> list[tuple[object, object]]:
    resumed = " AND o.seq >= ?" if start > 0 else ""
    return [
        (seq, digest)
        for seq, digest in conn.execute(
            "SELECT o.seq, o.digest FROM objects o LEFT JOIN entries e ON e.seq = o.seq"
            f" WHERE (e.seq IS NULL OR e.digest != o.digest){resumed}",
            (start,) if start > 0 else (),
        )
    ]


def duplicate_objects(
    conn: sqlite3.Connection, start: int = 0, limit: int = _MAX_LISTED
) -> list[tuple[object, object]]:
    """Every row of a digest stored more than once, by digest then seq.

    The database does not enforce one row per digest (its digest index is on a short
    key, see ``ledger.store.sqlite.digest_key``); one scan of that index finds every key
    that occurs twice, and only those rows are compared in full. From ``start`` > 0:
    each object from ``start`` on is looked up by its key instead.
    """
    if start > 0:
        twice = conn.execute(
            "SELECT DISTINCT n.digest FROM objects n JOIN objects o"
            " ON substr(o.digest, 8, 16) = substr(n.digest, 8, 16) AND +o.digest = n.digest"
            " AND o.seq IS NOT n.seq WHERE n.seq >= ? LIMIT ?",
            (start, limit),
        ).fetchall()
        rows: list[tuple[object, object]] = []
        for (digest,) in twice:
            rows += conn.execute(
                "SELECT seq, digest FROM objects WHERE substr(digest, 8, 16) = substr(?, 8, 16)"
                " AND +digest = ? ORDER BY seq",
                (digest, digest),
            ).fetchall()
        return rows
    # The scan returns a rowid per repeated key, not the key: the index entry holds the
    # rowid, while the key itself would be recomputed from the table row (SQLite before
    # 3.41 does not read an expression's value from its index), one random read of the
    # table per distinct key (8.6 s of CPU instead of 0.5 s at 1M objects).
    return [
        (seq, digest)
        for seq, digest in conn.execute(
            "SELECT seq, digest FROM objects WHERE substr(digest, 8, 16) IN"
            " (SELECT substr(digest, 8, 16) FROM objects WHERE rowid IN"
            " (SELECT min(rowid) FROM objects GROUP BY substr(digest, 8, 16)"
            " HAVING count(*) > 1))"
            " ORDER BY digest, seq"
        )
    ]


def ref_count(conn: sqlite3.Connection) -> int:
    (count,) = conn.execute("SELECT count(*) FROM refs").fetchone()
    return int(count)


def refs_with_objects(conn: sqlite3.Connection) -> Iterator[tuple[SQLValue, ...]]:
    yield from conn.execute(
        "SELECT r.from_digest, r.rel, r.to_digest, o.seq, o.kind, o.data FROM refs r"
        " LEFT JOIN objects o ON substr(o.digest, 8, 16) = substr(r.from_digest, 8, 16)"
        " AND o.digest = r.from_digest ORDER BY r.from_digest"
    )


def snapshot_mark(conn: sqlite3.Connection) -> tuple[object, ...]:
    """The newest row of each append-only table, as ``conn``'s snapshot has them: two
    readers of one snapshot give the same mark (each lookup is one index descent)."""
    row: tuple[object, ...] = conn.execute(
        "SELECT (SELECT max(seq) FROM entries), (SELECT max(rowid) FROM objects),"
        " (SELECT max(rowid) FROM refs), (SELECT max(idx) FROM tree_nodes WHERE level = 0),"
        " (SELECT max(size) FROM checkpoints), (SELECT max(rowid) FROM cosignatures)"
    ).fetchone()
    return row


def data_version(conn: sqlite3.Connection) -> int:
    """``PRAGMA data_version``: differs between two reads of one connection iff another
    connection committed in between (read at the start of a read transaction)."""
    (version,) = conn.execute("PRAGMA data_version").fetchone()
    return int(version)


class SQLiteSnapshotReader:
    """``SnapshotReader`` over a second connection whose read transaction is open at the
    audit's snapshot (``SQLiteStore.audit_session`` proves that before handing it out)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def integrity_findings(self) -> list[StorageFinding]:
        return integrity_findings(self._conn)

    def orphan_objects(self, start: int = 0) -> list[tuple[object, object]]:
        return orphan_objects(self._conn, start)

    def duplicate_objects(
        self, start: int = 0, limit: int = _MAX_LISTED
    ) -> list[tuple[object, object]]:
        return duplicate_objects(self._conn, start, limit)

    def interrupt(self) -> None:
        self._conn.interrupt()
