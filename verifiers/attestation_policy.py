"""IDKMesh's attestation rules, plugged into ``ledger.trust.policy``.

- A VerificationResult or an EvaluatorPlan is a verifier's statement: only a registered
  verifier identity may attest it (the authority key alone does not make it valid), and
  only an identity holding the ``verifier.id`` and ``verifier.adapter`` +
  ``adapter_version`` the subject names. A missing ``adapter_version`` never matches.
- A verifier may not attest a VerificationResult about its own work: the ResultManifest
  it names (``provenance.result_manifest_digest`` as ledger or legacy digest, else
  ``result_manifest_id``) has that ``worker.id``, or ``independence.worker_id_observed``
  is that id.

Part of the package's default admission policy: ``policy_parts`` is registered as the
``idkmesh-verifiers`` entry point of the ``provledger.policy`` group (pyproject.toml),
which ``ledger.trust.admission.default_policy`` loads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from ledger.encoding.digest import is_digest
from ledger.store.aliases import by_legacy_digest
from ledger.trust.policy import SignerClaim
from verifiers.model.documents import EvaluatorPlan, ResultManifest, VerificationResult

if TYPE_CHECKING:
    from ledger.store.base import LedgerReader, StoredObject
    from ledger.trust.admission import PolicyParts

VERIFIER_SUBJECT_KINDS: Final = ("verification-result", "evaluator-plan")
RESULT_MANIFEST: Final = "result-manifest"


@dataclass(frozen=True)
class IDKMeshAttestationPolicy:
    """``AttestationPolicy`` for IDKMesh verifier statements (see the module docstring)."""

    def verifier_signed(self, kind: str) -> bool:
        return kind in VERIFIER_SUBJECT_KINDS

    def signer_claim(self, subject: StoredObject) -> SignerClaim:
        value = subject.json()
        if not isinstance(value, dict):
            return SignerClaim()
        model = VerificationResult if subject.kind == "verification-result" else EvaluatorPlan
        return SignerClaim(*model.stored(subject, value).verifier)

    def excluded_signers(self, reader: LedgerReader, subject: StoredObject) -> dict[str, str]:
        if subject.kind != "verification-result":
            return {}
        value = subject.json()
        if not isinstance(value, dict):
            return {}
        return _worker_ids(reader, VerificationResult.stored(subject, value))


def policy_parts() -> PolicyParts:
    """IDKMesh's attestation policy, as a part of the package's default policy."""
    from ledger.trust.admission import PolicyParts

    return PolicyParts(attestation=IDKMeshAttestationPolicy())


def _worker_ids(reader: LedgerReader, result: VerificationResult) -> dict[str, str]:
    """Worker ids the VerificationResult's manifest names -> where each came from."""
    found: dict[str, str] = {}
    digest = result.result_manifest_digest
    manifests: list[StoredObject] = []
    if isinstance(digest, str) and is_digest(digest):
        direct = reader.get(digest)
        if direct is not None and direct.kind == RESULT_MANIFEST:
            manifests = [direct]
        else:
            manifests = [
                m for m, _hints in by_legacy_digest(reader, digest) if m.kind == RESULT_MANIFEST
            ]
    manifest_id = result.result_manifest_id
    if not manifests and isinstance(manifest_id, str):
        manifests = reader.by_id(manifest_id, kind=RESULT_MANIFEST)
    for manifest in manifests:
        value = manifest.json()
        worker_id = (
            ResultManifest.stored(manifest, value).worker_id if isinstance(value, dict) else None
        )
        if worker_id is not None:
            found.setdefault(worker_id, f"ResultManifest {manifest.digest} worker.id")
    observed = result.at("independence", "worker_id_observed")
    if isinstance(observed, str):
        found.setdefault(observed, "independence.worker_id_observed")
    return found
