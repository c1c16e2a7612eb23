"""Checks of one cohort task's WorkUnit and EvaluatorPlan against the ledger.

Shared by the freeze gate and the audit. For each reference: present (by digest, else
by id), digest matches under either scheme (which one is reported), id/version agree,
schema-valid, and the plan is bound to the task's WorkUnit (id, version, digest, source
revision) with exactly the WorkUnit's required validators. Missing objects are reported
once; checks that need them are then skipped rather than reported twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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
from verifiers.model.json import as_int, as_map, as_str, at, member, shown, str_set


@dataclass(frozen=True)
class TaskRefs:
    """What a task's references resolved to."""

    task_id: str
    work_unit: Resolution
    plan: Resolution
    visibility: str | None


def task_label(task: Mapping[str, object], index: int) -> str:
    """The task id, or a positional label when the id is missing."""
    task_id = as_str(task.get("id"))
    return task_id if task_id else f"$.tasks[{index}]"


def _schema(
    validate: Validator | None, kind: str, doc: Mapping[str, object], code: str, task: str
) -> list[CohortFinding]:
    if validate is None:
        return []
    return [
        error(code, f"{kind} schema violation, got {message}, expected a schema-valid {kind}", task)
        for message in validate(kind, doc)
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


def check_work_unit(
    task: Mapping[str, object], label: str, lookup: CohortLookup, validate: Validator | None
) -> tuple[Resolution, list[CohortFinding]]:
    ref = as_map(task.get("work_unit"))
    res = resolve(lookup, WORK_UNIT, ref.get("id"), ref.get("digest"), ref.get("version"))
    if res.doc is None:
        bad = quarantined(lookup, WORK_UNIT, ref.get("id"), ref.get("digest"), ref.get("version"))
        if bad is not None:
            return res, [
                error(
                    "task.work_unit.schema",
                    quarantine_message("WorkUnit", WORK_UNIT, bad, ref.get("digest")),
                    label,
                )
            ]
        return res, [
            error(
                "task.work_unit.missing",
                f"WorkUnit not in ledger, got nothing for id {shown(ref.get('id'))}"
                f" version {shown(ref.get('version'))} or digest {shown(ref.get('digest'))},"
                " expected it stored",
                label,
            )
        ]
    doc = res.doc.value
    found: list[CohortFinding] = [_digest_finding(res, "task.work_unit.digest", "WorkUnit", label)]
    if doc.get("id") != ref.get("id"):
        found.append(
            error(
                "task.work_unit.id",
                f"WorkUnit id drift, got {shown(doc.get('id'))}, expected {shown(ref.get('id'))}",
                label,
            )
        )
    if doc.get("version") != ref.get("version"):
        found.append(
            error(
                "task.work_unit.version",
                f"WorkUnit version drift, got {shown(doc.get('version'))},"
                f" expected {shown(ref.get('version'))}",
                label,
            )
        )
    found += _schema(validate, WORK_UNIT, doc, "task.work_unit.schema", label)
    revision = at(task, "source", "revision")
    stored_revision = at(doc, "provenance", "source_revision")
    if stored_revision != revision:
        found.append(
            error(
                "task.work_unit.source_revision",
                f"WorkUnit source revision drift, got {shown(stored_revision)},"
                f" expected the task's {shown(revision)}",
                label,
            )
        )
    return res, found


def check_plan(
    task: Mapping[str, object],
    label: str,
    work_unit: Resolution,
    lookup: CohortLookup,
    validate: Validator | None,
) -> tuple[Resolution, list[CohortFinding]]:
    evaluator = as_map(task.get("evaluator"))
    visibility = as_str(evaluator.get("visibility"))
    res = resolve(lookup, EVALUATOR_PLAN, evaluator.get("plan_id"), evaluator.get("plan_digest"))
    if res.doc is None:
        bad = quarantined(
            lookup, EVALUATOR_PLAN, evaluator.get("plan_id"), evaluator.get("plan_digest")
        )
        if bad is not None:
            return res, [
                error(
                    "task.plan.schema",
                    quarantine_message(
                        "EvaluatorPlan", EVALUATOR_PLAN, bad, evaluator.get("plan_digest")
                    ),
                    label,
                )
            ]
        if visibility == "hidden":
            return res, [
                info(
                    "task.plan.hidden",
                    "hidden EvaluatorPlan not in ledger, got only its digest commitment"
                    f" {shown(evaluator.get('plan_digest'))}, expected nothing more for a"
                    " hidden plan",
                    label,
                )
            ]
        return res, [
            error(
                "task.plan.missing",
                f"EvaluatorPlan not in ledger, got nothing for id {shown(evaluator.get('plan_id'))}"
                f" or digest {shown(evaluator.get('plan_digest'))}, expected it stored",
                label,
            )
        ]
    plan = res.doc.value
    found: list[CohortFinding] = [_digest_finding(res, "task.plan.digest", "EvaluatorPlan", label)]
    if plan.get("id") != evaluator.get("plan_id"):
        found.append(
            error(
                "task.plan.id",
                f"EvaluatorPlan id drift, got {shown(plan.get('id'))},"
                f" expected {shown(evaluator.get('plan_id'))}",
                label,
            )
        )
    found += _schema(validate, EVALUATOR_PLAN, plan, "task.plan.schema", label)
    backend = at(plan, "backend", "type")
    if backend != evaluator.get("backend"):
        found.append(
            error(
                "task.plan.backend",
                f"EvaluatorPlan backend drift, got {shown(backend)},"
                f" expected {shown(evaluator.get('backend'))}",
                label,
            )
        )
    found += binding_findings(task, plan, work_unit, label, "task.plan.binding")
    if work_unit.value is not None:
        wanted = required_validator_ids(work_unit.value)
        have = str_set(plan.get("required_validator_ids"))
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


def binding_problems(
    task: Mapping[str, object], plan: Mapping[str, object], work_unit: Resolution
) -> list[tuple[str, str]]:
    """(member, message) for every way ``plan.binding`` disagrees with the task.

    The WorkUnit digest may match the recorded digest or, when the stored WorkUnit
    matched that recording, either scheme's digest of the stored document.
    """
    ref = as_map(task.get("work_unit"))
    binding = as_map(plan.get("binding"))
    problems: list[tuple[str, str]] = []
    if binding.get("work_unit_id") != ref.get("id"):
        problems.append(
            (
                "work_unit_id",
                f"plan bound to WorkUnit id {shown(binding.get('work_unit_id'))},"
                f" expected {shown(ref.get('id'))}",
            )
        )
    if binding.get("work_unit_version") != ref.get("version"):
        problems.append(
            (
                "work_unit_version",
                f"plan bound to WorkUnit version {shown(binding.get('work_unit_version'))},"
                f" expected {shown(ref.get('version'))}",
            )
        )
    if not member(binding.get("work_unit_digest"), work_unit.digests()):
        problems.append(
            (
                "work_unit_digest",
                f"plan bound to WorkUnit digest {shown(binding.get('work_unit_digest'))},"
                f" expected {shown(ref.get('digest'))}",
            )
        )
    revision = at(task, "source", "revision")
    if binding.get("source_revision") != revision:
        problems.append(
            (
                "source_revision",
                f"plan bound to source revision {shown(binding.get('source_revision'))},"
                f" expected the task's {shown(revision)}",
            )
        )
    wu_revision = at(work_unit.value, "provenance", "source_revision")
    # Reported separately only when the WorkUnit disagrees with the task as well.
    if (
        work_unit.value is not None
        and wu_revision is not None
        and wu_revision != revision
        and binding.get("source_revision") != wu_revision
    ):
        problems.append(
            (
                "work_unit_source_revision",
                f"plan bound to source revision {shown(binding.get('source_revision'))},"
                f" expected the WorkUnit's {shown(wu_revision)}",
            )
        )
    return problems


def binding_findings(
    task: Mapping[str, object],
    plan: Mapping[str, object],
    work_unit: Resolution,
    label: str,
    prefix: str,
) -> list[CohortFinding]:
    return [
        error(f"{prefix}.{member}", f"EvaluatorPlan binding drift, {message}", label)
        for member, message in binding_problems(task, plan, work_unit)
    ]


def check_task_refs(
    task: Mapping[str, object],
    index: int,
    lookup: CohortLookup,
    validate: Validator | None,
) -> tuple[TaskRefs, list[CohortFinding]]:
    """All reference checks of one task."""
    label = task_label(task, index)
    work_unit, found = check_work_unit(task, label, lookup, validate)
    plan, plan_found = check_plan(task, label, work_unit, lookup, validate)
    visibility = as_str(at(task, "evaluator", "visibility"))
    return TaskRefs(label, work_unit, plan, visibility), found + plan_found


def plan_facts(plan: Mapping[str, object] | None) -> dict[str, Any]:
    """Plan schema version and verifier identity/version (for reports)."""
    if plan is None:
        return {"schema_version": None, "verifier": None}
    verifier = as_map(plan.get("verifier"))
    return {
        "schema_version": as_str(plan.get("schema_version")),
        "verifier": {
            "id": as_str(verifier.get("id")),
            "adapter": as_str(verifier.get("adapter")),
            "adapter_version": as_str(verifier.get("adapter_version")),
        },
    }


def work_unit_facts(work_unit: Mapping[str, object] | None) -> dict[str, Any]:
    if work_unit is None:
        return {"schema_version": None, "version": None}
    return {
        "schema_version": as_str(work_unit.get("schema_version")),
        "version": as_int(work_unit.get("version")),
    }
