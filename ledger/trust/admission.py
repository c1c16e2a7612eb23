"""Admission: the one rule set every append passes, inside the append transaction.

Modelled on python-tuf's ``TrustedMetadataSet``: nothing enters the trusted state except
through one gate that checks it against the state it would extend. The store calls
``AdmissionPolicy.admit`` after it has written a batch's rows and before ``COMMIT``
(``ledger.store.sqlite.SQLiteStore.append_many``), so the rules see the batch at its
real log positions and a refusal rolls the whole batch back. No write path can skip it.

Rules, in order; every refusal of a batch is collected before raising:

1. **Attestations verify.** Every new attestation object must be valid as judged at its
   own log position (``ledger.trust.judgement.check_attestation``): it parses, its
   subject is stored, its payloadType is the one the ledger defines for the subject's
   kind, its signature verifies over the subject's stored bytes, and its key is the
   authority key or a registered, authorised, unrevoked verifier key allowed to sign
   that subject. An invalid attestation therefore never enters the ledger.
2. **Authority-governed records.** Every new object a ``Governance`` names (the core
   names verifier identities and revocations; plug-ins name their own kinds) needs an
   attestation by the ledger's authority key in the same batch. A batch recorded as
   ``history`` (upstream records imported without signing) is exempt: those objects
   are kept, but carry no standing; whoever reads them must check for the attestation.
3. **Legal successors.** Every ``StateRule`` checks each new object against the stored
   state before it (e.g. a lifecycle that only moves forward).

The generic core knows no IDKMesh kind: plug-ins are installed by the CLI composition
root (``install``) and built lazily on first use.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ledger.errors import RuleViolation
from ledger.store.base import LedgerReader, SignatureVerdicts, StoredObject


@dataclass(frozen=True)
class Governed:
    """Why an object needs the authority's signature, and the command that gives it one."""

    what: str
    remedy: str


@dataclass(frozen=True)
class Refusal:
    """One object the policy refuses: what is missing, and the command that does it properly."""

    digest: str
    kind: str
    missing: str
    remedy: str

    def text(self) -> str:
        return f"{self.kind} {self.digest} refused, {self.missing} (use: {self.remedy})"


class AdmissionRefused(RuleViolation):
    """The batch breaks an admission rule (exit 4); nothing of it was written."""

    def __init__(self, refusals: Sequence[Refusal]) -> None:
        self.refusals = tuple(refusals)
        more = f" (and {len(refusals) - 1} more)" if len(refusals) > 1 else ""
        super().__init__(refusals[0].text() + more)


class Governance(Protocol):
    """Says whether an object is authority-governed (None: it is not)."""

    def governed(self, obj: StoredObject, reader: LedgerReader) -> Governed | None: ...


class StateRule(Protocol):
    """Checks a new object against the stored state before it (None: admissible)."""

    def check(self, obj: StoredObject, reader: LedgerReader) -> Refusal | None: ...


@dataclass(frozen=True)
class PolicyParts:
    """What a plug-in adds to the core policy."""

    governance: tuple[Governance, ...] = ()
    state_rules: tuple[StateRule, ...] = ()


def _value(obj: StoredObject) -> object:
    try:
        return json.loads(obj.data)
    except (ValueError, UnicodeDecodeError):
        return None


# ledger.trust.identity's IDENTITY_KIND and REVOCATION_KIND (not imported here: this
# module is loaded by every CLI start, identity.py pulls in the crypto stack).
_IDENTITY_KIND = "verifier-identity"
_REVOCATION_KIND = "revocation"


class CoreGovernance:
    """The core's own governed kinds: verifier identities and key revocations."""

    def governed(self, obj: StoredObject, reader: LedgerReader) -> Governed | None:
        if obj.kind not in (_IDENTITY_KIND, _REVOCATION_KIND):
            return None  # the common case, decided without parsing
        value = _value(obj)
        if obj.kind == _IDENTITY_KIND:
            who = value.get("verifier_id") if isinstance(value, dict) else None
            return Governed(
                f"verifier identity {who!r}",
                "provledger identity register --verifier-id ID --adapter NAME"
                " --adapter-version V --public-key KEY.pub",
            )
        if obj.kind == _REVOCATION_KIND:
            key = value.get("key_id") if isinstance(value, dict) else None
            return Governed(
                f"revocation of key {key}", "provledger identity revoke KEY_ID --reason REASON"
            )
        return None


