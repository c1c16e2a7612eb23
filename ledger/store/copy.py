"""Copying a ledger between backends (SQLite <-> PostgreSQL), entry by entry.

The destination receives the same entries (seq, digest, kind, appended_at), the same
object bytes and index columns, the references the bytes imply, and the same signed
checkpoints with their witness cosignatures; its tree nodes are recomputed as it
appends. So both ledgers have the same root at every size, and every proof or bundle
from one verifies against the other.

A destination that already holds entries must be a prefix of the source (same meta,
same entries in the same order): the copy then continues after it, so an interrupted
copy is completed by running it again. Anything else is refused before writing.

Checkpoints are log entries (``ledger.log.checkpoint_record``): the copy stores each
checkpoint row when the destination reaches its size, then copies the entry that logs
it like any other. Copies skip the admission policy on purpose: each entry was admitted
when it was first written, batches here are not the source's batches, and what the copy
writes is checked against the source's signed roots instead.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ledger.errors import CheckFailed, LedgerError, RuleViolation, StorageError
from ledger.log import merkle
from ledger.store.base import CheckpointRow, Entry, LedgerReader, StoredObject
from ledger.store.derived import derive
from ledger.store.prepared import Prepared

# Meta records that describe the log itself; backend-specific ones (format, roles) stay.
COPIED_META = (
    "origin",
    "log_verifier_key",
    "log_key_id",
    "authority_public_key",
    "authority_key_id",
)
DEFAULT_BATCH = 2000


class CopyTarget(LedgerReader, Protocol):
    """A store that can take copied entries (both backends are)."""

    def append_copies(
        self, items: Sequence[Prepared], stamps: Sequence[str], first: int
    ) -> None: ...
    def put_checkpoint(self, row: CheckpointRow) -> None: ...
    def set_meta(self, key: str, value: str) -> None: ...
    def add_cosignatures(self, size: int, lines: Sequence[str]) -> int: ...


@dataclass
class CopySummary:
    """What a copy did; ``roots`` maps every checkpoint size to the root both agree on."""

    source_size: int = 0
    already: int = 0
    copied: int = 0
    checkpoints: int = 0
    cosignatures: int = 0
    roots: dict[int, str] = field(default_factory=dict)


def _prepared(obj: StoredObject) -> Prepared:
    """The object as it is stored; the source's read already checked its row."""
    return Prepared(
        digest=obj.digest,
        kind=obj.kind,
        data=obj.data,
        schema_version=obj.schema_version,
        object_id=obj.object_id,
        object_version=obj.object_version,
        legacy_digest=obj.legacy_digest,
        legacy_hints=obj.legacy_hints,
        refs=derive(obj.kind, obj.data, obj.legacy_hints).refs,
    )


def _check_prefix(src: LedgerReader, dst: LedgerReader, size: int) -> None:
    source: Iterator[Entry] = src.entries(0, size)
    for theirs in dst.entries(0, size):
        ours = next(source, None)
        if ours != theirs:
            raise RuleViolation(
                f"copy destination is not empty, got entry {theirs.seq} {theirs.digest},"
                f" expected a prefix of the source ({'none' if ours is None else ours.digest})"
            )


def copy_ledger(
    src: LedgerReader,
    dst: CopyTarget,
    batch: int = DEFAULT_BATCH,
    advance: Callable[[int], None] = lambda _n: None,
) -> CopySummary:
    """Copy ``src`` into ``dst`` (empty, or a prefix of ``src``); see the module docstring."""
    summary = CopySummary(source_size=src.size())
    if src.get_meta("origin") is None:
        raise StorageError("copy source has no origin, expected a ledger made by init")
    for key in COPIED_META:
        ours, theirs = src.get_meta(key), dst.get_meta(key)
        if theirs is not None and ours != theirs:
            raise RuleViolation(
                f"copy destination is another ledger, got meta {key} {theirs!r}, expected {ours!r}"
            )
    have = dst.size()
    if have > summary.source_size:
        raise RuleViolation(
            f"copy destination is not a prefix of the source, got {have} entries,"
            f" expected at most {summary.source_size}"
        )
    _check_prefix(src, dst, have)
    for key in COPIED_META:
        value = src.get_meta(key)
        if value is not None:
            dst.set_meta(key, value)
    summary.already = have
    advance(have)
    checkpoints = {row.size: row for row in src.checkpoints() if row.size <= summary.source_size}
    seq = have
    for size in sorted(size for size in checkpoints if size < have):
        _place_checkpoint(src, dst, checkpoints[size], summary)
    while True:
        # A checkpoint is stored when the log reaches its size, before the entry that
        # logs it (seq == size) is copied: as it was written at the source.
        if seq in checkpoints:
            _place_checkpoint(src, dst, checkpoints[seq], summary)
        if seq >= summary.source_size:
            break
        upto = min([s for s in checkpoints if s > seq] + [summary.source_size, seq + batch])
        entries = list(src.entries(seq, upto - seq))
        items, stamps = [], []
        for entry in entries:
            obj = src.get_by_seq(entry.seq)
            if obj is None or obj.digest != entry.digest:
                raise CheckFailed(f"source entry {entry.seq} has no matching object row")
            try:
                items.append(_prepared(obj))
            except LedgerError as exc:
                raise CheckFailed(f"source object at seq {entry.seq}: {exc}") from None
            stamps.append(entry.appended_at)
        dst.append_copies(items, stamps, seq)
        seq += len(entries)
        summary.copied += len(entries)
        advance(len(entries))
    return summary


def _place_checkpoint(
    src: LedgerReader, dst: CopyTarget, row: CheckpointRow, summary: CopySummary
) -> None:
    """Store ``row`` in ``dst`` once its tree has the root the source signed."""
    root = merkle.root(row.size, dst)
    if not hmac.compare_digest(root, row.root):
        raise CheckFailed(
            f"copy at size {row.size}, got root {root.hex()}, expected the source"
            f" checkpoint's {row.root.hex()}"
        )
    dst.put_checkpoint(row)
    summary.cosignatures += dst.add_cosignatures(row.size, src.cosignatures(row.size))
    summary.checkpoints += 1
    summary.roots[row.size] = root.hex()
