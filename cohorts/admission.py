"""IDKMesh admission rules, plugged into the generic ``ledger.trust.admission`` seam.

Authority-governed (a valid attestation by the ledger's authority key must arrive in
the same transaction, except in history imports, which are recorded without standing):

* a ``benchmark-cohort`` document at stage ``frozen`` or ``burned``: it fixes or burns a
  definition (``provledger cohort freeze`` / ``provledger cohort burn`` sign it);
* a ``burn-notice`` (``provledger cohort burn``);
* a ``cohort-binding`` (``provledger cohort bind``).

Lifecycle, for every new ``benchmark-cohort`` whose id is already stored, whatever the
command: the new document must be a legal successor (same stage or one step forward; a
frozen or burned definition never changes; ``cohorts.lifecycle.check_update``) of the
newest earlier document of its id that has standing then (``ledger.trust.standing``;
newest in the order they gained standing, not the order they were stored);
for a frozen or burned document (the authority's), of the newest such document the
authority signed. A frozen or burned document is judged again where the authority's
attestation establishes it (``cohort freeze`` of bytes already stored as history
appends only that attestation), so it counts only as a legal successor of what counted
before there. Documents without standing (unattested history, rows written past
admission) and documents anyone may write (scaffold, collecting) therefore never block
the authority, and the documents of each id that count always form a legal path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from cohorts.errors import CohortError
from cohorts.lifecycle import check_update
from cohorts.lookup import BENCHMARK_COHORT, BURN_NOTICE, COHORT_BINDING
from ledger.store.base import LedgerReader, StoredObject
from ledger.trust.admission import PolicyParts, StandingView
from ledger.trust.refusal import Governed, Refusal
from verifiers.model import CohortView

FIXED = ("frozen", "burned")
FREEZE = "provledger cohort freeze FILE"
BURN = "provledger cohort burn ID --reason TEXT"
BIND = (
    "provledger cohort bind FILE --predecessor ID --plan TASK=PLAN_ID@VERSION --calibration DIGEST"
)


def governed_what(kind: str, value: Mapping[str, object] | None) -> Governed | None:
    """Why a document of ``kind`` needs the authority's signature (None: it does not)."""
    value = value or {}
    cohort = CohortView.of(value)
    if kind == BENCHMARK_COHORT and cohort.stage in FIXED:
        stage = cohort.stage
        return Governed(
            f"cohort {cohort.id!r} at stage {stage}", FREEZE if stage == "frozen" else BURN
        )
    if kind == BURN_NOTICE:
        return Governed(f"burn notice of {value.get('cohort_id')!r}", BURN)
    if kind == COHORT_BINDING:
        # Bindings are made by the successor gate only: never upstream history.
        return Governed(
            f"binding of {value.get('successor_id')!r} to {value.get('predecessor_id')!r}",
            BIND,
            history=False,
        )
    return None


@dataclass(frozen=True)
class CohortGovernance:
    """``Governance``: cohort stage changes, burn notices and bindings."""

    kinds = frozenset((BENCHMARK_COHORT, BURN_NOTICE, COHORT_BINDING))

    def governed(self, obj: StoredObject, reader: LedgerReader) -> Governed | None:
        if obj.kind not in self.kinds:
            return None
        value = obj.json()
        return governed_what(obj.kind, value if isinstance(value, dict) else None)


@dataclass(frozen=True)
class CohortLifecycle:
    """``StateRule``: a new cohort document is a legal successor of the documents of its
    id that count (see the module docstring)."""

    kinds = frozenset((BENCHMARK_COHORT,))

    def check(
        self, obj: StoredObject, reader: LedgerReader, standing: StandingView
    ) -> Refusal | None:
        if obj.kind != BENCHMARK_COHORT or obj.object_id is None:
            return None
        after = obj.json()
        signed_only = governed_what(obj.kind, after) is not None
        # The position judged: obj's own, or the attestation establishing it.
        position = reader.size()
        # Oldest first: each earlier document's own judgement then finds the documents
        # before it already judged (the recursion stays shallow).
        counted = [
            o
            for o in reader.by_id(obj.object_id, kind=BENCHMARK_COHORT)
            if o.digest != obj.digest
            and standing.has_standing(o, position)
            and (not signed_only or governed_what(o.kind, o.json()) is not None)
        ]
        if not counted:
            return None
        # The newest is the one established last: a document counts from where it is
        # established (an attestation appended later never moves it back in time).
        before = max(counted, key=lambda o: standing.since(o) or o.seq)
        try:
            check_update(before.json(), after)
        except CohortError as exc:
            return Refusal(
                obj.digest,
                obj.kind,
                f"not a legal successor of stored {before.digest}: {exc}",
                "a new cohort id, or the same definition at the same or the next stage"
                f" ({FREEZE}, {BURN})",
                "cohort-lifecycle",
            )
        return None


def policy_parts() -> PolicyParts:
    """IDKMesh's cohort rules, as a part of the package's default policy (the
    ``idkmesh-cohorts`` entry point of the ``provledger.policy`` group)."""
    return PolicyParts(governance=(CohortGovernance(),), state_rules=(CohortLifecycle(),))
