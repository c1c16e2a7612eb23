"""Audit of one cohort against the ledger: pure, total, every finding at once.

What it checks (codes in docs/COHORTS.md): the stage; the definition digest recomputed
against the recorded one; per task the WorkUnit and EvaluatorPlan (present, digest and
scheme, schema, binding, versions) and verified seeded-negative evidence; per listed
evidence attempt the ResultManifest and VerificationResult (present, digest, schema) and
the binding replay task -> WorkUnit -> manifest -> verification -> plan; for burned
cohorts the burn notice and excluded outcomes; lineage claims, bindings and WorkUnits
whose outcomes were observed elsewhere.

The report's ``findings`` hold only errors and warnings; what matched (schemes,
versions) is in the per-task facts. ``CohortAuditReport.to_json()`` has a fixed key set.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cohorts.burn import (
    TaskReason,
    burn_facts_from_extensions,
    check_burn_notice,
    excluded_tasks,
    never_again_tasks,
)
from cohorts.definition import (
    DefinitionDigests,
    definition_digests,
    definition_names,
    recorded_definition_digest,
)
from cohorts.errors import AuditFailed, CohortInputError, DefinitionError
from cohorts.findings import CohortFinding, error, errors, problems, sort_key, warning
from cohorts.lifecycle import (
    FIXED_STAGES,
    STAGES,
    definition_findings,
    revision_finding,
    size_findings,
    structure_findings,
)
from cohorts.lookup import (
    BEHAVIORAL_EVIDENCE,
    BENCHMARK_COHORT,
    BURN_NOTICE,
    COHORT_BINDING,
    RESULT_MANIFEST,
    VERIFICATION_RESULT,
    CohortLookup,
    Resolution,
    StoredDoc,
    Validator,
    behavioral_confinement,
    quarantine_message,
    quarantined,
    resolve,
)
from cohorts.strength import Strength, strength_of
from cohorts.task_checks import TaskRefs, check_task_refs, plan_facts, work_unit_facts
from cohorts.upstream import (
    RECOMMENDATION_TO_OUTCOME,
    predecessor_claims,
    required_validator_ids,
)
from cohorts.validation import schema_validator
from verifiers.model import (
    Attempt,
    Cohort,
    CohortView,
    EvaluatorPlan,
    ResultManifest,
    Task,
    VerificationResult,
    WorkUnit,
)
from verifiers.model.json import as_list, as_map, as_str, at, json_key, maps, member, shown

if TYPE_CHECKING:
    from cohorts.rejudge import AttemptReplay
    from cohorts.timeline import Preregistration, Recorded

REPORT_VERSION = "0.1"
#: Negative-case categories that must appear as a VerificationResult finding category.
FINDING_CATEGORIES = frozenset({"correctness", "scope", "provenance", "security", "regression"})


@dataclass(frozen=True)
class AttemptAudit:
    """One evidence attempt listed in the cohort and what its references resolved to."""

    attempt: str
    outcome: str | None
    structural_signature: str | None
    result_manifest: Resolution
    verification_result: Resolution
    strength: Strength | None = None

    def to_json(self) -> dict[str, object]:
        vr = self.verification_result.model(VerificationResult)
        return {
            "evidence_strength": None if self.strength is None else self.strength.to_json(),
            "status": None if vr is None else vr.status,
            "attempt": self.attempt,
            "outcome": self.outcome,
            "structural_signature": self.structural_signature,
            "result_manifest": self.result_manifest.to_json(),
            "verification_result": self.verification_result.to_json(),
            "recommendation": None if vr is None else as_str(vr.recommendation),
        }


@dataclass(frozen=True)
class TaskAudit:
    """Facts about one task: what its references resolved to and their versions."""

    task: str
    family: str | None
    split: str | None
    evidence_status: str | None
    work_unit: Resolution
    plan: Resolution
    work_unit_schema_valid: bool | None
    plan_schema_valid: bool | None
    attempts: tuple[AttemptAudit, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "task": self.task,
            "family": self.family,
            "split": self.split,
            "evidence_status": self.evidence_status,
            "work_unit": {
                **self.work_unit.to_json(),
                **work_unit_facts(self.work_unit.model(WorkUnit)),
                "schema_valid": self.work_unit_schema_valid,
            },
            "plan": {
                **self.plan.to_json(),
                **plan_facts(self.plan.model(EvaluatorPlan)),
                "schema_valid": self.plan_schema_valid,
            },
            "attempts": [a.to_json() for a in self.attempts],
        }


@dataclass(frozen=True)
class Relations:
    """Lineage around the audited cohort as the ledger records it."""

    predecessors: tuple[tuple[str, str | None], ...]  # (claimed digest, cohort id or None)
    successors: tuple[str, ...]
    burn_notices: tuple[str, ...]
    bindings: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "predecessors": [
                {"definition_digest": digest, "cohort": cohort}
                for digest, cohort in self.predecessors
            ],
            "successors": list(self.successors),
            "burn_notices": list(self.burn_notices),
            "bindings": list(self.bindings),
        }


@dataclass(frozen=True)
class BurnView:
    """When and why a cohort burned, as the ledger records it (upstream's facts)."""

    source: str  # "burn notice" or "cohort extensions" (no notice stored)
    notice_digest: str | None
    issued_at: str | None  # None: upstream recorded no date
    reason: str | None
    never_again_held_out: tuple[TaskReason, ...]
    references: tuple[Mapping[str, object], ...]

    def to_json(self) -> dict[str, object]:
        return {
            "source": self.source,
            "notice_digest": self.notice_digest,
            "issued_at": self.issued_at,
            "reason": self.reason,
            "never_again_held_out": [t.to_json() for t in self.never_again_held_out],
            "references": [dict(r) for r in self.references],
        }


@dataclass(frozen=True)
class SuccessorLink:
    """A cohort that claims to succeed the audited one, and how."""

    cohort_id: str
    stage: str | None
    claimed_in: tuple[str, ...]  # extension members naming this cohort's digest
    bindings: tuple[str, ...]  # cohort-binding digests naming the pair

    def to_json(self) -> dict[str, object]:
        return {
            "cohort_id": self.cohort_id,
            "stage": self.stage,
            "claimed_in": list(self.claimed_in),
            "bindings": list(self.bindings),
        }


@dataclass(frozen=True)
class BoundView:
    """A cohort-binding naming the audited cohort as successor: what it bound."""

    digest: str
    predecessor_id: str | None
    plans: tuple[Mapping[str, object], ...]  # task, plan_id, plan_version, plan_digest
    calibrations: tuple[tuple[str, Mapping[str, object] | None], ...]  # digest, record

    def to_json(self) -> dict[str, object]:
        return {
            "digest": self.digest,
            "predecessor_id": self.predecessor_id,
            "evaluator_plans": [dict(p) for p in self.plans],
            "calibrations": [
                {
                    "digest": digest,
                    "stored": record is not None,
                    **{
                        k: (record or {}).get(k)
                        for k in (
                            "plan_schema_version",
                            "candidate",
                            "recommendation",
                            "adapter",
                            "adapter_version",
                        )
                    },
                }
                for digest, record in self.calibrations
            ],
        }

    def lines(self) -> list[str]:
        out = [f"  plans bound ({len(self.plans)}):"]
        for p in self.plans:
            plan = f"{p.get('plan_id')}@{p.get('plan_version')}"
            out.append(f"    {p.get('task')}: {plan} {p.get('plan_digest')}")
        out.append(f"  calibration records ({len(self.calibrations)}):")
        for digest, record in self.calibrations:
            if record is None:
                out.append(f"    {digest}: not in the ledger")
                continue
            out.append(
                f"    {digest}: v{record.get('plan_schema_version')} {record.get('candidate')}"
                f" -> {record.get('recommendation')} ({record.get('adapter')}"
                f" {record.get('adapter_version')})"
            )
        return out


def category(finding: CohortFinding) -> str:
    """``missing`` (evidence not in the ledger), ``defect`` (evidence wrong), ``warning``."""
    if finding.severity != "error":
        return "warning"
    return "missing" if finding.code.endswith(".missing") else "defect"


@dataclass(frozen=True)
class CohortAuditReport:
    """Audit of one cohort. ``ok`` when there is no error-severity finding."""

    cohort_id: str | None
    stage: str | None
    recorded_definition_digest: str | None
    definition_digest: DefinitionDigests | None
    tasks: tuple[TaskAudit, ...]
    excluded_outcomes: tuple[TaskReason, ...]
    relations: Relations
    findings: tuple[CohortFinding, ...]
    burn: BurnView | None = None
    successor_links: tuple[SuccessorLink, ...] = ()
    bound: tuple[BoundView, ...] = ()
    #: Set by ``cohorts.service.audit``, which reads log positions (the pure audit
    #: sees documents only): one judgement per listed outcome, and when the ledger
    #: learnt the burn notice.
    preregistration: tuple[Preregistration, ...] = ()
    burn_recorded: Recorded | None = None
    #: Set by ``cohort audit --replay`` (``cohorts.service.with_replay``); None: not run.
    replay: tuple[AttemptReplay, ...] | None = None
    #: Whether the audited record counts (``ledger.trust.standing``): "counts", or,
    #: set by ``cohorts.service.audit_stored_cohort`` for a cohort stored only without
    #: standing, "unattested history" or "refused by admission". Such a report is never
    #: the authority's word: what it says the record says, nothing more.
    standing: str = "counts"

    @property
    def ok(self) -> bool:
        return not errors(self.findings)

    def counts(self) -> dict[str, int]:
        tally = Counter(f.severity for f in self.findings)
        kinds = Counter(category(f) for f in self.findings)
        return {
            "error": tally["error"],
            "warning": tally["warning"],
            "defect": kinds["defect"],
            "missing": kinds["missing"],
        }

    def strength_counts(self) -> list[dict[str, object]]:
        """Listed outcomes counted by evidence strength and verdict status."""
        tally: Counter[tuple[str, str, str]] = Counter()
        for task in self.tasks:
            for attempt in task.attempts:
                label = "no stored verdict" if attempt.strength is None else attempt.strength.label
                vr = attempt.verification_result.model(VerificationResult)
                status = (None if vr is None else vr.status) or "-"
                tally[(label, status, attempt.outcome or "-")] += 1
        return [
            {"strength": label, "status": status, "outcome": outcome, "count": n}
            for (label, status, outcome), n in sorted(tally.items())
        ]

    def to_json(self) -> dict[str, object]:
        """JSON-ready dict; keys are always present, lists in a deterministic order."""
        digests = self.definition_digest
        return {
            "report_version": REPORT_VERSION,
            "cohort_id": self.cohort_id,
            "stage": self.stage,
            "definition_digest": {
                "recorded": self.recorded_definition_digest,
                "legacy": digests.legacy if digests else None,
                "jcs": digests.jcs if digests else None,
                "scheme": digests.scheme_for(self.recorded_definition_digest)
                if digests and self.recorded_definition_digest
                else None,
            },
            "ok": self.ok,
            "counts": self.counts(),
            "tasks": [t.to_json() for t in self.tasks],
            "excluded_outcomes": [e.to_json() for e in self.excluded_outcomes],
            "relations": self.relations.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "finding_categories": [category(f) for f in self.findings],
            "burn": None if self.burn is None else self.burn.to_json(),
            "successors": [s.to_json() for s in self.successor_links],
            "evidence_strength": self.strength_counts(),
            "bound": [b.to_json() for b in self.bound],
            "preregistration": [p.to_json() for p in self.preregistration],
            "preregistration_counts": self.preregistration_counts(),
            "burn_recorded": None if self.burn_recorded is None else self.burn_recorded.to_json(),
            "replay": None if self.replay is None else [r.to_json() for r in self.replay],
            "standing": self.standing,
        }

    def preregistration_counts(self) -> dict[str, int]:
        """Listed outcomes by pre-registration status (every status present)."""
        tally = Counter(p.status for p in self.preregistration)
        return {
            status: tally[status]
            for status in (
                "pre_registered",
                "not_pre_registered",
                "order_not_attested",
                "not_judged",
            )
        }

    def raise_for_errors(self) -> None:
        """``AuditFailed`` (exit 1) when any finding is an error."""
        failed = errors(self.findings)
        if failed:
            first = failed[0]
            raise AuditFailed(
                f"audit of {self.cohort_id} failed, got {len(failed)} error(s), first"
                f" {first.code}: {first.message}, expected none"
            )


# --- per attempt -------------------------------------------------------------------------


def _ref_findings(
    res: Resolution,
    name: str,
    what: str,
    kind: str,
    validate: Validator | None,
    task: str,
    attempt: str,
    lookup: CohortLookup,
) -> list[CohortFinding]:
    if res.doc is None:
        bad = quarantined(lookup, kind, res.object_id or None, res.digest)
        if bad is not None:
            return [
                error(
                    f"attempt.{name}.schema",
                    quarantine_message(what, kind, bad, res.digest),
                    task,
                    attempt,
                )
            ]
        return [
            error(
                f"attempt.{name}.missing",
                f"{what} not in ledger, got nothing for id {res.object_id or '?'} or digest"
                f" {res.digest or '?'}, expected it stored",
                task,
                attempt,
            )
        ]
    found: list[CohortFinding] = []
    if res.scheme is None:
        found.append(
            error(
                f"attempt.{name}.digest",
                f"{what} digest mismatch for id {res.object_id}, got stored legacy"
                f" {res.doc.legacy_digest} and JCS {res.doc.jcs_digest}, expected {res.digest}",
                task,
                attempt,
            )
        )
    if res.doc.value.get("id") != res.object_id:
        found.append(
            error(
                f"attempt.{name}.id",
                f"{what} id drift, got {shown(res.doc.value.get('id'))},"
                f" expected {shown(res.object_id)}",
                task,
                attempt,
            )
        )
    if validate is not None:
        found += [
            error(
                f"attempt.{name}.schema",
                f"{kind} schema violation, got {message}, expected a schema-valid {kind}",
                task,
                attempt,
            )
            for message in validate(kind, res.doc.value)
        ]
    return found


@dataclass
class _AttemptCheck:
    """Findings about one listed attempt, in the order they are found."""

    task: Task
    refs: TaskRefs
    attempt: Attempt
    found: list[CohortFinding] = field(default_factory=list)

    def drift(self, code: str, what: str, got: object, expected: object) -> None:
        self.found.append(
            error(
                code,
                f"{what} drift, got {shown(got)}, expected {shown(expected)}",
                self.refs.task_id,
                self.attempt.label,
            )
        )


def _attempt(
    task: Task,
    refs: TaskRefs,
    attempt: Attempt,
    lookup: CohortLookup,
    validate: Validator | None,
) -> tuple[AttemptAudit, list[CohortFinding]]:
    """Resolve an attempt's ResultManifest and VerificationResult, then replay the
    binding task -> WorkUnit -> manifest -> verification -> plan."""
    rm_ref, vr_ref = attempt.result_manifest, attempt.verification_result
    rm = resolve(lookup, RESULT_MANIFEST, rm_ref.id, rm_ref.digest)
    vr = resolve(lookup, VERIFICATION_RESULT, vr_ref.id, vr_ref.digest)
    verdict = vr.model(VerificationResult)
    facts = AttemptAudit(
        attempt.label,
        as_str(attempt.outcome),
        as_str(attempt.structural_signature),
        rm,
        vr,
        None if verdict is None else strength_of(refs.plan.model(EvaluatorPlan), verdict),
    )
    check = _AttemptCheck(task, refs, attempt)
    _check_signature(check)
    for res, name, what, kind in (
        (rm, "result_manifest", "ResultManifest", RESULT_MANIFEST),
        (vr, "verification_result", "VerificationResult", VERIFICATION_RESULT),
    ):
        check.found += _ref_findings(
            res, name, what, kind, validate, refs.task_id, attempt.label, lookup
        )
    manifest = rm.model(ResultManifest)
    verification = verdict
    if manifest is not None:
        _check_manifest(check, manifest)
    if verification is not None:
        _check_verification(check, verification, rm)
    if manifest is not None and verification is not None:
        _check_accounting(check, manifest, verification)
    return facts, check.found


def _check_signature(check: _AttemptCheck) -> None:
    signature = check.attempt.structural_signature
    declared = check.task.declared_signatures
    if not member(signature, declared):
        check.drift(
            "attempt.signature",
            "structural signature not predeclared;",
            signature,
            sorted(declared),
        )


def _check_work_unit_binding(
    check: _AttemptCheck, doc: ResultManifest | VerificationResult, code: str, label: str
) -> None:
    """Manifest and result each name the task's WorkUnit by id, version and digest."""
    wu_ref = check.task.work_unit
    if doc.work_unit != wu_ref.key:
        check.drift(f"attempt.{code}.work_unit", f"{label} WorkUnit", doc.work_unit, wu_ref.key)
    got = doc.work_unit_digest
    if not member(got, check.refs.work_unit.digests()):
        check.drift(
            f"attempt.{code}.work_unit_digest", f"{label} WorkUnit digest", got, wu_ref.digest
        )


def _check_manifest(check: _AttemptCheck, manifest: ResultManifest) -> None:
    _check_work_unit_binding(check, manifest, "manifest", "ResultManifest")
    revision = check.task.source_revision
    if manifest.source_revision != revision:
        check.drift(
            "attempt.manifest.source_revision",
            "ResultManifest source revision",
            manifest.source_revision,
            revision,
        )
    work_unit = check.refs.work_unit.value
    if work_unit is not None:
        wanted = required_validator_ids(work_unit)
        asked = manifest.expected_validator_ids
        if not wanted <= asked:
            check.drift(
                "attempt.manifest.validators",
                "ResultManifest validator request",
                sorted(asked),
                f"a superset of {sorted(wanted)}",
            )


def _check_verification(
    check: _AttemptCheck, verification: VerificationResult, rm: Resolution
) -> None:
    rm_ref = check.attempt.result_manifest
    if verification.result_manifest_id != rm_ref.id:
        check.drift(
            "attempt.verification.result_manifest",
            "VerificationResult ResultManifest id",
            verification.result_manifest_id,
            rm_ref.id,
        )
    _check_work_unit_binding(check, verification, "verification", "VerificationResult")
    if not member(verification.result_manifest_digest, rm.digests()):
        check.drift(
            "attempt.verification.result_manifest_digest",
            "VerificationResult ResultManifest digest",
            verification.result_manifest_digest,
            rm_ref.digest,
        )
    revision = check.task.source_revision
    if verification.source_revision != revision:
        check.drift(
            "attempt.verification.source_revision",
            "VerificationResult source revision",
            verification.source_revision,
            revision,
        )
    _check_plan_binding(check, verification)
    independent = verification.independent_from_worker
    if independent is not True:
        check.drift("attempt.verification.independence", "verifier independence", independent, True)
    recommendation = verification.recommendation
    expected = RECOMMENDATION_TO_OUTCOME.get(str(recommendation))
    if check.attempt.outcome != expected:
        check.drift(
            "attempt.outcome",
            f"indexed outcome vs recommendation {recommendation}",
            check.attempt.outcome,
            expected,
        )


def _check_plan_binding(check: _AttemptCheck, verification: VerificationResult) -> None:
    """The result names the task's plan by digest and ran the planned verifier."""
    got = verification.verifier_config_digest
    if not member(got, check.refs.plan.digests()):
        check.drift(
            "attempt.verification.plan_digest",
            "VerificationResult plan binding",
            got,
            check.task.plan_digest,
        )
    plan = check.refs.plan.model(EvaluatorPlan)
    if plan is not None and verification.verifier != plan.verifier:
        check.drift(
            "attempt.verification.verifier",
            "verifier identity/version",
            verification.verifier,
            plan.verifier,
        )


def _check_accounting(
    check: _AttemptCheck, manifest: ResultManifest, verification: VerificationResult
) -> None:
    have = set(manifest.resources) | set(verification.resources)
    for metric in check.task.required_metrics:
        if metric not in have:
            check.drift("attempt.accounting", "required accounting metric", None, metric)


# --- per task ----------------------------------------------------------------------------


def _negative_evidence(
    task: Mapping[str, object], label: str, lookup: CohortLookup
) -> list[CohortFinding]:
    negative = as_map(task.get("negative_case"))
    if negative.get("evidence_status") != "verified":
        return []
    digest = as_str(negative.get("evidence_digest"))
    doc = lookup.by_digest(digest) if digest else None
    if doc is None:
        return [
            error(
                "task.negative_evidence.missing",
                f"seeded-negative evidence not in ledger, got nothing for digest {shown(digest)},"
                " expected it stored",
                label,
            )
        ]
    if negative.get("evidence_type") != "verification_result":
        return []
    if doc.kind != VERIFICATION_RESULT:
        return [
            error(
                "task.negative_evidence.kind",
                f"seeded-negative evidence kind drift, got {doc.kind},"
                f" expected {VERIFICATION_RESULT}",
                label,
            )
        ]
    verdict = doc.model(VerificationResult)
    found: list[CohortFinding] = []
    if verdict.recommendation == "accept_candidate":
        found.append(
            error(
                "task.negative_evidence.accepts",
                "seeded negative accepted, got accept_candidate, expected a rejection",
                label,
            )
        )
    category = negative.get("expected_category")
    categories = {json_key(c) for c in verdict.finding_categories}
    if member(category, FINDING_CATEGORIES) and json_key(category) not in categories:
        found.append(
            error(
                "task.negative_evidence.category",
                f"seeded negative lacks its finding, got categories {sorted(map(str, categories))},"
                f" expected {category}",
                label,
            )
        )
    return found


def _signature_findings(cohort: Cohort) -> list[CohortFinding]:
    """Warn on tasks whose signature set departs from a clear majority taxonomy."""
    tasks = cohort.tasks
    sets = [t.declared_signatures for t in tasks]
    tally = Counter(sets).most_common()
    if len(tally) < 2 or tally[0][1] < 2 or tally[0][1] == tally[1][1]:
        return []
    common = tally[0][0]
    out: list[CohortFinding] = []
    for task, have in zip(tasks, sets, strict=True):
        if have != common:
            out.append(
                warning(
                    "cohort.signatures",
                    f"structural signatures depart from the cohort's taxonomy, got extra"
                    f" {sorted(have - common)} and missing {sorted(common - have)},"
                    f" expected {sorted(common)}",
                    as_str(task.id),
                )
            )
    return out


# --- relations ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Known:
    doc: StoredDoc
    names: frozenset[str]  # recorded + recomputed definition digests


def _known_cohorts(lookup: CohortLookup, own_id: object) -> list[_Known]:
    latest: dict[object, StoredDoc] = {}
    for doc in lookup.of_kind(BENCHMARK_COHORT):
        latest[json_key(doc.value.get("id"))] = doc
    return [
        _Known(doc, definition_names(doc.value))
        for cid, doc in latest.items()
        if cid != json_key(own_id)
    ]


@dataclass(frozen=True)
class _Lineage:
    """What the ledger records around one cohort: the other cohorts, bindings, notices."""

    cohort: Cohort
    names: frozenset[str]  # the cohort's recorded and recomputed definition digests
    others: tuple[_Known, ...]
    bindings: tuple[StoredDoc, ...]
    notices: tuple[StoredDoc, ...]  # burn notices naming this cohort

    @classmethod
    def of(cls, cohort: Cohort, lookup: CohortLookup) -> _Lineage:
        return cls(
            cohort,
            definition_names(cohort.value),
            tuple(_known_cohorts(lookup, cohort.id)),
            tuple(lookup.of_kind(COHORT_BINDING)),
            tuple(n for n in lookup.of_kind(BURN_NOTICE) if n.value.get("cohort_id") == cohort.id),
        )

    def bound(self, predecessor: object, successor: object) -> bool:
        """A cohort-binding records the succession predecessor -> successor."""
        return any(
            b.value.get("predecessor_id") == predecessor
            and b.value.get("successor_id") == successor
            for b in self.bindings
        )


def _relations(
    lineage: _Lineage, lookup: CohortLookup
) -> tuple[Relations, tuple[TaskReason, ...], list[CohortFinding]]:
    cohort = lineage.cohort
    own_id = cohort.id
    predecessors, found = _predecessor_findings(lineage)
    found += _binding_findings(lineage, lookup)
    successors, successor_found = _successors(lineage)
    found += successor_found
    excluded, burn_found = _burn_findings(lineage)
    found += burn_found
    by_id = {json_key(k.doc.value.get("id")): k for k in lineage.others}
    found += _held_out_findings(cohort, lookup, by_id)
    if cohort.stage != "burned":
        found += _outcomes_elsewhere(cohort, lineage.others)
    relations = Relations(
        tuple(predecessors),
        tuple(successors),
        tuple(sorted(n.jcs_digest for n in lineage.notices)),
        tuple(
            sorted(
                b.jcs_digest
                for b in lineage.bindings
                if own_id in (b.value.get("successor_id"), b.value.get("predecessor_id"))
            )
        ),
    )
    return relations, excluded, found


def _predecessor_findings(
    lineage: _Lineage,
) -> tuple[list[tuple[str, str | None]], list[CohortFinding]]:
    """Each claimed predecessor: stored, burned, and bound to this cohort."""
    predecessors: list[tuple[str, str | None]] = []
    found: list[CohortFinding] = []
    for namespace, key, digest in predecessor_claims(lineage.cohort.value):
        pred = next((k for k in lineage.others if digest in k.names), None)
        pred_id = as_str(pred.doc.value.get("id")) if pred else None
        predecessors.append((digest, pred_id))
        if pred is None:
            found.append(
                warning(
                    "relation.predecessor.unknown",
                    f"claimed predecessor not in ledger, got extensions[{namespace!r}].{key}"
                    f" {digest}, expected a stored cohort with that definition digest",
                )
            )
            continue
        pred_stage = pred.doc.model(Cohort).stage
        if pred_stage != "burned":
            found.append(
                error(
                    "relation.predecessor.not_burned",
                    f"claimed predecessor {pred_id} not burned, got stage"
                    f" {shown(pred_stage)}, expected burned",
                )
            )
        if not lineage.bound(pred_id, lineage.cohort.id):
            found.append(
                warning(
                    "relation.unbound",
                    f"succession from {pred_id} claimed only in extensions, got no cohort-binding,"
                    " expected one recorded after the successor gate passed",
                )
            )
    return predecessors, found


def _binding_findings(lineage: _Lineage, lookup: CohortLookup) -> list[CohortFinding]:
    """Bindings naming this cohort: by one of its definitions; a successor's cites a
    stored burn notice."""
    own_id = lineage.cohort.id
    found: list[CohortFinding] = []
    for b in lineage.bindings:
        for role in ("successor", "predecessor"):
            if b.value.get(f"{role}_id") != own_id:
                continue
            stated = [at(b.value, f"{role}_definition_digest", s) for s in ("legacy", "jcs")]
            if not any(member(s, lineage.names) for s in stated):
                found.append(
                    error(
                        "relation.binding.definition",
                        f"binding {b.jcs_digest} names this cohort as {role} with another"
                        f" definition, got {sorted(map(str, stated))}, expected one of"
                        f" {sorted(lineage.names)}",
                    )
                )
            if role == "successor":
                found += _binding_notice_findings(b, lookup)
    return found


def _binding_notice_findings(binding: StoredDoc, lookup: CohortLookup) -> list[CohortFinding]:
    notice_digest = binding.value.get("burn_notice_digest")
    stored = lookup.by_digest(notice_digest) if isinstance(notice_digest, str) else None
    if stored is not None and stored.kind == BURN_NOTICE:
        return []
    return [
        error(
            "relation.binding.burn_notice",
            f"binding {binding.jcs_digest} cites a burn notice not in ledger, got"
            f" {shown(notice_digest)}, expected a stored burn notice",
        )
    ]


def _successors(lineage: _Lineage) -> tuple[list[str], list[CohortFinding]]:
    """Cohorts that claim (in extensions) or are bound to succeed this one."""
    successors = sorted(
        str(k.doc.value.get("id"))
        for k in lineage.others
        if any(digest in lineage.names for _, _, digest in predecessor_claims(k.doc.value))
        or lineage.bound(lineage.cohort.id, k.doc.value.get("id"))
    )
    if len(successors) <= 1:
        return successors, []
    return successors, [
        warning(
            "relation.successors.multiple",
            f"several cohorts claim to succeed this one, got {successors},"
            " expected one successor line",
        )
    ]


def _burn_findings(lineage: _Lineage) -> tuple[tuple[TaskReason, ...], list[CohortFinding]]:
    """Stage against burn notices and burn facts; the outcomes a burn excludes."""
    cohort, notices, stage = lineage.cohort.value, lineage.notices, lineage.cohort.stage
    found: list[CohortFinding] = []
    excluded: tuple[TaskReason, ...] = ()
    if stage == "burned":
        excluded = excluded_tasks(cohort)
        if not notices:
            found.append(_missing_notice(cohort))
    elif notices:
        found.append(
            error(
                "burn.stage",
                f"burn notice recorded for a cohort at stage {shown(stage)}, got"
                f" {len(notices)} notice(s), expected the cohort to be burned",
            )
        )
    elif at(cohort, "extensions") and _has_burn_facts(cohort):
        found.append(
            warning(
                "burn.facts.stage",
                f"burn facts in extensions of a cohort at stage {shown(stage)},"
                " expected stage burned",
            )
        )
    for notice in notices:
        found += [f for f in check_burn_notice(cohort, notice.value) if f.code != "burn.stage"]
        excluded = tuple(
            TaskReason(str(i.get("task")), str(i.get("reason")))
            for i in maps(notice.value.get("excluded_outcomes"))
        )
    return excluded, found


def _missing_notice(cohort: Mapping[str, object]) -> CohortFinding:
    try:
        facts = burn_facts_from_extensions(cohort)
    except CohortInputError:
        facts = None
    where = " (burn facts exist only in upstream extensions)" if facts else ""
    return warning(
        "burn.notice.missing",
        f"burned cohort has no burn notice{where}, got none,"
        " expected a burn-notice object in the ledger",
    )


def _has_burn_facts(cohort: Mapping[str, object]) -> bool:
    return any(
        isinstance(as_map(m).get("burn"), Mapping)
        for m in as_map(cohort.get("extensions")).values()
    )


def _held_out_findings(
    cohort: Cohort, lookup: CohortLookup, by_id: Mapping[str, _Known]
) -> list[CohortFinding]:
    """Tasks a burn notice bans, presented again as held-out evidence."""
    found: list[CohortFinding] = []
    for notice in lookup.of_kind(BURN_NOTICE):
        burned = by_id.get(json_key(notice.value.get("cohort_id")))
        if burned is None:
            continue
        for banned in sorted(never_again_tasks(notice.value)):
            banned_wu = next(
                (t.work_unit.id for t in Task.all_of(burned.doc.value) if t.id == banned), None
            )
            for task in cohort.tasks:
                same = task.id == banned or (
                    banned_wu is not None and task.work_unit.id == banned_wu
                )
                if same and task.split == "held_out":
                    found.append(
                        error(
                            "relation.held_out",
                            f"task banned from held-out use by the burn of"
                            f" {notice.value.get('cohort_id')}, got split held_out,"
                            " expected pilot, train or development",
                            as_str(task.id),
                        )
                    )
    return found


def _outcomes_elsewhere(cohort: Cohort, others: Sequence[_Known]) -> list[CohortFinding]:
    """WorkUnits of this not-yet-burned cohort whose outcomes another cohort records."""
    found: list[CohortFinding] = []
    for task in cohort.tasks:
        key = task.work_unit.key
        seen_in = sorted(
            str(k.doc.value.get("id"))
            for k in others
            if any(t.work_unit.key == key and t.attempts for t in Task.all_of(k.doc.value))
        )
        if seen_in:
            found.append(
                warning(
                    "relation.outcome_elsewhere",
                    f"WorkUnit {shown(key[0])} has recorded outcomes in {seen_in}, got a"
                    " task that may no longer be outcome-unseen, expected unseen WorkUnits"
                    " before outcomes",
                    as_str(task.id),
                )
            )
    return found


def _burn_view(lineage: _Lineage) -> BurnView | None:
    """When and why the cohort burned: its newest burn notice, else upstream's facts."""
    cohort, notices = lineage.cohort.value, lineage.notices
    if notices:
        n = notices[-1]
        return BurnView(
            "burn notice",
            n.jcs_digest,
            as_str(n.value.get("issued_at")),
            as_str(n.value.get("reason")),
            tuple(
                TaskReason(str(i.get("task")), str(i.get("reason")))
                for i in maps(n.value.get("never_again_held_out"))
            ),
            tuple(maps(n.value.get("references"))),
        )
    if CohortView.of(cohort).stage != "burned":
        return None
    try:
        facts = burn_facts_from_extensions(cohort)
    except CohortInputError:
        facts = None
    if facts is None:
        return BurnView("cohort stage only", None, None, None, (), ())
    return BurnView(
        "cohort extensions",
        None,
        None,
        facts.reason,
        facts.never_again_held_out,
        tuple(r.to_json() for r in facts.references()),
    )


def _bound(lineage: _Lineage, lookup: CohortLookup) -> tuple[BoundView, ...]:
    """Bindings naming this cohort (one of its definitions) as successor: the plan
    versions and calibration records each bound."""
    out = []
    for b in lineage.bindings:
        if b.value.get("successor_id") != lineage.cohort.id:
            continue
        stated = [at(b.value, "successor_definition_digest", s) for s in ("legacy", "jcs")]
        if not any(member(s, lineage.names) for s in stated):
            continue
        calibrations = []
        for digest in as_list(b.value.get("calibrations")):
            record = lookup.by_digest(digest) if isinstance(digest, str) else None
            calibrations.append((str(digest), None if record is None else record.value))
        out.append(
            BoundView(
                b.jcs_digest,
                as_str(b.value.get("predecessor_id")),
                tuple(maps(b.value.get("evaluator_plans"))),
                tuple(calibrations),
            )
        )
    return tuple(out)


def _successor_links(lineage: _Lineage) -> tuple[SuccessorLink, ...]:
    """Cohorts that claim (in extensions) or are bound to succeed this one."""
    own_id, names = lineage.cohort.id, lineage.names
    bindings = [b for b in lineage.bindings if b.value.get("predecessor_id") == own_id]
    links: list[SuccessorLink] = []
    for known in lineage.others:
        other = known.doc.value
        other_id = as_str(other.get("id"))
        if other_id is None:
            continue
        claimed = tuple(
            f"extensions[{namespace!r}].{key}"
            for namespace, key, digest in predecessor_claims(other)
            if digest in names
        )
        bound = tuple(
            sorted(b.jcs_digest for b in bindings if b.value.get("successor_id") == other_id)
        )
        if claimed or bound:
            stage = as_str(known.doc.model(Cohort).stage)
            links.append(SuccessorLink(other_id, stage, claimed, bound))
    return tuple(sorted(links, key=lambda link: link.cohort_id))


# --- entry point -------------------------------------------------------------------------


def audit_cohort(
    cohort: Cohort | Mapping[str, object],
    lookup: CohortLookup,
    validate: Validator = schema_validator,
    *,
    skip_checks: Collection[str] = (),
) -> CohortAuditReport:
    """Audit ``cohort`` against ``lookup``; every check runs unless named in ``skip_checks``.

    The only check that can be switched off is ``"schema"`` (JSON Schema validation of
    the cohort and the documents its tasks name); an unknown name raises.
    """
    unknown = sorted(set(skip_checks) - {"schema"})
    if unknown:
        raise CohortInputError(
            f"unknown cohort audit check, got {', '.join(unknown)}, expected schema"
        )
    validate_or_skip = None if "schema" in skip_checks else validate
    return _audit_cohort(cohort, lookup, validate_or_skip)


def _audit_cohort(
    value: Cohort | Mapping[str, object], lookup: CohortLookup, validate: Validator | None
) -> CohortAuditReport:
    cohort = value if isinstance(value, Cohort) else Cohort.of(value)
    stage = as_str(cohort.stage)
    found = _cohort_findings(cohort, validate)
    tasks: list[TaskAudit] = []
    for task in cohort.tasks:
        audit, task_found = _task_audit(task, stage, lookup, validate)
        tasks.append(audit)
        found += task_found
    found += _behavioral_findings(tasks, lookup)
    lineage = _Lineage.of(cohort, lookup)
    relations, excluded, relation_found = _relations(lineage, lookup)
    found += relation_found
    try:
        digests: DefinitionDigests | None = definition_digests(cohort.value)
    except DefinitionError:
        digests = None
    return CohortAuditReport(
        burn=_burn_view(lineage),
        successor_links=_successor_links(lineage),
        bound=_bound(lineage, lookup),
        cohort_id=as_str(cohort.id),
        stage=stage,
        recorded_definition_digest=recorded_definition_digest(cohort.value),
        definition_digest=digests,
        tasks=tuple(tasks),
        excluded_outcomes=tuple(sorted(excluded, key=lambda e: e.task)),
        relations=relations,
        findings=tuple(sorted(problems(found), key=sort_key)),
    )


def _cohort_findings(cohort: Cohort, validate: Validator | None) -> list[CohortFinding]:
    """The cohort on its own: schema, stage, definition digest, structure, signatures."""
    value, stage = cohort.value, as_str(cohort.stage)
    found: list[CohortFinding] = []
    if validate is not None:
        found += [
            error(
                "cohort.schema",
                f"{BENCHMARK_COHORT} schema violation, got {message},"
                f" expected a schema-valid {BENCHMARK_COHORT}",
            )
            for message in validate(BENCHMARK_COHORT, value)
        ]
    if stage not in STAGES:
        found.append(
            error("cohort.stage", f"unknown stage, got {shown(stage)}, expected one of {STAGES}")
        )
    elif stage not in FIXED_STAGES:
        found.append(
            warning(
                "cohort.stage",
                f"cohort not frozen, got stage {stage}, expected frozen or burned before its"
                " tasks count as benchmark evidence",
            )
        )
    found += definition_findings(value, required=stage in FIXED_STAGES)
    found += structure_findings(value)
    if stage in FIXED_STAGES:
        found += size_findings(value)
    found += _signature_findings(cohort)
    return found


def _task_audit(
    task: Task, stage: str | None, lookup: CohortLookup, validate: Validator | None
) -> tuple[TaskAudit, list[CohortFinding]]:
    """One task: its references, source revision, negative evidence and attempts."""
    refs, found = check_task_refs(task, lookup, validate)
    if stage != "scaffold" and (revision := revision_finding(task, refs.task_id)) is not None:
        found.append(revision)
    found += _negative_evidence(task.value, refs.task_id, lookup)
    attempts: list[AttemptAudit] = []
    for attempt in task.attempts:
        facts, attempt_found = _attempt(task, refs, attempt, lookup, validate)
        attempts.append(facts)
        found += attempt_found
    return _task_facts(task, refs, found, validate, tuple(attempts)), found


def _behavioral_findings(tasks: Sequence[TaskAudit], lookup: CohortLookup) -> list[CohortFinding]:
    """A warning per behavioral evidence, attached to a listed VerificationResult, whose
    probes ran unconfined (``--unsandboxed`` or recorded before sandboxing)."""
    attempts: dict[str, tuple[str, str]] = {}
    for task in tasks:
        for attempt in task.attempts:
            if attempt.verification_result.doc is not None:
                for digest in attempt.verification_result.digests():
                    attempts[digest] = (task.task, attempt.attempt)
    if not attempts:
        return []
    found = []
    for doc in lookup.of_kind(BEHAVIORAL_EVIDENCE):
        where = attempts.get(str(doc.value.get("verification_result_digest")))
        why = behavioral_confinement(doc.value) if where is not None else None
        if where is not None and why is not None:
            found.append(
                warning(
                    "attempt.behavioral.unconfined",
                    f"behavioral evidence {doc.jcs_digest} unconfined, got {why},"
                    " expected probes run in the sandbox",
                    *where,
                )
            )
    return found


def _task_facts(
    task: Task,
    refs: TaskRefs,
    found: Sequence[CohortFinding],
    validate: Validator | None,
    attempts: tuple[AttemptAudit, ...],
) -> TaskAudit:
    def valid(res: Resolution, code: str) -> bool | None:
        if validate is None or res.doc is None:
            return None
        return not any(f.code == code for f in found)

    return TaskAudit(
        task=refs.task_id,
        family=as_str(task.family),
        split=as_str(task.split),
        evidence_status=as_str(task.evidence_status),
        work_unit=refs.work_unit,
        plan=refs.plan,
        work_unit_schema_valid=valid(refs.work_unit, "task.work_unit.schema"),
        plan_schema_valid=valid(refs.plan, "task.plan.schema"),
        attempts=attempts,
    )
