"""examples/harness.py runs: a harness records an evaluation run through the Python API and
shows each result's provenance, on SQLite and on PostgreSQL (docs/API.md)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = ROOT / "examples" / "harness.py"


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PROVLEDGER_DB")}
    return subprocess.run(
        [sys.executable, str(HARNESS), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
    )


def _check(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "repair: passed (accept_candidate)" in out
    assert "decoy: failed (reject_candidate)" in out
    assert out.count("provenance of the") == 2 and "FAIL" not in out
    # Every object of the run, its attestations and the store's own batch records.
    assert re.search(r"^verify: \d+ entries, clean$", out, re.MULTILINE), out


def test_the_harness_records_a_run_and_shows_its_provenance(tmp_path: Path) -> None:
    _check(_run(str(tmp_path / "run"), cwd=tmp_path))
    assert (tmp_path / "run" / "ledger.db").is_file()
    # A second run into the same place is refused: init never overwrites a ledger.
    again = _run(str(tmp_path / "run"), cwd=tmp_path)
    assert again.returncode == 4, again.stderr
    assert again.stderr.startswith("error: ledger already exists")


@pytest.mark.usefixtures("pg_cluster")
def test_the_harness_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    _check(_run(str(tmp_path / "run"), pg_url, cwd=tmp_path))
    assert not (tmp_path / "run" / "ledger.db").exists()
