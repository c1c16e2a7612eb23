"""The attestation-policy seam: which kinds only a verifier may attest, and for whom.

The generic judgement (``ledger.trust.judgement``) checks signatures, keys, identities
and revocations for every kind. What a *subject* says about its own signer is protocol
knowledge, so it comes from an ``AttestationPolicy``:

- ``verifier_signed(kind)``: only a registered verifier identity may attest objects of
  this kind (the authority key alone does not make them valid);
- ``signer_claim(subject)``: the verifier id and adapter (name, version) the subject
  names, which the signing identity must hold;
- ``excluded_signers(reader, subject)``: identities that may not attest this subject
  (e.g. the worker whose output it judges), each with where it was found. ``reader``
  holds only what precedes the attestation being judged.

An ``AttestationPolicy`` is one part of the admission policy value
(``ledger.trust.admission.AdmissionPolicy.attestation``); nothing here is installed or
looked up: whoever judges passes the policy in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ledger.store.base import LedgerReader, StoredObject


@dataclass(frozen=True)
class SignerClaim:
    """The verifier a subject names as its author (values as found, possibly missing)."""

    verifier_id: object = None
    adapter: object = None
    adapter_version: object = None


class AttestationPolicy(Protocol):
    """Protocol knowledge the judgement needs about subjects (see the module docstring)."""

    def verifier_signed(self, kind: str) -> bool: ...

    def signer_claim(self, subject: StoredObject) -> SignerClaim: ...

    def excluded_signers(self, reader: LedgerReader, subject: StoredObject) -> dict[str, str]: ...


@dataclass(frozen=True)
class GenericPolicy:
    """No protocol knowledge: any registered key may attest any kind."""

    def verifier_signed(self, kind: str) -> bool:
        return False

    def signer_claim(self, subject: StoredObject) -> SignerClaim:
        return SignerClaim()

    def excluded_signers(self, reader: LedgerReader, subject: StoredObject) -> dict[str, str]:
        return {}


GENERIC_POLICY = GenericPolicy()
