"""docs/API.md's examples run, in order, as one program, on SQLite and on PostgreSQL.

The program runs in a fresh process in an empty directory with the installed package,
exactly as a reader would run it: nothing is set up first (no ``install_*`` call), the
ledger is ``PROVLEDGER_DB`` (a file, or a URL of an empty PostgreSQL database) and the toy
cohorts are the repository's ``examples/``. tests/test_wheel_install.py runs the same
program from a wheel installed into a fresh virtual environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from api_docs import EXAMPLES, blocks, program


def run_page(python: str | Path, cwd: Path, db: str) -> subprocess.CompletedProcess[str]:
    script = cwd / "api_examples.py"
    script.write_text(program(), "utf-8")
    env = {**os.environ, "PROVLEDGER_DB": db, "PROVLEDGER_EXAMPLES": str(EXAMPLES)}
    env.pop("PYTHONPATH", None)
    return subprocess.run(
        [str(python), str(script)], capture_output=True, text=True, cwd=cwd, env=env, check=False
    )


def test_the_page_has_its_examples() -> None:
    found = blocks()
    assert len(found) >= 12
    assert sum("assert" in block for block in found) >= 10  # examples that check something


def test_a_failing_example_fails_the_run(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("assert False, 'an example that does not hold'\n", "utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, check=False)
    assert done.returncode != 0


def test_the_examples_run_on_sqlite(tmp_path: Path) -> None:
    done = run_page(sys.executable, tmp_path, "ledger.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "ledger.db").is_file() and (tmp_path / "result.bundle.json").is_file()


@pytest.mark.usefixtures("pg_cluster")
def test_the_examples_run_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    done = run_page(sys.executable, tmp_path, pg_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "ledger.db").exists()
