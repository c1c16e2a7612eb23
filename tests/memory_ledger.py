"""An in-memory ``LedgerReader`` for judging bytes without a database.

``MemoryLedger`` holds objects in log order (seq = position) with the references their
bytes imply and the meta records the trust rules read (the authority key). It has no
tree, no checkpoints and no admission of its own: tests put the trusted state in with
``add`` and ask the policy about the next batch with ``judge``, which reads the batch at
the positions it would take, as the store's admission does inside its transaction.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from ledger.errors import NotFound
from ledger.store.base import CheckpointRow, Entry, LedgerStats, StoredObject
from ledger.store.prepared import Prepared
from ledger.trust.admission import AdmissionPolicy
from ledger.trust.keys import Signer, public_key_raw
from ledger.trust.refusal import Refusal


@dataclass
class MemoryLedger:
    """A ledger's read side in memory: ``objects[seq]`` is the entry at ``seq``."""

    policy: AdmissionPolicy
    objects: list[StoredObject] = field(default_factory=list)
    refs: list[tuple[str, str, str]] = field(default_factory=list)  # (from, rel, to)
    meta: dict[str, str] = field(default_factory=dict)

    @classmethod
    def with_authority(cls, policy: AdmissionPolicy, authority: Signer) -> MemoryLedger:
        raw = public_key_raw(authority.public_key)
        meta = {
            "authority_public_key": base64.b64encode(raw).decode("ascii"),
            "authority_key_id": authority.key_id,
        }
        return cls(policy, meta=meta)

    # -- writing (no rule: the trusted state, or a batch under judgement) -----------------
    def add(self, *items: Prepared) -> list[StoredObject]:
        """Append ``items`` (those not stored yet) as entries; the new objects."""
        new = []
        for p in items:
            if self.get(p.digest) is not None:
                continue
            obj = StoredObject(
                p.digest,
                len(self.objects),
                p.kind,
                p.schema_version,
                p.object_id,
                p.object_version,
                p.legacy_digest,
                p.legacy_hints,
                p.data,
            )
            self.objects.append(obj)
            self.refs.extend((p.digest, rel, to) for rel, to in p.refs)
            new.append(obj)
        return new

    def judge(self, *items: Prepared, history: bool = False) -> list[Refusal]:
        """The policy's refusals of ``items`` appended as one batch; nothing is kept."""
        trial = dataclasses.replace(self, objects=list(self.objects), refs=list(self.refs))
        new = trial.add(*items)
        return self.policy.refusals(trial, new, history=history)

    # -- LedgerReader -------------------------------------------------------------------
    def size(self) -> int:
        return len(self.objects)

    def get(self, digest: str) -> StoredObject | None:
        return next((o for o in self.objects if o.digest == digest), None)

    def get_by_seq(self, seq: int) -> StoredObject | None:
        return self.objects[seq] if 0 <= seq < len(self.objects) else None

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        return [o for o in self.objects if o.legacy_digest == legacy]

    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        return sorted(o.digest for o in self.objects if o.digest.startswith(prefix))[:limit]

    def by_id(
        self, object_id: str, version: int | None = None, kind: str | None = None
    ) -> list[StoredObject]:
        return [
            o
            for o in self.objects
            if o.object_id == object_id
            and (version is None or o.object_version == version)
            and (kind is None or o.kind == kind)
        ]

    def by_kind(self, kind: str) -> Iterator[StoredObject]:
        return iter([o for o in self.objects if o.kind == kind])

    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]:
        rows = [
            Entry(o.seq, o.digest, o.kind, "2026-01-01T00:00:00.000000Z")
            for o in self.objects[since:]
            if kind is None or o.kind == kind
        ]
        return iter(rows if limit is None else rows[:limit])

    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]:
        return [(f, r) for f, r, t in self.refs if t == digest and (rel is None or r == rel)]

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for o in self.objects:
            found[o.kind] = found.get(o.kind, 0) + 1
        return found

    def node(self, level: int, index: int) -> bytes:
        raise NotFound("a memory ledger keeps no tree")

    def get_meta(self, key: str) -> str | None:
        return self.meta.get(key)

    def checkpoints(self) -> list[CheckpointRow]:
        return []

    def checkpoint_at(self, size: int) -> CheckpointRow | None:
        return None

    def stats(self) -> LedgerStats:
        total = sum(len(o.data) for o in self.objects)
        return LedgerStats(self.size(), self.counts(), total, None, None)

    def cosignatures(self, size: int) -> list[str]:
        return []


def judged(ledger: MemoryLedger, items: Sequence[Prepared], history: bool = False) -> list[str]:
    """The refusals of ``items`` as one batch, each as its one-line text."""
    return [r.text() for r in ledger.judge(*items, history=history)]
