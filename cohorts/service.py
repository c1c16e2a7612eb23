"""Cohort operations on a store: freeze, burn, bind, audit.

Every write runs its checks twice: once before appending (its gate, then the ledger's
own admission rules on exactly the batch it will append: ``AdmissionPolicy.precheck``,
so the authority key and the lifecycle are judged by the one copy of those rules, to
report every failed item early) and again inside ``append_many``, i.e. under the write
lock, against the ledger as it is at commit time (its precheck re-runs the gate, the
store runs admission), so check-then-write is atomic. A refused operation leaves the
ledger unchanged.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from cohorts.audit import CohortAuditReport, audit_cohort
from cohorts.binding import (
    CalibrationResult,
    CarryOver,
    GateReport,
    build_binding,
    successor_gate,
)
from cohorts.burn import (
    Reference,
    TaskReason,
    build_burn_notice,
    excluded_tasks,
    require_burnable,
)
from cohorts.definition import definition_digests
from cohorts.errors import CohortInputError, GateError, LifecycleError
from cohorts.findings import CohortFinding, error, info, sort_key
from cohorts.lifecycle import freeze, freeze_findings, require_freezable
from cohorts.lookup import BENCHMARK_COHORT, BURN_NOTICE, EVALUATOR_PLAN, StoredDoc, resolve
from cohorts.standing import StandingLookup
from cohorts.store_lookup import StoreLookup
from cohorts.validation import schema_validator
from ledger.encoding.values import JSONObject
from ledger.errors import LedgerError, NotFound, RuleViolation
from ledger.log.cosignature import WitnessKey
from ledger.log.timeline import CoveringCheckpoint
from ledger.store.base import AppendResult, LedgerReader, Store
from ledger.store.prepared import Prepared, prepare_value
from ledger.trust.attestation import attest_prepared
from ledger.trust.identity import TrustIndex
from ledger.trust.keys import Signer
from verifiers.model import Cohort, CohortView, EvaluatorPlan
from verifiers.model.json import as_str, shown

CALIBRATION_RECORD = "calibration-record"


@dataclass(frozen=True)
class Written:
    """What an operation appended: (kind, digest, new) per object, plus its findings."""

    objects: tuple[tuple[str, str, bool], ...]
    findings: tuple[CohortFinding, ...] = ()

    def to_json(self) -> dict[str, object]:
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
    """The newest stored document of ``cohort_id`` that has standing (``cohorts.standing``)."""
    return StandingLookup(reader).latest_cohort(cohort_id)


def require_cohort(reader: LedgerReader, cohort_id: str) -> StoredDoc:
    standing = StandingLookup(reader)
    doc = standing.latest_cohort(cohort_id)
    if doc is None:
        history = standing.raw.latest_cohort(cohort_id)
        if history is not None:
            why = standing.why_not(history) or "no standing"
            raise NotFound(
                f"cohort {cohort_id} has no standing, got only a document without it (stage"
                f" {shown(history.model(Cohort).stage)}: {why}), expected a document attested"
                " by the authority (provledger cohort freeze FILE)"
            )
        raise NotFound(
            f"cohort not found, got {cohort_id}, expected a cohort id in the ledger"
            " (`provledger cohort list` shows them; `provledger import idkmesh` records them)"
        )
    return doc


def burn_notices_for(reader: LedgerReader, cohort_id: str) -> list[StoredDoc]:
    """Authority-attested burn notices naming ``cohort_id``, in log order."""
    return [
        d
        for d in StandingLookup(reader).of_kind(BURN_NOTICE)
        if d.value.get("cohort_id") == cohort_id
    ]


def unattested_burn_notices(reader: LedgerReader, cohort_id: str) -> list[StoredDoc]:
    """Burn notices of ``cohort_id`` stored without the authority's attestation."""
    return [
        d
        for d in StandingLookup(reader).unattested(BURN_NOTICE)
        if d.value.get("cohort_id") == cohort_id
    ]


# --- freeze ------------------------------------------------------------------------------


