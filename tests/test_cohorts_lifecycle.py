"""Stages, transitions, frozen-definition immutability and the freeze gate."""

from __future__ import annotations

import copy
import itertools
from typing import Any

import pytest
from cohort_corpus import CORPUS, TOY, lookup_from

from cohorts.definition import definition_digests
from cohorts.errors import CohortError, CohortInputError, GateError, LifecycleError
from cohorts.findings import errors
from cohorts.lifecycle import (
    STAGES,
    allowed_next,
    check_stage,
    check_transition,
    check_update,
    freeze,
    freeze_findings,
    require_freezable,
)
from cohorts.lookup import MemoryLookup
from cohorts.validation import schema_validator
from ledger.errors import RuleViolation


def toy() -> tuple[MemoryLookup, dict[str, Any], dict[str, Any]]:
    lookup, cohorts = lookup_from(TOY)
    return lookup, cohorts["cohort-v1"], cohorts["cohort-v2"]


def corpus() -> tuple[MemoryLookup, dict[str, dict[str, Any]]]:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS} (lives in ../shared, outside the repo)")
    return lookup_from(CORPUS)


# --- stages and transitions --------------------------------------------------------------

ALLOWED = {
    ("scaffold", "scaffold"), ("scaffold", "collecting"),
    ("collecting", "collecting"), ("collecting", "frozen"),
    ("frozen", "frozen"), ("frozen", "burned"),
    ("burned", "burned"),
}  # fmt: skip


@pytest.mark.parametrize(("old", "new"), list(itertools.product(STAGES, STAGES)))
def test_transition_table(old: str, new: str) -> None:
    if (old, new) in ALLOWED:
        check_transition(old, new)
    else:
        with pytest.raises(LifecycleError) as info:
            check_transition(old, new)
        assert f"{old} -> {new}" in str(info.value)
        assert info.value.exit_code == 4


def test_lifecycle_error_is_a_rule_violation_and_a_cohort_error() -> None:
    with pytest.raises(LifecycleError) as info:
        check_transition("burned", "frozen")
    assert isinstance(info.value, RuleViolation)
    assert isinstance(info.value, CohortError)
    assert "\n" not in str(info.value)


def test_unknown_stage_is_bad_input() -> None:
    with pytest.raises(CohortInputError) as info:
        check_transition("frozen", "thawed")
    assert info.value.exit_code == 3
    with pytest.raises(CohortInputError):
        check_stage(None)
    assert allowed_next("collecting") == ("collecting", "frozen")


# --- check_update ------------------------------------------------------------------------


def test_frozen_cohort_may_gain_evidence() -> None:
    _, _, v2 = toy()
    later = copy.deepcopy(v2)
    later["tasks"][0]["evidence"] = {"status": "excluded", "attempts": [], "exclusion_reason": "x"}
    check_update(v2, later)
    burned = dict(later, stage="burned")
    check_update(v2, burned)
    check_update(burned, burned)


@pytest.mark.parametrize("stage", ["frozen", "burned"])
def test_fixed_definition_cannot_change(stage: str) -> None:
    _, _, v2 = toy()
    previous = dict(v2, stage=stage)
    later = copy.deepcopy(previous)
    later["tasks"][0]["difficulty"] = "large"
    with pytest.raises(LifecycleError) as info:
        check_update(previous, later)
    assert "frozen definition" in str(info.value)
    assert definition_digests(v2).legacy in str(info.value)


def test_recorded_digest_cannot_change_either() -> None:
    _, _, v2 = toy()
    later = dict(v2, definition_digest="sha256:" + "0" * 64)
    with pytest.raises(LifecycleError, match="definition_digest"):
        check_update(v2, later)


def test_unfixed_definition_may_change_and_first_document_may_be_any_stage() -> None:
    _, _, v2 = toy()
    collecting = dict(copy.deepcopy(v2), stage="collecting")
    collecting["tasks"][0]["difficulty"] = "large"
    check_update(collecting, v2)
    for stage in STAGES:
        check_update(None, dict(v2, stage=stage))


def test_update_refuses_skips_and_other_cohorts() -> None:
    _, v1, v2 = toy()
    with pytest.raises(LifecycleError):
        check_update(dict(v2, stage="scaffold"), v2)
    with pytest.raises(LifecycleError):
        check_update(v1, dict(v1, stage="frozen"))
    with pytest.raises(CohortInputError, match="another cohort"):
        check_update(v1, v2)


# --- freeze gate -------------------------------------------------------------------------


def test_toy_successor_is_freezable_and_says_which_scheme_matched() -> None:
    lookup, _, v2 = toy()
    found = freeze_findings(v2, lookup, schema_validator)
    assert errors(found) == []
    infos = {(f.code, f.task, f.scheme) for f in found}
    assert ("cohort.definition_digest", None, "both") in infos
    for task in v2["tasks"]:
        assert ("task.work_unit.digest", task["id"], "both") in infos
        assert ("task.plan.digest", task["id"], "both") in infos
    assert require_freezable(v2, lookup, schema_validator) == found


def test_freeze_sets_stage_and_digest() -> None:
    lookup, _, v2 = toy()
    draft = {k: v for k, v in v2.items() if k != "definition_digest"}
    draft["stage"] = "collecting"
    frozen = freeze(draft, lookup, schema_validator)
    assert frozen["stage"] == "frozen"
    assert frozen["definition_digest"] == v2["definition_digest"]
    assert draft["stage"] == "collecting"


