"""The storage interface: what every backend (an SQLite file, a PostgreSQL database) provides.

Invariants every backend keeps:
- Entries have contiguous sequence numbers from 0; ``seq`` is the Merkle leaf index.
- An object is stored once, under the digest of its stored bytes; appending it again
  returns the existing entry with ``new=False``.
- Nothing is updated or deleted. ``append_many`` is one transaction: all or nothing.
- Every batch passes the store's admission policy (``policy``, a value given to
  ``open_store``) inside that transaction; a store opened with ``dry_run`` runs
  everything, then rolls back (results say what would be written).
- The tree holds the hash of every complete subtree (``node(level, index)``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    # Only named in annotations: importing it would load the schema checks and the
    # canonical encoder into commands that only read.
    from ledger.store.location import DbLocation
    from ledger.store.prepared import Prepared
    from ledger.trust.admission import AdmissionPolicy


@dataclass(frozen=True)
class Entry:
    """One log entry. ``leaf`` is the RFC 8785 entry record hashed into the tree."""

    seq: int
    digest: str
    kind: str
    appended_at: str


@dataclass(frozen=True)
class StoredObject:
    """An object as stored: exactly the bytes that were hashed."""

    digest: str
    seq: int
    kind: str
    schema_version: str | None
    object_id: str | None
    object_version: int | None
    legacy_digest: str | None
    legacy_hints: str | None
    data: bytes

    def json(self) -> Any:  # the stored bytes' own JSON (json.loads), None when not JSON
        """The JSON value the stored bytes hold; None for a blob or bytes that are not
        JSON. A fresh value on every call.

        The one reading of a stored object's JSON: every rule, check and view that looks
        inside an object reads this. The rule for float hints: they are never applied.
        The bytes are the record (their digest is in the log); the hints beside them are
        not, and cannot be re-derived from them, so nothing judged may depend on them.
        RFC 8785 spells an integral double as an integer, and so does this value (``1.0``
        reads as ``1``, the same JSON number). The hints serve one purpose: upstream's
        legacy digest of the value as first parsed, which ``ledger.store.derived``
        recomputes into ``legacy_digest`` (checked on every store read).
        """
        if self.kind == "blob":  # ``ledger.schema.kinds.BLOB``: raw bytes, no JSON
            return None
        import json

        try:
            return json.loads(self.data)
        except (ValueError, TypeError, RecursionError):
            return None


#: A value as a database driver takes or gives it (sqlite3 and psycopg type them as Any;
#: a tampered file may hold any SQL type in any column): every row read is re-derived
#: and checked before it is handed on as typed.
SQLValue = Any

OBJECT_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(StoredObject))


def entries_query(
    mark: str, since: int, limit: int | None, kind: str | None
) -> tuple[str, list[SQLValue]]:
    """The SELECT of ``LedgerReader.entries`` (seq order, from ``since``, only ``kind``,
    at most ``limit``) and its arguments; ``mark`` is the driver's parameter mark."""
    sql = f"SELECT seq, digest, kind, appended_at FROM entries WHERE seq >= {mark}"
    args: list[SQLValue] = [since]
    if kind is not None:
        sql += f" AND kind = {mark}"
        args.append(kind)
    sql += " ORDER BY seq"
    if limit is not None:
        sql += f" LIMIT {mark}"
        args.append(min(limit, 2**63 - 1))  # a bigint: any larger limit is no limit
    return sql, args

#: The tables of a ledger, in every backend; all of them are append-only.
LEDGER_TABLES: tuple[str, ...] = (
    "meta",
    "objects",
    "entries",
    "refs",
    "tree_nodes",
    "checkpoints",
    "cosignatures",
)


# The meta keys every ledger holds, all written at init. Each is checked by verify:
# format exactly; origin against the log key's name; the key ids re-derived from the
# public keys; the public keys themselves against the trust anchors.
LEDGER_META_KEYS: tuple[str, ...] = (
    "format",
    "origin",
    "log_verifier_key",
    "log_key_id",
    "authority_public_key",
    "authority_key_id",
)


def stored_object(columns: Sequence[SQLValue]) -> StoredObject:
    """A ``StoredObject`` from a row of ``OBJECT_COLUMNS``, matched by name."""
    return StoredObject(**dict(zip(OBJECT_COLUMNS, columns, strict=True)))


@dataclass(frozen=True)
class RawObjectRow:
    """An ``objects`` row as read, before any type is trusted (a file may be tampered)."""

    digest: object
    seq: object
    kind: object
    schema_version: object
    object_id: object
    object_version: object
    legacy_digest: object
    legacy_hints: object
    data: object


