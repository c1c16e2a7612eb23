"""Every file the CLI reads is bounded: a 3 GB (sparse) file as each input is refused
before it is read: one ``error:`` line, exit 3, nothing written, small peak memory.

Each command runs as a subprocess of the installed ``provledger`` under a tiny wrapper
that reports its child's peak RSS (``getrusage(RUSAGE_CHILDREN)``), so the bound is
measured per command, not across the test session.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from test_run_verifier_cli import ADAPTER, ADAPTER_VERSIONS, VERIFIER_ID

from ledger.bounded import DOCUMENT_LIMIT, read_bounded
from ledger.errors import DocumentTooLargeError, InputError, NotFound
from verifiers.calibration import FIXTURE_DIR

BIG = 3 << 30
# Python with the CLI imported is well under this; reading 3 GB would be far over it.
PEAK_RSS_BOUND = 400 << 20
EXE = Path(sys.executable).parent / "provledger"
WRAPPER = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
    "sys.stdout.buffer.write(p.stdout); sys.stderr.buffer.write(p.stderr)\n"
    "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
    "open(sys.argv[0] + '.rss', 'w').write(str(peak))\n"
    "sys.exit(p.returncode)\n"
)


def sparse(path: Path, size: int = BIG) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)
    return path


def state(db: Path) -> tuple[int, int]:
    with sqlite3.connect(db) as conn:
        entries = conn.execute("SELECT count(*) FROM entries").fetchone()[0]
        objects = conn.execute("SELECT count(*) FROM objects").fetchone()[0]
    return entries, objects


def cli(tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[bytes], int]:
    wrapper = tmp / "wrapper.py"
    wrapper.write_text(WRAPPER)
    proc = subprocess.run(
        [sys.executable, "-I", str(wrapper), str(EXE), *args],
        capture_output=True,
        check=False,
        env={**os.environ, "PROVLEDGER_NO_PROGRESS": "1"},
    )
    return proc, int((tmp / "wrapper.py.rss").read_text())


@pytest.fixture
def setup(tmp_path: Path, ledger_path: Path) -> dict[str, Path]:
    key = tmp_path / "v.key"
    subprocess.run([str(EXE), "key", "generate", str(key)], check=True, capture_output=True)
    # Admission refuses a run signed by an unregistered key: register it first.
    register = [str(EXE), "identity", "register", "--db", str(ledger_path)]
    register += ["--verifier-id", VERIFIER_ID, "--adapter", ADAPTER, "--public-key", f"{key}.pub"]
    for version in ADAPTER_VERSIONS:
        register += ["--adapter-version", version]
    subprocess.run(register, check=True, capture_output=True)
    pub = ledger_path.parent / (ledger_path.name + ".authority.key.pub")
    return {"db": ledger_path, "key": key, "big": sparse(tmp_path / "big" / "big.json"), "pub": pub}


def run_verifier_args(s: dict[str, Path], **override: Path) -> list[str]:
    files = {
        "--work-unit": FIXTURE_DIR / "work-unit.json",
        "--plan": FIXTURE_DIR / "plans" / "evaluator-plan-v0.4.json",
        "--manifest": FIXTURE_DIR / "manifests" / "repair.result-manifest.json",
        "--candidate-root": FIXTURE_DIR / "candidates" / "repair",
        "--key": s["key"],
    }
    files.update({f"--{k.replace('_', '-')}": v for k, v in override.items()})
    return ["run-verifier", *[x for k, v in files.items() for x in (k, str(v))]]


def behavioral_args(**override: Path) -> list[str]:
    files = {
        "--source-tree": FIXTURE_DIR / "source",
        "--patch": FIXTURE_DIR / "candidates" / "repair" / "candidate.patch",
        "--probes": FIXTURE_DIR / "probes" / "task-001.probes.json",
    }
    files.update({f"--{k}": v for k, v in override.items()})
    return [
        "behavioral",
        "run",
        "--unsandboxed",
        *[x for k, v in files.items() for x in (k, str(v))],
    ]


CASES = {
    "append": lambda s: ["append", str(s["big"])],
    "work-unit": lambda s: run_verifier_args(s, work_unit=s["big"]),
    "plan": lambda s: run_verifier_args(s, plan=s["big"]),
    "manifest": lambda s: run_verifier_args(s, manifest=s["big"]),
    "verifier-key": lambda s: run_verifier_args(s, key=s["big"]),
    "patch": lambda s: behavioral_args(patch=s["big"]),
    "probe-plan": lambda s: behavioral_args(probes=s["big"]),
    "checkpoint": lambda s: ["verify", "--from-checkpoint", str(s["big"])],
    "log-key": lambda s: ["verify", "--log-key", str(s["big"])],
    "authority-key": lambda s: ["verify", "--authority-key", str(s["big"])],
    "bundle": lambda s: ["bundle", "verify", str(s["big"]), "--log-key", "x+00000000+AAAA"],
    "envelope": lambda s: ["attestation", "verify-envelope", str(s["big"])],
    "cohort": lambda s: ["cohort", "digest", str(s["big"])],
    "import": lambda s: ["import", "idkmesh", str(s["big"].parent)],
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_giant_input_is_one_error_line_exit_3(
    case: str, setup: dict[str, Path], tmp_path: Path
) -> None:
    if case == "import":  # laid out as an IDKMesh tree: the big file is a work unit
        folder = tmp_path / "tree"
        sparse(folder / "examples" / "work-units" / "big.json")
        setup = {**setup, "big": folder / "examples" / "work-units" / "big.json"}
    if case == "verifier-key":
        setup["big"].chmod(0o600)  # a safe mode: the size is what is refused
    before = state(setup["db"])
    args = CASES[case](setup)
    if case == "import":
        args = ["import", "idkmesh", str(tmp_path / "tree")]
    if case not in ("bundle", "cohort"):
        args += ["--db", str(setup["db"])]
    proc, peak = cli(tmp_path, *args)
    stderr = proc.stderr.decode()
    assert proc.returncode == 3, (case, proc.returncode, stderr)
    assert stderr.startswith("error: ") and stderr.count("\n") == 1, stderr
    assert "too large" in stderr and "Traceback" not in stderr, stderr
    assert state(setup["db"]) == before
    assert peak < PEAK_RSS_BOUND, (case, peak)


def test_giant_candidate_and_log_stop_at_the_plan_limits(
    setup: dict[str, Path], tmp_path: Path
) -> None:
    """Worker files are judged, not refused: the run fails its size/log checks (exit 1)
    without reading past the plan's limits."""
    root = tmp_path / "candidate"
    shutil.copytree(FIXTURE_DIR / "candidates" / "repair", root)
    sparse(root / "candidate.patch")
    sparse(root / "stdout.txt")
    args = run_verifier_args(setup, candidate_root=root)
    proc, peak = cli(tmp_path, *args, "--json", "--db", str(setup["db"]))
    assert proc.returncode == 1, proc.stderr
    info = json.loads(proc.stdout)
    assert info["status"] == "failed" and info["not_recorded"] == []
    with sqlite3.connect(setup["db"]) as conn:
        largest = conn.execute("SELECT max(length(data)) FROM objects").fetchone()[0]
    assert largest < 1 << 20  # neither giant file was stored
    assert peak < PEAK_RSS_BOUND, peak


# --- the helper itself ---------------------------------------------------------------


def test_read_bounded_checks_the_size_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = sparse(tmp_path / "big", DOCUMENT_LIMIT + 1)
    reads: list[int] = []
    real_read = os.read

    def counting_read(fd: int, n: int) -> bytes:
        reads.append(n)
        return real_read(fd, n)

    monkeypatch.setattr(os, "read", counting_read)
    with pytest.raises(DocumentTooLargeError, match=r"^thing too large, got 16777217 bytes"):
        read_bounded(path, DOCUMENT_LIMIT, "thing")
    assert reads == []


def test_read_bounded_limits_and_refusals(tmp_path: Path) -> None:
    exact = tmp_path / "exact"
    exact.write_bytes(b"x" * 10)
    assert read_bounded(exact, 10, "thing") == b"x" * 10
    with pytest.raises(DocumentTooLargeError):
        read_bounded(exact, 9, "thing")
    with pytest.raises(NotFound):
        read_bounded(tmp_path / "absent", 10, "thing")
    with pytest.raises(InputError, match="got a directory"):
        read_bounded(tmp_path, 10, "thing")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="got a special file"):
        read_bounded(fifo, 10, "thing")  # refused without blocking
