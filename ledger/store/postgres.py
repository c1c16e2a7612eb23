"""PostgreSQL implementation of the ``Store`` protocol (optional: ``provledger[postgres]``).

The same tables as the SQLite backend, in the same meaning: ``objects.data`` holds the
canonical bytes (``bytea``), ``entries.seq`` is the Merkle leaf index, ``tree_nodes``
holds every complete subtree hash, ``checkpoints`` the signed notes.

Many writers, on many hosts: each ``append_many`` is one transaction that takes
``pg_advisory_xact_lock(TAIL_LOCK)`` before it reads the log's size, so batches are
appended one after another with contiguous sequence numbers. Everything else
(parsing, validation, canonical bytes, digests) happens before, in the client, outside
the lock. A connection lost mid-batch rolls the whole transaction back.

Append-only is the server's rule: triggers refuse UPDATE, DELETE and TRUNCATE on every
ledger table, and ``init`` creates a writer role (INSERT, SELECT) and an auditor role
(SELECT) when the connecting user may create roles. ``schema_problems`` is what
``verify`` checks of all that.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ledger.errors import AppendOnlyError, NotFound, RuleViolation, StorageError
from ledger.log.leaf import entry_record, utc_now
from ledger.log.merkle import leaf_hash, node_hash
from ledger.store.base import AppendResult, CheckpointRow, Entry, Precheck, StoredObject
from ledger.store.location import DatabaseURL, redact
from ledger.store.prepared import Prepared

try:
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

SCHEMA_VERSION = "1"
FORMAT = f"provledger-postgres/{SCHEMA_VERSION}"
LEDGER_TABLES = (
    "meta",
    "objects",
    "entries",
    "refs",
    "tree_nodes",
    "checkpoints",
    "cosignatures",
)
# One advisory lock per database serialises the log's tail: the first 8 bytes of
# sha256("provledger log tail") as a signed bigint.
TAIL_LOCK = int.from_bytes(hashlib.sha256(b"provledger log tail").digest()[:8], "big", signed=True)
INSTALL_HINT = "pip install 'provledger[postgres]'"
_PAGE = 2000  # rows per round trip when streaming

_DDL = """
CREATE TABLE meta (
  key TEXT COLLATE "C" PRIMARY KEY,
  value TEXT COLLATE "C" NOT NULL
);
CREATE TABLE entries (
  seq BIGINT PRIMARY KEY CHECK (seq >= 0),
  digest TEXT COLLATE "C" NOT NULL,
  kind TEXT COLLATE "C" NOT NULL,
  appended_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE objects (
  digest TEXT COLLATE "C" PRIMARY KEY,
  seq BIGINT NOT NULL UNIQUE,
  kind TEXT COLLATE "C" NOT NULL,
  schema_version TEXT COLLATE "C",
  object_id TEXT COLLATE "C",
  object_version BIGINT,
  legacy_digest TEXT COLLATE "C",
  legacy_hints TEXT COLLATE "C",
  data BYTEA NOT NULL
);
CREATE INDEX objects_by_id ON objects(object_id, object_version) WHERE object_id IS NOT NULL;
CREATE INDEX objects_by_legacy ON objects(legacy_digest) WHERE legacy_digest IS NOT NULL;
CREATE INDEX objects_by_kind ON objects(kind, seq);
CREATE TABLE refs (
  pos BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  from_digest TEXT COLLATE "C" NOT NULL,
  rel TEXT COLLATE "C" NOT NULL,
  to_digest TEXT COLLATE "C" NOT NULL
);
CREATE INDEX refs_to ON refs(to_digest, rel);
CREATE TABLE tree_nodes (
  level INTEGER NOT NULL,
  idx BIGINT NOT NULL,
  hash BYTEA NOT NULL,
  PRIMARY KEY (level, idx)
);
CREATE TABLE checkpoints (
  size BIGINT PRIMARY KEY,
  root BYTEA NOT NULL,
  note BYTEA NOT NULL,
  created_at TEXT COLLATE "C" NOT NULL
);
CREATE TABLE cosignatures (
  pos BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
  size BIGINT NOT NULL,
  line TEXT COLLATE "C" NOT NULL,
  added_at TEXT COLLATE "C" NOT NULL,
  PRIMARY KEY (size, line)
);
"""

# The exact columns ``_DDL`` creates: (table, column) -> (type, nullable). ``verify``
# reports any difference (an added, dropped or retyped column) as ``schema-altered``.
EXPECTED_COLUMNS: dict[tuple[str, str], tuple[str, bool]] = {
    ("meta", "key"): ("text", False),
    ("meta", "value"): ("text", False),
    ("entries", "seq"): ("bigint", False),
    ("entries", "digest"): ("text", False),
    ("entries", "kind"): ("text", False),
    ("entries", "appended_at"): ("text", False),
    ("objects", "digest"): ("text", False),
    ("objects", "seq"): ("bigint", False),
    ("objects", "kind"): ("text", False),
    ("objects", "schema_version"): ("text", True),
    ("objects", "object_id"): ("text", True),
    ("objects", "object_version"): ("bigint", True),
    ("objects", "legacy_digest"): ("text", True),
    ("objects", "legacy_hints"): ("text", True),
    ("objects", "data"): ("bytea", False),
    ("refs", "pos"): ("bigint", False),
    ("refs", "from_digest"): ("text", False),
    ("refs", "rel"): ("text", False),
    ("refs", "to_digest"): ("text", False),
    ("tree_nodes", "level"): ("integer", False),
    ("tree_nodes", "idx"): ("bigint", False),
    ("tree_nodes", "hash"): ("bytea", False),
    ("checkpoints", "size"): ("bigint", False),
    ("checkpoints", "root"): ("bytea", False),
    ("checkpoints", "note"): ("bytea", False),
    ("checkpoints", "created_at"): ("text", False),
    ("cosignatures", "pos"): ("bigint", False),
    ("cosignatures", "size"): ("bigint", False),
    ("cosignatures", "line"): ("text", False),
    ("cosignatures", "added_at"): ("text", False),
}
# Unique indexes the append path relies on (one entry per seq, one object per digest...).
EXPECTED_UNIQUE = {
    ("meta", "key"),
    ("entries", "seq"),
    ("objects", "digest"),
    ("objects", "seq"),
    ("refs", "pos"),
    ("tree_nodes", "level,idx"),
    ("checkpoints", "size"),
    ("cosignatures", "pos"),
    ("cosignatures", "size,line"),
}

GUARD_FUNCTION = "provledger_append_only"
_GUARD_BODY = (
    "BEGIN RAISE EXCEPTION 'provledger: the ledger is append-only, % on % refused',"
    " TG_OP, TG_TABLE_NAME; END"
)
_GUARD_DDL = (
    f"CREATE FUNCTION {GUARD_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS"
    f" $guard${_GUARD_BODY}$guard$"
)


def trigger_names() -> list[tuple[str, str, str]]:
    """(table, trigger name, operation) of every append-only trigger a ledger must have."""
    return [
        (t, f"{t}_no_{op.lower()}", op)
        for t in LEDGER_TABLES
        for op in ("UPDATE", "DELETE", "TRUNCATE")
    ]


def _trigger_ddl() -> list[str]:
    out = []
    for table, name, op in trigger_names():
        each = "STATEMENT" if op == "TRUNCATE" else "ROW"
        out.append(
            f"CREATE TRIGGER {name} BEFORE {op} ON {table}"
            f" FOR EACH {each} EXECUTE FUNCTION {GUARD_FUNCTION}()"
        )
    return out


def default_roles(dbname: str) -> tuple[str, str]:
    """Names of the writer and auditor roles ``init`` creates for database ``dbname``."""
    return f"{dbname}_writer", f"{dbname}_auditor"


WRITER_PRIVILEGES = frozenset({"INSERT", "SELECT"})
AUDITOR_PRIVILEGES = frozenset({"SELECT"})
_ALL_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")


def grant_statements(writer: str, auditor: str) -> list[str]:
    """The SQL that gives the two roles exactly their rights (documented for DBAs)."""
    tables = ", ".join(LEDGER_TABLES)
    w, a = _ident(writer), _ident(auditor)
    return [
        f"CREATE ROLE {w} NOLOGIN",
        f"CREATE ROLE {a} NOLOGIN",
        f"REVOKE ALL ON {tables} FROM PUBLIC",
        f"GRANT SELECT, INSERT ON {tables} TO {w}",
        f"GRANT SELECT ON {tables} TO {a}",
    ]


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _require_driver() -> None:
    if psycopg is None:
        raise StorageError(
            f"PostgreSQL ledger, got no psycopg module, expected it installed ({INSTALL_HINT})"
        )


def _storage_error(exc: Exception, where: str) -> Exception:
    text = " ".join(str(exc).split()) or type(exc).__name__
    if "append-only" in text:
        return AppendOnlyError(text.removeprefix("ERROR: ").split("provledger: ", 1)[-1])
    if psycopg is not None and isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return StorageError(
            f"permission denied on ledger {where}, got '{text}', expected a role with the"
            " rights of the ledger's writer (INSERT, SELECT) or auditor (SELECT)"
        )
    if psycopg is not None and isinstance(exc, psycopg.errors.ReadOnlySqlTransaction):
        return StorageError(f"cannot write ledger {where}, got a read-only session")
    if psycopg is not None and isinstance(exc, psycopg.OperationalError):
        return StorageError(
            f"lost or refused connection to ledger {where}, got '{text}', expected a running"
            " PostgreSQL server (nothing of an unfinished batch was written)"
        )
    return StorageError(f"database error on {where}, got '{text}', expected success")


class PostgresStore:
    """A ledger in one PostgreSQL database. Use ``open_store`` or ``create_store``."""

    def __init__(self, location: DatabaseURL, conn: Any) -> None:
        self.path: Path = location
        self.location = location
        self._conn = conn
        self._where = redact(location.url)

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read inside sees one snapshot (REPEATABLE READ, read only)."""
        try:
            with self._conn.transaction():
                self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    # -- writing ---------------------------------------------------------------------
    def append_many(
        self, items: Sequence[Prepared], precheck: Precheck | None = None
    ) -> list[AppendResult]:
        """Append all items in one transaction; ``precheck`` runs inside the tail lock."""
        try:
            with self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (TAIL_LOCK,))
                if precheck is not None:
                    precheck(self)
                return self._append_batch(items, None)
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    def append_copies(self, items: Sequence[Prepared], stamps: Sequence[str], first: int) -> None:
        """Append entries copied from another ledger: their own ``appended_at``, at ``first``.

        Refused unless the log has exactly ``first`` entries and none of ``items`` is
        stored, so a copy never interleaves with another writer.
        """
        try:
            with self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (TAIL_LOCK,))
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
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    def _append_batch(
        self, items: Sequence[Prepared], stamps: Sequence[str] | None
    ) -> list[AppendResult]:
        """Insert the new items in order, inside the caller's locked transaction."""
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
        cur = self._conn.cursor()
        if entries:
            _copy(cur, "entries", ("seq", "digest", "kind", "appended_at"), entries)
            _copy(
                cur,
                "objects",
                (
                    "digest",
                    "seq",
                    "kind",
                    "schema_version",
                    "object_id",
                    "object_version",
                    "legacy_digest",
                    "legacy_hints",
                    "data",
                ),
                objects,
            )
            if refs:
                _copy(cur, "refs", ("from_digest", "rel", "to_digest"), refs)
            _copy(cur, "tree_nodes", ("level", "idx", "hash"), nodes)
        return results

    def _entries_for(self, digests: Sequence[str]) -> dict[str, Entry]:
        unique = list(dict.fromkeys(digests))
        if not unique:
            return {}
        rows = self._conn.execute(
            "SELECT o.digest, e.seq, e.digest, e.kind, e.appended_at FROM objects o"
            " JOIN entries e ON e.seq = o.seq WHERE o.digest = ANY(%s)",
            (unique,),
        ).fetchall()
        return {row[0]: Entry(int(row[1]), row[2], row[3], row[4]) for row in rows}

    def add_checkpoint(self, row: CheckpointRow) -> None:
        """Store a signed tree head; a second, different root for a size is refused."""
        try:
            with self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (TAIL_LOCK,))
                existing = self.checkpoint_at(row.size)
                if existing is not None:
                    if existing.root != row.root:
                        raise AppendOnlyError(
                            f"checkpoint for size {row.size} exists, got root"
                            f" {row.root.hex()}, expected {existing.root.hex()}"
                        )
                    return
                self._conn.execute(
                    "INSERT INTO checkpoints(size, root, note, created_at) VALUES (%s,%s,%s,%s)",
                    (row.size, row.root, row.note, row.created_at),
                )
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    def add_cosignatures(self, size: int, lines: Sequence[str]) -> int:
        """Store witness signature lines for the checkpoint at ``size``; return how many
        were new. Lines are kept verbatim; the checkpoint must exist."""
        try:
            with self._conn.transaction():
                if self.checkpoint_at(size) is None:
                    raise NotFound(f"checkpoint, got none at size {size}, expected a stored one")
                added = 0
                stamp = utc_now()
                for line in dict.fromkeys(lines):
                    cur = self._conn.execute(
                        "INSERT INTO cosignatures(size, line, added_at) VALUES (%s,%s,%s)"
                        " ON CONFLICT DO NOTHING",
                        (size, line, stamp),
                    )
                    added += cur.rowcount
                return added
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    def cosignatures(self, size: int) -> list[str]:
        """Witness signature lines stored for the checkpoint at ``size``, in arrival order."""
        if not 0 <= size < 2**63:
            return []
        rows = self._q("SELECT line FROM cosignatures WHERE size = %s ORDER BY pos", (size,))
        return [str(line) for (line,) in rows]

    def set_meta(self, key: str, value: str) -> None:
        """Record a meta value once; a different value for a set key is refused."""
        try:
            with self._conn.transaction():
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (TAIL_LOCK,))
                current = self.get_meta(key)
                if current == value:
                    return
                if current is not None:
                    raise AppendOnlyError(
                        f"meta {key} already set, got {value!r}, expected {current!r}"
                    )
                self._conn.execute("INSERT INTO meta(key, value) VALUES (%s,%s)", (key, value))
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    # -- reading ---------------------------------------------------------------------
    def _q(self, query: str, args: Sequence[Any] = ()) -> list[Any]:
        try:
            rows: list[Any] = self._conn.execute(query, args).fetchall()
            return rows
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    def size(self) -> int:
        row = self._q("SELECT max(seq) FROM entries")[0]
        return 0 if row[0] is None else int(row[0]) + 1

    _OBJ = (
        "SELECT digest, seq, kind, schema_version, object_id, object_version, legacy_digest,"
        " legacy_hints, data FROM objects"
    )

    def get(self, digest: str) -> StoredObject | None:
        rows = self._q(f"{self._OBJ} WHERE digest = %s", (digest,))
        return _object(rows[0]) if rows else None

    def get_by_seq(self, seq: int) -> StoredObject | None:
        if not 0 <= seq < 2**63:
            return None
        rows = self._q(f"{self._OBJ} WHERE seq = %s", (seq,))
        return _object(rows[0]) if rows else None

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        return [
            _object(r)
            for r in self._q(f"{self._OBJ} WHERE legacy_digest = %s ORDER BY seq", (legacy,))
        ]

    def ids_of(self, digests: Sequence[str]) -> dict[str, tuple[str | None, int | None]]:
        """(object id, object version) of each stored digest."""
        rows = self._q(
            "SELECT digest, object_id, object_version FROM objects WHERE digest = ANY(%s)",
            (list(digests),),
        )
        return {str(d): (oid, None if v is None else int(v)) for d, oid, v in rows}

    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Ledger digests of up to ``limit`` objects whose ledger or legacy digest starts
        with ``prefix``, in digest order (text columns use the byte order of "C")."""
        bounds = (prefix, prefix + "g")
        return [
            str(r[0])
            for r in self._q(
                "SELECT digest FROM objects WHERE digest >= %s AND digest < %s"
                " UNION SELECT digest FROM objects WHERE legacy_digest >= %s"
                " AND legacy_digest < %s ORDER BY 1 LIMIT %s",
                (*bounds, *bounds, limit),
            )
        ]

    def by_id(
        self, object_id: str, version: int | None = None, kind: str | None = None
    ) -> list[StoredObject]:
        if version is not None and not 0 <= version < 2**63:
            return []
        query = f"{self._OBJ} WHERE object_id = %s"
        args: list[Any] = [object_id]
        if version is not None:
            query += " AND object_version = %s"
            args.append(version)
        if kind is not None:
            query += " AND kind = %s"
            args.append(kind)
        return [_object(r) for r in self._q(query + " ORDER BY seq", args)]

    def by_kind(self, kind: str) -> Iterator[StoredObject]:
        after = -1
        while True:
            rows = self._q(
                f"{self._OBJ} WHERE kind = %s AND seq > %s ORDER BY seq LIMIT {_PAGE}",
                (kind, after),
            )
            for row in rows:
                yield _object(row)
            if len(rows) < _PAGE:
                return
            after = int(rows[-1][1])

    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]:
        if since >= 2**63:
            return
        left = limit
        at = max(since, 0)
        while left is None or left > 0:
            page = _PAGE if left is None else min(_PAGE, left)
            query = "SELECT seq, digest, kind, appended_at FROM entries WHERE seq >= %s"
            args: list[Any] = [at]
            if kind is not None:
                query += " AND kind = %s"
                args.append(kind)
            rows = self._q(query + f" ORDER BY seq LIMIT {page}", args)
            for seq, digest, k, appended_at in rows:
                yield Entry(int(seq), digest, k, appended_at)
            if left is not None:
                left -= len(rows)
            if len(rows) < page:
                return
            at = int(rows[-1][0]) + 1

    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]:
        if rel is None:
            rows = self._q(
                "SELECT from_digest, rel FROM refs WHERE to_digest = %s ORDER BY pos", (digest,)
            )
        else:
            rows = self._q(
                "SELECT from_digest, rel FROM refs WHERE to_digest = %s AND rel = %s ORDER BY pos",
                (digest, rel),
            )
        return [(str(a), str(b)) for a, b in rows]

    def counts(self) -> dict[str, int]:
        return {
            str(k): int(n)
            for k, n in self._q("SELECT kind, count(*) FROM entries GROUP BY kind ORDER BY kind")
        }

    def node(self, level: int, index: int) -> bytes:
        rows = self._q("SELECT hash FROM tree_nodes WHERE level = %s AND idx = %s", (level, index))
        if not rows:
            raise NotFound(
                f"tree node missing, got no node at level {level} index {index},"
                " expected a complete subtree hash"
            )
        return bytes(rows[0][0])

    def get_meta(self, key: str) -> str | None:
        rows = self._q("SELECT value FROM meta WHERE key = %s", (key,))
        return str(rows[0][0]) if rows else None

    def checkpoints(self) -> list[CheckpointRow]:
        return [
            CheckpointRow(int(s), bytes(r), bytes(n), str(c))
            for s, r, n, c in self._q(
                "SELECT size, root, note, created_at FROM checkpoints ORDER BY size"
            )
        ]

    def checkpoint_at(self, size: int) -> CheckpointRow | None:
        if not 0 <= size < 2**63:
            return None
        rows = self._q(
            "SELECT size, root, note, created_at FROM checkpoints WHERE size = %s", (size,)
        )
        if not rows:
            return None
        s, r, n, c = rows[0]
        return CheckpointRow(int(s), bytes(r), bytes(n), str(c))

    # -- figures for ``stats`` ------------------------------------------------------------
    def object_bytes(self) -> int:
        return int(self._q("SELECT coalesce(sum(octet_length(data)), 0) FROM objects")[0][0])

    def latest_checkpoint_size(self) -> int | None:
        value = self._q("SELECT max(size) FROM checkpoints")[0][0]
        return None if value is None else int(value)

    def database_bytes(self) -> int:
        return int(self._q("SELECT pg_database_size(current_database())")[0][0])

    # -- streams for a full audit (``ledger.audit.full``) ------------------------------
    def audit_rows(self) -> Iterator[tuple[Any, ...]]:
        """Entries in seq order joined with their object row (13 columns, as stored)."""
        after = -1
        while True:
            rows = self._q(
                "SELECT e.seq, e.digest, e.kind, e.appended_at, o.digest, o.seq, o.kind,"
                " o.schema_version, o.object_id, o.object_version, o.legacy_digest,"
                " o.legacy_hints, o.data FROM entries e LEFT JOIN objects o ON o.seq = e.seq"
                f" WHERE e.seq > %s ORDER BY e.seq LIMIT {_PAGE}",
                (after,),
            )
            for row in rows:
                seq = int(row[0])
                obj_seq = None if row[5] is None else int(row[5])
                version = None if row[9] is None else int(row[9])
                data = None if row[12] is None else bytes(row[12])
                yield (seq, *row[1:5], obj_seq, *row[6:9], version, *row[10:12], data)
            if len(rows) < _PAGE:
                return
            after = int(rows[-1][0])

    def node_reader(self) -> _NodeReader:
        return _NodeReader(self)

    def ref_reader(self) -> _RefReader:
        return _RefReader(self)

    def load_checkpoint_rows(self) -> list[tuple[Any, ...]]:
        return [
            (int(s), bytes(r), bytes(n), c)
            for s, r, n, c in self._q(
                "SELECT size, root, note, created_at FROM checkpoints ORDER BY size"
            )
        ]

    def tree_node_count(self) -> int:
        return int(self._q("SELECT count(*) FROM tree_nodes")[0][0])

    def tree_nodes_outside(self, size: int, limit: int) -> list[tuple[int, int]]:
        rows = self._q(
            "SELECT level, idx FROM tree_nodes WHERE level < 0 OR level > 62 OR idx < 0"
            " OR idx >= (%s::bigint >> level) ORDER BY level, idx LIMIT %s",
            (size, limit),
        )
        return [(int(a), int(b)) for a, b in rows]

    def orphan_objects(self) -> list[tuple[int, str]]:
        rows = self._q(
            "SELECT o.seq, o.digest FROM objects o LEFT JOIN entries e ON e.seq = o.seq"
            " WHERE e.seq IS NULL OR e.digest != o.digest"
        )
        return [(int(a), str(b)) for a, b in rows]

    def ref_count(self) -> int:
        return int(self._q("SELECT count(*) FROM refs")[0][0])

    def refs_with_objects(self) -> list[tuple[Any, ...]]:
        return [
            (a, b, c, None if d is None else int(d), e, None if f is None else bytes(f))
            for a, b, c, d, e, f in self._q(
                "SELECT r.from_digest, r.rel, r.to_digest, o.seq, o.kind, o.data FROM refs r"
                " LEFT JOIN objects o ON o.digest = r.from_digest ORDER BY r.from_digest, r.pos"
            )
        ]

    def schema_problems(self) -> list[tuple[str, str]]:
        """What the server must enforce but does not: (finding code, message) pairs.

        Every append-only trigger exists, is enabled, fires BEFORE its operation and
        calls the guard function, whose body is exactly ours; the writer role has
        exactly INSERT and SELECT, the auditor exactly SELECT, PUBLIC nothing, and
        neither role owns a ledger table (an owner could drop a trigger).
        """
        found: list[tuple[str, str]] = []
        # Text columns compare byte-wise (COLLATE "C"), as SQLite's BINARY does: digest
        # prefix lookups and ORDER BY digest rely on it.
        columns = {
            (str(t), str(c)): (str(ty), n == "YES", str(co or ""))
            for t, c, ty, n, co in self._q(
                "SELECT table_name, column_name, data_type, is_nullable, collation_name"
                " FROM information_schema.columns WHERE table_schema = current_schema()"
                " AND table_name = ANY(%s)",
                (list(LEDGER_TABLES),),
            )
        }
        for key in sorted(set(columns) | set(EXPECTED_COLUMNS)):
            column, spec = columns.get(key), EXPECTED_COLUMNS.get(key)
            want = None if spec is None else (*spec, "C" if spec[0] == "text" else "")
            if column != want:
                found.append(
                    (
                        "schema-altered",
                        f"column {key[0]}.{key[1]}, got {column or 'none'},"
                        f" expected {want or 'none'} (type, nullable, collation)",
                    )
                )
        unique = {
            (str(t), str(cols))
            for t, cols in self._q(
                "SELECT c.relname, string_agg(a.attname, ',' ORDER BY k.n)"
                " FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid"
                " CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, n)"
                " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum"
                " WHERE i.indisunique AND i.indisvalid AND i.indpred IS NULL"
                " AND c.relnamespace = current_schema()::regnamespace"
                " GROUP BY i.indexrelid, c.relname"
            )
        }
        for table, cols in sorted(EXPECTED_UNIQUE - unique):
            found.append(("schema-altered", f"unique index on {table}({cols}) is missing"))
        body = self._q(
            "SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE p.proname = %s AND n.nspname = current_schema()",
            (GUARD_FUNCTION,),
        )
        if not body:
            found.append(("trigger-missing", f"append-only function {GUARD_FUNCTION} is missing"))
        elif body[0][0] != _GUARD_BODY:
            found.append(
                ("trigger-altered", f"append-only function {GUARD_FUNCTION} has another body")
            )
        present = {
            (str(table), str(name)): (str(enabled), int(tgtype), str(func))
            for table, name, enabled, tgtype, func in self._q(
                "SELECT c.relname, t.tgname, t.tgenabled, t.tgtype, p.proname FROM pg_trigger t"
                " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_proc p ON p.oid = t.tgfoid"
                " WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal"
            )
        }
        # pg_trigger.tgtype bits: 2 BEFORE, 8 DELETE, 16 UPDATE, 32 TRUNCATE, 1 ROW.
        bits = {"DELETE": 8, "UPDATE": 16, "TRUNCATE": 32}
        for table, name, op in trigger_names():
            got = present.get((table, name))
            if got is None:
                found.append(("trigger-missing", f"append-only trigger {name} is missing"))
                continue
            enabled, tgtype, func = got
            row_bit = 0 if op == "TRUNCATE" else 1
            if tgtype != (2 | bits[op] | row_bit) or func != GUARD_FUNCTION:
                found.append(("trigger-altered", f"append-only trigger {name} was changed"))
            elif enabled not in ("O", "A"):
                found.append(("trigger-disabled", f"append-only trigger {name} is disabled"))
        writer = self.get_meta("pg_writer_role")
        auditor = self.get_meta("pg_auditor_role")
        roles = [(writer, WRITER_PRIVILEGES, "writer"), (auditor, AUDITOR_PRIVILEGES, "auditor")]
        for role, allowed, label in roles:
            if role is None:
                found.append(("grant-missing", f"no {label} role recorded in meta"))
                continue
            if not self._q("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)):
                found.append(
                    ("grant-missing", f"{label} role {role} does not exist (see docs: grants)")
                )
                continue
            for table in LEDGER_TABLES:
                have = self._privileges(role, table)
                if have != allowed:
                    found.append(
                        (
                            "grant-wrong",
                            f"{label} role {role} on {table}, got {sorted(have)},"
                            f" expected {sorted(allowed)}",
                        )
                    )
            owned = self._q(
                "SELECT c.relname FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner"
                " WHERE r.rolname = %s AND c.relname = ANY(%s)"
                " AND c.relnamespace = current_schema()::regnamespace",
                (role, list(LEDGER_TABLES)),
            )
            if owned:
                found.append(("grant-wrong", f"{label} role {role} owns ledger tables"))
        for table in LEDGER_TABLES:
            public = self._privileges("public", table)
            if public:
                found.append(
                    ("grant-wrong", f"PUBLIC on {table}, got {sorted(public)}, expected none")
                )
        return found

    def _privileges(self, role: str, table: str) -> frozenset[str]:
        cols = ", ".join(f"has_table_privilege(%s, %s, '{p}')" for p in _ALL_PRIVILEGES)
        args: list[Any] = []
        for _ in _ALL_PRIVILEGES:
            args.extend((role, table))
        row = self._q(f"SELECT {cols}", args)[0]
        return frozenset(p for p, ok in zip(_ALL_PRIVILEGES, row, strict=True) if ok)


class _NodeReader:
    """``get(level, idx)``: ``(hash,)`` or None; reads each level forward in pages."""

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self._pages: dict[int, dict[int, bytes]] = {}
        self._next: dict[int, int] = {}

    def get(self, level: int, idx: int) -> tuple[bytes] | None:
        page = self._pages.get(level)
        if page is None or (idx not in page and idx >= self._next.get(level, 0)):
            rows = self._store._q(
                "SELECT idx, hash FROM tree_nodes WHERE level = %s AND idx >= %s"
                f" ORDER BY idx LIMIT {_PAGE}",
                (level, idx),
            )
            page = {int(i): bytes(h) for i, h in rows}
            self._pages[level] = page
            self._next[level] = int(rows[-1][0]) + 1 if len(rows) == _PAGE else 2**63
        if idx in page:
            return (page[idx],)
        if idx < min(page, default=idx):
            rows = self._store._q(
                "SELECT hash FROM tree_nodes WHERE level = %s AND idx = %s", (level, idx)
            )
            return (bytes(rows[0][0]),) if rows else None
        return None


class _RefReader:
    """``has(from, rel, to)``: is that reference row stored?

    Appends write an object's references right after it, so the audit asks for them in
    ``pos`` order: pages read forward answer those, anything else a point query.
    """

    def __init__(self, store: PostgresStore) -> None:
        self._store = store
        self._page: list[tuple[Any, ...]] = []
        self._at = 0
        self._after = -1
        self._done = False

    def _head(self) -> tuple[Any, ...] | None:
        if self._at == len(self._page) and not self._done:
            self._page = self._store._q(
                "SELECT pos, from_digest, rel, to_digest FROM refs WHERE pos > %s"
                f" ORDER BY pos LIMIT {_PAGE}",
                (self._after,),
            )
            self._at = 0
            self._done = len(self._page) < _PAGE
            if self._page:
                self._after = int(self._page[-1][0])
        return self._page[self._at] if self._at < len(self._page) else None

    def has(self, from_digest: str, rel: str, to_digest: str) -> bool:
        head = self._head()
        if head is not None and tuple(head[1:]) == (from_digest, rel, to_digest):
            self._at += 1
            return True
        return bool(
            self._store._q(
                "SELECT 1 FROM refs WHERE to_digest = %s AND rel = %s AND from_digest = %s",
                (to_digest, rel, from_digest),
            )
        )


def _object(row: Sequence[Any]) -> StoredObject:
    return StoredObject(
        row[0],
        int(row[1]),
        row[2],
        row[3],
        row[4],
        None if row[5] is None else int(row[5]),
        row[6],
        row[7],
        bytes(row[8]),
    )


def _copy(cur: Any, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    )
    with cur.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def _connect(location: DatabaseURL, readonly: bool) -> Any:
    _require_driver()
    where = redact(location.url)
    try:
        conn = psycopg.connect(
            location.url, autocommit=True, connect_timeout=30, application_name="provledger"
        )
    except psycopg.OperationalError as exc:
        text = " ".join(str(exc).split())
        if "does not exist" in text and "database" in text:
            raise NotFound(
                f"ledger database not found, got '{text}', expected a database created"
                " with createdb and initialised by `provledger init`"
            ) from None
        raise _storage_error(exc, where) from None
    if readonly:
        conn.execute("SET default_transaction_read_only = on")
    return conn


def create_store(location: DatabaseURL) -> tuple[PostgresStore, list[str]]:
    """Create the tables, triggers and roles in an empty database.

    Returns the store and the grant statements still to run by someone allowed to
    (empty when the roles were created here). A database that already holds ledger
    tables is refused.
    """
    conn = _connect(location, readonly=False)
    store = PostgresStore(location, conn)
    writer, auditor = default_roles(location.name)
    pending: list[str] = []
    try:
        exists = conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]
        if exists:
            conn.close()
            raise RuleViolation(
                f"ledger already exists, got tables in {store._where}, expected an empty database"
            )
        with conn.transaction():
            for statement in _DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(_GUARD_DDL)
            for statement in _trigger_ddl():
                conn.execute(statement)
            conn.execute("INSERT INTO meta(key, value) VALUES ('format', %s)", (FORMAT,))
            conn.execute("INSERT INTO meta(key, value) VALUES ('pg_writer_role', %s)", (writer,))
            conn.execute("INSERT INTO meta(key, value) VALUES ('pg_auditor_role', %s)", (auditor,))
            tables = ", ".join(LEDGER_TABLES)
            conn.execute(f"REVOKE ALL ON {tables} FROM PUBLIC")
            try:
                with conn.transaction():
                    for role in (writer, auditor):
                        if not conn.execute(
                            "SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)
                        ).fetchone():
                            conn.execute(f"CREATE ROLE {_ident(role)} NOLOGIN")
                    for statement in grant_statements(writer, auditor)[3:]:
                        conn.execute(statement)
            except psycopg.errors.InsufficientPrivilege:
                pending = grant_statements(writer, auditor)
    except psycopg.Error as exc:
        conn.close()
        raise _storage_error(exc, store._where) from None
    return store, pending


def has_ledger_tables(location: DatabaseURL) -> bool:
    """True when the database already holds a ledger's ``meta`` table."""
    conn = _connect(location, readonly=True)
    try:
        return bool(conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0])
    except psycopg.Error as exc:
        raise _storage_error(exc, redact(location.url)) from None
    finally:
        conn.close()


def open_store(location: DatabaseURL, *, readonly: bool = False) -> PostgresStore:
    """Open an existing ledger database; a database without ledger tables is an error."""
    conn = _connect(location, readonly)
    store = PostgresStore(location, conn)
    try:
        exists = conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0]
    except psycopg.Error as exc:
        conn.close()
        raise _storage_error(exc, store._where) from None
    if not exists or store.get_meta("format") != FORMAT:
        conn.close()
        raise StorageError(
            f"not a provledger ledger, got no {FORMAT} format record in {store._where},"
            " expected a database initialised by `provledger init`"
        )
    return store
