"""The successor gate: every failed item at once, and the binding record it allows."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from cohort_corpus import CORPUS, TOY, load, lookup_from

from cohorts.binding import (
    CalibrationResult,
    bind_successor,
    build_binding,
    carried_over_tasks,
    plan_profile,
    successor_gate,
    weakenings,
    weakest,
)
from cohorts.burn import burn_facts_from_extensions
from cohorts.definition import definition_digests
from cohorts.errors import GateError
from cohorts.lookup import MemoryLookup
from cohorts.validation import schema_validator
from ledger.errors import RuleViolation
from verifiers.model import EvaluatorPlan

ISSUED = "2026-09-01T08:30:00Z"
CALIBRATED = [
    CalibrationResult(version, candidate, recommendation)
    for version in ("0.3", "0.4")
    for candidate, recommendation in (
        ("straightforward", "accept_candidate"),
        ("decoy", "reject_candidate"),
    )
]


class Toy:
    def __init__(self) -> None:
        self.lookup, cohorts = lookup_from(TOY)
        self.v1 = cohorts["cohort-v1"]
        self.v2 = cohorts["cohort-v2"]
        self.notice: dict[str, Any] = load(TOY / "burn-notice.json")
        self.calibrations = list(CALIBRATED)

    def gate(self, **changes: Any) -> Any:
        args = {
            "predecessor": self.v1,
            "burn_notice": self.notice,
            "successor": self.v2,
            "lookup": self.lookup,
            "calibrations": self.calibrations,
        }
        args.update(changes)
        return successor_gate(**args)


def failed_keys(report: Any) -> set[tuple[str, str | None]]:
    return {(f.code, f.task) for f in report.failed}


# --- the toy lineage passes --------------------------------------------------------------


def test_toy_successor_passes_and_binding_reproduces() -> None:
    world = Toy()
    report = world.gate()
    assert report.passed, [f.message for f in report.failed]
    assert [(c.task, c.predecessor_task) for c in report.carried_over] == [
        (f"example/toy/{slug}", f"example/toy/{slug}")
        for slug in (
            "002-division-test",
            "003-modulo-command",
            "004-token-refactor",
            "005-usage-doc",
        )
    ]
    binding = bind_successor(world.v1, world.notice, world.v2, world.lookup, world.calibrations)
    assert binding == load(TOY / "cohort-binding.json")
    assert schema_validator("cohort-binding", binding) == []
    assert binding["successor_definition_digest"]["legacy"] == world.v2["definition_digest"]
    assert binding["predecessor_definition_digest"]["legacy"] == world.v1["definition_digest"]
    codes = {item["code"] for item in binding["gate"]}
    assert {
        "gate.predecessor.stage",
        "gate.burn_notice",
        "gate.successor.claim",
        "gate.plan.binding",
        "gate.carry_over.plan_version",
        "gate.carry_over.calibration",
        "gate.held_out",
        "gate.strength.plan",
        "gate.strength.work_unit",
    } <= codes


# --- everything that must refuse, all reported together ----------------------------------


def test_gate_reports_all_failures_together() -> None:
    world = Toy()
    v1 = copy.deepcopy(world.v1)
    v1["stage"] = "frozen"
    v2 = copy.deepcopy(world.v2)
    v2["extensions"]["org.idkmesh.phase_b2"]["predecessor_burned_definition_digest"] = (
        "sha256:" + "5" * 64
    )
    tasks = {t["id"]: t for t in v2["tasks"]}
    lookup = world.lookup

    # 002 goes back to the burned v0.2 plan.
    burned_plan = lookup.find("evaluator-plan", "example/toy/002-division-test/evaluator")
    assert burned_plan is not None
    tasks["example/toy/002-division-test"]["evaluator"].update(
        plan_id=burned_plan.value["id"], plan_digest=burned_plan.legacy_digest
    )
    # 003 gets a plan that drops a log type and stops verifying log digests.
    weak = copy.deepcopy(
        lookup.find("evaluator-plan", "example/toy-v2/003-modulo-command/evaluator").value  # type: ignore[union-attr]
    )
    weak["backend"]["required_log_types"] = ["stdout"]
    weak["backend"]["verify_log_digests"] = False
    weak["id"] = "example/toy-v2/003-modulo-command/evaluator-weak"
    stored = lookup.add("evaluator-plan", weak)
    tasks["example/toy/003-modulo-command"]["evaluator"].update(
        plan_id=weak["id"], plan_digest=stored.legacy_digest
    )
    # 005's plan is bound to another source revision.
    drift = copy.deepcopy(
        lookup.find("evaluator-plan", "example/toy-v2/005-usage-doc/evaluator").value  # type: ignore[union-attr]
    )
    drift["binding"]["source_revision"] = "4" * 40
    drift["id"] = "example/toy-v2/005-usage-doc/evaluator-drift"
    stored = lookup.add("evaluator-plan", drift)
    tasks["example/toy/005-usage-doc"]["evaluator"].update(
        plan_id=drift["id"], plan_digest=stored.legacy_digest
    )
    # The banned task comes back as held-out evidence.
    banned = copy.deepcopy(world.v1["tasks"][0])
    banned["split"] = "held_out"
    v2["tasks"].append(banned)
    # A fresh task whose objects are not stored.
    ghost = copy.deepcopy(tasks["example/toy-v2/006-exponent-operator"])
    ghost["id"] = "example/toy-v2/007-ghost"
    ghost["work_unit"].update(id="example/toy-v2/007-ghost", digest="sha256:" + "6" * 64)
    ghost["evaluator"].update(
        plan_id="example/toy-v2/007-ghost/evaluator", plan_digest="sha256:" + "7" * 64
    )
    v2["tasks"].append(ghost)
    v2["definition_digest"] = definition_digests(v2).legacy
    # Only the v0.3 calibration is recorded, and its decoy was accepted.
    calibrations = [
        CalibrationResult("0.3", "straightforward", "accept_candidate"),
        CalibrationResult("0.3", "decoy", "accept_candidate"),
    ]

    report = world.gate(predecessor=v1, successor=v2, calibrations=calibrations)
    t = "example/toy/{}".format
    assert failed_keys(report) == {
        ("gate.predecessor.stage", None),
        ("gate.successor.claim", None),
        ("gate.carry_over.plan_version", t("002-division-test")),
        ("gate.carry_over.calibration", t("002-division-test")),  # v0.2 never calibrated
        ("gate.carry_over.calibration", t("003-modulo-command")),  # decoy accepted
        ("gate.strength.plan", t("003-modulo-command")),
        ("gate.carry_over.calibration", t("004-token-refactor")),  # v0.4 never calibrated
        ("gate.plan.binding", t("005-usage-doc")),
        ("gate.carry_over.calibration", t("005-usage-doc")),
        ("gate.carry_over.plan_version", t("001-negative-operand")),  # same v0.2 plan
        ("gate.carry_over.calibration", t("001-negative-operand")),
        ("gate.held_out", t("001-negative-operand")),
        ("gate.work_unit.present", "example/toy-v2/007-ghost"),
        ("gate.plan.present", "example/toy-v2/007-ghost"),
    }
    weakened = next(f for f in report.failed if f.code == "gate.strength.plan")
    assert "backend.verify_log_digests true -> False" in weakened.message
    assert "backend.required_log_types lost ['stderr']" in weakened.message

    with pytest.raises(GateError) as info:
        bind_successor(v1, world.notice, v2, lookup, calibrations)
    assert len(info.value.failures) == len(report.failed)
    assert isinstance(info.value, RuleViolation)
    assert info.value.exit_code == 4
    with pytest.raises(GateError):
        build_binding(v1, world.notice, v2, report)


def test_wrong_burn_notice_and_unfixed_successor_fail() -> None:
    world = Toy()
    notice = copy.deepcopy(world.notice)
    notice["definition_digest"]["jcs"] = "sha256:" + "0" * 64
    v2 = dict(world.v2, stage="collecting")
    v2.pop("definition_digest")
    report = world.gate(burn_notice=notice, successor=v2)
    assert failed_keys(report) == {
        ("gate.burn_notice", None),
        ("gate.successor.stage", None),
        ("gate.successor.definition", None),
    }


def test_missing_predecessor_objects_fail_the_strength_baseline() -> None:
    world = Toy()
    lookup = MemoryLookup(d for d in world.lookup.of_kind("work-unit"))
    for doc in world.lookup.of_kind("evaluator-plan"):
        if doc.value["id"] != "example/toy/002-division-test/evaluator":
            lookup.put(doc)
    report = world.gate(lookup=lookup)
    assert failed_keys(report) == {
        ("gate.strength.baseline", None),
        ("gate.carry_over.plan_version", "example/toy/002-division-test"),
        ("gate.strength.plan", "example/toy/002-division-test"),
    }


def test_calibration_can_be_narrowed_to_one_plan() -> None:
    world = Toy()
    plan = world.lookup.find("evaluator-plan", "example/toy-v2/004-token-refactor/evaluator")
    assert plan is not None
    only_004 = [
        *(c for c in CALIBRATED if c.plan_schema_version == "0.3"),
        CalibrationResult("0.4", "straightforward", "accept_candidate", plan.jcs_digest),
        CalibrationResult("0.4", "decoy", "reject_candidate", plan.legacy_digest),
    ]
    carried = {f"example/toy/{s}" for s in ("002-division-test", "003-modulo-command")}
    carried |= {"example/toy/005-usage-doc"}
    assert failed_keys(world.gate(calibrations=only_004)) == {
        ("gate.carry_over.calibration", task) for task in carried
    }
    other = [
        *(c for c in CALIBRATED if c.plan_schema_version == "0.3"),
        CalibrationResult("0.4", "straightforward", "accept_candidate", "sha256:" + "3" * 64),
        CalibrationResult("0.4", "decoy", "reject_candidate", "sha256:" + "3" * 64),
    ]
    assert failed_keys(world.gate(calibrations=other)) == {
        ("gate.carry_over.calibration", task)
        for task in (*carried, "example/toy/004-token-refactor")
    }


def test_carry_over_matches_by_task_id_or_work_unit_id() -> None:
    world = Toy()
    v2 = copy.deepcopy(world.v2)
    by_wu = v2["tasks"][1]
    by_wu["id"] = "example/toy-v2/renamed"  # keeps WorkUnit example/toy/002-division-test
    by_id = v2["tasks"][2]
    by_id["work_unit"]["id"] = "example/toy-v2/new-unit"  # keeps task id 003
    carried = {(c.task, c.predecessor_task, c.matched_by) for c in carried_over_tasks(world.v1, v2)}
    assert ("example/toy-v2/renamed", "example/toy/002-division-test", ("work_unit_id",)) in carried
    assert (
        "example/toy/003-modulo-command",
        "example/toy/003-modulo-command",
        ("task_id",),
    ) in carried
    assert not any(c[0] == "example/toy-v2/006-exponent-operator" for c in carried)


def test_weakenings_and_weakest() -> None:
    strong = plan_profile(
        EvaluatorPlan.of(
            {
                "policy": {
                    "require_plan_outside_candidate_root": True,
                    "require_output_outside_candidate_root": True,
                    "require_verifier_distinct_from_worker": True,
                },
                "backend": {
                    "verify_log_digests": True,
                    "require_nonempty_patch": True,
                    "required_log_types": ["stdout", "stderr"],
                },
                "required_validator_ids": ["a", "b"],
            }
        )
    )
    weak = plan_profile(
        EvaluatorPlan.of(
            {"backend": {"required_log_types": ["stdout"]}, "required_validator_ids": ["a"]}
        )
    )
    assert weakenings(strong, strong) == []
    assert weakenings(weak, strong) == []
    lost = weakenings(strong, weak)
    assert len(lost) == 7
    assert weakest([strong, weak]) == weak


# --- the corpus --------------------------------------------------------------------------


def corpus() -> tuple[MemoryLookup, dict[str, dict[str, Any]], dict[str, Any]]:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS} (lives in ../shared, outside the repo)")
    lookup, cohorts = lookup_from(CORPUS)
    facts = burn_facts_from_extensions(cohorts["phase-b2-first-five"])
    assert facts is not None
    return lookup, cohorts, facts.to_notice(issued_at=ISSUED)


def test_corpus_successor_five_gate() -> None:
    lookup, cohorts, notice = corpus()
    pred, succ = cohorts["phase-b2-first-five"], cohorts["phase-b2-successor-five"]
    report = successor_gate(pred, notice, succ, lookup, CALIBRATED)
    task = "benchmark/phase-b2/{}".format
    # Tasks 002-005 reuse the burned WorkUnits; the fresh task 001 replaces the observed one.
    assert [c.task for c in report.carried_over] == [
        task(s)
        for s in (
            "002-frozen-definition-digest-test",
            "003-definition-json-command",
            "004-safe-cohort-loader-refactor",
            "005-first-five-freeze-checklist",
        )
    ]
    # Only the successor plans the corpus does not include fail.
    assert failed_keys(report) == {
        ("gate.plan.present", task("003-definition-json-command")),
        ("gate.plan.present", task("004-safe-cohort-loader-refactor")),
        ("gate.plan.present", task("005-first-five-freeze-checklist")),
    }
    passed = {(f.code, f.task) for f in report.items if f.severity == "info"}
    assert ("gate.carry_over.plan_version", task("002-frozen-definition-digest-test")) in passed
    assert ("gate.held_out", task("001-cohort-path-boundary")) in passed
    assert ("gate.successor.claim", None) in passed
    # Without calibration records, the carried-over task with a stored plan fails too.
    uncalibrated = successor_gate(pred, notice, succ, lookup)
    assert failed_keys(uncalibrated) - failed_keys(report) == {
        ("gate.carry_over.calibration", task("002-frozen-definition-digest-test"))
    }


def test_corpus_scaffold_cannot_be_bound() -> None:
    lookup, cohorts, notice = corpus()
    report = successor_gate(
        cohorts["phase-b2-first-five"], notice, cohorts["phase-b2-successor-v2"], lookup, CALIBRATED
    )
    keys = failed_keys(report)
    assert ("gate.successor.stage", None) in keys
    assert ("gate.successor.definition", None) in keys
    assert sum(code == "gate.plan.present" for code, _ in keys) == 5
    assert sum(code == "gate.work_unit.present" for code, _ in keys) == 5
    assert len(keys) == 12
    assert report.carried_over == ()
