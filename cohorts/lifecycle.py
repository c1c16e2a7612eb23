"""Cohort stages, transitions, frozen-definition immutability and the freeze gate.

Stages move one step forward: scaffold -> collecting -> frozen -> burned. Staying at a
stage is allowed (a scaffold is edited, a frozen cohort gains evidence); skipping a
stage or going back is refused. Once a cohort is frozen or burned its definition digest
is fixed: a later document with the same id and another definition is refused. A
cohort the ledger has not seen before may arrive at any stage (imports of history).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from cohorts.definition import (
    DefinitionDigests,
    definition_digests,
    recorded_definition_digest,
)
from cohorts.errors import CohortInputError, DefinitionError, GateError, LifecycleError
from cohorts.findings import CohortFinding, error, errors, scheme_text
from cohorts.lookup import BENCHMARK_COHORT, CohortLookup, Validator
from cohorts.task_checks import check_task_refs, task_label
from cohorts.upstream import FULL_GIT_SHA
from verifiers.model import CohortView, Task
from verifiers.model.json import json_key, shown

Stage = Literal["scaffold", "collecting", "frozen", "burned"]
STAGES: tuple[Stage, ...] = ("scaffold", "collecting", "frozen", "burned")
#: Stages whose definition digest is fixed.
FIXED_STAGES: frozenset[str] = frozenset({"frozen", "burned"})
#: (old, new) pairs that are allowed; everything else is refused.
TRANSITIONS: frozenset[tuple[str, str]] = frozenset(
    {(s, s) for s in STAGES}
    | {("scaffold", "collecting"), ("collecting", "frozen"), ("frozen", "burned")}
)


def check_stage(stage: object) -> Stage:
    """``stage`` if it names a stage, else ``CohortInputError``."""
    if stage not in STAGES:
        raise CohortInputError(
            f"unknown cohort stage, got {shown(stage)}, expected one of {', '.join(STAGES)}"
        )
    return stage


def allowed_next(stage: str) -> tuple[Stage, ...]:
    """The stages a cohort at ``stage`` may move to (itself included)."""
    check_stage(stage)
    return tuple(s for s in STAGES if (stage, s) in TRANSITIONS)


def check_transition(old_stage: str, new_stage: str) -> None:
    """Refuse (``LifecycleError``) any move other than staying or one step forward."""
    check_stage(old_stage)
    check_stage(new_stage)
    if (old_stage, new_stage) not in TRANSITIONS:
        raise LifecycleError(
            f"stage transition refused, got {old_stage} -> {new_stage},"
            f" expected {old_stage} -> one of {', '.join(allowed_next(old_stage))}"
        )


def _digests(cohort: Mapping[str, object], which: str) -> DefinitionDigests:
    try:
        return definition_digests(cohort)
    except DefinitionError as exc:
        raise CohortInputError(f"{which} cohort has no computable definition: {exc}") from None


def check_update(previous: Mapping[str, object] | None, new: Mapping[str, object]) -> None:
    """Refuse ``new`` as the next document of the cohort ``previous`` last recorded.

    Checks the stage transition and, when ``previous`` is frozen or burned, that the
    definition (recomputed, and as recorded when both record one) is unchanged.
    """
    after_view = CohortView.of(new)
    new_stage = check_stage(after_view.stage)
    if previous is None:
        return
    before_view = CohortView.of(previous)
    if before_view.id != after_view.id:
        raise CohortInputError(
            f"cohort update names another cohort, got id {shown(after_view.id)},"
            f" expected {shown(before_view.id)}"
        )
    old_stage = check_stage(before_view.stage)
    check_transition(old_stage, new_stage)
    if old_stage not in FIXED_STAGES:
        return
    before = _digests(previous, "previous")
    after = _digests(new, "new")
    if after.legacy != before.legacy or after.jcs != before.jcs:
        raise LifecycleError(
            f"frozen definition of {shown(after_view.id)} changed, got {after.legacy},"
            f" expected {before.legacy}"
        )
    old_recorded = recorded_definition_digest(previous)
    new_recorded = recorded_definition_digest(new)
    if old_recorded is not None and new_recorded is not None and old_recorded != new_recorded:
        raise LifecycleError(
            f"frozen definition_digest of {shown(after_view.id)} changed, got {new_recorded},"
            f" expected {old_recorded}"
        )


def definition_findings(cohort: Mapping[str, object], *, required: bool) -> list[CohortFinding]:
    """Recorded ``definition_digest`` vs the recomputed one (either scheme).

    ``required``: a missing recording is an error (frozen/burned); otherwise nothing.
    """
    recorded = recorded_definition_digest(cohort)
    try:
        digests = definition_digests(cohort)
    except DefinitionError as exc:
        return [error("cohort.definition_digest", f"definition not computable: {exc}")]
    if recorded is None:
        if required:
            return [
                error(
                    "cohort.definition_digest",
                    f"definition_digest not recorded, got nothing, expected {digests.legacy}",
                )
            ]
        return []
    scheme = digests.scheme_for(recorded)
    if scheme is None:
        return [
            error(
                "cohort.definition_digest",
                f"definition digest drift, got recorded {recorded}, expected legacy"
                f" {digests.legacy} or JCS {digests.jcs}",
            )
        ]
    return [
        CohortFinding(
            "cohort.definition_digest",
            "info",
            f"definition digest reproduces, got {recorded} under {scheme_text(scheme)},"
            " expected a match under either scheme",
            scheme=scheme,
        )
    ]


def structure_findings(cohort: Mapping[str, object]) -> list[CohortFinding]:
    """Upstream's cross-task rules: unique task ids, no WorkUnit counted twice,
    unique attempt ids, attempts only on verified tasks."""
    found: list[CohortFinding] = []
    seen_ids: set[str] = set()
    seen_items: dict[str, str] = {}
    for task in CohortView.of(cohort).tasks:
        label = task_label(task)
        if label in seen_ids:
            found.append(
                error("cohort.task_ids", f"duplicate task id, got {label} twice, expected unique")
            )
        seen_ids.add(label)
        item = (
            task.source_repository,
            task.source_revision,
            task.work_unit.id,
            task.work_unit.version,
        )
        key = json_key(item)
        if key in seen_items:
            found.append(
                error(
                    "cohort.work_items",
                    f"WorkUnit counted twice, got {shown(item[2])} v{shown(item[3])} also in"
                    f" {seen_items[key]}, expected each (source, WorkUnit) once",
                    label,
                )
            )
        else:
            seen_items[key] = label
        attempts = task.attempts
        attempt_ids = [a.attempt_id for a in attempts]
        if len(attempt_ids) != len(set(attempt_ids)):
            found.append(
                error(
                    "task.attempt_ids",
                    f"duplicate attempt ids, got {attempt_ids}, expected unique within the task",
                    label,
                )
            )
        status = task.evidence_status
        if status != "verified" and attempts:
            found.append(
                error(
                    "task.evidence.attempts",
                    f"analyzed attempts on a {shown(status)} task, got {len(attempts)},"
                    " expected none unless the task is verified",
                    label,
                )
            )
    return found


def revision_finding(task: Task, label: str | None) -> CohortFinding | None:
    """A task's source revision must be an immutable full 40-hex commit id."""
    revision = task.source_revision
    if isinstance(revision, str) and FULL_GIT_SHA.match(revision):
        return None
    return error(
        "task.source.revision",
        f"source revision not immutable, got {shown(revision)}, expected a full 40-hex commit id",
        label,
    )