def freeze_document(
    cohort: Mapping[str, object], reader: LedgerReader
) -> tuple[dict[str, object], list[CohortFinding]]:
    """The document to append and the freeze gate's findings; raises on any refusal.

    A cohort already at ``frozen`` is checked as given (its recorded digest must
    reproduce); a scaffold/collecting one becomes frozen with its legacy definition
    digest recorded (``lifecycle.freeze``). Whether it may follow the stored documents
    of its id (the lifecycle) is the admission policy's rule, judged on the batch.
    """
    lookup = StandingLookup(reader)  # the gate counts only records with standing
    if CohortView.of(cohort).stage == "frozen":
        doc = copy.deepcopy(dict(cohort))
        found = require_freezable(doc, lookup, schema_validator)
    else:
        doc = freeze(cohort, lookup, schema_validator)  # runs the gate on the frozen doc
        found = []
    return doc, found


def freeze_cohort(store: Store, cohort: Mapping[str, object], signer: Signer) -> Written:
    """Append the frozen cohort and the authority's attestation over it when the freeze
    gate and the admission rules hold (atomically re-checked)."""
    doc, found = freeze_document(cohort, store)
    prepared = prepare_value(doc, BENCHMARK_COHORT)
    items = [prepared, attest_prepared(prepared, signer)]
    store.policy.precheck(store, items)  # authority key, lifecycle: the ledger's own rules

    def precheck(reader: LedgerReader) -> None:
        freeze_document(doc, reader)

    results = store.append_many(items, precheck=precheck)
    return _written(items, results, found)


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


