"""The composition root: every command is in one static table and loads only when it runs."""

from __future__ import annotations

import inspect
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
import typer.main
from typer.testing import CliRunner

from ledger.cli import COMMANDS, app
from ledger.cli.lazy import Lazy, LazySubgroup

ROOT = Path(__file__).resolve().parents[1]


def _sources(package: str) -> list[Path]:
    """The package's Python modules (not the data under ``fixtures/``)."""
    return [p for p in sorted((ROOT / package).rglob("*.py")) if "fixtures" not in p.parts]


EDGE = ("cohorts", "verifiers", "jsonschema", "cryptography")


def _entries(
    table: Mapping[str, Lazy | LazySubgroup], prefix: str = ""
) -> Iterator[tuple[str, Lazy]]:
    for name, entry in table.items():
        if isinstance(entry, LazySubgroup):
            yield from _entries(entry.commands, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", entry


def _first_paragraph(text: str | None) -> str:
    return " ".join(inspect.cleandoc(text or "").split("\n\n")[0].split())


@pytest.mark.parametrize(("name", "entry"), list(_entries(COMMANDS)))
def test_table_help_is_the_commands_own_help(name: str, entry: Lazy) -> None:
    command = entry.load(name.split()[-1])
    assert command.name == name.split()[-1]
    assert _first_paragraph(command.help) == entry.help


def test_every_command_is_listed_in_table_order() -> None:
    group = typer.main.get_command(app)
    assert list(group.list_commands(None)) == list(COMMANDS)


def test_help_imports_no_edge_package() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['provledger', '--help']\n"
        "from ledger.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {EDGE!r}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_running_a_command_loads_its_module_only_then() -> None:
    code = (
        "import sys\n"
        "sys.argv = ['provledger', 'cohort', '--help']\n"
        "from ledger.cli import main\n"
        "assert 'cohorts.cli' not in sys.modules\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code == 0, exc.code\n"
        "print('cohorts.cli' in sys.modules, 'verifiers.cli' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip().splitlines()[-1] == "True False"


def test_installed_entry_point_lists_commands_and_runs_a_nested_lazy_one() -> None:
    exe = Path(sys.executable).parent / "provledger"
    out = subprocess.run([exe, "--help"], capture_output=True, text=True, check=True)
    for name in COMMANDS:
        assert f" {name} " in out.stdout
    out = subprocess.run([exe, "import", "--help"], capture_output=True, text=True, check=True)
    assert "idkmesh" in out.stdout and "jsonl" in out.stdout


def test_unknown_command_suggests_the_close_name() -> None:
    result = CliRunner().invoke(app, ["verfy"])
    assert result.exit_code == 2
    assert "Did you mean 'verify'?" in result.output


def test_no_dynamic_import_in_the_packages() -> None:
    for package in ("ledger", "verifiers", "cohorts"):
        for path in _sources(package):
            assert "__import__(" not in path.read_text("utf-8"), path
