"""provledger's Python API, verifier part: judge a candidate and record the run.

::

    from ledger.api import load_signer, open_ledger
    from verifiers.api import run_verifier

    with open_ledger("ledger.db") as book:
        run = run_verifier(
            book,
            work_unit=Path("work-unit.json"),
            plan=Path("plan.json"),
            manifest=Path("manifest.json"),
            candidate_root=Path("candidate"),
            signer=load_signer("verifier.key"),
        )
        print(run.status, run.result_digest)

``run_verifier`` is ``provledger run-verifier``: the same sovereignty checks, verifier and
record (``verifiers.record``), appended in ONE transaction, so the ledger holds a run
completely or not at all; ``VerifierRun.to_json()`` is the command's ``--json``. A
failed candidate is a result (``status`` "failed"), not an error; a refused input is an
error (``SovereigntyError``, exit 4) and records nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ledger.api.ledger import Ledger, document_bytes
from ledger.errors import InputError, LedgerError, NotFound
from verifiers.model.json import as_map, maps

if TYPE_CHECKING:
    from ledger.encoding.canonical import Encoded
    from ledger.encoding.values import JSONObject
    from ledger.store.base import AppendResult
    from ledger.trust.judgement import AttestationVerdict
    from ledger.trust.keys import Signer
    from verifiers.calibration import CalibrationTable, Fixture
    from verifiers.record import RunRecord
    from verifiers.runner import VerificationOutcome

__all__ = [
    "FIXTURE_DIR",
    "BehavioralRun",
    "Calibration",
    "CalibrationRecord",
    "CheckLine",
    "Input",
    "RecordedItem",
    "VerifierRun",
    "calibrate",
    "run_behavioral",
    "run_verifier",
]

#: The Task 001 calibration fixture shipped with the package (a WorkUnit, plans v0.2-v0.4,
#: a straightforward repair and an inert decoy, their ResultManifests): see its README.
FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures" / "calibration"

#: An input document: a JSON file, its bytes, or its JSON value.
Input = Path | bytes | Mapping[str, object]


@dataclass(frozen=True)
class RecordedItem:
    """One object a run appended (or found already present), and why it is part of it.

    ``role``: work-unit, evaluator-plan, result-manifest, candidate, log, observation,
    verification-result, attestation (see ``verifiers.record.RecordItem``)."""

    role: str
    name: str
    kind: str
    digest: str
    seq: int
    status: str  # "new" or "present"

    def to_json(self) -> JSONObject:
        return {
            "role": self.role,
            "name": self.name,
            "kind": self.kind,
            "digest": self.digest,
            "seq": self.seq,
            "status": self.status,
        }


@dataclass(frozen=True)
class CheckLine:
    """One check of the VerificationResult: its id, status and one-line summary."""

    id: str
    status: str
    summary: str

    def to_json(self) -> JSONObject:
        return {"id": self.id, "status": self.status, "summary": self.summary}


@dataclass(frozen=True)
class VerifierRun:
    """A judged and recorded run (``run-verifier --json``); ``passed`` iff the candidate
    passed. ``attestation`` is the verdict on the run's attestation, judged at its own
    log position; ``result_bytes`` the VerificationResult's exact stored bytes."""

    status: str
    recommendation: str
    exit_code: int  # 0 when the candidate passed, 1 otherwise (upstream's convention)
    plan_schema_version: str
    plan_digest: str
    work_unit_digest: str
    result_manifest_digest: str
    result_digest: str
    attestation_digest: str
    attestation: AttestationVerdict
    summary: tuple[str, ...]
    checks: tuple[CheckLine, ...]
    recorded: tuple[RecordedItem, ...]
    not_recorded: tuple[Mapping[str, object], ...]
    sovereignty: Mapping[str, object]
    output: str | None
    result_bytes: bytes = field(repr=False)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def item(self, role: str) -> RecordedItem:
        """The one recorded item with ``role`` (e.g. ``verification-result``)."""
        return next(r for r in self.recorded if r.role == role)

    def to_json(self) -> dict[str, object]:
        verdict = self.attestation
        return {
            "status": self.status,
            "recommendation": self.recommendation,
            "exit_code": self.exit_code,
            "plan_schema_version": self.plan_schema_version,
            "plan_digest": self.plan_digest,
            "work_unit_digest": self.work_unit_digest,
            "result_manifest_digest": self.result_manifest_digest,
            "result_digest": self.result_digest,
            "attestation_digest": self.attestation_digest,
            "attestation": {
                "digest": verdict.attestation_digest,
                "key_id": verdict.key_id,
                "verifier_id": verdict.verifier_id,
                "ok": verdict.ok,
                "failures": [f.to_json() for f in verdict.failures],
            },
            "summary": list(self.summary),
            "checks": [c.to_json() for c in self.checks],
            "recorded": [r.to_json() for r in self.recorded],
            "not_recorded": [dict(u) for u in self.not_recorded],
            "sovereignty": dict(self.sovereignty),
            "output": self.output,
        }


