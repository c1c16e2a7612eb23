"""Calibration: the project's Task 001 fixture and upstream's calibration plans."""

from __future__ import annotations

import copy
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator, FormatChecker

from ledger.encoding.digest import canonical_digest, legacy_digest, sha256_digest
from ledger.schema.validation import validate
from verifiers.calibration import FIXTURE_DIR, calibration_table
from verifiers.diff import parse_patch
from verifiers.patch_apply import apply_patch
from verifiers.runner import VerificationOutcome, evaluate

VULNERABLE = "    cohort = load_json((ROOT / args.cohort).resolve())"
REPAIRED = '    cohort = load_json(resolve_repo_file(args.cohort, label="BenchmarkCohort"))'


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def clock() -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC)


# --------------------------------------------------------------------------- own fixture


def test_calibration_table_reproduces_the_task_001_story() -> None:
    table = calibration_table(validate=validate)
    got = {(r.plan_version, r.candidate): (r.status, r.verdict) for r in table.rows}
    assert got == {
        ("0.2", "repair"): ("failed", "false_negative"),
        ("0.2", "decoy"): ("passed", "false_positive"),
        ("0.3", "repair"): ("passed", "true_accept"),
        ("0.3", "decoy"): ("passed", "false_positive"),
        ("0.4", "repair"): ("passed", "true_accept"),
        ("0.4", "decoy"): ("failed", "true_reject"),
    }
    assert all(r.matches_expectation for r in table.rows)
    repair, decoy = table.row("0.4", "repair"), table.row("0.4", "decoy")
    assert "matched removed substrings: 1 of 1" in repair.summary
    assert "matched removed substrings: 0 of 1" in decoy.summary
    assert repair.recommendation == "accept_candidate"
    assert decoy.recommendation == "reject_candidate"
    assert (
        decoy.metrics["matched_removed_substring_count"],
        decoy.metrics["required_removed_substring_count"],
    ) == (0, 1)
    assert table.row("0.2", "decoy").metrics["matched_added_text_count"] == 1
    assert table.row("0.2", "repair").metrics["matched_added_text_count"] == 0
    assert "v0.4   decoy      failed  true_reject" in table.render()
    for outcome in table.outcomes:
        validate("verification-result", "0.1", outcome.result)
    again = calibration_table(validate=validate)
    assert [r.result_digest for r in again.rows] == [r.result_digest for r in table.rows]


def test_fixture_source_and_patches_tell_the_story(tmp_path: Path) -> None:
    source = (FIXTURE_DIR / "source" / "tools" / "cohort_tool.py").read_text()
    assert source.splitlines().count(VULNERABLE) == 2
    for name in ("repair", "decoy"):
        tree = tmp_path / name
        shutil.copytree(FIXTURE_DIR / "source", tree)
        patch = (FIXTURE_DIR / "candidates" / name / "candidate.patch").read_bytes()
        assert apply_patch(tree, parse_patch(patch)) == ("tools/cohort_tool.py",)
        lines = (tree / "tools" / "cohort_tool.py").read_text().splitlines()
        if name == "repair":
            assert lines.count(VULNERABLE) == 0 and lines.count(REPAIRED) == 2
        else:
            # Both unsafe lines stay; the required text sits alone inside a string literal.
            assert lines.count(VULNERABLE) == 2
            assert lines[-3:] == ['"""', "resolve_repo_file(args.cohort", '"""']


def test_fixture_documents_are_consistent_and_schema_valid() -> None:
    wu = load(FIXTURE_DIR / "work-unit.json")
    validate("work-unit", wu["schema_version"], wu)
    assert canonical_digest(wu) == legacy_digest(wu)  # no floats: both schemes agree
    for path in sorted((FIXTURE_DIR / "plans").glob("*.json")):
        plan = load(path)
        validate("evaluator-plan", plan["schema_version"], plan)
        assert plan["binding"]["work_unit_digest"] == canonical_digest(wu)
    for name in ("repair", "decoy"):
        manifest = load(FIXTURE_DIR / "manifests" / f"{name}.result-manifest.json")
        validate("result-manifest", "0.1", manifest)
        root = FIXTURE_DIR / "candidates" / name
        for item in [*manifest["produced_artifacts"], *manifest["logs"]]:
            assert item["digest"] == sha256_digest((root / item["locator"]).read_bytes())


