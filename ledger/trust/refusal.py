"""What a refusal says: the rule, the object, what is missing and the command that does it
properly. Shared by admission (``ledger.trust.admission``), standing
(``ledger.trust.standing``) and ``verify``'s replay (``ledger.audit.replay``), so the
three say the same thing about the same object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ledger.store.base import StoredObject
    from ledger.trust.judgement import AttestationVerdict


@dataclass(frozen=True)
class Governed:
    """Why an object needs the authority's signature, and the command that gives it one.

    ``code`` names the rule in findings; ``history``: whether an upstream history import
    may keep the object without the authority's signature (without standing)."""

    what: str
    remedy: str
    code: str = "authority-governed"
    history: bool = True


@dataclass(frozen=True)
class Refusal:
    """One object the policy refuses: what is missing, the command that does it
    properly, and the rule (a stable code, as ``verify`` reports it)."""

    digest: str
    kind: str
    missing: str
    remedy: str
    rule: str = "admission"

    def text(self) -> str:
        return f"{self.kind} {self.digest} refused, {self.missing} (use: {self.remedy})"


_SIGN_REMEDY = "provledger sign SUBJECT --key KEY (the authority or a registered verifier key)"
_REGISTER = (
    "provledger identity register --verifier-id ID --adapter NAME --adapter-version V"
    " --public-key KEY.pub"
)
_ATTESTATION_REMEDY: Final = MappingProxyType(
    {
        "unregistered-key": _REGISTER,
        "identity-not-authorized": _REGISTER,
        "wrong-verifier-id": _REGISTER,
        "wrong-adapter-version": _REGISTER,
        "revoked-retired": _REGISTER + " (a new, unrevoked key)",
        "revoked-compromised": _REGISTER + " (a new, unrevoked key)",
        "subject-missing": "provledger append FILE (the subject first)",
    }
)


def attestation_refusal(att: StoredObject, verdict: AttestationVerdict) -> Refusal:
    """The refusal of an attestation the judgement found invalid (rule: its first code)."""
    first = verdict.failures[0]
    return Refusal(
        att.digest,
        att.kind,
        f"{', '.join(verdict.codes)}: {first.message}",
        _ATTESTATION_REMEDY.get(first.code, _SIGN_REMEDY),
        first.code,
    )


def governance_refusal(
    obj: StoredObject,
    need: Governed,
    authority_id: str | None,
    signers: Iterable[str],
    history: bool,
) -> Refusal:
    """The refusal of a governed object without the authority's attestation in its batch
    (``history``: in a history batch, of a kind history may not keep unsigned)."""
    if history:
        return Refusal(
            obj.digest,
            obj.kind,
            f"{need.what} is authority-governed and is no upstream history, got it in a"
            f" history import without a valid attestation by the ledger's authority key"
            f" {authority_id}, expected one in the same batch",
            need.remedy,
            need.code,
        )
    others = sorted(set(signers) - {authority_id})
    got = (
        f"got an attestation by key {', '.join(others)} instead"
        if others
        else "got no valid attestation by it"
    )
    return Refusal(
        obj.digest,
        obj.kind,
        f"{need.what} is authority-governed, {got} in the same batch,"
        f" expected one by the ledger's authority key {authority_id}",
        need.remedy,
        need.code,
    )