def test_freeze_gate_reports_every_failure_at_once() -> None:
    lookup, v1, v2 = toy()
    cohort = copy.deepcopy(v2)
    tasks = cohort["tasks"]
    fresh = tasks[0]["id"]  # example/toy-v2/006-exponent-operator
    cohort["minimum_final_tasks"] = 7
    cohort["definition_digest"] = "sha256:" + "9" * 64
    tasks[1]["family"] = "other"  # test_failure no longer covered
    tasks[2]["evaluator"]["plan_digest"] = "sha256:" + "8" * 64  # plan found by id only
    tasks[3]["source"]["revision"] = "main"
    tasks[4]["work_unit"]["version"] = 2  # plan binding and WorkUnit disagree
    tasks.append(copy.deepcopy(tasks[0]))  # duplicate id and WorkUnit item
    lookup = MemoryLookup(d for d in lookup.of_kind("evaluator-plan"))  # no WorkUnits at all
    for doc in (v1, v2):
        lookup.add("benchmark-cohort", doc)
    cohort["extra"] = True  # schema: additionalProperties

    found = freeze_findings(cohort, lookup, schema_validator)
    keys = {(f.code, f.task) for f in errors(found)}
    expected = {
        ("cohort.schema", None),
        ("cohort.definition_digest", None),
        ("cohort.minimum_tasks", None),
        ("cohort.families", None),
        ("cohort.task_ids", None),
        ("cohort.work_items", fresh),
        ("task.plan.digest", tasks[2]["id"]),
        ("task.source.revision", tasks[3]["id"]),
        ("task.plan.binding.source_revision", tasks[3]["id"]),
        ("task.plan.binding.work_unit_version", tasks[4]["id"]),
    } | {("task.work_unit.missing", t["id"]) for t in tasks}
    assert keys == expected

    with pytest.raises(GateError) as info:
        require_freezable(cohort, lookup, schema_validator)
    assert {(f.code, f.task) for f in info.value.failures} == expected
    assert info.value.exit_code == 4
    assert f"got {len(info.value.failures)} failed item(s)" in str(info.value)


def test_burned_cohort_cannot_be_frozen_again() -> None:
    lookup, v1, _ = toy()
    found = errors(freeze_findings(v1, lookup, schema_validator))
    assert [(f.code, f.task) for f in found] == [("cohort.stage", None)]


def test_freeze_gate_checks_plan_binding_and_validators() -> None:
    lookup, _, v2 = toy()
    task = v2["tasks"][1]
    plan = copy.deepcopy(lookup.find("evaluator-plan", task["evaluator"]["plan_id"]).value)  # type: ignore[union-attr]
    plan["binding"]["work_unit_id"] = "example/toy/other"
    plan["binding"]["work_unit_digest"] = "sha256:" + "7" * 64
    plan["required_validator_ids"] = ["independent-review"]
    plan["backend"]["type"] = "json"
    lookup.add("evaluator-plan", plan)
    cohort = copy.deepcopy(v2)
    forged = lookup.of_kind("evaluator-plan")[-1]
    cohort["tasks"][1]["evaluator"]["plan_digest"] = forged.legacy_digest
    cohort.pop("definition_digest")
    cohort["stage"] = "collecting"
    keys = {
        f.code
        for f in errors(freeze_findings(cohort, lookup, schema_validator))
        if f.task == task["id"]
    }
    assert keys == {
        "task.plan.binding.work_unit_id",
        "task.plan.binding.work_unit_digest",
        "task.plan.validators",
        "task.plan.backend",
        "task.plan.schema",  # backend.type is const unified_diff
    }


def test_hidden_plan_absent_is_not_an_error() -> None:
    lookup, _, v2 = toy()
    cohort = copy.deepcopy(v2)
    evaluator = cohort["tasks"][0]["evaluator"]
    evaluator["visibility"] = "hidden"
    evaluator.pop("plan_path")
    evaluator["plan_digest"] = "sha256:" + "6" * 64
    evaluator["plan_id"] = "example/toy-v2/hidden"
    cohort.pop("definition_digest")
    cohort["stage"] = "collecting"
    found = freeze_findings(cohort, lookup, schema_validator)
    assert errors(found) == []
    assert ("task.plan.hidden", cohort["tasks"][0]["id"]) in {(f.code, f.task) for f in found}


# --- the corpus --------------------------------------------------------------------------


def test_corpus_freeze_findings() -> None:
    lookup, cohorts = corpus()

    def failed(name: str) -> set[tuple[str, str | None]]:
        found = freeze_findings(cohorts[name], lookup, schema_validator)
        return {(f.code, f.task) for f in errors(found)}

    assert failed("phase-b2-first-five") == {("cohort.stage", None)}
    # The corpus lacks the successor's plans for tasks 003-005.
    assert failed("phase-b2-successor-five") == {
        ("task.plan.missing", "benchmark/phase-b2/003-definition-json-command"),
        ("task.plan.missing", "benchmark/phase-b2/004-safe-cohort-loader-refactor"),
        ("task.plan.missing", "benchmark/phase-b2/005-first-five-freeze-checklist"),
    }
    v3 = failed("phase-b2-first-five-v3")
    task101 = "benchmark/phase-b2-v3/101-negative-evidence-type-boundary"
    assert ("task.work_unit.schema", task101) in v3
    assert len(v3) == 9  # 101's WorkUnit kind "code", plus 4 absent WorkUnits and plans
