"""Standing: which stored records count. The one computation every audit, gate and view uses.

A stored record has standing as of log position P (by default: the whole ledger) when

1. replaying admission accepts it at its own position: for an attestation, its
   verdict is valid (``ledger.trust.judgement.check_attestation``); for any record, no
   state rule of the policy refuses it, judged against the entries before it and the
   standing they had then (e.g. a cohort document must be a legal successor of the
   documents of its id that counted), and for a governed record also against those
   before the attestation that establishes it (below); and
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

A record takes effect where it is established, never earlier: an ungoverned record at
its own seq, a governed one at the authority's first valid attestation of it (``since``).
So the state rules judge a governed record twice: at its own position (as the append
that stored it did) and at its attestation's (as the append that gave it standing did,
``AdmissionPolicy.refusals``), against what counted before there; and "the newest
record of an id that counts" is the one established last, not the one stored last. An
attestation appended later therefore never gives a record standing back in time (a
frozen document imported as history and signed after a scaffold counts after the
scaffold, and must be its legal successor).

Every judgement reads only what precedes the position judged (``ledger.store.prefix``);
``as_of`` bounds what may have made a record count. A judgement at position P asks only
about records established before P, so the recursion always descends. Results are kept per
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
        self._refusal: dict[str, Refusal | None] = {}  # judged at the record's own seq
        self._established_refusal: dict[str, Refusal | None] = {}  # ... at its attestation
        self._attested: dict[str, int | None] = {}
        self._authority: Ed25519PublicKey | None = None
        self._authority_read = False
        self._index: TrustIndex | None = None

    # -- the two conditions ----------------------------------------------------------
    def refusal(self, obj: StoredObject, as_of: int | None = None) -> Refusal | None:
        """Why replaying admission refuses ``obj`` (None: it accepts), judged at its own
        position and, for a governed record, at the attestation establishing it if that
        lies before ``as_of`` (default: anywhere); the same-batch rule aside (see the
        module docstring)."""
        if obj.digest not in self._refusal:
            self._refusal[obj.digest] = self._judge(obj, obj.seq)
        own = self._refusal[obj.digest]
        if own is not None or obj.kind == self._attestation_kind():
            return own
        at = self.established(obj) if self.policy.state_rules else None
        if at is None or at == obj.seq or (as_of is not None and at >= as_of):
            return None
        if obj.digest not in self._established_refusal:
            self._established_refusal[obj.digest] = self._judge(obj, at)
        return self._established_refusal[obj.digest]

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

    def established(self, obj: StoredObject) -> int | None:
        """Where ``obj`` would take effect if admission accepts it: its own seq when
        nobody governs it, else the authority's first valid attestation of it (None:
        never attested)."""
        if self.policy.governed(obj, self.reader) is None:
            return obj.seq
        return self.attested_at(obj)

    def has_standing(self, obj: StoredObject, as_of: int | None = None) -> bool:
        """True when ``obj`` counts as of log position ``as_of`` (default: now)."""
        end = self.reader.size() if as_of is None else as_of
        if obj.seq >= end:
            return False
        # Position first: a judgement at P only ever asks about records established
        # before P, so judging them cannot come back to the record being judged.
        at = self.established(obj)
        return at is not None and at < end and self.admitted(obj)

    def since(self, obj: StoredObject) -> int | None:
        """The log position from which ``obj`` counts: a judgement of entry N may count
        it iff this is below N (``has_standing(obj, N)``). Its own seq for a record
        nobody governs, the authority's first valid attestation of it for a governed
        one; None when it never counts."""
        at = self.established(obj)
        return at if at is not None and self.admitted(obj) else None

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

    @staticmethod
    def _attestation_kind() -> str:
        from ledger.trust.attestation import ATTESTATION_KIND

        return ATTESTATION_KIND

    def _judge(self, obj: StoredObject, end: int) -> Refusal | None:
        """Admission's verdict on ``obj`` judged before position ``end``: its own seq,
        or the authority attestation that establishes it."""
        if obj.kind == self._attestation_kind():
            return self._attestation_refusal(obj)
        before = Prefix(self.reader, end)
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
