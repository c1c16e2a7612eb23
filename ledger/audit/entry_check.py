"""The audit's checks of one log entry that need nothing before it (``check_entry``).

What an entry's own row can tell, apart from its place in the log: its columns' SQL
types and ``appended_at`` form, its object row (present, well typed, naming the same
digest and kind), ``check_object`` of that row, and its Merkle leaf hash. None of it
reads another entry, so it runs wherever the object checks run (the audit's workers,
``ledger.audit.parallel``), over exactly the row the auditing process holds; what
depends on the entries before (sequence, references, admission replay, tree nodes,
checkpoints) stays with that process.

``check_chunk`` runs them over consecutive entries, with their leaf hashes and the
per-kind totals the store keeps (``run_totals``), re-derived from the rows.
"""

from __future__ import annotations

import re
from typing import Any

from ledger.audit.findings import LedgerFinding
from ledger.audit.object_check import check_object, clean_columns
from ledger.errors import LedgerError
from ledger.log import merkle
from ledger.log.leaf import entry_record
from ledger.store.base import OBJECT_COLUMNS, RawObjectRow, StoredObject

__all__ = [
    "ChunkCheck",
    "Columns",
    "EntryCheck",
    "EntryRow",
    "Packed",
    "check_chunk",
    "check_columns",
    "check_entry",
    "leaf_hash_of",
    "object_row_problem",
    "object_row_problem_by_name",
    "pack",
    "run_totals",
    "unchecked_row",
    "unpack",
]

#: A column of a log or object row as stored: a tampered file may hold any SQL type there,
#: so the audit reads it untyped and judges its type itself.
Column = Any

#: What ``check_entry`` found: the entry's findings in the audit's order (columns, object
#: row, ``check_object``), the references its object's bytes imply (None: no usable
#: object row, so no object checks either), and whether ``check_object`` found nothing.
EntryCheck = tuple[list[LedgerFinding], list[tuple[str, str]] | None, bool]

_APPENDED_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")

_OBJECT_TYPES: dict[str, type | tuple[type, ...]] = {
    "digest": str,
    "seq": int,
    "kind": str,
    "schema_version": (str, type(None)),
    "object_id": (str, type(None)),
    "object_version": (int, type(None)),
    "legacy_digest": (str, type(None)),
    "legacy_hints": (str, type(None)),
    "data": bytes,
}


def object_row_problem(row: RawObjectRow | StoredObject) -> str | None:
    """The first column whose SQL type the ``objects`` table does not allow, or None
    (``row``: as read, types unchecked)."""
    r: Column = row
    # The usual row, decided by exact types (bool is not int, and a subclass of an
    # allowed type only reaches the loop below, which then decides as before).
    if (
        type(r.digest) is str
        and type(r.seq) is int
        and type(r.kind) is str
        and type(r.data) is bytes
        and (r.schema_version is None or type(r.schema_version) is str)
        and (r.object_id is None or type(r.object_id) is str)
        and (r.object_version is None or type(r.object_version) is int)
        and (r.legacy_digest is None or type(r.legacy_digest) is str)
        and (r.legacy_hints is None or type(r.legacy_hints) is str)
    ):
        return None
    return object_row_problem_by_name(row)


def object_row_problem_by_name(row: RawObjectRow | StoredObject) -> str | None:
    """``object_row_problem``'s definition, column by column in ``OBJECT_COLUMNS`` order."""
    for name in OBJECT_COLUMNS:
        value = getattr(row, name)
        if not isinstance(value, _OBJECT_TYPES[name]) or isinstance(value, bool):
            return f"objects.{name} has SQL type {type(value).__name__}"
    return None


def leaf_hash_of(seq: Column, kind: Column, digest: Column, appended_at: Column) -> bytes:
    """The leaf hash of an entry row; unusable rows get a hash no real entry has."""
    try:
        return merkle.leaf_hash(entry_record(seq, kind, digest, appended_at))
    except (LedgerError, TypeError, ValueError):
        # An empty leaf is not canonical JSON, so it never equals a real entry's hash.
        return merkle.leaf_hash(b"")


def check_entry(
    seq: Column, digest: Column, kind: Column, appended_at: Column, obj: StoredObject | None
) -> EntryCheck:
    """Every check of one entry that reads no other entry (see the module docstring).

    ``obj``: the entry's object row as read (``unchecked_object``), None when there is
    none. The sequence itself (``seq`` follows the previous entry) is the caller's.
    """
    found: list[LedgerFinding] = []
    name = digest if isinstance(digest, str) else None
    if not (type(kind) is str and type(digest) is str and type(appended_at) is str) and not all(
        isinstance(v, str) for v in (kind, digest, appended_at)
    ):
        found.append(LedgerFinding("entry-invalid", "entry columns are not all text", seq, name))
    elif not _APPENDED_AT.fullmatch(appended_at):
        found.append(
            LedgerFinding(
                "entry-invalid",
                f"appended_at, got {appended_at!r}, expected UTC RFC 3339 with microseconds",
                seq,
                name,
            )
        )
    if obj is None:
        found.append(LedgerFinding("object-missing", "entry has no object", seq, name))
        return found, None, False
    problem = object_row_problem(obj)
    if problem is not None:
        found.append(LedgerFinding("object-row-invalid", problem, seq, name))
        return found, None, False
    if obj.digest != digest or obj.kind != kind:
        found.append(
            LedgerFinding(
                "entry-object-mismatch",
                f"entry names {kind} {digest}, object row is {obj.kind} {obj.digest}",
                seq,
                name,
            )
        )
    problems, refs = check_object(obj)
    found.extend(problems)
    return found, refs, not problems


