"""SQLite implementation of the ``Store`` protocol.

One file, WAL mode. Every append runs inside ``BEGIN IMMEDIATE`` (one writer at a
time, readers never blocked) with a busy timeout, so several processes may append at
once. Triggers make every ledger table append-only inside the database itself.
"""

from __future__ import annotations

import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ledger.errors import AppendOnlyError, NotFound, RuleViolation, StorageError
from ledger.log.leaf import entry_record, utc_now
from ledger.log.merkle import leaf_hash, node_hash
from ledger.store.base import AppendResult, CheckpointRow, Entry, Precheck, StoredObject
from ledger.store.prepared import Prepared

SCHEMA_VERSION = "1"
LEDGER_TABLES = (
    "meta",
    "objects",
    "entries",
    "refs",
    "tree_nodes",
    "checkpoints",
    "cosignatures",
)
BUSY_TIMEOUT_S = 60.0
PAGE_SIZE = 32768  # for new ledgers (see create_store)
# Largest value an SQLite INTEGER holds; user numbers beyond it can match nothing.
INT64_MAX = 2**63 - 1
# Testing knob: cap the database size (``PRAGMA max_page_count``) to simulate a full
# disk. Unset in normal use.
MAX_PAGE_COUNT_ENV = "PROVLEDGER_MAX_PAGE_COUNT"

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
  digest TEXT PRIMARY KEY,
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
CREATE INDEX IF NOT EXISTS objects_by_legacy ON objects(legacy_digest)
  WHERE legacy_digest IS NOT NULL;
