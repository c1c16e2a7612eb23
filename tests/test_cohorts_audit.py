"""Audit: over the corpus it reports exactly what docs/COHORTS.md says a careful human
auditor finds; over the toy lineage it is clean; it never crashes on broken input."""

from __future__ import annotations

import copy
import json
import random
from functools import cache
from typing import Any

import pytest
from cohort_corpus import CORPUS, TOY, load, lookup_from
from hypothesis import given, settings
from hypothesis import strategies as st

from cohorts.audit import CohortAuditReport, audit_cohort
from cohorts.burn import burn_facts_from_extensions
from cohorts.errors import AuditFailed
from cohorts.lookup import MemoryLookup
from cohorts.validation import schema_validator
from ledger.errors import CheckFailed


def corpus() -> tuple[MemoryLookup, dict[str, dict[str, Any]]]:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS} (lives in ../shared, outside the repo)")
    return lookup_from(CORPUS)


Key = tuple[str, str, str | None, str | None]


def keys(report: CohortAuditReport) -> set[Key]:
    return {(f.severity, f.code, f.task, f.attempt) for f in report.findings}


# What docs/COHORTS.md ("What an auditor finds in the corpus") lists, cohort by cohort.
B2 = "benchmark/phase-b2/{}".format
V2 = "benchmark/phase-b2-v2/{}".format
V3 = "benchmark/phase-b2-v3/{}".format
SUCC = "benchmark/phase-b2-successor/{}".format
REUSED = [
    B2("002-frozen-definition-digest-test"),
    B2("003-definition-json-command"),
    B2("004-safe-cohort-loader-refactor"),
    B2("005-first-five-freeze-checklist"),
]
SUCC_001 = SUCC("001-negative-evidence-type-boundary")
UNBOUND: set[Key] = {("warning", "relation.unbound", None, None)}

