"""``CohortLookup`` over a ledger (``LedgerReader``): the cohort checks' view of a store.

Values are rebuilt from the stored canonical bytes plus the stored float hints, so a
value's integral doubles (``0.0``) come back as parsed at append time and upstream's
legacy digest of a rebuilt value equals the stored ``legacy_digest``. Both digest
schemes resolve: the ledger digest via ``get``, the legacy one via ``by_legacy``.
Parsed values are cached per digest (objects never change).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from cohorts.lookup import StoredDoc
from ledger.encoding.digest import apply_float_hints
from ledger.store.base import LedgerReader, StoredObject

BLOB = "blob"


def stored_value(obj: StoredObject) -> Any:
    """The JSON value of a stored object with its float hints applied (None for blobs)."""
    if obj.kind == BLOB:
        return None
    try:
        value = json.loads(obj.data)
    except (ValueError, TypeError):
        return None  # damaged bytes: callers report the object as unreadable
    if obj.legacy_hints:
        # A bad hint only affects the legacy digest, which is read from the row.
        with contextlib.suppress(ValueError, KeyError, IndexError, TypeError):
            value = apply_float_hints(value, json.loads(obj.legacy_hints))
    return value


class StoreLookup:
    """``CohortLookup`` reading a ``LedgerReader`` (a store, or a precheck's reader)."""

    def __init__(self, reader: LedgerReader) -> None:
        self.reader = reader
        self._cache: dict[str, StoredDoc | None] = {}

    def doc(self, obj: StoredObject) -> StoredDoc | None:
        """The ``StoredDoc`` of a stored JSON object (None for blobs / non-objects)."""
        if obj.digest in self._cache:
            return self._cache[obj.digest]
        value = stored_value(obj)
        doc = (
            StoredDoc(obj.kind, value, obj.digest, obj.legacy_digest or obj.digest, obj.data)
            if isinstance(value, Mapping)
            else None
        )
        self._cache[obj.digest] = doc
        return doc

    def by_digest(self, digest: str) -> StoredDoc | None:
        obj = self.reader.get(digest)
        if obj is None:
            legacy = self.reader.by_legacy(digest)
            obj = legacy[0] if legacy else None
        return None if obj is None else self.doc(obj)

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

