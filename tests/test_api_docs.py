"""docs/API.md's examples run, in order, as one program, on SQLite and on PostgreSQL.

The program runs in a fresh process in an empty directory with the installed package,
exactly as a reader would run it: nothing is set up first (no ``install_*`` call), the
ledger is ``PROVLEDGER_DB`` (a file, or a URL of an empty PostgreSQL database) and the toy
cohorts are the repository's ``examples/``. tests/test_wheel_install.py runs the same
program from a wheel installed into a fresh virtual environment.
"""

from __future__ import annotations

import ast
import inspect
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

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


#: What a command may import besides typer and rich: the three APIs, the CLI's own
#: helpers (argument parsing, output), the error classes, and file output.
THIN = ("ledger.api", "cohorts.api", "verifiers.api", "ledger.cli", "ledger.errors")
THIN += ("cohorts.errors", "verifiers.errors", "ledger.files")
#: Commands that take a faster path to what an API function also returns, and why.
FASTER_PATH = {
    # Streams entries straight from the store, printing the first at once; Ledger.log
    # yields the same entries (tests/test_api.py compares its JSON with the command's).
    "log": {"ledger.store.backends", "ledger.schema.kinds"},
}


def _reaches_past_the_api(function: Callable[..., object]) -> set[str]:
    """The modules of this project a function imports that are not on ``THIN``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    return {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module is not None
        and node.module.split(".")[0] in ("ledger", "cohorts", "verifiers")
        and not node.module.startswith(THIN)
    }


def _callback(path: tuple[str, ...]) -> Callable[..., object]:
    import typer

    from ledger.cli import app

    command: Any = typer.main.get_command(app)  # typer's click command: untyped here
    for name in path:
        command = command.get_command(typer.Context(command), name)
    assert command is not None and command.callback is not None
    return command.callback  # type: ignore[no-any-return]


def test_every_command_calls_the_api() -> None:
    """A command parses its arguments, calls the API and prints: it imports nothing of
    the core (the store, the log, the trust rules, the cohort service) itself."""
    paths = list(command_paths())
    leaves = [p for p in paths if not any(q[: len(p)] == p != q for q in paths)]
    found = {" ".join(p): _reaches_past_the_api(_callback(p)) for p in leaves}
    assert {name: mods for name, mods in found.items() if mods} == FASTER_PATH


def test_the_thin_layer_check_sees_a_command_that_reaches_past() -> None:
    def command() -> None:
        from ledger.api import open_ledger
        from ledger.store.backends import open_store

        del open_ledger, open_store

    assert _reaches_past_the_api(command) == {"ledger.store.backends"}


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
