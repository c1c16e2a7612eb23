"""CLI conventions: --version, global --db, help text, examples, log kinds, prefixes,
escaping, and the typical first mistakes (one actionable line, the right exit code)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from ledger.cli import app
from ledger.cli.examples import EXAMPLES

EXE = Path(sys.executable).with_name("provledger")
WORK_UNIT = (
    Path(__file__).resolve().parents[1]
    / "verifiers"
    / "fixtures"
    / "calibration"
    / "work-unit.json"
)


def _commands() -> list[tuple[str, Any]]:
    """Every leaf command as (path below provledger, click command)."""
    from typer import Context

    root = typer.main.get_command(app)
    out: list[tuple[str, Any]] = []

    def walk(group: Any, prefix: list[str]) -> None:
        ctx = Context(group, info_name=" ".join(["provledger", *prefix]))
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            if hasattr(cmd, "list_commands"):
                walk(cmd, [*prefix, name])
            else:
                out.append((" ".join([*prefix, name]), cmd))

    walk(root, [])
    return out


def test_every_command_has_an_example_and_no_python_types(runner: CliRunner) -> None:
    commands = _commands()
    assert len(commands) > 30
    missing = [path for path, _ in commands if path not in EXAMPLES]
    assert missing == []
    for path, _ in commands:
        result = runner.invoke(app, [*path.split(), "--help"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, path
        assert f"Example: {EXAMPLES[path]}" in result.stdout, path
        for python_type in ("<bool>", "<str>", "<int>", "<path>", "<list[", "<float>"):
            assert python_type not in result.stdout, (path, python_type)


def test_version(runner: CliRunner) -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("provledger ")


def test_global_db_before_or_after_subcommand(tmp_path: Path, runner: CliRunner) -> None:
    db = tmp_path / "l.db"
    assert runner.invoke(app, ["--db", str(db), "init"]).exit_code == 0
    assert db.exists()
    appended = runner.invoke(app, ["--db", str(db), "append", str(WORK_UNIT), "--json"])
    assert appended.exit_code == 0, appended.output
    before = runner.invoke(app, ["--db", str(db), "log", "--json"])
    after = runner.invoke(app, ["log", "--db", str(db), "--json"])
    assert before.exit_code == after.exit_code == 0
    assert json.loads(before.stdout) == json.loads(after.stdout)
    assert os.environ.get("PROVLEDGER_DB") is None  # not leaked past the invocation
    env = runner.invoke(app, ["log", "--json"], env={"PROVLEDGER_DB": str(db)})
    assert json.loads(env.stdout) == json.loads(after.stdout)


def test_log_shows_ids_and_refuses_unknown_kinds(ledger_path: Path, runner: CliRunner) -> None:
    runner.invoke(app, ["append", str(WORK_UNIT), "--db", str(ledger_path)])
    rows = json.loads(runner.invoke(app, ["log", "--db", str(ledger_path), "--json"]).stdout)
    assert set(rows[0]) == {"seq", "digest", "kind", "appended_at"}  # --json unchanged
    human = runner.invoke(app, ["log", "--db", str(ledger_path)])
    assert rows[0]["digest"] in human.stdout  # full digest, never cut on a pipe
    assert json.loads(WORK_UNIT.read_text())["id"] in human.stdout
    bad = runner.invoke(app, ["log", "--kind", "cohort", "--db", str(ledger_path)])
    assert bad.exit_code == 3
    assert "unknown kind, got 'cohort'" in bad.stderr and "benchmark-cohort" in bad.stderr


def test_digest_prefixes(ledger_path: Path, runner: CliRunner) -> None:
    out = runner.invoke(app, ["append", str(WORK_UNIT), "--db", str(ledger_path), "--json"])
    digest = json.loads(out.stdout)[0]["digest"]
    shown = runner.invoke(app, ["show", digest[:15], "--db", str(ledger_path), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["digest"] == digest
    bare = runner.invoke(app, ["show", digest[7:19], "--db", str(ledger_path), "--json"])
    assert json.loads(bare.stdout)["digest"] == digest
    # A second object, then a prefix both share: refused, exit 3, both candidates named.
    runner.invoke(app, ["append", "-", "--kind", "blob", "--db", str(ledger_path)], input="x")
    ambiguous = runner.invoke(app, ["show", "sha256:", "--db", str(ledger_path)])
    assert ambiguous.exit_code == 3
    assert "malformed digest" in ambiguous.stderr
    for length in range(4, 64):
        prefix = digest[: 7 + length]
        res = runner.invoke(app, ["show", prefix, "--db", str(ledger_path)])
        assert res.exit_code in (0, 3)
        if res.exit_code == 0:
            break
    assert runner.invoke(app, ["show", "sha256:0000", "--db", str(ledger_path)]).exit_code == 3


def test_user_text_is_never_markup(ledger_path: Path, runner: CliRunner) -> None:
    for args in (["provenance", "[/x]"], ["show", "[/x]"], ["cohort", "audit", "[/x]"]):
        result = runner.invoke(app, [*args, "--db", str(ledger_path)])
        assert result.exit_code == 3, (args, result.output)
        assert "[/x]" in result.stderr
        assert result.exception is None or isinstance(result.exception, SystemExit)


def test_first_mistakes_one_line_right_code(tmp_path: Path, runner: CliRunner) -> None:
    db = tmp_path / "none.db"
    # import before init: says to run init, not that a key file is missing.
    result = runner.invoke(app, ["import", "idkmesh", str(tmp_path), "--db", str(db)])
    assert result.exit_code == 3
    assert "provledger init" in result.stderr and len(result.stderr.splitlines()) == 1
    # a public key where a private key belongs.
    good = tmp_path / "l.db"
    runner.invoke(app, ["init", "--db", str(good)])
    key = tmp_path / "verifier.key"
    assert runner.invoke(app, ["key", "generate", str(key)]).exit_code == 0
    pub = next(p for p in tmp_path.iterdir() if p.name.startswith("verifier.key") and p != key)
    pub.chmod(0o644)
    signed = runner.invoke(
        app, ["sign", "sha256:" + "0" * 64, "--key", str(pub), "--db", str(good)]
    )
    assert signed.exit_code == 3
    assert "public key" in signed.stderr and "private key" in signed.stderr
    # a folder that is no IDKMesh folder.
    (tmp_path / "empty").mkdir()
    folder = runner.invoke(app, ["import", "idkmesh", str(tmp_path / "empty"), "--db", str(good)])
    assert folder.exit_code == 3 and "cohort folder holding cohort.json" in folder.stderr


@pytest.mark.skipif(not EXE.exists(), reason="provledger is not installed in this venv")
def test_installed_command_pipes_whole_values(tmp_path: Path) -> None:
    db = tmp_path / "p.db"
    run = {"capture_output": True, "text": True, "check": False}
    assert subprocess.run([str(EXE), "--db", str(db), "init"], **run).returncode == 0  # type: ignore[call-overload]
    subprocess.run([str(EXE), "--db", str(db), "append", str(WORK_UNIT)], **run)  # type: ignore[call-overload]
    log = subprocess.run([str(EXE), "log", "--db", str(db)], **run)  # type: ignore[call-overload]
    assert log.returncode == 0
    row = json.loads(
        subprocess.run([str(EXE), "log", "--db", str(db), "--json"], **run).stdout  # type: ignore[call-overload]
    )[0]
    assert row["digest"] in log.stdout and "…" not in log.stdout
    crash = subprocess.run([str(EXE), "provenance", "[/x]", "--db", str(db)], **run)  # type: ignore[call-overload]
    assert crash.returncode == 3 and "Traceback" not in crash.stderr
    version = subprocess.run([str(EXE), "--version"], **run)  # type: ignore[call-overload]
    assert version.stdout.startswith("provledger ")