def test_fixture_is_valid_under_upstream_schemas(corpus: Path) -> None:
    def upstream(kind: str, version: str, doc: Any) -> None:
        schema = load(corpus / "schemas" / f"{kind}-v{version}.schema.json")
        errors = list(Draft202012Validator(schema, format_checker=FormatChecker()).iter_errors(doc))
        assert not errors, errors[0].message

    wu = load(FIXTURE_DIR / "work-unit.json")
    upstream("work-unit", "0.2", wu)
    for path in (FIXTURE_DIR / "plans").glob("*.json"):
        plan = load(path)
        upstream("evaluator-plan", plan["schema_version"], plan)
    for name in ("repair", "decoy"):
        upstream(
            "result-manifest",
            "0.1",
            load(FIXTURE_DIR / "manifests" / f"{name}.result-manifest.json"),
        )
    for outcome in calibration_table(validate=upstream).outcomes:
        upstream("verification-result", "0.1", outcome.result)


# --------------------------------------------------------------------------- upstream plans


def upstream_candidate(
    tmp_path: Path, manifest: dict[str, Any], patch: bytes, locator: str
) -> tuple[Path, dict[str, Any]]:
    root = tmp_path / "candidate"
    root.mkdir(parents=True)
    (root / locator).write_bytes(patch)
    logs = {"stdout.txt": b"worker ran\n", "stderr.txt": b""}
    for name, data in logs.items():
        (root / name).write_bytes(data)
    m = copy.deepcopy(manifest)
    (artifact,) = m["produced_artifacts"]
    artifact.update(locator=locator, digest=sha256_digest(patch))
    m["logs"] = [
        {"type": "stdout", "locator": "stdout.txt", "digest": sha256_digest(logs["stdout.txt"])},
        {"type": "stderr", "locator": "stderr.txt", "digest": sha256_digest(logs["stderr.txt"])},
    ]
    return root, m


def run_upstream(
    tmp_path: Path, wu: Any, plan_path: Path, manifest: Any, patch: bytes, locator: str
) -> VerificationOutcome:
    plan = load(plan_path)
    root, m = upstream_candidate(tmp_path, manifest, patch, locator)
    out = evaluate(
        wu,
        plan,
        m,
        root,
        plan_path,
        None,
        plan_digest=legacy_digest(plan),
        clock=clock,
        validate=validate,
    )
    validate("verification-result", "0.1", out.result)
    assert out.result["provenance"]["verifier_config_digest"] == legacy_digest(plan)
    return out


SMOKE_CASES = [
    # (plan, patch, expected status): the plans' own text states the expectation.
    (
        "patch-smoke-evaluator-plan-v0.2.json",
        "examples/verifier/patch/good/changes.patch",
        "passed",
    ),
    (
        "patch-fragment-exact-evaluator-plan-v0.2.json",
        "examples/verifier/patch/good/changes.patch",
        "failed",
    ),
    (
        "patch-fragment-substring-evaluator-plan-v0.3.json",
        "examples/verifier/patch/good/changes.patch",
        "passed",
    ),
    (
        "patch-transition-evaluator-plan-v0.4.json",
        "verification/fixtures/patch-transition/correct.patch",
        "passed",
    ),
    (
        "patch-transition-evaluator-plan-v0.4.json",
        "verification/fixtures/patch-transition/decoy.patch",
        "failed",
    ),
]


@pytest.mark.parametrize(("plan_name", "patch_path", "status"), SMOKE_CASES)
def test_upstream_fixture_plans_give_upstream_results(
    corpus: Path, tmp_path: Path, plan_name: str, patch_path: str, status: str
) -> None:
    plan_path = corpus / "verification" / "fixtures" / plan_name
    note = json.dumps(load(plan_path).get("extensions", {}))
    if "fragment fails" in note:
        assert status == "failed"
    if "passes" in note:
        assert status == "passed"
    wu = load(corpus / "examples/work-units/patch-verifier-smoke.work-unit.json")
    manifest = load(corpus / "examples/verifier/patch/good/result-manifest.json")
    patch = (corpus / patch_path).read_bytes()
    out = run_upstream(tmp_path, wu, plan_path, manifest, patch, "changes.patch")
    assert out.status == status, out.summary
    if plan_name.startswith("patch-transition"):
        removed = out.result["metrics"]["matched_removed_substring_count"]
        assert removed == (1 if status == "passed" else 0)


