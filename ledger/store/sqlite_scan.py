"""SQLite sequential scans serving a full audit: the log rows (``log_rows``) and the
in-order lookups (``NodeScan``, ``RefScan``).

The audit asks for tree nodes level by level in increasing index order, and for the
references of each object right after it; a sequential cursor per level (and one over
``refs`` in rowid order) answers those, anything out of order gets a point query.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain

from ledger.store.base import RawLogRow, RawObjectRow, SQLValue

_FETCH = 256  # log rows fetched per call

# The columns of ``RawObjectRow``, selected by name and unpacked by the same names below.
_LOG_SELECT = (
    "SELECT e.seq, e.digest, e.kind, e.appended_at, o.digest, o.seq, o.kind,"
    " o.schema_version, o.object_id, o.object_version, o.legacy_digest, o.legacy_hints,"
    " o.data FROM entries e LEFT JOIN objects o ON o.seq = e.seq WHERE e.seq {} ?"
    " ORDER BY e.seq"
)


def log_rows(
    conn: sqlite3.Connection, since: int, tolerant: Callable[[bytes], str] | None = None
) -> Iterator[RawLogRow]:
    """Every entry from ``since`` on, in seq order, with its object row (untrusted).

    ``tolerant``: the connection's text factory for TEXT that is not valid UTF-8 (an
    audit's ``tolerant_text``); the rows are read as ``_decoded`` reads them.
    """
    query = (_LOG_SELECT.format(">="), (since,))
    for batch in _decoded(conn, query, _LOG_SELECT.format(">"), tolerant):
        yield from _build(batch)


def _decoded(
    conn: sqlite3.Connection,
    query: tuple[str, tuple[SQLValue, ...]],
    after: str,
    tolerant: Callable[[bytes], str] | None,
) -> Iterator[list[Sequence[SQLValue]]]:
    """The rows of ``query`` (SQL, arguments) in batches; each row's first column is an
    integer key the rows are ordered by, and ``after`` selects the rows past a key.

    ``tolerant``: the connection's text factory for TEXT that is not valid UTF-8.
    Decoding every text column through it costs a Python call each, so the rows are
    fetched with ``str`` (C) while it gives the same text, that is while every TEXT value
    is valid UTF-8 (the two decodings agree on those). At the first batch ``str`` cannot
    decode, the reading goes on after the last key read with ``tolerant``: the rows are
    exactly those ``tolerant`` alone would give.
    """
    cursor = conn.execute(*query)
    if tolerant is None or conn.text_factory is not tolerant:
        while batch := cursor.fetchmany(_FETCH):
            yield batch
        return
    last: SQLValue = None
    while True:
        conn.text_factory = str
        try:
            batch = cursor.fetchmany(_FETCH)
        except sqlite3.OperationalError:  # text that is not UTF-8: the tolerant reading
            break
        finally:
            conn.text_factory = tolerant
        if not batch:
            return
        last = batch[-1][0]
        yield batch
    cursor = conn.execute(*query) if last is None else conn.execute(after, (last,))
    while batch := cursor.fetchmany(_FETCH):
        yield batch


def _build(rows: Iterable[Sequence[SQLValue]]) -> Iterator[RawLogRow]:
    """``RawLogRow(seq, digest, kind, appended_at, RawObjectRow(...) or None)`` of each
    row of ``_LOG_SELECT``, built without the dataclasses' ``__init__``: a frozen class
    sets each field through ``object.__setattr__`` (~2 us per row of the two, paid per
    entry by ``verify``); here each instance's fields are set in one step, as
    ``unchecked_object`` sets them. The values stay as read (any SQL type)."""
    new = object.__new__
    for (
        seq,
        digest,
        kind,
        appended_at,
        o_digest,
        o_seq,
        o_kind,
        schema_version,
        object_id,
        object_version,
        legacy_digest,
        legacy_hints,
        data,
    ) in rows:
        raw: RawObjectRow | None = None
        if o_digest is not None:
            raw = new(RawObjectRow)
            raw.__dict__.update(
                digest=o_digest,
                seq=o_seq,
                kind=o_kind,
                schema_version=schema_version,
                object_id=object_id,
                object_version=object_version,
                legacy_digest=legacy_digest,
                legacy_hints=legacy_hints,
                data=data,
            )
        row = new(RawLogRow)
        row.__dict__.update(seq=seq, digest=digest, kind=kind, appended_at=appended_at, object=raw)
        yield row


class SQLiteNodeScan:
    """``get(level, idx)`` = the ``tree_nodes`` row ``(hash,)`` or None, like a point query.

    The audit asks for nodes level by level in increasing index order, so each level is
    read by one sequential cursor; an out-of-order request falls back to a point query.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._cursors: dict[int, Iterator[tuple[SQLValue, SQLValue]]] = {}
        self._heads: dict[int, tuple[SQLValue, SQLValue] | None] = {}
        self._last: dict[int, int] = {}

    def _point(self, level: int, idx: int) -> tuple[object] | None:
        row: tuple[object] | None = self._conn.execute(
            "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, idx)
        ).fetchone()
        return row

    def hashes(self, level: int, first: int, end: int) -> list[tuple[object, object]]:
        rows: list[tuple[object, object]] = self._conn.execute(
            "SELECT idx, hash FROM tree_nodes WHERE level = ? AND idx >= ? AND idx < ?"
            " ORDER BY idx",
            (level, first, end),
        ).fetchall()
        return rows

    def get(self, level: int, index: int) -> tuple[object] | None:
        # The usual request: the next index of a level whose cursor already stands on it.
        # A match moves the level's cursor on: a later request of the same index is a
        # point query either way (it is not after ``_last``).
        head = self._heads.get(level)
        if head is not None and type(head[0]) is int and head[0] == index > self._last[level]:
            self._last[level] = index
            self._heads[level] = next(self._cursors[level], None)
            return (head[1],)
        return self._get(level, index)

    def _get(self, level: int, index: int) -> tuple[object] | None:
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
            self._heads[level] = next(self._cursors[level], None)
            return (head[1],)
        return None


_REFS_AFTER = (
    "SELECT rowid, from_digest, rel, to_digest FROM refs WHERE rowid > ? ORDER BY rowid"
)


class SQLiteRefScan:
    """``has(from_digest, rel, to_digest)``: does ``refs`` hold that row? Like a point query.

    Appends write an object's references right after it, so the audit asks for them in
    ``rowid`` order; one sequential cursor answers those, anything else a point query.
    With ``resume`` (an audit that starts part-way through the log) the cursor starts
    after the row the first question finds by point query.
    """

    def __init__(
        self,
        conn: sqlite3.Connection,
        *,
        resume: bool = False,
        tolerant: Callable[[bytes], str] | None = None,
    ) -> None:
        self._conn = conn
        self._tolerant = tolerant  # the audit's text factory (``_decoded``)
        self._rows: Iterator[Sequence[SQLValue]] = iter(())
        self._head: Sequence[SQLValue] | None = None
        self._resume = resume
        if not resume:
            self._start(-1)

    def _start(self, after: int) -> None:
        query = (_REFS_AFTER, (after,))
        self._rows = chain.from_iterable(_decoded(self._conn, query, _REFS_AFTER, self._tolerant))
        self._head = next(self._rows, None)

    def has(self, from_digest: str, rel: str, to_digest: str) -> bool:
        head = self._head
        if head is not None and head[1] == from_digest and head[2] == rel and head[3] == to_digest:
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
