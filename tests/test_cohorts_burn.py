"""Burn notices: upstream's burn facts become a schema-valid, deterministic notice."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest

from cohorts.burn import (
    BurnFacts,
    Reference,
    TaskReason,
    build_burn_notice,
    burn_facts_from_extensions,
    burn_notice_for,
    check_burn_notice,
    check_timestamp,
    never_again_tasks,
    require_burnable,
)
from cohorts.definition import definition_digests
from cohorts.errors import CohortInputError, GateError
from cohorts.findings import errors
from cohorts.validation import schema_validator
from ledger.encoding.digest import canonical_digest

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "idkmesh"
FIRST_FIVE = CORPUS / "benchmarks" / "phase-b2-first-five"
TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
BURNED_DIGEST = "sha256:4fdec8a2768e32dc223b218ed70aec3a67aefcd87c64b72c5675c9921a4eab5c"
TASK = "benchmark/phase-b2/{:03d}-{}".format
TASKS = [
    TASK(1, "cohort-path-boundary"),
    TASK(2, "frozen-definition-digest-test"),
    TASK(3, "definition-json-command"),
    TASK(4, "safe-cohort-loader-refactor"),
    TASK(5, "first-five-freeze-checklist"),
]
ISSUED = "2026-09-01T08:30:00Z"


def first_five() -> dict[str, Any]:
    path = FIRST_FIVE / "cohort.json"
    if not path.is_file():
        pytest.skip(f"reference corpus absent: {path} (lives in ../shared, outside the repo)")
    value: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return value


def toy(name: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / name).read_text("utf-8"))
    return value


def test_burn_facts_of_first_five() -> None:
    cohort = first_five()
    facts = burn_facts_from_extensions(cohort)
    assert isinstance(facts, BurnFacts)
    assert facts.cohort_id == "benchmark/phase-b2-first-five"
    assert facts.stage == "burned"
    assert facts.recorded_definition_digest == BURNED_DIGEST
    assert facts.definition_digest.legacy == BURNED_DIGEST
    assert facts.reason.startswith("Frozen evaluator plans encoded semantic fragments")
    assert facts.observed_task == TASKS[0]
    assert facts.observed_solution_pr == 153
    assert facts.observed_solution_merge_commit == "c04ae627a7ff6b0bd700aae36afdb60f3cb8af97"
    assert facts.successor_issue == 157
    assert facts.repository == "https://github.com/MSKazemi/idkmesh"
    # All five outcomes are excluded, each with the cohort's own reason.
    assert [e.task for e in facts.excluded_outcomes] == TASKS
    by_task = {t["id"]: t["evidence"]["exclusion_reason"] for t in cohort["tasks"]}
    assert all(e.reason == by_task[e.task] for e in facts.excluded_outcomes)
    # Only the task whose solution was observed is banned from held-out use.
    assert [t.task for t in facts.never_again_held_out] == [TASKS[0]]
    assert "#153" in facts.never_again_held_out[0].reason


def test_first_five_notice_is_schema_valid_and_matches_the_prose_notice() -> None:
    cohort = first_five()
    facts = burn_facts_from_extensions(cohort)
    assert facts is not None
    prose = (FIRST_FIVE / "BURN_NOTICE.md").read_bytes()
    prose_ref = Reference(
        "notice",
        "document",
        "benchmarks/phase-b2-first-five/BURN_NOTICE.md",
        "sha256:" + hashlib.sha256(prose).hexdigest(),
    )
    notice = facts.to_notice(issued_at=ISSUED, references=[prose_ref])
    assert schema_validator("burn-notice", notice) == []
    assert notice["provledger_kind"] == "burn-notice"
    assert notice["definition_digest"] == {"legacy": BURNED_DIGEST, "jcs": BURNED_DIGEST}
    assert never_again_tasks(notice) == {TASKS[0]}
    refs = {(r["rel"], r["type"], r["ref"]) for r in notice["references"]}
    assert refs == {
        ("successor", "issue", "157"),
        ("observation", "pull_request", "153"),
        ("observation", "commit", "c04ae627a7ff6b0bd700aae36afdb60f3cb8af97"),
        ("notice", "document", "benchmarks/phase-b2-first-five/BURN_NOTICE.md"),
    }
    assert (
        notice["extensions"]["org.idkmesh.phase_b2"]["burn"]
        == (cohort["extensions"]["org.idkmesh.phase_b2"]["burn"])
    )
    # The prose notice states the same unchanged digest and the same observed task.
    text = prose.decode("utf-8")
    assert set(re.findall(r"sha256:[0-9a-f]{64}", text)) == {BURNED_DIGEST}
    assert TASKS[0] in text
    assert errors(check_burn_notice(cohort, notice)) == []


def test_notice_bytes_do_not_depend_on_input_order() -> None:
    facts = burn_facts_from_extensions(first_five())
    assert facts is not None
    extra = [
        Reference("successor", "cohort", "benchmark/phase-b2-successor-five", BURNED_DIGEST),
        Reference("notice", "uri", "https://example.org/notice"),
    ]
    one = facts.to_notice(issued_at=ISSUED, references=extra)
    two = facts.to_notice(issued_at=ISSUED, references=[*reversed(extra), extra[0]])
    assert canonical_digest(one) == canonical_digest(two)
    assert [r["rel"] for r in one["references"]] == sorted(r["rel"] for r in one["references"])


def test_cohorts_without_burn_facts_give_none() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    for path in sorted((CORPUS / "benchmarks").glob("*/cohort.json")):
        cohort = json.loads(path.read_text("utf-8"))
        facts = burn_facts_from_extensions(cohort)
        assert (facts is not None) == (path.parent.name == "phase-b2-first-five"), path


@pytest.mark.parametrize("burn", [None, "burned", {"observed_task": "x"}, {"reason": ""}])
def test_malformed_burn_facts_are_bad_input(burn: Any) -> None:
    cohort = toy("cohort-v1.json")
    cohort["extensions"]["org.idkmesh.phase_b2"]["burn"] = burn
    if burn is None:
        assert burn_facts_from_extensions(cohort) is None
        return
    with pytest.raises(CohortInputError, match="burn facts malformed"):
        burn_facts_from_extensions(cohort)


def test_toy_example_notice_reproduces() -> None:
    cohort = toy("cohort-v1.json")
    successor = toy("cohort-v2.json")
    facts = burn_facts_from_extensions(cohort)
    assert facts is not None
    stored = toy("burn-notice.json")
    rebuilt = facts.to_notice(
        issued_at=stored["issued_at"],
        references=[
            Reference("successor", "cohort", successor["id"], successor["definition_digest"])
        ],
    )
    assert rebuilt == stored
    assert schema_validator("burn-notice", stored) == []
    assert require_burnable(cohort, stored) == []


def test_check_burn_notice_reports_every_problem() -> None:
    cohort = toy("cohort-v1.json")
    notice = copy.deepcopy(toy("burn-notice.json"))
    notice["provledger_kind"] = "cohort-binding"
    notice["cohort_id"] = "example/other"
    notice["definition_digest"]["legacy"] = "sha256:" + "0" * 64
    notice["never_again_held_out"].append({"task": "example/toy/999-ghost", "reason": "x"})
    notice["excluded_outcomes"] = notice["excluded_outcomes"][1:]
    cohort["stage"] = "collecting"
    cohort["definition_digest"] = "sha256:" + "1" * 64
    found = check_burn_notice(cohort, notice)
    assert {(f.code, f.severity, f.task) for f in found} == {
        ("burn.notice.kind", "error", None),
        ("burn.notice.cohort", "error", None),
        ("burn.stage", "error", None),
        ("burn.notice.definition", "error", None),  # the notice's digest
        ("burn.notice.task", "error", "example/toy/999-ghost"),
        ("burn.exclusion.unlisted", "warning", "example/toy/001-negative-operand"),
    }
    assert sum(f.code == "burn.notice.definition" for f in found) == 2  # and the recorded one
    with pytest.raises(GateError) as info:
        require_burnable(cohort, notice)
    assert len(info.value.failures) == 6


def test_burn_notice_for_defaults_to_excluded_tasks() -> None:
    cohort = toy("cohort-v1.json")
    notice = burn_notice_for(
        cohort,
        reason="outcomes inspected",
        issued_at="2026-01-15T12:00:00+01:00",
        never_again_held_out=[TaskReason("example/toy/001-negative-operand", "solution public")],
    )
    assert schema_validator("burn-notice", notice) == []
    assert [e["task"] for e in notice["excluded_outcomes"]] == sorted(
        t["id"] for t in cohort["tasks"]
    )
    assert notice["definition_digest"] == definition_digests(cohort).to_json()
    assert "extensions" not in notice


def test_conflicting_reasons_for_one_task_are_refused() -> None:
    digests = definition_digests(toy("cohort-v1.json"))
    with pytest.raises(CohortInputError, match="twice"):
        build_burn_notice(
            cohort_id="example/toy-v1",
            definition_digest=digests,
            reason="r",
            issued_at=ISSUED,
            excluded_outcomes=[TaskReason("a", "x"), TaskReason("a", "y")],
        )
    same = build_burn_notice(
        cohort_id="example/toy-v1",
        definition_digest=digests,
        reason="r",
        issued_at=ISSUED,
        excluded_outcomes=[TaskReason("a", "x"), TaskReason("a", "x")],
    )
    assert same["excluded_outcomes"] == [{"task": "a", "reason": "x"}]


@pytest.mark.parametrize(
    "value",
    ["2026-09-01", "2026-09-01T08:30:00", "2026-13-01T00:00:00Z", "2026-09-01T08:30:00Z\n", ""],
)
def test_bad_timestamps_are_refused(value: str) -> None:
    with pytest.raises(CohortInputError, match="RFC 3339"):
        check_timestamp(value)


def test_good_timestamps_pass() -> None:
    for value in ("2026-09-01T08:30:00Z", "2026-09-01T08:30:00.123456-05:00"):
        assert check_timestamp(value) == value