def run_verifier(
    ledger: Ledger,
    *,
    work_unit: Input,
    plan: Input,
    manifest: Input,
    candidate_root: str | os.PathLike[str],
    signer: Signer,
    output: str | os.PathLike[str] | None = None,
    clock: Callable[[], datetime] | None = None,
) -> VerifierRun:
    """Judge the candidate under ``candidate_root`` with the verifier the plan names and
    record the run in one transaction: WorkUnit, plan, ResultManifest, the candidate and
    log blobs the verifier read, inline observations, the VerificationResult and its DSSE
    attestation by ``signer`` (a registered verifier key, else ``AdmissionRefused``).

    ``output``: also write the result's exact bytes there, inside the transaction (an
    unwritable file leaves the run unrecorded; nothing is written on a dry run).
    ``clock``: the verdict's time (default: now, UTC).
    """
    from ledger.files import shown

    out = None if output is None else Path(output)
    if out is not None and (out.is_dir() or not out.parent.is_dir()):
        raise InputError(f"--output, got {out}, expected a file path in an existing directory")
    documents = (
        _encoded(work_unit, "WorkUnit"),
        _encoded(plan, "EvaluatorPlan"),
        _encoded(manifest, "ResultManifest"),
    )
    plan_path = plan if isinstance(plan, Path) else None
    outcome = _judge(documents, Path(candidate_root), plan_path, out, clock or _now)
    record = _run_record(documents, outcome, signer)
    written = None if out is None or ledger.dry_run else (out, outcome.result_bytes)
    recorded = append_record(ledger, record, written)
    attestation = record.only("attestation").digest
    (verdict,) = judge_attestations(ledger, [attestation])
    return VerifierRun(
        status=outcome.status,
        recommendation=outcome.recommendation,
        exit_code=outcome.exit_code,
        plan_schema_version=outcome.plan_schema_version,
        plan_digest=outcome.plan_digest,
        work_unit_digest=record.only("work-unit").digest,
        result_manifest_digest=record.only("result-manifest").digest,
        result_digest=outcome.result_digest,
        attestation_digest=attestation,
        attestation=verdict,
        summary=tuple(outcome.summary.split("; ")),
        checks=tuple(
            CheckLine(str(c.get("id")), str(c.get("status")), str(c.get("summary")))
            for c in maps(outcome.result.get("checks"))
        ),
        recorded=tuple(recorded),
        not_recorded=tuple(u.as_json() for u in record.unrecorded),
        sovereignty=outcome.sovereignty.as_json(),
        output=None if out is None else shown(out),
        result_bytes=outcome.result_bytes,
    )


def append_record(
    ledger: Ledger, record: RunRecord, output: tuple[Path, bytes] | None = None
) -> list[RecordedItem]:
    """Append a run's record in one transaction; one item per object, in order.

    ``output`` (path, bytes) is written inside the transaction, before COMMIT: an
    unwritable output file leaves the run unrecorded."""
    from ledger.files import write_output

    def write(_results: list[AppendResult]) -> None:
        if output is not None:
            write_output(*output)

    results = ledger.store.append_many(record.prepared, before_commit=write)
    return [
        RecordedItem(
            item.role,
            item.name,
            r.entry.kind,
            r.entry.digest,
            r.entry.seq,
            "new" if r.new else "present",
        )
        for item, r in zip(record.items, results, strict=True)
    ]


def judge_attestations(ledger: Ledger, digests: Sequence[str]) -> list[AttestationVerdict]:
    """Each stored attestation judged at its own log position."""
    from ledger.trust.identity import trust_index
    from ledger.trust.judgement import check_attestation

    index = trust_index(ledger.store)
    verdicts = []
    for digest in digests:
        stored = ledger.store.get(digest)
        if stored is None:
            raise NotFound(f"attestation not found, got {digest}, expected it appended")
        verdicts.append(check_attestation(ledger.store, stored, ledger.policy, index))
    return verdicts


