"""``verify`` replays admission: every entry re-judged by the policy as of its own position.

``AdmissionReplay`` is the audit's object check for the admission policy
(``ledger.trust.admission``). For each entry, in log order, it asks what the store's
admission asked when the entry was written, reading only the entries before it
(``ledger.store.prefix.Prefix``), so a row that reached the database past admission
(raw SQL, a file editor, a PostgreSQL writer with its own client, a ``copy`` of such a
ledger) is a finding that names the entry, the rule and the remedy:

1. an attestation's verdict (``check_attestation``): one finding per failure code;
2. each state rule of the policy (e.g. ``cohort-lifecycle``), against the records
   with standing before the entry (``ledger.trust.standing.Standing``); and for the
   authority's first valid attestation of a governed record, the rules on that record
   against the records with standing before the attestation, where it starts to count;
3. an authority-governed record needs the authority's valid attestation in its own
   batch, unless the batch was upstream history and the record may be history. The
   batch is the one a ``batch`` record closes (``ledger.log.batch_record``: the store
   writes one after every batch that adds a governed record). A governed record no
   batch record covers is a finding, except before the log's first batch record
   (ledgers written before batch records existed), where boundaries are unknown: there
   a record that may be history is taken as history, one that may not be needs an
   authority attestation somewhere after it;
4. the records the store writes itself: batch records well formed, each batch after
   the previous one; legacy-digest aliases that hold (``ledger.store.aliases``).

Judging the governed records of a batch waits for its record (they precede their
attestations); the pending set holds governed records only, which are few. Incremental
audits (``--since-checkpoint``) replay the new entries against the stored state before
them: batches never straddle a checkpoint (a checkpoint's record opens the batch that
follows it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.audit.findings import LedgerFinding
from ledger.errors import LedgerError
from ledger.log.batch_record import BATCH_KIND, BatchBoundary, boundary_of
from ledger.store.aliases import ALIAS_KIND, alias_target
from ledger.store.base import LedgerReader, StoredObject
from ledger.store.prefix import Prefix
from ledger.trust.attestation import ATTESTATION_KIND
from ledger.trust.identity import IDENTITY_KIND, TrustIndex, trust_index
from ledger.trust.judgement import SignatureMemo, check_attestation
from ledger.trust.presign import signing_keys
from ledger.trust.standing import Standing

if TYPE_CHECKING:
    from ledger.trust.admission import AdmissionPolicy
    from ledger.trust.refusal import Governed, Refusal


@dataclass
class _Pending:
    """A governed record waiting for the record of its batch."""

    obj: StoredObject
    need: Governed
    attested_at: int | None = None  # the first valid authority attestation seen for it


class AdmissionReplay:
    """``ObjectCheck`` replaying the admission policy (see the module docstring).

    Call ``begin(reader, start)`` before the first entry and ``finish(reader)`` after
    the last; the trust index is read once per ledger size.
    """

    def __init__(self, policy: AdmissionPolicy) -> None:
        self.policy = policy
        # Signature verdicts computed ahead (the audit's workers); exact-match only.
        self.memo = SignatureMemo()
        self._index: TrustIndex | None = None
        self._reader: object | None = None
        self._standing: Standing | None = None
        self._pending: dict[str, _Pending] = {}
        self._seen_batch = False  # a batch record lies before the current entry
        self._last_batch: BatchBoundary | None = None

    # -- set-up --------------------------------------------------------------------------
    def begin(self, reader: LedgerReader, start: int) -> None:
        """Replay from ``start``: whether the log has a batch record before it."""
        before = next(iter(Prefix(reader, start).by_kind(BATCH_KIND)), None)
        self._seen_batch = before is not None

    def signing_keys(self, reader: LedgerReader) -> dict[str, bytes]:
        """The raw key each known key id's signatures are checked with."""
        return signing_keys(self._trust(reader))

    def _trust(self, reader: LedgerReader) -> TrustIndex:
        if self._index is None or self._reader is not reader or self._index.size != reader.size():
            self._index, self._reader = trust_index(reader), reader
            self._standing = None
        return self._index

    def _standing_of(self, reader: LedgerReader) -> Standing:
        if self._standing is None or self._standing.reader is not reader:
            self._standing = Standing(reader, self.policy)
        return self._standing

    # -- one entry -----------------------------------------------------------------------
    def __call__(self, obj: StoredObject, reader: LedgerReader) -> list[LedgerFinding]:
        try:
            return self._findings(obj, reader)
        except (TypeError, ValueError) as exc:
            # Rows of the wrong SQL type (a tampered file) are findings, never crashes.
            return [
                LedgerFinding("malformed", f"{obj.kind} unreadable: {exc}", obj.seq, obj.digest)
            ]

    def _findings(self, obj: StoredObject, reader: LedgerReader) -> list[LedgerFinding]:
        kind = obj.kind
        if kind == ATTESTATION_KIND:
            return self._attestation(obj, reader)
        found: list[LedgerFinding] = []
        if kind == BATCH_KIND:
            return self._batch(obj, reader)
        if kind == ALIAS_KIND:
            try:
                alias_target(Prefix(reader, obj.seq), obj)
            except LedgerError as exc:
                return [LedgerFinding("alias-invalid", str(exc), obj.seq, obj.digest)]
            return []
        if kind == IDENTITY_KIND:
            found += self._identity_key(obj, reader)
        need = self.policy.governed(obj, reader)
        if need is not None:
            self._pending[obj.digest] = _Pending(obj, need)
        rules = self.policy.parts_for(kind)[1]  # as admission asks them
        if rules:
            standing = self._standing_of(reader)
            before = Prefix(reader, obj.seq)
            for rule in rules:
                refusal = rule.check(obj, before, standing)
                if refusal is not None:
                    found.append(_finding(obj, refusal))
        return found

    def _attestation(self, obj: StoredObject, reader: LedgerReader) -> list[LedgerFinding]:
        from ledger.trust.refusal import attestation_refusal

        verdict = check_attestation(reader, obj, self.policy, self._trust(reader), self.memo)
        if verdict.ok:
            if verdict.signer == "authority":
                pending = self._pending.get(verdict.subject_digest)
                if pending is not None and pending.attested_at is None:
                    pending.attested_at = obj.seq
                return self._established(obj, verdict.subject_digest, reader)
            return []
        remedy = attestation_refusal(obj, verdict).remedy
        return [
            LedgerFinding(f.code, f.message, obj.seq, obj.digest, remedy=remedy)
            for f in verdict.failures
        ]

    def _established(
        self, att: StoredObject, subject_digest: str, reader: LedgerReader
    ) -> list[LedgerFinding]:
        """The state rules on the governed record ``att`` establishes (the authority's
        first attestation of it), judged before ``att``: where it starts to count."""
        subject = reader.get(subject_digest)
        if (
            not self.policy.state_rules
            or subject is None
            or self.policy.governed(subject, reader) is None
        ):
            return []
        standing = self._standing_of(reader)
        if standing.attested_at(subject) != att.seq:
            return []
        before = Prefix(reader, att.seq)
        found = []
        for rule in self.policy.parts_for(subject.kind)[1]:
            refusal = rule.check(subject, before, standing)
            if refusal is not None:
                found.append(
                    LedgerFinding(
                        refusal.rule,
                        f"attestation gives {subject.kind} {subject.digest} standing here:"
                        f" {refusal.missing}",
                        att.seq,
                        att.digest,
                        remedy=refusal.remedy,
                    )
                )
        return found

    def _identity_key(self, obj: StoredObject, reader: LedgerReader) -> list[LedgerFinding]:
        record = next((r for r in self._trust(reader).identities if r.digest == obj.digest), None)
        if record is None or record.key_consistent:
            return []
        return [
            LedgerFinding(
                "identity-key-mismatch",
                f"public_key.key_id, got {record.declared_key_id}, expected"
                f" {record.key_id} (sha256 of the raw key)",
                obj.seq,
                obj.digest,
            )
        ]

    def _batch(self, obj: StoredObject, reader: LedgerReader) -> list[LedgerFinding]:
        """A batch record: check it, then judge the governed records of its batch."""
        try:
            batch = boundary_of(obj.json(), obj.seq)
        except LedgerError as exc:
            return [LedgerFinding("batch-record-invalid", str(exc), obj.seq, obj.digest)]
        found: list[LedgerFinding] = []
        last = self._last_batch
        if last is not None and batch.first <= last.end:
            found.append(
                LedgerFinding(
                    "batch-record-invalid",
                    f"batch from seq {batch.first} overlaps the batch closed at seq {last.end},"
                    " expected batches one after the other",
                    obj.seq,
                    obj.digest,
                )
            )
        for digest, pending in list(self._pending.items()):
            if pending.obj.seq < batch.first:
                found += self._unbatched(pending, reader)
            elif not (batch.history and pending.need.history) and not (
                pending.attested_at is not None and pending.attested_at < batch.end
            ):
                found.append(self._governed_finding(pending, reader, batch.history))
            del self._pending[digest]
        self._seen_batch, self._last_batch = True, batch
        return found

    # -- the governed records no batch record covers ---------------------------------------
    def finish(self, reader: LedgerReader) -> list[LedgerFinding]:
        """What is still pending at the end of the log: written outside a recorded batch."""
        found: list[LedgerFinding] = []
        for pending in self._pending.values():
            found += self._unbatched(pending, reader)
        self._pending.clear()
        return sorted(found, key=lambda f: f.seq or 0)

    def _unbatched(self, pending: _Pending, reader: LedgerReader) -> list[LedgerFinding]:
        if self._seen_batch:
            return [self._governed_finding(pending, reader, False, outside=True)]
        # Before the log's first batch record: no boundaries to replay the rule with.
        if pending.need.history:
            return []  # possibly upstream history: kept, without standing
        if pending.attested_at is None:
            pending.attested_at = self._standing_of(reader).attested_at(pending.obj)
        if pending.attested_at is not None:
            return []
        return [self._governed_finding(pending, reader, False)]

    def _governed_finding(
        self, pending: _Pending, reader: LedgerReader, history: bool, outside: bool = False
    ) -> LedgerFinding:
        from ledger.trust.refusal import governance_refusal

        authority = self._trust(reader).authority_key_id
        refusal = governance_refusal(pending.obj, pending.need, authority, (), history)
        finding = _finding(pending.obj, refusal)
        if outside:
            return LedgerFinding(
                finding.code,
                finding.message + "; no batch record covers it (written past admission)",
                finding.seq,
                finding.digest,
                remedy=finding.remedy,
            )
        return finding


def _finding(obj: StoredObject, refusal: Refusal) -> LedgerFinding:
    return LedgerFinding(refusal.rule, refusal.missing, obj.seq, obj.digest, remedy=refusal.remedy)