def _revision_findings(cohort: Mapping[str, object]) -> list[CohortFinding]:
    found = (revision_finding(task, task_label(task)) for task in CohortView.of(cohort).tasks)
    return [finding for finding in found if finding is not None]


def size_findings(cohort: Mapping[str, object]) -> list[CohortFinding]:
    """At least ``minimum_final_tasks`` tasks; every required family represented."""
    found: list[CohortFinding] = []
    view = CohortView.of(cohort)
    tasks = view.tasks
    minimum = view.minimum_final_tasks
    if not isinstance(minimum, int) or isinstance(minimum, bool) or len(tasks) < minimum:
        found.append(
            error(
                "cohort.minimum_tasks",
                f"too few tasks, got {len(tasks)}, expected at least {shown(minimum)}",
            )
        )
    families = {json_key(task.family) for task in tasks}
    missing = [f for f in view.required_families if json_key(f) not in families]
    if missing:
        found.append(
            error(
                "cohort.families",
                f"required families not covered, got none for {missing},"
                " expected at least one task per required family",
            )
        )
    return found


def freeze_findings(
    cohort: Mapping[str, object], lookup: CohortLookup, validate: Validator
) -> list[CohortFinding]:
    """Every check that decides whether ``cohort`` may be (or is validly) frozen.

    Returns errors for failures and info findings for digest matches (naming the
    scheme). The cohort may be at scaffold/collecting (a freeze candidate) or already
    frozen; a burned cohort cannot be frozen. No check stops the others.
    """
    found: list[CohortFinding] = []
    view = CohortView.of(cohort)
    stage = view.stage
    if stage not in ("scaffold", "collecting", "frozen"):
        found.append(
            error(
                "cohort.stage",
                f"cohort cannot be frozen from stage {shown(stage)},"
                " expected scaffold, collecting or frozen",
            )
        )
    found += [
        error(
            "cohort.schema",
            f"{BENCHMARK_COHORT} schema violation, got {message},"
            f" expected a schema-valid {BENCHMARK_COHORT}",
        )
        for message in validate(BENCHMARK_COHORT, cohort)
    ]
    found += definition_findings(cohort, required=False)
    found += structure_findings(cohort)
    found += _revision_findings(cohort)
    for task in view.tasks:
        found += check_task_refs(task, lookup, validate)[1]
    found += size_findings(cohort)
    return found


def require_freezable(
    cohort: Mapping[str, object], lookup: CohortLookup, validate: Validator
) -> list[CohortFinding]:
    """``freeze_findings``, raising ``GateError`` with every error when any failed."""
    found = freeze_findings(cohort, lookup, validate)
    failed = errors(found)
    if failed:
        raise GateError("freeze", failed)
    return found


def freeze(
    cohort: Mapping[str, object], lookup: CohortLookup, validate: Validator
) -> dict[str, object]:
    """The frozen document: ``cohort`` with stage ``frozen`` and its legacy definition
    digest recorded (upstream's convention), after the gate passed on that document."""
    frozen = dict(cohort)
    frozen["stage"] = "frozen"
    try:
        frozen["definition_digest"] = definition_digests(cohort).legacy
    except DefinitionError as exc:
        raise GateError(
            "freeze", [error("cohort.definition_digest", f"definition not computable: {exc}")]
        ) from None
    if CohortView.of(cohort).stage == "frozen" and "definition_digest" in cohort:
        frozen["definition_digest"] = cohort["definition_digest"]
    require_freezable(frozen, lookup, validate)
    return frozen
