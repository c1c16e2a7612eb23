"""The attestation-policy seam: which kinds only a verifier may attest, and for whom.

The generic judgement (``ledger.trust.judgement``) checks signatures, keys, identities
and revocations for every kind. What a *subject* says about its own signer is protocol
knowledge, so it comes from an ``AttestationPolicy``:

- ``verifier_signed(kind)``: only a registered verifier identity may attest objects of
  this kind (the authority key alone does not make them valid);
- ``signer_claim(subject)``: the verifier id and adapter (name, version) the subject
  names, which the signing identity must hold;
- ``excluded_signers(reader, subject)``: identities that may not attest this subject
  (e.g. the worker whose output it judges), each with where it was found.

The policy in force is the one ``install``-ed (the CLI composition root does), else the
first one registered under the ``provledger.attestation_policy`` entry-point group by an
installed distribution, else ``GENERIC_POLICY`` (no kind is verifier-signed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ledger.store.base import LedgerReader, StoredObject

ENTRY_POINT_GROUP = "provledger.attestation_policy"


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


class GenericPolicy:
    """No protocol knowledge: any registered key may attest any kind."""

    def verifier_signed(self, kind: str) -> bool:
        return False

    def signer_claim(self, subject: StoredObject) -> SignerClaim:
        return SignerClaim()

    def excluded_signers(self, reader: LedgerReader, subject: StoredObject) -> dict[str, str]:
        return {}


GENERIC_POLICY = GenericPolicy()


class _Installed:
    policy: AttestationPolicy | None = None


def install(policy: AttestationPolicy) -> None:
    """Make ``policy`` the one every judgement uses (the composition root calls this)."""
    _Installed.policy = policy


def current_policy() -> AttestationPolicy:
    """The installed policy, else the entry-point plug-in, else ``GENERIC_POLICY``."""
    if _Installed.policy is None:
        # Imported here: importlib.metadata costs ~20 ms, and the CLI installs its policy.
        from importlib.metadata import entry_points

        found = sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ep.name)
        policy: AttestationPolicy = found[0].load()() if found else GENERIC_POLICY
        _Installed.policy = policy
    return _Installed.policy
