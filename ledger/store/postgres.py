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
ledger table, the server derives tree nodes and per-kind totals itself (triggers on
``entries`` and ``objects``, ``postgres_schema``), and ``init`` creates a writer role
(INSERT, SELECT; SELECT only on the derived tables) and an auditor role (SELECT) when
the connecting user may create roles. Every writer login may insert rows with its own
client, past this code: lookups by a side column skip rows that do not re-derive
(``SQLStore.WRITERS_INSERT_ROWS``), and a held tail lock is waited for a bounded time.
``ledger.store.postgres_audit`` is what ``verify`` checks of all that (tables, columns,
indexes, triggers, roles, grants).

As on SQLite: the admission policy runs inside the transaction
after the rows are written, a dry run keeps one outer transaction (rolled back on
close) with a savepoint per batch, checkpoints are logged as entries, object rows are
re-derived from their bytes on every read.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any

from ledger.errors import (
    AppendOnlyError,
    IntegrityError,
    NotFound,
    RuleViolation,
    StorageError,
)
from ledger.store import postgres_audit
from ledger.store.base import (
    OBJECT_COLUMNS,
    Entry,
    NodeScan,
    RawLogRow,
    RawObjectRow,
    RefScan,
    SnapshotReader,
    SQLValue,
    StorageFinding,
    StoredObject,
    entries_query,
)
from ledger.store.batch import BatchRows
from ledger.store.location import PostgresURL, redact
from ledger.store.postgres_schema import (
    ALL_TABLES,
    DERIVE_DDL,
    FORMAT,
    GROWTH_DDL,
    GUARD_DDL,
    META_KEYS,
    OLD_FORMATS,
    SCHEMA_DDL,
    default_roles,
    grant_statements,
    ident,
    migrate_statements,
    trigger_ddl,
)
from ledger.store.sqlstore import INT64_MAX, SQLStore

if TYPE_CHECKING:
    from ledger.trust.admission import AdmissionPolicy

try:
    import psycopg
    from psycopg import sql
except ImportError:  # pragma: no cover - exercised only without the extra
    psycopg = None  # type: ignore[assignment]


