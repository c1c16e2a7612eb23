"""What each cohort finding code means, in one sentence an auditor can act on.

The cohort audit (with the lifecycle and burn checks it runs) names every finding by a
stable dotted code (``cohorts.findings``); the message says what was found. This
module says what the check is about, for readers who do not know the codes (the browse
pages print it next to each finding). ``meaning(code)`` looks the code up exactly, then
by family: the reference checks build their codes from a name (``attempt.<object>.<check>``,
``task.<object>.<check>``), and the family's meaning names the object. Every code the
audit can emit has a meaning (a test reads the codes from the source); an unknown code
says so instead of guessing.
"""

from __future__ import annotations

import re

#: Exact codes.
EXACT: dict[str, str] = {
    # the cohort document
    "cohort.schema": "the cohort document does not match the BenchmarkCohort schema",
    "cohort.stage": "the cohort is not frozen or burned yet: it is not benchmark evidence",
    "cohort.definition_digest": (
        "the definition digest the cohort records is absent or does not reproduce from its"
        " definition under either digest scheme"
    ),
    "cohort.task_ids": "task ids are missing or repeated",
    "cohort.families": "a task family the cohort requires has no task",
    "cohort.minimum_tasks": "fewer tasks than the cohort's minimum_final_tasks",
    "cohort.work_items": "one (source, WorkUnit) pair is counted by two tasks",
    "cohort.signatures": "a task's structural signatures depart from the cohort's clear majority",
    "cohort.unattested": (
        "the cohort record is unattested history: no authority attestation, so it does not count"
    ),
    "cohort.refused": (
        "a record of this cohort was written past admission (replaying the rules refuses it),"
        " so it counts nowhere; provledger verify names it"
    ),
    "task.attempt_ids": "two attempts of a task share an id",
    "task.evidence.attempts": "attempts are listed on a task whose evidence is not verified",
    "task.source.revision": "the task's source revision is not a full commit id",
    "task.negative_evidence.missing": (
        "the seeded negative evidence the task declares is not in the ledger"
    ),
    "task.negative_evidence.kind": "the task's negative evidence is not a VerificationResult",
    "task.negative_evidence.accepts": (
        "the task's negative evidence accepts the seeded bad candidate (it must reject it)"
    ),
    "task.negative_evidence.category": (
        "the task's negative evidence lacks a finding of the expected category"
    ),
    "task.plan.backend": "the EvaluatorPlan's backend differs from the one the task names",
    "task.plan.binding": "the task's EvaluatorPlan is bound to another WorkUnit or source",
    "task.plan.hidden": "the EvaluatorPlan is hidden: the cohort commits to it by digest only",
    "task.plan.validators": "the EvaluatorPlan's required validators differ from the WorkUnit's",
    "task.work_unit.source_revision": (
        "the task's WorkUnit names another source revision than the task"
    ),
    "attempt.signature": "the attempt's structural signature is not one the task predeclared",
    "attempt.outcome": "the indexed outcome differs from the verifier's recommendation",
    "attempt.accounting": (
        "a metric the task requires is reported by neither the ResultManifest nor the result"
    ),
    "attempt.preregistration": (
        "the outcome is not pre-registered: the cohort's frozen record, its plan or (for a"
        " successor) its binding came after the result in the log, so it does not count"
    ),
    "checkpoint.cosignature": (
        "a cosignature in a trusted witness's name on a checkpoint the audit shows does not"
        " verify under that witness's key: a forged line"
    ),
    "attempt.behavioral.unconfined": (
        "behavioral evidence linked to the result ran without a sandbox"
    ),
    "attempt.manifest.source_revision": (
        "the ResultManifest names another source revision than the task"
    ),
    "attempt.manifest.validators": (
        "the ResultManifest does not request every validator the WorkUnit requires"
    ),
    "attempt.verification.independence": (
        "the VerificationResult does not state that its verifier is independent of the worker"
    ),
    "attempt.verification.plan_digest": (
        "the VerificationResult was judged under another EvaluatorPlan than the task's"
    ),
    "attempt.verification.result_manifest": (
        "the VerificationResult judges another ResultManifest than the attempt lists"
    ),
    "attempt.verification.result_manifest_digest": (
        "the VerificationResult names another ResultManifest digest than the attempt lists"
    ),
    "attempt.verification.source_revision": (
        "the VerificationResult names another source revision than the task"
    ),
    "attempt.verification.verifier": (
        "the verifier (id, adapter, version) that ran is not the one the plan names"
    ),
    # burns
    "burn.stage": "a burn notice names a cohort that is not burned",
    "burn.facts.stage": "the cohort records burn facts but is not at stage burned",
    "burn.notice.missing": "the cohort is burned but the ledger holds no burn notice for it",
    "burn.notice.cohort": "the burn notice names another cohort",
    "burn.notice.definition": "the burn notice names another definition of the cohort",
    "burn.notice.kind": "the object given as burn notice is not one",
    "burn.notice.task": "the burn notice names a task the cohort does not have",
    "burn.exclusion.unlisted": "a task the cohort excludes is not listed in its burn notice",
    # lineage
    "relation.predecessor.unknown": "the claimed predecessor digest names no stored cohort",
    "relation.predecessor.not_burned": "the claimed predecessor is not burned",
    "relation.unbound": (
        "succession is claimed only in upstream's extensions: the ledger holds no binding"
    ),
    "relation.binding.definition": "a binding names another definition of this cohort",
    "relation.binding.burn_notice": "a binding names a burn notice the ledger does not hold",
    "relation.successors.multiple": "more than one cohort claims to succeed this one",
    "relation.held_out": "a task that a burn notice bans is presented as held-out evidence",
    "relation.outcome_elsewhere": (
        "a WorkUnit of this not-yet-burned cohort already has outcomes in another cohort"
    ),
    "relation.unattested": (
        "a burn notice or binding about this cohort is unattested history: it does not count"
    ),
}

#: What each referenced object is, for the families below.
OBJECTS: dict[str, str] = {
    "result_manifest": "ResultManifest",
    "verification_result": "VerificationResult",
    "work_unit": "WorkUnit",
    "plan": "EvaluatorPlan",
    "verification": "VerificationResult",
    "manifest": "ResultManifest",
}

#: Families: (pattern, meaning with {object}).
FAMILIES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?:attempt|task)\.(\w+)\.missing"), "the {object} it names is not in the ledger"),
    (
        re.compile(r"(?:attempt|task)\.(\w+)\.digest"),
        "the {object} stored under its id does not hash to the digest recorded",
    ),
    (re.compile(r"(?:attempt|task)\.(\w+)\.id"), "the {object} found has another id than recorded"),
    (re.compile(r"(?:attempt|task)\.(\w+)\.version"), "the {object} found has another version"),
    (re.compile(r"(?:attempt|task)\.(\w+)\.schema"), "the {object} does not match its schema"),
    (
        re.compile(r"attempt\.(\w+)\.work_unit"),
        "the {object} names another WorkUnit than the task",
    ),
    (
        re.compile(r"attempt\.(\w+)\.work_unit_digest"),
        "the {object} names another WorkUnit digest than the task",
    ),
)

UNKNOWN = "no description recorded for this code (see docs/COHORTS.md)"


def meaning(code: str) -> str:
    """One sentence saying what the check ``code`` is about (``UNKNOWN`` if none)."""
    found = EXACT.get(code)
    if found is not None:
        return found
    for pattern, text in FAMILIES:
        m = pattern.fullmatch(code)
        if m is not None and m.group(1) in OBJECTS:
            return text.format(object=OBJECTS[m.group(1)])
    return UNKNOWN