def _burn_plan(
    reader: LedgerReader,
    cohort_id: str,
    reason: str,
    issued_at: str,
    excluded: Sequence[TaskReason] | None,
    observed: Sequence[str],
    successors: Sequence[str],
) -> tuple[dict[str, object], dict[str, object], list[CohortFinding]]:
    doc = require_cohort(reader, cohort_id)
    cohort = dict(doc.value)
    stage = doc.model(Cohort).stage
    failures: list[CohortFinding] = []
    if burn_notices_for(reader, cohort_id) or stage == "burned":
        raise LifecycleError(
            f"cohort already burned, got a burn of {cohort_id} again, expected one burn only"
        )
    if stage != "frozen":
        failures.append(
            error(
                "burn.stage",
                f"only a frozen cohort can burn, got stage {shown(stage)}, expected frozen",
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
    authority's attestation over each. A second burn is refused."""
    when = issued_at or now_rfc3339()
    burned, notice, found = _burn_plan(
        store, cohort_id, reason, when, excluded, observed, successors
    )
    items = [prepare_value(burned, BENCHMARK_COHORT), prepare_value(notice, BURN_NOTICE)]
    items += [attest_prepared(items[0], signer), attest_prepared(items[1], signer)]
    store.policy.precheck(store, items)  # authority key, lifecycle: the ledger's own rules

    def precheck(reader: LedgerReader) -> None:
        _burn_plan(reader, cohort_id, reason, when, excluded, observed, successors)

    results = store.append_many(items, precheck=precheck)
    return _written(items, results, found)


# --- bind --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanChoice:
    """``cohort bind --plan TASK=PLAN_ID@VERSION``: the plan a carried-over task binds."""

    task: str
    plan_id: str
    version: str


def plan_choice(text: str) -> PlanChoice:
    """Parse ``TASK=PLAN_ID@VERSION`` (``CohortInputError`` otherwise)."""
    task, sep, rest = text.partition("=")
    plan_id, at, version = rest.rpartition("@")
    if not (sep and at and task and plan_id and version):
        raise CohortInputError(f"--plan, got {text!r}, expected TASK=PLAN_ID@VERSION")
    return PlanChoice(task, plan_id, version)


_RECORD_CMD = "provledger calibrate --record --key KEY"


def calibration_evidence(
    reader: LedgerReader, digests: Sequence[str]
) -> tuple[list[CalibrationResult], list[CohortFinding]]:
    """The calibration records named by digest that count, and one gate item per record.

    A record counts only when it is a stored ``calibration-record`` with a valid
    attestation by a registered, unrevoked verifier identity whose adapter and adapter
    versions cover the record's, and when the fixture plan it ran (``plan_digest``) is
    stored with that semantics version and that adapter version."""
    from ledger.trust.identity import trust_index

    index = trust_index(reader)
    lookup = StandingLookup(reader)
    counted: list[CalibrationResult] = []
    items: list[CohortFinding] = []
    for digest in dict.fromkeys(digests):
        obj = reader.get(digest)
        if obj is None or obj.kind != CALIBRATION_RECORD or not lookup.counts.has_standing(obj):
            got = (
                "nothing"
                if obj is None
                else f"a {obj.kind}"
                if obj.kind != CALIBRATION_RECORD
                else f"one without standing ({lookup.counts.why_not(obj)})"
            )
            items.append(
                error(
                    "gate.calibration.record",
                    f"calibration record {digest}, got {got}, expected a stored"
                    f" calibration-record ({_RECORD_CMD})",
                )
            )
            continue
        doc = lookup.raw.doc(obj)
        value = doc.value if doc is not None else {}
        adapter, adapter_version = (
            as_str(value.get("adapter")),
            as_str(value.get("adapter_version")),
        )
        version = as_str(value.get("plan_schema_version"))
        signers = _calibration_signers(reader, index, digest, adapter, adapter_version)
        if not signers:
            problem: str | None = (
                f"calibration record {digest}, got no valid attestation by a registered,"
                f" unrevoked verifier identity holding {adapter} {adapter_version}, expected one"
                f" (provledger identity register --adapter {adapter} --adapter-version"
                f" {adapter_version} ..., then {_RECORD_CMD})"
            )
        else:
            problem = _calibration_plan_problem(lookup, digest, value, version, adapter_version)
        if problem is not None:
            items.append(error("gate.calibration.record", problem))
            continue
        label = as_str(value.get("candidate"))
        items.append(
            info(
                "gate.calibration.record",
                f"calibration record {digest} (v{version} {label}) attested by {signers[0]}",
            )
        )
        counted.append(
            CalibrationResult(
                str(version),
                label,  # type: ignore[arg-type]
                str(value.get("recommendation")),
                None,
                as_str(value.get("result_digest")),
                (str(adapter), str(adapter_version)),
            )
        )
    return counted, items


def _calibration_signers(
    reader: LedgerReader,
    index: TrustIndex,
    digest: str,
    adapter: str | None,
    adapter_version: str | None,
) -> list[str]:
    """Verifier ids of the valid attestations of ``digest`` by an active identity that
    holds ``adapter`` at ``adapter_version``."""
    from ledger.trust.judgement import check_subject_attestations

    signers = []
    for verdict in check_subject_attestations(reader, digest, reader.policy):
        identity = next((i for i in index.identities if i.digest == verdict.identity_digest), None)
        if (
            verdict.ok
            and verdict.signer == "verifier"
            and identity is not None
            and index.status(identity) == "active"
            and identity.adapter == adapter
            and adapter_version in identity.adapter_versions
        ):
            signers.append(identity.verifier_id)
    return signers


def _calibration_plan_problem(
    lookup: StandingLookup,
    digest: str,
    value: Mapping[str, object],
    version: str | None,
    adapter_version: str | None,
) -> str | None:
    """None when the fixture plan the record ran is stored at the record's plan version
    and adapter version, else why not."""
    stored = lookup.by_digest(str(value.get("plan_digest")))
    plan = None if stored is None else stored.model(EvaluatorPlan)
    plan_version = None if plan is None else plan.schema_version
    plan_adapter = None if plan is None else plan.verifier[2]
    if plan is not None and plan_version == version and plan_adapter == adapter_version:
        return None
    return (
        f"calibration record {digest} ran adapter version {adapter_version} as plan"
        f" version {version}, got the plan {value.get('plan_digest')} at version"
        f" {shown(plan_version)} adapter version {shown(plan_adapter)}, expected the"
        f" adapter version of the plan version it calibrates ({_RECORD_CMD})"
    )


def _plan_items(
    reader: LedgerReader,
    successor: Mapping[str, object],
    carried: Sequence[CarryOver],
    choices: Sequence[PlanChoice],
) -> tuple[list[CohortFinding], list[dict[str, str]]]:
    """One item per carried-over task: the plan the binder named is the task's plan."""
    tasks = {as_str(t.id): t for t in CohortView.of(successor).tasks}
    by_task = {c.task: c for c in choices}
    lookup = StandingLookup(reader)
    items: list[CohortFinding] = []
    named: list[dict[str, str]] = []
    carried_ids = sorted({c.task for c in carried})
    for task_id in carried_ids:
        evaluator = tasks[task_id].evaluator
        plan_id = as_str(evaluator.plan_id) or "?"
        plan = resolve(lookup, EVALUATOR_PLAN, plan_id, evaluator.plan_digest)
        model = plan.model(EvaluatorPlan)
        version = None if model is None else model.schema_version
        hint = f"--plan {task_id}={plan_id}@{version or 'VERSION'}"
        choice = by_task.get(task_id)
        if choice is None:
            items.append(
                error(
                    "gate.plan.named",
                    f"carried-over task has no plan named, got none, expected {hint}",
                    task_id,
                )
            )
        elif choice.plan_id != plan_id or choice.version != version:
            items.append(
                error(
                    "gate.plan.named",
                    f"named plan is not the task's, got {choice.plan_id}@{choice.version},"
                    f" expected {plan_id}@{version} ({hint})",
                    task_id,
                )
            )
        else:
            items.append(info("gate.plan.named", f"bound to {plan_id}@{version}", task_id))
            assert plan.doc is not None
            named.append(
                {
                    "task": task_id,
                    "plan_id": plan_id,
                    "plan_version": str(version),
                    "plan_digest": plan.doc.jcs_digest,
                }
            )
    for choice in choices:
        if choice.task not in carried_ids:
            items.append(
                error(
                    "gate.plan.named",
                    f"--plan names a task that is not carried over, got {choice.task}, expected"
                    f" one of {carried_ids}",
                )
            )
    return items, named


def _bind_plan(
    reader: LedgerReader,
    successor_ref: Mapping[str, object] | str,
    predecessor_id: str,
    choices: Sequence[PlanChoice],
    calibrations: Sequence[str],
) -> dict[str, object]:
    """Every gate item, on the ledger's state (not on how it got there), counting only
    records with standing; the binding."""
    raw = StandingLookup(reader)
    predecessor = require_cohort(reader, predecessor_id)
    stored, pre = _stored_successor(reader, successor_ref)
    notices = burn_notices_for(reader, predecessor_id)
    if not notices:
        pre.append(_missing_notice_item(reader, predecessor, predecessor_id))
    if stored is None or not notices:
        raise GateError("successor", [f for f in pre if f.severity == "error"])
    counted, cal_items = calibration_evidence(reader, calibrations)
    report = successor_gate(predecessor.value, notices[-1].value, stored.value, raw, counted)
    plan_items, named = _plan_items(reader, stored.value, report.carried_over, choices)
    merged = GateReport(
        tuple(sorted((*report.items, *pre, *cal_items, *plan_items), key=sort_key)),
        report.carried_over,
    )
    return build_binding(
        predecessor.value,
        notices[-1].value,
        stored.value,
        merged,
        evaluator_plans=named,
        calibrations=list(calibrations),
    )


def _stored_successor(
    reader: LedgerReader, successor_ref: Mapping[str, object] | str
) -> tuple[StoredDoc | None, list[CohortFinding]]:
    """The successor as stored with standing (by id, or by id and definition), and the
    items about it: not stored, or its freeze gate re-run on the stored document."""
    standing = StandingLookup(reader)
    if isinstance(successor_ref, str):
        succ_id = successor_ref
        stored = standing.latest_cohort(succ_id)
    else:
        succ_id = as_str(CohortView.of(successor_ref).id) or ""
        stored = standing.latest_cohort(succ_id)
        if stored is not None and definition_digests(stored.value) != definition_digests(
            successor_ref
        ):
            stored = None
    if stored is None:
        history = StoreLookup(reader).latest_cohort(succ_id)
        why = "only unattested history" if history is not None else "nothing with this definition"
        return None, [
            error(
                "gate.successor.stored",
                f"successor {shown(succ_id)} not frozen in the ledger, got {why}, expected it"
                " frozen and attested first (provledger cohort freeze FILE)",
            )
        ]
    # The successor's freeze gate, re-run on the stored document: how it got in
    # (freeze, import, a hand append) does not matter, only what it is.
    gated = dict(stored.value)
    if stored.model(Cohort).stage != "frozen":
        return stored, []
    return stored, [
        error(
            "gate.successor.freeze",
            f"stored successor fails the freeze gate, {f.code}: {f.message}"
            " (provledger cohort freeze FILE)",
            f.task,
        )
        for f in freeze_findings(gated, standing, schema_validator)
        if f.severity == "error"
    ] or [info("gate.successor.freeze", "stored successor passes the freeze gate")]


def _missing_notice_item(
    reader: LedgerReader, predecessor: StoredDoc, predecessor_id: str
) -> CohortFinding:
    """No attested burn notice for the predecessor: why, and the command that fixes it."""
    unsigned = unattested_burn_notices(reader, predecessor_id)
    if unsigned:
        fix = (
            f"burn notice {unsigned[-1].jcs_digest} is unattested history, expected the"
            f" authority's attestation (provledger sign {unsigned[-1].jcs_digest}"
            " --key <db>.authority.key)"
        )
    elif predecessor.model(Cohort).stage == "burned":
        fix = (
            "the predecessor is burned but no burn notice records why, expected one"
            " (import its upstream burn facts: provledger import idkmesh PATH)"
        )
    else:
        fix = (
            f"the predecessor is at stage {shown(predecessor.model(Cohort).stage)},"
            f" expected it burned (provledger cohort burn {predecessor_id} --reason TEXT)"
        )
    return error(
        "gate.burn_notice",
        f"no attested burn notice for {predecessor_id}, got none, {fix}",
    )


def bind_cohort(
    store: Store,
    successor: Mapping[str, object] | str,
    predecessor_id: str,
    signer: Signer,
    *,
    plans: Sequence[PlanChoice] = (),
    calibrations: Sequence[str] = (),
) -> Written:
    """Append the cohort-binding and the authority's attestation when the gate holds.

    ``successor`` is the successor document or its id; either way the gate runs on the
    stored, attested successor."""
    binding = _bind_plan(store, successor, predecessor_id, plans, calibrations)
    items = [prepare_value(binding, "cohort-binding")]
    items.append(attest_prepared(items[0], signer))
    store.policy.precheck(store, items)  # the authority key: the ledger's own rule

    def precheck(reader: LedgerReader) -> None:
        if _bind_plan(reader, successor, predecessor_id, plans, calibrations) != binding:
            raise RuleViolation(
                "ledger changed during bind, got another gate outcome, expected the same"
            )

    results = store.append_many(items, precheck=precheck)
    return _written(items, results)


# --- outcomes ----------------------------------------------------------------------------


def _outcome_plan(
    reader: LedgerReader,
    cohort_id: str,
    task_id: str,
    result_ref: str,
    attempt_id: str | None,
    signature: str | None,
) -> dict[str, object]:
    """The cohort document that lists one more attempt; raises on any refusal.

    The outcome is judged from log positions first (``cohorts.timeline``): one recorded
    before the cohort froze, before its plan or (for a successor) before its binding is
    not pre-registered and is refused; the audit would not count it."""
    from cohorts.lookup import VERIFICATION_RESULT
    from cohorts.timeline import Timeline
    from cohorts.upstream import RECOMMENDATION_TO_OUTCOME
    from ledger.store.resolve import resolve as resolve_ref
    from verifiers.model import VerificationResult

    doc = require_cohort(reader, cohort_id)
    model = doc.model(Cohort)
    if model.stage != "frozen":
        raise LifecycleError(
            f"outcomes are recorded for a frozen cohort, got stage"
            f" {shown(model.stage)} for {cohort_id}, expected frozen"
            " (provledger cohort freeze FILE first)"
        )
    obj = resolve_ref(reader, result_ref)
    if obj.kind != VERIFICATION_RESULT:
        raise CohortInputError(
            f"--result {result_ref}, got a {obj.kind} ({obj.digest}), expected a"
            " verification-result"
        )
    stored = StoreLookup(reader).doc(obj)
    assert stored is not None  # a verification-result is a JSON object
    verdict = stored.model(VerificationResult)
    task = next((t for t in model.tasks if t.id == task_id), None)
    if task is None:
        raise CohortInputError(
            f"--task, got {task_id}, expected one of {sorted(str(t.id) for t in model.tasks)}"
        )
    listed = {as_str(a.verification_result.digest) for a in task.attempts}
    if listed & {obj.digest, obj.legacy_digest}:
        raise RuleViolation(
            f"outcome already listed, got {obj.digest} for task {task_id}, expected a new result"
        )
    declared = [str(s) for s in task.declared_signature_list]
    chosen = signature or (declared[0] if len(declared) == 1 else None)
    if chosen not in declared:
        raise CohortInputError(
            f"--signature, got {shown(chosen)}, expected one of the task's declared"
            f" structural signatures {declared}"
        )
    recommendation = as_str(verdict.recommendation)
    # The new document: a copy of the stored one with the attempt appended to the task.
    cohort: dict[str, Any] = copy.deepcopy(dict(doc.value))  # Any: edited in place below
    edited = [t for t in cohort["tasks"] if isinstance(t, dict)][task.index]
    evidence = edited.setdefault("evidence", {"status": "pending", "attempts": []})
    attempts = evidence.setdefault("attempts", [])
    attempt = {
        "attempt_id": attempt_id or f"attempt-{len(attempts) + 1:03d}",
        "structural_signature": chosen,
        "result_manifest": {
            "id": verdict.result_manifest_id,
            "digest": verdict.result_manifest_digest,
            "path": f"ledger/{verdict.result_manifest_digest}",
        },
        "verification_result": {
            "id": verdict.id,
            "digest": obj.digest,
            "path": f"ledger/{obj.digest}",
        },
        "outcome": RECOMMENDATION_TO_OUTCOME.get(str(recommendation), "insufficient_evidence"),
    }
    attempts.append(attempt)
    evidence["status"] = "verified"
    judged = Timeline(reader).judge(
        cohort,
        task_id,
        str(attempt["attempt_id"]),
        resolve(StoreLookup(reader), VERIFICATION_RESULT, verdict.id, obj.digest),
    )
    if judged.status == "not_pre_registered":
        raise RuleViolation(
            f"outcome not pre-registered, got {obj.digest} {judged.reason}, expected a result"
            " recorded after the cohort froze, after its plan and (for a successor) after its"
            " binding"
        )
    freeze_document(cohort, reader)  # the freeze gate on the new document
    return cohort


def record_outcome(
    store: Store,
    cohort_id: str,
    *,
    task: str,
    result: str,
    signer: Signer,
    attempt_id: str | None = None,
    signature: str | None = None,
) -> Written:
    """Append the frozen cohort again, now listing the VerificationResult ``result`` as
    an attempt of ``task``, attested by the authority (the definition is unchanged:
    evidence lies outside it). Refused when the outcome is not pre-registered."""
    doc = _outcome_plan(store, cohort_id, task, result, attempt_id, signature)
    prepared = prepare_value(doc, BENCHMARK_COHORT)
    items = [prepared, attest_prepared(prepared, signer)]
    store.policy.precheck(store, items)  # authority key, lifecycle: the ledger's own rules

    def precheck(reader: LedgerReader) -> None:
        if _outcome_plan(reader, cohort_id, task, result, attempt_id, signature) != doc:
            raise RuleViolation(
                "ledger changed during record-outcome, got another cohort document,"
                " expected the same"
            )

    results = store.append_many(items, precheck=precheck)
    return _written(items, results)


# --- audit -------------------------------------------------------------------------------


def quarantined_cohort(reader: LedgerReader, cohort_id: str) -> JSONObject | None:
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


def audit_stored_cohort(
    reader: LedgerReader, cohort_id: str, *, witness_keys: Sequence[WitnessKey] = ()
) -> CohortAuditReport:
    """Audit the newest stored document of ``cohort_id`` with standing against the ledger.

    Records without standing (``cohorts.standing``: unattested history, or records that
    replaying admission refuses, i.e. written past it) are never counted: the audit
    sees the ledger through ``StandingLookup`` and lists each such record about this
    cohort as a warning. A cohort stored only without standing is audited as such, with
    a warning saying why it has none. A cohort recorded only
    quarantined is audited as its stored bytes parse: the audit is total, so its schema
    violations are reported as findings (never "not found")."""
    import dataclasses

    from cohorts.findings import warning
    from cohorts.lookup import COHORT_BINDING

    standing = StandingLookup(reader)
    doc = standing.latest_cohort(cohort_id)
    extra: list[CohortFinding] = []
    counts = "counts"
    if doc is None:
        doc = standing.raw.latest_cohort(cohort_id)
        if doc is None:
            bad = quarantined_cohort(reader, cohort_id)
            if bad is not None:
                return in_time(
                    reader, audit_cohort(bad, standing, schema_validator), bad, witness_keys
                )
            require_cohort(reader, cohort_id)  # raises NotFound with the hint
            raise AssertionError("unreachable")
        counts = "refused by admission" if standing.refused(doc) else "unattested history"
        if not standing.refused(doc):
            extra.append(
                warning(
                    "cohort.unattested",
                    f"cohort {doc.jcs_digest} is unattested history, got no authority"
                    " attestation, expected one before it counts (provledger cohort freeze FILE)",
                )
            )
    for refused in standing.refused_of_kind(BENCHMARK_COHORT):
        refused_cohort = refused.model(Cohort)
        if refused_cohort.id == cohort_id:
            extra.append(
                warning(
                    "cohort.refused",
                    f"cohort {refused.jcs_digest} (stage {shown(refused_cohort.stage)})"
                    f" was written past admission and is not counted:"
                    f" {standing.why_not(refused)} (run provledger verify)",
                )
            )
    for kind, members in (
        (BURN_NOTICE, ("cohort_id",)),
        (COHORT_BINDING, ("successor_id", "predecessor_id")),
    ):
        for other in standing.unattested(kind):
            if any(other.value.get(m) == cohort_id for m in members):
                extra.append(
                    warning(
                        "relation.unattested",
                        f"{kind} {other.jcs_digest} is unattested history, got no authority"
                        " attestation, expected one before it counts (not counted)",
                    )
                )
    report = audit_cohort(doc.model(Cohort), standing, schema_validator)
    report = dataclasses.replace(
        report,
        findings=tuple(sorted((*report.findings, *extra), key=sort_key)),
        standing=counts,
    )
    return in_time(reader, report, doc.value, witness_keys)


def in_time(
    reader: LedgerReader,
    report: CohortAuditReport,
    cohort: Mapping[str, object],
    witness_keys: Sequence[WitnessKey] = (),
) -> CohortAuditReport:
    """``report`` with what log positions prove (``cohorts.timeline``): each listed
    outcome judged pre-registered or not (an error finding when not: it does not
    count), and when the ledger learnt the burn notice; cosignatures by
    ``witness_keys`` on the checkpoints shown are verified."""
    import dataclasses

    from cohorts.timeline import Timeline

    timeline = Timeline(reader, witness_keys=witness_keys)
    judged = []
    found: list[CohortFinding] = []
    for task in report.tasks:
        for attempt in task.attempts:
            verdict = timeline.judge(
                cohort, task.task, attempt.attempt, attempt.verification_result
            )
            judged.append(verdict)
            if verdict.status == "not_pre_registered":
                found.append(
                    error(
                        "attempt.preregistration",
                        f"outcome not pre-registered, got its VerificationResult"
                        f" {verdict.result.digest if verdict.result else '?'} {verdict.reason},"
                        " expected the cohort's frozen record, its plan and (for a successor)"
                        " its binding and calibration records in the log before it",
                        task.task,
                        attempt.attempt,
                    )
                )
            found += _forged_cosignatures(verdict.checkpoint, task.task, attempt.attempt)
    notice = report.burn.notice_digest if report.burn is not None else None
    recorded = None if notice is None else timeline.recorded(notice)
    if recorded is not None:
        found += _forged_cosignatures(recorded.checkpoint)
    return dataclasses.replace(
        report,
        preregistration=tuple(judged),
        burn_recorded=recorded,
        findings=tuple(sorted((*report.findings, *found), key=sort_key)),
    )


def _forged_cosignatures(
    checkpoint: CoveringCheckpoint | None, task: str | None = None, attempt: str | None = None
) -> list[CohortFinding]:
    """``checkpoint.cosignature``: a line in a trusted witness's name (a given
    --witness-key) that does not verify over the checkpoint shown: a forged line."""
    if checkpoint is None:
        return []
    return [
        error(
            "checkpoint.cosignature",
            f"witness cosignature on checkpoint size {checkpoint.size} does not verify, got a"
            f" line by {c.witness} at {c.time}, expected a valid cosignature under the given"
            " --witness-key",
            task,
            attempt,
        )
        for c in checkpoint.cosignatures
        if c.verified is False
    ]


def with_replay(reader: LedgerReader, report: CohortAuditReport) -> CohortAuditReport:
    """``report`` with every listed outcome the ledger holds (under the listed digest)
    re-judged from stored inputs (``cohorts.rejudge``); a replay that does not reproduce
    is a finding."""
    import dataclasses

    from cohorts.rejudge import AttemptReplay, replay_stored

    replays = []
    for task in report.tasks:
        for attempt in task.attempts:
            res = attempt.verification_result
            if res.doc is None or res.scheme is None:
                continue  # not stored, or stored under other bytes: reported already
            rejudged = replay_stored(reader, res.doc.jcs_digest)
            if rejudged is not None:
                replays.append(
                    AttemptReplay(task.task, attempt.attempt, res.doc.jcs_digest, rejudged)
                )
    found = [f for f in (r.finding() for r in replays) if f is not None]
    return dataclasses.replace(
        report,
        replay=tuple(replays),
        findings=tuple(sorted((*report.findings, *found), key=sort_key)),
    )


def attestation_state(reader: LedgerReader, digest: str) -> str:
    """One phrase: is ``digest`` attested, by whom, and does the attestation verify."""
    from ledger.trust.judgement import check_subject_attestations

    try:
        verdicts = check_subject_attestations(reader, digest, reader.policy)
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


def audit_report_json(
    report: CohortAuditReport, attested: dict[str, str], behavioral: dict[str, list[str]]
) -> dict[str, object]:
    """``cohort audit ID --json`` (and the audit the browse database stores): the report,
    the attestation state of each burn notice and binding it names (``audit_attestations``)
    and behavioral evidence per result (``audit_behavioral``).

    ``definition_digests`` (the recorded digest under both schemes) and
    ``attestation_states`` are the names every command uses for these; the report's own
    ``definition_digest`` (an object here, the recorded digest string elsewhere) and
    ``attestations`` (elsewhere a list of verdicts) stay for one release
    (``cohorts.cli.DEPRECATED_KEYS``, docs/COHORTS.md).
    """
    shown = report.to_json()
    return {
        **shown,
        "definition_digests": shown.get("definition_digest"),
        "attestation_states": attested,
        "attestations": attested,
        "behavioral": behavioral,
    }


def audit_behavioral(reader: LedgerReader, report: CohortAuditReport) -> dict[str, list[str]]:
    """Behavioral evidence recorded for each stored VerificationResult the report lists
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
    standing: str = "counts"

    def to_json(self) -> dict[str, object]:
        return {
            "cohort_id": self.cohort_id,
            "stage": self.stage,
            "definition_digest": self.definition_digest,
            "task_count": self.tasks,
            "record_digest": self.record_digest,
            "attested": self.attested,
            "standing": self.standing,
            # Deprecated names of earlier releases, same values (docs/COHORTS.md): ``id``
            # and ``tasks`` mean ``cohort_id`` and a list of task reports elsewhere.
            "id": self.cohort_id,
            "tasks": self.tasks,
        }


def cohort_rows(reader: LedgerReader) -> list[CohortRow]:
    """The newest record with standing of every stored cohort (else its newest record,
    with ``standing`` saying why it does not count), sorted by id.

    ``attested``: the state of the cohort record's attestations, and for a burned
    cohort the state of its burn notice's.
    """
    view = StandingLookup(reader)
    latest: dict[str, StoredDoc] = {}
    counted: dict[str, StoredDoc] = {}
    for doc in view.raw.of_kind(BENCHMARK_COHORT):
        cid = as_str(doc.model(Cohort).id)
        if cid is not None:
            latest[cid] = doc
    for doc in view.of_kind(BENCHMARK_COHORT):  # in the order they gained standing
        cid = as_str(doc.model(Cohort).id)
        if cid is not None:
            counted[cid] = doc
    rows: list[CohortRow] = []
    for cid, doc in sorted({**latest, **counted}.items()):
        state = attestation_state(reader, doc.jcs_digest)
        notices = burn_notices_for(reader, cid)
        if notices:
            state = (
                f"record {state}; burn notice {attestation_state(reader, notices[-1].jcs_digest)}"
            )
        cohort = doc.model(Cohort)
        rows.append(
            CohortRow(
                cid,
                as_str(cohort.stage),
                cohort.recorded_definition_digest,
                cohort.task_count,
                doc.jcs_digest,
                state,
                "counts" if cid in counted else view.why_not(doc) or "no standing",
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
