"""What a verifier run puts in the ledger: lists of ``Prepared`` objects, built purely.

Nothing here opens a store; the CLI appends a record's ``prepared`` list with ONE
``append_many`` call, so a run is recorded completely or not at all.

Invariants:

- Input documents are the exact bytes given, canonicalized once by ``prepare_json``;
  the record refuses (``VerifierError``) bytes whose digest is not the one the
  VerificationResult names (plan, ResultManifest, WorkUnit under either digest
  scheme), so a result never sits next to inputs it was not computed from.
- The VerificationResult is ``outcome.result_bytes`` exactly (its digest is checked);
  its attestation is a detached DSSE envelope over those bytes (``attest_prepared``)
  and comes after it in the list.
- Every worker file the verifier read is kept as a blob whose digest equals the
  digest the verifier observed. A file over the plan's size limit is never read past
  the limit (so neither hashed nor kept): it is not an input, and the result's
  observation records its size and status ``too_large``; an input without bytes
  would be listed in ``unrecorded`` (digest and size).
- Inline observations are blobs of their canonical bytes (digest = evidence digest).
- Items are de-duplicated by digest (first occurrence wins); the store would return
  the existing entry anyway, this keeps reports readable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ledger.encoding.canonical import canonicalize
from ledger.store.prepared import (
    Prepared,
    prepare_blob,
    prepare_encoded,
    prepare_json,
    prepare_value,
)
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Signer
from verifiers.behavioral import ProbePlan
from verifiers.calibration import CalibrationRow, CalibrationTable
from verifiers.errors import VerifierError
from verifiers.model.documents import Document, VerificationResult
from verifiers.runner import VerificationOutcome

CALIBRATION_KIND: Final = "calibration-record"
CALIBRATION_SCHEMA_VERSION: Final = "0.1"
BEHAVIORAL_KIND: Final = "behavioral-evidence"
# Ground truth of a fixture candidate -> the label the cohort successor gate reads.
CANDIDATE_LABELS: Final = {"good": "straightforward", "bad": "decoy"}


@dataclass(frozen=True)
class RecordItem:
    """One object to append. ``role`` says why it is part of the run.

    Roles: work-unit, evaluator-plan, result-manifest, candidate, log, observation,
    verification-result, attestation, calibration-record, probe-plan,
    behavioral-evidence. ``name`` is the file, log type, evidence id or row label.
    """

    role: str
    name: str
    prepared: Prepared

    @property
    def digest(self) -> str:
        return self.prepared.digest


@dataclass(frozen=True)
class Unrecorded:
    """A worker file the verifier hashed but did not keep (over the plan's limit)."""

    role: str
    name: str
    locator: str
    digest: str
    size: int
    reason: str

    def as_json(self) -> dict[str, object]:
        return {
            "role": self.role,
            "name": self.name,
            "locator": self.locator,
            "digest": self.digest,
            "size": self.size,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class RunRecord:
    """Objects to append in one transaction, in order, plus what could not be kept."""

    items: tuple[RecordItem, ...]
    unrecorded: tuple[Unrecorded, ...] = ()

    @property
    def prepared(self) -> list[Prepared]:
        return [item.prepared for item in self.items]

    def only(self, role: str) -> RecordItem:
        """The single item with ``role`` (e.g. the run's verification-result)."""
        found = [item for item in self.items if item.role == role]
        if len(found) != 1:
            raise KeyError(f"{len(found)} items with role {role!r}, expected exactly 1")
        return found[0]

    @staticmethod
    def merge(records: Iterable[RunRecord]) -> RunRecord:
        """Concatenate records, dropping later duplicates of a digest."""
        seen: set[str] = set()
        items: list[RecordItem] = []
        skipped: set[tuple[str, str]] = set()
        unrecorded: list[Unrecorded] = []
        for record in records:
            for item in record.items:
                if item.digest not in seen:
                    seen.add(item.digest)
                    items.append(item)
            for u in record.unrecorded:
                if (u.role, u.digest) not in skipped:
                    skipped.add((u.role, u.digest))
                    unrecorded.append(u)
        return RunRecord(tuple(items), tuple(unrecorded))


def _mismatch(what: str, got: str, expected: Sequence[str | None]) -> VerifierError:
    shown = " or ".join(e for e in expected if e is not None)
    return VerifierError(
        f"{what} does not match the VerificationResult, got digest {got}, expected {shown}"
    )


def _named_by(prepared: Prepared, digest: object, what: str) -> None:
    # Upstream documents may name each other by the legacy digest; either scheme binds.
    if digest not in (prepared.digest, prepared.legacy_digest):
        raise _mismatch(what, str(digest), [prepared.digest, prepared.legacy_digest])


def admit(doc: Document) -> Prepared:
    """The ledger record of a protocol document, from its one parse when it has one."""
    if doc.source is not None:
        return prepare_encoded(doc.source, doc.kind)
    return prepare_value(doc.value, doc.kind)


def run_record(
    *,
    work_unit: Prepared,
    plan: Prepared,
    manifest: Prepared,
    outcome: VerificationOutcome,
    signer: Signer,
) -> RunRecord:
    """Everything one ``run-verifier`` appends, in append order (module invariants).

    ``work_unit``, ``plan`` and ``manifest`` are the admitted input documents (``admit``)
    the outcome was computed from.
    """
    wu, pl, rm = work_unit, plan, manifest
    verdict = VerificationResult.parse(outcome.result_bytes)
    result = admit(verdict)
    if result.digest != outcome.result_digest or result.data != outcome.result_bytes:
        raise _mismatch("recorded VerificationResult bytes", result.digest, [outcome.result_digest])
    _named_by(pl, outcome.plan_digest, "EvaluatorPlan file")
    _named_by(rm, verdict.result_manifest_digest, "ResultManifest file")
    _named_by(wu, verdict.work_unit_digest, "WorkUnit file")

    items = [
        RecordItem("work-unit", str(wu.object_id), wu),
        RecordItem("evaluator-plan", str(pl.object_id), pl),
        RecordItem("result-manifest", str(rm.object_id), rm),
    ]
    unrecorded: list[Unrecorded] = []
    for inp in outcome.inputs:
        if inp.data is None:
            unrecorded.append(
                Unrecorded(
                    inp.role,
                    inp.name,
                    inp.locator,
                    inp.digest,
                    inp.size,
                    "larger than the plan's limit: hashed, not kept",
                )
            )
            continue
        blob = prepare_blob(inp.data)
        if blob.digest != inp.digest:
            raise _mismatch(f"{inp.role} {inp.locator} bytes", blob.digest, [inp.digest])
        items.append(RecordItem(inp.role, inp.name, blob))
    for evidence in outcome.evidence:
        if evidence.body is None:
            continue
        blob = prepare_blob(evidence.body)
        if blob.digest != evidence.digest:
            raise _mismatch(f"observation {evidence.id}", blob.digest, [evidence.digest])
        items.append(RecordItem("observation", evidence.id, blob))
    items.append(RecordItem("verification-result", str(result.object_id or result.digest), result))
    items.append(RecordItem("attestation", signer.key_id, attest_prepared(result, signer)))
    return RunRecord.merge([RunRecord(tuple(items), tuple(unrecorded))])


# --- calibration ---------------------------------------------------------------------


def calibration_record_value(
    row: CalibrationRow,
    outcome: VerificationOutcome,
    *,
    fixture_id: str,
    recorded_at: str,
) -> dict[str, object]:
    """The ``calibration-record`` v0.1 object for one calibration row (pure)."""
    if outcome.result_digest != row.result_digest:
        raise _mismatch("calibration row", row.result_digest, [outcome.result_digest])
    _, adapter, adapter_version = outcome.document.verifier
    candidates = [i.digest for i in outcome.inputs if i.role == "candidate"]
    return {
        "provledger_kind": CALIBRATION_KIND,
        "schema_version": CALIBRATION_SCHEMA_VERSION,
        "fixture_id": fixture_id,
        "plan_id": row.plan_id,
        "plan_digest": row.plan_digest,
        "plan_schema_version": row.plan_version,
        "adapter": adapter,
        "adapter_version": adapter_version,
        "candidate": CANDIDATE_LABELS[row.truth],
        "candidate_name": row.candidate,
        "candidate_digest": candidates[0] if len(candidates) == 1 else None,
        "expected_status": row.expected_status,
        "status": row.status,
        "recommendation": row.recommendation,
        "verdict": row.verdict,
        "result_digest": row.result_digest,
        "recorded_at": recorded_at,
    }


@dataclass(frozen=True)
class CalibrationInputs:
    """A fixture's documents, each parsed and admitted once, keyed by their digests."""

    fixture_id: str
    work_unit: Prepared
    plans: Mapping[str, Prepared]
    manifests: Mapping[str, Prepared]

    @classmethod
    def of(
        cls, fixture_id: str, work_unit: bytes, plans: Iterable[bytes], manifests: Iterable[bytes]
    ) -> CalibrationInputs:
        def by_digest(docs: Iterable[bytes], kind: str) -> dict[str, Prepared]:
            out: dict[str, Prepared] = {}
            for raw in docs:
                p = prepare_json(raw, kind)
                for digest in (p.digest, p.legacy_digest):
                    if digest is not None:
                        out.setdefault(digest, p)
            return out

        return cls(
            fixture_id,
            prepare_json(work_unit, "work-unit"),
            by_digest(plans, "evaluator-plan"),
            by_digest(manifests, "result-manifest"),
        )


def calibration_record(
    table: CalibrationTable,
    inputs: CalibrationInputs,
    signer: Signer,
    *,
    recorded_at: str,
) -> RunRecord:
    """Every run of the table (as ``run_record``) plus one signed calibration-record
    per row, de-duplicated, for one ``append_many``."""
    records: list[RunRecord] = []
    for row, outcome in zip(table.rows, table.outcomes, strict=True):
        manifest_digest = VerificationResult.of(outcome.result).result_manifest_digest
        plan = inputs.plans.get(row.plan_digest)
        manifest = inputs.manifests.get(str(manifest_digest))
        if plan is None or manifest is None:
            missing = row.plan_digest if plan is None else str(manifest_digest)
            raise VerifierError(
                f"calibration fixture files changed during the run, got no document with digest"
                f" {missing}, expected the files the table was computed from"
            )
        run = run_record(
            work_unit=inputs.work_unit,
            plan=plan,
            manifest=manifest,
            outcome=outcome,
            signer=signer,
        )
        value = calibration_record_value(
            row, outcome, fixture_id=inputs.fixture_id, recorded_at=recorded_at
        )
        cal = prepare_value(value, CALIBRATION_KIND)
        label = f"v{row.plan_version}/{row.candidate}"
        records.append(run)
        records.append(
            RunRecord(
                (
                    RecordItem(CALIBRATION_KIND, label, cal),
                    RecordItem("attestation", signer.key_id, attest_prepared(cal, signer)),
                )
            )
        )
    return RunRecord.merge(records)


# --- behavioral channel -------------------------------------------------------------


def behavioral_record(
    evidence: Mapping[str, object], patch: bytes, probe_plan: ProbePlan, probe_plan_value: object
) -> RunRecord:
    """The patch blob, the probe plan (its canonical bytes as a blob, so the blob digest
    is the evidence's ``probe_plan_digest``) and the behavioral-evidence object."""
    blob = prepare_blob(patch)
    if evidence.get("candidate_digest") != blob.digest:
        raise VerifierError(
            f"behavioral evidence candidate_digest, got {evidence.get('candidate_digest')},"
            f" expected the patch digest {blob.digest}"
        )
    plan_blob = prepare_blob(canonicalize(probe_plan_value))
    if not plan_blob.digest == probe_plan.digest == evidence.get("probe_plan_digest"):
        raise VerifierError(
            f"probe plan digest, got {plan_blob.digest}, expected the evidence's"
            f" {evidence.get('probe_plan_digest')}"
        )
    return RunRecord(
        (
            RecordItem("candidate", "patch", blob),
            RecordItem("probe-plan", probe_plan.id, plan_blob),
            RecordItem(
                BEHAVIORAL_KIND, probe_plan.id, prepare_value(dict(evidence), BEHAVIORAL_KIND)
            ),
        )
    )
