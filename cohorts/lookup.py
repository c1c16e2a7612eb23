"""The ledger's view as the cohort checks see it, plus an in-memory implementation.

The checks are pure: they read objects only through ``CohortLookup`` and validate only
through a ``Validator`` callable, so the store and the schema registry plug in later.

Invariant for implementers: ``StoredDoc.legacy_digest`` must be upstream's digest of
the document *as originally parsed*. Re-parsing RFC 8785 bytes turns ``0.0`` into ``0``
and would change the legacy digest, so compute it once at import and keep it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol, TypeVar

from cohorts.findings import DigestScheme
from ledger.encoding.canonical import canonicalize
from ledger.encoding.digest import legacy_digest, sha256_digest
from verifiers.model.documents import Document

D = TypeVar("D", bound=Document)

#: (kind, document) -> one-line schema error messages; empty means valid. Kinds are the
#: ledger's kind names: "benchmark-cohort", "work-unit", "evaluator-plan",
#: "result-manifest", "verification-result", "burn-notice", "cohort-binding".
Validator = Callable[[str, Mapping[str, object]], Sequence[str]]

WORK_UNIT = "work-unit"
EVALUATOR_PLAN = "evaluator-plan"
RESULT_MANIFEST = "result-manifest"
VERIFICATION_RESULT = "verification-result"
BENCHMARK_COHORT = "benchmark-cohort"
BURN_NOTICE = "burn-notice"
COHORT_BINDING = "cohort-binding"
BEHAVIORAL_EVIDENCE = "behavioral-evidence"


def behavioral_confinement(evidence: Mapping[str, object]) -> str | None:
    """None when behavioral evidence says its probes ran in a sandbox, else why not.

    Evidence recorded with ``--unsandboxed``, or before sandboxing existed (no
    ``environment.sandbox``), is unconfined: candidate code ran with the ledger's rights.
    """
    environment = evidence.get("environment")
    box = environment.get("sandbox") if isinstance(environment, Mapping) else None
    if not isinstance(box, Mapping):
        return "no sandbox recorded (evidence from before sandboxing)"
    if box.get("confined") is not True:
        return f"probes ran unconfined ({box.get('reason', 'no reason recorded')})"
    return None


@dataclass(frozen=True)
class StoredDoc:
    """A stored JSON document with its digests under both schemes.

    ``jcs_digest`` is the ledger digest (SHA-256 of the RFC 8785 bytes);
    ``legacy_digest`` is upstream IDKMesh's (sorted-keys ``json.dumps``).
    """

    kind: str
    value: Mapping[str, object] = field(compare=False)
    jcs_digest: str
    legacy_digest: str
    #: The canonical (RFC 8785) bytes when the reader has them (the stored bytes).
    data: bytes | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_value(cls, kind: str, value: Mapping[str, object]) -> StoredDoc:
        """Compute both digests from a freshly parsed value (floats as parsed)."""
        data = canonicalize(value)
        return cls(kind, value, sha256_digest(data), legacy_digest(value), data)

    def model(self, cls: type[D]) -> D:
        """This document as the protocol model's typed ``cls`` (no parse: same value,
        bytes and digests; the legacy digest is the one computed at import)."""
        data = canonicalize(self.value) if self.data is None else self.data
        return cls(self.value, data, self.jcs_digest, self.legacy_digest)

    def scheme_for(self, digest: object) -> DigestScheme | None:
        """Which scheme(s) produce ``digest`` for this document, or None."""
        legacy = digest == self.legacy_digest
        jcs = digest == self.jcs_digest
        if legacy and jcs:
            return "both"
        if legacy:
            return "legacy"
        if jcs:
            return "jcs"
        return None

    @property
    def object_id(self) -> object:
        return self.value.get("id")


class CohortLookup(Protocol):
    """Read-only ledger view. Every method returns None/empty when nothing is stored."""

    def by_digest(self, digest: str) -> StoredDoc | None:
        """The document whose legacy *or* JCS digest is ``digest``."""
        ...

    def find(self, kind: str, object_id: str, version: int | None = None) -> StoredDoc | None:
        """The latest stored document of ``kind`` with that ``id`` (and ``version``)."""
        ...

    def of_kind(self, kind: str) -> Sequence[StoredDoc]:
        """Every stored document of ``kind`` in append order."""
        ...


class MemoryLookup:
    """``CohortLookup`` over documents held in memory (tests, dry runs, imports)."""

    def __init__(self, docs: Iterable[StoredDoc] = ()) -> None:
        self._docs: list[StoredDoc] = []
        self._by_digest: dict[str, StoredDoc] = {}
        for doc in docs:
            self.put(doc)

    def put(self, doc: StoredDoc) -> StoredDoc:
        self._docs.append(doc)
        # First stored wins for a digest: content addressing means later copies are equal.
        self._by_digest.setdefault(doc.jcs_digest, doc)
        self._by_digest.setdefault(doc.legacy_digest, doc)
        return doc

    def add(self, kind: str, value: Mapping[str, object]) -> StoredDoc:
        return self.put(StoredDoc.from_value(kind, value))

    def by_digest(self, digest: str) -> StoredDoc | None:
        return self._by_digest.get(digest)

    def find(self, kind: str, object_id: str, version: int | None = None) -> StoredDoc | None:
        for doc in reversed(self._docs):
            if doc.kind != kind or doc.value.get("id") != object_id:
                continue
            if version is not None and doc.value.get("version") != version:
                continue
            return doc
        return None

    def of_kind(self, kind: str) -> Sequence[StoredDoc]:
        return tuple(doc for doc in self._docs if doc.kind == kind)


@dataclass(frozen=True)
class Resolution:
    """How a recorded reference (kind, id, digest) resolved in the ledger.

    ``found_by`` is "digest" when an object with the recorded digest (either scheme)
    exists, "id" when only an object with the recorded id exists (its digest differs),
    None when nothing was found. ``scheme`` is the matching scheme, None on mismatch.
    """

    kind: str
    object_id: str
    digest: str
    doc: StoredDoc | None
    found_by: Literal["digest", "id"] | None
    scheme: DigestScheme | None

    @property
    def value(self) -> Mapping[str, object] | None:
        return None if self.doc is None else self.doc.value

    def model(self, cls: type[D]) -> D | None:
        """The resolved document as the typed ``cls``, None when nothing resolved."""
        return None if self.doc is None else self.doc.model(cls)

    @property
    def mismatch(self) -> str | None:
        """Why the document found is not the recorded one (found by id, other bytes), in
        ``other_bytes``' words; None when it is (or nothing was found)."""
        if self.doc is None or self.scheme is not None:
            return None
        return other_bytes(self.digest, self.doc)

    def digests(self) -> frozenset[str]:
        """Digests that name this object: the recorded one, plus both of the stored
        document's when it matched the recording."""
        found = {self.digest}
        if self.doc is not None and self.scheme is not None:
            found |= {self.doc.legacy_digest, self.doc.jcs_digest}
        return frozenset(found)

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.object_id,
            "recorded_digest": self.digest,
            "present": self.doc is not None,
            "found_by": self.found_by,
            "scheme": self.scheme,
            "stored_digests": None
            if self.doc is None
            else {"legacy": self.doc.legacy_digest, "jcs": self.doc.jcs_digest},
        }