def unchecked_object(raw: RawObjectRow) -> StoredObject:
    """The row as a ``StoredObject``, field by field, WITHOUT checking the SQL types.

    Both are frozen dataclasses with the same fields (``OBJECT_COLUMNS``, checked below),
    so the row's fields are copied in one step: a frozen class's ``__init__`` sets each
    field through ``object.__setattr__`` (~1 us per row, paid per entry by ``verify``).
    """
    obj = object.__new__(StoredObject)
    obj.__dict__.update(vars(raw))  # a tampered row keeps its SQL types
    return obj


if tuple(f.name for f in fields(RawObjectRow)) != OBJECT_COLUMNS:  # ``unchecked_object``
    raise TypeError("RawObjectRow's fields must be StoredObject's, in the same order")


@dataclass(frozen=True)
class RawLogRow:
    """One ``entries`` row in log order, with its object row (None when there is none)."""

    seq: object
    digest: object
    kind: object
    appended_at: object
    object: RawObjectRow | None


@dataclass(frozen=True)
class LedgerStats:
    """Figures of one consistent snapshot of a ledger."""

    size: int
    counts: dict[str, int]
    object_bytes: int
    latest_checkpoint_size: int | None
    origin: str | None
    storage_bytes: int | None = None  # a server's size of the database (None: a file's)


class NodeScan(Protocol):
    """Stored tree nodes, read in the order an audit closes them."""

    def get(self, level: int, index: int) -> tuple[object] | None:
        """``(hash,)`` as stored (any SQL type), or None when no such node is stored."""
        ...

    def hashes(self, level: int, first: int, end: int) -> list[tuple[object, object]]:
        """Every stored ``(idx, hash)`` of ``level`` with ``first <= idx < end``, by idx,
        as stored (any SQL type; a tampered file may repeat an idx)."""
        ...


def stored_run(nodes: NodeScan, level: int, first: int, end: int) -> list[bytes] | None:
    """The stored hashes of ``level``'s nodes ``first .. end - 1``, in index order, when
    each is stored exactly once and as bytes; else None, and the caller reads node by node
    (``NodeScan.get``), which names what is missing or wrong. One read per level: the
    audit and the browse build compare or copy a run of entries' nodes with it."""
    hashes: list[bytes] = []
    for idx, value in nodes.hashes(level, first, end):
        if type(idx) is not int or idx != first + len(hashes) or type(value) is not bytes:
            return None
        hashes.append(value)
    return hashes if len(hashes) == end - first else None


class RefScan(Protocol):
    """Stored reference rows, read in the order objects were appended."""

    def has(self, from_digest: str, rel: str, to_digest: str) -> bool: ...


@dataclass(frozen=True)
class AppendResult:
    """Outcome of appending one prepared object."""

    entry: Entry
    new: bool


@dataclass(frozen=True)
class CheckpointRow:
    """A signed tree head as stored: the C2SP signed note bytes."""

    size: int
    root: bytes
    note: bytes
    created_at: str


class LedgerReader(Protocol):
    """Read side of a ledger; prechecks run against this inside the write lock.

    ``policy`` is the admission policy the ledger was opened with: the one every append
    passes and every judgement of its records uses.
    """

    @property
    def policy(self) -> AdmissionPolicy: ...
    def size(self) -> int: ...
    def get(self, digest: str) -> StoredObject | None: ...
    def get_by_seq(self, seq: int) -> StoredObject | None: ...
    def by_legacy(self, legacy: str) -> list[StoredObject]: ...
    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]: ...
    def by_id(
        self, object_id: str, version: int | None = None, kind: str | None = None
    ) -> list[StoredObject]: ...
    def by_kind(self, kind: str) -> Iterator[StoredObject]: ...
    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]: ...
    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]: ...
    def counts(self) -> dict[str, int]:
        """Entries by kind, from totals the store keeps (no scan of the log)."""
        ...

    def node(self, level: int, index: int) -> bytes: ...
    def get_meta(self, key: str) -> str | None: ...
    def checkpoints(self) -> list[CheckpointRow]: ...
    def checkpoint_at(self, size: int) -> CheckpointRow | None: ...
    def stats(self) -> LedgerStats: ...
    def cosignatures(self, size: int) -> list[str]: ...


@dataclass(frozen=True)
class StorageFinding:
    """A problem a backend finds in its own storage (schema, triggers, grants, pages)."""

    code: str
    message: str
    seq: int | None = None
    digest: str | None = None


