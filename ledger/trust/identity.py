"""Verifier identities and key revocations: governance objects the authority attests.

A ``verifier-identity`` binds a verifier id (the ``verifier.id`` that EvaluatorPlans and
VerificationResults name), one adapter and the adapter versions it may sign for, to one
Ed25519 public key. A ``revocation`` withdraws a key, ``retired`` or ``compromised``.

Invariants:

* Each governance object is appended together with its attestation by the ledger's
  authority key (meta ``authority_public_key``) in one ``append_many`` call. An object is
  *in force* from the log position of its first valid authority attestation; one without
  any is ignored by the checks and reported by ``provledger verify``.
* "Before" always means an earlier log sequence number, never a wall-clock time.
* A key id is computed from the stored raw key (``ledger.trust.keys.key_id``); the declared
  ``public_key.key_id`` is checked against it and an identity whose two disagree binds
  nothing.
* Rotation appends a new identity for the same verifier id; nothing is updated or
  deleted, and old keys stay valid for what they signed until revoked.
* Registration refuses the authority and log keys, a revoked key, and a key already
  bound to a different verifier id; these checks run inside the write lock.
* The authority key itself cannot be revoked here: it signs revocations.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger.errors import IdentityError, InputError, KeyFileError, NotFound
from ledger.store.base import AppendResult, LedgerReader, Store, StoredObject
from ledger.store.prepared import prepare_value
from ledger.trust.attestation import (
    ATTESTATION_KIND,
    SUBJECT_REL,
    attest_prepared,
    parse_attestation,
)
from ledger.trust.dsse import pae, payload_type_for
from ledger.trust.keys import Signer, is_key_id, key_id, public_key_from_raw, public_key_raw, verify

IDENTITY_KIND: Final = "verifier-identity"
REVOCATION_KIND: Final = "revocation"
GOVERNANCE_KINDS: Final = (IDENTITY_KIND, REVOCATION_KIND)
SCHEMA_VERSION: Final = "0.1"

RevocationReason = Literal["retired", "compromised"]
REVOCATION_REASONS: Final[tuple[str, ...]] = get_args(RevocationReason)
IdentityStatus = Literal["active", "retired", "compromised", "unauthorized", "invalid-key"]


# --- building ------------------------------------------------------------------------


def identity_value(
    verifier_id: str,
    adapter: str,
    adapter_versions: Iterable[str],
    public_key: Ed25519PublicKey,
) -> dict[str, object]:
    """The identity's JSON value; adapter versions sorted and de-duplicated."""
    raw = public_key_raw(public_key)
    return {
        "provledger_kind": IDENTITY_KIND,
        "schema_version": SCHEMA_VERSION,
        "verifier_id": verifier_id,
        "adapter": adapter,
        "adapter_versions": sorted(set(adapter_versions)),
        "public_key": {
            "algorithm": "ed25519",
            "raw": base64.b64encode(raw).decode("ascii"),
            "key_id": key_id(raw),
        },
    }


def revocation_value(key: str, reason: str, note: str | None = None) -> dict[str, object]:
    """The revocation's JSON value."""
    value: dict[str, object] = {
        "provledger_kind": REVOCATION_KIND,
        "schema_version": SCHEMA_VERSION,
        "key_id": key,
        "reason": reason,
    }
    if note is not None:
        value["note"] = note
    return value


# --- reading -------------------------------------------------------------------------


def authority_key(reader: LedgerReader) -> Ed25519PublicKey | None:
    """The ledger's authority public key from meta; None if absent or inconsistent.

    Inconsistent = the base64 raw key does not decode, or its key id is not the recorded
    ``authority_key_id``; then nothing counts as authority-attested.
    """
    text, recorded = reader.get_meta("authority_public_key"), reader.get_meta("authority_key_id")
    if text is None:
        return None
    try:
        public_key = public_key_from_raw(base64.b64decode(text, validate=True))
    except (binascii.Error, ValueError, KeyFileError):
        return None
    if recorded is not None and key_id(public_key) != recorded:
        return None
    return public_key


@dataclass(frozen=True)
class IdentityRecord:
    """One stored verifier identity. ``key_id`` is computed from ``public_key_raw``."""

    digest: str
    seq: int
    verifier_id: str
    adapter: str
    adapter_versions: tuple[str, ...]
    public_key_raw: bytes
    key_id: str
    declared_key_id: str
    authorized_at: int | None

    @property
    def key_consistent(self) -> bool:
        return self.key_id == self.declared_key_id

    def in_force_before(self, seq: int) -> bool:
        """Appended and authority-attested at log positions before ``seq``."""
        return self.seq < seq and self.authorized_at is not None and self.authorized_at < seq

    def to_json(self) -> dict[str, Any]:  # the --json document, read back by the CLI
        return {
            "digest": self.digest,
            "seq": self.seq,
            "verifier_id": self.verifier_id,
            "adapter": self.adapter,
            "adapter_versions": list(self.adapter_versions),
            "key_id": self.key_id,
            "authorized_at": self.authorized_at,
        }


