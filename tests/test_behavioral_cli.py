"""``provledger behavioral run`` on the Task 001 fixture, recorded in real SQLite ledgers.

The repair refuses all four unsafe cohort paths, the decoy accepts all four; the
evidence, the patch blob and the probe plan land in one transaction and never change a
VerificationResult. Evidence attached to a result about another candidate is refused.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from ledger.cli import app
from ledger.encoding.canonical import canonicalize
from ledger.schema.validation import validate
from ledger.store.sqlite import open_store
from verifiers.behavioral import tree_digest
from verifiers.calibration import FIXTURE_DIR

SOURCE = FIXTURE_DIR / "source"
PROBES = FIXTURE_DIR / "probes" / "task-001.probes.json"
UNSAFE = {
    "validate-absolute-outside",
    "validate-traversal",
    "definition-digest-absolute-outside",
    "definition-digest-traversal",
}


def invoke(runner: CliRunner, db: Path, *args: str, code: int = 0) -> Result:
    result = runner.invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
    return result


def patch_of(candidate: str) -> Path:
    return FIXTURE_DIR / "candidates" / candidate / "candidate.patch"


def behavioral(runner: CliRunner, db: Path, candidate: str, *extra: str, code: int = 0) -> Result:
    return invoke(
        runner,
        db,
        "behavioral",
        "run",
        "--source-tree",
        str(SOURCE),
        "--patch",
        str(patch_of(candidate)),
        "--probes",
        str(PROBES),
        *extra,
        code=code,
    )


def snapshot(db: Path) -> tuple[Any, ...]:
    with sqlite3.connect(db) as conn:
        return tuple(
            tuple(conn.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall())
            for t in ("entries", "objects", "refs", "tree_nodes")
        )


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def test_repair_rejects_every_unsafe_path_and_is_recorded(
    runner: CliRunner, ledger_path: Path
) -> None:
    source_before = tree_digest(SOURCE)
    size = len(snapshot(ledger_path)[0])
    info = json.loads(behavioral(runner, ledger_path, "repair", "--json").stdout)
    assert set(info) == {
        "evidence_digest",
        "candidate_digest",
        "probe_plan_digest",
        "verification_result_digest",
        "patch_applied",
        "apply_error",
        "probes",
        "summary",
        "sandbox",
        "recorded",
    }
    assert info["sandbox"]["confined"] is True and info["sandbox"]["tool"] == "bubblewrap"
    assert info["patch_applied"] is True and info["apply_error"] is None
    by_id = {p["id"]: p for p in info["probes"]}
    for pid in UNSAFE:
        assert by_id[pid]["expect"] == "reject" and by_id[pid]["expectation_met"] is True
        assert by_id[pid]["exit_code"] not in (0, None)
    assert by_id["validate-inside-control"]["exit_code"] == 0
    assert info["summary"] == {
        "probe_count": 5,
        "expectations_met": 5,
        "all_expectations_met": True,
    }
    assert tree_digest(SOURCE) == source_before  # the evaluator's tree is never written

    patch = patch_of("repair").read_bytes()
    assert info["candidate_digest"] == sha(patch)
    assert [(r["role"], r["kind"], r["status"]) for r in info["recorded"]] == [
        ("candidate", "blob", "new"),
        ("probe-plan", "blob", "new"),
        ("behavioral-evidence", "behavioral-evidence", "new"),
    ]
    assert [r["seq"] for r in info["recorded"]] == [size, size + 1, size + 2]
    with open_store(ledger_path, readonly=True) as store:
        blob = store.get(info["candidate_digest"])
        assert blob is not None and blob.data == patch
        plan_blob = store.get(info["probe_plan_digest"])
        assert plan_blob is not None
        assert plan_blob.data == canonicalize(json.loads(PROBES.read_bytes()))
        evidence = store.get(info["evidence_digest"])
        assert evidence is not None and sha(evidence.data) == info["evidence_digest"]
        value = json.loads(evidence.data)
        validate("behavioral-evidence", "0.1", value)
        assert value["affects_metadata_result"] is False
        assert value["source_tree_digest"] == source_before
        assert "verification_result_digest" not in value
        assert (info["evidence_digest"], "candidate") in store.refs_to(
            info["candidate_digest"], "candidate"
        )
        assert not list(store.by_kind("verification-result"))
    invoke(runner, ledger_path, "verify")


def test_decoy_accepts_every_unsafe_path_exit_1(runner: CliRunner, ledger_path: Path) -> None:
    out = behavioral(runner, ledger_path, "decoy", code=1).stdout
    for pid in UNSAFE:
        assert f"FAIL {pid}: expect reject, completed exit 0" in out
    assert "ok   validate-inside-control: expect accept, completed exit 0" in out
    assert "summary         1 of 5 expectations met" in out
    # Evidence holds argv templates and output digests only: a second run is the same object.
    again = json.loads(behavioral(runner, ledger_path, "decoy", "--json", code=1).stdout)
    assert {r["status"] for r in again["recorded"]} == {"present"}
    with open_store(ledger_path, readonly=True) as store:
        found = [json.loads(o.data) for o in store.by_kind("behavioral-evidence")]
    assert len(found) == 1
    assert found[0]["summary"]["expectations_met"] == 1


@pytest.fixture
def repair_result(tmp_path: Path, runner: CliRunner, ledger_path: Path) -> str:
    """A recorded v0.4 VerificationResult for the repair."""
    key = tmp_path / "v.key"
    runner.invoke(app, ["key", "generate", str(key)])
    # Only a registered verifier may sign a VerificationResult (admission).
    invoke(
        runner,
        ledger_path,
        "identity", "register", "--verifier-id", "idkmesh-local-verifier",
        "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.3.0",
        "--public-key", f"{key}.pub",
    )  # fmt: skip
    out = invoke(
        runner,
        ledger_path,
        "run-verifier",
        "--work-unit",
        str(FIXTURE_DIR / "work-unit.json"),
        "--plan",
        str(FIXTURE_DIR / "plans" / "evaluator-plan-v0.4.json"),
        "--manifest",
        str(FIXTURE_DIR / "manifests" / "repair.result-manifest.json"),
        "--candidate-root",
        str(FIXTURE_DIR / "candidates" / "repair"),
        "--key",
        str(key),
        "--json",
    ).stdout
    digest: str = json.loads(out)["result_digest"]
    return digest


def test_evidence_links_to_its_verification_result_without_changing_it(
    runner: CliRunner, ledger_path: Path, repair_result: str
) -> None:
    with open_store(ledger_path, readonly=True) as store:
        result_before = store.get(repair_result)
    info = json.loads(
        behavioral(
            runner, ledger_path, "repair", "--verification-result", repair_result, "--json"
        ).stdout
    )
    assert info["verification_result_digest"] == repair_result
    # The patch blob was already recorded by run-verifier.
    assert info["recorded"][0] == {**info["recorded"][0], "role": "candidate", "status": "present"}
    with open_store(ledger_path, readonly=True) as store:
        assert store.get(repair_result) == result_before
        assert len(list(store.by_kind("verification-result"))) == 1
        value = json.loads(store.get(info["evidence_digest"]).data)  # type: ignore[union-attr]
        assert value["verification_result_digest"] == repair_result
        assert (info["evidence_digest"], "verification-result") in store.refs_to(
            repair_result, "verification-result"
        )


def test_evidence_for_another_candidate_is_refused(
    runner: CliRunner, ledger_path: Path, repair_result: str
) -> None:
    before = snapshot(ledger_path)
    result = behavioral(
        runner, ledger_path, "decoy", "--verification-result", repair_result, code=4
    )
    assert result.stderr.startswith("error: behavioral evidence for patch sha256:")
    assert result.stderr.count("\n") == 1
    assert snapshot(ledger_path) == before


def test_unknown_or_wrong_kind_verification_result_exits_3(
    runner: CliRunner, ledger_path: Path
) -> None:
    before = snapshot(ledger_path)
    for ref in ("sha256:" + "0" * 64, "sha256:" + "0" * 63):
        result = behavioral(runner, ledger_path, "repair", "--verification-result", ref, code=3)
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert snapshot(ledger_path) == before
    # A stored object of another kind is not a VerificationResult.
    wu = invoke(runner, ledger_path, "append", str(FIXTURE_DIR / "work-unit.json"), "--json").stdout
    before = snapshot(ledger_path)
    digest = json.loads(wu)[0]["digest"]
    result = behavioral(runner, ledger_path, "repair", "--verification-result", digest, code=3)
    assert result.stderr.startswith(f"error: --verification-result {digest}, got kind work-unit")
    assert snapshot(ledger_path) == before


def test_bad_probe_plan_exits_3(tmp_path: Path, runner: CliRunner, ledger_path: Path) -> None:
    probes = tmp_path / "probes.json"
    probes.write_text(json.dumps({"id": "x", "timeout_seconds": 0, "probes": []}))
    before = snapshot(ledger_path)
    result = invoke(
        runner,
        ledger_path,
        "behavioral",
        "run",
        "--source-tree",
        str(SOURCE),
        "--patch",
        str(patch_of("repair")),
        "--probes",
        str(probes),
        code=3,
    )
    assert result.stderr.startswith("error: bad probe plan timeout_seconds")
    assert snapshot(ledger_path) == before
