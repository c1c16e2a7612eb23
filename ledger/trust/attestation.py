"""Attestations: detached DSSE v1 envelopes over stored ledger objects.

An attestation object (kind ``attestation``) is a standard DSSE envelope with the
payload left out::

    {"provledger_kind": "attestation", "schema_version": "0.1",
     "subject": {"digest": "sha256:...", "kind": "<kind>"},
     "payloadType": "application/vnd.provledger.<kind>+json",
     "signatures": [{"keyid": "<key id>", "sig": "<base64>"}]}

Invariants:

* The payload is exactly the stored bytes of the object ``subject.digest`` names, so the
  full envelope is rebuilt byte for byte from the ledger (``rebuild_envelope``) and the
  database stores each subject's bytes once.
* Signing uses the bytes about to be stored (``Prepared.data``) or already stored
  (``StoredObject.data``) and checks that they hash to the subject digest; nothing is
  re-serialized to sign or verify.
* One signature per attestation object: each attestation names exactly one signer, so a
  verdict is about one key. A co-signature is a second attestation.
* Building an attestation never appends it: callers append it, usually in the same
  ``append_many`` call as its subject, so both land in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from ledger.encoding.digest import is_digest, sha256_digest
from ledger.errors import AttestationError, InputError, NotFound
from ledger.store.base import LedgerReader, StoredObject
from ledger.store.prepared import Prepared, prepare_value
from ledger.trust.dsse import Envelope, Signature, parse_envelope, payload_type_for, sign_envelope
from ledger.trust.intoto import intoto_envelope, statement
from ledger.trust.keys import Signer

ATTESTATION_KIND: Final = "attestation"
ATTESTATION_SCHEMA_VERSION: Final = "0.1"
SUBJECT_REL: Final = "subject"


@dataclass(frozen=True)
class DetachedAttestation:
    """The content of one attestation object: a DSSE envelope minus its payload."""

    subject_digest: str
    subject_kind: str
    payload_type: str
    signature: Signature

    def to_value(self) -> dict[str, object]:
        """The JSON value stored in the ledger (schema ``attestation`` v0.1)."""
        sig = Envelope(b"", self.payload_type, (self.signature,)).to_json_obj()["signatures"]
        return {
            "provledger_kind": ATTESTATION_KIND,
            "schema_version": ATTESTATION_SCHEMA_VERSION,
            "subject": {"digest": self.subject_digest, "kind": self.subject_kind},
            "payloadType": self.payload_type,
            "signatures": sig,
        }

    def envelope(self, payload: bytes) -> Envelope:
        """The full standard envelope for ``payload`` (the subject's stored bytes)."""
        return Envelope(
            payload=bytes(payload), payload_type=self.payload_type, signatures=(self.signature,)
        )


def parse_attestation(data: bytes) -> DetachedAttestation:
    """Read an attestation object's stored bytes; malformed content raises AttestationError.

    Base64 is decoded with the DSSE reader's strict rules (padded, canonical).
    """
    try:
        value = json.loads(data)
    except (ValueError, TypeError) as exc:
        raise AttestationError(
            f"attestation bytes, got unreadable JSON ({exc}), expected an attestation object"
        ) from None
    return attestation_from_value(value)


#: A ``DetachedAttestation`` flat: subject digest and kind, payload type, key id and
#: signature (a tuple crosses a process boundary at a fraction of a dataclass's cost).
AttestationFacts = tuple[str, str, str, str, bytes]


def attestation_facts(detached: DetachedAttestation) -> AttestationFacts:
    """``detached`` flat (``from_facts`` gives it back)."""
    sig = detached.signature
    return (
        detached.subject_digest,
        detached.subject_kind,
        detached.payload_type,
        sig.keyid,
        sig.sig,
    )


def from_facts(facts: AttestationFacts) -> DetachedAttestation:
    """The ``DetachedAttestation`` that ``attestation_facts`` flattened."""
    digest, kind, payload_type, keyid, sig = facts
    return DetachedAttestation(digest, kind, payload_type, Signature(keyid, sig))


def attestation_from_value(value: object) -> DetachedAttestation:
    """A ``DetachedAttestation`` from a parsed attestation object."""
    if not isinstance(value, dict) or value.get("provledger_kind") != ATTESTATION_KIND:
        got = value.get("provledger_kind") if isinstance(value, dict) else type(value).__name__
        raise AttestationError(f"attestation object, got {got!r}, expected kind attestation")
    subject = value.get("subject")
    if not isinstance(subject, dict):
        raise AttestationError("attestation subject, got no object, expected {digest, kind}")
    digest, kind = subject.get("digest"), subject.get("kind")
    if not isinstance(digest, str) or not is_digest(digest):
        raise AttestationError(
            f"attestation subject.digest, got {digest!r}, expected sha256:<64 lowercase hex>"
        )
    if not isinstance(kind, str) or not kind:
        raise AttestationError(f"attestation subject.kind, got {kind!r}, expected a kind name")
    signatures = value.get("signatures")
    if not isinstance(signatures, list) or len(signatures) != 1:
        count = len(signatures) if isinstance(signatures, list) else type(signatures).__name__
        raise AttestationError(f"attestation signatures, got {count}, expected exactly 1")
    try:
        # The DSSE reader does the strict base64; the empty payload stands in for the subject.
        shell = parse_envelope(
            {"payload": "", "payloadType": value.get("payloadType"), "signatures": signatures}
        )
    except InputError as exc:
        raise AttestationError(f"attestation envelope fields: {exc}") from None
    return DetachedAttestation(digest, kind, shell.payload_type, shell.signatures[0])


def _sign_subject(digest: str, kind: str, data: bytes, signer: Signer) -> Prepared:
    actual = sha256_digest(data)
    if actual != digest:
        # Bytes are the record: never sign bytes that are not the subject's.
        raise AttestationError(f"subject bytes hash to {actual}, expected {digest}")
    envelope = sign_envelope(payload_type_for(kind), data, signer)
    detached = DetachedAttestation(digest, kind, envelope.payload_type, envelope.signatures[0])
    return prepare_value(detached.to_value(), ATTESTATION_KIND)


def attest_prepared(subject: Prepared, signer: Signer) -> Prepared:
    """An attestation over an object not yet appended (append both in one ``append_many``)."""
    return _sign_subject(subject.digest, subject.kind, subject.data, signer)


def attest_stored(subject: StoredObject, signer: Signer) -> Prepared:
    """An attestation over an object read from the ledger."""
    return _sign_subject(subject.digest, subject.kind, subject.data, signer)


def attest(
    store: LedgerReader,
    subject_digest: str,
    signer: Signer,
    *,
    pending: Sequence[Prepared] = (),
) -> Prepared:
    """Build (never append) an attestation by ``signer`` over the object ``subject_digest``.

    The subject is looked up first among ``pending`` (objects about to be appended in the
    same ``append_many`` call, e.g. the verifier runner's VerificationResult), then in
    the ledger; neither holding it is NotFound.
    """
    for item in pending:
        if item.digest == subject_digest:
            return attest_prepared(item, signer)
    subject = store.get(subject_digest)
    if subject is None:
        raise NotFound(f"subject not found, got {subject_digest}, expected a digest in the ledger")
    return attest_stored(subject, signer)


def rebuild_envelope(store: LedgerReader, attestation: StoredObject) -> Envelope:
    """The full DSSE envelope of a stored attestation, payload = the subject's stored bytes."""
    if attestation.kind != ATTESTATION_KIND:
        raise AttestationError(
            f"object {attestation.digest}, got kind {attestation.kind}, expected attestation"
        )
    detached = parse_attestation(attestation.data)
    subject = store.get(detached.subject_digest)
    if subject is None:
        raise NotFound(
            f"attestation subject not found, got {detached.subject_digest},"
            " expected the attested object in the ledger"
        )
    return detached.envelope(subject.data)


def detach_envelope(store: LedgerReader, envelope: Envelope) -> list[Prepared]:
    """Attestation objects (one per signature) for a full envelope over a stored object.

    The payload must be exactly some stored object's bytes; the payloadType is kept as
    signed (a wrong one is reported by the checks, not rewritten here).
    """
    digest = sha256_digest(envelope.payload)
    subject = store.get(digest)
    if subject is None:
        raise NotFound(
            f"envelope payload, got bytes with digest {digest} that are not in the ledger,"
            " expected the exact stored bytes of a ledger object"
        )
    if not envelope.signatures:
        raise AttestationError("envelope signatures, got none, expected at least one")
    return [
        prepare_value(
            DetachedAttestation(digest, subject.kind, envelope.payload_type, sig).to_value(),
            ATTESTATION_KIND,
        )
        for sig in envelope.signatures
    ]


def attestations_of(store: LedgerReader, subject_digest: str) -> list[StoredObject]:
    """Every attestation object naming ``subject_digest``, in log order."""
    found = []
    for from_digest, _rel in store.refs_to(subject_digest, SUBJECT_REL):
        obj = store.get(from_digest)
        if obj is not None and obj.kind == ATTESTATION_KIND:
            found.append(obj)
    return sorted(found, key=lambda o: o.seq)


def intoto_predicate(store: LedgerReader, obj: StoredObject) -> dict[str, object]:
    """The ledger-object predicate: the object's kind and where it sits in this log."""
    entry = next(store.entries(since=obj.seq, limit=1), None)
    ledger: dict[str, object] = {"seq": obj.seq}
    if entry is not None:
        ledger["appended_at"] = entry.appended_at
    origin = store.get_meta("origin")
    if origin is not None:
        ledger["origin"] = origin
    predicate: dict[str, object] = {"kind": obj.kind, "ledger": ledger}
    for name, value in (
        ("schema_version", obj.schema_version),
        ("id", obj.object_id),
        ("version", obj.object_version),
        ("legacy_digest", obj.legacy_digest),
    ):
        if value is not None:
            predicate[name] = value
    return predicate


def intoto_export(store: LedgerReader, subject_digest: str, signer: Signer) -> Envelope:
    """An in-toto Statement v1 about one stored object, in a DSSE envelope signed by ``signer``.

    Subject name: ``<id>@<version>``, ``<id>`` or the digest, whichever the object has.
    """
    obj = store.get(subject_digest)
    if obj is None:
        raise NotFound(f"object not found, got {subject_digest}, expected a digest in the ledger")
    name = obj.digest
    if obj.object_id is not None:
        name = obj.object_id
        if obj.object_version is not None:
            name = f"{name}@{obj.object_version}"
    return intoto_envelope(statement(name, obj.digest, intoto_predicate(store, obj)), signer)
