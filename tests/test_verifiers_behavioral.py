"""The behavioral channel: probes on a patched throw-away copy, scrubbed environment."""

from __future__ import annotations

import json
import os
import shutil
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.encoding.canonical import canonicalize
from ledger.encoding.digest import canonical_digest, sha256_digest
from ledger.schema.validation import validate
from verifiers.behavioral import (
    evidence_bytes,
    load_probe_plan,
    run_probes,
    tree_digest,
)
from verifiers.calibration import FIXTURE_DIR, behavioral_table
from verifiers.errors import ProbeError
from verifiers.runner import evaluate

UNSAFE = (
    "validate-absolute-outside",
    "validate-traversal",
    "definition-digest-absolute-outside",
    "definition-digest-traversal",
)
SOURCE = FIXTURE_DIR / "source"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def probe_plan(*probes: dict[str, Any], timeout: float = 30) -> Any:
    return load_probe_plan(
        {"id": "test/probes", "timeout_seconds": timeout, "probes": list(probes)}
    )


def fixture_patch(name: str) -> bytes:
    return (FIXTURE_DIR / "candidates" / name / "candidate.patch").read_bytes()


@pytest.fixture(scope="module")
def table() -> dict[str, dict[str, Any]]:
    return behavioral_table()


def test_repair_rejects_all_four_unsafe_paths_and_decoy_accepts_them(
    table: dict[str, dict[str, Any]],
) -> None:
    for name, accepts_unsafe in (("repair", False), ("decoy", True)):
        evidence = table[name]
        probes = {p["id"]: p for p in evidence["probes"]}
        assert evidence["patch_applied"] is True
        for pid in UNSAFE:
            assert probes[pid]["status"] == "completed"
            assert (probes[pid]["exit_code"] == 0) is accepts_unsafe, (name, probes[pid])
            assert probes[pid]["expectation_met"] is not accepts_unsafe
        control = probes["validate-inside-control"]
        assert (control["exit_code"], control["expectation_met"]) == (0, True)
    assert table["repair"]["summary"] == {
        "probe_count": 5,
        "expectations_met": 5,
        "all_expectations_met": True,
    }
    assert table["decoy"]["summary"] == {
        "probe_count": 5,
        "expectations_met": 1,
        "all_expectations_met": False,
    }


def test_evidence_is_schema_valid_and_names_the_candidate(
    table: dict[str, dict[str, Any]],
) -> None:
    for name, evidence in table.items():
        validate("behavioral-evidence", "0.1", evidence)
        assert evidence["provledger_kind"] == "behavioral-evidence"
        assert evidence["candidate_digest"] == sha256_digest(fixture_patch(name))
        assert evidence["source_tree_digest"] == tree_digest(SOURCE)
        assert evidence["affects_metadata_result"] is False
        assert evidence_bytes(evidence) == canonicalize(evidence)
        # argv templates, not work paths
        assert "provledger-behavioral-" not in json.dumps(evidence)
        assert evidence["environment"]["sandbox"]["confined"] is True


def test_evidence_is_reproducible(table: dict[str, dict[str, Any]]) -> None:
    again = behavioral_table()
    assert evidence_bytes(again["repair"]) == evidence_bytes(table["repair"])
    assert evidence_bytes(again["decoy"]) == evidence_bytes(table["decoy"])


def test_probes_never_change_the_metadata_result_or_the_source(tmp_path: Path) -> None:
    root = tmp_path / "candidate"
    shutil.copytree(FIXTURE_DIR / "candidates" / "decoy", root)
    plan = load(FIXTURE_DIR / "plans" / "evaluator-plan-v0.3.json")

    def metadata() -> bytes:
        return evaluate(
            load(FIXTURE_DIR / "work-unit.json"),
            plan,
            load(FIXTURE_DIR / "manifests" / "decoy.result-manifest.json"),
            root,
            None,
            None,
            plan_digest=canonical_digest(plan),
            clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
            validate=validate,
        ).result_bytes

    before, source_before = metadata(), tree_digest(SOURCE)
    evidence = run_probes(
        SOURCE,
        fixture_patch("decoy"),
        load_probe_plan(load(FIXTURE_DIR / "probes" / "task-001.probes.json")),
        verification_result_digest=sha256_digest(before),
    )
    assert evidence["summary"]["all_expectations_met"] is False
    assert json.loads(before)["status"] == "passed"  # the metadata verdict stands as it was
    assert metadata() == before
    assert tree_digest(SOURCE) == source_before
    assert evidence["verification_result_digest"] == sha256_digest(before)
    validate("behavioral-evidence", "0.1", evidence)


