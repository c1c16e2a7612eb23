"""SQLite implementation of the ``Store`` protocol.

One file, WAL mode. Every append runs inside ``BEGIN IMMEDIATE`` (one writer at a
time, readers never blocked) with a busy timeout, so several processes may append at
once. Triggers make every ledger table append-only inside the database itself.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.errors import AppendOnlyError, NotFound, StorageError
from ledger.files import require_regular, shown
from ledger.store import sqlite_audit, sqlite_scan
from ledger.store.base import (
    LEDGER_META_KEYS,
    LEDGER_TABLES,
    Entry,
    NodeScan,
    RawLogRow,
    RefScan,
    SnapshotReader,
    SQLValue,
    StorageFinding,
    StoredObject,
    entries_query,
)
from ledger.store.batch import BatchRows
from ledger.store.location import SQLitePath
from ledger.store.sqlite_audit import SQLiteSnapshotReader
from ledger.store.sqlite_scan import SQLiteNodeScan, SQLiteRefScan
from ledger.store.sqlstore import ADD_TOTALS, INT64_MAX, SQLStore

if TYPE_CHECKING:
    from ledger.trust.admission import AdmissionPolicy

SCHEMA_VERSION = "2"
FORMAT = f"provledger-sqlite/{SCHEMA_VERSION}"
# Ledgers of earlier layouts are refused with a pointer to ``provledger migrate``.
OLD_FORMATS = ("provledger-sqlite/1",)
# Digest lookups go through indexes on a short key: 16 hex digits (64 bits) of the
# digest, starting after "sha256:". A full 71-character text key made every index
# entry ~80 bytes, so at 1M objects the random-key indexes outgrew the page cache and
# each batch rewrote most of their pages; the short key keeps them ~4x smaller. The
# key only narrows the search: every query also compares the full digest.
KEY_START, KEY_LEN = 8, 16  # SQLite substr() positions are 1-based


def digest_key(digest: str) -> str:
    """The short index key of a digest: what ``substr(digest, 8, 16)`` is in SQLite.

    Queries say ``substr(digest, 8, 16) = ? AND +digest = ?``: the unary plus keeps
    SQLite from folding ``digest = ?`` into the key term (constant propagation), which
    would stop it using the key index.
    """
    return digest[KEY_START - 1 : KEY_START - 1 + KEY_LEN]


BUSY_TIMEOUT_S = 60.0
PAGE_SIZE = 32768  # for new ledgers (see create_store)

_DDL = """
CREATE TABLE IF NOT EXISTS meta (
  key TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
  seq INTEGER PRIMARY KEY,
  digest TEXT NOT NULL,
  kind TEXT NOT NULL,
  appended_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS objects (
  digest TEXT NOT NULL,
  seq INTEGER NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  schema_version TEXT,
  object_id TEXT,
  object_version INTEGER,
  legacy_digest TEXT,
  legacy_hints TEXT,
  data BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS objects_by_id ON objects(object_id, object_version)
  WHERE object_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS objects_by_digest ON objects(substr(digest, 8, 16));
CREATE INDEX IF NOT EXISTS objects_by_legacy ON objects(substr(legacy_digest, 8, 16))
  WHERE legacy_digest IS NOT NULL;
CREATE INDEX IF NOT EXISTS objects_by_kind ON objects(kind);
CREATE TABLE IF NOT EXISTS refs (
  from_digest TEXT NOT NULL,
  rel TEXT NOT NULL,
  to_digest TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS refs_to ON refs(substr(to_digest, 8, 16));
CREATE TABLE IF NOT EXISTS tree_nodes (
  level INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  hash BLOB NOT NULL,
  PRIMARY KEY (level, idx)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS checkpoints (
  size INTEGER PRIMARY KEY,
  root BLOB NOT NULL,
  note BLOB NOT NULL,
  created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS kind_totals (
  kind TEXT PRIMARY KEY,
  entries INTEGER NOT NULL,
  objects INTEGER NOT NULL,
  bytes INTEGER NOT NULL
) WITHOUT ROWID;
CREATE VIEW IF NOT EXISTS objects_text AS
  SELECT seq, digest, kind, schema_version, object_id, object_version, legacy_digest,
    length(data) AS size,
    CASE WHEN kind = 'blob' THEN NULL ELSE CAST(data AS TEXT) END AS canonical_json
  FROM objects;
CREATE VIEW IF NOT EXISTS tree_nodes_hex AS
  SELECT level, idx, lower(hex(hash)) AS hash FROM tree_nodes;
CREATE VIEW IF NOT EXISTS checkpoints_text AS
  SELECT size, lower(hex(root)) AS root, created_at, CAST(note AS TEXT) AS note
  FROM checkpoints;
"""
# The views above only read: they show what tools like Datasette would otherwise render
# as binary (canonical JSON, hashes, notes) as UTF-8 text and lower-case hex, the forms
# the CLI prints. RFC 8785 output is always valid UTF-8, so the text is exactly the bytes.
READABLE_VIEWS = ("objects_text", "tree_nodes_hex", "checkpoints_text")
# Witness cosignature lines (c2sp.org/tlog-cosignature) per checkpoint size. Not covered by
# the log: each line is verified against a trusted witness key whenever it is used.
_COSIGNATURES_DDL = """
CREATE TABLE IF NOT EXISTS cosignatures (
  size INTEGER NOT NULL,
  line TEXT NOT NULL,
  added_at TEXT NOT NULL,
  PRIMARY KEY (size, line)
);
"""


def _trigger_ddl(tables: Sequence[str] = LEDGER_TABLES) -> str:
    parts = []
    for table in tables:
        for op in ("UPDATE", "DELETE"):
            parts.append(
                f"CREATE TRIGGER IF NOT EXISTS {table}_no_{op.lower()} BEFORE {op} ON {table}"
                f" BEGIN SELECT RAISE(ABORT, 'provledger: the ledger is append-only,"
                f" {op} on {table} refused'); END;"
            )
    return "\n".join(parts)


# ``kind_totals`` holds one row per kind, updated by every append in its own write
# transaction: the one table that is not append-only. Its triggers keep it growing only
# (no delete; an update may not rename a kind or lower a total); ``verify`` re-derives it.
TOTALS_TRIGGERS = ("kind_totals_no_delete", "kind_totals_no_shrink")
_TOTALS_TRIGGER_DDL = """
CREATE TRIGGER IF NOT EXISTS kind_totals_no_delete BEFORE DELETE ON kind_totals
  BEGIN SELECT RAISE(ABORT,
    'provledger: the ledger is append-only, DELETE on kind_totals refused'); END;
CREATE TRIGGER IF NOT EXISTS kind_totals_no_shrink BEFORE UPDATE ON kind_totals
  WHEN NEW.kind IS NOT OLD.kind OR NEW.entries < OLD.entries OR NEW.objects < OLD.objects
    OR NEW.bytes < OLD.bytes
  BEGIN SELECT RAISE(ABORT,
    'provledger: the ledger is append-only, UPDATE lowering kind_totals refused'); END;
"""
# The totals as a full audit re-derives them: entries by their kind; object rows (with an
# entry at their seq: what the log holds) by theirs, with their stored length.
_DERIVE_TOTALS = """
INSERT INTO kind_totals(kind, entries, objects, bytes)
SELECT kind, sum(e), sum(o), sum(b) FROM (
  SELECT kind, 1 AS e, 0 AS o, 0 AS b FROM entries
  UNION ALL
  SELECT o.kind, 0, 1, length(o.data) FROM objects o JOIN entries e ON e.seq = o.seq
) GROUP BY kind
"""


def trigger_names() -> list[str]:
    """Names of the triggers every ledger must have (append-only, totals only grow)."""
    return [f"{t}_no_{op}" for t in LEDGER_TABLES for op in ("update", "delete")] + list(
        TOTALS_TRIGGERS
    )


def schema_script() -> str:
    """Everything a ledger file's schema holds: the one definition (tables, indexes,
    triggers, views). ``create_store`` runs it; ``verify`` compares the file with it.
    Add a view or index here and both follow."""
    return _DDL + _COSIGNATURES_DDL + _trigger_ddl() + _TOTALS_TRIGGER_DDL


SchemaObject = tuple[str, str, str, str | None]  # (type, name, tbl_name, sql)


@functools.cache
def expected_schema() -> tuple[SchemaObject, ...]:
    """``sqlite_master`` rows of a new ledger, by (type, name): made by SQLite itself
    from ``schema_script()`` in memory, so the comparison never drifts from the DDL."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.executescript(schema_script())
        rows = conn.execute(
            "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()
    return tuple((str(t), str(n), str(tb), None if q is None else str(q)) for t, n, tb, q in rows)


# The meta keys an SQLite ledger holds: those every ledger holds (``LEDGER_META_KEYS``).
META_KEYS = LEDGER_META_KEYS


def _storage_error(exc: sqlite3.Error, path: Path) -> Exception:
    text = str(exc)
    if "append-only" in text:
        return AppendOnlyError(text.removeprefix("provledger: "))
    if "readonly" in text or "read-only" in text:
        return StorageError(
            f"cannot write ledger {path}, got a read-only database, expected write access"
        )
    if "full" in text:
        return StorageError(f"cannot write ledger {path}, got '{text}', expected free space")
    if "locked" in text or "busy" in text:
        return StorageError(
            f"ledger {path} stayed locked, got no lock in {BUSY_TIMEOUT_S:.0f}s,"
            " expected another writer to finish"
        )
    if "no such table: kind_totals" in text:
        return StorageError(
            f"ledger {path} has no kind_totals table, got a {FORMAT} file made before it,"
            " expected the current layout; run `provledger migrate` on it once"
        )
    if "not a database" in text or "malformed" in text:
        return StorageError(
            f"cannot read ledger {path}, got '{text}', expected a provledger SQLite file"
        )
    return StorageError(f"database error on {path}, got '{text}', expected success")


BULK_CACHE_KIB = 65536  # SQLite page cache during ``bulk_session``
# WAL pages between automatic checkpoints during ``bulk_session`` (SQLite's default is
# 1,000: at 1M objects one batch's commit writes ~4,000 32 KiB pages, mostly leaves of
# the random-keyed indexes, so every commit checkpointed and copied them all into the
# file again). Fewer checkpoints copy a leaf rewritten by several batches once.
BULK_AUTOCHECKPOINT_PAGES = 16384


def _surrogate_text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


class SQLiteStore(SQLStore):
    """A ledger in one SQLite file. Use ``open_store`` or ``create_store``."""

    def __init__(
        self,
        path: Path,
        conn: sqlite3.Connection,
        policy: AdmissionPolicy | None = None,
        dry_run: bool = False,
    ) -> None:
        self.path = path
        self.location = SQLitePath(path)
        self._conn = conn
        self._second: SQLiteSnapshotReader | None = None  # set inside ``audit_session``
        # Inside ``bulk_session``: COMMITs run on a thread of their own (``_committer``),
        # the one pending is ``_commit``; see ``_settle``.
        self._bulk = False
        self._committer: ThreadPoolExecutor | None = None
        self._commit: Future[None] | None = None
        self._policy = policy
        self.dry_run = dry_run

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        with suppress(StorageError):  # closing: a failed last commit was rolled back
            self._settle()
        if self.dry_run and self._conn.in_transaction:
            self._conn.execute("ROLLBACK")
        self._conn.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection, for read-only audits (``verify``) and tests."""
        self._settle()
        return self._conn

    # -- commits in the background (``bulk_session``) -----------------------------------
    def _settle(self) -> None:
        """Wait for the COMMIT handed to the committer thread, if any; raise its error.

        Every use of the connection after a write starts here (``_write``, ``_q``,
        ``_execute``, ``snapshot``, ``connection``, ``close``): nothing reads or writes
        while a commit is under way, so the thread never shares the connection.
        """
        pending, self._commit = self._commit, None
        if pending is not None:
            pending.result()

    def _commit_now(self) -> None:
        """COMMIT (on the committer thread); on failure the transaction is rolled back
        and the error, as a storage error, is raised by the next ``_settle``."""
        conn = self._conn
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                with suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
            raise _storage_error(exc, self.path) from None

    def _hand_off_commit(self) -> None:
        """End the current write transaction on the committer thread.

        The COMMIT writes the batch's pages to the WAL, syncs it and, every
        ``BULK_AUTOCHECKPOINT_PAGES``, copies the WAL into the file; SQLite does that
        without the GIL, so the importer meanwhile takes the workers' next results
        instead of leaving them idle. The batch is in the ledger, or not at all, only
        once the commit ends: the next write, read or ``bulk_session``'s end waits for
        it (``_settle``) and raises its error.
        """
        if self._committer is None:
            # Made at the first commit: the import's workers are forked by then.
            self._committer = ThreadPoolExecutor(1, thread_name_prefix="provledger-commit")
        self._commit = self._committer.submit(self._commit_now)

    # -- transactions ----------------------------------------------------------------
    def _begin_immediate(self) -> None:
        # busy_timeout covers most waits; the loop also covers BUSY returned at once
        # (e.g. a WAL checkpoint in progress), so no "database is locked" escapes early.
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        delay = 0.005
        while True:
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction: ``BEGIN IMMEDIATE`` (one writer at a time), COMMIT when
        the block ends, ROLLBACK on any exception; SQLite errors become storage errors.

        A dry run holds one outer transaction for the store's whole life (so later
        batches see earlier ones) and wraps each write in a savepoint; ``close`` rolls
        the outer transaction back.
        """
        conn = self._conn
        try:
            self._settle()
            if self.dry_run:
                if not conn.in_transaction:
                    self._begin_immediate()
                conn.execute("SAVEPOINT batch")
            else:
                self._begin_immediate()
            try:
                yield
                if self.dry_run:
                    conn.execute("RELEASE batch")
                elif self._bulk:
                    self._hand_off_commit()
                else:
                    conn.execute("COMMIT")
            except BaseException:
                if self.dry_run:
                    conn.execute("ROLLBACK TO batch")
                    conn.execute("RELEASE batch")
                elif conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """One read transaction; inside a transaction already, that transaction's view."""
        self._settle()
        conn = self._conn
        if conn.in_transaction:
            yield
            return
        try:
            conn.execute("BEGIN")
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    # -- writing ---------------------------------------------------------------------
    def _insert_rows(self, rows: BatchRows) -> None:
        # One ``executemany`` per table: per-row statements dominated bulk imports.
        conn = self._conn
        conn.executemany(
            "INSERT INTO entries(seq, digest, kind, appended_at) VALUES (?,?,?,?)", rows.entries
        )
        conn.executemany(
            "INSERT INTO objects(digest, seq, kind, schema_version, object_id, object_version,"
            " legacy_digest, legacy_hints, data) VALUES (?,?,?,?,?,?,?,?,?)",
            rows.objects,
        )
        if rows.refs:
            conn.executemany(
                "INSERT INTO refs(from_digest, rel, to_digest) VALUES (?,?,?)", rows.refs
            )
        conn.executemany("INSERT INTO tree_nodes(level, idx, hash) VALUES (?,?,?)", rows.nodes)
        conn.executemany(ADD_TOTALS, rows.totals_rows())

    def _entries_for(self, digests: Sequence[str]) -> dict[str, Entry]:
        found: dict[str, Entry] = {}
        unique = list(dict.fromkeys(digests))
        for start in range(0, len(unique), 400):
            chunk = unique[start : start + 400]
            marks = ",".join("?" * len(chunk))
            for digest, seq, entry_digest, kind, appended_at in self._q(
                "SELECT o.digest, e.seq, e.digest, e.kind, e.appended_at FROM objects o"
                f" JOIN entries e ON e.seq = o.seq WHERE substr(o.digest, 8, 16) IN ({marks})"
                f" AND +o.digest IN ({marks})",
                [*map(digest_key, chunk), *chunk],
            ):
                # a row that disagrees with its entry is not "stored"
                if digest == entry_digest:
                    found[digest] = Entry(
                        seq=seq, digest=entry_digest, kind=kind, appended_at=appended_at
                    )
        return found

    def _ensure_cosignatures_table(self) -> None:
        if not self._has_table("cosignatures"):
            # A ledger made before cosignatures existed: add the table and its
            # append-only triggers in the caller's transaction.
            for statement in (_COSIGNATURES_DDL + _trigger_ddl(("cosignatures",))).split(";\n"):
                if statement.strip():
                    self._execute(statement)

    # -- reading ---------------------------------------------------------------------
    def _has_table(self, name: str) -> bool:
        rows = self._q("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return bool(rows)

    def _q(self, query: str, args: Sequence[SQLValue] = ()) -> list[SQLValue]:
        self._settle()
        try:
            return self._conn.execute(query, args).fetchall()
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def _execute(self, query: str, args: Sequence[SQLValue] = ()) -> int:
        self._settle()
        try:
            return self._conn.execute(query, args).rowcount
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def get(self, digest: str) -> StoredObject | None:
        key = digest_key(digest)
        found = None
        for obj in self._objects("WHERE substr(o.digest, 8, 16) = ?", (key,)):
            # The index holds short keys: rows whose digest only shares the key are
            # skipped. A row whose own digest (just checked against its bytes) has
            # another key was reached through a corrupted index (``writable_schema``).
            if digest_key(obj.digest) != key:
                raise self._mismatch(obj, "digest", obj.digest, digest)
            if obj.digest == digest and found is None:
                found = obj
        return found

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        key = digest_key(legacy)
        found = []
        for obj in self._objects(
            # IS NOT NULL lets SQLite use the partial index.
            "WHERE substr(o.legacy_digest, 8, 16) = ? AND o.legacy_digest IS NOT NULL"
            " ORDER BY o.seq",
            (key,),
        ):
            if obj.legacy_digest is None or digest_key(obj.legacy_digest) != key:
                raise self._mismatch(obj, "legacy digest", obj.legacy_digest, legacy)
            if obj.legacy_digest == legacy:
                found.append(obj)
        return found

    def ids_of(self, digests: Sequence[str]) -> dict[str, tuple[str | None, int | None]]:
        """(object id, object version) of each stored digest, in chunks of one query.

        Read from the bytes, not the index columns: each row is checked like any other
        read (``_checked``), so a forged ``object_id`` is refused, never listed.
        """
        out: dict[str, tuple[str | None, int | None]] = {}
        for start in range(0, len(digests), 400):
            chunk = list(digests[start : start + 400])
            marks = ",".join("?" * len(chunk))
            keys = [digest_key(d) for d in chunk]
            for obj in self._objects(f"WHERE substr(o.digest, 8, 16) IN ({marks})", tuple(keys)):
                if digest_key(obj.digest) not in keys:
                    raise self._mismatch(obj, "digest", obj.digest, "one of the digests asked")
                if obj.digest in chunk:
                    out[obj.digest] = (obj.object_id, obj.object_version)
        return out

    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Ledger digests of up to ``limit`` objects whose ledger or legacy digest starts
        with ``prefix`` (a ``sha256:`` + lowercase hex prefix), in digest order."""
        # Digests are ASCII hex: every string with the prefix sorts below prefix + "g",
        # and so does every index key (``digest_key``) of a digest with the prefix.
        if not prefix.startswith("sha256:"):
            return []
        bounds = (prefix, prefix + "g")
        key = digest_key(prefix)
        keys = (key, key + "g")
        found = [
            str(r[0])
            for r in self._q(
                "SELECT digest FROM objects WHERE substr(digest, 8, 16) >= ?"
                " AND substr(digest, 8, 16) < ? AND digest >= ? AND digest < ?"
                " UNION SELECT digest FROM objects WHERE substr(legacy_digest, 8, 16) >= ?"
                " AND substr(legacy_digest, 8, 16) < ? AND legacy_digest >= ?"
                " AND legacy_digest < ? ORDER BY 1 LIMIT ?",
                (*keys, *bounds, *keys, *bounds, limit),
            )
        ]
        return found

    def by_kind(self, kind: str) -> Iterator[StoredObject]:
        try:
            cur = self._conn.execute(f"{self._OBJ} WHERE o.kind = ? ORDER BY o.seq", (kind,))
            for row in cur:
                obj = self._checked(row)
                if obj.kind != kind:
                    raise self._mismatch(obj, "kind", obj.kind, kind)
                yield obj
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]:
        if since > INT64_MAX:
            return
        sql, args = entries_query("?", since, limit, kind)
        try:
            cur = self._conn.execute(sql, tuple(args))
            for seq, digest, kind, appended_at in cur:
                yield Entry(seq=seq, digest=digest, kind=kind, appended_at=appended_at)
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]:
        """References to ``digest``; each is checked against the referring object's bytes."""
        sql = (
            "SELECT from_digest, rel, to_digest FROM refs"
            " WHERE substr(to_digest, 8, 16) = ? AND +to_digest = ?"
        )
        if rel is None:
            # The order the former (to_digest, rel) index gave.
            rows = self._q(sql + " ORDER BY rel, rowid", (digest_key(digest), digest))
        else:
            rows = self._q(sql + " AND rel = ? ORDER BY rowid", (digest_key(digest), digest, rel))
        return self._checked_refs(digest, rows)

    def cosignatures(self, size: int) -> list[str]:
        """Witness signature lines stored for the checkpoint at ``size``, in arrival order."""
        if not 0 <= size <= INT64_MAX:
            return []
        try:
            rows = self._q("SELECT line FROM cosignatures WHERE size = ? ORDER BY rowid", (size,))
        except StorageError:
            if not self._has_table("cosignatures"):
                return []  # a ledger made before cosignatures existed
            raise
        return [str(line) for (line,) in rows]

    # -- streams for a full audit (``ledger.audit.full``) -------------------------------
    def log_rows(self, since: int = 0) -> Iterator[RawLogRow]:
        """Every entry from ``since`` on, in seq order, with its object row, columns as
        stored (untrusted)."""
        return sqlite_scan.log_rows(self._conn, since, _surrogate_text)

    def node_scan(self) -> NodeScan:
        return SQLiteNodeScan(self._conn)

    def ref_scan(self, resume: bool = False) -> RefScan:
        return SQLiteRefScan(self._conn, resume=resume, tolerant=_surrogate_text)

    # -- the rest of ``AuditSource``: SQLite's own checks (``sqlite_audit``) -------------
    format_name = FORMAT
    meta_keys: tuple[str, ...] = META_KEYS

    @contextmanager
    def audit_session(self) -> Iterator[None]:
        """One read transaction for the whole audit, TEXT read tolerantly
        (``tolerant_text``), and a second reader of exactly that snapshot
        (``second_reader``). Inside a transaction already: that transaction's view and
        no second reader.

        The second connection's snapshot is the same one when no other connection
        committed between the start of the audit's read transaction and the start of
        the second one's. ``PRAGMA data_version`` on the second connection, read before
        the audit's transaction starts and again inside its own, would differ if any
        had; both transactions' newest rows (``snapshot_mark``) must agree as well.
        Otherwise (or when the second connection cannot be opened) there is none.
        """
        with self.tolerant_text():
            conn = self._conn
            if conn.in_transaction:
                yield
                return
            side, version = self._second_connection() or (None, 0)
            try:
                conn.execute("BEGIN")
                try:
                    mark = sqlite_audit.snapshot_mark(conn)  # the snapshot starts here
                except sqlite3.Error:
                    mark = None
                if side is not None:
                    side = self._same_snapshot(side, version, mark)
                self._second = None if side is None else SQLiteSnapshotReader(side)
                yield
            finally:
                self._second = None
                if side is not None:
                    side.close()
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def _second_connection(self) -> tuple[sqlite3.Connection, int] | None:
        """A read-only connection and its ``data_version``, read before the audit's
        read transaction starts; or None."""
        try:
            side = _connect_readonly(self.path)
        except (sqlite3.Error, OSError):
            return None
        try:
            side.text_factory = self._conn.text_factory
            version = sqlite_audit.data_version(side)
        except sqlite3.Error:
            side.close()
            return None
        return side, version

    def _same_snapshot(
        self, side: sqlite3.Connection, version: int, mark: tuple[object, ...] | None
    ) -> sqlite3.Connection | None:
        """``side`` with a read transaction open at the audit's snapshot, or None (closed);
        ``version``: its ``data_version`` before the audit's transaction started."""
        try:
            side.execute("BEGIN")
            same = (
                mark is not None
                and sqlite_audit.snapshot_mark(side) == mark
                and sqlite_audit.data_version(side) == version
            )
        except sqlite3.Error:
            same = False
        if same:
            return side
        side.close()
        return None

    def second_reader(self) -> SnapshotReader | None:
        return self._second

    def storage_findings(self, whole: bool = True) -> list[StorageFinding]:
        """Exact schema (tables, indexes, views, triggers); with ``whole``, also
        ``integrity_check`` (it reads the whole file)."""
        found = sqlite_audit.schema_findings(self._conn, expected_schema())
        return found + sqlite_audit.integrity_findings(self._conn) if whole else found

    def meta_rows(self) -> list[tuple[object, object]]:
        return sqlite_audit.meta_rows(self._conn)

    def raw_checkpoints(self) -> list[tuple[object, object, object, object]]:
        return sqlite_audit.raw_checkpoints(self._conn)

    def tree_node_count(self) -> int:
        return sqlite_audit.tree_node_count(self._conn)

    def tree_nodes_outside(self, size: int, limit: int) -> list[tuple[object, object]]:
        return sqlite_audit.tree_nodes_outside(self._conn, size, limit)

    def tree_nodes_past(self, size: int, limit: int) -> list[tuple[int, object]]:
        return sqlite_audit.tree_nodes_past(self._conn, size, limit)

    def orphan_objects(self, start: int = 0) -> list[tuple[object, object]]:
        return sqlite_audit.orphan_objects(self._conn, start)

    def duplicate_objects(self, start: int = 0, limit: int = 100) -> list[tuple[object, object]]:
        return sqlite_audit.duplicate_objects(self._conn, start, limit)

    def ref_count(self) -> int:
        return sqlite_audit.ref_count(self._conn)

    def refs_with_objects(self) -> Iterator[tuple[object, ...]]:
        return sqlite_audit.refs_with_objects(self._conn)

    @contextmanager
    def tolerant_text(self) -> Iterator[None]:
        """Read TEXT that is not valid UTF-8 as surrogate-escaped ``str``, not an error.

        Hand-edited files may hold such bytes; an audit keeps them visible (lone
        surrogates then fail every comparison) instead of aborting.
        """
        saved = self._conn.text_factory
        self._conn.text_factory = _surrogate_text
        try:
            yield
        finally:
            self._conn.text_factory = saved

    @contextmanager
    def bulk_session(self) -> Iterator[None]:
        """A larger page cache while importing, fewer WAL checkpoints, commits in the
        background (``_hand_off_commit``), and a WAL checkpoint after.

        The random-keyed indexes (digest, legacy digest, reference target) touch a new
        page for almost every insert; a 64 MB cache keeps the upper levels and recent
        leaves in memory. The final checkpoint (bounded wait) leaves a small WAL behind.
        Every commit is over when the session ends (its error raised, unless the
        session ends with an error of its own).
        """
        conn = self._conn
        self._settle()
        (old_cache,) = conn.execute("PRAGMA cache_size").fetchone()
        (old_autocheckpoint,) = conn.execute("PRAGMA wal_autocheckpoint").fetchone()
        conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {BULK_AUTOCHECKPOINT_PAGES}")
        self._bulk = not self.dry_run
        failed = True
        try:
            yield
            failed = False
        finally:
            self._bulk = False
            committer, self._committer = self._committer, None
            try:
                if failed:
                    with suppress(StorageError):  # the session's own error wins
                        self._settle()
                else:
                    self._settle()
            finally:
                if committer is not None:
                    committer.shutdown(wait=True)
                self._end_bulk(int(old_cache), int(old_autocheckpoint))

    def _end_bulk(self, old_cache: int, old_autocheckpoint: int) -> None:
        conn = self._conn
        conn.execute(f"PRAGMA cache_size = {old_cache}")
        conn.execute(f"PRAGMA wal_autocheckpoint = {old_autocheckpoint}")
        try:
            conn.execute("PRAGMA busy_timeout = 200")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        except sqlite3.Error:
            pass  # readers or another writer: the next checkpoint will do
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")


def _connect(path: Path, max_page_count: int | None = None) -> sqlite3.Connection:
    # Bytes, not str: a file name that is not UTF-8 still names exactly that file.
    conn = sqlite3.connect(
        os.fsencode(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    if max_page_count is not None:
        conn.execute(f"PRAGMA max_page_count = {int(max_page_count)}")
    return conn


def _readonly_uri(path: Path, immutable: bool = False) -> str:
    # Percent-encode the path: a raw '?' or '#' in a file name would end the URI path,
    # and SQLite would open (and create) a different file.
    uri = "file:" + urllib.parse.quote(os.fsencode(path.absolute())) + "?mode=ro"
    return uri + "&immutable=1" if immutable else uri


def _connect_readonly(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        _readonly_uri(path), uri=True, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        # A WAL ledger in a directory we may not write: SQLite cannot create the -shm
        # index. Without a -wal file nothing committed lives outside the main file and no
        # writer can start there, so reading the file as immutable sees the whole ledger.
        wal = Path(os.fspath(path) + "-wal")
        if getattr(exc, "sqlite_errorname", "") != "SQLITE_READONLY_DIRECTORY" or (
            wal.exists() and wal.stat().st_size > 0
        ):
            conn.close()
            raise
        conn.close()
        conn = sqlite3.connect(
            _readonly_uri(path, immutable=True),
            uri=True,
            isolation_level=None,
            check_same_thread=False,
        )
    return conn


def create_store(path: Path) -> SQLiteStore:
    """Create (or open and upgrade nothing in) a ledger file with tables and triggers."""
    require_regular(path, "ledger")
    try:
        conn = _connect(path)
        # Objects are 1-13 KB: 4 KB pages left ~20% of each page empty and pushed larger
        # rows to overflow chains (ledger 1.59x the canonical bytes, 1.44x with 32 KB).
        # Only takes effect on a new, empty file.
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.executescript("BEGIN IMMEDIATE;" + schema_script() + "COMMIT;")
        store = SQLiteStore(path, conn)
        store.set_meta("format", FORMAT)
        return store
    except sqlite3.Error as exc:
        raise _storage_error(exc, path) from None


def open_store(
    path: Path,
    *,
    readonly: bool = False,
    max_page_count: int | None = None,
    policy: AdmissionPolicy | None = None,
    dry_run: bool = False,
) -> SQLiteStore:
    """Open an existing ledger; a missing file or a non-ledger file is an error.

    ``max_page_count`` caps the file's size for writes (``PRAGMA max_page_count``): a
    write past it fails as a full disk would. ``policy``: the admission policy (default:
    the package's, ``ledger.trust.admission.default_policy``); ``dry_run`` rolls every
    append back.
    """
    if not path.exists():
        raise NotFound(
            f"ledger not found, got no file at {shown(path)},"
            " expected one made by `provledger init`"
        )
    # A FIFO would block SQLite's first read forever; a device or directory is no ledger.
    require_regular(path, "ledger")
    try:
        if readonly:
            conn = _connect_readonly(path)
        else:
            conn = _connect(path, max_page_count)
            conn.execute("PRAGMA synchronous = FULL")
        store = SQLiteStore(path, conn, policy, dry_run)
        fmt = store.get_meta("format")
        if fmt is None:
            raise StorageError(
                f"not a provledger ledger, got no format record in {path},"
                " expected a file made by `provledger init`"
            )
        if fmt in OLD_FORMATS:
            conn.close()
            raise StorageError(
                f"ledger {path} has an earlier layout, got format {fmt}, expected"
                f" {FORMAT}; run `provledger migrate` on it once (docs/PERFORMANCE.md)"
            )
        return store
    except sqlite3.Error as exc:
        raise _storage_error(exc, path) from None


def _statements(script: str) -> Iterator[str]:
    """The statements of a DDL script, one by one (``executescript`` would COMMIT first)."""
    pending = ""
    for line in script.splitlines(keepends=True):
        pending += line
        if sqlite3.complete_statement(pending):
            yield pending.strip()
            pending = ""
    if pending.strip():
        yield pending.strip()


def migrate_store(path: Path) -> str | None:
    """Bring a ledger of an earlier layout to the current one, in one transaction.

    Format 1 kept ``objects.digest`` as the primary key and indexed full digests; format 2
    indexes short keys (``digest_key``) and keeps per-kind totals (``kind_totals``,
    computed here from the rows). Only the ``objects`` table, the indexes and the totals
    change: entries, tree nodes, checkpoints, references and every stored byte are
    kept as they are, so roots and proofs are unchanged. The append-only triggers are
    lifted for this transaction only (a crash leaves the old ledger, untouched).
    Returns the format migrated from, or None when the ledger is already current.
    """
    if not path.exists():
        raise NotFound(f"ledger not found, got no file at {path}, expected a ledger file")
    try:
        conn = _connect(path)
    except sqlite3.Error as exc:
        raise _storage_error(exc, path) from None
    store = SQLiteStore(path, conn)
    try:
        with store:
            store._begin_immediate()
            try:
                fmt = store.get_meta("format")
                if fmt == FORMAT and store._has_table("kind_totals"):
                    conn.execute("ROLLBACK")
                    return None
                if fmt == FORMAT:
                    # A format-2 file made before the totals table (an unreleased
                    # layout): add it, its triggers and its rows from the log.
                    for statement in _statements(schema_script()):
                        conn.execute(statement)
                    conn.execute(_DERIVE_TOTALS)
                    conn.execute("COMMIT")
                    return fmt
                if fmt not in OLD_FORMATS:
                    raise StorageError(
                        f"cannot migrate {path}, got format {fmt!r},"
                        f" expected one of {', '.join(OLD_FORMATS)}"
                    )
                for table in ("objects", "meta"):
                    for op in ("update", "delete"):
                        conn.execute(f"DROP TRIGGER IF EXISTS {table}_no_{op}")
                for index in ("objects_by_id", "objects_by_legacy", "objects_by_kind", "refs_to"):
                    conn.execute(f"DROP INDEX IF EXISTS {index}")
                # A view over objects would follow the rename and then dangle; the
                # script below makes it again over the new table.
                for view in READABLE_VIEWS:
                    conn.execute(f"DROP VIEW IF EXISTS {view}")
                conn.execute("ALTER TABLE objects RENAME TO objects_old")
                # Format 1 had no totals; any such table is made again from the rows.
                conn.execute("DROP TABLE IF EXISTS kind_totals")
                # Every CREATE is IF NOT EXISTS: this makes the new objects table, its
                # indexes and the lifted triggers exactly as a new ledger has them.
                for statement in _statements(schema_script()):
                    conn.execute(statement)
                conn.execute(
                    "INSERT INTO objects(digest, seq, kind, schema_version, object_id,"
                    " object_version, legacy_digest, legacy_hints, data)"
                    " SELECT digest, seq, kind, schema_version, object_id, object_version,"
                    " legacy_digest, legacy_hints, data FROM objects_old ORDER BY seq"
                )
                conn.execute("DROP TABLE objects_old")
                conn.execute(_DERIVE_TOTALS)
                conn.execute("DROP TRIGGER meta_no_update")
                conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (FORMAT,))
                for statement in _statements(_trigger_ddl()):
                    conn.execute(statement)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
    except sqlite3.Error as exc:
        raise _storage_error(exc, path) from None
    return fmt
