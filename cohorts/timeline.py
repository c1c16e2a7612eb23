"""Evidence in time: was an outcome pre-registered, and when did the ledger learn a record.

An outcome a cohort lists is **pre-registered** when everything that fixes how it is
judged was in the log, with standing, before the outcome's own entry (the stored
VerificationResult):

- the cohort's frozen record: the first record of the cohort's id, at stage frozen or
  burned, with the audited definition, that has standing (``cohorts.standing``);
- the EvaluatorPlan the result names (``provenance.verifier_config_digest``);
- for a successor (its frozen record claims a predecessor, or a binding with standing
  named it successor before the outcome): the cohort-binding with standing that names
  this definition, and every calibration record that binding cites.

Each record counts from the position where it has standing (a governed record from its
authority attestation). The judgement about an outcome at entry ``R`` reads only entries
before ``R``: no record after it can make the outcome pre-registered (the one later
record read is the cohort's own first fixed record, to tell whether this ledger fixed
the cohort; it is at or before the listing judged). A record missing before
``R`` makes the outcome **not pre-registered**: it does not count (the audit reports an
error). So does an earlier VerificationResult of the same ResultManifest recorded
before all of them had standing: the worker's output was judged, its outcome seen,
before the evaluator was fixed, and a re-run after the freeze does not make it new.
A result that an earlier ``history-import`` record names (``ledger.log.history``)
is imported upstream history: its **order is not attested**, a statement, not a
failure, and never a claim of pre-registration; unless its cohort was fixed by this
ledger (the first record fixing the definition is no imported history) and the log
puts the result before that record, its plan or its binding: then it is not
pre-registered as any other (a marker is any writer's record, so it cannot excuse an
order the ledger itself saw). A listed result the ledger holds only under other bytes
(or not at all) is **not judged**; under other bytes it is "mismatched", in the words
``provenance`` gives it (``cohorts.lookup.other_bytes``), imported history or not.

The first signed checkpoint covering the freeze before ``R`` (``ledger.log.timeline``)
is the log's signed word that the freeze was recorded while the outcome was not; its
witness cosignatures, if any, bound how late that was in wall-clock time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from cohorts.definition import definition_names
from cohorts.lookup import BENCHMARK_COHORT, COHORT_BINDING, Resolution
from cohorts.standing import StandingLookup
from cohorts.upstream import predecessor_claims
from ledger.log.cosignature import WitnessKey
from ledger.log.history import HistoryMark, ImportedHistory
from ledger.log.timeline import Checkpoints, CoveringCheckpoint
from ledger.store.base import LedgerReader, StoredObject
from verifiers.model import CohortView, VerificationResult
from verifiers.model.json import as_str

Status = Literal["pre_registered", "not_pre_registered", "order_not_attested", "not_judged"]
FIXED = ("frozen", "burned")
#: Text for each status, as the reports print it.
STATUS_TEXT: Mapping[Status, str] = {
    "pre_registered": "pre-registered",
    "not_pre_registered": "NOT pre-registered",
    "order_not_attested": "order not attested",
    "not_judged": "not judged",
}


@dataclass(frozen=True)
class Position:
    """A record the judgement needs, and where the log has it.

    ``seq`` is the record's entry (None: not in the ledger); ``since`` is where it has
    standing (its authority attestation for a governed record; None: no standing);
    ``in_time`` whether it had standing before the outcome's entry."""

    role: str  # "result", "cohort frozen", "plan", "binding", "calibration record",
    # "earlier verdict" (another result on the same worker output, before the fixing)
    digest: str | None
    seq: int | None
    since: int | None
    in_time: bool = True

    def to_json(self) -> dict[str, object]:
        return {
            "role": self.role,
            "digest": self.digest,
            "seq": self.seq,
            "since": self.since,
            "before_result": self.in_time,
        }

    def phrase(self) -> str:
        """Where the record is, without its role."""
        if self.seq is None:
            return f"none before the result ({self.digest or 'none named'})"
        at = f"seq {self.seq}"
        if self.since is None:
            at += " (no standing: no authority attestation)"
        elif self.since != self.seq:
            at += f" (standing from seq {self.since}, its authority attestation)"
        if not self.in_time:
            at += ", NOT before the result"
        return f"{at} {self.digest}"

    def line(self) -> str:
        return f"{self.role:18} {self.phrase()}"