_SIGN_REMEDY = "provledger sign SUBJECT --key KEY (the authority or a registered verifier key)"
_REGISTER = (
    "provledger identity register --verifier-id ID --adapter NAME --adapter-version V"
    " --public-key KEY.pub"
)
_ATTESTATION_REMEDY = {
    "unregistered-key": _REGISTER,
    "identity-not-authorized": _REGISTER,
    "wrong-verifier-id": _REGISTER,
    "wrong-adapter-version": _REGISTER,
    "revoked-retired": _REGISTER + " (a new, unrevoked key)",
    "revoked-compromised": _REGISTER + " (a new, unrevoked key)",
    "subject-missing": "provledger append FILE (the subject first)",
}


@dataclass(frozen=True)
class AdmissionPolicy:
    """The composed rule set; ``admit`` raises ``AdmissionRefused`` or returns."""

    governance: tuple[Governance, ...] = (CoreGovernance(),)
    state_rules: tuple[StateRule, ...] = ()

    def extended(self, parts: Iterable[PolicyParts]) -> AdmissionPolicy:
        governance, rules = list(self.governance), list(self.state_rules)
        for part in parts:
            governance += part.governance
            rules += part.state_rules
        return AdmissionPolicy(tuple(governance), tuple(rules))

    def admit(
        self,
        reader: LedgerReader,
        new: Sequence[StoredObject],
        *,
        history: bool,
        signatures: SignatureVerdicts | None = None,
    ) -> None:
        """Check the newly written objects of one batch (in log order) against the rules.

        ``signatures``: Ed25519 verdicts computed ahead; anything they do not hold for
        exactly the key, message and signature asked is verified here.
        """
        refusals = self.refusals(reader, new, history=history, signatures=signatures)
        if refusals:
            raise AdmissionRefused(refusals)

    def refusals(
        self,
        reader: LedgerReader,
        new: Sequence[StoredObject],
        *,
        history: bool,
        signatures: SignatureVerdicts | None = None,
    ) -> list[Refusal]:
        from ledger.trust.attestation import ATTESTATION_KIND
        from ledger.trust.identity import authority_key, trust_index
        from ledger.trust.judgement import check_attestation
        from ledger.trust.keys import key_id

        refusals: list[Refusal] = []
        authority_signed: set[str] = set()
        attestations = [o for o in new if o.kind == ATTESTATION_KIND]
        if attestations:
            index = trust_index(reader)
            for att in attestations:
                verdict = check_attestation(reader, att, index, signatures)
                if not verdict.ok:
                    first = verdict.failures[0]
                    refusals.append(
                        Refusal(
                            att.digest,
                            att.kind,
                            f"{', '.join(verdict.codes)}: {first.message}",
                            _ATTESTATION_REMEDY.get(first.code, _SIGN_REMEDY),
                        )
                    )
                elif verdict.signer == "authority":
                    # The subject the judgement read from the attestation's bytes.
                    authority_signed.add(verdict.subject_digest)
        authority = authority_key(reader)
        authority_id = None if authority is None else key_id(authority)
        for obj in new:
            if obj.kind == ATTESTATION_KIND:
                continue
            if not history and obj.digest not in authority_signed:
                for gov in self.governance:
                    need = gov.governed(obj, reader)
                    if need is not None:
                        refusals.append(
                            Refusal(
                                obj.digest,
                                obj.kind,
                                f"{need.what} is authority-governed, got no valid attestation"
                                f" by the ledger's authority key in the same transaction,"
                                f" expected one by {authority_id}",
                                need.remedy,
                            )
                        )
                        break
            for rule in self.state_rules:
                refusal = rule.check(obj, reader)
                if refusal is not None:
                    refusals.append(refusal)
        return refusals


# --- the installed policy ------------------------------------------------------------


@dataclass
class _Registry:
    factories: list[Callable[[], PolicyParts]] = field(default_factory=list)
    built: AdmissionPolicy | None = None


_REGISTRY = _Registry()


def install(factory: Callable[[], PolicyParts]) -> None:
    """Add a plug-in (built lazily, once) to the policy every store uses by default."""
    if factory not in _REGISTRY.factories:
        _REGISTRY.factories.append(factory)
        _REGISTRY.built = None


def current_policy() -> AdmissionPolicy:
    """The core policy extended by every installed plug-in."""
    if _REGISTRY.built is None:
        _REGISTRY.built = AdmissionPolicy().extended(f() for f in _REGISTRY.factories)
    return _REGISTRY.built
