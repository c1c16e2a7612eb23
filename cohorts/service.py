"""Cohort operations on a store: freeze, burn, bind, audit.

Every write runs its rule checks twice: once before signing (to report every failed item
early) and again inside ``append_many``'s precheck, i.e. under the write lock, against
the ledger as it is at commit time, so check-then-write is atomic. A refused operation
leaves the ledger unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cohorts.access import as_str, shown
from cohorts.audit import CohortAuditReport, audit_cohort
from cohorts.binding import CalibrationResult, bind_successor
from cohorts.burn import (
    Reference,
    TaskReason,
    build_burn_notice,
    excluded_tasks,
    require_burnable,
)
from cohorts.definition import definition_digests
from cohorts.errors import CohortInputError, GateError, LifecycleError
from cohorts.findings import CohortFinding, error
from cohorts.lifecycle import check_update, freeze, require_freezable
from cohorts.lookup import BENCHMARK_COHORT, BURN_NOTICE, StoredDoc
from cohorts.store_lookup import StoreLookup
from cohorts.validation import schema_validator
from ledger.errors import LedgerError, NotFound, RuleViolation
from ledger.store.base import AppendResult, LedgerReader, Store
from ledger.store.prepared import Prepared, prepare_value
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Signer

CALIBRATION_RECORD = "calibration-record"


@dataclass(frozen=True)
class Written:
    """What an operation appended: (kind, digest, new) per object, plus its findings."""

    objects: tuple[tuple[str, str, bool], ...]
    findings: tuple[CohortFinding, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "objects": [{"kind": k, "digest": d, "new": n} for k, d, n in self.objects],
            "findings": [f.to_json() for f in self.findings],
        }


def _written(
    items: Sequence[Prepared], results: Sequence[AppendResult], found: Iterable[CohortFinding] = ()
) -> Written:
    return Written(
        tuple((p.kind, r.entry.digest, r.new) for p, r in zip(items, results, strict=True)),
        tuple(found),
    )


def now_rfc3339() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def latest_cohort(reader: LedgerReader, cohort_id: str) -> StoredDoc | None:
    return StoreLookup(reader).latest_cohort(cohort_id)


def require_cohort(reader: LedgerReader, cohort_id: str) -> StoredDoc:
    doc = latest_cohort(reader, cohort_id)
    if doc is None:
        raise NotFound(
            f"cohort not found, got {cohort_id}, expected a cohort id in the ledger"
            " (`provledger cohort list` shows them; `provledger import idkmesh` records them)"
        )
    return doc


def burn_notices_for(reader: LedgerReader, cohort_id: str) -> list[StoredDoc]:
    """Stored burn notices naming ``cohort_id``, in log order."""
    return [
        d for d in StoreLookup(reader).of_kind(BURN_NOTICE) if d.value.get("cohort_id") == cohort_id
    ]


# --- freeze ------------------------------------------------------------------------------


def freeze_document(
    cohort: Mapping[str, Any], reader: LedgerReader
) -> tuple[dict[str, Any], list[CohortFinding]]:
    """The document to append and the gate's findings; raises on any refusal.

    A cohort already at ``frozen`` is checked as given (its recorded digest must
    reproduce); a scaffold/collecting one becomes frozen with its legacy definition
    digest recorded (``lifecycle.freeze``). Stage moves and definition changes are
    checked against the newest stored document with the same id.
    """
    lookup = StoreLookup(reader)
    if cohort.get("stage") == "frozen":
        doc = copy.deepcopy(dict(cohort))
        found = require_freezable(doc, lookup, schema_validator)
    else:
        doc = freeze(cohort, lookup, schema_validator)  # runs the gate on the frozen doc
        found = []
    cohort_id = as_str(doc.get("id"))
    previous = lookup.latest_cohort(cohort_id) if cohort_id else None
    check_update(None if previous is None else previous.value, doc)
    return doc, found


def freeze_cohort(store: Store, cohort: Mapping[str, Any]) -> Written:
    """Append the frozen cohort when the freeze gate holds (atomically re-checked)."""
    doc, found = freeze_document(cohort, store)
    prepared = prepare_value(doc, BENCHMARK_COHORT)

    def precheck(reader: LedgerReader) -> None:
        freeze_document(doc, reader)

    results = store.append_many([prepared], precheck=precheck)
    return _written([prepared], results, found)


# --- burn --------------------------------------------------------------------------------


def reference_for(ref: str, rel: str = "successor") -> Reference:
    """A reference from user text: digest -> cohort, digits/#n -> issue, URL -> uri."""
    text = ref.strip()
    if not text:
        raise CohortInputError("empty reference, got '', expected a digest, issue or URI")
    if text.startswith("sha256:"):
        return Reference(rel, "cohort", text, text)  # type: ignore[arg-type]
    if text.lstrip("#").isdigit():
        return Reference(rel, "issue", text.lstrip("#"))  # type: ignore[arg-type]
    if "://" in text:
        return Reference(rel, "uri", text)  # type: ignore[arg-type]
    return Reference(rel, "cohort", text)  # type: ignore[arg-type]