@dataclass(frozen=True)
class Preregistration:
    """The judgement about one listed outcome."""

    task: str
    attempt: str
    status: Status
    reason: str
    result: Position | None
    records: tuple[Position, ...] = ()
    checkpoint: CoveringCheckpoint | None = None
    imported: HistoryMark | None = None

    @property
    def counts(self) -> bool:
        """Whether the outcome may count as pre-registered evidence."""
        return self.status == "pre_registered"

    def to_json(self) -> dict[str, object]:
        return {
            "task": self.task,
            "attempt": self.attempt,
            "status": self.status,
            "reason": self.reason,
            "result": None if self.result is None else self.result.to_json(),
            "records": [r.to_json() for r in self.records],
            "checkpoint": None if self.checkpoint is None else self.checkpoint.to_json(),
            "imported": None if self.imported is None else self.imported.to_json(),
        }

    def lines(self) -> list[str]:
        """The judgement as text lines (head line, then one per record)."""
        out = [f"{self.task} / {self.attempt}: {STATUS_TEXT[self.status]}: {self.reason}"]
        if self.result is not None and self.status != "not_judged":
            out.append(f"    {self.result.line()}")
        out += [f"    {r.line()}" for r in self.records]
        if self.checkpoint is not None:
            out.append(f"    {self.checkpoint.line()}")
        return out


@dataclass(frozen=True)
class Recorded:
    """When the ledger learnt one record: its entry, its standing, the first checkpoint."""

    digest: str
    seq: int
    since: int | None
    checkpoint: CoveringCheckpoint | None
    imported: HistoryMark | None

    def to_json(self) -> dict[str, object]:
        return {
            "digest": self.digest,
            "seq": self.seq,
            "since": self.since,
            "checkpoint": None if self.checkpoint is None else self.checkpoint.to_json(),
            "imported": None if self.imported is None else self.imported.to_json(),
        }

    def lines(self) -> list[str]:
        head = f"recorded at seq {self.seq}"
        if self.since is not None and self.since != self.seq:
            head += f", standing from seq {self.since} (its authority attestation)"
        if self.imported is not None:
            head += (
                f", by an import of {self.imported.source} history"
                f" ({self.imported.root or 'repository root'}, marker seq"
                f" {self.imported.marker_seq})"
            )
        out = [head]
        out.append(
            self.checkpoint.line()
            if self.checkpoint is not None
            else "no signed checkpoint covers it yet (run `provledger checkpoint`)"
        )
        return out


