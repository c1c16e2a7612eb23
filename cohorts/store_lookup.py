"""``CohortLookup`` over a ledger (``LedgerReader``): the cohort checks' view of a store.

Values are ``StoredObject.json()``, the stored canonical bytes' own value (float hints
are never applied to what a check reads; an integral double reads as its integer).
Each document's upstream digest is the row's ``legacy_digest``, which the store
re-derives from the bytes and hints on every read. Both digest
schemes resolve: the ledger digest via ``get``, the legacy one via ``by_legacy`` and,
for another upstream spelling of a stored object, its alias (``ledger.store.aliases``):
the document then carries the upstream digest the record named.
Parsed values are cached per digest (objects never change).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from cohorts.lookup import StoredDoc
from ledger.store.aliases import by_legacy_digest
from ledger.store.base import LedgerReader, StoredObject


class StoreLookup:
    """``CohortLookup`` reading a ``LedgerReader`` (a store, or a precheck's reader)."""

    def __init__(self, reader: LedgerReader) -> None:
        self.reader = reader
        self._cache: dict[str, StoredDoc | None] = {}

    def doc(self, obj: StoredObject) -> StoredDoc | None:
        """The ``StoredDoc`` of a stored JSON object (None for blobs / non-objects)."""
        if obj.digest in self._cache:
            return self._cache[obj.digest]
        value = obj.json()
        doc = (
            StoredDoc(obj.kind, value, obj.digest, obj.legacy_digest or obj.digest, obj.data)
            if isinstance(value, Mapping)
            else None
        )
        self._cache[obj.digest] = doc
        return doc

    def by_digest(self, digest: str) -> StoredDoc | None:
        """The document with ledger digest ``digest``, else the one that answers to it as
        its upstream (legacy) digest, named by that digest (``ledger.store.aliases``)."""
        obj = self.reader.get(digest)
        if obj is not None:
            return self.doc(obj)
        for found, _hints in by_legacy_digest(self.reader, digest):
            doc = self.doc(found)
            if doc is None or doc.legacy_digest == digest:
                return doc
            # Another spelling of the stored object: the same value, under that digest.
            return StoredDoc(found.kind, doc.value, found.digest, digest, found.data)
        return None

    def find(self, kind: str, object_id: str, version: int | None = None) -> StoredDoc | None:
        for obj in reversed(self.reader.by_id(object_id, version, kind)):
            doc = self.doc(obj)
            if doc is not None:
                return doc
        return None

    def of_kind(self, kind: str) -> Sequence[StoredDoc]:
        return tuple(d for d in (self.doc(o) for o in self.reader.by_kind(kind)) if d is not None)

    def latest_cohort(self, cohort_id: str) -> StoredDoc | None:
        """The newest stored BenchmarkCohort with ``id`` (any stage)."""
        return self.find("benchmark-cohort", cohort_id)