def check_authority(reader: LedgerReader, signer: Signer) -> None:
    """Refuse a signing key that is not the ledger's authority key."""
    expected = reader.get_meta("authority_key_id")
    if expected is not None and signer.key_id != expected:
        raise RuleViolation(
            f"authority key, got key id {signer.key_id}, expected the ledger's {expected}"
        )


def _burn_plan(
    reader: LedgerReader,
    cohort_id: str,
    reason: str,
    issued_at: str,
    excluded: Sequence[TaskReason] | None,
    observed: Sequence[str],
    successors: Sequence[str],
) -> tuple[dict[str, Any], dict[str, Any], list[CohortFinding]]:
    doc = require_cohort(reader, cohort_id)
    cohort = dict(doc.value)
    failures: list[CohortFinding] = []
    if burn_notices_for(reader, cohort_id) or cohort.get("stage") == "burned":
        raise LifecycleError(
            f"cohort already burned, got a burn of {cohort_id} again, expected one burn only"
        )
    if cohort.get("stage") != "frozen":
        failures.append(
            error(
                "burn.stage",
                f"only a frozen cohort can burn, got stage {shown(cohort.get('stage'))},"
                " expected frozen",
            )
        )
        raise GateError("burn", failures)
    notice = build_burn_notice(
        cohort_id=cohort_id,
        definition_digest=definition_digests(cohort),
        reason=reason,
        issued_at=issued_at,
        excluded_outcomes=excluded_tasks(cohort) if excluded is None else excluded,
        never_again_held_out=[
            TaskReason(t, "outcome observed before the burn; never again held out")
            for t in observed
        ],
        references=[reference_for(s) for s in successors],
    )
    found = require_burnable(cohort, notice)
    burned = copy.deepcopy(cohort)
    burned["stage"] = "burned"
    check_update(cohort, burned)
    return burned, notice, found


def burn_cohort(
    store: Store,
    cohort_id: str,
    *,
    reason: str,
    signer: Signer,
    excluded: Sequence[TaskReason] | None = None,
    observed: Sequence[str] = (),
    successors: Sequence[str] = (),
    issued_at: str | None = None,
) -> Written:
    """Append (one transaction) the burned cohort document, the burn notice and the
    authority's attestation over the notice. A second burn is refused."""
    check_authority(store, signer)
    when = issued_at or now_rfc3339()
    burned, notice, found = _burn_plan(
        store, cohort_id, reason, when, excluded, observed, successors
    )
    items = [prepare_value(burned, BENCHMARK_COHORT), prepare_value(notice, BURN_NOTICE)]
    items.append(attest_prepared(items[1], signer))

    def precheck(reader: LedgerReader) -> None:
        _burn_plan(reader, cohort_id, reason, when, excluded, observed, successors)

    results = store.append_many(items, precheck=precheck)
    return _written(items, results, found)


# --- bind --------------------------------------------------------------------------------


