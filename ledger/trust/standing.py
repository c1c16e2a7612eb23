"""Standing: which stored records count. The one computation every audit, gate and view uses.

A stored record has standing as of log position P (by default: the whole ledger) when

1. replaying admission accepts it at its own position: for an attestation, its
   verdict is valid (``ledger.trust.judgement.check_attestation``); for any record, no
   state rule of the policy refuses it, judged against the entries before it and the
   standing they had then (e.g. a cohort document must be a legal successor of the
   documents of its id that counted); and
2. if the policy governs it (``AdmissionPolicy.governed``), a valid attestation of
   exactly its bytes by the ledger's authority key, appended after it and before P.

So a row written past admission (raw SQL, a file editor with write access, a
PostgreSQL writer login with its own client, a ``copy`` of such a ledger) that a rule
refuses has no standing anywhere, before anyone runs ``verify``; and upstream history
kept unsigned has none until the authority signs it. The rule "the authority's
attestation in the same batch" is not a condition here: it makes ``verify`` report a
governed record written outside it (``ledger.audit.replay``), but a record the authority
has signed is one the authority vouches for, whichever batch brought it. Hence unsigned
history, or anything written past admission, can never block the authority: state
rules judge a record against records with standing only.

Every judgement reads only what precedes the record judged (``ledger.store.prefix``);
``as_of`` bounds what may have made a governed record count. Results are kept per
``Standing`` object (one per reader: one snapshot of the ledger).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.store.base import LedgerReader, StoredObject
from ledger.store.prefix import Prefix

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    from ledger.trust.admission import AdmissionPolicy
    from ledger.trust.identity import TrustIndex
    from ledger.trust.refusal import Refusal


class Standing:
    """Standing of the records of one ledger snapshot under one policy (module docstring).

    ``policy`` defaults to the one the reader's ledger was opened with.
    """

    def __init__(self, reader: LedgerReader, policy: AdmissionPolicy | None = None) -> None:
        self.reader = reader
        self.policy = reader.policy if policy is None else policy
        self._refusal: dict[str, Refusal | None] = {}
        self._attested: dict[str, int | None] = {}
        self._authority: Ed25519PublicKey | None = None
        self._authority_read = False
        self._index: TrustIndex | None = None

    # -- the two conditions ----------------------------------------------------------
    def refusal(self, obj: StoredObject) -> Refusal | None:
        """Why replaying admission refuses ``obj`` at its position (None: it accepts);
        the same-batch rule aside (see the module docstring)."""
        if obj.digest not in self._refusal:
            self._refusal[obj.digest] = self._judge(obj)
        return self._refusal[obj.digest]

    def admitted(self, obj: StoredObject) -> bool:
        return self.refusal(obj) is None

    def attested_at(self, obj: StoredObject) -> int | None:
        """Seq of the first valid attestation of ``obj`` by the ledger's authority key
        appended after it, or None."""
        if obj.digest not in self._attested:
            from ledger.trust.identity import authority_attested_at

            first = authority_attested_at(self.reader, obj, self._authority_key())
            self._attested[obj.digest] = first if first is not None and first > obj.seq else None
        return self._attested[obj.digest]

    def has_standing(self, obj: StoredObject, as_of: int | None = None) -> bool:
        """True when ``obj`` counts as of log position ``as_of`` (default: now)."""
        end = self.reader.size() if as_of is None else as_of
        if obj.seq >= end or not self.admitted(obj):
            return False
        if self.policy.governed(obj, self.reader) is None:
            return True
        signed = self.attested_at(obj)
        return signed is not None and signed < end

    def since(self, obj: StoredObject) -> int | None:
        """The log position from which ``obj`` counts: a judgement of entry N may count
        it iff this is below N (``has_standing(obj, N)``). Its own seq for a record
        nobody governs, the authority's first valid attestation of it for a governed
        one; None when it never counts."""
        if not self.admitted(obj):
            return None
        if self.policy.governed(obj, self.reader) is None:
            return obj.seq
        return self.attested_at(obj)

    def why_not(self, obj: StoredObject, as_of: int | None = None) -> str | None:
        """None when ``obj`` has standing, else one phrase saying why not."""
        if self.has_standing(obj, as_of):
            return None
        refusal = self.refusal(obj)
        if refusal is not None:
            return f"refused by admission ({refusal.rule}): {refusal.missing}"
        if obj.seq >= (self.reader.size() if as_of is None else as_of):
            return "appended later"
        return "no valid attestation by the ledger's authority key (unattested history)"

    # -- the judgement ----------------------------------------------------------------
    def _authority_key(self) -> Ed25519PublicKey | None:
        if not self._authority_read:
            from ledger.trust.identity import authority_key

            self._authority, self._authority_read = authority_key(self.reader), True
        return self._authority

    def _judge(self, obj: StoredObject) -> Refusal | None:
        from ledger.trust.attestation import ATTESTATION_KIND

        if obj.kind == ATTESTATION_KIND:
            return self._attestation_refusal(obj)
        before = Prefix(self.reader, obj.seq)
        for rule in self.policy.state_rules:
            refusal = rule.check(obj, before, self)
            if refusal is not None:
                return refusal
        return None

    def _attestation_refusal(self, obj: StoredObject) -> Refusal | None:
        from ledger.trust.identity import trust_index
        from ledger.trust.judgement import check_attestation
        from ledger.trust.refusal import attestation_refusal

        if self._index is None:
            self._index = trust_index(self.reader)
        verdict = check_attestation(self.reader, obj, self.policy, self._index)
        return None if verdict.ok else attestation_refusal(obj, verdict)