class Timeline:
    """Positions and standing in one ledger, read once per report.

    ``horizon`` (may be changed between calls): see the ledger only below this seq (a
    projection of the log prefix before it, as the browse database needs: entries and
    attestations at or after it are treated as absent, so an earlier and a later build
    give the same answer). ``witness_keys``: trusted witnesses whose cosignatures on a
    covering checkpoint are verified (``ledger.log.timeline``)."""

    def __init__(
        self,
        reader: LedgerReader,
        horizon: int | None = None,
        witness_keys: Sequence[WitnessKey] = (),
    ) -> None:
        self.reader = reader
        self.horizon = horizon
        self.standing = StandingLookup(reader)
        self.history = ImportedHistory(reader)
        self.checkpoints = Checkpoints(reader, witness_keys)
        # Per report, every outcome of a cohort asks about the same records: each
        # record's standing (a signature check) and each id's records are read once.
        self._since: dict[str, int | None] = {}
        self._records: dict[tuple[str, str, frozenset[str]], list[StoredObject]] = {}

    def _standing_since(self, obj: StoredObject) -> int | None:
        if obj.digest not in self._since:
            self._since[obj.digest] = self.standing.standing_since(obj)
        return self._since[obj.digest]

    def _seen(self, seq: int | None) -> bool:
        return seq is not None and (self.horizon is None or seq < self.horizon)

    def _get(self, digest: str) -> StoredObject | None:
        obj = self.reader.get(digest)
        return obj if obj is not None and self._seen(obj.seq) else None

    # -- when the ledger learnt a record -----------------------------------------------
    def recorded(self, digest: str) -> Recorded | None:
        obj = self._get(digest)
        if obj is None:
            return None
        since = self._standing_since(obj)
        return Recorded(
            obj.digest,
            obj.seq,
            since,
            self.checkpoints.covering(obj.seq if since is None else since),
            self.history.marked(obj.digest, obj.seq),
        )

    # -- pre-registration --------------------------------------------------------------
    def _first(self, role: str, objects: Sequence[StoredObject], before: int) -> Position | None:
        """The earliest of ``objects`` to have standing, marked whether that was before
        ``before``; None when none has standing. Only its in-time flag decides a
        verdict, and that reads the prefix: a record later than ``before`` is shown to
        explain the verdict, never to make it."""
        best: Position | None = None
        for obj in objects:
            since = self._standing_since(obj)
            if since is None or not self._seen(since):
                continue
            if best is None or best.since is None or since < best.since:
                best = Position(role, obj.digest, obj.seq, since, since < before)
        return best

    def _records_of(self, kind: str, cohort_id: str, names: frozenset[str]) -> list[StoredObject]:
        """Stored records of ``kind`` under ``cohort_id`` that fix one of the definitions
        ``names`` (``_fixes``); read once per report."""
        key = (kind, cohort_id, names)
        if key not in self._records:
            found = []
            for obj in self.reader.by_id(cohort_id, kind=kind):
                doc = self.standing.raw.doc(obj)
                if doc is not None and _fixes(kind, doc.value, cohort_id, names):
                    found.append(obj)
            self._records[key] = found
        return self._records[key]

    def _missing(self, role: str, what: str) -> Position:
        return Position(role, what, None, None)

    def judge(
        self,
        cohort: Mapping[str, object],
        task: str,
        attempt: str,
        resolution: Resolution,
    ) -> Preregistration:
        """Judge the outcome ``resolution`` (a listed VerificationResult) of ``cohort``."""
        doc = resolution.doc
        obj = None if doc is None else self._get(doc.jcs_digest)
        if doc is None or obj is None:
            return Preregistration(
                task,
                attempt,
                "not_judged",
                f"the listed VerificationResult {resolution.digest or '?'} is not in the ledger",
                None,
            )
        seq = obj.seq
        result = Position("result", obj.digest, seq, seq)
        if resolution.mismatch is not None:
            # Not the listed evidence (imported history or not): nothing about these
            # bytes is a judgement of the listed outcome (``provenance``: "mismatched").
            return Preregistration(task, attempt, "not_judged", resolution.mismatch, result)
        mark = self.history.marked(obj.digest, seq)
        judged = self._positions(cohort, task, attempt, doc.model(VerificationResult), result)
        if mark is None:
            return judged
        fixed_here = self._fixed_here(cohort)
        if (
            resolution.scheme is not None
            and judged.status == "not_pre_registered"
            and fixed_here is not None
        ):
            # The cohort was fixed by this ledger, which held the result before that
            # record (or its plan, or binding): whoever marked the result as history
            # (a marker is any writer's record), its order is the log's.
            return Preregistration(
                task,
                attempt,
                "not_pre_registered",
                f"{judged.reason} (the result is marked as imported {mark.source} history at"
                f" seq {mark.marker_seq}, but its cohort was fixed by this ledger at seq"
                f" {fixed_here}, which held the result first)",
                result,
                judged.records,
                imported=mark,
            )
        return Preregistration(
            task,
            attempt,
            "order_not_attested",
            f"imported {mark.source} history ({mark.root or 'repository root'}, marker"
            f" {mark.marker_digest} at seq {mark.marker_seq}): the ledger did not see the"
            " order in which it and its cohort came to be, so it claims none",
            result,
            imported=mark,
        )

    def _fixed_here(self, cohort: Mapping[str, object]) -> int | None:
        """The entry of the first record fixing the cohort's definition when this ledger
        wrote it (no earlier ``history-import`` record names it); None when the cohort
        came in as imported history (or no record in view fixes it)."""
        cohort_id = as_str(cohort.get("id")) or ""
        names = definition_names(cohort)
        seen = [
            o for o in self._records_of(BENCHMARK_COHORT, cohort_id, names) if self._seen(o.seq)
        ]
        if not seen:
            return None
        first = min(seen, key=lambda o: o.seq)
        return None if self.history.marked(first.digest, first.seq) is not None else first.seq

    def _positions(
        self,
        cohort: Mapping[str, object],
        task: str,
        attempt: str,
        verdict: VerificationResult,
        result: Position,
    ) -> Preregistration:
        seq = result.seq
        assert seq is not None
        cohort_id = as_str(cohort.get("id")) or ""
        names = definition_names(cohort)
        records: list[Position] = []
        late: list[str] = []
        frozen = self._first(
            "cohort frozen", self._records_of(BENCHMARK_COHORT, cohort_id, names), seq
        )
        records.append(frozen or self._missing("cohort frozen", cohort_id))
        if frozen is None or not frozen.in_time:
            late.append(
                "its cohort froze"
                + ("" if frozen is None else f" (standing from seq {frozen.since})")
            )
        plan_digest = as_str(verdict.verifier_config_digest)
        plan_obj = self._plan(plan_digest)
        if plan_obj is not None and plan_obj.seq < seq:
            records.append(Position("plan", plan_obj.digest, plan_obj.seq, plan_obj.seq))
        else:
            records.append(
                self._missing("plan", plan_digest or "none named")
                if plan_obj is None
                else Position("plan", plan_obj.digest, plan_obj.seq, plan_obj.seq, False)
            )
            late.append(
                "the EvaluatorPlan it was judged under"
                + (f" (seq {plan_obj.seq})" if plan_obj is not None else " (not in the ledger)")
            )
        binding = self._first("binding", self._records_of(COHORT_BINDING, cohort_id, names), seq)
        if self._claims_predecessor(frozen, cohort) or (binding is not None and binding.in_time):
            records.append(binding or self._missing("binding", f"successor {cohort_id}"))
            if binding is None or not binding.in_time:
                late.append(
                    "the successor's cohort-binding"
                    + ("" if binding is None else f" (standing from seq {binding.since})")
                )
            else:
                late += self._calibrations(binding, seq, records)
        if late:
            return Preregistration(
                task,
                attempt,
                "not_pre_registered",
                f"recorded at seq {seq} before {'; '.join(late)}: it does not count",
                result,
                tuple(records),
            )
        fixed_at = max(r.since for r in records if r.since is not None)
        seen = self._earlier_verdict(verdict, result, fixed_at)
        if seen is not None:
            return Preregistration(
                task,
                attempt,
                "not_pre_registered",
                f"the same worker output (ResultManifest {verdict.result_manifest_digest}) was"
                f" already judged at seq {seen.seq} ({seen.digest}), before everything that"
                f" fixes how it is judged was in the log (seq {fixed_at}): the outcome was seen"
                " first, a later re-run does not count",
                result,
                (*records, seen),
            )
        freeze_since = None if frozen is None else frozen.since
        covering = (
            None if freeze_since is None else self.checkpoints.covering(freeze_since, before=seq)
        )
        reason = f"everything that fixes how it is judged precedes its entry (seq {seq})"
        if covering is None:
            reason += "; no checkpoint was signed between the freeze and the result"
        return Preregistration(
            task, attempt, "pre_registered", reason, result, tuple(records), covering
        )

    def _earlier_verdict(
        self, verdict: VerificationResult, result: Position, fixed_at: int
    ) -> Position | None:
        """The first other VerificationResult naming the same ResultManifest (under
        either digest) recorded before ``fixed_at``, the entry from which the cohort,
        plan and binding all had standing; None when there is none."""
        recorded = as_str(verdict.result_manifest_digest)
        if recorded is None:
            return None
        names = {recorded}
        manifest = self.standing.raw.by_digest(recorded)
        if manifest is not None:
            names |= {manifest.jcs_digest, manifest.legacy_digest}
        first: Position | None = None
        for name in sorted(names):
            for source, _rel in self.reader.refs_to(name, "result-manifest"):
                obj = self._get(source)
                if obj is None or obj.digest == result.digest or obj.seq >= fixed_at:
                    continue
                if obj.kind != "verification-result":
                    continue
                if first is None or obj.seq < (first.seq or 0):
                    first = Position("earlier verdict", obj.digest, obj.seq, obj.seq, False)
        return first

    def _claims_predecessor(self, frozen: Position | None, cohort: Mapping[str, object]) -> bool:
        """Whether the cohort is a successor by its own claim, read from its frozen record
        when that came before the outcome (a claim added later cannot change the
        verdict), else from the audited document."""
        record = self._get(frozen.digest or "") if frozen is not None and frozen.in_time else None
        doc = None if record is None else self.standing.raw.doc(record)
        return bool(predecessor_claims(cohort if doc is None else doc.value))

    def _plan(self, digest: str | None) -> StoredObject | None:
        if digest is None:
            return None
        doc = self.standing.raw.by_digest(digest)
        return None if doc is None else self._get(doc.jcs_digest)

    def _calibrations(self, binding: Position, seq: int, records: list[Position]) -> list[str]:
        """Calibration records the binding cites, each needed before ``seq``."""
        obj = self._get(binding.digest or "")
        doc = None if obj is None else self.standing.raw.doc(obj)
        cited = doc.value.get("calibrations") if doc is not None else None
        late: list[str] = []
        for digest in cited if isinstance(cited, list) else []:
            found = self._get(digest) if isinstance(digest, str) else None
            if found is not None and found.seq < seq:
                records.append(Position("calibration record", found.digest, found.seq, found.seq))
                continue
            records.append(
                self._missing("calibration record", str(digest))
                if found is None
                else Position("calibration record", found.digest, found.seq, found.seq, False)
            )
            late.append(
                f"calibration record {digest}" + ("" if found is None else f" (seq {found.seq})")
            )
        return late


def _fixes(kind: str, value: Mapping[str, object], cohort_id: str, names: frozenset[str]) -> bool:
    """Whether a record fixes the definition ``names`` of ``cohort_id``: a cohort record
    at a fixed stage with that definition, or a binding naming it as successor."""
    if kind == BENCHMARK_COHORT:
        return CohortView.of(value).stage in FIXED and bool(definition_names(value) & names)
    stated = value.get("successor_definition_digest")
    digests = stated.values() if isinstance(stated, Mapping) else ()
    return value.get("successor_id") == cohort_id and any(d in names for d in digests)