def _now() -> datetime:
    return datetime.now(UTC)


def read_document(path: Path, what: str, limit: int | None = None) -> bytes:
    """A bounded read (``ledger.bounded``) of an input file: over the limit is one error,
    exit 3."""
    from ledger.bounded import DOCUMENT_LIMIT, read_bounded

    if not path.is_file():
        raise NotFound(f"{what} file not found, got {path}, expected a readable file")
    return read_bounded(path, DOCUMENT_LIMIT if limit is None else limit, what)


def _encoded(document: Input, what: str) -> Encoded:
    """Strict parse (value, canonical and legacy bytes in one pass); errors name the file
    (or the document). A document that is JSON but not an object stays ``Encoded``: that
    is the sovereignty checks' refusal (SOV-INPUT-TYPE), not a parse error."""
    from ledger.encoding.canonical import encode

    if isinstance(document, Path):
        raw, name = read_document(document, what), str(document)
    elif isinstance(document, bytes):
        raw, name = document, what
    else:
        raw, name = document_bytes(document), what
    try:
        return encode(raw)
    except LedgerError as exc:
        raise type(exc)(f"{name}: {exc}") from None


def _judge(
    documents: tuple[Encoded, Encoded, Encoded],
    candidate_root: Path,
    plan_path: Path | None,
    output: Path | None,
    clock: Callable[[], datetime],
) -> VerificationOutcome:
    from ledger.encoding.digest import sha256_digest
    from ledger.schema.validation import validate
    from verifiers.runner import evaluate

    work_unit, plan, manifest = documents
    return evaluate(
        work_unit.value,
        plan.value,
        manifest.value,
        candidate_root,
        plan_path,
        output,
        plan_digest=sha256_digest(plan.canonical),
        clock=clock,
        validate=validate,
    )


def _run_record(
    documents: tuple[Encoded, Encoded, Encoded], outcome: VerificationOutcome, signer: Signer
) -> RunRecord:
    from verifiers.model import EvaluatorPlan, ResultManifest, WorkUnit
    from verifiers.record import admit, run_record

    work_unit, plan, manifest = documents
    return run_record(
        work_unit=admit(WorkUnit.from_encoded(work_unit)),
        plan=admit(EvaluatorPlan.from_encoded(plan)),
        manifest=admit(ResultManifest.from_encoded(manifest)),
        outcome=outcome,
        signer=signer,
    )


# --- calibration -------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationRecord:
    """One signed calibration-record appended for one row (``calibrate --record``)."""

    digest: str
    seq: int
    plan_schema_version: object
    plan_digest: object
    candidate: object
    candidate_name: object
    status: object
    recommendation: object
    verdict: object
    result_digest: object

    def to_json(self) -> dict[str, object]:
        return {
            "digest": self.digest,
            "seq": self.seq,
            "plan_schema_version": self.plan_schema_version,
            "plan_digest": self.plan_digest,
            "candidate": self.candidate,
            "candidate_name": self.candidate_name,
            "status": self.status,
            "recommendation": self.recommendation,
            "verdict": self.verdict,
            "result_digest": self.result_digest,
        }


@dataclass(frozen=True)
class Calibration:
    """Every fixture candidate judged under every fixture plan (``calibrate --json``).

    ``ok`` iff every row meets the plan's declared expectation. When recorded:
    ``records`` (one signed calibration-record per row), ``recorded`` (every object of
    the one transaction) and ``attestations_ok``; else those are empty / None."""

    fixture: str
    fixture_id: object
    table: CalibrationTable
    records: tuple[CalibrationRecord, ...] = ()
    recorded: tuple[RecordedItem, ...] = ()
    attestations_ok: bool | None = None

    @property
    def ok(self) -> bool:
        return not any(r.matches_expectation is False for r in self.table.rows)

    def record(self, plan_version: str, candidate: str) -> CalibrationRecord:
        """The calibration-record of one row (e.g. ``"0.4"``, ``"repair"``)."""
        return next(
            r
            for r in self.records
            if r.plan_schema_version == plan_version and r.candidate_name == candidate
        )

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "fixture": self.fixture,
            "fixture_id": self.fixture_id,
            "rows": self.table.as_json(),
        }
        if self.attestations_ok is not None:
            out["calibration_records"] = [r.to_json() for r in self.records]
            out["recorded"] = [r.to_json() for r in self.recorded]
            out["attestations_ok"] = self.attestations_ok
        return out