class SnapshotReader(Protocol):
    """A second reader of an audit's snapshot (``AuditSource.second_reader``): the
    whole-file reads an audit can run in another thread while its pass reads the log.

    Each method gives exactly what the ``AuditSource`` method of the same name (for
    ``integrity_findings``: the part of ``storage_findings(whole=True)`` that
    ``storage_findings(whole=False)`` leaves out) gives at that snapshot.
    """

    def integrity_findings(self) -> list[StorageFinding]: ...
    def orphan_objects(self, start: int = 0) -> list[tuple[object, object]]: ...
    def duplicate_objects(
        self, start: int = 0, limit: int = 100
    ) -> list[tuple[object, object]]: ...
    def interrupt(self) -> None:
        """Abort the statement running in the other thread (callable from any thread)."""
        ...


class AuditSource(LedgerReader, Protocol):
    """What a full audit streams: raw rows in log order, nodes and refs in write order.

    Everything backend-specific an audit needs is here; ``ledger.audit.full`` holds no
    SQL. Raw rows (``meta_rows``, ``raw_checkpoints``...) are as stored: any SQL type.
    """

    format_name: str  # the meta ``format`` value this backend writes
    meta_keys: tuple[str, ...]  # every meta key a ledger of this backend holds

    def audit_session(self) -> AbstractContextManager[None]:
        """One consistent snapshot for the whole audit, text read without failing."""
        ...

    def second_reader(self) -> SnapshotReader | None:
        """Inside ``audit_session``: a reader of exactly the session's snapshot on its own
        connection (usable from another thread), or None when there is none."""
        ...

    def storage_findings(self, whole: bool = True) -> list[StorageFinding]:
        """The backend's own checks: exact schema, append-only triggers, grants; with
        ``whole``, also those that read the whole database (SQLite's integrity check)."""
        ...

    def log_rows(self, since: int = 0) -> Iterator[RawLogRow]:
        """Entries from ``since`` on (an audit resumed at a checkpoint), in seq order."""
        ...

    def node_scan(self) -> NodeScan: ...
    def kind_totals_rows(self) -> list[tuple[object, object, object, object]]:
        """The stored per-kind totals (kind, entries, objects, bytes) as stored: any type."""
        ...

    def ref_scan(self, resume: bool = False) -> RefScan:
        """``resume``: the audit starts part-way through the log (``log_rows(since)``)."""
        ...

    def meta_rows(self) -> list[tuple[object, object]]: ...
    def raw_checkpoints(self) -> list[tuple[object, object, object, object]]: ...
    def tree_node_count(self) -> int: ...
    def tree_nodes_outside(self, size: int, limit: int) -> list[tuple[object, object]]:
        """(level, idx) of stored nodes that are no complete subtree of a ``size`` log."""
        ...

    def tree_nodes_past(self, size: int, limit: int) -> list[tuple[int, object]]:
        """(level, idx) of stored nodes at or past the end of a ``size`` log, per level
        (what an audit resumed at a checkpoint checks instead of ``tree_nodes_outside``)."""
        ...

    def orphan_objects(self, start: int = 0) -> list[tuple[object, object]]:
        """(seq, digest) of object rows from seq ``start`` on with no entry of the same
        seq and digest."""
        ...

    def duplicate_objects(self, start: int = 0, limit: int = 100) -> list[tuple[object, object]]:
        """(seq, digest) of every row of a digest stored more than once (one of them at
        seq ``start`` or later), by digest then seq."""
        ...

    def ref_count(self) -> int: ...
    def refs_with_objects(self) -> Iterator[tuple[object, ...]]:
        """(from, rel, to, seq, kind, data) of every ref with its source object, by from."""
        ...


Precheck = Callable[[LedgerReader], None]
# Runs inside the append transaction, after the rows are written, before COMMIT.
BeforeCommit = Callable[[list[AppendResult]], None]
# Signs the tree head of the given size (the log's size inside the write lock).
SignHead = Callable[[LedgerReader, int], CheckpointRow]


class SignatureVerdicts(Protocol):
    """Ed25519 verdicts computed ahead (``ledger.trust.judgement.SignatureMemo``): the
    same answer as verifying ``sig`` over ``message`` with the raw ``key`` here."""

    def verify(self, key: bytes, message: bytes, sig: bytes) -> bool: ...


class Store(LedgerReader, Protocol):
    """Read and append. Implementations must keep the module invariants."""

    location: DbLocation

    dry_run: bool

    def append_many(
        self,
        items: Sequence[Prepared],
        precheck: Precheck | None = None,
        before_commit: BeforeCommit | None = None,
        *,
        history: bool = False,
        signatures: SignatureVerdicts | None = None,
    ) -> list[AppendResult]: ...
    def add_checkpoint(self, sign: SignHead) -> CheckpointRow: ...
    def add_cosignatures(self, size: int, lines: Sequence[str]) -> int: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def bulk_session(self) -> AbstractContextManager[None]:
        """Tuning for a long run of appends (a backend may do nothing)."""
        ...

    def close(self) -> None: ...
