"""A ledger as it was before a log position: what a judgement of entry N may read.

``Prefix(reader, n)`` answers every lookup a rule makes (``get``, ``by_id``,
``by_legacy``, ``by_kind``, ``refs_to``, ``size``, ...) with the entries before seq
``n`` only, so a judgement made through it cannot depend on anything appended later:
not at write time (where the batch's later objects are already written), not when
``verify`` replays it, not when a read computes standing. The tree and the
checkpoints are those of the prefix; meta (not in the log) is passed through. Counts and
statistics of a prefix are not kept anywhere and are refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ledger.errors import NotFound
from ledger.store.base import CheckpointRow, Entry, LedgerReader, LedgerStats, StoredObject

if TYPE_CHECKING:
    from ledger.trust.admission import AdmissionPolicy


class Prefix:
    """``reader`` restricted to the entries with seq < ``end`` (a ``LedgerReader``)."""

    def __init__(self, reader: LedgerReader, end: int) -> None:
        self._reader = reader
        self.end = end

    def __getattr__(self, name: str) -> Any:  # delegated: the wrapped reader's own attribute
        # Meta and whatever a backend adds: not entries of the log.
        return getattr(self._reader, name)

    @property
    def policy(self) -> AdmissionPolicy:
        return self._reader.policy

    def _before(self, obj: StoredObject | None) -> StoredObject | None:
        return obj if obj is not None and obj.seq < self.end else None

    def size(self) -> int:
        return min(self.end, self._reader.size())

    def get(self, digest: str) -> StoredObject | None:
        return self._before(self._reader.get(digest))

    def get_by_seq(self, seq: int) -> StoredObject | None:
        return self._reader.get_by_seq(seq) if seq < self.end else None

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        return [o for o in self._reader.by_legacy(legacy) if o.seq < self.end]

    def by_id(
        self, object_id: str, version: int | None = None, kind: str | None = None
    ) -> list[StoredObject]:
        return [o for o in self._reader.by_id(object_id, version, kind) if o.seq < self.end]

    def by_kind(self, kind: str) -> Iterator[StoredObject]:
        for obj in self._reader.by_kind(kind):
            if obj.seq >= self.end:
                return  # in log order: nothing later is before the end either
            yield obj

    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]:
        for entry in self._reader.entries(since, limit, kind):
            if entry.seq >= self.end:
                return
            yield entry

    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]:
        return [
            (source, r)
            for source, r in self._reader.refs_to(digest, rel)
            if self.get(source) is not None
        ]

    def node(self, level: int, index: int) -> bytes:
        if (index + 1) << level > self.end:
            raise NotFound(f"no node at level {level} index {index} in a prefix of {self.end}")
        return self._reader.node(level, index)

    def checkpoints(self) -> list[CheckpointRow]:
        return [c for c in self._reader.checkpoints() if c.size <= self.end]

    def checkpoint_at(self, size: int) -> CheckpointRow | None:
        return self._reader.checkpoint_at(size) if size <= self.end else None

    def cosignatures(self, size: int) -> list[str]:
        return self._reader.cosignatures(size) if size <= self.end else []

    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        # Digests of later entries are not in the prefix; ask for all and filter.
        found = [d for d in self._reader.by_digest_prefix(prefix, 1 << 30) if self.get(d)]
        return found[:limit]

    def counts(self) -> dict[str, int]:
        raise NotImplementedError("a prefix of a ledger keeps no totals")

    def stats(self) -> LedgerStats:
        raise NotImplementedError("a prefix of a ledger keeps no totals")
