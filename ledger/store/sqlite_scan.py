"""SQLite sequential scans serving a full audit's in-order lookups (``NodeScan``, ``RefScan``).

The audit asks for tree nodes level by level in increasing index order, and for the
references of each object right after it; a sequential cursor per level (and one over
``refs`` in rowid order) answers those, anything out of order gets a point query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from typing import Any


class SQLiteNodeScan:
    """``get(level, idx)`` = the ``tree_nodes`` row ``(hash,)`` or None, like a point query.

    The audit asks for nodes level by level in increasing index order, so each level is
    read by one sequential cursor; an out-of-order request falls back to a point query.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._cursors: dict[int, Iterator[tuple[Any, Any]]] = {}
        self._heads: dict[int, tuple[Any, Any] | None] = {}
        self._last: dict[int, int] = {}

    def _point(self, level: int, idx: int) -> tuple[object] | None:
        row: tuple[object] | None = self._conn.execute(
            "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, idx)
        ).fetchone()
        return row

    def get(self, level: int, index: int) -> tuple[object] | None:
        idx = index
        if idx <= self._last.get(level, -1):
            return self._point(level, idx)
        self._last[level] = idx
        if level not in self._cursors:
            cursor = self._conn.execute(
                "SELECT idx, hash FROM tree_nodes WHERE level = ? AND idx >= ? ORDER BY idx",
                (level, idx),
            )
            self._cursors[level] = iter(cursor)
            self._heads[level] = next(self._cursors[level], None)
        head = self._heads[level]
        while head is not None and isinstance(head[0], int) and head[0] < idx:
            head = next(self._cursors[level], None)
        self._heads[level] = head
        if head is None or not isinstance(head[0], int):
            return self._point(level, idx)
        if head[0] == idx:
            return (head[1],)
        return None


class SQLiteRefScan:
    """``has(from_digest, rel, to_digest)``: does ``refs`` hold that row? Like a point query.

    Appends write an object's references right after it, so the audit asks for them in
    ``rowid`` order; one sequential cursor answers those, anything else a point query.
    With ``resume`` (an audit that starts part-way through the log) the cursor starts
    after the row the first question finds by point query.
    """

    def __init__(self, conn: sqlite3.Connection, *, resume: bool = False) -> None:
        self._conn = conn
        self._rows: Iterator[tuple[Any, ...]] = iter(())
        self._head: tuple[Any, ...] | None = None
        self._resume = resume
        if not resume:
            self._start(-1)

    def _start(self, after: int) -> None:
        self._rows = iter(
            self._conn.execute(
                "SELECT from_digest, rel, to_digest FROM refs WHERE rowid > ? ORDER BY rowid",
                (after,),
            )
        )
        self._head = next(self._rows, None)

    def has(self, from_digest: str, rel: str, to_digest: str) -> bool:
        head = self._head
        if head is not None and head[0] == from_digest and head[1] == rel and head[2] == to_digest:
            self._head = next(self._rows, None)
            return True
        row = self._conn.execute(
            "SELECT rowid FROM refs WHERE substr(to_digest, 8, 16) = substr(?, 8, 16)"
            " AND +to_digest = ? AND rel = ? AND from_digest = ? ORDER BY rowid LIMIT 1",
            (to_digest, to_digest, rel, from_digest),
        ).fetchone()
        if row is not None and self._resume:
            self._resume = False
            self._start(int(row[0]))
        return row is not None
