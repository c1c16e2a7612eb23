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
(SELECT) when the connecting user may create roles. ``ledger.store.postgres_audit``
is what ``verify`` checks of all that (tables, columns, indexes, triggers, roles, grants).

As on SQLite: the admission policy runs inside the transaction
after the rows are written, a dry run keeps one outer transaction (rolled back on
close) with a savepoint per batch, checkpoints are logged as entries, object rows are
re-derived from their bytes on every read.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ledger.errors import AppendOnlyError, IntegrityError, NotFound, RuleViolation, StorageError
from ledger.log.leaf import utc_now
from ledger.log.merkle import PendingNodes
from ledger.store import postgres_audit
from ledger.store.base import (
    OBJECT_COLUMNS,
    AppendResult,
    BeforeCommit,
    CheckpointRow,
    Entry,
    LedgerStats,
    NodeScan,
    Precheck,
    RawLogRow,
    RawObjectRow,
    RefScan,
    SignatureVerdicts,
    SignHead,
    SnapshotReader,
    StorageFinding,
    StoredObject,
    stored_object,
)
from ledger.store.batch import (
    admitted_batch,
    checkpoint_first,
    plan_rows,
    refuse_checkpoint_records,
)
from ledger.store.derived import derive, row_problem
from ledger.store.location import DatabaseURL, redact
from ledger.store.postgres_schema import (
    ALL_TABLES,
    FORMAT,
    GROWTH_DDL,
    GUARD_DDL,
    META_KEYS,
    SCHEMA_DDL,
    default_roles,
    grant_statements,
    ident,
    trigger_ddl,
)
from ledger.store.prepared import Prepared
from ledger.store.rules import copied_checkpoint_is_new, head_checkpoint

if TYPE_CHECKING:
    from ledger.trust.admission import AdmissionPolicy

try:
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]

