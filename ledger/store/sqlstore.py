"""What the SQLite and PostgreSQL stores share: one class holding every step of the
``Store`` protocol that is the same SQL and the same logic in both.

A backend subclasses ``SQLStore`` and supplies only what differs: its connection and
how a statement runs (``_q``, ``_execute``), its write transaction (``_write``) and read
snapshot (``snapshot``), how a batch's planned rows are inserted (``_insert_rows``), and
the lookups that use a backend's own indexes (``get``, ``by_legacy``, ``entries``...).

Statements here and in the backends' ``_q``/``_execute`` are written with ``?``
placeholders (sqlite3's qmark style); the PostgreSQL store turns them into psycopg's
``%s`` (``ledger.store.postgres.pyformat``).

Invariants (those of ``ledger.store.base``): every write runs inside ``_write``, one
transaction holding the log's tail; object rows are re-derived from their bytes on every
read (``_checked``); the per-kind totals are read as stored and checked for shape.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, ClassVar, Self

from ledger.errors import AppendOnlyError, IntegrityError, NotFound, RuleViolation
from ledger.log.leaf import utc_now
from ledger.store.base import (
    OBJECT_COLUMNS,
    AppendResult,
    BeforeCommit,
    CheckpointRow,
    Entry,
    LedgerStats,
    Precheck,
    SignatureVerdicts,
    SignHead,
    SQLValue,
    StoredObject,
    stored_object,
)
from ledger.store.batch import (
    BatchRows,
    admitted_batch,
    checkpoint_first,
    plan_rows,
)
from ledger.store.derived import derive, row_problem
from ledger.store.location import DbLocation
from ledger.store.rules import copied_checkpoint_is_new, head_checkpoint

if TYPE_CHECKING:
    # Only named in annotations: importing it would load the schema checks and the
    # canonical encoder into commands that only read.
    from ledger.store.prepared import Prepared
    from ledger.trust.admission import AdmissionPolicy

# Largest value an SQLite INTEGER or a PostgreSQL bigint holds; user numbers beyond it
# can match nothing.
INT64_MAX = 2**63 - 1

_CHECKPOINT_COLUMNS = "size, root, note, created_at"
# One upsert per kind of a batch, inside the batch's transaction (the same statement in
# SQLite and PostgreSQL: the table-qualified names are what PostgreSQL requires).
ADD_TOTALS = (
    "INSERT INTO kind_totals(kind, entries, objects, bytes) VALUES (?,?,?,?)"
    " ON CONFLICT (kind) DO UPDATE SET entries = kind_totals.entries + EXCLUDED.entries,"
    " objects = kind_totals.objects + EXCLUDED.objects,"
    " bytes = kind_totals.bytes + EXCLUDED.bytes"
)


class SQLStore(ABC):
    """A ledger in an SQL database: the ``Store`` steps both backends share."""

    location: DbLocation
    dry_run: bool
    _policy: AdmissionPolicy | None

    # -- what a backend supplies -------------------------------------------------------
    @abstractmethod
    def _q(self, query: str, args: Sequence[SQLValue] = ()) -> list[SQLValue]:
        """The rows of one statement (``?`` placeholders); errors become storage errors."""

    @abstractmethod
    def _execute(self, query: str, args: Sequence[SQLValue] = ()) -> int:
        """Run one statement that returns no rows; the number of rows it changed."""

    @abstractmethod
    def _write(self) -> AbstractContextManager[None]:
        """One write transaction holding the log's tail: COMMIT when the block ends,
        ROLLBACK on any exception. In a dry run, a savepoint of the outer transaction
        that ``close`` rolls back."""

    @abstractmethod
    def snapshot(self) -> AbstractContextManager[None]:
        """Every read inside sees one snapshot; inside a transaction already (a dry
        run's), that transaction's view."""

    @abstractmethod
    def _insert_rows(self, rows: BatchRows) -> None:
        """Insert a batch's planned rows (entries, objects, refs, nodes, totals)."""

    @abstractmethod
    def _entries_for(self, digests: Sequence[str]) -> dict[str, Entry]:
        """Entries of the already-stored objects among ``digests`` (an object row that
        disagrees with its entry is not "stored")."""

    @abstractmethod
    def close(self) -> None: ...

    # Lookups through each backend's own indexes and paging (``LedgerReader``).
    @abstractmethod
    def get(self, digest: str) -> StoredObject | None: ...
    @abstractmethod
    def by_legacy(self, legacy: str) -> list[StoredObject]: ...
    @abstractmethod
    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]: ...
    @abstractmethod
    def by_kind(self, kind: str) -> Iterator[StoredObject]: ...
    @abstractmethod
    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]: ...
    @abstractmethod
    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]: ...
    @abstractmethod
    def cosignatures(self, size: int) -> list[str]: ...

    def storage_bytes(self) -> int | None:
        """What the database takes on a server (None: a file's size is the file's)."""
        return None

    def _ensure_cosignatures_table(self) -> None:
        """Inside ``add_cosignatures``'s transaction, before it writes (a backend whose
        older ledgers lack the table adds it here)."""
        return None

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def policy(self) -> AdmissionPolicy:
        """The admission policy every append passes and every judgement of this ledger
        uses: the one given to ``open_store``, else the package's default (built on first
        use: a store that only reads never loads it)."""
        if self._policy is None:
            from ledger.trust.admission import default_policy

            self._policy = default_policy()
        return self._policy

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------
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
        (``signatures``: Ed25519 verdicts computed ahead, e.g. by import workers).

        ``before_commit(results)`` runs last, after admission and before COMMIT (e.g. to
        write a command's output file): if it raises, nothing is recorded.
        """
        policy = self.policy
        with self._write():
            return admitted_batch(
                self,
                items,
                self._append_batch,
                policy,
                precheck,
                before_commit,
                history=history,
                signatures=signatures,
            )

    def _append_batch(self, items: Sequence[Prepared]) -> list[AppendResult]:
        """Insert the new items in order; inside the caller's transaction.

        Same rows as appending one by one (an object already stored, or seen earlier
        in the batch, gets its existing entry back with ``new=False``), planned once
        (``ledger.store.batch.plan_rows``) and inserted table by table.
        """
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
        rows = plan_rows(items, known, seq, self, stamps)
        if rows.entries:
            # Same transaction as the rows: the totals never disagree with a committed
            # prefix, and a dry run's savepoint rolls them back with the rows.
            self._insert_rows(rows)
        return rows.results

    def append_copies(self, items: Sequence[Prepared], stamps: Sequence[str], first: int) -> None:
        """Append entries copied from another ledger, as they are: their ``appended_at``,
        checkpoint records included, starting at seq ``first``.

        No admission: the entries were admitted where they were first written, and the
        copy's roots are compared with the source's signed checkpoints
        (``ledger.store.copy``). Refused unless the log has exactly ``first`` entries and
        none of ``items`` is stored yet, so a copy never interleaves with another writer.
        """
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
                self._insert_checkpoint(row)

    def _insert_checkpoint(self, row: CheckpointRow) -> None:
        self._execute(
            f"INSERT INTO checkpoints({_CHECKPOINT_COLUMNS}) VALUES (?,?,?,?)",
            (row.size, row.root, row.note, row.created_at),
        )

    def add_checkpoint(self, sign: SignHead) -> CheckpointRow:
        """Sign the current tree head and store it, holding the write lock throughout.

        ``sign(reader, size)`` returns the row for the log as it is inside the lock, so
        the stored checkpoint is always of the newest size: the next append logs it as
        the entry at ``seq == size`` (``ledger.log.checkpoint_record``). A checkpoint
        already stored for the current size is returned instead (idempotent).
        """
        if self.dry_run:
            # Sign the head as it is and write nothing.
            with self.snapshot():
                return self._checkpoint_of_head(sign)
        with self._write():
            row = self._checkpoint_of_head(sign)
            if self.checkpoint_at(row.size) is None:
                if self._q("SELECT 1 FROM checkpoints WHERE size = ?", (row.size,)):
                    # A row reads skip (WRITERS_INSERT_ROWS) holds this size.
                    raise RuleViolation(
                        f"checkpoint, got a stored row at size {row.size} that the log key"
                        " did not sign (written past provledger; run `provledger verify`),"
                        " expected none: append an entry, then checkpoint the new size"
                    )
                self._insert_checkpoint(row)
        return row

    def _checkpoint_of_head(self, sign: SignHead) -> CheckpointRow:
        """The stored checkpoint of the current size, or ``sign``'s row for it."""
        size = self.size()
        return head_checkpoint(size, self.checkpoint_at(size), lambda n: sign(self, n))

    def add_cosignatures(self, size: int, lines: Sequence[str]) -> int:
        """Store witness signature lines for the checkpoint at ``size``; return how many
        were new. Lines are kept verbatim (self-authenticating: checked against trusted
        witness keys when read); the checkpoint must exist."""
        with self._write():
            self._ensure_cosignatures_table()
            if self.checkpoint_at(size) is None:
                raise NotFound(f"checkpoint, got none at size {size}, expected a stored one")
            added = 0
            stamp = utc_now()
            for line in dict.fromkeys(lines):
                added += self._execute(
                    "INSERT INTO cosignatures(size, line, added_at) VALUES (?,?,?)"
                    " ON CONFLICT DO NOTHING",
                    (size, line, stamp),
                )
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
            self._execute("INSERT INTO meta(key, value) VALUES (?,?)", (key, value))

    # -- reading -----------------------------------------------------------------------
    def size(self) -> int:
        row = self._q("SELECT max(seq) FROM entries")[0]
        return 0 if row[0] is None else int(row[0]) + 1

    # Object rows come with their log entry's digest and kind: the entry is the record
    # (a Merkle leaf), the row only an index of it, checked on every read.
    _OBJ = (
        f"SELECT {', '.join('o.' + name for name in OBJECT_COLUMNS)}, e.digest, e.kind"
        " FROM objects o LEFT JOIN entries e ON e.seq = o.seq"
    )

    def _checked(self, row: Sequence[SQLValue]) -> StoredObject:
        """The object of a row, after checking every column against the bytes.

        Bytes must hash to the entry's digest, and kind, index columns and float hints
        must be what the bytes imply (``ledger.store.derived``); else ``IntegrityError``.
        """
        obj: StoredObject | None
        try:
            width = len(OBJECT_COLUMNS)
            obj = stored_object(row[:width])
            problem = row_problem(obj, row[width], row[width + 1])
        except (TypeError, ValueError) as exc:
            problem, obj = f"unreadable object row ({exc})", None
        if problem is not None or obj is None:
            where = "" if obj is None else f" at seq {obj.seq} ({obj.digest})"
            raise IntegrityError(
                f"ledger object row{where} disagrees with its bytes, got {problem},"
                " expected a row derived from them; run `provledger verify`"
            )
        return obj

    def _objects(self, where: str, args: Sequence[SQLValue]) -> list[StoredObject]:
        return [self._checked(r) for r in self._q(f"{self._OBJ} {where}", args)]

    #: True when rows may reach the tables past this code by design, not only by
    #: tampering: a PostgreSQL writer login inserts with its own client. A lookup by a
    #: side column (id, kind, legacy digest) and a reference lookup then skip a row that
    #: does not re-derive, so one made-up row cannot make every read of that id, kind or
    #: target fail for everyone; ``verify`` reports it. A read of one object by digest
    #: or seq still refuses such a row (exit 1). False (SQLite): every such row refuses.
    WRITERS_INSERT_ROWS: ClassVar[bool] = False

    def _served(self, row: Sequence[SQLValue]) -> StoredObject | None:
        """``_checked``, or None for a row a lookup by a side column skips."""
        if not self.WRITERS_INSERT_ROWS:
            return self._checked(row)
        try:
            return self._checked(row)
        except IntegrityError:
            return None

    def _lookup(self, where: str, args: Sequence[SQLValue]) -> list[StoredObject]:
        """``_objects`` for a lookup by a side column (see ``WRITERS_INSERT_ROWS``)."""
        rows = self._q(f"{self._OBJ} {where}", args)
        return [obj for r in rows if (obj := self._served(r)) is not None]

    @staticmethod
    def _mismatch(obj: StoredObject, column: str, got: object, asked: object) -> IntegrityError:
        return IntegrityError(
            f"ledger index disagrees with the rows, got {column} {got!r} at seq {obj.seq}"
            f" ({obj.digest}), expected {asked!r}; run `provledger verify`"
        )

    def get_by_seq(self, seq: int) -> StoredObject | None:
        if not 0 <= seq <= INT64_MAX:
            return None
        rows = self._objects("WHERE o.seq = ?", (seq,))
        if rows and rows[0].seq != seq:
            raise self._mismatch(rows[0], "seq", rows[0].seq, seq)
        return rows[0] if rows else None

    def by_id(
        self, object_id: str, version: int | None = None, kind: str | None = None
    ) -> list[StoredObject]:
        if version is not None and not 0 <= version <= INT64_MAX:
            return []
        where = "WHERE o.object_id = ?"
        args: list[SQLValue] = [object_id]
        if version is not None:
            where += " AND o.object_version = ?"
            args.append(version)
        if kind is not None:
            where += " AND o.kind = ?"
            args.append(kind)
        found = self._lookup(where + " ORDER BY o.seq", args)
        for obj in found:
            if obj.object_id != object_id:
                raise self._mismatch(obj, "id", obj.object_id, object_id)
            if version is not None and obj.object_version != version:
                raise self._mismatch(obj, "version", obj.object_version, version)
            if kind is not None and obj.kind != kind:
                raise self._mismatch(obj, "kind", obj.kind, kind)
        return found

    def _checked_refs(
        self, digest: str, rows: Iterable[Sequence[SQLValue]]
    ) -> list[tuple[str, str]]:
        """(from, rel) of reference rows (from, rel, to) to ``digest``, each checked
        against the referring object's bytes."""
        out: list[tuple[str, str]] = []
        for source, relation, target in rows:
            try:
                obj = self.get(source) if isinstance(source, str) else None
            except IntegrityError:
                if not self.WRITERS_INSERT_ROWS:
                    raise
                obj = None
            implied = () if obj is None else derive(obj.kind, obj.data, obj.legacy_hints).refs
            if target != digest or (relation, target) not in implied:
                if self.WRITERS_INSERT_ROWS:
                    continue  # see WRITERS_INSERT_ROWS; verify reports it (ref-extra)
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
        """(kind, entries, objects, bytes) rows as stored (any SQL type), by kind."""
        return [
            (k, e, o, b)
            for k, e, o, b in self._q(
                "SELECT kind, entries, objects, bytes FROM kind_totals ORDER BY kind"
            )
        ]

    def kind_totals(self) -> dict[str, tuple[int, int, int]]:
        """Stored (entries, objects, bytes) by kind, O(kinds). Kept by the append path in
        each batch's transaction; ``verify`` re-derives them from the rows."""
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
        rows = [
            CheckpointRow(int(s), bytes(r), bytes(n), str(c))
            for s, r, n, c in self._q(
                f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints ORDER BY size"
            )
        ]
        return [row for row in rows if self._served_checkpoint(row)]

    def checkpoint_at(self, size: int) -> CheckpointRow | None:
        if not 0 <= size <= INT64_MAX:
            return None
        rows = self._q(f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE size = ?", (size,))
        if not rows:
            return None
        s, r, n, c = rows[0]
        row = CheckpointRow(int(s), bytes(r), bytes(n), str(c))
        return row if self._served_checkpoint(row) else None

    def _served_checkpoint(self, row: CheckpointRow) -> bool:
        """False for a checkpoint row a writer login made up (see ``WRITERS_INSERT_ROWS``):
        beyond the log, its note not signed by the log key over its size and root, or
        not loggable as a record. Reads skip it, so it can neither stop the next append
        (which logs the checkpoint of the current size) nor a bundle; ``verify`` reports
        it (it reads the raw rows). The signature stands for the root: only the log key
        signs a tree head."""
        if not self.WRITERS_INSERT_ROWS:
            return True
        import hmac

        from ledger.errors import LedgerError
        from ledger.log.checkpoint_record import checkpoint_record
        from ledger.log.note import open_checkpoint

        # Rows never change and the log only grows: a row once served stays served.
        signed: set[CheckpointRow] = self.__dict__.setdefault("_signed_checkpoints", set())
        if row in signed:
            return True
        vkey = self.get_meta("log_verifier_key")
        if vkey is None or not 0 <= row.size <= self.size():
            return False
        try:
            body = open_checkpoint(row.note, vkey, self.get_meta("origin"))
            checkpoint_record(row)
        except (LedgerError, ValueError):
            return False
        if body.size != row.size or not hmac.compare_digest(body.root_hash, row.root):
            return False
        signed.add(row)
        return True

    def stats(self) -> LedgerStats:
        """Counts, sizes and the latest checkpoint, all from one snapshot."""
        with self.snapshot():
            # The stored totals, not a scan: O(kinds). Their sum must be the log's size
            # (a cheap guard); ``verify`` re-derives every figure from the rows.
            totals = self.kind_totals()
            size = self.size()
            if sum(entries for entries, _o, _b in totals.values()) != size:
                raise IntegrityError(
                    f"ledger totals disagree with the log, got"
                    f" {sum(e for e, _o, _b in totals.values())} entries by kind, expected"
                    f" {size}; run `provledger verify`"
                )
            if self.WRITERS_INSERT_ROWS:
                served = self.checkpoints()
                latest = served[-1].size if served else None
            else:
                latest = self._q("SELECT max(size) FROM checkpoints")[0][0]
            return LedgerStats(
                size=size,
                counts={kind: e for kind, (e, _o, _b) in sorted(totals.items()) if e},
                object_bytes=sum(b for _e, _o, b in totals.values()),
                latest_checkpoint_size=None if latest is None else int(latest),
                origin=self.get_meta("origin"),
                storage_bytes=self.storage_bytes(),
            )
