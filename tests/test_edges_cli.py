"""Hostile paths at the edges: one ``error:`` line and the documented exit code.

FIFOs, devices and directories given as the ledger or as key files, binary key files,
file names that are not UTF-8, and outputs that cannot be written. Never a hang (each
subprocess has a timeout), never a traceback. Through CliRunner and through the
installed ``provledger`` in a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.cli import app

ROOT = Path(__file__).resolve().parents[1]
EXE = ROOT / ".venv" / "bin" / "provledger"
TIMEOUT = 60  # seconds; a hang on a FIFO would otherwise block forever
DEV_FULL = Path("/dev/full")


def one_error_line(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def run(*args: str | bytes, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    if not EXE.exists():
        pytest.skip(f"console script not installed at {EXE}")
    env = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1", "PYTHONIOENCODING": "utf-8:strict"}
    env.pop("PROVLEDGER_DEBUG", None)
    return subprocess.run(
        [os.fsencode(EXE), *(os.fsencode(a) for a in args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.fixture
def odd(tmp_path: Path, ledger_path: Path) -> dict[str, Path]:
    """A FIFO, a directory, a binary file and a device, next to a real ledger."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    directory = tmp_path / "dir"
    directory.mkdir()
    binary = tmp_path / "binary.key"
    binary.write_bytes(bytes(range(256)))
    return {"fifo": fifo, "dir": directory, "binary": binary, "device": Path("/dev/null")}


@pytest.mark.parametrize("what", ["fifo", "dir", "device"])
@pytest.mark.parametrize(
    "command",
    [["stats"], ["log"], ["verify"], ["show", "sha256:" + "0" * 64], ["checkpoint"], ["init"]],
)
def test_odd_files_as_the_ledger(
    what: str, command: list[str], odd: dict[str, Path], tmp_path: Path
) -> None:
    proc = run(*command, "--db", str(odd[what]), cwd=tmp_path)
    assert proc.returncode == 3, proc
    line = one_error_line(proc.stderr.decode())
    assert "expected a regular file" in line


@pytest.mark.parametrize("what", ["fifo", "dir", "device", "binary"])
def test_odd_files_as_keys(
    what: str, odd: dict[str, Path], ledger_path: Path, runner: CliRunner
) -> None:
    path = str(odd[what])
    for args in (
        ["verify", "--db", str(ledger_path), "--log-key", path],
        ["verify", "--db", str(ledger_path), "--authority-key", path],
        ["checkpoint", "--db", str(ledger_path), "--log-key", path],
        ["bundle", "verify", str(ledger_path), "--log-key", path],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 3, (args, result.output)
        one_error_line(result.stderr)


def test_binary_log_key_through_the_installed_command(
    odd: dict[str, Path], ledger_path: Path, tmp_path: Path
) -> None:
    proc = run("verify", "--db", str(ledger_path), "--log-key", str(odd["binary"]), cwd=tmp_path)
    assert proc.returncode == 3
    assert "not UTF-8 text" in one_error_line(proc.stderr.decode())


@pytest.mark.skipif(sys.platform != "linux", reason="needs a file system taking any bytes")
def test_non_utf8_ledger_path(tmp_path: Path) -> None:
    name = b"ledger-\xff\xfe.db"
    init = run("init", "--db", name, cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert b"\\xff\\xfe" in init.stdout  # shown escaped, never as raw invalid UTF-8
    blob = tmp_path / "blob"
    blob.write_bytes(b"hello")
    appended = run("append", "--kind", "blob", str(blob), "--db", name, cwd=tmp_path)
    assert appended.returncode == 0, appended.stderr
    digest = appended.stdout.split()[0].decode()
    for command in (["stats"], ["stats", "--json"], ["log"], ["verify"], ["show", digest]):
        proc = run(*command, "--db", name, cwd=tmp_path)
        assert proc.returncode == 0, (command, proc.stderr)
        assert proc.stderr == b""
    missing = run("stats", "--db", b"absent-\xff.db", cwd=tmp_path)
    assert missing.returncode == 3
    assert "absent-\\xff.db" in one_error_line(missing.stderr.decode())


@pytest.mark.skipif(not DEV_FULL.exists(), reason="no /dev/full on this system")
def test_unwritable_outputs(ledger_path: Path, tmp_path: Path, runner: CliRunner) -> None:
    blob = tmp_path / "blob"
    blob.write_bytes(b"bytes")
    result = runner.invoke(app, ["append", "--kind", "blob", str(blob), "--db", str(ledger_path)])
    digest = result.stdout.split()[0]
    assert runner.invoke(app, ["checkpoint", "--db", str(ledger_path)]).exit_code == 0
    export = runner.invoke(
        app, ["bundle", "export", digest, "-o", str(DEV_FULL), "--db", str(ledger_path)]
    )
    assert export.exit_code == 3
    assert "cannot be written" in one_error_line(export.stderr)
    to_dir = runner.invoke(
        app, ["bundle", "export", digest, "-o", str(tmp_path), "--db", str(ledger_path)]
    )
    assert to_dir.exit_code == 3
    assert "got a directory" in one_error_line(to_dir.stderr)
    # Standard output on a full device: one line, exit 3.
    with DEV_FULL.open("wb") as full:
        if not EXE.exists():
            pytest.skip(f"console script not installed at {EXE}")
        proc = subprocess.run(
            [str(EXE), "show", digest, "--db", str(ledger_path)],
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=TIMEOUT,
            check=False,
        )
    assert proc.returncode == 3
    assert "No space left on device" in one_error_line(proc.stderr.decode())


def test_refused_init_writes_nothing(
    odd: dict[str, Path], tmp_path: Path, runner: CliRunner
) -> None:
    for extra in (
        ["--authority-key", str(odd["dir"])],
        ["--log-key", str(odd["fifo"])],
        ["--log-key", str(tmp_path / "same.key"), "--authority-key", str(tmp_path / "same.key")],
    ):
        before = sorted(p.name for p in tmp_path.iterdir())
        result = runner.invoke(app, ["init", "--db", str(tmp_path / "new.db"), *extra])
        assert result.exit_code == 3, (extra, result.output)
        one_error_line(result.stderr)
        assert sorted(p.name for p in tmp_path.iterdir()) == before