EXPECTED: dict[str, set[Key]] = {
    "phase-b2-first-five": {
        ("warning", "burn.notice.missing", None, None),
        ("warning", "relation.successors.multiple", None, None),
    },
    "phase-b2-successor-five": UNBOUND
    | {("error", "task.negative_evidence.missing", t, None) for t in [SUCC_001, *REUSED]}
    | {("error", "attempt.verification_result.digest", SUCC_001, "attempt-001")}
    | {("error", "task.plan.missing", t, None) for t in REUSED[1:]}
    | {("error", "attempt.result_manifest.missing", t, "attempt-001") for t in REUSED}
    | {("error", "attempt.verification_result.missing", t, "attempt-001") for t in REUSED},
    "phase-b2-first-five-v2": UNBOUND
    | {("error", "task.work_unit.missing", V2("001-negative-evidence-type-boundary"), None)}
    | {
        ("error", "task.plan.missing", t, None)
        for t in [V2("001-negative-evidence-type-boundary"), *REUSED]
    }
    | {("warning", "relation.outcome_elsewhere", t, None) for t in REUSED},
    "phase-b2-first-five-v3": UNBOUND
    | {("error", "task.work_unit.schema", V3("101-negative-evidence-type-boundary"), None)}
    | {
        (severity_code[0], severity_code[1], V3(slug), None)
        for slug in (
            "102-derived-quorum-threshold-test",
            "103-cost-weighted-effective-n",
            "104-forward-compatible-weight-migration",
            "105-quorum-metric-doc-contract",
        )
        for severity_code in (("error", "task.work_unit.missing"), ("error", "task.plan.missing"))
    },
    "phase-b2-successor-v2": {
        ("warning", "cohort.stage", None, None),
        ("warning", "cohort.signatures", V2("005-local-offer-output-boundary"), None),
    }
    | {
        ("error", code, V2(slug), None)
        for slug in (
            "001-cohort-symlink-reference",
            "002-router-nonfinite-numbers",
            "003-branch-unobserved-head",
            "004-rwvb-nonfinite-domain",
            "005-local-offer-output-boundary",
        )
        for code in ("task.work_unit.missing", "task.plan.missing")
    },
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_corpus_audit_finds_exactly_what_a_careful_auditor_finds(name: str) -> None:
    lookup, cohorts = corpus()
    report = audit_cohort(cohorts[name], lookup, schema_validator)
    assert keys(report) == EXPECTED[name]
    assert report.ok == (name == "phase-b2-first-five")


def test_corpus_audit_facts() -> None:
    lookup, cohorts = corpus()
    report = audit_cohort(cohorts["phase-b2-successor-five"], lookup, schema_validator)
    data = report.to_json()
    assert data["definition_digest"]["scheme"] == "both"
    first = data["tasks"][0]
    assert first["task"] == SUCC_001
    assert first["plan"]["schema_version"] == "0.4"
    assert first["plan"]["verifier"]["adapter_version"] == "0.3.0"
    assert first["work_unit"]["schema_valid"] is True
    attempt = first["attempts"][0]
    # The manifest holds 0.0 floats: only upstream's legacy digest matches the recording.
    assert attempt["result_manifest"]["found_by"] == "digest"
    assert attempt["result_manifest"]["scheme"] == "legacy"
    # The stored VerificationResult is not the one recorded at promotion time.
    assert attempt["verification_result"]["found_by"] == "id"
    assert attempt["verification_result"]["scheme"] is None
    assert attempt["recommendation"] == "accept_candidate"
    assert data["relations"]["predecessors"] == [
        {
            "definition_digest": cohorts["phase-b2-first-five"]["definition_digest"],
            "cohort": "benchmark/phase-b2-first-five",
        }
    ]
    burned = audit_cohort(cohorts["phase-b2-first-five"], lookup, schema_validator)
    assert [e.task for e in burned.excluded_outcomes] == [
        B2("001-cohort-path-boundary"),
        *REUSED,
    ]
    assert burned.relations.successors == (
        "benchmark/phase-b2-first-five-v2",
        "benchmark/phase-b2-first-five-v3",
        "benchmark/phase-b2-successor-five",
    )


def test_recording_the_burn_notice_clears_the_burn_warning() -> None:
    lookup, cohorts = corpus()
    burned = cohorts["phase-b2-first-five"]
    facts = burn_facts_from_extensions(burned)
    assert facts is not None
    notice = lookup.add("burn-notice", facts.to_notice(issued_at="2026-09-01T00:00:00Z"))
    report = audit_cohort(burned, lookup, schema_validator)
    assert keys(report) == {("warning", "relation.successors.multiple", None, None)}
    assert report.relations.burn_notices == (notice.jcs_digest,)
    # A notice banning task 001 makes a held-out reuse of it an error elsewhere.
    reuse = copy.deepcopy(cohorts["phase-b2-successor-five"])
    again = copy.deepcopy(burned["tasks"][0])
    again["split"] = "held_out"
    reuse["tasks"].append(again)
    found = keys(audit_cohort(reuse, lookup, schema_validator))
    assert ("error", "relation.held_out", B2("001-cohort-path-boundary"), None) in found


def test_toy_lineage_audits_clean() -> None:
    lookup, cohorts = lookup_from(TOY)
    for name in ("cohort-v1", "cohort-v2"):
        report = audit_cohort(cohorts[name], lookup, schema_validator)
        assert report.findings == (), [f.message for f in report.findings]
        report.raise_for_errors()
    v2 = audit_cohort(cohorts["cohort-v2"], lookup, schema_validator)
    assert len(v2.relations.bindings) == 1
    assert v2.relations.predecessors == (
        (cohorts["cohort-v1"]["definition_digest"], "example/toy-v1"),
    )


def test_a_mutable_source_revision_is_named_on_its_task() -> None:
    # The audit and the freeze gate share one revision rule (cohorts.lifecycle).
    lookup, cohorts = lookup_from(TOY)
    cohort = copy.deepcopy(cohorts["cohort-v1"])
    task = cohort["tasks"][0]
    task["source"]["revision"] = "main"
    found = keys(audit_cohort(cohort, lookup, skip_checks=("schema",)))
    assert ("error", "task.source.revision", task["id"], None) in found
    scaffold = dict(copy.deepcopy(cohort), stage="scaffold")
    found = keys(audit_cohort(scaffold, lookup, skip_checks=("schema",)))
    assert not any(code == "task.source.revision" for _sev, code, _t, _a in found)


def test_toy_relation_problems() -> None:
    lookup, cohorts = lookup_from(TOY)
    v1, v2 = cohorts["cohort-v1"], cohorts["cohort-v2"]
    # The successor claims a predecessor nobody stored, and the binding names another
    # definition of it.
    odd = copy.deepcopy(v2)
    odd["title"] = "changed after binding"
    odd.pop("definition_digest")
    odd["extensions"]["org.idkmesh.phase_b2"]["supersedes_definition_digest"] = "sha256:" + "e" * 64
    found = keys(audit_cohort(odd, lookup, schema_validator))
    assert ("warning", "relation.predecessor.unknown", None, None) in found
    assert ("error", "relation.binding.definition", None, None) in found
    assert ("error", "cohort.definition_digest", None, None) in found
    # A burn notice for a cohort that is not burned.
    notice_for_v2 = dict(load(TOY / "burn-notice.json"), cohort_id=v2["id"])
    lookup.add("burn-notice", notice_for_v2)
    assert ("error", "burn.stage", None, None) in keys(
        audit_cohort(v2, lookup, skip_checks=("schema",))
    )
    # A claimed predecessor that is not burned.
    lookup.add("benchmark-cohort", dict(v1, stage="frozen"))
    assert ("error", "relation.predecessor.not_burned", None, None) in keys(
        audit_cohort(v2, lookup, skip_checks=("schema",))
    )


def test_attempt_binding_replay_reports_each_broken_link() -> None:
    lookup, cohorts = corpus()
    cohort = copy.deepcopy(cohorts["phase-b2-successor-five"])
    task = cohort["tasks"][0]
    manifest = copy.deepcopy(
        lookup.find(
            "result-manifest", task["evidence"]["attempts"][0]["result_manifest"]["id"]
        ).value  # type: ignore[union-attr]
    )
    verification = copy.deepcopy(
        lookup.find(
            "verification-result", task["evidence"]["attempts"][0]["verification_result"]["id"]
        ).value  # type: ignore[union-attr]
    )
    manifest["provenance"]["source_revision"] = "0" * 40
    manifest["verification_request"]["expected_validator_ids"] = ["result-manifest-schema"]
    verification["provenance"]["verifier_config_digest"] = "sha256:" + "d" * 64
    verification["verifier"]["adapter_version"] = "0.2.0"
    verification["independence"]["independent_from_worker"] = False
    verification["decision_support"]["recommendation"] = "reject_candidate"
    verification["resources"].pop("human_minutes")
    manifest["resources"].pop("human_minutes")
    stored_manifest = lookup.add("result-manifest", manifest)
    stored_verification = lookup.add("verification-result", verification)
    attempt = task["evidence"]["attempts"][0]
    attempt["result_manifest"]["digest"] = stored_manifest.legacy_digest
    attempt["verification_result"]["digest"] = stored_verification.legacy_digest
    attempt["structural_signature"] = "undeclared-v9"
    report = audit_cohort(cohort, lookup, schema_validator)
    found = {(f.code) for f in report.findings if f.task == task["id"] and f.attempt}
    assert found == {
        "attempt.signature",
        "attempt.manifest.source_revision",
        "attempt.manifest.validators",
        "attempt.verification.result_manifest_digest",  # the manifest changed
        "attempt.verification.plan_digest",
        "attempt.verification.verifier",
        "attempt.verification.independence",
        "attempt.outcome",
        "attempt.accounting",
    }


def test_report_json_shape_is_stable() -> None:
    lookup, cohorts = corpus()
    cohort = cohorts["phase-b2-successor-five"]
    data = audit_cohort(cohort, lookup, schema_validator).to_json()
    assert list(data) == [
        "report_version", "cohort_id", "stage", "definition_digest", "ok", "counts",
        "tasks", "excluded_outcomes", "relations", "findings", "finding_categories",
        "burn", "successors", "evidence_strength", "bound", "preregistration",
        "preregistration_counts", "burn_recorded", "replay", "standing",
    ]  # fmt: skip
    assert set(data["findings"][0]) == {"code", "severity", "task", "attempt", "scheme", "message"}
    assert set(data["tasks"][0]) == {
        "task", "family", "split", "evidence_status", "work_unit", "plan", "attempts",
    }  # fmt: skip
    assert data["counts"] == {"error": 17, "warning": 1, "defect": 1, "missing": 16}
    assert data["finding_categories"].count("defect") == 1
    json.dumps(data, allow_nan=False)
    # Same ledger, other insertion order: the same report.
    shuffled = MemoryLookup(
        random.Random(7).sample(list(_all_docs(lookup)), k=len(list(_all_docs(lookup))))
    )
    assert audit_cohort(cohort, shuffled, schema_validator).to_json() == data
    ordered = [(f["task"] or "", f["attempt"] or "", f["code"]) for f in data["findings"]]
    assert ordered == sorted(ordered)


def _all_docs(lookup: MemoryLookup) -> list[Any]:
    kinds = ("benchmark-cohort", "work-unit", "evaluator-plan", "result-manifest")
    return [d for k in (*kinds, "verification-result") for d in lookup.of_kind(k)]


def test_failed_audit_raises_check_failed() -> None:
    lookup, cohorts = corpus()
    report = audit_cohort(cohorts["phase-b2-first-five-v3"], lookup, schema_validator)
    with pytest.raises(AuditFailed) as info:
        report.raise_for_errors()
    assert isinstance(info.value, CheckFailed)
    assert info.value.exit_code == 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out += _paths(item, (*prefix, index))
    return out


@cache
def _toy_unchanged() -> tuple[MemoryLookup, dict[str, dict[str, Any]]]:
    """Shared, never mutated: the fuzz test only reads it."""
    return lookup_from(TOY)


@settings(max_examples=40, deadline=None)
@given(rnd=st.randoms(use_true_random=False), junk=st.lists(JSON, min_size=1, max_size=3))
def test_audit_never_crashes_on_broken_cohorts(rnd: random.Random, junk: list[Any]) -> None:
    lookup, cohorts = _toy_unchanged()
    cohort = copy.deepcopy(cohorts["cohort-v2"])
    for value in junk:
        path = rnd.choice(_paths(cohort)[1:])
        parent: Any = cohort
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = value
    report = audit_cohort(cohort, lookup, schema_validator)
    json.dumps(report.to_json())


def test_unconfined_behavioral_evidence_is_a_warning() -> None:
    lookup, cohorts = corpus()
    cohort = cohorts["phase-b2-successor-five"]
    task = cohort["tasks"][0]  # its VerificationResult is stored
    attempt = task["evidence"]["attempts"][0]
    result = attempt["verification_result"]["digest"]
    baseline = audit_cohort(cohort, lookup, schema_validator).findings
    evidence = {"verification_result_digest": result, "environment": {}}
    confined = {"confined": True, "tool": "bubblewrap", "version": "0.8.0"}
    lookup.add("behavioral-evidence", {**evidence, "environment": {"sandbox": confined}})
    assert audit_cohort(cohort, lookup, schema_validator).findings == baseline
    for sandbox in ({"confined": False, "reason": "--unsandboxed"}, None):
        environment = {} if sandbox is None else {"sandbox": sandbox}
        lookup.add("behavioral-evidence", {**evidence, "environment": environment})
    found = [
        f
        for f in audit_cohort(cohort, lookup, schema_validator).findings
        if f.code == "attempt.behavioral.unconfined"
    ]
    assert [(f.severity, f.task, f.attempt) for f in found] == [
        ("warning", task["id"], attempt["attempt_id"])
    ] * 2
    assert sorted("--unsandboxed" in f.message for f in found) == [False, True]