def retargeted(name: str) -> bytes:
    """The project's fixture patch, aimed at upstream's Task 001 file name."""
    data = (FIXTURE_DIR / "candidates" / name / "candidate.patch").read_bytes()
    return data.replace(b"tools/cohort_tool.py", b"tools/benchmark_cohort.py")


@pytest.mark.parametrize(
    ("plan_rel", "expected"),
    [
        (
            "verification/fixtures/task001-transformation-calibration-evaluator-plan-v0.4.json",
            {"repair": "passed", "decoy": "failed"},
        ),
        (
            "verification/fixtures/task001-real-transition-calibration-evaluator-plan-v0.4.json",
            {"repair": "passed", "decoy": "failed"},
        ),
        (
            "benchmarks/phase-b2-first-five/evaluators/task-001-cohort-path-boundary.evaluator-plan.json",
            {"repair": "failed", "decoy": "passed"},
        ),
    ],
)
def test_upstream_task_001_plans_on_the_fixture_candidates(
    corpus: Path, tmp_path: Path, plan_rel: str, expected: dict[str, str]
) -> None:
    wu = load(
        corpus / "benchmarks/phase-b2-first-five/work-units/"
        "task-001-cohort-path-boundary.work-unit.json"
    )
    template = load(FIXTURE_DIR / "manifests" / "repair.result-manifest.json")
    template.update(work_unit_id=wu["id"], work_unit_version=wu["version"])
    template["provenance"].update(
        work_unit_digest=legacy_digest(wu), source_revision=wu["provenance"]["source_revision"]
    )
    for name, status in expected.items():
        out = run_upstream(
            tmp_path / name, wu, corpus / plan_rel, template, retargeted(name), "candidate.patch"
        )
        assert out.status == status, (name, out.summary)


def test_upstream_successor_evidence_shape(corpus: Path, tmp_path: Path) -> None:
    base = corpus / "benchmarks/phase-b2-successor-five"
    wu = load(base / "work-units/task-001-negative-evidence-type-boundary.work-unit.json")
    plan_path = base / "evaluators/task-001-negative-evidence-type-boundary.evaluator-plan.json"
    plan = load(plan_path)
    manifest = load(base / "evidence/task-001/attempt-001/result-manifest.json")
    theirs = load(base / "evidence/task-001/attempt-001/verification-result.json")
    root = tmp_path / "candidate"
    root.mkdir()  # upstream did not publish the patch or logs: every reading fails
    out = evaluate(
        wu,
        plan,
        manifest,
        root,
        plan_path,
        None,
        plan_digest=legacy_digest(plan),
        clock=clock,
        validate=validate,
        manifest_digest=legacy_digest(manifest),
    )
    ours = out.result
    assert out.status == "failed"
    for key in (
        "result_manifest_digest",
        "work_unit_digest",
        "verifier_config_digest",
        "source_revision",
    ):
        assert ours["provenance"][key] == theirs["provenance"][key]
    assert [c["id"] for c in ours["checks"]] == [c["id"] for c in theirs["checks"]]
    assert [c["evidence_ids"] for c in ours["checks"]] == [
        c["evidence_ids"] for c in theirs["checks"]
    ]
    assert [e["id"] for e in ours["evidence"]] == [e["id"] for e in theirs["evidence"]]
    assert set(theirs["metrics"]) <= set(ours["metrics"])
    for key in ("org.idkmesh.local_verifier.semantic_match_mode", "org.idkmesh.evaluator_plan.id"):
        assert ours["extensions"][key] == theirs["extensions"][key]
    # The worker-status observation hashes the same JSON value as upstream's.
    status_digest = {e["id"]: e["digest"] for e in theirs["evidence"]}["worker-status-observation"]
    assert {e["id"]: e["digest"] for e in ours["evidence"]}["worker-status-observation"] == (
        status_digest
    )