#: An entry row as the checks take it: seq, digest, kind, appended_at as stored, and its
#: object row as read (``unchecked_object``) or None.
EntryRow = tuple[Column, Column, Column, Column, StoredObject | None]

#: One entry's ``check_entry`` as a chunk carries it: for the usual entry (no finding,
#: ``check_object`` found nothing) only its references, flattened (rel, target, rel,
#: target...): a flat list of strings crosses a process boundary at a fraction of the
#: cost of the nested tuple (``unpack``); else the ``EntryCheck``; None when the check
#: raised (the auditing process then runs it again, and so raises, itself).
Packed = list[str] | EntryCheck | None

#: A run of entries checked: their leaf hashes (32 bytes each, in order), each entry's
#: ``Packed`` check, and the per-kind totals of the run (``run_totals``).
ChunkCheck = tuple[bytes, list[Packed], dict[object, list[int]]]


def check_chunk(rows: list[EntryRow]) -> ChunkCheck:
    """``leaf_hash_of``, ``check_entry`` and ``run_totals`` of consecutive entries."""
    leaves = bytearray()
    checks: list[Packed] = []
    for seq, digest, kind, appended_at, obj in rows:
        leaves += leaf_hash_of(seq, kind, digest, appended_at)
        try:
            checks.append(pack(check_entry(seq, digest, kind, appended_at, obj)))
        except Exception:
            checks.append(None)  # the audit runs it again (and so raises) itself
    return bytes(leaves), checks, run_totals(rows)


#: Consecutive entries column by column, each entry's object row the usual one: seq
#: (int), digest, kind, appended_at (str) of the entries, then the object rows'
#: schema_version, object_id (str or None), object_version (int or None),
#: legacy_digest, legacy_hints (str or None), data (bytes); the object rows' own seq,
#: digest and kind are the entries'. Exactly these types (never bool or a subclass):
#: whoever builds one checks them (``ledger.audit.parallel``).
Columns = tuple[
    tuple[int, ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[str, ...],
    tuple[str | None, ...],
    tuple[str | None, ...],
    tuple[int | None, ...],
    tuple[str | None, ...],
    tuple[str | None, ...],
    tuple[bytes, ...],
]


def unchecked_row(columns: tuple[object, ...]) -> StoredObject:
    """The object row with these columns in ``OBJECT_COLUMNS`` order, as
    ``unchecked_object`` gives it (types unchecked, fields set in one step)."""
    obj = object.__new__(StoredObject)
    obj.__dict__.update(zip(OBJECT_COLUMNS, columns, strict=True))
    return obj


def check_columns(columns: Columns) -> ChunkCheck:
    """``check_chunk`` of the entries ``columns`` holds (see ``Columns``).

    Such an entry passes ``check_entry``'s column, object-row and match checks by its
    types alone, so an entry with the usual ``appended_at`` whose object passes the
    fast check (``clean_columns``) needs nothing else: no object row is built for it.
    Any other entry takes ``check_entry`` itself, which decides and words each finding.
    """
    leaves = bytearray()
    checks: list[Packed] = []
    totals: dict[object, list[int]] = {}
    stamp = _APPENDED_AT.fullmatch
    for seq, digest, kind, at, version, oid, over, legacy, hints, data in zip(
        *columns, strict=True
    ):
        leaves += leaf_hash_of(seq, kind, digest, at)
        clean = None
        if stamp(at) is not None:
            try:
                clean = clean_columns(digest, kind, data, version, oid, over, legacy, hints)
            except Exception:  # the reference decides below (and reports)
                clean = None
        packed: Packed
        if clean is not None:
            packed = [part for ref in clean[0] for part in ref]  # ``pack`` of a clean check
        else:
            row = (digest, seq, kind, version, oid, over, legacy, hints, data)
            try:
                packed = pack(check_entry(seq, digest, kind, at, unchecked_row(row)))
            except Exception:
                packed = None  # the audit runs it again (and so raises) itself
        checks.append(packed)
        # ``run_totals``: the entry and its object row are of the same kind.
        figures = totals.get(kind)
        if figures is None:
            figures = totals[kind] = [0, 0, 0]
        figures[0] += 1
        figures[1] += 1
        figures[2] += len(data)
    return bytes(leaves), checks, totals


def pack(check: EntryCheck) -> Packed:
    """``check`` as a chunk carries it (``unpack(pack(c)) == c``)."""
    found, refs, sound = check
    if found or not sound or refs is None:
        return check
    return [part for ref in refs for part in ref]


_NOTHING: list[LedgerFinding] = []  # shared: never extended (``unpack``'s callers read it)


def unpack(packed: list[str] | EntryCheck) -> EntryCheck:
    """The ``EntryCheck`` that ``pack`` gave ``packed`` for."""
    if type(packed) is not list:
        return packed  # type: ignore[return-value]  # an EntryCheck (a tuple)
    return _NOTHING, list(zip(packed[::2], packed[1::2], strict=True)), True


def run_totals(rows: list[EntryRow]) -> dict[object, list[int]]:
    """Per kind: [entries of that kind, object rows of that kind, their bytes], kinds in
    the order a row-by-row count meets them (entry kind, then object kind)."""
    totals: dict[object, list[int]] = {}
    for _seq, _digest, kind, _appended_at, obj in rows:
        figures = totals.get(kind)
        if figures is None:
            figures = totals[kind] = [0, 0, 0]
        figures[0] += 1
        if obj is not None:
            figures = totals.get(obj.kind)
            if figures is None:
                figures = totals[obj.kind] = [0, 0, 0]
            figures[1] += 1
            if isinstance(obj.data, bytes):
                figures[2] += len(obj.data)
    return totals