class _SecondErrorOfACopy(logging.Filter):
    """Drops psycopg's warning "error ignored terminating <Copy>": when a COPY ends by
    an exception (the server died), psycopg's clean-up fails too and logs that second
    error while the first propagates. The first is the one the store reports, as the
    one ``error:`` line; the second, printed by logging's last-resort handler, made
    that two lines. Every other psycopg record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("error ignored terminating")


@contextmanager
def quiet_second_copy_error() -> Iterator[None]:
    """While the store's own COPY runs, and only then, psycopg's second error of a COPY
    cut short is dropped: a program that uses psycopg beside the store keeps its log."""
    log, only = logging.getLogger("psycopg"), _SecondErrorOfACopy()
    log.addFilter(only)
    try:
        yield
    finally:
        log.removeFilter(only)

# One advisory lock per database serialises the log's tail: the first 8 bytes of
# sha256("provledger log tail") as a signed bigint.
TAIL_LOCK = int.from_bytes(hashlib.sha256(b"provledger log tail").digest()[:8], "big", signed=True)
INSTALL_HINT = "pip install 'provledger[postgres]'"
# How long a writer waits for the tail lock before it fails (seconds; env override).
LOCK_TIMEOUT_S = 60
LOCK_TIMEOUT_ENV = "PROVLEDGER_PG_LOCK_TIMEOUT"

#: psycopg's connection and cursor: the driver is an optional dependency, imported when a
#: PostgreSQL ledger is opened, so its types are named here by role.
Connection = Any
Cursor = Any  # (as above)


def lock_timeout_ms() -> int:
    """The tail-lock wait in ms: ``$PROVLEDGER_PG_LOCK_TIMEOUT`` seconds, else 60 s."""
    text = os.environ.get(LOCK_TIMEOUT_ENV)
    try:
        seconds = float(text) if text else LOCK_TIMEOUT_S
    except ValueError:
        seconds = LOCK_TIMEOUT_S
    return max(1, int(seconds * 1000))


_PAGE = 2000  # rows per round trip when streaming


@functools.lru_cache(maxsize=512)
def pyformat(query: str) -> str:
    """A statement written with ``?`` placeholders (sqlite3's qmark style, the one
    ``SQLStore`` speaks) in psycopg's format style: ``%s``, a literal ``%`` doubled.
    No statement of a ledger holds ``?`` other than as a placeholder."""
    return query.replace("%", "%%").replace("?", "%s")


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


class PostgresStore(SQLStore):
    """A ledger in one PostgreSQL database. Use ``open_store`` or ``create_store``."""

    format_name = FORMAT
    meta_keys = META_KEYS
    # Every writer login may insert rows with its own client (docs/POSTGRES.md).
    WRITERS_INSERT_ROWS = True

    def __init__(
        self,
        location: PostgresURL,
        conn: Connection,
        policy: AdmissionPolicy | None = None,
        dry_run: bool = False,
    ) -> None:
        self.location = location
        self._url = location  # (``location`` is typed as any ledger location in the base)
        self._conn = conn
        self._where = redact(location.url)
        self._policy = policy
        self.dry_run = dry_run
        self._dry: Connection | None = None  # a dry run's outer transaction, rolled back by close()

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

    def _idle(self) -> bool:
        return bool(self._conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE)

    # -- transactions ----------------------------------------------------------------
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
                # read and written under it; everything else was done before. A writer
                # that holds it (another client, stuck or hostile) stalls the others
                # only so long: past the lock timeout they fail with one line.
                self._conn.execute(
                    "SELECT set_config('lock_timeout', %s, true)", (f"{lock_timeout_ms()}ms",)
                )
                self._conn.execute("SELECT pg_advisory_xact_lock(%s)", (TAIL_LOCK,))
                self._conn.execute("SELECT set_config('lock_timeout', '0', true)")
                yield
        except psycopg.errors.LockNotAvailable:
            raise StorageError(
                f"ledger tail lock of {self._where}, got no lock within"
                f" {lock_timeout_ms() / 1000:g} s (another writer holds it), expected it"
                f" sooner (retry; the wait is ${LOCK_TIMEOUT_ENV}, docs/POSTGRES.md)"
            ) from None
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    # -- writing ---------------------------------------------------------------------
    def _insert_rows(self, rows: BatchRows) -> None:
        cur = self._conn.cursor()
        _copy(cur, "entries", ("seq", "digest", "kind", "appended_at"), rows.entries)
        _copy(cur, "objects", OBJECT_COLUMNS, rows.objects)
        if rows.refs:
            _copy(cur, "refs", ("from_digest", "rel", "to_digest"), rows.refs)
        # Tree nodes and per-kind totals are the server's to derive (triggers on entries
        # and objects, ``postgres_schema``): a writer login cannot write them.

    def _entries_for(self, digests: Sequence[str]) -> dict[str, Entry]:
        unique = list(dict.fromkeys(digests))
        if not unique:
            return {}
        rows = self._q(
            "SELECT o.digest, e.seq, e.digest, e.kind, e.appended_at FROM objects o"
            " JOIN entries e ON e.seq = o.seq WHERE o.digest = ANY(?)",
            (unique,),
        )
        # a row that disagrees with its entry is not "stored"
        found = {
            str(row[0]): Entry(int(row[1]), row[2], row[3], row[4])
            for row in rows
            if row[0] == row[2]
        }
        if found:
            # An object a writer login stored with index columns that lie is refused
            # here, loudly: appending it again would be "present" and never served.
            served = {o.digest for o in self._lookup("WHERE o.digest = ANY(?)", (list(found),))}
            for digest in sorted(set(found) - served):
                raise IntegrityError(
                    f"ledger object {digest} is stored with columns that disagree with its"
                    " bytes (written past admission), got a row that is not served, expected"
                    " one derived from them; run `provledger verify`, append other bytes"
                )
        return found

    def bulk_session(self) -> AbstractContextManager[None]:
        """Nothing to tune: the server's settings are the operator's."""
        return nullcontext()

    # -- reading ---------------------------------------------------------------------
    def _fetch(self, query: str, args: Sequence[SQLValue] = ()) -> list[SQLValue]:
        """Rows of a statement in psycopg's own ``%s`` style."""
        try:
            rows: list[SQLValue] = self._conn.execute(query, args).fetchall()
            return rows
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    def _q(self, query: str, args: Sequence[SQLValue] = ()) -> list[SQLValue]:
        return self._fetch(pyformat(query), args)

    def _execute(self, query: str, args: Sequence[SQLValue] = ()) -> int:
        try:
            return int(self._conn.execute(pyformat(query), args).rowcount)
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None

    def get(self, digest: str) -> StoredObject | None:
        rows = self._objects("WHERE o.digest = ?", (digest,))
        if rows and rows[0].digest != digest:
            raise self._mismatch(rows[0], "digest", rows[0].digest, digest)
        return rows[0] if rows else None

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        return self._lookup("WHERE o.legacy_digest = ? ORDER BY o.seq", (legacy,))

    def ids_of(self, digests: Sequence[str]) -> dict[str, tuple[str | None, int | None]]:
        """(object id, object version) of each stored digest, read from checked rows."""
        found = self._objects("WHERE o.digest = ANY(?)", (list(digests),))
        return {obj.digest: (obj.object_id, obj.object_version) for obj in found}

    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        """Ledger digests of up to ``limit`` objects whose ledger or legacy digest starts
        with ``prefix``, in digest order (text columns use the byte order of "C")."""
        bounds = (prefix, prefix + "g")
        return [
            str(r[0])
            for r in self._q(
                "SELECT digest FROM objects WHERE digest >= ? AND digest < ?"
                " UNION SELECT digest FROM objects WHERE legacy_digest >= ?"
                " AND legacy_digest < ? ORDER BY 1 LIMIT ?",
                (*bounds, *bounds, limit),
            )
        ]

    def by_kind(self, kind: str) -> Iterator[StoredObject]:
        after = -1
        while True:
            rows = self._q(
                f"{self._OBJ} WHERE o.kind = ? AND o.seq > ? ORDER BY o.seq LIMIT {_PAGE}",
                (kind, after),
            )
            for row in rows:
                obj = self._served(row)
                if obj is not None:
                    yield obj
            if len(rows) < _PAGE:
                return
            after = int(rows[-1][1])

    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]:
        """Entries in seq order, streamed: what is read follows what is taken.

        A long read (no ``limit``, or one over ``_PAGE``) goes through a server-side
        cursor on a connection of its own, ``_PAGE`` rows per round trip: the first rows
        come after one page whatever the log's size, nothing else on this store's
        connection waits on it, and a reader that stops early (``log | head``; the
        generator's ``close``) ends the cursor and that connection. Inside a transaction
        of this store (a dry run's, whose rows only it sees) and for short reads, pages
        of ``_PAGE`` rows by seq on this connection instead.
        """
        if since > INT64_MAX:
            return
        if (limit is not None and limit <= _PAGE) or not self._idle():
            yield from self._entry_pages(since, limit, kind)
            return
        query, args = entries_query("?", max(since, 0), limit, kind)
        conn = _connect(self._url, readonly=True)
        try:
            # A server-side cursor lives in a transaction; this one is the cursor's alone.
            with conn.transaction(), conn.cursor(name="provledger_entries") as cur:
                cur.itersize = _PAGE
                cur.execute(pyformat(query), args)
                for seq, digest, k, appended_at in cur:
                    yield Entry(int(seq), digest, k, appended_at)
        except psycopg.Error as exc:
            raise _storage_error(exc, self._where) from None
        finally:
            conn.close()

    def _entry_pages(self, since: int, limit: int | None, kind: str | None) -> Iterator[Entry]:
        left = limit
        at = max(since, 0)
        while left is None or left > 0:
            page = _PAGE if left is None else min(_PAGE, left)
            rows = self._q(*entries_query("?", at, page, kind))
            for seq, digest, k, appended_at in rows:
                yield Entry(int(seq), digest, k, appended_at)
            if left is not None:
                left -= len(rows)
            if len(rows) < page:
                return
            at = int(rows[-1][0]) + 1

    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]:
        """References to ``digest``; each is checked against the referring object's bytes."""
        query = "SELECT from_digest, rel, to_digest FROM refs WHERE to_digest = ?"
        args: list[SQLValue] = [digest]
        if rel is not None:
            query += " AND rel = ?"
            args.append(rel)
        return self._checked_refs(digest, self._q(query + " ORDER BY pos", args))

    def cosignatures(self, size: int) -> list[str]:
        """Witness signature lines stored for the checkpoint at ``size``, in arrival order.

        A line that is not a signature line (a writer login's own INSERT) is skipped, so
        it cannot make every bundle of that checkpoint unreadable (``WRITERS_INSERT_ROWS``);
        whether a line's signature holds is judged, as always, against a witness key."""
        from ledger.errors import LedgerError
        from ledger.log.note import parse_signature_line

        if not 0 <= size <= INT64_MAX:
            return []
        rows = self._q("SELECT line FROM cosignatures WHERE size = ? ORDER BY pos", (size,))
        served = []
        for (line,) in rows:
            try:
                parse_signature_line(str(line))
            except LedgerError:
                continue
            served.append(str(line))
        return served

    def storage_bytes(self) -> int:
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
                f" WHERE e.seq > ? ORDER BY e.seq LIMIT {_PAGE}",
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
            " OR idx >= (?::bigint >> level) ORDER BY level, idx LIMIT ?",
            (size, limit),
        )
        return [(a, b) for a, b in rows]

    def tree_nodes_past(self, size: int, limit: int) -> list[tuple[int, object]]:
        found: list[tuple[int, object]] = []
        for level in range(63):
            found += [
                (level, idx)
                for (idx,) in self._q(
                    "SELECT idx FROM tree_nodes WHERE level = ? AND idx >= ? ORDER BY idx LIMIT ?",
                    (level, size >> level, limit),
                )
            ]
        return found

    def orphan_objects(self, start: int = 0) -> list[tuple[object, object]]:
        rows = self._q(
            "SELECT o.seq, o.digest FROM objects o LEFT JOIN entries e ON e.seq = o.seq"
            " WHERE (e.seq IS NULL OR e.digest != o.digest) AND o.seq >= ?",
            (start,),
        )
        return [(a, b) for a, b in rows]

    def duplicate_objects(self, start: int = 0, limit: int = 100) -> list[tuple[object, object]]:
        # ``objects.digest`` is the primary key: the server keeps one row per digest, so
        # this finds something only when that key was dropped (a schema finding too).
        rows = self._q(
            "SELECT seq, digest FROM objects WHERE digest IN (SELECT digest FROM objects"
            " GROUP BY digest HAVING count(*) > 1 AND max(seq) >= ? LIMIT ?)"
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

    def catalog(self, query: str, args: Sequence[SQLValue] = ()) -> list[SQLValue]:
        """Rows of a query on the system catalogs (``postgres_audit``), in psycopg's
        ``%s`` style."""
        return self._fetch(query, args)

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

    def hashes(self, level: int, first: int, end: int) -> list[tuple[object, object]]:
        return [
            (int(i), bytes(h))
            for i, h in self._store._q(
                "SELECT idx, hash FROM tree_nodes WHERE level = ? AND idx >= ? AND idx < ?"
                " ORDER BY idx",
                (level, first, end),
            )
        ]

    def get(self, level: int, idx: int) -> tuple[bytes] | None:
        page = self._pages.get(level)
        if page is None or (idx not in page and idx >= self._next.get(level, 0)):
            rows = self._store._q(
                "SELECT idx, hash FROM tree_nodes WHERE level = ? AND idx >= ?"
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
                "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, idx)
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
        self._page: list[tuple[SQLValue, ...]] = []
        self._at = 0
        self._after = -1
        self._done = resume  # nothing to page until the first point query says where
        self._resume = resume

    def _head(self) -> tuple[SQLValue, ...] | None:
        if self._at == len(self._page) and not self._done:
            self._page = self._store._q(
                "SELECT pos, from_digest, rel, to_digest FROM refs WHERE pos > ?"
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
            "SELECT min(pos) FROM refs WHERE to_digest = ? AND rel = ? AND from_digest = ?",
            (to_digest, rel, from_digest),
        )[0][0]
        if found is not None and self._resume:
            self._resume, self._done = False, False
            self._page, self._at, self._after = [], 0, int(found)
        return found is not None


def _copy(
    cur: Cursor, table: str, columns: Sequence[str], rows: list[tuple[SQLValue, ...]]
) -> None:
    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table), sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    )
    with quiet_second_copy_error(), cur.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def _connect(location: PostgresURL, readonly: bool) -> Connection:
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


