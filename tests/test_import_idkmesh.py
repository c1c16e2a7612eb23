"""`provledger import idkmesh`: the reference corpus, idempotence, symlinks, then audits.

Expected audits follow docs/COHORTS.md ("What an auditor finds in the corpus"), adjusted
for what the importer does: frozen cohorts whose WorkUnits/plans are absent fail the
freeze gate and are not imported (successor-five, first-five-v2, first-five-v3), and a
burn-notice object is built from first-five's extensions.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.sqlite import open_store


def _import(runner: CliRunner, db: Path, path: Path) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["import", "idkmesh", str(path), "--db", str(db), "--json"])
    return result.exit_code, json.loads(result.stdout)


def _by_path(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["path"]: item for item in report["items"]}


def _audit(runner: CliRunner, db: Path, cohort_id: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["cohort", "audit", cohort_id, "--db", str(db), "--json"])
    return result.exit_code, json.loads(result.stdout)


def test_import_corpus_and_audit(corpus: Path, ledger_path: Path, runner: CliRunner) -> None:
    code, report = _import(runner, ledger_path, corpus)
    assert code == 3  # some documents are invalid (reported, not written)
    items = _by_path(report)
    assert items["benchmarks/phase-b2-first-five/cohort.json"]["status"] == "imported"
    assert items["benchmarks/phase-b2-first-five/cohort.json#burn"]["status"] == "imported"
    assert items["benchmarks/phase-b2-successor-v2/cohort.json"]["status"] == "imported"
    for refused in ("phase-b2-successor-five", "phase-b2-first-five-v2", "phase-b2-first-five-v3"):
        item = items[f"benchmarks/{refused}/cohort.json"]
        assert item["status"] == "invalid" and "freeze gate refused" in item["reason"]
    assert "task.plan.missing" in items["benchmarks/phase-b2-successor-five/cohort.json"]["reason"]
    # The corpus's one schema-invalid document (WorkUnit kind "code").
    v3_wu = "benchmarks/phase-b2-first-five-v3/work-units/task-101-negative-evidence-type-boundary.work-unit.json"  # noqa: E501
    assert items[v3_wu]["status"] == "invalid" and "$.kind" in items[v3_wu]["reason"]
    assert items["verification/fixtures/patch-transition/correct.patch"]["kind"] == "blob"
    assert (
        items[
            "benchmarks/phase-b2-successor-five/evidence/task-001/attempt-001/artifact-provenance.json"
        ]["status"]
        == "skipped"
    )

    with open_store(ledger_path, readonly=True) as store:
        size = store.size()
    _, again = _import(runner, ledger_path, corpus)
    assert again["counts"]["imported"] == 0
    with open_store(ledger_path, readonly=True) as store:
        assert store.size() == size

    # The burn notice is attested by the ledger's authority key and that attestation checks.
    notice = items["benchmarks/phase-b2-first-five/cohort.json#burn"]["digest"]
    checked = runner.invoke(
        app, ["attestation", "check", notice, "--db", str(ledger_path), "--json"]
    )
    assert checked.exit_code == 0, checked.output
    assert runner.invoke(app, ["verify", "--db", str(ledger_path)]).exit_code == 0

    # first-five (burned): no errors; the burn notice built from its extensions clears
    # burn.notice.missing; no stored cohort claims to succeed it (all three were refused).
    code, audit = _audit(runner, ledger_path, "benchmark/phase-b2-first-five")
    assert code == 0 and audit["ok"]
    assert audit["findings"] == []
    assert len(audit["relations"]["burn_notices"]) == 1
    assert len(audit["excluded_outcomes"]) == 5

    # successor-v2 (scaffold): exactly as docs/COHORTS.md lists, 10 errors and 2 warnings.
    code, audit = _audit(runner, ledger_path, "benchmark/phase-b2-successor-v2")
    assert code == 1
    found = sorted((f["severity"], f["code"]) for f in audit["findings"])
    assert found == sorted(
        [("warning", "cohort.stage"), ("warning", "cohort.signatures")]
        + [("error", "task.work_unit.missing")] * 5
        + [("error", "task.plan.missing")] * 5
    )
    signature = next(f for f in audit["findings"] if f["code"] == "cohort.signatures")
    assert "role-specialized-two-independent-attempts-v2" in signature["message"]


def test_symlink_leaving_path_is_refused(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    root = tmp_path / "repo"
    (root / "examples").mkdir(parents=True)
    outside = tmp_path / "secret.json"
    outside.write_text('{"a": 1}')
    (root / "examples" / "leak.json").symlink_to(outside)
    (root / "examples" / "note.txt").write_bytes(b"hello\n")
    code, report = _import(runner, ledger_path, root)
    items = _by_path(report)
    assert code == 3
    assert items["examples/leak.json"]["status"] == "invalid"
    assert "symlink leaves PATH" in items["examples/leak.json"]["reason"]
    assert items["examples/note.txt"]["status"] == "imported"


def test_frozen_cohort_imported_through_gate(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    toy = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
    root = tmp_path / "repo" / "benchmarks" / "toy-v2"
    root.mkdir(parents=True)
    shutil.copytree(toy / "work-units", root / "work-units")
    shutil.copytree(toy / "evaluators", root / "evaluators")
    shutil.copy(toy / "cohort-v2.json", root / "cohort.json")
    code, report = _import(runner, ledger_path, tmp_path / "repo")
    assert code == 0, report
    assert _by_path(report)["benchmarks/toy-v2/cohort.json"]["status"] == "imported"