# One advisory lock per database serialises the log's tail: the first 8 bytes of
# sha256("provledger log tail") as a signed bigint.
TAIL_LOCK = int.from_bytes(hashlib.sha256(b"provledger log tail").digest()[:8], "big", signed=True)
INT64_MAX = 2**63 - 1  # bigint: user numbers beyond it match nothing
INSTALL_HINT = "pip install 'provledger[postgres]'"
_PAGE = 2000  # rows per round trip when streaming


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

    format_name = FORMAT
    meta_keys = META_KEYS

    def __init__(
        self,
        location: DatabaseURL,
        conn: Any,
        policy: AdmissionPolicy | None = None,
        dry_run: bool = False,
    ) -> None:
        self.path: Path = location
        self.location = location
        self._conn = conn
        self._where = redact(location.url)
        self._policy = policy
        self.dry_run = dry_run
        self._dry: Any = None  # a dry run's outer transaction, rolled back by close()

    @property
    def policy(self) -> AdmissionPolicy:
        """The admission policy every append passes and every judgement of this ledger
        uses: the one given to ``open_store``, else the package's default (built on first
        use: a store that only reads never loads it)."""
        if self._policy is None:
            from ledger.trust.admission import default_policy

            self._policy = default_policy()
        return self._policy

    # -- lifecycle -------------------------------------------------------------------
    def close(self) -> None:
        try:
            if self._dry is not None:
                self._dry.__exit__(None, None, None)  # force_rollback: nothing is kept
                self._dry = None
        except psycopg.Error:
            pass  # the connection is gone, and with it the dry run's transaction
        finally:
            self._conn.close()

    def __enter__(self) -> PostgresStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _idle(self) -> bool:
        return bool(self._conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE)

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read inside sees one snapshot (REPEATABLE READ, read only); inside a
        transaction already (a dry run's), that transaction's view."""
        if not self._idle():
            yield
            return
        try:
            with self._conn.transaction():
                self._conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                yield
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    @contextmanager
    def _write(self) -> Iterator[None]:
        """One write transaction holding the tail lock; COMMIT when the block ends,
        ROLLBACK on any exception. In a dry run, a savepoint of the outer transaction."""
        try:
            if self.dry_run and self._dry is None:
                self._dry = self._conn.transaction(force_rollback=True)
                self._dry.__enter__()
            with self._conn.transaction():
                # The log's one critical section: size, seq numbers and tree nodes are
                # read and written under it; everything else was done before.
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (TAIL_LOCK,))
                yield
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    # -- writing ---------------------------------------------------------------------
    def append_many(
        self,
        items: Sequence[Prepared],
        precheck: Precheck | None = None,
        before_commit: BeforeCommit | None = None,
        *,
        history: bool = False,
        signatures: SignatureVerdicts | None = None,
    ) -> list[AppendResult]:
        """Append all items in one transaction; ``precheck`` runs inside the lock, the
        admission policy after the rows are written and before they are committed
        (``signatures``: Ed25519 verdicts computed ahead);
        ``before_commit(results)`` last (if it raises, nothing is recorded)."""
        policy = self.policy
        with self._write():
            results = admitted_batch(
                self,
                items,
                self._append_batch,
                policy,
                precheck,
                before_commit,
                history=history,
                signatures=signatures,
            )
        return results

    def _append_batch(self, items: Sequence[Prepared]) -> list[AppendResult]:
        """Insert the new items in order, inside the caller's locked transaction."""
        refuse_checkpoint_records(items)
        known = self._entries_for([item.digest for item in items])
        seq = self.size()
        lead, batch = checkpoint_first(items, known, self.checkpoint_at(seq))
        return self._append_rows(batch, known, seq)[lead:]

    def _append_rows(
        self,
        items: Sequence[Prepared],
        known: dict[str, Entry],
        seq: int,
        stamps: Sequence[str] | None = None,
    ) -> list[AppendResult]:
        rows = plan_rows(items, known, seq, PendingNodes(self), stamps)
        if rows.entries:
            cur = self._conn.cursor()
            _copy(cur, "entries", ("seq", "digest", "kind", "appended_at"), rows.entries)
            _copy(cur, "objects", OBJECT_COLUMNS, rows.objects)
            if rows.refs:
                _copy(cur, "refs", ("from_digest", "rel", "to_digest"), rows.refs)
            _copy(cur, "tree_nodes", ("level", "idx", "hash"), rows.nodes)
            # Same transaction (and tail lock) as the rows; a dry run's savepoint takes
            # them back with the rows.
            cur.executemany(_ADD_TOTALS, rows.totals_rows())
        return rows.results

    def _entries_for(self, digests: Sequence[str]) -> dict[str, Entry]:
        """Entries of the already-stored objects among ``digests``."""
        unique = list(dict.fromkeys(digests))
        if not unique:
            return {}
        rows = self._q(
            "SELECT o.digest, e.seq, e.digest, e.kind, e.appended_at FROM objects o"
            " JOIN entries e ON e.seq = o.seq WHERE o.digest = ANY(%s)",
            (unique,),
        )
        # a row that disagrees with its entry is not "stored"
        return {
            str(row[0]): Entry(int(row[1]), row[2], row[3], row[4])
            for row in rows
            if row[0] == row[2]
        }

    def add_checkpoint(self, sign: SignHead) -> CheckpointRow:
        """Sign the current tree head and store it, holding the tail lock throughout.

        A checkpoint already stored for the current size is returned instead.
        """
        if self.dry_run:
            with self._write():
                return self._checkpoint_of_head(sign)
        with self._write():
            row = self._checkpoint_of_head(sign)
            if self.checkpoint_at(row.size) is None:
                self._conn.execute(
                    "INSERT INTO checkpoints(size, root, note, created_at) VALUES (%s,%s,%s,%s)",
                    (row.size, row.root, row.note, row.created_at),
                )
        return row

    def _checkpoint_of_head(self, sign: SignHead) -> CheckpointRow:
        """The stored checkpoint of the current size, or ``sign``'s row for it."""
        size = self.size()
        return head_checkpoint(size, self.checkpoint_at(size), lambda n: sign(self, n))

    def add_cosignatures(self, size: int, lines: Sequence[str]) -> int:
        """Store witness signature lines for the checkpoint at ``size``; return how many
        were new. Lines are kept verbatim; the checkpoint must exist."""
        with self._write():
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

    def set_meta(self, key: str, value: str) -> None:
        """Record a meta value once; a different value for a set key is refused."""
        with self._write():
            current = self.get_meta(key)
            if current == value:
                return
            if current is not None:
                raise AppendOnlyError(
                    f"meta {key} already set, got {value!r}, expected {current!r}"
                )
            self._conn.execute("INSERT INTO meta(key, value) VALUES (%s,%s)", (key, value))

    # -- copies from another ledger (``ledger.store.copy``) ------------------------------
    def append_copies(self, items: Sequence[Prepared], stamps: Sequence[str], first: int) -> None:
        """Append entries copied from another ledger, as they are (``appended_at`` and
        checkpoint records included), from seq ``first``. No admission: see
        ``ledger.store.copy``. Refused unless the log has exactly ``first`` entries and
        none of ``items`` is stored, so a copy never interleaves with another writer."""
        with self._write():
            size = self.size()
            if size != first:
                raise RuleViolation(
                    f"copy destination changed, got {size} entries, expected {first}"
                )
            known = self._entries_for([item.digest for item in items])
            if known or len({item.digest for item in items}) != len(items):
                raise RuleViolation(
                    "copy destination already holds an object being copied, got a"
                    " duplicate, expected a prefix of the source"
                )
            self._append_rows(items, known, first, stamps)

    def put_checkpoint(self, row: CheckpointRow) -> None:
        """Store a checkpoint copied from another ledger for the current log size."""
        with self._write():
            if copied_checkpoint_is_new(row, self.checkpoint_at(row.size), self.size()):
                self._conn.execute(
                    "INSERT INTO checkpoints(size, root, note, created_at) VALUES (%s,%s,%s,%s)",
                    (row.size, row.root, row.note, row.created_at),
                )

    def bulk_session(self) -> AbstractContextManager[None]:
        """Nothing to tune: the server's settings are the operator's."""
        return nullcontext()

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

    # Object rows come with their log entry's digest and kind: the entry is the record
    # (a Merkle leaf), the row only an index of it, checked on every read.
    _OBJ = (
        f"SELECT {', '.join('o.' + name for name in OBJECT_COLUMNS)}, e.digest, e.kind"
        " FROM objects o LEFT JOIN entries e ON e.seq = o.seq"
    )

    def _checked(self, row: Sequence[Any]) -> StoredObject:
        """The object of a row, after checking every column against the bytes."""
        width = len(OBJECT_COLUMNS)
        obj = stored_object(row[:width])
        problem = row_problem(obj, row[width], row[width + 1])
        if problem is not None:
            raise IntegrityError(
                f"ledger object row at seq {obj.seq} ({obj.digest}) disagrees with its bytes,"
                f" got {problem}, expected a row derived from them; run `provledger verify`"
            )
        return obj

    def _objects(self, where: str, args: Sequence[Any]) -> list[StoredObject]:
        return [self._checked(r) for r in self._q(f"{self._OBJ} {where}", args)]

    @staticmethod
    def _mismatch(obj: StoredObject, column: str, got: object, asked: object) -> IntegrityError:
        return IntegrityError(
            f"ledger index disagrees with the rows, got {column} {got!r} at seq {obj.seq}"
            f" ({obj.digest}), expected {asked!r}; run `provledger verify`"
        )

    def get(self, digest: str) -> StoredObject | None:
        rows = self._objects("WHERE o.digest = %s", (digest,))
        if rows and rows[0].digest != digest:
            raise self._mismatch(rows[0], "digest", rows[0].digest, digest)
        return rows[0] if rows else None

    def get_by_seq(self, seq: int) -> StoredObject | None:
        if not 0 <= seq <= INT64_MAX:
            return None
        rows = self._objects("WHERE o.seq = %s", (seq,))
        return rows[0] if rows else None

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        return self._objects("WHERE o.legacy_digest = %s ORDER BY o.seq", (legacy,))

    def ids_of(self, digests: Sequence[str]) -> dict[str, tuple[str | None, int | None]]:
        """(object id, object version) of each stored digest, read from checked rows."""
        found = self._objects("WHERE o.digest = ANY(%s)", (list(digests),))
        return {obj.digest: (obj.object_id, obj.object_version) for obj in found}

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
        if version is not None and not 0 <= version <= INT64_MAX:
            return []
        where = "WHERE o.object_id = %s"
        args: list[Any] = [object_id]
        if version is not None:
            where += " AND o.object_version = %s"
            args.append(version)
        if kind is not None:
            where += " AND o.kind = %s"
            args.append(kind)
        return self._objects(where + " ORDER BY o.seq", args)

    def by_kind(self, kind: str) -> Iterator[StoredObject]:
        after = -1
        while True:
            rows = self._q(
                f"{self._OBJ} WHERE o.kind = %s AND o.seq > %s ORDER BY o.seq LIMIT {_PAGE}",
                (kind, after),
            )
            for row in rows:
                yield self._checked(row)
            if len(rows) < _PAGE:
                return
            after = int(rows[-1][1])

    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]:
        if since > INT64_MAX:
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
        """References to ``digest``; each is checked against the referring object's bytes."""
        query = "SELECT from_digest, rel, to_digest FROM refs WHERE to_digest = %s"
        args: list[Any] = [digest]
        if rel is not None:
            query += " AND rel = %s"
            args.append(rel)
        out: list[tuple[str, str]] = []
        for source, relation, target in self._q(query + " ORDER BY pos", args):
            obj = self.get(source)
            implied = () if obj is None else derive(obj.kind, obj.data, obj.legacy_hints).refs
            if target != digest or (relation, target) not in implied:
                raise IntegrityError(
                    f"ledger reference disagrees with the objects, got {relation} -> {target}"
                    f" from {source}, expected a reference its bytes make;"
                    " run `provledger verify`"
                )
            out.append((str(source), str(relation)))
        return out

    def counts(self) -> dict[str, int]:
        """Entries by kind, from the stored totals (one row per kind, no scan)."""
        return {kind: entries for kind, (entries, _o, _b) in self.kind_totals().items() if entries}

    def kind_totals_rows(self) -> list[tuple[object, object, object, object]]:
        """(kind, entries, objects, bytes) rows as stored, by kind."""
        return [
            (k, e, o, b)
            for k, e, o, b in self._q(
                "SELECT kind, entries, objects, bytes FROM kind_totals ORDER BY kind"
            )
        ]

    def kind_totals(self) -> dict[str, tuple[int, int, int]]:
        """Stored (entries, objects, bytes) by kind, O(kinds); ``verify`` re-derives them."""
        out: dict[str, tuple[int, int, int]] = {}
        for row in self.kind_totals_rows():
            match row:
                case (str(kind), int(entries), int(objects), int(size)) if (
                    min(entries, objects, size) >= 0
                ):
                    out[kind] = (entries, objects, size)
                case _:
                    raise IntegrityError(
                        f"ledger totals row is not (kind, counts), got {row!r}, expected"
                        " text and three counts; run `provledger verify`"
                    )
        return out

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
        if not 0 <= size <= INT64_MAX:
            return None
        rows = self._q(
            "SELECT size, root, note, created_at FROM checkpoints WHERE size = %s", (size,)
        )
        if not rows:
            return None
        s, r, n, c = rows[0]
        return CheckpointRow(int(s), bytes(r), bytes(n), str(c))

    def cosignatures(self, size: int) -> list[str]:
        """Witness signature lines stored for the checkpoint at ``size``, in arrival order."""
        if not 0 <= size <= INT64_MAX:
            return []
        rows = self._q("SELECT line FROM cosignatures WHERE size = %s ORDER BY pos", (size,))
        return [str(line) for (line,) in rows]

    def stats(self) -> LedgerStats:
        """Counts, sizes and the latest checkpoint, all from one snapshot."""
        with self.snapshot():
            # The stored totals, not a scan: O(kinds); their sum must be the log's size.
            totals = self.kind_totals()
            size = self.size()
            if sum(entries for entries, _o, _b in totals.values()) != size:
                raise IntegrityError(
                    f"ledger totals disagree with the log, got"
                    f" {sum(e for e, _o, _b in totals.values())} entries by kind, expected"
                    f" {size}; run `provledger verify`"
                )
            latest = self._q("SELECT max(size) FROM checkpoints")[0][0]
            return LedgerStats(
                size=size,
                counts={kind: e for kind, (e, _o, _b) in sorted(totals.items()) if e},
                object_bytes=sum(b for _e, _o, b in totals.values()),
                latest_checkpoint_size=None if latest is None else int(latest),
                origin=self.get_meta("origin"),
                storage_bytes=self.database_bytes(),
            )

    def database_bytes(self) -> int:
        """What the database takes on the server (``pg_database_size``)."""
        return int(self._q("SELECT pg_database_size(current_database())")[0][0])

    # -- ``AuditSource``: streams and PostgreSQL's own checks ---------------------------
    def audit_session(self) -> AbstractContextManager[None]:
        """One REPEATABLE READ snapshot while other writers keep appending."""
        return self.snapshot()

    def second_reader(self) -> SnapshotReader | None:
        """None: every read of a PostgreSQL audit goes through the session's snapshot."""
        return None

    def log_rows(self, since: int = 0) -> Iterator[RawLogRow]:
        """Entries from ``since`` on in seq order with their object rows, a page per
        round trip."""
        columns = ", ".join(f"o.{name}" for name in OBJECT_COLUMNS)
        after = since - 1
        while True:
            rows = self._q(
                f"SELECT e.seq, e.digest, e.kind, e.appended_at, {columns}"
                " FROM entries e LEFT JOIN objects o ON o.seq = e.seq"
                f" WHERE e.seq > %s ORDER BY e.seq LIMIT {_PAGE}",
                (after,),
            )
            for seq, digest, kind, appended_at, *obj in rows:
                named = dict(zip(OBJECT_COLUMNS, obj, strict=True))
                raw = None if named["digest"] is None else RawObjectRow(**named)
                yield RawLogRow(seq, digest, kind, appended_at, raw)
            if len(rows) < _PAGE:
                return
            after = int(rows[-1][0])

    def node_scan(self) -> NodeScan:
        return _NodeReader(self)

    def ref_scan(self, resume: bool = False) -> RefScan:
        return _RefReader(self, resume=resume)

    def meta_rows(self) -> list[tuple[object, object]]:
        return [(k, v) for k, v in self._q("SELECT key, value FROM meta ORDER BY key")]

    def raw_checkpoints(self) -> list[tuple[object, object, object, object]]:
        return [
            (s, r, n, c)
            for s, r, n, c in self._q(
                "SELECT size, root, note, created_at FROM checkpoints ORDER BY size"
            )
        ]

    def tree_node_count(self) -> int:
        return int(self._q("SELECT count(*) FROM tree_nodes")[0][0])

    def tree_nodes_outside(self, size: int, limit: int) -> list[tuple[object, object]]:
        rows = self._q(
            "SELECT level, idx FROM tree_nodes WHERE level < 0 OR level > 62 OR idx < 0"
            " OR idx >= (%s::bigint >> level) ORDER BY level, idx LIMIT %s",
            (size, limit),
        )
        return [(a, b) for a, b in rows]

    def tree_nodes_past(self, size: int, limit: int) -> list[tuple[int, object]]:
        found: list[tuple[int, object]] = []
        for level in range(63):
            found += [
                (level, idx)
                for (idx,) in self._q(
                    "SELECT idx FROM tree_nodes WHERE level = %s AND idx >= %s"
                    " ORDER BY idx LIMIT %s",
                    (level, size >> level, limit),
                )
            ]
        return found

    def orphan_objects(self, start: int = 0) -> list[tuple[object, object]]:
        rows = self._q(
            "SELECT o.seq, o.digest FROM objects o LEFT JOIN entries e ON e.seq = o.seq"
            " WHERE (e.seq IS NULL OR e.digest != o.digest) AND o.seq >= %s",
            (start,),
        )
        return [(a, b) for a, b in rows]

    def duplicate_objects(self, start: int = 0, limit: int = 100) -> list[tuple[object, object]]:
        # ``objects.digest`` is the primary key: the server keeps one row per digest, so
        # this finds something only when that key was dropped (a schema finding too).
        rows = self._q(
            "SELECT seq, digest FROM objects WHERE digest IN (SELECT digest FROM objects"
            " GROUP BY digest HAVING count(*) > 1 AND max(seq) >= %s LIMIT %s)"
            " ORDER BY digest, seq",
            (start, limit),
        )
        return [(a, b) for a, b in rows]

    def ref_count(self) -> int:
        return int(self._q("SELECT count(*) FROM refs")[0][0])

    def refs_with_objects(self) -> Iterator[tuple[object, ...]]:
        yield from self._q(
            "SELECT r.from_digest, r.rel, r.to_digest, o.seq, o.kind, o.data FROM refs r"
            " LEFT JOIN objects o ON o.digest = r.from_digest ORDER BY r.from_digest, r.pos"
        )

    def catalog(self, query: str, args: Sequence[Any] = ()) -> list[Any]:
        """Rows of a query on the system catalogs (``postgres_audit``)."""
        return self._q(query, args)

    def storage_findings(self, whole: bool = True) -> list[StorageFinding]:
        """What the server must hold and enforce: ``postgres_audit.findings``. None of
        it reads the tables' rows, so ``whole`` changes nothing here."""
        return postgres_audit.findings(self)


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
    ``pos`` order: pages read forward answer those, anything else a point query. With
    ``resume`` (an audit that starts part-way through the log) paging starts after the
    row the first question finds by point query.
    """

    def __init__(self, store: PostgresStore, *, resume: bool = False) -> None:
        self._store = store
        self._page: list[tuple[Any, ...]] = []
        self._at = 0
        self._after = -1
        self._done = resume  # nothing to page until the first point query says where
        self._resume = resume

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
        found = self._store._q(
            "SELECT min(pos) FROM refs WHERE to_digest = %s AND rel = %s AND from_digest = %s",
            (to_digest, rel, from_digest),
        )[0][0]
        if found is not None and self._resume:
            self._resume, self._done = False, False
            self._page, self._at, self._after = [], 0, int(found)
        return found is not None


# One upsert per kind of a batch; the tail lock orders concurrent writers.
_ADD_TOTALS = (
    "INSERT INTO kind_totals(kind, entries, objects, bytes) VALUES (%s,%s,%s,%s)"
    " ON CONFLICT (kind) DO UPDATE SET entries = kind_totals.entries + EXCLUDED.entries,"
    " objects = kind_totals.objects + EXCLUDED.objects,"
    " bytes = kind_totals.bytes + EXCLUDED.bytes"
)


def _copy(cur: Any, table: str, columns: Sequence[str], rows: list[tuple[Any, ...]]) -> None:
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    )
    with cur.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def _connect(location: DatabaseURL, readonly: bool) -> Any:
    """A connection in autocommit mode: every write opens its own transaction."""
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
            for statement in SCHEMA_DDL.split(";"):
                if statement.strip():
                    conn.execute(statement)
            conn.execute(GUARD_DDL)
            conn.execute(GROWTH_DDL)
            for statement in trigger_ddl():
                conn.execute(statement)
            conn.execute("INSERT INTO meta(key, value) VALUES ('format', %s)", (FORMAT,))
            conn.execute("INSERT INTO meta(key, value) VALUES ('pg_writer_role', %s)", (writer,))
            conn.execute("INSERT INTO meta(key, value) VALUES ('pg_auditor_role', %s)", (auditor,))
            tables = ", ".join(ALL_TABLES)
            conn.execute(f"REVOKE ALL ON {tables} FROM PUBLIC")
            try:
                with conn.transaction():
                    for role in (writer, auditor):
                        if not conn.execute(
                            "SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)
                        ).fetchone():
                            conn.execute(f"CREATE ROLE {ident(role)} NOLOGIN")
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


def open_store(
    location: DatabaseURL,
    *,
    readonly: bool = False,
    policy: AdmissionPolicy | None = None,
    dry_run: bool = False,
) -> PostgresStore:
    """Open an existing ledger database; a database without ledger tables is an error."""
    conn = _connect(location, readonly)
    store = PostgresStore(location, conn, policy, dry_run)
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