CREATE INDEX IF NOT EXISTS objects_by_kind ON objects(kind);
CREATE TABLE IF NOT EXISTS refs (
  from_digest TEXT NOT NULL,
  rel TEXT NOT NULL,
  to_digest TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS refs_to ON refs(to_digest, rel);
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


def trigger_names() -> list[str]:
    """Names of the append-only triggers every ledger must have."""
    return [f"{t}_no_{op}" for t in LEDGER_TABLES for op in ("update", "delete")]


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
    if "not a database" in text or "malformed" in text:
        return StorageError(
            f"cannot read ledger {path}, got '{text}', expected a provledger SQLite file"
        )
    return StorageError(f"database error on {path}, got '{text}', expected success")


class SQLiteStore:
    """A ledger in one SQLite file. Use ``open_store`` or ``create_store``."""

    def __init__(self, path: Path, conn: sqlite3.Connection) -> None:
        self.path = path
        self._conn = conn

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> SQLiteStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> sqlite3.Connection:
        """The raw connection, for read-only audits (``verify``) and tests."""
        return self._conn

    # -- writing ---------------------------------------------------------------------
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

    def append_many(
        self, items: Sequence[Prepared], precheck: Precheck | None = None
    ) -> list[AppendResult]:
        """Append all items in one transaction; ``precheck`` runs inside the lock."""
        try:
            self._begin_immediate()
            try:
                if precheck is not None:
                    precheck(self)
                results = self._append_batch(items)
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None
        return results

    def append_copies(self, items: Sequence[Prepared], stamps: Sequence[str], first: int) -> None:
        """Append entries copied from another ledger: their own ``appended_at``, at ``first``.

        Refused unless the log has exactly ``first`` entries and none of ``items`` is
        stored, so a copy never interleaves with another writer.
        """
        try:
            self._begin_immediate()
            try:
                size = self.size()
                if size != first:
                    raise RuleViolation(
                        f"copy destination changed, got {size} entries, expected {first}"
                    )
                results = self._append_batch(items, stamps)
                if not all(r.new for r in results):
                    raise RuleViolation(
                        "copy destination already holds an object being copied, got a"
                        " duplicate, expected a prefix of the source"
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def _append_one(self, item: Prepared) -> AppendResult:
        return self._append_batch([item])[0]

    def _append_batch(
        self, items: Sequence[Prepared], stamps: Sequence[str] | None = None
    ) -> list[AppendResult]:
        """Insert the new items in order; inside the caller's transaction.

        Same rows as appending one by one (an object already stored, or seen earlier
        in the batch, gets its existing entry back with ``new=False``), written with
        one ``executemany`` per table: per-row statements dominated bulk imports.
        """
        known = self._entries_for([item.digest for item in items])
        seq = self.size()
        entries: list[tuple[Any, ...]] = []
        objects: list[tuple[Any, ...]] = []
        refs: list[tuple[str, str, str]] = []
        nodes: list[tuple[int, int, bytes]] = []
        written: dict[tuple[int, int], bytes] = {}
        results: list[AppendResult] = []
        for i, item in enumerate(items):
            entry = known.get(item.digest)
            if entry is not None:
                results.append(AppendResult(entry, new=False))
                continue
            appended_at = stamps[i] if stamps is not None else utc_now()
            entry = Entry(seq, item.digest, item.kind, appended_at)
            known[item.digest] = entry
            entries.append((seq, item.digest, item.kind, appended_at))
            objects.append(
                (
                    item.digest,
                    seq,
                    item.kind,
                    item.schema_version,
                    item.object_id,
                    item.object_version,
                    item.legacy_digest,
                    item.legacy_hints,
                    item.data,
                )
            )
            refs.extend((item.digest, rel, target) for rel, target in item.refs)
            # The leaf, then every complete subtree it closes: O(log n) hashing.
            level, idx = 0, seq
            value = leaf_hash(entry_record(seq, item.kind, item.digest, appended_at))
            nodes.append((0, idx, value))
            written[(0, idx)] = value
            while idx & 1:
                left = written.get((level, idx - 1)) or self.node(level, idx - 1)
                value = node_hash(left, value)
                level, idx = level + 1, idx >> 1
                nodes.append((level, idx, value))
                written[(level, idx)] = value
            results.append(AppendResult(entry, new=True))
            seq += 1
        conn = self._conn
        conn.executemany(
            "INSERT INTO entries(seq, digest, kind, appended_at) VALUES (?,?,?,?)", entries
        )
        conn.executemany(
            "INSERT INTO objects(digest, seq, kind, schema_version, object_id, object_version,"
            " legacy_digest, legacy_hints, data) VALUES (?,?,?,?,?,?,?,?,?)",
            objects,
        )
        if refs:
            conn.executemany("INSERT INTO refs(from_digest, rel, to_digest) VALUES (?,?,?)", refs)
        conn.executemany("INSERT INTO tree_nodes(level, idx, hash) VALUES (?,?,?)", nodes)
        return results

    def _entries_for(self, digests: Sequence[str]) -> dict[str, Entry]:
        """Entries of the already-stored objects among ``digests``."""
        found: dict[str, Entry] = {}
        unique = list(dict.fromkeys(digests))
        for start in range(0, len(unique), 500):
            chunk = unique[start : start + 500]
            marks = ",".join("?" * len(chunk))
            for digest, *row in self._conn.execute(
                "SELECT o.digest, e.seq, e.digest, e.kind, e.appended_at FROM objects o"
                f" JOIN entries e ON e.seq = o.seq WHERE o.digest IN ({marks})",
                chunk,
            ):
                found[digest] = Entry(*row)
        return found

    def add_checkpoint(self, row: CheckpointRow) -> None:
        """Store a signed tree head; a second, different root for a size is refused."""
        try:
            self._begin_immediate()
            try:
                existing = self.checkpoint_at(row.size)
                if existing is not None:
                    if existing.root != row.root:
                        raise AppendOnlyError(
                            f"checkpoint for size {row.size} exists, got root"
                            f" {row.root.hex()}, expected {existing.root.hex()}"
                        )
                else:
                    self._conn.execute(
                        "INSERT INTO checkpoints(size, root, note, created_at) VALUES (?,?,?,?)",
                        (row.size, row.root, row.note, row.created_at),
                    )
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def add_cosignatures(self, size: int, lines: Sequence[str]) -> int:
        """Store witness signature lines for the checkpoint at ``size``; return how many
        were new. Lines are kept verbatim (self-authenticating: checked against trusted
        witness keys when read); the checkpoint must exist."""
        try:
            self._begin_immediate()
            try:
                if not self._has_table("cosignatures"):
                    # A ledger made before cosignatures existed: add the table and its
                    # append-only triggers in this same transaction.
                    for statement in (_COSIGNATURES_DDL + _trigger_ddl(("cosignatures",))).split(
                        ";\n"
                    ):
                        if statement.strip():
                            self._conn.execute(statement)
                if self.checkpoint_at(size) is None:
                    raise NotFound(f"checkpoint, got none at size {size}, expected a stored one")
                added = 0
                stamp = utc_now()
                for line in dict.fromkeys(lines):
                    cur = self._conn.execute(
                        "INSERT OR IGNORE INTO cosignatures(size, line, added_at) VALUES (?,?,?)",
                        (size, line, stamp),
                    )
                    added += cur.rowcount
                self._conn.execute("COMMIT")
                return added
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def set_meta(self, key: str, value: str) -> None:
        """Record a meta value once; a different value for a set key is refused."""
        current = self.get_meta(key)
        if current == value:
            return
        if current is not None:
            raise AppendOnlyError(f"meta {key} already set, got {value!r}, expected {current!r}")
        try:
            with self._conn:
                self._conn.execute("INSERT INTO meta(key, value) VALUES (?,?)", (key, value))
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    # -- reading ---------------------------------------------------------------------
    def _has_table(self, name: str) -> bool:
        rows = self._q("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,))
        return bool(rows)

    def _q(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        try:
            return self._conn.execute(sql, args).fetchall()
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def size(self) -> int:
        row = self._q("SELECT max(seq) FROM entries")[0]
        return 0 if row[0] is None else int(row[0]) + 1

    _OBJ = (
        "SELECT digest, seq, kind, schema_version, object_id, object_version, legacy_digest,"
        " legacy_hints, data FROM objects"
    )

    def get(self, digest: str) -> StoredObject | None:
        rows = self._q(f"{self._OBJ} WHERE digest = ?", (digest,))
        return StoredObject(*rows[0]) if rows else None

    def get_by_seq(self, seq: int) -> StoredObject | None:
        rows = self._q(f"{self._OBJ} WHERE seq = ?", (seq,))
        return StoredObject(*rows[0]) if rows else None

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        return [
            StoredObject(*r)
            for r in self._q(f"{self._OBJ} WHERE legacy_digest = ? ORDER BY seq", (legacy,))
        ]

    def ids_of(self, digests: Sequence[str]) -> dict[str, tuple[str | None, int | None]]:
        """(object id, object version) of each stored digest, in chunks of one query."""
        out: dict[str, tuple[str | None, int | None]] = {}
        for start in range(0, len(digests), 500):
            chunk = list(digests[start : start + 500])
            marks = ",".join("?" * len(chunk))
            for digest, oid, version in self._q(
                f"SELECT digest, object_id, object_version FROM objects WHERE digest IN ({marks})",
                tuple(chunk),
            ):
                out[str(digest)] = (oid, version)
        return out

    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Ledger digests of up to ``limit`` objects whose ledger or legacy digest starts
        with ``prefix`` (a ``sha256:`` + lowercase hex prefix), in digest order."""
        # Digests are ASCII hex: every string with the prefix sorts below prefix + "g".
        bounds = (prefix, prefix + "g")
        found = [
            str(r[0])
            for r in self._q(
                "SELECT digest FROM objects WHERE digest >= ? AND digest < ?"
                " UNION SELECT digest FROM objects WHERE legacy_digest >= ? AND legacy_digest < ?"
                " ORDER BY 1 LIMIT ?",
                (*bounds, *bounds, limit),
            )
        ]
        return found

    def by_id(
        self, object_id: str, version: int | None = None, kind: str | None = None
    ) -> list[StoredObject]:
        if version is not None and not 0 <= version <= INT64_MAX:
            return []
        sql = f"{self._OBJ} WHERE object_id = ?"
        args: list[Any] = [object_id]
        if version is not None:
            sql += " AND object_version = ?"
            args.append(version)
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        return [StoredObject(*r) for r in self._q(sql + " ORDER BY seq", tuple(args))]

    def by_kind(self, kind: str) -> Iterator[StoredObject]:
        cur = self._conn.execute(f"{self._OBJ} WHERE kind = ? ORDER BY seq", (kind,))
        for row in cur:
            yield StoredObject(*row)

    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]:
        if since > INT64_MAX:
            return
        if limit is not None:
            limit = min(limit, INT64_MAX)
        sql = "SELECT seq, digest, kind, appended_at FROM entries WHERE seq >= ?"
        args: list[Any] = [since]
        if kind is not None:
            sql += " AND kind = ?"
            args.append(kind)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        try:
            cur = self._conn.execute(sql, tuple(args))
            for row in cur:
                yield Entry(*row)
        except sqlite3.Error as exc:
            raise _storage_error(exc, self.path) from None

    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]:
        if rel is None:
            rows = self._q("SELECT from_digest, rel FROM refs WHERE to_digest = ?", (digest,))
        else:
            rows = self._q(
                "SELECT from_digest, rel FROM refs WHERE to_digest = ? AND rel = ?", (digest, rel)
            )
        return [(str(a), str(b)) for a, b in rows]

    def counts(self) -> dict[str, int]:
        return {
            str(k): int(n)
            for k, n in self._q("SELECT kind, count(*) FROM entries GROUP BY kind ORDER BY kind")
        }

    def node(self, level: int, index: int) -> bytes:
        rows = self._q("SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, index))
        if not rows:
            raise NotFound(
                f"tree node missing, got no node at level {level} index {index},"
                " expected a complete subtree hash"
            )
        return bytes(rows[0][0])

    def get_meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    def checkpoints(self) -> list[CheckpointRow]:
        return [
            CheckpointRow(int(s), bytes(r), bytes(n), str(c))
            for s, r, n, c in self._q(
                "SELECT size, root, note, created_at FROM checkpoints ORDER BY size"
            )
        ]

    def cosignatures(self, size: int) -> list[str]:
        """Witness signature lines stored for the checkpoint at ``size``, in arrival order."""
        try:
            rows = self._q("SELECT line FROM cosignatures WHERE size = ? ORDER BY rowid", (size,))
        except StorageError:
            if not self._has_table("cosignatures"):
                return []  # a ledger made before cosignatures existed
            raise
        return [str(line) for (line,) in rows]

    def checkpoint_at(self, size: int) -> CheckpointRow | None:
        rows = self._q(
            "SELECT size, root, note, created_at FROM checkpoints WHERE size = ?", (size,)
        )
        if not rows:
            return None
        s, r, n, c = rows[0]
        return CheckpointRow(int(s), bytes(r), bytes(n), str(c))


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(
        str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
    cap = os.environ.get(MAX_PAGE_COUNT_ENV)
    if cap is not None:
        if not (cap.isascii() and cap.isdigit() and int(cap) > 0):
            conn.close()
            raise StorageError(
                f"{MAX_PAGE_COUNT_ENV}, got {cap!r}, expected a positive number of pages"
            )
        conn.execute(f"PRAGMA max_page_count = {int(cap)}")
    return conn


def _readonly_uri(path: Path, immutable: bool = False) -> str:
    # Percent-encode the path: a raw '?' or '#' in a file name would end the URI path,
    # and SQLite would open (and create) a different file.
    uri = "file:" + urllib.parse.quote(os.fspath(path.absolute())) + "?mode=ro"
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
    try:
        conn = _connect(path)
        # Objects are 1-13 KB: 4 KB pages left ~20% of each page empty and pushed larger
        # rows to overflow chains (ledger 1.59x the canonical bytes, 1.44x with 32 KB).
        # Only takes effect on a new, empty file.
        conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL")
        conn.executescript(
            "BEGIN IMMEDIATE;" + _DDL + _COSIGNATURES_DDL + _trigger_ddl() + "COMMIT;"
        )
        store = SQLiteStore(path, conn)
        store.set_meta("format", f"provledger-sqlite/{SCHEMA_VERSION}")
        return store
    except sqlite3.Error as exc:
        raise _storage_error(exc, path) from None


def open_store(path: Path, *, readonly: bool = False) -> SQLiteStore:
    """Open an existing ledger; a missing file or a non-ledger file is an error."""
    if not path.exists():
        raise NotFound(
            f"ledger not found, got no file at {path}, expected one made by `provledger init`"
        )
    try:
        if readonly:
            conn = _connect_readonly(path)
        else:
            conn = _connect(path)
            conn.execute("PRAGMA synchronous = FULL")
        store = SQLiteStore(path, conn)
        if store.get_meta("format") is None:
            raise StorageError(
                f"not a provledger ledger, got no format record in {path},"
                " expected a file made by `provledger init`"
            )
        return store
    except sqlite3.Error as exc:
        raise _storage_error(exc, path) from None
