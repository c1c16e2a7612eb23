"""Fast per-object checks and ordered node reads for ``provledger verify`` (``ledger.audit.full``).

``check_object(obj, reference)`` returns exactly what ``reference(obj)`` (the audit's
own ``_check_object``) returns. It recomputes the clean case cheaply (one SHA-256,
one ``fastcanon`` pass whose canonical bytes must equal the stored bytes, a compiled
schema check, the index columns) and hands anything else to ``reference``, so every
finding and message still comes from the audit's code. ``with_object_checks`` runs
it over the audit's rows, optionally in worker processes, yielding in row order with
a bounded window in flight. ``NodeReader`` serves the audit's in-order tree-node
lookups from one sequential scan per level instead of one query per node.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import os
import sqlite3
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ledger.encoding._fast import parse_encode
from ledger.encoding.digest import legacy_bytes, sha256_digest
from ledger.errors import LedgerError
from ledger.schema._compiled import fast_check
from ledger.schema.kinds import BLOB, detect_kind
from ledger.store.base import StoredObject
from ledger.store.derived import apply_checked_hints, parse_hints

CheckResult = tuple[list[Any], list[tuple[str, str]]]
Reference = Callable[[StoredObject], CheckResult]

# Below this many entries a worker pool costs more than it saves.
POOL_THRESHOLD = 20_000
_CHUNK = 256  # rows per task sent to a worker


def check_object(obj: StoredObject, reference: Reference) -> CheckResult:
    """``reference(obj)``, computed without it when the object is clean."""
    try:
        clean = _clean_refs(obj)
    except Exception:  # any surprise: the reference decides (and reports)
        clean = None
    return reference(obj) if clean is None else ([], clean)


def _clean_refs(obj: StoredObject) -> list[tuple[str, str]] | None:
    """The object's references if every audit check passes, else None."""
    data = obj.data
    if "sha256:" + hashlib.sha256(data).hexdigest() != obj.digest:
        return None
    if obj.kind == BLOB:
        side = (obj.schema_version, obj.object_id, obj.object_version, obj.legacy_digest)
        clean_blob = side == (None, None, None, None) and obj.legacy_hints is None
        return [] if clean_blob else None
    try:
        encoded = parse_encode(data)
    except LedgerError:
        return None
    if encoded.canonical != data:
        return None
    value = encoded.value
    try:
        spec = detect_kind(value)
    except LedgerError:
        return None
    version = value.get("schema_version")
    if spec.name != obj.kind or version not in spec.versions:
        return None
    if not fast_check(spec.name, version, value):
        return None
    refs = list(spec.refs(value))
    legacy = None
    if spec.native and obj.legacy_hints is not None:
        return None
    if not spec.native:
        if obj.legacy_hints is not None:
            # Hints turn the canonical integers back into the doubles the legacy form
            # prints; only checked hints (integer to equal double) count as clean.
            hints = parse_hints(value, obj.legacy_hints)  # HintError: not clean
            legacy = sha256_digest(legacy_bytes(apply_checked_hints(value, hints)))
        else:
            legacy = sha256_digest(encoded.legacy)
    expected = (version, spec.object_id(value), spec.object_version(value), legacy)
    stored = (obj.schema_version, obj.object_id, obj.object_version, obj.legacy_digest)
    return refs if expected == stored else None


def _check_rows(rows: list[tuple[Any, ...]], reference: Reference) -> list[CheckResult | None]:
    out: list[CheckResult | None] = []
    for row in rows:
        try:
            obj = StoredObject(*row[4:])
            out.append(check_object(obj, reference))
        except Exception:
            out.append(None)  # the audit recomputes (and reports) this row itself
    return out


def _check_task(args: tuple[list[tuple[Any, ...]], Reference]) -> list[CheckResult | None]:
    return _check_rows(*args)


def default_workers(entries: int) -> int:
    """Worker processes for an audit of ``entries``: 1 (in process) below the threshold."""
    if entries < POOL_THRESHOLD:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(2, cpus))


def with_object_checks(
    rows: Iterable[tuple[Any, ...]], reference: Reference, workers: int = 1
) -> Iterator[tuple[tuple[Any, ...], CheckResult | None]]:
    """Yield ``(row, check)`` in row order; ``check`` is None when the row has no object.

    A row is the audit's entries-join-objects row: entry columns 0-3, object columns
    4-12. None may also mean "not computed here": the caller then runs the reference.
    """

    def chunks() -> Iterator[list[tuple[Any, ...]]]:
        batch: list[tuple[Any, ...]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == _CHUNK:
                yield batch
                batch = []
        if batch:
            yield batch

    def pick(batch: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
        return [row for row in batch if row[4] is not None]

    def merge(
        batch: list[tuple[Any, ...]], results: list[CheckResult | None]
    ) -> Iterator[tuple[tuple[Any, ...], CheckResult | None]]:
        it = iter(results)
        for row in batch:
            yield row, (next(it) if row[4] is not None else None)

    if workers <= 1:
        for batch in chunks():
            yield from merge(batch, _check_rows(pick(batch), reference))
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    window: deque[tuple[list[tuple[Any, ...]], Any]] = deque()
    with context.Pool(workers) as pool:
        for batch in chunks():
            task = pool.apply_async(_check_task, ((pick(batch), reference),))
            window.append((batch, task))
            if len(window) > 2 * workers:
                done, result = window.popleft()
                yield from merge(done, result.get())
        while window:
            done, result = window.popleft()
            yield from merge(done, result.get())


class NodeReader:
    """``get(level, idx)`` = the ``tree_nodes`` row ``(hash,)`` or None, like a point query.

    The audit asks for nodes level by level in increasing index order, so each level is
    read by one sequential cursor; an out-of-order request falls back to a point query.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._cursors: dict[int, Iterator[tuple[Any, Any]]] = {}
        self._heads: dict[int, tuple[Any, Any] | None] = {}
        self._last: dict[int, int] = {}

    def _point(self, level: int, idx: int) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self._conn.execute(
            "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, idx)
        ).fetchone()
        return row

    def get(self, level: int, idx: int) -> tuple[Any, ...] | None:
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


class RefReader:
    """``has(from_digest, rel, to_digest)``: does ``refs`` hold that row? Like a point query.

    Appends write an object's references right after it, so the audit asks for them in
    ``rowid`` order; one sequential cursor answers those, anything else a point query.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._rows = iter(
            conn.execute("SELECT from_digest, rel, to_digest FROM refs ORDER BY rowid")
        )
        self._head: tuple[Any, ...] | None = next(self._rows, None)

    def has(self, from_digest: str, rel: str, to_digest: str) -> bool:
        head = self._head
        if head is not None and head[0] == from_digest and head[1] == rel and head[2] == to_digest:
            self._head = next(self._rows, None)
            return True
        row = self._conn.execute(
            "SELECT 1 FROM refs WHERE to_digest = ? AND rel = ? AND from_digest = ?",
            (to_digest, rel, from_digest),
        ).fetchone()
        return row is not None
