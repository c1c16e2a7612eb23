"""Checks of one cohort task's WorkUnit and EvaluatorPlan against the ledger.

Shared by the freeze gate and the audit. For each reference: present (by digest, else
by id), digest matches under either scheme (which one is reported), id/version agree,
schema-valid, and the plan is bound to the task's WorkUnit (id, version, digest, source
revision) with exactly the WorkUnit's required validators. Missing objects are reported
once; checks that need them are then skipped rather than reported twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from cohorts.findings import CohortFinding, error, info, scheme_text
from cohorts.lookup import (
    EVALUATOR_PLAN,
    WORK_UNIT,
    CohortLookup,
    Resolution,
    Validator,
    quarantine_message,
    quarantined,
    resolve,
)
from cohorts.upstream import required_validator_ids
from verifiers.model import Document, EvaluatorPlan, EvaluatorRef, Ref, Task, WorkUnit
from verifiers.model.json import as_int, as_str, member, shown, str_set


@dataclass(frozen=True)
class TaskRefs:
    """What a task's references resolved to."""

    task_id: str
    work_unit: Resolution
    plan: Resolution
    visibility: str | None


def task_label(task: Task) -> str:
    """The task id, or a positional label when the id is missing."""
    task_id = as_str(task.id)
    return task_id if task_id else f"$.tasks[{task.index}]"


def _schema(
    validate: Validator | None, kind: str, doc: Document, code: str, task: str
) -> list[CohortFinding]:
    if validate is None:
        return []
    return [
        error(code, f"{kind} schema violation, got {message}, expected a schema-valid {kind}", task)
        for message in validate(kind, doc.value)
    ]


def _digest_finding(res: Resolution, code: str, what: str, task: str) -> CohortFinding:
    assert res.doc is not None
    if res.scheme is not None:
        return CohortFinding(
            code,
            "info",
            f"{what} digest matches, got {res.digest} under {scheme_text(res.scheme)},"
            " expected a match under either scheme",
            task,
            None,
            res.scheme,
        )
    return error(
        code,
        f"{what} digest mismatch for id {res.object_id}, got stored legacy"
        f" {res.doc.legacy_digest} and JCS {res.doc.jcs_digest}, expected {res.digest}",
        task,
    )


def _drift(code: str, what: str, got: object, expected: object, label: str) -> CohortFinding:
    return error(code, f"{what} drift, got {shown(got)}, expected {shown(expected)}", label)


def check_work_unit(
    task: Task, label: str, lookup: CohortLookup, validate: Validator | None
) -> tuple[Resolution, list[CohortFinding]]:
    ref = task.work_unit
    res = resolve(lookup, WORK_UNIT, ref.id, ref.digest, ref.version)
    doc = res.model(WorkUnit)
    if doc is None:
        return res, [_missing_work_unit(ref, label, lookup)]
    found: list[CohortFinding] = [_digest_finding(res, "task.work_unit.digest", "WorkUnit", label)]
    if doc.id != ref.id:
        found.append(_drift("task.work_unit.id", "WorkUnit id", doc.id, ref.id, label))
    if doc.version != ref.version:
        found.append(
            _drift("task.work_unit.version", "WorkUnit version", doc.version, ref.version, label)
        )
    found += _schema(validate, WORK_UNIT, doc, "task.work_unit.schema", label)
    revision = task.source_revision
    if doc.source_revision != revision:
        found.append(
            error(
                "task.work_unit.source_revision",
                f"WorkUnit source revision drift, got {shown(doc.source_revision)},"
                f" expected the task's {shown(revision)}",
                label,
            )
        )
    return res, found


def _missing_work_unit(ref: Ref, label: str, lookup: CohortLookup) -> CohortFinding:
    """Stored only as quarantined (a schema finding), or not stored at all."""
    bad = quarantined(lookup, WORK_UNIT, ref.id, ref.digest, ref.version)
    if bad is not None:
        return error(
            "task.work_unit.schema",
            quarantine_message("WorkUnit", WORK_UNIT, bad, ref.digest),
            label,
        )
    return error(
        "task.work_unit.missing",
        f"WorkUnit not in ledger, got nothing for id {shown(ref.id)}"
        f" version {shown(ref.version)} or digest {shown(ref.digest)},"
        " expected it stored",
        label,
    )


def check_plan(
    task: Task,
    label: str,
    work_unit: Resolution,
    lookup: CohortLookup,
    validate: Validator | None,
) -> tuple[Resolution, list[CohortFinding]]:
    evaluator = task.evaluator
    res = resolve(lookup, EVALUATOR_PLAN, evaluator.plan_id, evaluator.plan_digest)
    plan = res.model(EvaluatorPlan)
    if plan is None:
        return res, [_missing_plan(evaluator, label, lookup)]
    found: list[CohortFinding] = [_digest_finding(res, "task.plan.digest", "EvaluatorPlan", label)]
    if plan.id != evaluator.plan_id:
        found.append(_drift("task.plan.id", "EvaluatorPlan id", plan.id, evaluator.plan_id, label))
    found += _schema(validate, EVALUATOR_PLAN, plan, "task.plan.schema", label)
    if plan.backend_type != evaluator.backend:
        found.append(
            _drift(
                "task.plan.backend",
                "EvaluatorPlan backend",
                plan.backend_type,
                evaluator.backend,
                label,
            )
        )
    found += binding_findings(task, plan, work_unit, label, "task.plan.binding")
    if work_unit.value is not None:
        wanted = required_validator_ids(work_unit.value)
        have = str_set(plan.required_validator_ids)
        if have != wanted:
            found.append(
                error(
                    "task.plan.validators",
                    f"EvaluatorPlan required validators drift, got {sorted(have)},"
                    f" expected the WorkUnit's required {sorted(wanted)}",
                    label,
                )
            )
    return res, found