def calibration_results(reader: LedgerReader) -> list[CalibrationResult]:
    """Calibration evidence from stored ``calibration-record`` objects.

    A record calibrates its plan *semantics version* (``plan_schema_version``): the
    fixture plan it ran is not the cohort's plan, so ``plan_digest`` is not used to
    narrow it. Fields are read tolerantly (``candidate_label``, ``verdict`` fallbacks)."""
    out: list[CalibrationResult] = []
    for doc in StoreLookup(reader).of_kind(CALIBRATION_RECORD):
        value = doc.value
        version = as_str(value.get("plan_schema_version"))
        label = as_str(value.get("candidate")) or as_str(value.get("candidate_label"))
        verdict = as_str(value.get("recommendation")) or as_str(value.get("verdict"))
        if label in ("repair", "correct", "legitimate"):
            label = "straightforward"
        if version is None or label not in ("straightforward", "decoy") or verdict is None:
            continue
        out.append(
            CalibrationResult(
                version,
                label,  # type: ignore[arg-type]
                verdict,
                None,
                as_str(value.get("result_digest"))
                or as_str(value.get("verification_result_digest")),
            )
        )
    return out


def _bind_plan(
    reader: LedgerReader, successor: Mapping[str, Any], predecessor_id: str
) -> dict[str, Any]:
    predecessor = require_cohort(reader, predecessor_id)
    succ_id = as_str(successor.get("id")) or ""
    stored = latest_cohort(reader, succ_id)
    if stored is None or definition_digests(stored.value) != definition_digests(successor):
        raise GateError(
            "successor",
            [
                error(
                    "gate.successor.stored",
                    f"successor not in ledger with this definition, got {shown(succ_id)},"
                    " expected it frozen in the ledger first (provledger cohort freeze)",
                )
            ],
        )
    notices = burn_notices_for(reader, predecessor_id)
    if not notices:
        raise GateError(
            "successor",
            [
                error(
                    "gate.burn_notice",
                    f"no burn notice in ledger, got none for {predecessor_id},"
                    " expected the predecessor burned (provledger cohort burn)",
                )
            ],
        )
    return bind_successor(
        predecessor.value,
        notices[-1].value,
        stored.value,
        StoreLookup(reader),
        calibration_results(reader),
    )


def bind_cohort(
    store: Store, successor: Mapping[str, Any], predecessor_id: str, signer: Signer | None
) -> Written:
    """Append the cohort-binding (and the authority's attestation) when the gate holds."""
    if signer is not None:
        check_authority(store, signer)
    binding = _bind_plan(store, successor, predecessor_id)
    items = [prepare_value(binding, "cohort-binding")]
    if signer is not None:
        items.append(attest_prepared(items[0], signer))

    def precheck(reader: LedgerReader) -> None:
        if _bind_plan(reader, successor, predecessor_id) != binding:
            raise RuleViolation(
                "ledger changed during bind, got another gate outcome, expected the same"
            )

    results = store.append_many(items, precheck=precheck)
    return _written(items, results)


# --- audit -------------------------------------------------------------------------------


def quarantined_cohort(reader: LedgerReader, cohort_id: str) -> dict[str, Any] | None:
    """The document of ``cohort_id`` when the ledger holds it only quarantined (it failed
    its schema at import) and its stored bytes still parse; else None."""
    from cohorts.lookup import QUARANTINE
    from ledger.encoding.canonical import parse_strict

    for record in reversed(StoreLookup(reader).of_kind(QUARANTINE)):
        value = record.value
        if value.get("claimed_kind") != BENCHMARK_COHORT or value.get("object_id") != cohort_id:
            continue
        blob = reader.get(str(value.get("blob_digest")))
        if blob is None:
            continue
        try:
            parsed = parse_strict(bytes(blob.data))
        except LedgerError:
            continue
        if isinstance(parsed, dict):
            return parsed
    return None


def audit(reader: LedgerReader, cohort_id: str) -> CohortAuditReport:
    """Audit the newest stored document of ``cohort_id`` against the ledger.

    A cohort recorded only quarantined is audited as its stored bytes parse: the audit
    is total, so its schema violations are reported as findings (never "not found").
    """
    doc = latest_cohort(reader, cohort_id)
    if doc is None:
        bad = quarantined_cohort(reader, cohort_id)
        if bad is not None:
            return audit_cohort(bad, StoreLookup(reader), schema_validator)
    doc = require_cohort(reader, cohort_id)
    return audit_cohort(doc.value, StoreLookup(reader), schema_validator)


