"""`provledger cohort digest|freeze|burn|bind|audit` on the toy lineage (examples/cohorts/toy)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cohorts.definition import definition_digests
from ledger.cli import app
from ledger.store.prepared import prepare_value
from ledger.store.sqlite import open_store

TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
V1 = "example/toy-v1"


def _run(runner: CliRunner, args: list[str], code: int = 0) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == code, result.output
    return result


def _size(db: Path) -> int:
    with open_store(db, readonly=True) as store:
        return store.size()


def _write(tmp_path: Path, name: str, value: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(value))
    return str(path)


@pytest.fixture
def toy(ledger_path: Path, runner: CliRunner) -> Path:
    files = sorted(str(p) for p in (TOY / "work-units").glob("*.json"))
    files += sorted(str(p) for p in (TOY / "evaluators").glob("*.json"))
    _run(runner, ["append", "--db", str(ledger_path), *files])
    return ledger_path


def _v1(stage: str = "frozen") -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / "cohort-v1.json").read_text())
    value["stage"] = stage
    return value


def test_digest_prints_both_schemes(runner: CliRunner, tmp_path: Path) -> None:
    cohort = _v1()
    cohort["minimum_final_tasks"] = 5.0  # legacy prints 5.0, JCS prints 5
    path = _write(tmp_path, "c.json", cohort)
    out = json.loads(_run(runner, ["cohort", "digest", path, "--json"]).stdout)
    expected = definition_digests(cohort)
    assert (out["legacy"], out["jcs"]) == (expected.legacy, expected.jcs)
    assert out["legacy"] != out["jcs"]
    assert out["recorded_scheme"] == "jcs"  # recorded before the edit; JCS spells 5.0 as 5
    text = _run(runner, ["cohort", "digest", path]).stdout
    assert expected.legacy in text and expected.jcs in text


def test_freeze_then_refuse_changed_definition(
    toy: Path, runner: CliRunner, tmp_path: Path
) -> None:
    db = str(toy)
    frozen = _write(tmp_path, "v1.json", _v1())
    out = json.loads(_run(runner, ["cohort", "freeze", frozen, "--db", db, "--json"]).stdout)
    assert out["ok"] and out["objects"][0]["new"] is True
    size = _size(toy)
    # Same document again: nothing new.
    again = json.loads(_run(runner, ["cohort", "freeze", frozen, "--db", db, "--json"]).stdout)
    assert again["objects"][0]["new"] is False
    # Same id, another definition that records its own (correct) digest: refused (4).
    changed = _v1()
    changed["title"] = "another title"
    changed["definition_digest"] = definition_digests(changed).legacy
    result = _run(runner, ["cohort", "freeze", _write(tmp_path, "x.json", changed), "--db", db], 4)
    assert "frozen definition" in result.output
    assert _size(toy) == size


def test_freeze_refusal_lists_every_failure(toy: Path, runner: CliRunner, tmp_path: Path) -> None:
    cohort = _v1("collecting")
    del cohort["definition_digest"]
    cohort["minimum_final_tasks"] = 50
    cohort["tasks"][0]["work_unit"]["digest"] = "sha256:" + "1" * 64
    cohort["tasks"][1]["evaluator"]["plan_id"] = "no/such/plan"
    cohort["tasks"][1]["evaluator"]["plan_digest"] = "sha256:" + "2" * 64
    before = _size(toy)
    result = _run(
        runner,
        ["cohort", "freeze", _write(tmp_path, "c.json", cohort), "--db", str(toy), "--json"],
        4,
    )
    codes = {f["code"] for f in json.loads(result.stdout)["failures"]}
    assert {"cohort.minimum_tasks", "task.work_unit.digest", "task.plan.missing"} <= codes
    assert _size(toy) == before


def test_collecting_cohort_is_frozen_with_its_digest(
    toy: Path, runner: CliRunner, tmp_path: Path
) -> None:
    cohort = _v1("collecting")
    del cohort["definition_digest"]
    path = _write(tmp_path, "c.json", cohort)
    _run(runner, ["cohort", "freeze", path, "--db", str(toy)])
    audit = json.loads(_run(runner, ["cohort", "audit", V1, "--db", str(toy), "--json"]).stdout)
    assert audit["stage"] == "frozen"
    assert audit["definition_digest"]["recorded"] == definition_digests(cohort).legacy


def test_stage_never_moves_back(toy: Path, runner: CliRunner, tmp_path: Path) -> None:
    db = str(toy)
    frozen = _write(tmp_path, "v1.json", _v1())
    _run(runner, ["cohort", "freeze", frozen, "--db", db])
    _run(runner, ["cohort", "burn", V1, "--db", db, "--reason", "seen"])
    size = _size(toy)
    result = _run(runner, ["cohort", "freeze", frozen, "--db", db], 4)
    assert "burned -> frozen" in result.output
    assert _size(toy) == size


def test_burn_once_and_audit(toy: Path, runner: CliRunner, tmp_path: Path) -> None:
    db = str(toy)
    _run(runner, ["cohort", "freeze", _write(tmp_path, "v1.json", _v1()), "--db", db])
    task = _v1()["tasks"][0]["id"]
    out = json.loads(
        _run(
            runner,
            [
                "cohort", "burn", V1, "--db", db, "--json",
                "--reason", "outcomes inspected",
                "--observed-task", task,
                "--successor", "https://example.org/toy/issues/2",
            ],
        ).stdout
    )  # fmt: skip
    kinds = [o["kind"] for o in out["objects"]]
    assert kinds == ["benchmark-cohort", "burn-notice", "attestation", "attestation"]
    size = _size(toy)
    _run(runner, ["cohort", "burn", V1, "--db", db, "--reason", "again"], 4)
    assert _size(toy) == size
    # The burned cohort and the notice are authority-attested and valid.
    for obj in out["objects"][:2]:
        check = runner.invoke(app, ["attestation", "check", obj["digest"], "--db", db])
        assert check.exit_code == 0, check.output
    audit = json.loads(_run(runner, ["cohort", "audit", V1, "--db", db, "--json"]).stdout)
    assert audit["stage"] == "burned" and audit["ok"] is True
    assert audit["relations"]["burn_notices"]


def test_burn_refuses_unfrozen(toy: Path, runner: CliRunner, tmp_path: Path) -> None:
    cohort = _v1("scaffold")
    with open_store(toy) as store:
        store.append_many([prepare_value(cohort)])
    _run(runner, ["cohort", "burn", V1, "--db", str(toy), "--reason", "r"], 4)


def test_audit_reports_findings_exit_1(toy: Path, runner: CliRunner, tmp_path: Path) -> None:
    cohort = _v1("scaffold")
    cohort["tasks"][0]["work_unit"]["digest"] = "sha256:" + "3" * 64
    with open_store(toy) as store:
        store.append_many([prepare_value(cohort)])
    result = _run(runner, ["cohort", "audit", V1, "--db", str(toy), "--json"], 1)
    report = json.loads(result.stdout)
    located = [(f["code"], f["task"]) for f in report["findings"] if f["severity"] == "error"]
    assert ("task.work_unit.digest", cohort["tasks"][0]["id"]) in located
    _run(runner, ["cohort", "audit", "no/such", "--db", str(toy)], 3)


def _calibration(version: str, candidate: str, passed: bool) -> dict[str, Any]:
    return {
        "provledger_kind": "calibration-record",
        "schema_version": "0.1",
        "fixture_id": "toy",
        "plan_id": f"toy/plan-{version}",
        "plan_digest": "sha256:" + "4" * 64,
        "plan_schema_version": version,
        "adapter": "deterministic-patch-verifier",
        "adapter_version": "0.3.0",
        "candidate": candidate,
        "candidate_name": candidate,
        "candidate_digest": None,
        "expected_status": None,
        "status": "passed" if passed else "failed",
        "recommendation": "accept_candidate" if passed else "reject_candidate",
        "verdict": {
            ("straightforward", True): "true_accept",
            ("straightforward", False): "false_negative",
            ("decoy", True): "false_positive",
            ("decoy", False): "true_reject",
        }[(candidate, passed)],
        "result_digest": "sha256:" + "5" * 64,
        "recorded_at": "2026-01-01T00:00:00Z",
    }


CARRIED = ("002-division-test", "003-modulo-command", "004-token-refactor", "005-usage-doc")
PLANS = [
    arg
    for slug in CARRIED
    for arg in ("--plan", f"example/toy/{slug}=example/toy-v2/{slug}/evaluator@0.4")
]


def test_bind_gate_refuses_then_binds(toy: Path, runner: CliRunner, tmp_path: Path) -> None:
    db = str(toy)
    v2 = str(TOY / "cohort-v2.json")
    _run(runner, ["cohort", "freeze", _write(tmp_path, "v1.json", _v1()), "--db", db])
    # Predecessor not burned yet: refused with the command that burns it, nothing written.
    _run(runner, ["cohort", "freeze", v2, "--db", db])
    before = _size(toy)
    result = _run(runner, ["cohort", "bind", v2, "--predecessor", V1, "--db", db], 4)
    assert f"provledger cohort burn {V1}" in result.output
    assert _size(toy) == before
    task = _v1()["tasks"][0]["id"]
    _run(runner, ["cohort", "burn", V1, "--db", db, "--reason", "seen", "--observed-task", task])
    # No calibration evidence and no plans named: every unmet item listed, each with the
    # command that meets it.
    before = _size(toy)
    result = _run(runner, ["cohort", "bind", v2, "--predecessor", V1, "--db", db, "--json"], 4)
    failures = json.loads(result.stdout)["failures"]
    assert {f["code"] for f in failures} == {"gate.carry_over.calibration", "gate.plan.named"}
    assert len(failures) == 8
    assert all("provledger calibrate --record" in f["message"] for f in failures[::2])
    assert all("--plan example/toy/" in f["message"] for f in failures[1::2])
    assert _size(toy) == before
    # Hand-written calibration records (no verifier attestation) never count.
    with open_store(toy) as store:
        fake = [
            prepare_value(_calibration("0.4", c, c == "straightforward"))
            for c in ("straightforward", "decoy")
        ]
        store.append_many(fake)
    cal = [arg for p in fake for arg in ("--calibration", p.digest)]
    result = _run(
        runner, ["cohort", "bind", v2, "--predecessor", V1, "--db", db, *PLANS, *cal, "--json"], 4
    )
    failures = json.loads(result.stdout)["failures"]
    assert {f["code"] for f in failures} == {
        "gate.calibration.record",
        "gate.carry_over.calibration",
    }
    assert "no valid attestation by a registered" in failures[0]["message"]
    # Calibrated by a registered verifier through the CLI: the binding is appended. The
    # records are named by unique digest prefixes; the binding holds their full digests.
    cal = calibrate(runner, toy, tmp_path)
    prefixes = [arg if arg == "--calibration" else arg[:19] for arg in cal]
    out = json.loads(
        _run(
            runner,
            ["cohort", "bind", v2, "--predecessor", V1, "--db", db, *PLANS, *prefixes, "--json"],
        ).stdout
    )
    assert [o["kind"] for o in out["objects"]] == ["cohort-binding", "attestation"]
    binding = json.loads(
        _run(runner, ["show", out["objects"][0]["digest"], "--db", db, "--json"]).stdout
    )
    assert binding["object"]["calibrations"] == sorted(cal[1::2])
    audit = json.loads(
        _run(runner, ["cohort", "audit", "example/toy-v2", "--db", db, "--json"]).stdout
    )
    assert audit["relations"]["bindings"]
    assert "relation.unbound" not in {f["code"] for f in audit["findings"]}


def calibrate(runner: CliRunner, db: Path, tmp_path: Path) -> list[str]:
    """Register a verifier for the fixture's adapter versions, run ``calibrate --record``;
    ``--calibration DIGEST`` arguments for the v0.4 records (the calibrated version)."""
    key = tmp_path / "verifier.key"
    _run(runner, ["key", "generate", str(key)])
    args = ["identity", "register", "--db", str(db), "--verifier-id", "idkmesh-local-verifier"]
    args += ["--adapter", "deterministic-patch-verifier", "--public-key", f"{key}.pub"]
    for version in ("0.1.1", "0.2.0", "0.3.0"):
        args += ["--adapter-version", version]
    _run(runner, args)
    out = json.loads(
        _run(runner, ["calibrate", "--record", "--key", str(key), "--db", str(db), "--json"]).stdout
    )
    assert out["attestations_ok"] is True
    return [
        arg
        for row in out["calibration_records"]
        if row["plan_schema_version"] == "0.4"
        for arg in ("--calibration", row["digest"])
    ]