def _missing_plan(evaluator: EvaluatorRef, label: str, lookup: CohortLookup) -> CohortFinding:
    """Stored only as quarantined, hidden by design (info), or not stored at all."""
    bad = quarantined(lookup, EVALUATOR_PLAN, evaluator.plan_id, evaluator.plan_digest)
    if bad is not None:
        return error(
            "task.plan.schema",
            quarantine_message("EvaluatorPlan", EVALUATOR_PLAN, bad, evaluator.plan_digest),
            label,
        )
    if evaluator.visibility == "hidden":
        return info(
            "task.plan.hidden",
            "hidden EvaluatorPlan not in ledger, got only its digest commitment"
            f" {shown(evaluator.plan_digest)}, expected nothing more for a"
            " hidden plan",
            label,
        )
    return error(
        "task.plan.missing",
        f"EvaluatorPlan not in ledger, got nothing for id {shown(evaluator.plan_id)}"
        f" or digest {shown(evaluator.plan_digest)}, expected it stored",
        label,
    )


def binding_problems(
    task: Task, plan: EvaluatorPlan, work_unit: Resolution
) -> list[tuple[str, str]]:
    """(member, message) for every way ``plan.binding`` disagrees with the task.

    The WorkUnit digest may match the recorded digest or, when the stored WorkUnit
    matched that recording, either scheme's digest of the stored document.
    """
    ref = task.work_unit
    bound = plan.bound_work_unit
    problems: list[tuple[str, str]] = []
    if bound.id != ref.id:
        problems.append(
            (
                "work_unit_id",
                f"plan bound to WorkUnit id {shown(bound.id)}, expected {shown(ref.id)}",
            )
        )
    if bound.version != ref.version:
        problems.append(
            (
                "work_unit_version",
                f"plan bound to WorkUnit version {shown(bound.version)},"
                f" expected {shown(ref.version)}",
            )
        )
    if not member(bound.digest, work_unit.digests()):
        problems.append(
            (
                "work_unit_digest",
                f"plan bound to WorkUnit digest {shown(bound.digest)},"
                f" expected {shown(ref.digest)}",
            )
        )
    revision = task.source_revision
    if plan.bound_source_revision != revision:
        problems.append(
            (
                "source_revision",
                f"plan bound to source revision {shown(plan.bound_source_revision)},"
                f" expected the task's {shown(revision)}",
            )
        )
    wu = work_unit.model(WorkUnit)
    wu_revision = None if wu is None else wu.source_revision
    # Reported separately only when the WorkUnit disagrees with the task as well.
    if (
        wu is not None
        and wu_revision is not None
        and wu_revision != revision
        and plan.bound_source_revision != wu_revision
    ):
        problems.append(
            (
                "work_unit_source_revision",
                f"plan bound to source revision {shown(plan.bound_source_revision)},"
                f" expected the WorkUnit's {shown(wu_revision)}",
            )
        )
    return problems


def binding_findings(
    task: Task,
    plan: EvaluatorPlan,
    work_unit: Resolution,
    label: str,
    prefix: str,
) -> list[CohortFinding]:
    return [
        error(f"{prefix}.{member}", f"EvaluatorPlan binding drift, {message}", label)
        for member, message in binding_problems(task, plan, work_unit)
    ]


def check_task_refs(
    task: Task, lookup: CohortLookup, validate: Validator | None
) -> tuple[TaskRefs, list[CohortFinding]]:
    """All reference checks of one task."""
    label = task_label(task)
    work_unit, found = check_work_unit(task, label, lookup, validate)
    plan, plan_found = check_plan(task, label, work_unit, lookup, validate)
    return TaskRefs(label, work_unit, plan, task.evaluator.visibility), found + plan_found


def plan_facts(plan: EvaluatorPlan | None) -> dict[str, object]:
    """Plan schema version and verifier identity/version (for reports)."""
    if plan is None:
        return {"schema_version": None, "verifier": None}
    verifier_id, adapter, adapter_version = plan.verifier
    return {
        "schema_version": plan.schema_version,
        "verifier": {
            "id": as_str(verifier_id),
            "adapter": as_str(adapter),
            "adapter_version": as_str(adapter_version),
        },
    }


def work_unit_facts(work_unit: WorkUnit | None) -> dict[str, object]:
    if work_unit is None:
        return {"schema_version": None, "version": None}
    return {"schema_version": work_unit.schema_version, "version": as_int(work_unit.version)}