def test_environment_is_scrubbed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROVLEDGER_TEST_SECRET", "hunter2")
    # LC_CTYPE may be set by the child interpreter itself (PEP 538 locale coercion).
    script = (
        "import json, os, sys; print(json.dumps(sorted(set(os.environ) - {'LC_CTYPE'})));"
        "sys.exit(0 if os.environ['HOME'] != sys.argv[1] else 5)"
    )
    plan = probe_plan(
        {
            "id": "env",
            "argv": ["{python}", "-I", "-c", script, os.environ.get("HOME", "")],
            "expect": "accept",
        },
        {
            "id": "secret",
            "argv": [
                "{python}",
                "-I",
                "-c",
                "import os, sys; sys.exit(3 if 'PROVLEDGER_TEST_SECRET' in os.environ else 0)",
            ],
            "expect": "accept",
        },
        {
            "id": "home",
            "argv": [
                "{python}",
                "-I",
                "-c",
                "import os, sys; sys.exit(0 if os.listdir(os.environ['HOME']) == [] else 4)",
            ],
            "expect": "accept",
        },
    )
    evidence = run_probes(SOURCE, fixture_patch("repair"), plan)
    probes = {p["id"]: p for p in evidence["probes"]}
    assert probes["env"]["stdout_digest"] == sha256_digest(b'["HOME", "PATH"]\n')
    assert [p["exit_code"] for p in evidence["probes"]] == [0, 0, 0]
    assert evidence["environment"]["variables"] == ["HOME", "PATH"]


def test_no_shell_timeout_and_start_failure() -> None:
    plan = probe_plan(
        {"id": "shell-syntax", "argv": ["echo $HOME && true"], "expect": "accept"},
        {
            "id": "sleeper",
            "argv": ["{python}", "-c", "import time; time.sleep(60)"],
            "expect": "reject",
        },
        timeout=0.5,
    )
    evidence = run_probes(SOURCE, fixture_patch("repair"), plan)
    shell, sleeper = evidence["probes"]
    assert shell["status"] == "failed_to_start" and shell["expectation_met"] is False
    assert sleeper["status"] == "timed_out" and sleeper["exit_code"] is None
    assert sleeper["expectation_met"] is False  # a hang is not a clean refusal
    validate("behavioral-evidence", "0.1", evidence)


def test_patch_that_does_not_apply_runs_no_probe(tmp_path: Path) -> None:
    plan = load_probe_plan(load(FIXTURE_DIR / "probes" / "task-001.probes.json"))
    tree = tmp_path / "tree"
    shutil.copytree(SOURCE, tree)
    tool = tree / "tools" / "cohort_tool.py"
    tool.write_text(tool.read_text().replace("raise SystemExit(main())", "main()"))
    for patch, error in ((fixture_patch("decoy"), "does not apply"), (b"junk\n", "malformed")):
        evidence = run_probes(tree, patch, plan)
        validate("behavioral-evidence", "0.1", evidence)
        assert evidence["patch_applied"] is False and error in evidence["apply_error"]
        assert {p["status"] for p in evidence["probes"]} == {"not_run"}
        assert evidence["summary"]["expectations_met"] == 0


@pytest.mark.parametrize(
    "bad",
    [
        [],
        {
            "id": "",
            "timeout_seconds": 1,
            "probes": [{"id": "a", "argv": ["x"], "expect": "accept"}],
        },
        {
            "id": "p",
            "timeout_seconds": 0,
            "probes": [{"id": "a", "argv": ["x"], "expect": "accept"}],
        },
        {
            "id": "p",
            "timeout_seconds": True,
            "probes": [{"id": "a", "argv": ["x"], "expect": "accept"}],
        },
        {"id": "p", "timeout_seconds": 1, "probes": []},
        {"id": "p", "timeout_seconds": 1, "probes": [{"id": "a", "argv": "x", "expect": "accept"}]},
        {
            "id": "p",
            "timeout_seconds": 1,
            "probes": [{"id": "a", "argv": ["x"], "expect": "maybe"}],
        },
        {
            "id": "p",
            "timeout_seconds": 1,
            "probes": [
                {"id": "a", "argv": ["x"], "expect": "accept"},
                {"id": "a", "argv": ["y"], "expect": "reject"},
            ],
        },
        {
            "id": "p",
            "timeout_seconds": 1,
            "outside_files": {"../x": "y"},
            "probes": [{"id": "a", "argv": ["x"], "expect": "accept"}],
        },
    ],
)
def test_malformed_probe_plans_are_refused(bad: Any) -> None:
    with pytest.raises(ProbeError, match="bad probe plan"):
        load_probe_plan(bad)


def test_symlinks_in_the_source_tree_are_refused(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    shutil.copytree(SOURCE, tree)
    os.symlink("/etc", tree / "etc")
    plan = probe_plan({"id": "a", "argv": [sys.executable, "-c", "pass"], "expect": "accept"})
    with pytest.raises(ProbeError, match="symlink etc"):
        run_probes(tree, fixture_patch("repair"), plan)
