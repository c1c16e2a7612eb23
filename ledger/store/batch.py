"""The rows one append batch writes, planned once for every backend.

Invariant: given the entries already stored for the batch's digests (``known``) and the
log size ``seq``, ``plan_rows`` returns exactly the rows to insert: entries from ``seq``
on with no gap, one object row per digest not yet stored (an object seen earlier in
the batch gets that entry back), its references, every tree node the new leaves
complete, and what the new rows add to the per-kind totals (``kind_totals``).
``results`` has one ``AppendResult`` per input item, in order. Backends only insert
these rows, inside the transaction that holds the log's tail, so the log, the objects,
the tree and the totals are built by this one routine whatever stores them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledger.errors import RuleViolation
from ledger.log.batch_record import BATCH_KIND, batch_record
from ledger.log.checkpoint_record import CHECKPOINT_KIND, checkpoint_record
from ledger.log.leaf import entry_record, utc_now
from ledger.log.merkle import HASH_SIZE, CompactRange, NodeReader, leaf_hash
from ledger.store.aliases import ALIAS_KIND, aliases_for
from ledger.store.base import (
    AppendResult,
    BeforeCommit,
    CheckpointRow,
    Entry,
    LedgerReader,
    Precheck,
    SignatureVerdicts,
    StoredObject,
)

if TYPE_CHECKING:
    # Only named in annotations: importing it would load the schema checks and the
    # canonical encoder into commands that only read.
    from ledger.store.prepared import Prepared
    from ledger.trust.admission import AdmissionPolicy

#: One ``objects`` row, in ``OBJECT_COLUMNS`` order.
ObjectRow = tuple[str, int, str, str | None, str | None, int | None, str | None, str | None, bytes]


@dataclass
class BatchRows:
    """The rows of one batch, per table, and the result for each input item."""

    entries: list[tuple[int, str, str, str]] = field(default_factory=list)
    objects: list[ObjectRow] = field(default_factory=list)
    refs: list[tuple[str, str, str]] = field(default_factory=list)
    nodes: list[tuple[int, int, bytes]] = field(default_factory=list)
    results: list[AppendResult] = field(default_factory=list)
    # kind -> [entries, objects, bytes] the batch adds to the store's per-kind totals
    totals: dict[str, list[int]] = field(default_factory=dict)

    def totals_rows(self) -> list[tuple[str, int, int, int]]:
        """(kind, entries, objects, bytes) to add to ``kind_totals``, one per kind."""
        return [(kind, e, o, b) for kind, (e, o, b) in sorted(self.totals.items())]


#: Kinds of the records the store writes into the log itself.
LEDGER_RECORD_KINDS = (CHECKPOINT_KIND, BATCH_KIND, ALIAS_KIND)


def refuse_ledger_records(items: Sequence[Prepared]) -> None:
    """Checkpoint, batch and alias records are written by the ledger itself, never
    appended."""
    for item in items:
        if item.kind in LEDGER_RECORD_KINDS:
            raise RuleViolation(
                f"append, got a {item.kind} record, expected an object"
                f" ({item.kind} records are written by the ledger itself)"
            )


def checkpoint_first(
    items: Sequence[Prepared], known: dict[str, Entry], pending: CheckpointRow | None
) -> tuple[int, list[Prepared]]:
    """The items to write and how many lead them that the caller did not ask for.

    A checkpoint of the current size not yet logged goes first, at seq == its size, when
    the batch appends anything: every later tree head then covers it
    (``ledger.log.checkpoint_record``).
    """
    if pending is not None and any(item.digest not in known for item in items):
        return 1, [checkpoint_record(pending), *items]
    return 0, list(items)


def plan_rows(
    items: Sequence[Prepared],
    known: dict[str, Entry],
    seq: int,
    tree: NodeReader,
    stamps: Sequence[str] | None = None,
) -> BatchRows:
    """The rows that append ``items`` at ``seq`` (see the module invariant).

    ``known`` gains the new entries; ``stamps`` gives each item's ``appended_at`` (a copy
    keeps the source's), else the current time is used. ``tree`` holds the nodes of the
    log's first ``seq`` leaves.
    """
    rows = BatchRows()
    # The writer is serial and runs this once per object: names bound once, no
    # generator per object, totals found with one lookup, and the entry and result
    # made as their frozen dataclasses' ``__init__`` would make them (``_new``).
    results, entries, objects = rows.results, rows.entries, rows.objects
    refs, totals = rows.refs, rows.totals
    first = seq
    leaves: list[bytes] = []  # the new entries' leaf hashes, in log order
    add_leaf = leaves.append
    for i, item in enumerate(items):
        digest = item.digest
        entry = known.get(digest)
        if entry is not None:
            results.append(AppendResult(entry, new=False))
            continue
        kind, data = item.kind, item.data
        appended_at = utc_now() if stamps is None else stamps[i]
        entry = known[digest] = _new(Entry)
        entry.__dict__.update(seq=seq, digest=digest, kind=kind, appended_at=appended_at)
        entries.append((seq, digest, kind, appended_at))
        objects.append(
            (
                digest,
                seq,
                kind,
                item.schema_version,
                item.object_id,
                item.object_version,
                item.legacy_digest,
                item.legacy_hints,
                data,
            )
        )
        for rel, target in item.refs:
            refs.append((digest, rel, target))
        added = totals.get(kind)
        if added is None:
            added = totals[kind] = [0, 0, 0]
        added[0] += 1  # the entry
        added[1] += 1  # its object row
        added[2] += len(data)
        add_leaf(leaf_hash(entry_record(seq, kind, digest, appended_at)))
        result = _new(AppendResult)
        result.__dict__.update(entry=entry, new=True)
        results.append(result)
        seq += 1
    if leaves:
        # Every complete subtree the new leaves close, level by level, hashed along the
        # right frontier at ``first`` (read from ``tree``): O(log n) reads per batch.
        closed = CompactRange.at(first, tree).extend(b"".join(leaves))
        rows.nodes = [
            (level, index + at // HASH_SIZE, hashes[at : at + HASH_SIZE])
            for level, (index, hashes) in enumerate(closed)
            for at in range(0, len(hashes), HASH_SIZE)
        ]
    return rows


# ``object.__new__`` and the instance's ``__dict__``: what a frozen dataclass's
# ``__init__`` does, without its ``object.__setattr__`` call per field (the serial writer
# makes an entry, a result and an object per new document; ~2-4 us each saved). Only for
# plain frozen dataclasses (no ``__post_init__``, no slots): tests/test_import_writer.py
# holds the values equal to the constructors'.
_new = object.__new__
_set = object.__setattr__  # a whole field dict at once, past the frozen ``__setattr__``


class BatchReader:
    """The store, serving the objects the batch has just written from memory.

    Admission reads an attestation's subject back (``LedgerReader.get``), and the subject
    is usually in the same batch. The store would re-derive that row from the bytes it
    was written from, moments ago in this transaction, by ``plan_rows`` from the batch's
    own ``Prepared`` values: the object is served as those rows hold it (same digest,
    seq, kind, index columns and bytes). Every other read goes to the store.
    """

    def __init__(self, store: LedgerReader, new: Sequence[StoredObject]) -> None:
        self._store = store
        self._new = {obj.digest: obj for obj in new}

    def __getattr__(self, name: str) -> Any:  # delegated: the wrapped reader's own attribute
        return getattr(self._store, name)

    def get(self, digest: str) -> StoredObject | None:
        found = self._new.get(digest)
        return found if found is not None else self._store.get(digest)


def pending_objects(reader: LedgerReader, items: Sequence[Prepared]) -> list[StoredObject]:
    """``items`` as objects appended now, at the seqs they would get as new entries (an
    item repeated in ``items`` once): what admission would judge if each were new.
    A pending checkpoint record would shift them by one; no rule reads that."""
    seq = reader.size()
    new: list[StoredObject] = []
    seen: set[str] = set()
    for p in items:
        if p.digest in seen:
            continue
        seen.add(p.digest)
        new.append(
            StoredObject(
                p.digest,
                seq,
                p.kind,
                p.schema_version,
                p.object_id,
                p.object_version,
                p.legacy_digest,
                p.legacy_hints,
                p.data,
            )
        )
        seq += 1
    return new


def admitted_batch(
    store: LedgerReader,
    items: Sequence[Prepared],
    write: Callable[[Sequence[Prepared]], list[AppendResult]],
    policy: AdmissionPolicy,
    precheck: Precheck | None = None,
    before_commit: BeforeCommit | None = None,
    *,
    history: bool = False,
    signatures: SignatureVerdicts | None = None,
) -> list[AppendResult]:
    """One batch's steps inside the backend's write transaction, in this order: the
    caller's ``precheck``, ``write`` (the rows), the admission policy on the objects the
    batch added (reading them through a ``BatchReader``; ``signatures``: verdicts
    computed ahead), an alias for each object already stored that arrived in another
    upstream spelling (``ledger.store.aliases``), the batch record when the batch added
    an authority-governed object (``ledger.log.batch_record``: ``verify`` replays the
    same-batch rule from it), ``before_commit``. Any of them raising rolls the whole
    batch back."""
    refuse_ledger_records(items)
    if precheck is not None:
        precheck(store)
    results = write(items)
    new: list[StoredObject] = []
    for p, r in zip(items, results, strict=True):
        if r.new:
            # A ``StoredObject``'s fields are the ``Prepared``'s, ``seq`` for ``refs``:
            # a copy of its field dict (both plain frozen dataclasses, see ``_new``).
            fields = p.__dict__.copy()
            del fields["refs"]
            fields["digest"] = r.entry.digest
            fields["seq"] = r.entry.seq
            obj = _new(StoredObject)
            _set(obj, "__dict__", fields)
            new.append(obj)
    reader = BatchReader(store, new)
    if new:
        policy.admit(reader, new, history=history, signatures=signatures)
    again = [
        (p, stored)
        for p, r in zip(items, results, strict=True)
        if not r.new
        and p.legacy_digest is not None
        and (stored := reader.get(r.entry.digest)) is not None
        and stored.legacy_digest != p.legacy_digest
    ]
    aliases = aliases_for(reader, again) if again else []
    if aliases:
        write(aliases)
    if any(policy.governed(obj, reader) is not None for obj in new):
        write([batch_record(new[0].seq, history)])
    if before_commit is not None:
        before_commit(results)
    return results