def create_store(location: PostgresURL) -> tuple[PostgresStore, list[str]]:
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
            for statement in DERIVE_DDL:
                conn.execute(statement)
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


def has_ledger_tables(location: PostgresURL) -> bool:
    """True when the database already holds a ledger's ``meta`` table."""
    conn = _connect(location, readonly=True)
    try:
        return bool(conn.execute("SELECT to_regclass('meta') IS NOT NULL").fetchone()[0])
    except psycopg.Error as exc:
        raise _storage_error(exc, redact(location.url)) from None
    finally:
        conn.close()


def open_store(
    location: PostgresURL,
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
    fmt = store.get_meta("format") if exists else None
    if fmt in OLD_FORMATS:
        conn.close()
        raise StorageError(
            f"ledger {store._where} has an earlier layout, got format {fmt}, expected"
            f" {FORMAT}; run `provledger migrate` on it once (docs/POSTGRES.md)"
        )
    if fmt != FORMAT:
        conn.close()
        raise StorageError(
            f"not a provledger ledger, got no {FORMAT} format record in {store._where},"
            " expected a database initialised by `provledger init`"
        )
    return store


def migrate_store(location: PostgresURL) -> str | None:
    """Bring a ledger made by an earlier release to this format, in one transaction: the
    server then derives tree nodes and totals, and the writer role may only read them.
    Returns the format migrated from, or None when the ledger is already current."""
    conn = _connect(location, readonly=False)
    where = redact(location.url)
    try:
        with conn.transaction():
            row = conn.execute("SELECT value FROM meta WHERE key = 'format' FOR UPDATE").fetchone()
            fmt = None if row is None else row[0]
            if fmt == FORMAT:
                return None
            if fmt not in OLD_FORMATS:
                raise StorageError(
                    f"cannot migrate {where}, got format {fmt!r},"
                    f" expected one of {', '.join(OLD_FORMATS)}"
                )
            writer = conn.execute("SELECT value FROM meta WHERE key = 'pg_writer_role'").fetchone()
            # The format row is updated once, here: the append-only guard steps aside.
            conn.execute("ALTER TABLE meta DISABLE TRIGGER meta_no_update")
            for statement in migrate_statements(str(writer[0])):
                conn.execute(statement)
            conn.execute("ALTER TABLE meta ENABLE TRIGGER meta_no_update")
            return str(fmt)
    except psycopg.Error as exc:
        raise _storage_error(exc, where) from None
    finally:
        conn.close()
