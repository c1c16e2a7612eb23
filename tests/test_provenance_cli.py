"""`provledger provenance`: a whole chain passes; breaking one link (in a copy) fails it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.schema.validation import validate
from ledger.store.prepared import prepare_blob, prepare_json
from ledger.store.sqlite import open_store, trigger_names

ROOT = Path(__file__).resolve().parents[1]
CAL = ROOT / "verifiers" / "fixtures" / "calibration"


def _ok(runner: CliRunner, args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def chain(tmp_path: Path, ledger_path: Path, runner: CliRunner) -> tuple[Path, str]:
    """A ledger holding WorkUnit, plan v0.4, manifest, blobs and the verifier's result,
    attested by a registered verifier, under a signed checkpoint."""
    from verifiers.calibration import calibration_table

    table = calibration_table(validate=validate)
    row = table.row("0.4", "repair")
    outcome = next(o for o in table.outcomes if o.result_digest == row.result_digest)
    result = json.loads(outcome.result_bytes)
    db = str(ledger_path)
    items = [
        prepare_json((CAL / "work-unit.json").read_bytes()),
        prepare_json((CAL / "plans" / "evaluator-plan-v0.4.json").read_bytes()),
        prepare_json((CAL / "manifests" / "repair.result-manifest.json").read_bytes()),
        *(
            prepare_blob((CAL / "candidates" / "repair" / name).read_bytes())
            for name in ("candidate.patch", "stdout.txt", "stderr.txt")
        ),
        *(prepare_blob(body) for _, body in outcome.observations),
        prepare_json(outcome.result_bytes),
    ]
    with open_store(ledger_path) as store:
        store.append_many(items)
    key = tmp_path / "verifier.key"
    _ok(runner, ["key", "generate", str(key)])
    verifier: dict[str, Any] = result["verifier"]
    _ok(
        runner,
        [
            "identity", "register", "--db", db,
            "--verifier-id", verifier["id"],
            "--adapter", verifier["adapter"],
            "--adapter-version", verifier["adapter_version"],
            "--public-key", str(key) + ".pub",
        ],
    )  # fmt: skip
    _ok(runner, ["sign", outcome.result_digest, "--key", str(key), "--db", db])
    _ok(runner, ["checkpoint", "--db", db])
    return ledger_path, outcome.result_digest


def _report(runner: CliRunner, db: Path, digest: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["provenance", digest, "--db", str(db), "--json"])
    return result.exit_code, json.loads(result.stdout)


def _failed(node: dict[str, Any], path: str = "") -> list[str]:
    here = f"{path}/{node['name']}" if path else node["name"]
    out = [here] if node["status"] == "failed" and not node["children"] else []
    for child in node["children"]:
        out += _failed(child, here)
    return out


def test_whole_chain_passes(chain: tuple[Path, str], runner: CliRunner) -> None:
    db, digest = chain
    code, report = _report(runner, db, digest)
    assert code == 0, json.dumps(
        _failed({"name": "", "status": "passed", "children": report["checks"]})
    )
    assert report["ok"] is True
    names = [c["name"] for c in report["checks"]]
    assert names == [
        "verification result", "result manifest", "work unit", "evaluator plan",
        "artifacts", "attestation", "cohorts", "evidence strength", "log inclusion",
    ]  # fmt: skip
    assert report["outcome"] == "unlisted"
    human = runner.invoke(app, ["provenance", digest, "--db", str(db)])
    assert human.exit_code == 0 and "passed" in human.stdout


def _copy_without_triggers(db: Path, tmp_path: Path) -> sqlite3.Connection:
    copy = tmp_path / "copy.db"
    shutil.copy(db, copy)
    for suffix in ("-wal", "-shm"):
        if Path(str(db) + suffix).exists():
            shutil.copy(str(db) + suffix, str(copy) + suffix)
    conn = sqlite3.connect(copy)
    for name in trigger_names():
        conn.execute(f"DROP TRIGGER IF EXISTS {name}")
    return conn


def test_tampered_manifest_bytes_fail(
    chain: tuple[Path, str], runner: CliRunner, tmp_path: Path
) -> None:
    db, digest = chain
    conn = _copy_without_triggers(db, tmp_path)
    conn.execute(
        "UPDATE objects SET data = replace(data, 'candidate', 'kandidate')"
        " WHERE kind = 'result-manifest'"
    )
    conn.commit()
    conn.close()
    result = runner.invoke(app, ["provenance", digest, "--db", str(tmp_path / "copy.db"), "--json"])
    # The store refuses a row whose bytes no longer hash to its log entry's digest: one
    # error line naming the object, exit 1, no report built from forged bytes.
    assert result.exit_code == 1, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ledger object row at seq ")
    assert "disagrees with its bytes" in result.stderr
    # The original ledger is untouched and still passes.
    assert _report(runner, db, digest)[0] == 0


def test_removed_checkpoint_fails(
    chain: tuple[Path, str], runner: CliRunner, tmp_path: Path
) -> None:
    db, digest = chain
    conn = _copy_without_triggers(db, tmp_path)
    conn.execute("DELETE FROM checkpoints")
    conn.commit()
    conn.close()
    code, report = _report(runner, tmp_path / "copy.db", digest)
    assert code == 1
    inclusion = next(c for c in report["checks"] if c["name"] == "log inclusion")
    assert inclusion["status"] == "failed"
    assert "no signed checkpoint" in inclusion["reason"]


def test_deleted_attestation_fails(
    chain: tuple[Path, str], runner: CliRunner, tmp_path: Path
) -> None:
    db, digest = chain
    conn = _copy_without_triggers(db, tmp_path)
    conn.execute(
        "DELETE FROM objects WHERE kind = 'attestation' AND digest IN"
        " (SELECT from_digest FROM refs WHERE to_digest = ?)",
        (digest,),
    )
    conn.commit()
    conn.close()
    code, report = _report(runner, tmp_path / "copy.db", digest)
    assert code == 1
    attestation = next(c for c in report["checks"] if c["name"] == "attestation")
    assert attestation["status"] == "failed"
    # The reference row left behind names an object that is gone: the store refuses it.
    assert "reference disagrees with the objects" in attestation["reason"]


def test_unknown_or_malformed_reference_exits_3(ledger_path: Path, runner: CliRunner) -> None:
    # Not found and malformed are input errors (3), not a failed chain (1); one line,
    # user text never read as markup.
    for ref, expected in (
        ("sha256:" + "0" * 64, "object not found"),
        ("sha256:abc", "malformed digest"),
        ("[/x]", "object not found, got [/x]"),
        ("phase0/nothing@x", "malformed reference version"),
    ):
        result = runner.invoke(app, ["provenance", ref, "--db", str(ledger_path)])
        assert result.exit_code == 3, (ref, result.output)
        assert result.stderr.startswith("error: ") and expected in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1


def test_a_cohort_written_past_admission_lists_no_outcome(
    chain: tuple[Path, str], runner: CliRunner, tmp_path: Path
) -> None:
    """A burned cohort walked back to ``collecting`` by raw rows (``sqlite3``, no keys),
    listing the result as an attempt: the provenance outcome stays unlisted (the record
    has no standing); the same listing in a cohort anyone may write counts."""
    from hostile_writer import sqlite_insert

    from ledger.store.prepared import prepare_value

    db, digest = chain
    toy = ROOT / "examples" / "cohorts" / "toy"
    files = sorted((toy / "work-units").glob("*.json")) + sorted(
        (toy / "evaluators").glob("*.json")
    )
    _ok(runner, ["append", *map(str, files), "--db", str(db)])
    base: dict[str, Any] = json.loads((toy / "cohort-v1.json").read_text())
    (tmp_path / "frozen.json").write_text(json.dumps({**base, "stage": "frozen"}))
    _ok(runner, ["cohort", "freeze", str(tmp_path / "frozen.json"), "--db", str(db)])
    _ok(runner, ["cohort", "burn", base["id"], "--reason", "seen", "--db", str(db)])
    result = json.loads((CAL / "manifests" / "repair.result-manifest.json").read_text())
    with open_store(db, readonly=True) as store:
        stored = store.get(digest)
        manifest = store.by_id(result["id"], kind="result-manifest")[-1]
    assert stored is not None
    attempt = {
        "attempt_id": "attempt-001",
        "outcome": "support",
        "structural_signature": "solo-baseline-v1",
        "result_manifest": {"digest": manifest.digest, "id": result["id"], "path": "rm.json"},
        "verification_result": {"digest": digest, "id": stored.object_id, "path": "vr.json"},
    }

    def listing(cohort_id: str) -> dict[str, Any]:
        value = json.loads(json.dumps(base))
        value.update(id=cohort_id, stage="collecting")
        value["tasks"][1]["evidence"] = {"status": "verified", "attempts": [attempt]}
        return value

    sqlite_insert(db, [prepare_value(listing(base["id"]))])
    assert _report(runner, db, digest)[1]["outcome"] == "unlisted"
    (tmp_path / "open.json").write_text(json.dumps(listing("example/anyone")))
    _ok(runner, ["append", str(tmp_path / "open.json"), "--db", str(db)])
    assert _report(runner, db, digest)[1]["outcome"] == "counted"