@dataclass(frozen=True)
class RevocationRecord:
    """One stored revocation; ``effective_at`` is None when no authority attestation exists."""

    digest: str
    seq: int
    key_id: str
    reason: str
    note: str | None
    authorized_at: int | None

    @property
    def effective_at(self) -> int | None:
        """The log position from which the revocation is in force."""
        return None if self.authorized_at is None else max(self.seq, self.authorized_at)

    def to_json(self) -> dict[str, Any]:  # the --json document, read back by the CLI
        return {
            "digest": self.digest,
            "seq": self.seq,
            "key_id": self.key_id,
            "reason": self.reason,
            "note": self.note,
            "effective_at": self.effective_at,
        }


@dataclass(frozen=True, eq=False)
class TrustIndex:
    """Every identity and revocation of a ledger with their authority status, read once."""

    size: int
    authority_key: Ed25519PublicKey | None
    authority_key_id: str | None
    identities: tuple[IdentityRecord, ...]
    revocations: tuple[RevocationRecord, ...]
    _by_key: dict[str, tuple[IdentityRecord, ...]] = field(repr=False)

    def identities_for(self, key: str) -> tuple[IdentityRecord, ...]:
        """Identities whose raw key has this key id (consistent ones only), in log order."""
        return self._by_key.get(key, ())

    def revocations_for(self, key: str) -> list[RevocationRecord]:
        """Revocations of ``key`` that the authority attested, in log order."""
        return [r for r in self.revocations if r.key_id == key and r.effective_at is not None]

    def status(self, identity: IdentityRecord) -> IdentityStatus:
        """Current status: a compromised revocation wins over a retired one."""
        if not identity.key_consistent:
            return "invalid-key"
        if identity.authorized_at is None:
            return "unauthorized"
        reasons = {r.reason for r in self.revocations_for(identity.key_id)}
        if "compromised" in reasons:
            return "compromised"
        if "retired" in reasons:
            return "retired"
        return "active"


def authority_attested_at(
    reader: LedgerReader, obj: StoredObject, authority: Ed25519PublicKey | None
) -> int | None:
    """Seq of the first attestation of ``obj`` that the authority key validly signed."""
    if authority is None:
        return None
    authority_id = key_id(authority)
    expected_type = payload_type_for(obj.kind)
    first: int | None = None
    for from_digest, _rel in reader.refs_to(obj.digest, SUBJECT_REL):
        att = reader.get(from_digest)
        if att is None or att.kind != ATTESTATION_KIND:
            continue
        try:
            detached = parse_attestation(att.data)
        except InputError:
            continue
        if (
            detached.subject_digest != obj.digest
            or detached.subject_kind != obj.kind
            or detached.payload_type != expected_type
            or detached.signature.keyid != authority_id
        ):
            continue
        if verify(authority, pae(detached.payload_type, obj.data), detached.signature.sig) and (
            first is None or att.seq < first
        ):
            first = att.seq
    return first


def _identity_record(
    reader: LedgerReader, obj: StoredObject, authority: Ed25519PublicKey | None
) -> IdentityRecord | None:
    try:
        value = obj.json()
        public_key = value["public_key"]
        raw = base64.b64decode(public_key["raw"], validate=True)
        computed = key_id(raw)
        versions = value["adapter_versions"]
        record = IdentityRecord(
            digest=obj.digest,
            seq=obj.seq,
            verifier_id=str(value["verifier_id"]),
            adapter=str(value["adapter"]),
            adapter_versions=tuple(str(v) for v in versions),
            public_key_raw=raw,
            key_id=computed,
            declared_key_id=str(public_key["key_id"]),
            authorized_at=authority_attested_at(reader, obj, authority),
        )
    except (ValueError, KeyError, TypeError, binascii.Error, InputError):
        # Schema problems are the audit's to report; a malformed identity binds nothing.
        return None
    return record


def _revocation_record(
    reader: LedgerReader, obj: StoredObject, authority: Ed25519PublicKey | None
) -> RevocationRecord | None:
    try:
        value = obj.json()
        key, reason, note = value["key_id"], value["reason"], value.get("note")
    except (ValueError, KeyError, TypeError):
        return None
    if not is_key_id(key) or reason not in REVOCATION_REASONS:
        return None
    return RevocationRecord(
        digest=obj.digest,
        seq=obj.seq,
        key_id=key,
        reason=reason,
        note=note if isinstance(note, str) else None,
        authorized_at=authority_attested_at(reader, obj, authority),
    )


def trust_index(reader: LedgerReader) -> TrustIndex:
    """Read every identity and revocation of the ledger (all of them: filter by seq later)."""
    size = reader.size()
    authority = authority_key(reader)
    identities = [
        rec
        for obj in list(reader.by_kind(IDENTITY_KIND))
        if (rec := _identity_record(reader, obj, authority)) is not None
    ]
    revocations = [
        rev
        for obj in list(reader.by_kind(REVOCATION_KIND))
        if (rev := _revocation_record(reader, obj, authority)) is not None
    ]
    by_key: dict[str, list[IdentityRecord]] = {}
    for rec in identities:
        if rec.key_consistent:
            by_key.setdefault(rec.key_id, []).append(rec)
    return TrustIndex(
        size=size,
        authority_key=authority,
        authority_key_id=None if authority is None else key_id(authority),
        identities=tuple(identities),
        revocations=tuple(revocations),
        _by_key={k: tuple(v) for k, v in by_key.items()},
    )


