"""`provledger import idkmesh`: the reference corpus, idempotence, symlinks, then audits.

Import records history as it is: every cohort whatever is missing around it, the
schema-invalid first-five-v3 WorkUnit quarantined, a burn notice built from
first-five's extensions (without an invented date). Expected audits follow
docs/COHORTS.md ("What an auditor finds in the corpus").
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


V3_WU = (
    "benchmarks/phase-b2-first-five-v3/work-units/"
    "task-101-negative-evidence-type-boundary.work-unit.json"
)
COHORTS = (
    "phase-b2-first-five",
    "phase-b2-successor-five",
    "phase-b2-first-five-v2",
    "phase-b2-first-five-v3",
    "phase-b2-successor-v2",
)
#: The corpus's real defects (evidence present but wrong), per cohort: nothing else may
#: be reported as a defect (missing evidence is a separate category).
REAL_DEFECTS = {
    "benchmark/phase-b2-first-five": [],
    "benchmark/phase-b2-first-five-v2": [],
    "benchmark/phase-b2-first-five-v3": [
        ("task.work_unit.schema", "benchmark/phase-b2-v3/101-negative-evidence-type-boundary")
    ],
    "benchmark/phase-b2-successor-five": [
        (
            "attempt.verification_result.digest",
            "benchmark/phase-b2-successor/001-negative-evidence-type-boundary",
        )
    ],
    "benchmark/phase-b2-successor-v2": [],
}


def _defects(audit: dict[str, Any]) -> list[tuple[str, str | None]]:
    return sorted(
        (f["code"], f["task"])
        for f, cat in zip(audit["findings"], audit["finding_categories"], strict=True)
        if cat == "defect"
    )


def test_import_corpus_records_everything(
    corpus: Path, ledger_path: Path, runner: CliRunner
) -> None:
    code, report = _import(runner, ledger_path, corpus)
    assert code == 0, report["counts"]
    assert report["counts"]["invalid"] == 0
    items = _by_path(report)
    # Every cohort is recorded, whatever its stage and whatever is missing around it.
    for folder in COHORTS:
        assert items[f"benchmarks/{folder}/cohort.json"]["status"] == "imported"
        assert items[f"benchmarks/{folder}/cohort.json"]["kind"] == "benchmark-cohort"
    assert items["benchmarks/phase-b2-first-five/cohort.json#burn"]["status"] == "imported"
    assert {g["cohort_id"] for g in report["groups"] if g["cohort_id"]} == {
        f"benchmark/{c}" for c in COHORTS
    }
    # The corpus's one schema-invalid document (WorkUnit kind "code") is kept quarantined.
    assert items[V3_WU]["status"] == "quarantined" and "$.kind" in items[V3_WU]["reason"]
    assert items[V3_WU]["kind"] == "quarantine"
    assert items["verification/fixtures/patch-transition/correct.patch"]["kind"] == "blob"
    provenance_note = (
        "benchmarks/phase-b2-successor-five/evidence/task-001/attempt-001/artifact-provenance.json"
    )
    assert items[provenance_note]["kind"] == "blob"

    with open_store(ledger_path, readonly=True) as store:
        size = store.size()
        quarantine = store.get(items[V3_WU]["digest"])
        assert quarantine is not None
        record = json.loads(quarantine.data)
        assert record["claimed_kind"] == "work-unit"
        assert record["path"] == V3_WU
        assert store.get(record["blob_digest"]) is not None  # the exact bytes are kept
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

    # first-five (burned): upstream's burn facts, no import-time date, no errors.
    code, audit = _audit(runner, ledger_path, "benchmark/phase-b2-first-five")
    assert code == 0 and audit["ok"]
    assert [f["code"] for f in audit["findings"]] == ["relation.successors.multiple"]
    assert audit["burn"]["issued_at"] is None  # upstream records no date; none is invented
    assert audit["burn"]["reason"].startswith("Frozen evaluator plans encoded semantic")
    assert [t["task"] for t in audit["burn"]["never_again_held_out"]] == [
        "benchmark/phase-b2/001-cohort-path-boundary"
    ]
    assert len(audit["excluded_outcomes"]) == 5
    assert [s["cohort_id"] for s in audit["successors"]] == [
        "benchmark/phase-b2-first-five-v2",
        "benchmark/phase-b2-first-five-v3",
        "benchmark/phase-b2-successor-five",
    ]
    assert "attested by the authority key" in audit["attestations"][notice]

    for cohort_id, expected in REAL_DEFECTS.items():
        _, audit = _audit(runner, ledger_path, cohort_id)
        assert _defects(audit) == sorted(expected), cohort_id

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

    # successor-five: the result whose bytes do not hash to the recorded digest, with the
    # stored digests under both schemes; the v0.4 verdict's strength is counted.
    _, audit = _audit(runner, ledger_path, "benchmark/phase-b2-successor-five")
    mismatch = next(
        f for f in audit["findings"] if f["code"] == "attempt.verification_result.digest"
    )
    assert (
        "sha256:1f850bb3675ce43a61ceddb38ab9b72d565e87047e65374ccdb7a51413ccc7ab"
        in (mismatch["message"])
    )
    assert "stored legacy sha256:" in mismatch["message"] and "JCS sha256:" in mismatch["message"]
    strengths = {row["strength"]: row["count"] for row in audit["evidence_strength"]}
    assert strengths["v0.4 calibrated transformation proxy"] == 1

    # first-five-v3 task 101: a schema violation, never "missing".
    _, audit = _audit(runner, ledger_path, "benchmark/phase-b2-first-five-v3")
    task101 = [f for f in audit["findings"] if f["task"] and "/101-" in f["task"]]
    assert [f["code"] for f in task101] == ["task.work_unit.schema"]
    assert "'code' is not one of" in task101[0]["message"]


def test_import_cohort_folder_and_refusals(
    corpus: Path, ledger_path: Path, runner: CliRunner
) -> None:
    folder = corpus / "benchmarks" / "phase-b2-first-five"
    code, report = _import(runner, ledger_path, folder)
    assert code == 0
    assert report["prefix"] == "benchmarks/phase-b2-first-five"
    items = _by_path(report)
    assert items["benchmarks/phase-b2-first-five/cohort.json"]["status"] == "imported"
    assert items["benchmarks/phase-b2-first-five/cohort.json#burn"]["status"] == "imported"
    assert report["counts"]["imported"] == 13  # cohort, 10 documents, prose notice, burn notice
    # A folder of the repository that holds no records says what it expected.
    result = runner.invoke(
        app, ["import", "idkmesh", str(corpus / "schemas"), "--db", str(ledger_path)]
    )
    assert result.exit_code == 3
    assert "not an IDKMesh folder" in result.stderr
    assert "cohort folder holding cohort.json" in result.stderr


def test_symlinks_refuse_the_whole_import(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    root = tmp_path / "repo"
    (root / "examples").mkdir(parents=True)
    outside = tmp_path / "secret.json"
    outside.write_text('{"a": 1}')
    (root / "examples" / "note.txt").write_bytes(b"hello\n")
    leak = root / "examples" / "leak.json"
    for target in (outside, root / "examples" / "note.txt"):  # out of the tree, and inside it
        leak.unlink(missing_ok=True)
        leak.symlink_to(target)
        result = runner.invoke(app, ["import", "idkmesh", str(root), "--db", str(ledger_path)])
        assert result.exit_code == 3 and result.stdout == ""
        assert result.stderr == (
            f"error: import file examples/leak.json, got a symlink, expected a regular file"
            f" inside {root}\n"
        )
    with open_store(ledger_path, readonly=True) as store:
        assert store.size() == 0


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


def test_import_accepts_every_kind_of_folder(
    corpus: Path, tmp_path: Path, runner: CliRunner
) -> None:
    """A benchmarks/ folder, examples/, a cohort folder outside any repository."""
    cases = {
        corpus / "benchmarks": ("benchmarks", "benchmarks/phase-b2-successor-v2/cohort.json"),
        corpus / "examples": ("examples", "examples/work-units/phase0-smoke.work-unit.json"),
    }
    alone = tmp_path / "copied" / "phase-b2-first-five"
    shutil.copytree(corpus / "benchmarks" / "phase-b2-first-five", alone)
    cases[alone] = (
        "benchmarks/phase-b2-first-five",
        "benchmarks/phase-b2-first-five/cohort.json",
    )
    for index, (folder, (prefix, path)) in enumerate(cases.items()):
        db = tmp_path / f"l{index}.db"
        assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
        code, report = _import(runner, db, folder)
        assert code == 0, (folder, report["counts"])
        assert report["prefix"] == prefix
        assert _by_path(report)[path]["status"] == "imported"


def test_burn_notice_keeps_upstream_date_and_bad_json_is_quarantined(
    corpus: Path, tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    folder = tmp_path / "benchmarks" / "burned"
    shutil.copytree(corpus / "benchmarks" / "phase-b2-first-five", folder)
    cohort = json.loads((folder / "cohort.json").read_text("utf-8"))
    cohort["extensions"]["org.idkmesh.phase_b2"]["burn"]["burned_at"] = "2026-08-20"
    (folder / "cohort.json").write_text(json.dumps(cohort), "utf-8")
    (folder / "work-units" / "broken.work-unit.json").write_bytes(b'{"id": "x", NaN}')
    code, report = _import(runner, ledger_path, folder)
    assert code == 0
    items = _by_path(report)
    broken = items["benchmarks/burned/work-units/broken.work-unit.json"]
    assert broken["status"] == "quarantined" and "does not parse" in broken["reason"]
    notice = items["benchmarks/burned/cohort.json#burn"]["digest"]
    with open_store(ledger_path, readonly=True) as store:
        stored = store.get(notice)
        assert stored is not None
        assert json.loads(stored.data)["issued_at"] == "2026-08-20T00:00:00Z"
    audit = runner.invoke(
        app, ["cohort", "audit", "benchmark/phase-b2-first-five", "--db", str(ledger_path)]
    )
    assert "  date: 2026-08-20T00:00:00Z" in audit.stdout


def test_schema_invalid_cohort_is_audited_not_lost(
    corpus: Path, tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    folder = tmp_path / "benchmarks" / "odd"
    shutil.copytree(corpus / "benchmarks" / "phase-b2-first-five", folder)
    cohort = json.loads((folder / "cohort.json").read_text("utf-8"))
    cohort["id"] = "benchmark/odd"
    cohort["stage"] = "half-baked"
    (folder / "cohort.json").write_text(json.dumps(cohort), "utf-8")
    code, report = _import(runner, ledger_path, folder)
    assert code == 0
    assert _by_path(report)["benchmarks/odd/cohort.json"]["status"] == "quarantined"
    code, audit = _audit(runner, ledger_path, "benchmark/odd")
    assert code == 1
    codes = {f["code"] for f in audit["findings"]}
    assert "cohort.schema" in codes and "cohort.stage" in codes
    listed = runner.invoke(app, ["cohort", "list", "--db", str(ledger_path), "--json"])
    rows = {r["id"]: r for r in json.loads(listed.stdout)}
    assert rows["benchmark/odd"]["stage"] == "quarantined (fails its schema)"
