"""A successor's draft from a burned cohort in the ledger: files for a person to review.

``draft_successor`` reads the burned cohort (with standing), the burn notices the
authority attested for it and each task's stored plan, and returns a successor cohort
(stage ``collecting``: ``cohort freeze`` fixes it, recording its definition digest) with
one plan per task at a newer version (``verifiers.plan_upgrade``). Rules:

- every task is carried over (same task id, WorkUnit and source), except those named
  by ``drop`` (and, with ``drop_banned``, those the burn bans);
- a task the burn bans from held-out use (``never_again_held_out``) that was
  ``held_out`` becomes ``pilot``: the successor gate would refuse it otherwise;
- evidence starts empty (``pending``), seeded-negative evidence too;
- the successor claims its predecessor's definition digest in
  ``extensions["org.idkmesh.phase_b2"].predecessor_burned_definition_digest`` (upstream's
  convention, which the audit and the gate read);
- plan ids are ``<successor id>/<task slug>/evaluator``; plan files are
  ``evaluators/<task slug>.evaluator-plan.json``, the paths the cohort records.

Nothing is written to the ledger: drafting is the person's step before ``cohort
freeze``. The draft is not checked against the source revision (the ledger does not
hold it): removed-line substrings are the caller's judgement.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from cohorts.burn import burn_facts_from_extensions, never_again_tasks
from cohorts.definition import definition_digest_legacy, recorded_definition_digest
from cohorts.errors import CohortInputError, LifecycleError
from cohorts.lookup import EVALUATOR_PLAN, resolve
from cohorts.service import burn_notices_for, require_cohort
from cohorts.store_lookup import StoreLookup
from ledger.encoding.digest import legacy_digest
from ledger.store.base import LedgerReader
from verifiers.model import Cohort, CohortView, Task
from verifiers.model.json import as_map, as_str, shown
from verifiers.plan_upgrade import PlanUpgradeError, upgraded_plan

CLAIM_NAMESPACE = "org.idkmesh.phase_b2"
CLAIM_KEY = "predecessor_burned_definition_digest"


@dataclass(frozen=True)
class DraftTask:
    """What the draft did with one task of the burned cohort."""

    task: str
    carried: bool
    banned: bool
    split: str | None
    note: str
    plan_id: str | None = None
    plan_version: str | None = None
    from_version: str | None = None
    plan_file: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "task": self.task,
            "carried": self.carried,
            "banned": self.banned,
            "split": self.split,
            "note": self.note,
            "plan_id": self.plan_id,
            "plan_version": self.plan_version,
            "from_plan_version": self.from_version,
            "plan_file": self.plan_file,
        }


@dataclass(frozen=True)
class Draft:
    """The successor cohort, its plan files (path -> value) and what happened per task."""

    predecessor_id: str
    predecessor_digest: str | None
    cohort: dict[str, object]
    plans: dict[str, dict[str, object]] = field(default_factory=dict)
    tasks: tuple[DraftTask, ...] = ()

    @property
    def definition_digest(self) -> str:
        """The digest ``cohort freeze`` records (upstream's scheme)."""
        return definition_digest_legacy(self.cohort)

    def to_json(self) -> dict[str, object]:
        return {
            "cohort_id": CohortView.of(self.cohort).id,
            "predecessor_id": self.predecessor_id,
            "predecessor_definition_digest": self.predecessor_digest,
            "definition_digest": self.definition_digest,
            "stage": CohortView.of(self.cohort).stage,
            "plan_files": sorted(self.plans),
            "tasks": [t.to_json() for t in self.tasks],
        }


def _slug(task_id: str) -> str:
    return task_id.rsplit("/", 1)[-1]


def banned_tasks(reader: LedgerReader, cohort_id: str, cohort: Mapping[str, object]) -> set[str]:
    """Tasks the burn bans from held-out use: from the attested burn notices, else from
    upstream's burn facts in the cohort's extensions."""
    notices = burn_notices_for(reader, cohort_id)
    if notices:
        banned: set[str] = set()
        for notice in notices:
            banned |= never_again_tasks(notice.value)
        return banned
    facts = burn_facts_from_extensions(cohort)
    return {t.task for t in facts.never_again_held_out} if facts is not None else set()


def draft_successor(
    reader: LedgerReader,
    burned_id: str,
    successor_id: str,
    *,
    version: str = "0.4",
    title: str | None = None,
    removed: Mapping[str, Sequence[str]] | None = None,
    drop: Sequence[str] = (),
    drop_banned: bool = False,
) -> Draft:
    """The successor draft of the burned cohort ``burned_id`` (module docstring)."""
    doc = require_cohort(reader, burned_id)
    burned = doc.value
    stage = doc.model(Cohort).stage
    if stage != "burned" and not burn_notices_for(reader, burned_id):
        raise LifecycleError(
            f"successor of {burned_id}, got stage {shown(stage)}, expected a"
            f" burned cohort (provledger cohort burn {burned_id} --reason TEXT)"
        )
    removed = removed or {}
    tasks_by_id = {t.label: t for t in Task.all_of(burned)}
    unknown = sorted((set(drop) | set(removed)) - set(tasks_by_id))
    if unknown:
        raise CohortInputError(
            f"task, got {unknown}, expected tasks of {burned_id}: {sorted(tasks_by_id)}"
        )
    banned = banned_tasks(reader, burned_id, burned)
    lookup = StoreLookup(reader)
    tasks: list[dict[str, object]] = []
    plans: dict[str, dict[str, object]] = {}
    done: list[DraftTask] = []
    problems: list[str] = []
    for task in Task.all_of(burned):
        task_id = task.label
        is_banned = task_id in banned
        if task_id in drop or (drop_banned and is_banned):
            why = "dropped (--drop)" if task_id in drop else "dropped: the burn bans it"
            done.append(DraftTask(task_id, False, is_banned, None, why))
            continue
        old = resolve(lookup, EVALUATOR_PLAN, task.evaluator.plan_id, task.plan_digest)
        if old.doc is None:
            raise CohortInputError(
                f"plan of task {task_id}, got nothing for {shown(task.plan_digest)}, expected"
                " the burned plan stored (its checks are what the successor keeps);"
                f" or leave the task out: --drop {task_id}"
            )
        plan_id = f"{successor_id}/{_slug(task_id)}/evaluator"
        try:
            plan = upgraded_plan(
                old.doc.value, version, plan_id=plan_id, removed=removed.get(task_id, ())
            )
        except PlanUpgradeError as exc:
            problems.append(f"{task_id}: {exc}")
            continue
        plan_file = f"evaluators/{_slug(task_id)}.evaluator-plan.json"
        plans[plan_file] = plan
        split = as_str(task.split)
        note = f"plan v{old.doc.value.get('schema_version')} -> v{version}"
        if is_banned and split == "held_out":
            split = "pilot"
            note += "; banned from held-out use by the burn: split held_out -> pilot"
        elif is_banned:
            note += f"; banned from held-out use by the burn: kept {split}"
        tasks.append(_task(task.value, split, plan, plan_file))
        done.append(
            DraftTask(
                task_id,
                True,
                is_banned,
                split,
                note,
                plan_id,
                version,
                as_str(old.doc.value.get("schema_version")),
                plan_file,
            )
        )
    if problems:
        raise CohortInputError(
            f"successor draft of {burned_id}, got {len(problems)} task(s) whose plan cannot"
            f" be drafted: {'; '.join(problems)}"
        )
    if not tasks:
        raise CohortInputError(
            f"successor of {burned_id}, got no task carried over, expected at least one"
        )
    predecessor_digest = recorded_definition_digest(burned)
    cohort: dict[str, object] = {
        key: copy.deepcopy(burned[key])
        for key in (
            "authority",
            "minimum_final_tasks",
            "required_families",
            "schema_version",
            "taxonomy_frozen_before_outcomes",
        )
        if key in burned
    }
    cohort.update(
        id=successor_id,
        title=title or f"Successor of {burned_id} (plans v{version})",
        description=(
            f"Successor of {burned_id}: {len(tasks)} task(s) carried over, each bound to an"
            f" EvaluatorPlan v{version} drafted from its burned plan. A draft: review the"
            " plans against the source revision before freezing."
        ),
        stage="collecting",
        taxonomy_frozen_before_outcomes=True,
        tasks=tasks,
        extensions={CLAIM_NAMESPACE: {CLAIM_KEY: predecessor_digest}},
    )
    return Draft(burned_id, predecessor_digest, cohort, plans, tuple(done))


def _task(
    old: Mapping[str, object], split: str | None, plan: Mapping[str, object], plan_file: str
) -> dict[str, object]:
    """A successor task: the burned task's definition, the new plan, no evidence."""
    task = {
        key: copy.deepcopy(old[key])
        for key in (
            "accounting",
            "declared_structural_signatures",
            "difficulty",
            "family",
            "id",
            "source",
            "work_unit",
        )
        if key in old
    }
    negative = as_map(old.get("negative_case"))
    task["negative_case"] = {
        "description": negative.get("description"),
        "expected_category": negative.get("expected_category"),
        "evidence_status": "pending",
    }
    task["split"] = split
    task["evidence"] = {"status": "pending", "attempts": []}
    task["evaluator"] = {
        "backend": as_map(plan.get("backend")).get("type"),
        "plan_digest": legacy_digest(plan),
        "plan_id": plan.get("id"),
        "plan_path": plan_file,
        "visibility": plan.get("visibility"),
    }
    return task
