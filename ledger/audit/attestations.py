"""The audit's attestation check: judgement verdicts (``ledger.trust.judgement``) as findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.audit.findings import LedgerFinding
from ledger.store.base import LedgerReader, StoredObject
from ledger.trust.attestation import ATTESTATION_KIND
from ledger.trust.identity import IDENTITY_KIND, REVOCATION_KIND, TrustIndex, trust_index
from ledger.trust.judgement import SignatureMemo, check_attestation
from ledger.trust.presign import signing_keys

if TYPE_CHECKING:
    from ledger.trust.admission import AdmissionPolicy


class AttestationAudit:
    """``ObjectCheck`` for ``provledger verify``: one finding per attestation failure.

    Also reports governance objects that nothing makes valid: an identity whose declared
    key id is not its key's (``identity-key-mismatch``), and an identity or revocation
    with no valid authority attestation (``identity-not-authorized``,
    ``revocation-not-authorized``). The trust index is read once per ledger size.
    Attestations are judged under ``policy``.
    """

    def __init__(self, policy: AdmissionPolicy) -> None:
        self.policy = policy
        self._index: TrustIndex | None = None
        self._reader: object | None = None
        # Signature verdicts computed ahead (the audit's workers); exact-match only.
        self.memo = SignatureMemo()

    def signing_keys(self, reader: LedgerReader) -> dict[str, bytes]:
        """The raw key each known key id's signatures are checked with."""
        return signing_keys(self._trust(reader))

    def _trust(self, reader: LedgerReader) -> TrustIndex:
        if self._index is None or self._reader is not reader or self._index.size != reader.size():
            self._index, self._reader = trust_index(reader), reader
        return self._index

    def __call__(self, obj: StoredObject, reader: LedgerReader) -> list[LedgerFinding]:
        try:
            return self._findings(obj, reader)
        except (TypeError, ValueError) as exc:
            # Rows of the wrong SQL type (a tampered file) are findings, never crashes.
            return [
                LedgerFinding("malformed", f"{obj.kind} unreadable: {exc}", obj.seq, obj.digest)
            ]

    def _findings(self, obj: StoredObject, reader: LedgerReader) -> list[LedgerFinding]:
        if obj.kind == ATTESTATION_KIND:
            verdict = check_attestation(reader, obj, self.policy, self._trust(reader), self.memo)
            return [LedgerFinding(f.code, f.message, obj.seq, obj.digest) for f in verdict.failures]
        if obj.kind == IDENTITY_KIND:
            index = self._trust(reader)
            record = next((r for r in index.identities if r.digest == obj.digest), None)
            if record is None:
                return []
            found = []
            if not record.key_consistent:
                found.append(
                    LedgerFinding(
                        "identity-key-mismatch",
                        f"public_key.key_id, got {record.declared_key_id}, expected"
                        f" {record.key_id} (sha256 of the raw key)",
                        obj.seq,
                        obj.digest,
                    )
                )
            if record.authorized_at is None:
                found.append(_unauthorized("identity-not-authorized", obj, index))
            return found
        if obj.kind == REVOCATION_KIND:
            index = self._trust(reader)
            rev = next((r for r in index.revocations if r.digest == obj.digest), None)
            if rev is not None and rev.authorized_at is None:
                return [_unauthorized("revocation-not-authorized", obj, index)]
        return []


def _unauthorized(code: str, obj: StoredObject, index: TrustIndex) -> LedgerFinding:
    return LedgerFinding(
        code,
        f"{obj.kind}, got no valid attestation by the authority key, expected one by"
        f" {index.authority_key_id}",
        obj.seq,
        obj.digest,
    )
