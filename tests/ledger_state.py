"""Test helpers: a ledger's observable state, and writing past admission.

``state`` is what "the ledger is unchanged" means in the refusal tests: the entry count
and the root of the Merkle tree over every entry (the latest root).

``append_unchecked`` writes objects with an admission that admits everything: the bytes
a ledger written before admission existed (or by another tool) may hold. Tests use it
to show that what admission refuses is also never counted when it is already stored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ledger.log.merkle import root
from ledger.store.backends import open_store
from ledger.store.base import LedgerReader, SignatureVerdicts, StoredObject
from ledger.store.prepared import Prepared
from ledger.trust.admission import AdmissionPolicy, default_policy
from ledger.trust.refusal import Refusal


@dataclass(frozen=True)
class AdmitAll(AdmissionPolicy):
    """The package's policy for judging, but refusing nothing when appending."""

    def refusals(
        self,
        reader: LedgerReader,
        new: Sequence[StoredObject],
        *,
        history: bool,
        signatures: SignatureVerdicts | None = None,
    ) -> list[Refusal]:
        return []


def admit_all() -> AdmitAll:
    """``AdmitAll`` with the package's rules for every judgement but admission."""
    policy = default_policy()
    return AdmitAll(policy.governance, policy.state_rules, policy.attestation)


def state(db: Path) -> tuple[int, str]:
    """(entry count, hex root of the tree over all entries)."""
    with open_store(db, readonly=True) as store:
        size = store.size()
        return size, root(size, store).hex() if size else ""


def append_unchecked(db: Path, items: Sequence[Prepared]) -> list[str]:
    """Append ``items`` in one transaction with no admission rule; their digests."""
    with open_store(db, policy=admit_all()) as store:
        return [r.entry.digest for r in store.append_many(items)]
