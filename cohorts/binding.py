"""The successor gate and the cohort-binding record.

A successor cohort may be bound to a burned predecessor only when every gate item
passes. ``successor_gate`` evaluates all items and never stops at the first failure:
each item is a ``CohortFinding`` (``info`` = passed, ``error`` = failed). Items that depend on
an object missing from the ledger are skipped after the missing object is reported once.

Carried-over tasks: a successor task is carried over from a predecessor task when it
has the same task id or the same WorkUnit id (any version). Upstream's successors reuse
exactly this way (phase-b2-successor-five keeps tasks 002-005 with the same ids and
WorkUnits, and gives fresh tasks fresh ids and WorkUnits); number prefixes are not
lineage (successor task 001 is a different task from burned task 001).

Held-out: upstream successors label every task ``split: pilot`` and record reuse in
extensions; what must never happen is a task the burn notice bans appearing with
``split: held_out``. That is the check.

Strength: each successor plan and WorkUnit must enforce every digest/provenance check
its counterpart did (carried-over tasks: the burned task's plan and WorkUnit; fresh
tasks: the checks that *every* predecessor plan/WorkUnit enforced).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from cohorts.burn import check_burn_notice, never_again_tasks
from cohorts.definition import DefinitionDigests, definition_digests, recorded_definition_digest
from cohorts.errors import DefinitionError, GateError
from cohorts.findings import CohortFinding, error, info, sort_key
from cohorts.lookup import EVALUATOR_PLAN, WORK_UNIT, CohortLookup, Resolution, resolve
from cohorts.task_checks import binding_problems
from cohorts.upstream import FULL_GIT_SHA, predecessor_claims, version_key
from ledger.encoding.digest import canonical_digest
from verifiers.model import CohortView, EvaluatorPlan, Task, WorkUnit
from verifiers.model.json import as_str, shown

KIND = "cohort-binding"
SCHEMA_VERSION = "0.1"

Candidate = Literal["straightforward", "decoy"]


@dataclass(frozen=True)
class CalibrationResult:
    """One calibration run of an EvaluatorPlan semantics version on a known candidate.

    A version is calibrated when a straightforward (legitimate) candidate got
    ``accept_candidate`` and a decoy got ``reject_candidate``, and no run of that
    version says otherwise. ``plan_digest`` (either scheme) narrows a record to one
    plan; None means it calibrates the version for every plan.
    """

    plan_schema_version: str
    candidate: Candidate
    recommendation: str
    plan_digest: str | None = None
    verification_result_digest: str | None = None
    #: (adapter, adapter_version) the run used; when set it must be the plan's verifier.
    adapter: tuple[str, str] | None = None


@dataclass(frozen=True)
class CarryOver:
    """A successor task that continues a predecessor task."""

    task: str
    predecessor_task: str
    matched_by: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "task": self.task,
            "predecessor_task": self.predecessor_task,
            "matched_by": list(self.matched_by),
        }


@dataclass(frozen=True)
class GateReport:
    """Every gate item evaluated, and the carry-over relation it used."""

    items: tuple[CohortFinding, ...]
    carried_over: tuple[CarryOver, ...]

    @property
    def failed(self) -> tuple[CohortFinding, ...]:
        return tuple(i for i in self.items if i.severity == "error")

    @property
    def passed(self) -> bool:
        return not self.failed


def carried_over_tasks(
    predecessor: Mapping[str, object], successor: Mapping[str, object]
) -> tuple[CarryOver, ...]:
    """Successor tasks matching a predecessor task by task id or WorkUnit id."""
    pred_tasks = CohortView.of(predecessor).tasks
    out: list[CarryOver] = []
    for task in CohortView.of(successor).tasks:
        task_id = as_str(task.id)
        if task_id is None:
            continue
        wu_id = task.work_unit.id
        for pred in pred_tasks:
            pred_id = as_str(pred.id)
            if pred_id is None:
                continue
            matched = []
            if pred_id == task_id:
                matched.append("task_id")
            if wu_id is not None and pred.work_unit.id == wu_id:
                matched.append("work_unit_id")
            if matched:
                out.append(CarryOver(task_id, pred_id, tuple(matched)))
    return tuple(out)


def _check(ok: bool, code: str, passed: str, failed: str, task: str | None = None) -> CohortFinding:
    return info(code, passed, task) if ok else error(code, failed, task)


def _definition(
    cohort: Mapping[str, object], role: str, code: str
) -> tuple[DefinitionDigests | None, CohortFinding]:
    """Recorded definition digest present and reproducing (either scheme)."""
    recorded = recorded_definition_digest(cohort)
    try:
        digests = definition_digests(cohort)
    except DefinitionError as exc:
        return None, error(code, f"{role} definition not computable: {exc}")
    if recorded is None:
        return digests, error(
            code, f"{role} definition_digest not recorded, got nothing, expected {digests.legacy}"
        )
    scheme = digests.scheme_for(recorded)
    if scheme is None:
        return digests, error(
            code,
            f"{role} definition changed, got recorded {recorded}, expected recomputed"
            f" {digests.legacy}",
        )
    return digests, CohortFinding(
        code, "info", f"{role} definition unchanged, got {recorded}", scheme=scheme
    )


# --- strength profiles -----------------------------------------------------------------

_PLAN_FLAGS = (
    ("policy", "require_plan_outside_candidate_root"),
    ("policy", "require_output_outside_candidate_root"),
    ("policy", "require_verifier_distinct_from_worker"),
    ("backend", "verify_log_digests"),
    ("backend", "require_nonempty_patch"),
)
_WU_FLAGS = (
    ("verification_policy", "independent_from_worker"),
    ("security", "sandbox_required"),
)

Profile = dict[str, Any]  # a cohort task as upstream writes it: read field by field


def plan_profile(plan: EvaluatorPlan) -> Profile:
    """The digest/provenance checks a plan enforces (missing = not enforced)."""
    profile: Profile = {".".join(p): plan.is_true(*p) for p in _PLAN_FLAGS}
    profile["backend.required_log_types"] = plan.required_log_types
    profile["required_validator_ids"] = frozenset(
        i for i in plan.required_validator_ids if isinstance(i, str)
    )
    return profile


def work_unit_profile(work_unit: WorkUnit) -> Profile:
    """The independence/evidence requirements a WorkUnit enforces."""
    profile: Profile = {".".join(p): work_unit.is_true(*p) for p in _WU_FLAGS}
    profile["verification_policy.minimum_independent_verifiers"] = (
        work_unit.minimum_independent_verifiers or 0
    )
    profile["evidence_requirements"] = work_unit.required_evidence_types
    return profile


def weakest(profiles: Sequence[Profile]) -> Profile:
    """What every profile enforces: AND of flags, minimum of counts, meet of sets."""
    out: Profile = {}
    for key in profiles[0]:
        values = [p[key] for p in profiles]
        if isinstance(values[0], bool):
            out[key] = all(values)
        elif isinstance(values[0], int):
            out[key] = min(values)
        else:
            common = frozenset(values[0])
            for value in values[1:]:
                common &= value
            out[key] = common
    return out


def weakenings(before: Profile, after: Profile) -> list[str]:
    """How ``after`` enforces less than ``before`` (empty when it does not)."""
    out: list[str] = []
    for key, old in before.items():
        new = after.get(key)
        if isinstance(old, bool):
            if old and new is not True:
                out.append(f"{key} true -> {shown(new)}")
        elif isinstance(old, int):
            if not isinstance(new, int) or new < old:
                out.append(f"{key} {old} -> {shown(new)}")
        else:
            lost = sorted(old - (new if isinstance(new, frozenset) else frozenset()))
            if lost:
                out.append(f"{key} lost {lost}")
    return out


# --- the gate ----------------------------------------------------------------------------


def _resolve_task(lookup: CohortLookup, task: Task) -> tuple[Resolution, Resolution]:
    wu, ev = task.work_unit, task.evaluator
    return (
        resolve(lookup, WORK_UNIT, wu.id, wu.digest, wu.version),
        resolve(lookup, EVALUATOR_PLAN, ev.plan_id, ev.plan_digest),
    )


def _present(res: Resolution, code: str, what: str, task: str) -> list[CohortFinding]:
    """Present and matching its recorded digest: one item each."""
    if res.doc is None:
        return [
            error(
                f"{code}.present",
                f"{what} not in ledger, got nothing for {res.object_id or '?'} /"
                f" {res.digest or '?'}, expected it stored",
                task,
            )
        ]
    items = [info(f"{code}.present", f"{what} stored, found by {res.found_by}", task)]
    if res.scheme is None:
        items.append(
            error(
                f"{code}.digest",
                f"{what} digest mismatch, got stored {res.doc.legacy_digest},"
                f" expected {res.digest}",
                task,
            )
        )
    else:
        items.append(
            CohortFinding(
                f"{code}.digest", "info", f"{what} digest matches", task, None, res.scheme
            )
        )
    return items


def _calibration_item(
    task: str, plan: Resolution, calibrations: Sequence[CalibrationResult]
) -> CohortFinding:
    assert plan.doc is not None
    model = plan.doc.model(EvaluatorPlan)
    version = model.schema_version
    _, adapter_name, adapter_version = model.verifier
    adapter = (adapter_name, adapter_version)
    runs = [
        c
        for c in calibrations
        if c.plan_schema_version == version
        and (c.plan_digest is None or plan.doc.scheme_for(c.plan_digest) is not None)
        and (c.adapter is None or c.adapter == adapter)
    ]
    supported = [c for c in runs if c.candidate == "straightforward"]
    decoys = [c for c in runs if c.candidate == "decoy"]
    good_straight = any(c.recommendation == "accept_candidate" for c in supported)
    good_decoy = any(c.recommendation == "reject_candidate" for c in decoys)
    contrary = [
        c
        for c in runs
        if (c.candidate == "straightforward" and c.recommendation != "accept_candidate")
        or (c.candidate == "decoy" and c.recommendation == "accept_candidate")
    ]
    ok = good_straight and good_decoy and not contrary
    return _check(
        ok,
        "gate.carry_over.calibration",
        f"plan version {version} calibrated: straightforward accepted, decoy rejected",
        f"plan version {version} not calibrated, got {len(supported)} straightforward"
        f" (accepted: {good_straight}), {len(decoys)} decoy (rejected: {good_decoy}),"
        f" {len(contrary)} contrary run(s), expected a straightforward candidate accepted and a"
        " decoy rejected with no contrary run"
        + (
            f" (v{version} accepts the decoy and cannot be calibrated: bind the task to a newer"
            " plan version, e.g. 0.4)"
            if any(c.candidate == "decoy" and c.recommendation == "accept_candidate" for c in runs)
            else " (provledger calibrate --record --key KEY, then --calibration DIGEST)"
        ),
        task,
    )


@dataclass(frozen=True)
class _Gate:
    """What every successor task is judged against."""

    lookup: CohortLookup
    runs: tuple[CalibrationResult, ...]
    carried: tuple[CarryOver, ...]
    pred_refs: Mapping[str, tuple[Resolution, Resolution]]  # task id -> (WorkUnit, plan)
    banned: frozenset[str]  # predecessor tasks never again held out
    baseline_plan: Profile | None
    baseline_wu: Profile | None


def successor_gate(
    predecessor: Mapping[str, object],
    burn_notice: Mapping[str, object],
    successor: Mapping[str, object],
    lookup: CohortLookup,
    calibrations: Iterable[CalibrationResult] = (),
) -> GateReport:
    """Evaluate every successor gate item; never raises for a failed item."""
    pred_digests, items = _predecessor_items(predecessor, burn_notice)
    items += _successor_items(successor, pred_digests)
    carried = carried_over_tasks(predecessor, successor)
    pred_refs = {
        tid: _resolve_task(lookup, t)
        for t in CohortView.of(predecessor).tasks
        if (tid := as_str(t.id))
    }
    baseline_plan, baseline_wu, baseline_missing = _baseline(pred_refs)
    if baseline_missing:
        items.append(
            error(
                "gate.strength.baseline",
                f"predecessor objects not in ledger, got none for {baseline_missing},"
                " expected every predecessor WorkUnit and plan stored to compare strength",
            )
        )
    items += _revision_strength(predecessor, successor)
    gate = _Gate(
        lookup,
        tuple(calibrations),
        carried,
        pred_refs,
        frozenset(never_again_tasks(burn_notice)),
        baseline_plan,
        baseline_wu,
    )
    for task in CohortView.of(successor).tasks:
        items += _task_items(gate, task)
    items += _uncarried_banned_items(gate)
    return GateReport(tuple(sorted(items, key=sort_key)), carried)


def _predecessor_items(
    predecessor: Mapping[str, object], burn_notice: Mapping[str, object]
) -> tuple[DefinitionDigests | None, list[CohortFinding]]:
    """The predecessor is burned, its definition unchanged and named by the notice."""
    stage = CohortView.of(predecessor).stage
    items = [
        _check(
            stage == "burned",
            "gate.predecessor.stage",
            "predecessor is burned",
            f"predecessor not burned, got stage {shown(stage)}, expected burned",
        )
    ]
    pred_digests, item = _definition(predecessor, "predecessor", "gate.predecessor.definition")
    items.append(item)
    notice_problems = [
        f
        for f in check_burn_notice(predecessor, burn_notice)
        if f.severity == "error" and f.code != "burn.stage"
    ]
    items += [error("gate.burn_notice", f.message, f.task) for f in notice_problems] or [
        info("gate.burn_notice", "burn notice names the predecessor and its unchanged definition")
    ]
    return pred_digests, items


def _successor_items(
    successor: Mapping[str, object], pred_digests: DefinitionDigests | None
) -> list[CohortFinding]:
    """The successor is frozen, its definition digest holds, it claims the predecessor."""
    succ_stage = CohortView.of(successor).stage
    items = [
        _check(
            succ_stage in ("frozen", "burned"),
            "gate.successor.stage",
            f"successor definition fixed at stage {succ_stage}",
            f"successor not frozen, got stage {shown(succ_stage)}, expected frozen",
        )
    ]
    _, item = _definition(successor, "successor", "gate.successor.definition")
    items.append(item)
    return items + _claim_items(successor, pred_digests)


def _task_items(gate: _Gate, task: Task) -> list[CohortFinding]:
    """One successor task: its objects stored and bound, each carry-over justified."""
    task_id = task.label
    wu, plan = _resolve_task(gate.lookup, task)
    items = _present(wu, "gate.work_unit", "WorkUnit", task_id)
    items += _present(plan, "gate.plan", "EvaluatorPlan", task_id)
    if plan.doc is not None:
        problems = binding_problems(task, plan.doc.model(EvaluatorPlan), wu)
        items += [
            error("gate.plan.binding", f"plan binding drift, {message}", task_id)
            for _, message in problems
        ] or [info("gate.plan.binding", "plan bound to its WorkUnit and source", task_id)]
    mine = [c for c in gate.carried if c.task == task_id]
    for carry in mine:
        items += _carry_over_items(gate, task, carry, wu, plan)
    if not mine:
        items += _strength_items(
            task_id, plan, wu, gate.baseline_plan, gate.baseline_wu, "every predecessor task"
        )
    return items


def _carry_over_items(
    gate: _Gate, task: Task, carry: CarryOver, wu: Resolution, plan: Resolution
) -> list[CohortFinding]:
    """A carried-over task: calibrated, not held out when banned, no weaker than before."""
    task_id = task.label
    pred_wu, pred_plan = gate.pred_refs.get(carry.predecessor_task, (None, None))
    items = _carry_items(task_id, carry, plan, pred_plan, gate.runs)
    if carry.predecessor_task in gate.banned:
        split = task.split
        items.append(
            _check(
                split != "held_out",
                "gate.held_out",
                f"continuation of banned {carry.predecessor_task} is labelled"
                f" {shown(split)}, not held_out",
                f"task presented as untouched held-out evidence, got split held_out for"
                f" a continuation of {carry.predecessor_task}, expected pilot, train or"
                " development",
                task_id,
            )
        )
    items += _strength_items(
        task_id,
        plan,
        wu,
        plan_profile(pred_plan.doc.model(EvaluatorPlan)) if pred_plan and pred_plan.doc else None,
        work_unit_profile(pred_wu.doc.model(WorkUnit)) if pred_wu and pred_wu.doc else None,
        f"burned task {carry.predecessor_task}",
    )
    return items


def _uncarried_banned_items(gate: _Gate) -> list[CohortFinding]:
    return [
        info("gate.held_out", f"banned task {task_id} is not carried over", task_id)
        for task_id in sorted(gate.banned)
        if not any(c.predecessor_task == task_id for c in gate.carried)
    ]


def _claim_items(
    successor: Mapping[str, object], pred_digests: DefinitionDigests | None
) -> list[CohortFinding]:
    claims = predecessor_claims(successor)
    if not claims:
        return [info("gate.successor.claim", "successor makes no predecessor claim")]
    out: list[CohortFinding] = []
    for namespace, key, digest in claims:
        ok = pred_digests is not None and digest in pred_digests
        out.append(
            _check(
                ok,
                "gate.successor.claim",
                f"successor's extensions[{namespace!r}].{key} names the predecessor",
                f"successor claims another predecessor, got {key} {digest}, expected"
                f" {pred_digests.legacy if pred_digests else 'a computable digest'}",
            )
        )
    return out


def _baseline(
    pred_refs: Mapping[str, tuple[Resolution, Resolution]],
) -> tuple[Profile | None, Profile | None, list[str]]:
    plans = [p.doc.model(EvaluatorPlan) for _, p in pred_refs.values() if p.doc is not None]
    units = [w.doc.model(WorkUnit) for w, _ in pred_refs.values() if w.doc is not None]
    missing = sorted(
        [f"plan {p.object_id}" for _, p in pred_refs.values() if p.doc is None]
        + [f"WorkUnit {w.object_id}" for w, _ in pred_refs.values() if w.doc is None]
    )
    return (
        weakest([plan_profile(p) for p in plans]) if plans else None,
        weakest([work_unit_profile(w) for w in units]) if units else None,
        missing,
    )


def _revision_strength(
    predecessor: Mapping[str, object], successor: Mapping[str, object]
) -> list[CohortFinding]:
    def pinned(cohort: Mapping[str, object]) -> bool:
        return all(
            isinstance(r, str) and FULL_GIT_SHA.match(r) is not None
            for r in (t.source_revision for t in CohortView.of(cohort).tasks)
        )

    ok = not pinned(predecessor) or pinned(successor)
    return [
        _check(
            ok,
            "gate.strength.revisions",
            "successor pins sources as strictly as the predecessor",
            "successor weakens source pinning, got a revision that is not a full commit id,"
            " expected every source pinned like the predecessor's",
        )
    ]


def _carry_items(
    task_id: str,
    carry: CarryOver,
    plan: Resolution,
    pred_plan: Resolution | None,
    runs: Sequence[CalibrationResult],
) -> list[CohortFinding]:
    if plan.doc is None:
        return []  # reported by gate.plan.present
    version = plan.doc.model(EvaluatorPlan).at("schema_version")  # as recorded
    if pred_plan is None or pred_plan.doc is None:
        return [
            error(
                "gate.carry_over.plan_version",
                f"burned plan of {carry.predecessor_task} not in ledger, got nothing,"
                " expected it stored to compare plan versions",
                task_id,
            ),
            _calibration_item(task_id, plan, runs),
        ]
    old = pred_plan.doc.model(EvaluatorPlan).at("schema_version")
    new_key, old_key = version_key(version), version_key(old)
    ok = new_key is not None and old_key is not None and new_key > old_key
    return [
        _check(
            ok,
            "gate.carry_over.plan_version",
            f"plan version {version} is newer than burned {old}",
            f"carried-over task keeps burned plan semantics, got plan version {shown(version)},"
            f" expected newer than the burned {shown(old)}",
            task_id,
        ),
        _calibration_item(task_id, plan, runs),
    ]


def _strength_items(
    task_id: str,
    plan: Resolution,
    wu: Resolution,
    plan_before: Profile | None,
    wu_before: Profile | None,
    against: str,
) -> list[CohortFinding]:
    out: list[CohortFinding] = []
    now_plan = None if plan.doc is None else plan_profile(plan.doc.model(EvaluatorPlan))
    now_wu = None if wu.doc is None else work_unit_profile(wu.doc.model(WorkUnit))
    for now, before, what, code in (
        (now_plan, plan_before, "plan", "gate.strength.plan"),
        (now_wu, wu_before, "WorkUnit", "gate.strength.work_unit"),
    ):
        if now is None:
            continue  # reported by gate.*.present
        if before is None:
            out.append(
                error(
                    code,
                    f"cannot compare {what} strength, got no stored counterpart for {against},"
                    " expected it stored",
                    task_id,
                )
            )
            continue
        weaker = weakenings(before, now)
        out.append(
            _check(
                not weaker,
                code,
                f"{what} enforces every check of {against}",
                f"{what} weaker than {against}, got {'; '.join(weaker)}, expected no check dropped",
                task_id,
            )
        )
    return out


def build_binding(
    predecessor: Mapping[str, object],
    burn_notice: Mapping[str, object],
    successor: Mapping[str, object],
    report: GateReport,
    *,
    evaluator_plans: Sequence[Mapping[str, str]] | None = None,
    calibrations: Sequence[str] | None = None,
) -> dict[str, object]:
    """The cohort-binding object for a passed gate (``GateError`` if it failed).

    ``evaluator_plans`` / ``calibrations``: what the binder named (``cohort bind --plan``
    and ``--calibration``), recorded as given, sorted."""
    if not report.passed:
        raise GateError("successor", report.failed)
    pred = definition_digests(predecessor)
    succ = definition_digests(successor)
    named: dict[str, object] = {}
    if evaluator_plans is not None:
        named["evaluator_plans"] = sorted(
            (dict(p) for p in evaluator_plans), key=lambda p: (p["task"], p["plan_id"])
        )
    if calibrations is not None:
        named["calibrations"] = sorted(set(calibrations))
    return {
        **named,
        "provledger_kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "successor_id": CohortView.of(successor).id,
        "successor_definition_digest": succ.to_json(),
        "predecessor_id": CohortView.of(predecessor).id,
        "predecessor_definition_digest": pred.to_json(),
        "burn_notice_digest": canonical_digest(burn_notice),
        "carried_over": [c.to_json() for c in sorted(report.carried_over, key=_carry_key)],
        "gate": _gate_json(report.items),
    }


def _carry_key(carry: CarryOver) -> tuple[str, str]:
    return (carry.task, carry.predecessor_task)


def _gate_json(items: Sequence[CohortFinding]) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for item in sorted(items, key=sort_key):
        entry = {"code": item.code}
        if item.task is not None:
            entry["task"] = item.task
        if item.scheme is not None:
            entry["scheme"] = item.scheme
        key = tuple(sorted(entry.items()))
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


def bind_successor(
    predecessor: Mapping[str, object],
    burn_notice: Mapping[str, object],
    successor: Mapping[str, object],
    lookup: CohortLookup,
    calibrations: Iterable[CalibrationResult] = (),
) -> dict[str, object]:
    """Run the gate and build the binding; ``GateError`` lists every failed item."""
    report = successor_gate(predecessor, burn_notice, successor, lookup, calibrations)
    return build_binding(predecessor, burn_notice, successor, report)
