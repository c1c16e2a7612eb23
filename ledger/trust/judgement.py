"""Checking attestations against the ledger: pure functions over a ``LedgerReader``.

Protocol knowledge (which kinds only a verifier may sign, what a subject says about its
signer) comes from the policy passed in (``policy.attestation``, a
``ledger.trust.policy.AttestationPolicy``; IDKMesh's is ``verifiers.attestation_policy``).
An attestation is judged at its own log position S (its seq; an envelope from outside
is judged as if appended now), reading only the entries before S
(``ledger.store.prefix.Prefix``): its subject, and whatever the attestation policy looks
up (the manifest naming a result's worker), so nothing appended later changes the
verdict. The one exception is a ``compromised`` revocation, the authority's statement
that every signature by the key is suspect. The payload is always the
subject's STORED bytes and the PAE is rebuilt from them. Failure codes (stable; documented
in docs/IDENTITIES.md):

* ``malformed``: the attestation object cannot be read.
* ``subject-missing``: no object appended before S has the subject digest (or
  envelope payload).
* ``subject-kind-mismatch``: ``subject.kind`` is not the stored object's kind.
* ``payload-type-mismatch``: payloadType is not ``payload_type_for(stored kind)``.
* ``bad-signature``: the signature does not verify over PAE(payloadType, stored bytes).
* ``unregistered-key``: no identity with this key id was appended before S (the
  authority key counts as registered, except on the kinds the attestation policy marks
  verifier-signed, which only a verifier identity may sign).
* ``not-authority-key``: a verifier identity or revocation signed by another key.
* ``identity-not-authorized``: identities exist before S but none had a valid authority
  attestation before S.
* ``wrong-verifier-id`` / ``wrong-adapter-version``: a verifier-signed subject names a
  verifier id / adapter + version (``AttestationPolicy.signer_claim``) the identity does
  not hold. A missing version never matches.
* ``self-verification``: the identity's verifier id is one the policy excludes for this
  subject (``AttestationPolicy.excluded_signers``, e.g. the worker it judges).
* ``revoked-retired``: a ``retired`` revocation of the key was in force before S.
* ``revoked-compromised``: a ``compromised`` revocation of the key exists (any position).

When several identities carry the key, the one with the fewest binding failures (newest
on ties) is reported. An attestation is valid iff it has no failure.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ledger.encoding.digest import sha256_digest
from ledger.errors import InputError, NotFound
from ledger.store.base import LedgerReader, SignatureVerdicts, StoredObject
from ledger.store.prefix import Prefix
from ledger.trust.attestation import (
    ATTESTATION_KIND,
    AttestationFacts,
    DetachedAttestation,
    attestations_of,
    from_facts,
    parse_attestation,
)
from ledger.trust.dsse import Envelope, Signature, kind_of_payload_type, pae, payload_type_for
from ledger.trust.identity import (
    GOVERNANCE_KINDS,
    IdentityRecord,
    TrustIndex,
    trust_index,
)
from ledger.trust.keys import SIGNATURE_SIZE, verify

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject
    from ledger.trust.admission import AdmissionPolicy
    from ledger.trust.policy import AttestationPolicy

FailureCode = Literal[
    "malformed",
    "subject-missing",
    "subject-kind-mismatch",
    "payload-type-mismatch",
    "bad-signature",
    "unregistered-key",
    "not-authority-key",
    "identity-not-authorized",
    "wrong-verifier-id",
    "wrong-adapter-version",
    "self-verification",
    "revoked-retired",
    "revoked-compromised",
]

SignerRole = Literal["authority", "verifier", "unknown"]


@dataclass(frozen=True)
class Failure:
    """One named reason an attestation is invalid."""

    code: FailureCode
    message: str

    def to_json(self) -> JSONObject:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class AttestationVerdict:
    """The verdict on one attestation (one signature). Valid iff ``failures`` is empty.

    ``seq``/``attestation_digest`` are None for an envelope checked from outside the ledger.
    """

    attestation_digest: str | None
    seq: int | None
    subject_digest: str
    subject_kind: str | None
    key_id: str
    signer: SignerRole
    verifier_id: str | None
    identity_digest: str | None
    failures: tuple[Failure, ...]

    @property
    def ok(self) -> bool:
        return not self.failures

    @property
    def codes(self) -> tuple[FailureCode, ...]:
        return tuple(f.code for f in self.failures)

    def to_json(self) -> JSONObject:
        return {
            "attestation": self.attestation_digest,
            "seq": self.seq,
            "subject": self.subject_digest,
            "subject_kind": self.subject_kind,
            "key_id": self.key_id,
            "signer": self.signer,
            "verifier_id": self.verifier_id,
            "identity": self.identity_digest,
            "ok": self.ok,
            "failures": [f.to_json() for f in self.failures],
        }


# --- subject facts -------------------------------------------------------------------


def _binding_failures(
    reader: LedgerReader, identity: IdentityRecord, subject: StoredObject, policy: AttestationPolicy
) -> list[Failure]:
    """What the identity may not sign about this subject (verifier-signed kinds only)."""
    if not policy.verifier_signed(subject.kind):
        return []
    claim = policy.signer_claim(subject)
    failures: list[Failure] = []
    if claim.verifier_id != identity.verifier_id:
        failures.append(
            Failure(
                "wrong-verifier-id",
                f"{subject.kind} verifier.id, got {claim.verifier_id!r}, expected the signing"
                f" identity's {identity.verifier_id!r}",
            )
        )
    adapter, version = claim.adapter, claim.adapter_version
    if adapter != identity.adapter or version not in identity.adapter_versions:
        failures.append(
            Failure(
                "wrong-adapter-version",
                f"{subject.kind} verifier adapter, got {adapter!r} {version!r}, expected"
                f" {identity.adapter!r} at one of {list(identity.adapter_versions)}",
            )
        )
    source = policy.excluded_signers(reader, subject).get(identity.verifier_id)
    if source is not None:
        failures.append(
            Failure(
                "self-verification",
                f"signing verifier {identity.verifier_id!r} is the worker ({source}),"
                " expected an independent verifier",
            )
        )
    return failures


# --- the judgement -------------------------------------------------------------------


class SignatureMemo:
    """Ed25519 verdicts computed ahead, elsewhere (an audit's worker processes).

    Keyed by (raw public key, SHA-256 of the signed message, signature): a verdict is
    used only for exactly the key, message and signature it was computed for, so a
    wrong guess about what will be asked is a miss (verified here), never an answer.
    Each verdict is used once; the memo is bounded.
    """

    LIMIT = 1 << 16

    def __init__(self) -> None:
        self._known: dict[tuple[bytes, bytes, bytes], bool] = {}
        self._read: dict[bytes, AttestationFacts] = {}

    def add_read(self, data: bytes, facts: AttestationFacts) -> None:
        """``parse_attestation(data)`` as a worker read it (``attestation_facts``)."""
        if len(self._read) >= self.LIMIT:
            self._read.clear()  # unused: dropping them only costs time
        self._read[data] = facts

    def read(self, data: bytes) -> DetachedAttestation | None:
        """``parse_attestation(data)`` if a worker read exactly these bytes (used once),
        else None: the judgement reads them itself."""
        facts = self._read.pop(data, None)
        return None if facts is None else from_facts(facts)

    def add(self, key: bytes, message_hash: bytes, sig: bytes, ok: bool) -> None:
        if len(self._known) >= self.LIMIT:
            self._known.clear()  # unused guesses: dropping them only costs time
        self._known[(key, message_hash, sig)] = ok

    def verify(self, key: bytes, message: bytes, sig: bytes) -> bool:
        found = self._known.pop((key, hashlib.sha256(message).digest(), sig), None)
        return verify(key, message, sig) if found is None else found


def signing_key(index: TrustIndex, keyid: str) -> bytes | None:
    """The raw key a signature by ``keyid`` is checked with (None: no key known)."""
    if index.authority_key is not None and keyid == index.authority_key_id:
        return index.authority_key.public_bytes_raw()
    identities = index.identities_for(keyid)
    return identities[0].public_key_raw if identities else None


def _signature_ok(
    index: TrustIndex,
    keyid: str,
    payload_type: str,
    data: bytes,
    sig: bytes,
    memo: SignatureVerdicts | None = None,
) -> bool | None:
    """True/False when a key for ``keyid`` is known, None when none is."""
    if len(sig) != SIGNATURE_SIZE:
        return False
    message = pae(payload_type, data)
    if memo is not None:
        key = signing_key(index, keyid)
        return None if key is None else memo.verify(key, message, sig)
    if index.authority_key is not None and keyid == index.authority_key_id:
        return verify(index.authority_key, message, sig)
    identities = index.identities_for(keyid)
    if not identities:
        return None
    return verify(identities[0].public_key_raw, message, sig)


def _judge(
    reader: LedgerReader,
    policy: AttestationPolicy,
    index: TrustIndex,
    detached: DetachedAttestation,
    seq: int,
    digest: str | None,
    memo: SignatureVerdicts | None = None,
) -> AttestationVerdict:
    failures: list[Failure] = []
    keyid = detached.signature.keyid
    # The judgement reads only the ledger before the attestation (its subject included).
    reader = Prefix(reader, seq)
    subject = reader.get(detached.subject_digest)
    if subject is None:
        failures.append(
            Failure(
                "subject-missing",
                f"subject, got {detached.subject_digest} not in the ledger before seq {seq},"
                " expected the attested object's stored bytes, appended first",
            )
        )
    else:
        if detached.subject_kind != subject.kind:
            failures.append(
                Failure(
                    "subject-kind-mismatch",
                    f"subject.kind, got {detached.subject_kind!r}, expected the stored"
                    f" kind {subject.kind!r}",
                )
            )
        expected_type = payload_type_for(subject.kind)
        if detached.payload_type != expected_type:
            failures.append(
                Failure(
                    "payload-type-mismatch",
                    f"payloadType, got {detached.payload_type!r}, expected {expected_type!r}",
                )
            )
        signed = _signature_ok(
            index, keyid, detached.payload_type, subject.data, detached.signature.sig, memo
        )
        if signed is False:
            failures.append(
                Failure(
                    "bad-signature",
                    f"signature by {keyid}, got one that does not verify over the stored"
                    " subject bytes, expected a valid Ed25519 signature of the DSSE PAE",
                )
            )

    role: SignerRole = "unknown"
    chosen: IdentityRecord | None = None
    subject_kind = subject.kind if subject is not None else detached.subject_kind
    is_authority = index.authority_key_id is not None and keyid == index.authority_key_id
    if subject_kind in GOVERNANCE_KINDS:
        if is_authority:
            role = "authority"
        else:
            failures.append(
                Failure(
                    "not-authority-key",
                    f"{subject_kind} signed by {keyid}, expected the ledger's authority key"
                    f" {index.authority_key_id}",
                )
            )
    elif is_authority and not policy.verifier_signed(subject_kind):
        role = "authority"
    else:
        role, chosen, found = _judge_verifier(
            reader, policy, index, keyid, seq, subject, subject_kind
        )
        failures.extend(found)
    if not is_authority:
        failures.extend(_revocation_failures(index, keyid, seq))
    return AttestationVerdict(
        attestation_digest=digest,
        seq=None if digest is None else seq,
        subject_digest=detached.subject_digest,
        subject_kind=subject_kind,
        key_id=keyid,
        signer=role,
        verifier_id=None if chosen is None else chosen.verifier_id,
        identity_digest=None if chosen is None else chosen.digest,
        failures=tuple(failures),
    )


def _judge_verifier(
    reader: LedgerReader,
    policy: AttestationPolicy,
    index: TrustIndex,
    keyid: str,
    seq: int,
    subject: StoredObject | None,
    subject_kind: str,
) -> tuple[SignerRole, IdentityRecord | None, list[Failure]]:
    known = index.identities_for(keyid)
    before = [rec for rec in known if rec.seq < seq]
    if not before:
        if keyid == index.authority_key_id:
            message = (
                f"key {keyid} is the ledger authority key, not a verifier identity,"
                f" expected a registered verifier key to sign a {subject_kind}"
            )
        else:
            later = f" (first registered at seq {known[0].seq})" if known else ""
            message = (
                f"no verifier identity with key {keyid} was appended before seq {seq}{later},"
                " expected a registered verifier key"
            )
        return "unknown", None, [Failure("unregistered-key", message)]
    authorized = [rec for rec in before if rec.in_force_before(seq)]
    if not authorized:
        return (
            "verifier",
            before[-1],
            [
                Failure(
                    "identity-not-authorized",
                    f"identity {before[-1].digest} for key {keyid}, got no valid authority"
                    f" attestation before seq {seq}, expected one by {index.authority_key_id}",
                )
            ],
        )
    if subject is None:
        return "verifier", authorized[-1], []
    ranked = sorted(
        (
            (len(fs), -rec.seq, rec, fs)
            for rec in authorized
            for fs in [_binding_failures(reader, rec, subject, policy)]
        ),
        key=lambda item: (item[0], item[1]),
    )
    _, _, best, failures = ranked[0]
    return "verifier", best, failures


def _revocation_failures(index: TrustIndex, keyid: str, seq: int) -> list[Failure]:
    failures: list[Failure] = []
    revocations = index.revocations_for(keyid)
    compromised = [r for r in revocations if r.reason == "compromised"]
    if compromised:
        r = compromised[0]
        failures.append(
            Failure(
                "revoked-compromised",
                f"key {keyid} was revoked as compromised (revocation {r.digest}, seq {r.seq}),"
                " expected a key never reported compromised",
            )
        )
    retired = [
        r
        for r in revocations
        if r.reason == "retired" and r.effective_at is not None and r.effective_at < seq
    ]
    if retired and not compromised:
        r = retired[0]
        failures.append(
            Failure(
                "revoked-retired",
                f"key {keyid} was retired at seq {r.effective_at} (revocation {r.digest}),"
                f" got a signature appended at seq {seq}, expected one appended before",
            )
        )
    return failures


# --- entry points --------------------------------------------------------------------


def check_attestation(
    reader: LedgerReader,
    attestation: StoredObject,
    policy: AdmissionPolicy,
    index: TrustIndex | None = None,
    memo: SignatureVerdicts | None = None,
) -> AttestationVerdict:
    """The verdict on one stored attestation object, judged at its own seq under
    ``policy`` (its ``attestation`` part).

    ``memo``: signature verdicts computed ahead (``SignatureMemo``); same verdict.
    """
    if attestation.kind != ATTESTATION_KIND:
        raise InputError(
            f"object {attestation.digest}, got kind {attestation.kind}, expected attestation"
        )
    # Read ahead by a worker from exactly these bytes (``SignatureMemo.read``), or here.
    detached = memo.read(attestation.data) if isinstance(memo, SignatureMemo) else None
    if detached is None:
        try:
            detached = parse_attestation(attestation.data)
        except InputError as exc:
            return _malformed(attestation, str(exc))
    return _judge(
        reader,
        policy.attestation,
        index or trust_index(reader),
        detached,
        attestation.seq,
        attestation.digest,
        memo,
    )


def _malformed(attestation: StoredObject, message: str) -> AttestationVerdict:
    subject = ""
    keyid = ""
    value = attestation.json()
    if isinstance(value, dict):
        raw_subject = value.get("subject")
        if isinstance(raw_subject, dict) and isinstance(raw_subject.get("digest"), str):
            subject = raw_subject["digest"]
    return AttestationVerdict(
        attestation.digest,
        attestation.seq,
        subject,
        None,
        keyid,
        "unknown",
        None,
        None,
        (Failure("malformed", message),),
    )


def check_subject_attestations(
    store: LedgerReader, subject_digest: str, policy: AdmissionPolicy
) -> list[AttestationVerdict]:
    """Verdicts on every attestation naming ``subject_digest``, in log order."""
    index = trust_index(store)
    return [
        check_attestation(store, att, policy, index)
        for att in attestations_of(store, subject_digest)
    ]


def check_envelope(
    reader: LedgerReader,
    envelope: Envelope,
    policy: AdmissionPolicy,
    index: TrustIndex | None = None,
) -> list[AttestationVerdict]:
    """Verdicts on a full DSSE envelope from outside, one per signature, as if appended now.

    The subject is the stored object whose digest is sha256 of the payload, so a changed
    payload gives ``subject-missing`` (or names another object, whose signature fails).
    """
    index = index or trust_index(reader)
    digest = sha256_digest(envelope.payload)
    subject = reader.get(digest)
    kind = (
        subject.kind
        if subject is not None
        else (kind_of_payload_type(envelope.payload_type) or "blob")
    )
    signatures = envelope.signatures or (Signature("", b""),)
    return [
        _judge(
            reader,
            policy.attestation,
            index,
            DetachedAttestation(digest, kind, envelope.payload_type, sig),
            reader.size(),
            None,
        )
        for sig in signatures
    ]


def subject_verdict(verdicts: list[AttestationVerdict]) -> tuple[bool, str]:
    """The ``attestation check`` rule: ok iff at least one attestation and none invalid.

    Returns (ok, one-line reason). An invalid attestation is never outvoted by a valid
    one: it is evidence of tampering or misuse that someone has to look at.
    """
    if not verdicts:
        return False, "no-attestation: the subject has no attestation"
    bad = [v for v in verdicts if not v.ok]
    if bad:
        codes = sorted({code for v in bad for code in v.codes})
        return False, f"{len(bad)} of {len(verdicts)} attestation(s) invalid: {', '.join(codes)}"
    return True, f"{len(verdicts)} valid attestation(s)"


def find_attestation(reader: LedgerReader, digest: str) -> StoredObject:
    """The stored attestation object ``digest``; NotFound or InputError otherwise."""
    obj = reader.get(digest)
    if obj is None:
        raise NotFound(f"attestation not found, got {digest}, expected a digest in the ledger")
    if obj.kind != ATTESTATION_KIND:
        raise InputError(f"object {digest}, got kind {obj.kind}, expected attestation")
    return obj