# --- appending -----------------------------------------------------------------------


def _require_authority(reader: LedgerReader, authority: Signer) -> str:
    """The ledger's authority key id, if ``authority`` holds that key; else IdentityError."""
    recorded = authority_key(reader)
    if recorded is None:
        raise IdentityError(
            "ledger authority key, got none (or an inconsistent one) in meta,"
            " expected a ledger made by `provledger init`"
        )
    expected = key_id(recorded)
    if authority.key_id != expected:
        raise IdentityError(
            f"authority key, got key id {authority.key_id}, expected the ledger's authority"
            f" key {expected}"
        )
    return expected


@dataclass(frozen=True)
class GovernanceAppend:
    """The two entries one governance operation appends: the object and its attestation."""

    subject: AppendResult
    attestation: AppendResult
    key_id: str


def _clean_text(value: str, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise InputError(f"{what}, got {value!r}, expected non-empty text without outer spaces")
    return value


def register_identity(
    store: Store,
    *,
    verifier_id: str,
    adapter: str,
    adapter_versions: Sequence[str],
    public_key: Ed25519PublicKey,
    authority: Signer,
) -> GovernanceAppend:
    """Append an identity and its authority attestation in one transaction.

    Refused (IdentityError, exit 4): wrong authority key; the key is the authority or log
    key; the key has a revocation in force; the key is already bound to another verifier id.
    """
    _clean_text(verifier_id, "verifier id")
    _clean_text(adapter, "adapter")
    if not adapter_versions:
        raise InputError("adapter versions, got none, expected at least one --adapter-version")
    for version in adapter_versions:
        _clean_text(version, "adapter version")
    identity = prepare_value(
        identity_value(verifier_id, adapter, adapter_versions, public_key), IDENTITY_KIND
    )
    attestation = attest_prepared(identity, authority)
    new_key = key_id(public_key)

    def precheck(reader: LedgerReader) -> None:
        authority_id = _require_authority(reader, authority)
        if new_key in (authority_id, reader.get_meta("log_key_id")):
            raise IdentityError(
                f"verifier key, got {new_key}, expected a key other than the ledger's"
                " authority and log keys"
            )
        index = trust_index(reader)
        revoked = index.revocations_for(new_key)
        if revoked:
            raise IdentityError(
                f"verifier key {new_key}, got a {revoked[-1].reason} revocation at seq"
                f" {revoked[-1].seq}, expected a key that was never revoked"
            )
        for other in index.identities_for(new_key):
            if other.verifier_id != verifier_id:
                raise IdentityError(
                    f"verifier key {new_key} is bound to verifier id {other.verifier_id!r},"
                    f" got {verifier_id!r}, expected one verifier id per key"
                )

    subject_result, attestation_result = store.append_many([identity, attestation], precheck)
    return GovernanceAppend(subject_result, attestation_result, new_key)


def revoke_key(
    store: Store,
    key: str,
    reason: str,
    *,
    authority: Signer,
    note: str | None = None,
) -> GovernanceAppend:
    """Append a revocation of ``key`` and its authority attestation in one transaction.

    NotFound when no identity uses the key. Refused (IdentityError): the authority key; a
    key already compromised; ``retired`` for a key already retired.
    """
    if not is_key_id(key):
        raise InputError(f"key id, got {key!r}, expected 64 lowercase hex characters")
    if reason not in REVOCATION_REASONS:
        raise InputError(f"revocation reason, got {reason!r}, expected retired or compromised")
    if note is not None:
        _clean_text(note, "revocation note")
    revocation = prepare_value(revocation_value(key, reason, note), REVOCATION_KIND)
    attestation = attest_prepared(revocation, authority)

    def precheck(reader: LedgerReader) -> None:
        authority_id = _require_authority(reader, authority)
        if key == authority_id:
            raise IdentityError(
                f"key to revoke, got the authority key {key}, expected a verifier key"
                " (the authority key signs revocations and cannot revoke itself)"
            )
        index = trust_index(reader)
        if not index.identities_for(key):
            raise NotFound(
                f"verifier identity, got no identity with key id {key}, expected a registered key"
            )
        for existing in index.revocations_for(key):
            if existing.reason == "compromised" or existing.reason == reason:
                raise IdentityError(
                    f"key {key} is already revoked ({existing.reason}, seq {existing.seq}),"
                    f" got {reason}, expected a stronger reason or none"
                )

    subject_result, attestation_result = store.append_many([revocation, attestation], precheck)
    return GovernanceAppend(subject_result, attestation_result, key)


def identities_matching(index: TrustIndex, ref: str) -> list[IdentityRecord]:
    """Identities named by a key id, an identity digest, or a verifier id (log order)."""
    return [rec for rec in index.identities if ref in (rec.key_id, rec.digest, rec.verifier_id)]