def calibrate(
    ledger: Ledger | None = None,
    *,
    signer: Signer | None = None,
    fixture: str | os.PathLike[str] | None = None,
) -> Calibration:
    """Judge every candidate of a calibration fixture (default ``FIXTURE_DIR``) under every
    plan of it, with a fixed clock: the table is reproducible byte for byte.

    With ``ledger`` and ``signer`` (a registered verifier key): record the runs and one
    signed calibration-record per row in one transaction, timed by the wall clock; the
    key's active identity must hold every adapter version it signs for, else
    ``IdentityError`` (exit 4) names the ``identity register`` command that fixes it.
    """
    from ledger.schema.validation import validate
    from verifiers.calibration import Fixture, calibration_table, fixed_clock

    if (ledger is None) != (signer is None):
        raise InputError(
            "calibrate, got a ledger without a signer or a signer without a ledger,"
            " expected both to record (or neither)"
        )
    root = FIXTURE_DIR if fixture is None else Path(fixture)
    recording = ledger is not None and signer is not None
    table = calibration_table(root, validate=validate, clock=_now if recording else fixed_clock)
    fx = Fixture.load(root)
    done = Calibration(str(root), fx.index.get("id"), table)
    if ledger is None or signer is None:
        return done
    return _record_calibration(ledger, fx, done, signer)


def _require_identity(ledger: Ledger, table: CalibrationTable, signer: Signer) -> None:
    """Refuse (exit 4) unless an active identity of the signing key holds every
    (verifier id, adapter, adapter version) the table's results name."""
    from ledger.errors import IdentityError
    from ledger.trust.identity import trust_index

    index = trust_index(ledger.store)
    held = {
        (rec.verifier_id, rec.adapter, version)
        for rec in index.identities_for(signer.key_id)
        if index.status(rec) == "active"
        for version in rec.adapter_versions
    }
    needed: dict[tuple[str, str], set[str]] = {}
    for outcome in table.outcomes:
        verifier_id, adapter, version = outcome.document.verifier
        want = (str(verifier_id), str(adapter), str(version))
        if want not in held:
            needed.setdefault(want[:2], set()).add(want[2])
    if not needed:
        return
    (verifier_id, adapter), versions = sorted(needed.items())[0]
    flags = " ".join(f"--adapter-version {v}" for v in sorted(versions))
    raise IdentityError(
        f"calibrate --record, got key {signer.key_id} without a registered identity for"
        f" {verifier_id} {adapter} {', '.join(sorted(versions))}, expected one covering every"
        f" adapter version it signs for; run: provledger identity register --verifier-id"
        f" {verifier_id} --adapter {adapter} {flags} --public-key KEY.pub"
    )


def _record_calibration(
    ledger: Ledger, fx: Fixture, done: Calibration, signer: Signer
) -> Calibration:
    import dataclasses
    import json

    from verifiers.record import CalibrationInputs, calibration_record
    from verifiers.runner import rfc3339

    inputs = CalibrationInputs.of(
        str(fx.index.get("id")),
        read_document(fx.path("work_unit"), "calibration WorkUnit"),
        [read_document(p, "calibration plan") for p in fx.plan_paths],
        [
            read_document(fx.file_of(c, "manifest"), "calibration ResultManifest")
            for c in fx.candidates
        ],
    )
    _require_identity(ledger, done.table, signer)
    rec = calibration_record(done.table, inputs, signer, recorded_at=rfc3339(_now()))
    recorded = append_record(ledger, rec)
    verdicts = judge_attestations(ledger, [r.digest for r in recorded if r.role == "attestation"])
    records = []
    for item, row in zip(rec.items, recorded, strict=True):
        if item.role != "calibration-record":
            continue
        value = json.loads(item.prepared.data)
        records.append(
            CalibrationRecord(
                row.digest,
                row.seq,
                value["plan_schema_version"],
                value["plan_digest"],
                value["candidate"],
                value["candidate_name"],
                value["status"],
                value["recommendation"],
                value["verdict"],
                value["result_digest"],
            )
        )
    return dataclasses.replace(
        done,
        records=tuple(records),
        recorded=tuple(recorded),
        attestations_ok=all(v.ok for v in verdicts),
    )


# --- the behavioral channel --------------------------------------------------------------


