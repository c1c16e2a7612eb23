"""Standing: the cohort checks' view of only the records that count.

Which records count is one computation, ``ledger.trust.standing.Standing``: a record
has standing when replaying admission accepts it at its own position (attestations
valid, cohort documents legal successors of the documents of their id that counted)
and, if it is authority-governed (``cohorts.admission.governed_what``: frozen or burned
cohorts, burn notices, bindings), the authority's attestation of its exact bytes is
stored. ``StandingLookup`` is the ``CohortLookup`` every gate and audit reads through,
so a record written past admission (raw SQL, a file editor, a tampered copy) or kept as
unattested history (``import --unsigned``) never counts, before anyone runs ``verify``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from cohorts.lookup import BENCHMARK_COHORT, StoredDoc
from cohorts.store_lookup import StoreLookup
from ledger.store.base import LedgerReader, StoredObject
from ledger.trust.standing import Standing


class StandingLookup:
    """``CohortLookup`` over a ledger that shows only records with standing."""

    def __init__(self, reader: LedgerReader) -> None:
        self.reader = reader
        self.raw = StoreLookup(reader)
        self.counts = Standing(reader)

    def standing(self, doc: StoredDoc) -> bool:
        """True when ``doc`` counts now."""
        obj = self.reader.get(doc.jcs_digest)
        return obj is not None and self.counts.has_standing(obj)

    def why_not(self, doc: StoredDoc) -> str | None:
        """None when ``doc`` counts, else why not (one phrase)."""
        obj = self.reader.get(doc.jcs_digest)
        return "not stored" if obj is None else self.counts.why_not(obj)

    def standing_since(self, obj: StoredObject) -> int | None:
        """The first log position from which ``obj`` counts (``Standing.since``): what a
        judgement about entry N may count is what has standing before N."""
        return self.counts.since(obj)

    def refused(self, doc: StoredDoc) -> bool:
        """True when replaying admission refuses ``doc`` (it was written past it)."""
        obj = self.reader.get(doc.jcs_digest)
        return obj is not None and not self.counts.admitted(obj)

    def by_digest(self, digest: str) -> StoredDoc | None:
        doc = self.raw.by_digest(digest)
        return doc if doc is not None and self.standing(doc) else None

    def find(self, kind: str, object_id: str, version: int | None = None) -> StoredDoc | None:
        """The record of ``object_id`` established last (the newest that counts)."""
        found = self._established(self.reader.by_id(object_id, version, kind))
        return found[-1] if found else None

    def of_kind(self, kind: str) -> Sequence[StoredDoc]:
        """The records of ``kind`` with standing, in the order they were established."""
        return tuple(self._established(self.reader.by_kind(kind)))

    def _established(self, objects: Iterable[StoredObject]) -> list[StoredDoc]:
        """``objects`` with standing, ordered by where each was established
        (``Standing.since``): an attestation appended later gives a record standing
        from there on, never back at its own seq."""
        counted = []
        for obj in objects:
            since = self.counts.since(obj)
            if since is not None and (doc := self.raw.doc(obj)) is not None:
                counted.append((since, doc))
        counted.sort(key=lambda pair: pair[0])
        return [doc for _, doc in counted]

    def unattested(self, kind: str) -> Sequence[StoredDoc]:
        """Stored records of ``kind`` without standing that admission accepts: governed
        records kept without the authority's attestation (unattested history)."""
        return tuple(
            d for d in self.raw.of_kind(kind) if not self.standing(d) and not self.refused(d)
        )

    def refused_of_kind(self, kind: str) -> Sequence[StoredDoc]:
        """Stored records of ``kind`` that replaying admission refuses."""
        return tuple(d for d in self.raw.of_kind(kind) if self.refused(d))

    def latest_cohort(self, cohort_id: str) -> StoredDoc | None:
        """The newest stored BenchmarkCohort with ``id`` that has standing."""
        return self.find(BENCHMARK_COHORT, cohort_id)