def other_bytes(recorded: object, doc: StoredDoc) -> str:
    """The one verdict on a listing whose id names a stored document under other bytes:
    "mismatched", it is not the listed evidence (the cohort audit's pre-registration,
    the browse projection and ``provenance`` all say it in these words)."""
    return (
        f"mismatched: the cohort lists {recorded}, but the stored {doc.kind} with this id"
        f" has legacy {doc.legacy_digest} and JCS {doc.jcs_digest}: the cohort names other"
        " bytes, so it is not the evidence the cohort counts"
    )


def resolve(
    lookup: CohortLookup, kind: str, object_id: object, digest: object, version: object = None
) -> Resolution:
    """Resolve a reference by digest first, then by id (and version)."""
    oid = object_id if isinstance(object_id, str) else ""
    dig = digest if isinstance(digest, str) else ""
    ver = version if isinstance(version, int) and not isinstance(version, bool) else None
    if dig:
        doc = lookup.by_digest(dig)
        if doc is not None and doc.kind == kind:
            return Resolution(kind, oid, dig, doc, "digest", doc.scheme_for(dig))
    if oid:
        doc = lookup.find(kind, oid, ver)
        if doc is not None:
            return Resolution(kind, oid, dig, doc, "id", doc.scheme_for(dig))
    return Resolution(kind, oid, dig, None, None, None)


QUARANTINE = "quarantine"


def quarantined(
    lookup: CohortLookup, kind: str, object_id: object, digest: object, version: object = None
) -> StoredDoc | None:
    """The quarantine record of a ``kind`` document the ledger holds only as quarantined.

    Matched by the recorded digest (either scheme of the parsed document), else by id
    (and version). Used where a reference would otherwise be reported missing: the
    document exists, it is just not a valid ``kind``.
    """
    by_id: StoredDoc | None = None
    for doc in lookup.of_kind(QUARANTINE):
        record = doc.value
        if record.get("claimed_kind") != kind:
            continue
        digests = record.get("document_digest")
        if isinstance(digests, Mapping) and digest in (digests.get("legacy"), digests.get("jcs")):
            return doc
        same_id = object_id is not None and record.get("object_id") == object_id
        if same_id and (version is None or record.get("object_version") == version):
            by_id = doc
    return by_id


def quarantine_message(what: str, kind: str, record: StoredDoc, recorded: object) -> str:
    """One line: the quarantined document's problems, where it came from, its digests."""
    value = record.value
    problems = value.get("problems")
    listed = "; ".join(str(p) for p in problems) if isinstance(problems, list) else "?"
    digests = value.get("document_digest")
    legacy = digests.get("legacy") if isinstance(digests, Mapping) else None
    jcs = digests.get("jcs") if isinstance(digests, Mapping) else None
    if recorded in (legacy, jcs):
        scheme = "legacy" if recorded == legacy else "JCS"
        match = f"the recorded digest {recorded} is its {scheme} digest"
    else:
        match = f"the recorded digest {recorded} matches neither (legacy {legacy}, JCS {jcs})"
    return (
        f"{what} schema violation, got {listed} in {value.get('path')} (stored quarantined,"
        f" bytes {value.get('blob_digest')}; {match}), expected a schema-valid {kind}"
    )
