"""``provledger calibrate``: the table, and ``--record`` into a real SQLite ledger.

The recorded calibration-record objects must let the cohort successor gate decide, per
plan version, whether "a straightforward candidate was accepted and a decoy rejected":
on the Task 001 fixture only v0.4 is calibrated (v0.2 and v0.3 accept the decoy).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from ledger.cli import app
from ledger.errors import SchemaError
from ledger.schema.validation import validate
from ledger.store.prepared import prepare_value
from ledger.store.sqlite import open_store
from ledger.trust.attestation import attestations_of
from ledger.trust.judgement import check_subject_attestations, subject_verdict
from verifiers.calibration import FIXTURE_DIR, calibration_table

VERIFIER = ["--verifier-id", "idkmesh-local-verifier", "--adapter", "deterministic-patch-verifier"]
VERSIONS = [
    "--adapter-version",
    "0.1.1",
    "--adapter-version",
    "0.2.0",
    "--adapter-version",
    "0.3.0",
]


def invoke(runner: CliRunner, *args: str, code: int = 0) -> Result:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
    return result


def entries(db: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT seq, digest, kind FROM entries ORDER BY seq").fetchall()


@pytest.fixture
def key(tmp_path: Path, runner: CliRunner, ledger_path: Path) -> Path:
    path = tmp_path / "verifier.key"
    invoke(runner, "key", "generate", str(path))
    invoke(
        runner,
        "identity",
        "register",
        "--db",
        str(ledger_path),
        *VERIFIER,
        *VERSIONS,
        "--public-key",
        f"{path}.pub",
    )
    return path


def test_table_is_the_pure_calibration_table(runner: CliRunner) -> None:
    table = calibration_table(validate=validate)
    assert invoke(runner, "calibrate").stdout == table.render() + "\n"
    info = json.loads(invoke(runner, "calibrate", "--json").stdout)
    assert info == {
        "fixture": str(FIXTURE_DIR),
        "fixture_id": "provledger/calibration/task-001",
        "rows": table.as_json(),
    }
    verdicts = {(r["plan_version"], r["candidate"]): r["verdict"] for r in info["rows"]}
    assert verdicts == {
        ("0.2", "repair"): "false_negative",
        ("0.2", "decoy"): "false_positive",
        ("0.3", "repair"): "true_accept",
        ("0.3", "decoy"): "false_positive",
        ("0.4", "repair"): "true_accept",
        ("0.4", "decoy"): "true_reject",
    }
    # Reproducible without --record (fixed clock).
    assert json.loads(invoke(runner, "calibrate", "--json").stdout) == info


def test_record_needs_a_key(runner: CliRunner, ledger_path: Path) -> None:
    before = entries(ledger_path)
    result = invoke(runner, "calibrate", "--record", "--db", str(ledger_path), code=3)
    assert result.stderr.startswith("error: calibrate --record, got no --key")
    assert entries(ledger_path) == before


def _calibrated(records: list[dict[str, Any]], version: str) -> bool:
    """The successor gate's rule (cohorts.binding): straightforward accepted, decoy
    rejected, and no contrary run."""
    runs = [r for r in records if r["plan_schema_version"] == version]
    straight = [r["recommendation"] for r in runs if r["candidate"] == "straightforward"]
    decoys = [r["recommendation"] for r in runs if r["candidate"] == "decoy"]
    return (
        "accept_candidate" in straight
        and "reject_candidate" in decoys
        and all(x == "accept_candidate" for x in straight)
        and all(x == "reject_candidate" for x in decoys)
    )


def test_record_appends_signed_calibration_records_in_one_transaction(
    runner: CliRunner, ledger_path: Path, key: Path
) -> None:
    size_before = len(entries(ledger_path))
    info = json.loads(
        invoke(
            runner, "calibrate", "--record", "--key", str(key), "--db", str(ledger_path), "--json"
        ).stdout
    )
    assert info["attestations_ok"] is True
    rows = info["recorded"]
    assert [r["seq"] for r in rows if r["status"] == "new"] == list(
        range(size_before, len(entries(ledger_path)))
    )
    assert len(info["calibration_records"]) == 6
    # The printed rows are the recorded runs (wall clock when recording).
    assert [r["verification_result_digest"] for r in info["rows"]] == [
        r["result_digest"] for r in info["calibration_records"]
    ]

    with open_store(ledger_path, readonly=True) as store:
        records = [json.loads(o.data) for o in store.by_kind("calibration-record")]
        assert len(records) == 6
        for rec in records:
            validate("calibration-record", "0.1", rec)
            plan = store.get(rec["plan_digest"])
            assert plan is not None and plan.kind == "evaluator-plan"
            assert json.loads(plan.data)["schema_version"] == rec["plan_schema_version"]
            result = store.get(rec["result_digest"])
            assert result is not None and result.kind == "verification-result"
            value = json.loads(result.data)
            assert value["status"] == rec["status"]
            assert value["decision_support"]["recommendation"] == rec["recommendation"]
            assert value["verifier"]["adapter_version"] == rec["adapter_version"]
            assert value["provenance"]["verifier_config_digest"] == rec["plan_digest"]
            patch = FIXTURE_DIR / "candidates" / rec["candidate_name"] / "candidate.patch"
            digest = "sha256:" + hashlib.sha256(patch.read_bytes()).hexdigest()
            assert rec["candidate_digest"] == digest and store.get(digest) is not None
            assert rec["candidate"] == (
                "straightforward" if rec["candidate_name"] == "repair" else "decoy"
            )
            # Indexed by the plan it calibrates, and attested by the verifier key.
            digest_of_rec = prepare_value(rec, "calibration-record").digest
            assert (digest_of_rec, "plan") in store.refs_to(rec["plan_digest"], "plan")
            for subject in (digest_of_rec, rec["result_digest"]):
                assert attestations_of(store, subject)
                assert subject_verdict(check_subject_attestations(store, subject, store.policy))[0]
    assert {(r["plan_schema_version"], r["verdict"]) for r in records} == {
        ("0.2", "false_negative"),
        ("0.2", "false_positive"),
        ("0.3", "true_accept"),
        ("0.3", "false_positive"),
        ("0.4", "true_accept"),
        ("0.4", "true_reject"),
    }
    assert [v for v in ("0.2", "0.3", "0.4") if _calibrated(records, v)] == ["0.4"]
    invoke(runner, "checkpoint", "--db", str(ledger_path))
    invoke(runner, "verify", "--db", str(ledger_path))


def test_record_human_output(runner: CliRunner, ledger_path: Path, key: Path) -> None:
    out = invoke(
        runner, "calibrate", "--record", "--key", str(key), "--db", str(ledger_path)
    ).stdout
    assert out.startswith(calibration_table(validate=validate).render() + "\n")
    assert "recorded v0.4 decoy (decoy): sha256:" in out
    assert "recorded v0.4 repair (straightforward): sha256:" in out
    assert "in one transaction" in out


def test_schema_refuses_an_inconsistent_record() -> None:
    record = {
        "provledger_kind": "calibration-record",
        "schema_version": "0.1",
        "fixture_id": "f",
        "plan_id": "p",
        "plan_digest": "sha256:" + "a" * 64,
        "plan_schema_version": "0.4",
        "adapter": "deterministic-patch-verifier",
        "adapter_version": "0.3.0",
        "candidate": "decoy",
        "candidate_name": "decoy",
        "candidate_digest": None,
        "expected_status": "failed",
        "status": "failed",
        "recommendation": "reject_candidate",
        "verdict": "true_reject",
        "result_digest": "sha256:" + "b" * 64,
        "recorded_at": "2026-01-01T00:00:00Z",
    }
    validate("calibration-record", "0.1", record)
    for change in (
        {"verdict": "false_positive"},  # a rejected decoy is a true reject
        {"recommendation": "accept_candidate"},  # failed never recommends accepting
        {"candidate": "repair"},  # ground truth labels only
        {"extra": 1},
    ):
        with pytest.raises(SchemaError):
            validate("calibration-record", "0.1", {**record, **change})


def test_contradicted_expectation_exits_1(tmp_path: Path, runner: CliRunner) -> None:
    fixture = tmp_path / "fixture"
    shutil.copytree(FIXTURE_DIR, fixture)
    plan_path = fixture / "plans" / "evaluator-plan-v0.4.json"
    plan = json.loads(plan_path.read_bytes())
    plan["extensions"]["org.provledger.calibration"]["expected_status"]["decoy"] = "passed"
    plan_path.write_text(json.dumps(plan))
    result = invoke(runner, "calibrate", "--fixture", str(fixture), code=1)
    assert "v0.4   decoy      failed" in result.stdout
    assert result.stderr == (
        "error: calibration expectation, got v0.4 decoy failed (1 row(s) differ), expected passed\n"
    )