@dataclass(frozen=True)
class BehavioralRun:
    """Probes run on a patched copy of a source tree, recorded (``behavioral run --json``).

    ``evidence`` is the behavioral-evidence object as appended; ``ok`` iff every probe
    met its expectation."""

    evidence_digest: str
    evidence: Mapping[str, object]
    verification_result_digest: str | None
    recorded: tuple[RecordedItem, ...]

    @property
    def ok(self) -> bool:
        summary = self.evidence.get("summary")
        return isinstance(summary, Mapping) and summary.get("all_expectations_met") is True

    def to_json(self) -> dict[str, object]:
        from verifiers.model.json import maps

        evidence = self.evidence
        return {
            "evidence_digest": self.evidence_digest,
            "candidate_digest": evidence.get("candidate_digest"),
            "probe_plan_digest": evidence.get("probe_plan_digest"),
            "verification_result_digest": self.verification_result_digest,
            "patch_applied": evidence.get("patch_applied"),
            "apply_error": evidence.get("apply_error"),
            "probes": [
                {k: p.get(k) for k in ("id", "expect", "status", "exit_code", "expectation_met")}
                for p in maps(evidence.get("probes"))
            ],
            "summary": evidence.get("summary"),
            "sandbox": as_map(evidence.get("environment")).get("sandbox"),
            "recorded": [r.to_json() for r in self.recorded],
        }


def run_behavioral(
    ledger: Ledger,
    *,
    source_tree: str | os.PathLike[str],
    patch: Path | bytes,
    probes: Input,
    verification_result: str | None = None,
    unsandboxed: bool = False,
) -> BehavioralRun:
    """Apply ``patch`` to a temporary copy of ``source_tree`` (never written), run the
    probe plan's evaluator-owned probes on it and record the evidence: the patch blob, the
    probe plan (its canonical bytes, as a blob) and the behavioral-evidence object, in one
    transaction. ``verification_result``: the stored VerificationResult (digest, prefix or
    id) this evidence accompanies; it must have observed the same patch.

    Probes run inside a bubblewrap sandbox; without a working one this refuses (exit 4)
    unless ``unsandboxed``, which the evidence records. A VerificationResult is never
    changed: the channel is separate and linked."""
    from ledger.bounded import PATCH_LIMIT
    from verifiers.behavioral import load_probe_plan, run_probes
    from verifiers.record import behavioral_record
    from verifiers.sandbox import find_sandbox

    tree = Path(source_tree)
    if not tree.is_dir():
        raise NotFound(f"source tree, got {tree}, expected an existing directory")
    patch_bytes = read_document(patch, "patch", PATCH_LIMIT) if isinstance(patch, Path) else patch
    plan_value = _encoded(probes, "probe plan").value
    plan = load_probe_plan(plan_value)
    if not unsandboxed:
        find_sandbox()  # refuse (exit 4) before anything runs
    result_digest = (
        None
        if verification_result is None
        else _linked_result(ledger, verification_result, patch_bytes)
    )
    evidence = run_probes(
        tree,
        patch_bytes,
        plan,
        verification_result_digest=result_digest,
        unsandboxed=unsandboxed,
    )
    record = behavioral_record(evidence, patch_bytes, plan, plan_value)
    recorded = append_record(ledger, record)
    return BehavioralRun(
        record.only("behavioral-evidence").digest, evidence, result_digest, tuple(recorded)
    )


def _linked_result(ledger: Ledger, ref: str, patch: bytes) -> str:
    """The stored VerificationResult ``ref`` names, which must have observed ``patch``."""
    from ledger.encoding.digest import sha256_digest
    from ledger.store.resolve import resolve_stored
    from verifiers.errors import EvidenceMismatch
    from verifiers.model import VerificationResult

    obj = resolve_stored(ledger.store, ref)
    if obj.kind != "verification-result":
        raise InputError(
            f"--verification-result {ref}, got kind {obj.kind}, expected verification-result"
        )
    patch_digest = sha256_digest(patch)
    evidence = VerificationResult.of(obj.json()).evidence
    observed = sorted(
        {str(e["digest"]) for e in evidence if e.get("type") == "artifact_hash" and "digest" in e}
    )
    if patch_digest not in observed:
        raise EvidenceMismatch(
            f"behavioral evidence for patch {patch_digest} attached to VerificationResult"
            f" {obj.digest}, got a result that observed {observed or 'no candidate bytes'},"
            " expected the same candidate"
        )
    return obj.digest
