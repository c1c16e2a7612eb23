"""Build or update the browse database from a ledger.

Invariants:
- The ledger is only read (callers open it read-only), in one pass in log order
  (``log_rows``), and every object row is checked as ``verify`` checks it, and against
  its log entry, as it is read (``checked_objects``: digest, canonical form, kind,
  schema, index columns and legacy digest re-derived), so nothing projected rests on a
  stored side value. The checks run in worker processes beside the projection.
- A full build (``--full``, or no browse file yet) is written to a temporary file and
  moved into place; an update is written in place, in one transaction. Either way a
  reader (``provledger serve``, which opens the file read-only) sees the file as it was
  before the run or after it, never half of it, and a failed run leaves it as it was.
  An update costs what the new entries cost, not the size of the file.
- Incremental: ``ledger_info.last_seq`` records the last log position projected; a
  later run projects only the entries after it. Rows depend only on the log prefix
  (see ``project``), so an incremental build equals a full build of the same ledger.
- A projection belongs to one log: the origin and the digest at ``last_seq`` must
  match the ledger, else the run is refused (a different or rewritten ledger).
- The one whole-log judgement stored is the cohort audit (``judged``: the tables
  ``cohort_audits``, ``audit_findings``, ``successor_links``), judged at the last entry
  projected and replaced whole when the projection grows. Provenance *checks* run live
  on the result page (``pages``), against the ledger, when ``serve`` is given it; what
  the projection holds about provenance is the chain itself (``result_chain``).
- Rows are written by ``executemany`` in batches (``BATCH`` rows); a full build creates
  the lookup indexes and fills the full-text indexes once, after the rows, where an
  update keeps them current row by row (their triggers).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import sqlite_utils
import sqlite_utils.db

from cohorts.browse.judged import JUDGED_TABLES, judge
from cohorts.browse.project import Prebuilt, Projection, Projector, Update, prebuild
from cohorts.browse.tables import TABLES, VIEWS, Table
from ledger.audit.object_check import check_object
from ledger.audit.parallel import Presign, default_workers, with_derived_checks
from ledger.errors import InputError, IntegrityError
from ledger.store.base import (
    AuditSource,
    NodeScan,
    RawLogRow,
    StoredObject,
    stored_run,
    unchecked_object,
)
from ledger.store.location import DbLocation
from ledger.trust.identity import trust_index
from ledger.trust.judgement import SignatureMemo
from ledger.trust.presign import signing_keys

FORMAT = "provledger-browse/3"  # 2: standing columns; 3: cohorts.counts_from
BATCH = 5000
PAGE_SIZE = 16384  # bytes per page of a fully built browse file
CACHE_KIB = 65536  # SQLite page cache while a full build writes


@dataclass(frozen=True)
class IndexReport:
    out: Path
    previous_size: int
    size: int
    checkpoints: int
    results: int

    @property
    def new_entries(self) -> int:
        return self.size - self.previous_size

    def to_json(self) -> dict[str, object]:
        return {
            "out": str(self.out),
            "previous_size": self.previous_size,
            "size": self.size,
            "new_entries": self.new_entries,
            "checkpoints": self.checkpoints,
            "results": self.results,
        }


def default_out(db: DbLocation) -> Path:
    """``ledger.db`` -> ``ledger.browse.db`` beside it (a database ``evidence`` ->
    ``./evidence.browse.db``)."""
    return db.sibling(Path(db.name).stem + ".browse.db")


def _t(db: sqlite_utils.Database, name: str) -> sqlite_utils.db.Table:
    """A table handle (``db[name]`` may also be a view)."""
    return db.table(name)


def _indexed(table: Table) -> list[str]:
    """Columns looked up by digest from object pages and canned queries."""
    return [
        c.name
        for c in table.columns
        if c.name.endswith("_digest") or c.name in ("cohort_id", "key_id")
    ]


def ensure_schema(db: sqlite_utils.Database, *, bulk: bool = False) -> None:
    """Create every declared table, full-text index and view that is missing.

    ``bulk``: a fresh file about to be filled: the lookup and full-text indexes are made
    by ``finish_bulk`` after the rows instead.
    """
    for table in TABLES:
        if not _t(db, table.name).exists():
            _t(db, table.name).create(
                table.column_types(),
                pk=table.pk[0] if len(table.pk) == 1 else table.pk,
                foreign_keys=list(table.foreign_keys),
            )
            if not bulk:
                _indexes(db, table)
    for view in VIEWS:
        db.create_view(view.name, view.sql, replace=True)


def _indexes(db: sqlite_utils.Database, table: Table) -> None:
    if table.fts:
        _t(db, table.name).enable_fts(list(table.fts), create_triggers=True, replace=True)
    for column in _indexed(table):
        _t(db, table.name).create_index([column], if_not_exists=True)


def finish_bulk(db: sqlite_utils.Database) -> None:
    """The indexes ``ensure_schema(bulk=True)`` left out, built over the rows now there."""
    for table in TABLES:
        _indexes(db, table)


def _info(db: sqlite_utils.Database) -> dict[str, str]:
    return {str(r["key"]): str(r["value"]) for r in _t(db, "ledger_info").rows}


def _check_same_log(store: AuditSource, info: dict[str, str], out: Path) -> int:
    """Size already projected; refuses a projection of a different or rewritten log."""
    if "last_seq" not in info:
        return 0
    origin = store.get_meta("origin")
    if info.get("origin") != origin:
        raise InputError(
            f"browse database {out} is of another ledger, got origin {info.get('origin')!r},"
            f" expected {origin!r}"
        )
    size = int(info["last_seq"]) + 1
    if size == 0:
        return 0
    last = store.get_by_seq(size - 1)
    if last is None or last.digest != info.get("last_digest"):
        raise InputError(
            f"browse database {out} does not match the ledger at seq {size - 1}, got"
            f" {info.get('last_digest')}, expected {None if last is None else last.digest}"
            " (rebuild it with --full)"
        )
    return size


def checked_objects(
    store: AuditSource,
    since: int,
    size: int,
    workers: int | None = None,
    presign: Presign | None = None,
) -> Iterator[tuple[StoredObject, str, Prebuilt | None]]:
    """(object, appended_at, prebuilt) of entries ``since`` .. ``size - 1``, in log
    order, each object row checked as ``verify`` checks it (``check_object``: digest of
    the bytes, canonical form, kind, schema, index columns, legacy digest) and against
    its entry.

    The checks run in ``workers`` processes (default: as many as ``verify`` would use
    for as many entries), with the part of each object's rows that depends on its
    bytes alone (``prebuild``, from the document the check parsed; None when the check
    was left to this process); the rest of the projection runs in this one, so they
    overlap. With ``presign``, the workers also verify attestation signatures ahead into
    its memo.
    """

    def upto_size() -> Iterator[RawLogRow]:
        for row in store.log_rows(since):
            if not isinstance(row.seq, int) or row.seq >= size:
                return  # appended while we read: the next run takes it
            yield row

    count = default_workers(size - since) if workers is None else workers
    for row, checked in with_derived_checks(upto_size(), count, presign, prebuild):
        if row.object is None:
            raise InputError(f"ledger entry {row.seq} has no object, expected one (run verify)")
        obj = unchecked_object(row.object)
        check, derived = (check_object(obj), None) if checked is None else checked
        built = cast("Prebuilt | None", derived)  # what ``prebuild`` returned, or None
        findings = check[0]
        problem = findings[0].message if findings else None
        if problem is None and (obj.digest, obj.kind) != (row.digest, row.kind):
            problem = f"row {obj.kind} {obj.digest}, entry {row.kind} {row.digest}"
        if problem is None and not isinstance(row.appended_at, str):
            problem = f"appended_at {row.appended_at!r} is not text"
        if problem is not None:
            raise IntegrityError(
                f"ledger object row at seq {row.seq} disagrees with its bytes, got {problem},"
                " expected a row derived from them; run `provledger verify`"
            )
        yield obj, row.appended_at, built  # type: ignore[misc]


class _Writer:
    """Batches rows per table; flushes before an update so it sees every earlier row."""

    def __init__(self, db: sqlite_utils.Database) -> None:
        self.conn = db.conn
        # Rows per table, in column order (``project.COLUMNS``).
        self.pending: dict[str, list[tuple[object, ...]]] = {t.name: [] for t in TABLES}
        self.count = 0
        self._sql = {
            t.name: (
                f"INSERT INTO [{t.name}] ({', '.join(f'[{c.name}]' for c in t.columns)})"
                f" VALUES ({', '.join('?' * len(t.columns))})",
                tuple(c.name for c in t.columns),
            )
            for t in TABLES
        }

    def add(self, projection: Projection) -> None:
        for update in projection.updates:
            self.flush()
            self.apply(update)
        pending = self.pending
        for table, values in projection.tuples:
            pending[table].append(values)
        for table, rows in projection.rows.items():
            names = self._sql[table][1]
            pending[table].extend(tuple(map(r.get, names)) for r in rows)
            self.count += len(rows)
        self.count += len(projection.tuples)
        if self.count >= BATCH:
            self.flush()

    def extend(self, table: str, rows: Sequence[tuple[object, ...]]) -> None:
        """Rows of ``table`` in column order, written with the next flush."""
        self.pending[table].extend(rows)
        self.count += len(rows)

    def apply(self, update: Update) -> None:
        sets = ", ".join(f"[{k}] = ?" for k in update.values)
        self.conn.execute(
            f"UPDATE [{update.table}] SET {sets} WHERE [{update.match_column}] = ? AND seq < ?",
            [*update.values.values(), update.match_value, update.before_seq],
        )

    def flush(self) -> None:
        # Parents before children so foreign keys always point at existing rows.
        for table in TABLES:
            rows = self.pending[table.name]
            if rows:
                self.conn.executemany(self._sql[table.name][0], rows)
                self.pending[table.name] = []
        self.count = 0


def tree_node_rows(nodes: NodeScan, seq: int) -> list[tuple[int, int, str]]:
    """Every complete-subtree hash that leaf ``seq`` closes (as ``append`` wrote them),
    as ``tree_nodes`` rows in column order (level, idx, hash)."""
    level, idx = 0, seq
    rows = [_node(nodes, 0, idx)]
    while idx & 1:
        level, idx = level + 1, idx >> 1
        rows.append(_node(nodes, level, idx))
    return rows


def tree_node_range(nodes: NodeScan, first: int, end: int) -> list[tuple[int, int, str]]:
    """``tree_node_rows`` of every leaf ``first .. end - 1``, read one level at a time
    (``NodeScan.hashes``: the nodes those leaves close on level L are its indexes
    ``first >> L .. (end >> L) - 1``). Any node missing, repeated or not bytes: the rows
    (or the error) of ``tree_node_rows`` leaf by leaf."""
    rows: list[tuple[int, int, str]] = []
    level = 0
    while (end >> level) > (first >> level):
        start = first >> level
        hashes = stored_run(nodes, level, start, end >> level)
        if hashes is None:
            return [node for seq in range(first, end) for node in tree_node_rows(nodes, seq)]
        rows += [(level, start + at, value.hex()) for at, value in enumerate(hashes)]
        level += 1
    return rows


class _TreeRuns:
    """The ``tree_nodes`` rows of the entries projected, in runs of consecutive seqs (up
    to ``RUN``) read at once (``tree_node_range``): the rows ``tree_node_rows`` gives
    entry by entry, in another order."""

    RUN = 4096

    def __init__(self, nodes: NodeScan) -> None:
        self.nodes = nodes
        self.first = self.end = -1  # the run not read yet: seqs first .. end - 1

    def add(self, seq: int) -> list[tuple[int, int, str]]:
        """Take entry ``seq``; the rows of the run it closes, if any."""
        if type(seq) is not int:  # a tampered row: read as before, entry by entry
            return self.close() + tree_node_rows(self.nodes, seq)
        if seq == self.end and self.first >= 0:
            self.end += 1
            return self.close() if self.end - self.first >= self.RUN else []
        rows = self.close()
        self.first, self.end = seq, seq + 1
        return rows

    def close(self) -> list[tuple[int, int, str]]:
        """The rows of the run taken so far."""
        if self.first < 0:
            return []
        rows = tree_node_range(self.nodes, self.first, self.end)
        self.first = self.end = -1
        return rows


def _judge(db: sqlite_utils.Database, store: AuditSource, previous: int, size: int) -> None:
    """Replace the judged tables (``judged``) when the projection grew or they are not
    judged at ``size`` yet."""
    judged = db.execute("SELECT max(judged_size) FROM cohort_audits").fetchone()[0]
    if previous == size and judged == size:
        return
    rows = judge(store, size)
    for name in reversed(JUDGED_TABLES):  # children first: findings point at audits
        db.execute(f"DELETE FROM [{name}]")
    for name in JUDGED_TABLES:
        if rows[name]:
            _t(db, name).insert_all(rows[name], batch_size=500)


def _node(nodes: NodeScan, level: int, idx: int) -> tuple[int, int, str]:
    found = nodes.get(level, idx)
    if found is not None and type(found[0]) is bytes:  # the usual row: no copy, no union
        return (level, idx, found[0].hex())
    if found is None or not isinstance(found[0], bytes | bytearray | memoryview):
        raise InputError(
            f"ledger tree node level {level} index {idx}, got {found!r}, expected its hash"
            " (run verify)"
        )
    return (level, idx, bytes(found[0]).hex())


def _write(db: sqlite_utils.Database, store: AuditSource, out: Path, bulk: bool) -> IndexReport:
    ensure_schema(db, bulk=bulk)
    info = _info(db)
    previous = _check_same_log(store, info, out)
    size = store.size()
    workers = default_workers(size - previous)
    presign = None
    if workers > 1:
        # The workers verify attestation signatures ahead (keys of every identity in
        # the log: the memo answers only for the exact key the projector asks about).
        presign = Presign(signing_keys(trust_index(store)), SignatureMemo())
    projector = Projector(store, None if presign is None else presign.memo)
    for obj in store.by_kind("verifier-identity"):
        if obj.seq < previous:
            projector.remember_identity(obj)
    writer = _Writer(db)
    tree = _TreeRuns(store.node_scan())
    last_digest = info.get("last_digest")
    for stored, appended_at, built in checked_objects(store, previous, size, workers, presign):
        writer.extend("tree_nodes", tree.add(stored.seq))
        writer.add(projector.rows(stored, appended_at, built))
        last_digest = stored.digest
    writer.extend("tree_nodes", tree.close())
    writer.flush()
    known = {int(r[0]) for r in db.execute("SELECT size FROM checkpoints")}
    checkpoints = [c for c in store.checkpoints() if c.size not in known and c.size <= size]
    _t(db, "checkpoints").insert_all(
        {
            "size": c.size,
            "root": c.root.hex(),
            "created_at": c.created_at,
            "note": c.note.decode("utf-8", errors="replace"),
        }
        for c in checkpoints
    )
    _judge(db, store, previous, size)
    if bulk:
        finish_bulk(db)
    results = _t(db, "results").count
    meta = {
        "format": FORMAT,
        "origin": store.get_meta("origin") or "",
        "authority_key_id": projector.authority_key_id or "",
        "log_verifier_key": store.get_meta("log_verifier_key") or "",
        "last_seq": str(size - 1),
        "last_digest": last_digest or "",
    }
    _t(db, "ledger_info").upsert_all([{"key": k, "value": v} for k, v in meta.items()], pk="key")
    return IndexReport(out, previous, size, _t(db, "checkpoints").count, results)


def _format_of(out: Path) -> str | None:
    """The layout recorded in a browse database (None: none readable)."""
    try:
        db = sqlite_utils.Database(out)
        try:
            if not _t(db, "ledger_info").exists():
                return None
            return _info(db).get("format")
        finally:
            db.close()
    except sqlite3.Error:
        return None


def scratch_settings(db: sqlite_utils.Database) -> None:
    """How a full build sets up its new, empty file (before the first table exists)."""
    # Pages of 16 KB hold a row's ~4 KB text without an overflow chain, and a larger
    # cache keeps the random-keyed indexes (digests) in memory: ~35 -> ~25 us of SQLite
    # work per entry at 100k (docs/PERFORMANCE.md). Neither changes a row.
    db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
    db.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
    # A scratch file: durability comes from the fsync of the finished file, not SQLite.
    db.execute("PRAGMA journal_mode = OFF")
    db.execute("PRAGMA synchronous = OFF")


def build_index(store: AuditSource, out: Path, *, full: bool = False) -> IndexReport:
    """Project ``store`` into ``out`` (incrementally unless ``full``; module invariants)."""
    # A browse database of an earlier layout is rebuilt, not extended.
    full = full or (out.exists() and _format_of(out) != FORMAT)
    if out.exists() and not full:
        return _update(store, out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        tmp.unlink(missing_ok=True)
        db = sqlite_utils.Database(tmp)
        try:
            scratch_settings(db)
            db.conn.execute("BEGIN")  # sqlite-utils nests its writes as savepoints
            report = _write(db, store, out, bulk=True)
            db.conn.execute("COMMIT")
        finally:
            db.close()
        with tmp.open("rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return report


def _update(store: AuditSource, out: Path) -> IndexReport:
    """An update in place: one transaction; a reader sees the file before or after it."""
    db = sqlite_utils.Database(out)
    try:
        db.conn.execute("BEGIN IMMEDIATE")  # one writer at a time; readers carry on
        try:
            report = _write(db, store, out, bulk=False)
        except BaseException:
            db.conn.execute("ROLLBACK")
            raise
        db.conn.execute("COMMIT")
    finally:
        db.close()
    return report

