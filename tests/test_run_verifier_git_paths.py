"""``provledger run-verifier`` judges the path ``git apply`` writes, end to end.

A patch whose paths lack the ``a/``/``b/`` prefixes would be written by ``git apply``
(default ``-p1``) one directory up: ``diff --git tools/x.py tools/x.py`` writes
``x.py``; with an allow-list ``src/**`` the header path ``src/.github/x`` writes
``.github/x``. Both runs must fail structurally and record a failed result: nothing
is signed as a pass.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from typer.testing import CliRunner

from ledger.cli import app
from verifiers.calibration import FIXTURE_DIR

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / ".venv" / "bin" / "provledger"
KEY_DIR: list[Path] = []
REPAIR = (FIXTURE_DIR / "candidates" / "repair" / "candidate.patch").read_text()


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def fixture(tmp: Path, patch: str, *, allowed: list[str] | None = None) -> list[str]:
    tmp.mkdir(exist_ok=True)
    """run-verifier arguments for the v0.4 calibration plan on ``patch``; ``allowed``
    replaces the WorkUnit's allow-lists (plan and manifest re-bound to it)."""
    work_unit = json.loads((FIXTURE_DIR / "work-unit.json").read_bytes())
    plan = json.loads((FIXTURE_DIR / "plans" / "evaluator-plan-v0.4.json").read_bytes())
    manifest = json.loads((FIXTURE_DIR / "manifests" / "repair.result-manifest.json").read_bytes())
    if allowed is not None:
        work_unit["constraints"]["allowed_paths"] = allowed
        work_unit["permissions"]["filesystem_write"] = allowed
        digest = sha(rfc8785.dumps(work_unit))
        plan["binding"]["work_unit_digest"] = digest
        manifest["provenance"]["work_unit_digest"] = digest
    root = tmp / "candidate"
    shutil.copytree(FIXTURE_DIR / "candidates" / "repair", root)
    (root / "candidate.patch").write_text(patch)
    manifest["produced_artifacts"][0]["digest"] = sha(patch.encode())
    files = {"work-unit.json": work_unit, "plan.json": plan, "manifest.json": manifest}
    for name, doc in files.items():
        (tmp / name).write_text(json.dumps(doc, indent=2))
    return [
        "run-verifier",
        "--work-unit",
        str(tmp / "work-unit.json"),
        "--plan",
        str(tmp / "plan.json"),
        "--manifest",
        str(tmp / "manifest.json"),
        "--candidate-root",
        str(root),
        "--key",
        str(KEY_DIR[0] / "verifier.key"),
        "--json",
    ]


@pytest.fixture
def ledger(tmp_path: Path, runner: CliRunner, ledger_path: Path) -> Path:
    key = tmp_path / "verifier.key"
    KEY_DIR[:] = [tmp_path]
    assert runner.invoke(app, ["key", "generate", str(key)]).exit_code == 0
    args = ["identity", "register", "--verifier-id", "idkmesh-local-verifier"]
    args += ["--adapter", "deterministic-patch-verifier", "--adapter-version", "0.3.0"]
    args += ["--public-key", f"{key}.pub", "--db", str(ledger_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return ledger_path


def strip_prefixes(patch: str, old: str, new: str) -> str:
    return patch.replace(f"a/{old}", new).replace(f"b/{old}", new)


def run(runner: CliRunner, args: list[str], db: Path, code: int) -> dict[str, Any]:
    result = runner.invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == code, (result.stdout, result.stderr)
    info: dict[str, Any] = json.loads(result.stdout)
    return info


def raw(runner: CliRunner, db: Path, digest: str) -> bytes:
    result = runner.invoke(app, ["show", "--raw", digest, "--db", str(db)])
    assert result.exit_code == 0, result.stderr
    return result.stdout_bytes


def rule_recorded(runner: CliRunner, db: Path, info: dict[str, Any]) -> str | None:
    for item in info["recorded"]:
        if item["role"] == "observation":
            body = json.loads(raw(runner, db, item["digest"]))
            error = body.get("structure", {}).get("error") if isinstance(body, dict) else None
            if error:
                return str(error["rule"])
    return None


def structure_error(info: dict[str, Any]) -> str:
    (review,) = [c for c in info["checks"] if c["id"] == "independent-review"]
    assert review["status"] == "failed"
    assert "structure" in review["summary"]
    return str(review["summary"])


def test_prefixless_patch_fails_and_is_recorded_as_failed(
    tmp_path: Path, runner: CliRunner, ledger: Path
) -> None:
    patch = strip_prefixes(REPAIR, "tools/cohort_tool.py", "tools/cohort_tool.py")
    assert patch.startswith("diff --git tools/cohort_tool.py tools/cohort_tool.py\n")
    info = run(runner, fixture(tmp_path, patch), ledger, 1)
    assert (info["status"], info["recommendation"]) == ("failed", "reject_candidate")
    structure_error(info)
    assert info["attestation"]["ok"] is True  # a signed *failed* result
    result = json.loads(raw(runner, ledger, info["result_digest"]))
    assert result["status"] == "failed"
    # The stored patch-semantic observation names the rule that refused the patch.
    assert rule_recorded(runner, ledger, info) == "missing-prefix"
    # The same candidate with git's prefixes passes: only the path spelling differs.
    good_info = run(runner, fixture(tmp_path / "good", REPAIR), ledger, 0)
    assert good_info["status"] == "passed"


def test_src_github_header_under_src_allow_list_fails(
    tmp_path: Path, runner: CliRunner, ledger: Path
) -> None:
    body = (
        "@@ -1 +1 @@\n-x = (ROOT / args.cohort).resolve()\n"
        '+x = resolve_repo_file(args.cohort, label="BenchmarkCohort")\n'
    )
    bare = "diff --git src/.github/x src/.github/x\n--- src/.github/x\n+++ src/.github/x\n"
    info = run(runner, fixture(tmp_path, bare + body, allowed=["src/**"]), ledger, 1)
    assert info["status"] == "failed"
    structure_error(info)
    assert rule_recorded(runner, ledger, info) == "missing-prefix"
    # Spelled with git's prefixes, git writes src/.github/x: inside src/**, so it passes.
    prefixed = (
        "diff --git a/src/.github/x b/src/.github/x\n--- a/src/.github/x\n+++ b/src/.github/x\n"
    )
    ok = run(runner, fixture(tmp_path / "ok", prefixed + body, allowed=["src/**"]), ledger, 0)
    assert ok["status"] == "passed"


def test_installed_cli_refuses_the_prefixless_patch(tmp_path: Path, ledger: Path) -> None:
    if not EXE.exists():
        pytest.skip(f"console script not installed at {EXE}")
    patch = strip_prefixes(REPAIR, "tools/cohort_tool.py", "tools/cohort_tool.py")
    args = fixture(tmp_path, patch)
    proc = subprocess.run(
        [str(EXE), *args, "--db", str(ledger)],
        env={**os.environ, "PROVLEDGER_NO_PROGRESS": "1"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1, proc.stderr
    info = json.loads(proc.stdout)
    assert info["status"] == "failed"
    assert "structure" in structure_error(info)
