"""docs/API.md's examples run, in order, as one program, on SQLite and on PostgreSQL.

The program runs in a fresh process in an empty directory with the installed package,
exactly as a reader would run it: nothing is set up first (no ``install_*`` call), the
ledger is ``PROVLEDGER_DB`` (a file, or a URL of an empty PostgreSQL database) and the toy
cohorts are the repository's ``examples/``. tests/test_wheel_install.py runs the same
program from a wheel installed into a fresh virtual environment.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from api_docs import EXAMPLES, PAGE, blocks, program
from bench_start import command_paths


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


def _named(cell: str, commands: set[str]) -> set[str]:
    """The commands a table cell or a sentence names in backticks (``cohort freeze``,
    ``burn``: a bare name after a group's command is a command of that group)."""
    found: set[str] = set()
    group = ""
    for text in re.findall(r"`([^`]+)`", cell):
        words = [w for w in text.split() if not w.startswith("-") and not w.isupper()]
        name = " ".join(words)
        if name not in commands and f"{group} {name}" in commands:
            name = f"{group} {name}"
        if name in commands:
            found.add(name)
            group = name.split()[0] if " " in name else group
    return found


def test_every_command_is_on_the_page() -> None:
    """Each command is in the table of the function it calls: the CLI is a thin layer, so
    there is no command the API cannot do."""
    paths = list(command_paths())
    commands = {" ".join(p) for p in paths if not any(q[: len(p)] == p != q for q in paths)}
    assert len(commands) >= 46
    text = PAGE.read_text("utf-8")
    table = text.split("## Command to function", 1)[1].split("\n\n", 2)[1]
    in_table = set().union(*(_named(row.split("|")[1], commands) for row in table.splitlines()))
    assert commands - in_table == set()
    assert "no function on this page" not in text


def test_a_failing_example_fails_the_run(tmp_path: Path) -> None:
    script = tmp_path / "broken.py"
    script.write_text("assert False, 'an example that does not hold'\n", "utf-8")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, check=False)
    assert done.returncode != 0


def test_the_examples_run_on_sqlite(tmp_path: Path) -> None:
    done = run_page(sys.executable, tmp_path, "ledger.db")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "ledger.db").is_file() and (tmp_path / "result.bundle.json").is_file()


def test_the_readme_example_runs(tmp_path: Path) -> None:
    [example] = blocks((PAGE.parents[1] / "README.md").read_text("utf-8"))
    script = tmp_path / "readme_example.py"
    script.write_text("from ledger.api import init_ledger\ninit_ledger('ledger.db')\n" + example)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "'entries': 0" in done.stdout, done.stdout  # an empty ledger's stats


@pytest.mark.usefixtures("pg_cluster")
def test_the_examples_run_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    done = run_page(sys.executable, tmp_path, pg_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not (tmp_path / "ledger.db").exists()
