"""Standing: which stored cohort records count.

An authority-governed record (``cohorts.admission.governed_what``) has standing only when
a valid attestation by the ledger's authority key over its exact bytes is stored
(``ledger.trust.identity.authority_attested_at``). Admission guarantees that for every
governed record written outside a history import; records imported ``--unsigned`` are
kept as unattested history, and this view is how gates and audits never count them.
Ungoverned records (WorkUnits, plans, scaffold cohorts, ...) always have standing.
"""

from __future__ import annotations

from collections.abc import Sequence

from cohorts.admission import governed_what
from cohorts.lookup import BENCHMARK_COHORT, StoredDoc
from cohorts.store_lookup import StoreLookup
from ledger.store.base import LedgerReader, StoredObject
from ledger.trust.identity import authority_attested_at, authority_key


class StandingLookup:
    """``CohortLookup`` over a ledger that hides governed records without standing."""

    def __init__(self, reader: LedgerReader) -> None:
        self.reader = reader
        self.raw = StoreLookup(reader)
        self._authority = authority_key(reader)
        self._standing: dict[str, bool] = {}

    def standing(self, doc: StoredDoc) -> bool:
        """True when ``doc`` is ungoverned or authority-attested."""
        known = self._standing.get(doc.jcs_digest)
        if known is not None:
            return known
        ok = True
        if governed_what(doc.kind, doc.value) is not None:
            obj = self.reader.get(doc.jcs_digest)
            ok = (
                obj is not None
                and authority_attested_at(self.reader, obj, self._authority) is not None
            )
        self._standing[doc.jcs_digest] = ok
        return ok

    def standing_since(self, obj: StoredObject) -> int | None:
        """The first log position from which ``obj`` has standing: its own entry for an
        ungoverned record, the authority's first valid attestation (never before the
        record) for a governed one; None when it has none. What a judgement about entry
        N may count is what has standing before N."""
        doc = self.raw.doc(obj)
        if doc is None or governed_what(doc.kind, doc.value) is None:
            return obj.seq
        at = authority_attested_at(self.reader, obj, self._authority)
        return None if at is None else max(at, obj.seq)

    def by_digest(self, digest: str) -> StoredDoc | None:
        doc = self.raw.by_digest(digest)
        return doc if doc is not None and self.standing(doc) else None

    def find(self, kind: str, object_id: str, version: int | None = None) -> StoredDoc | None:
        for obj in reversed(self.reader.by_id(object_id, version, kind)):
            doc = self.raw.doc(obj)
            if doc is not None and self.standing(doc):
                return doc
        return None

    def of_kind(self, kind: str) -> Sequence[StoredDoc]:
        return tuple(d for d in self.raw.of_kind(kind) if self.standing(d))

    def unattested(self, kind: str) -> Sequence[StoredDoc]:
        """Stored governed records of ``kind`` without standing (unattested history)."""
        return tuple(d for d in self.raw.of_kind(kind) if not self.standing(d))

    def latest_cohort(self, cohort_id: str) -> StoredDoc | None:
        """The newest stored BenchmarkCohort with ``id`` that has standing."""
        return self.find(BENCHMARK_COHORT, cohort_id)