def attestation_state(reader: LedgerReader, digest: str) -> str:
    """One phrase: is ``digest`` attested, by whom, and does the attestation verify."""
    from ledger.trust.judgement import check_subject_attestations

    try:
        verdicts = check_subject_attestations(reader, digest)
    except LedgerError as exc:
        return f"attestations unreadable ({exc})"
    if not verdicts:
        return "not attested"
    good = [v for v in verdicts if v.ok]
    if good:
        return "; ".join(f"attested by the {v.signer} key {v.key_id}" for v in good)
    first = verdicts[0]
    why = first.failures[0].message if first.failures else "does not verify"
    return f"attestation does not verify ({why})"


def audit_attestations(reader: LedgerReader, report: CohortAuditReport) -> dict[str, str]:
    """Attestation state of every burn notice and binding the report names."""
    digests = [*report.relations.burn_notices, *report.relations.bindings]
    for link in report.successor_links:
        digests += link.bindings
    return {d: attestation_state(reader, d) for d in sorted(set(digests))}


def audit_behavioural(reader: LedgerReader, report: CohortAuditReport) -> dict[str, list[str]]:
    """Behavioural evidence recorded for each stored VerificationResult the report lists
    (by the result's ledger digest): the separate, stronger channel, linked not merged."""
    out: dict[str, list[str]] = {}
    for task in report.tasks:
        for attempt in task.attempts:
            doc = attempt.verification_result.doc
            if doc is None:
                continue
            linked = [
                source
                for source, _rel in reader.refs_to(doc.jcs_digest, "verification-result")
                if (obj := reader.get(source)) is not None and obj.kind == "behavioral-evidence"
            ]
            if linked:
                out[doc.jcs_digest] = sorted(linked)
    return out


@dataclass(frozen=True)
class CohortRow:
    """One stored cohort as ``cohort list`` and ``cohort audit --all`` show it."""

    cohort_id: str
    stage: str | None
    definition_digest: str | None
    tasks: int
    record_digest: str
    attested: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.cohort_id,
            "stage": self.stage,
            "definition_digest": self.definition_digest,
            "tasks": self.tasks,
            "record_digest": self.record_digest,
            "attested": self.attested,
        }


def cohort_rows(reader: LedgerReader) -> list[CohortRow]:
    """The newest record of every stored cohort, sorted by id.

    ``attested``: the state of the cohort record's attestations, and for a burned
    cohort the state of its burn notice's.
    """
    latest: dict[str, StoredDoc] = {}
    for doc in StoreLookup(reader).of_kind(BENCHMARK_COHORT):
        cid = as_str(doc.value.get("id"))
        if cid is not None:
            latest[cid] = doc
    rows: list[CohortRow] = []
    for cid, doc in sorted(latest.items()):
        state = attestation_state(reader, doc.jcs_digest)
        notices = burn_notices_for(reader, cid)
        if notices:
            state = (
                f"record {state}; burn notice {attestation_state(reader, notices[-1].jcs_digest)}"
            )
        tasks = doc.value.get("tasks")
        rows.append(
            CohortRow(
                cid,
                as_str(doc.value.get("stage")),
                as_str(doc.value.get("definition_digest")),
                len(tasks) if isinstance(tasks, list) else 0,
                doc.jcs_digest,
                state,
            )
        )
    from cohorts.lookup import QUARANTINE

    listed = {r.cohort_id for r in rows}
    for record in StoreLookup(reader).of_kind(QUARANTINE):
        qid = as_str(record.value.get("object_id"))
        if record.value.get("claimed_kind") != BENCHMARK_COHORT or qid is None or qid in listed:
            continue
        listed.add(qid)
        rows.append(
            CohortRow(qid, "quarantined (fails its schema)", None, 0, record.jcs_digest, "-")
        )
    return sorted(rows, key=lambda r: r.cohort_id)
