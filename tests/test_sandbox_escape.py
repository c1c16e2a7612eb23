"""Hostile behavioral probes: every escape is tried inside the bubblewrap sandbox.

Each hostile probe exits 0 only when its escape WORKED and 3 when it was contained, so a
probe that merely crashes is caught by the unconfined control run: the same probes run
with ``unsandboxed=True`` must succeed at the harmless escapes (key read, outside write,
loopback, host processes, a surviving daemon), which proves each check can fail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_run_verifier_cli import ADAPTER, ADAPTER_VERSIONS, VERIFIER_ID
from typer.testing import CliRunner

from ledger.cli import app
from verifiers.behavioral import load_probe_plan, run_probes
from verifiers.calibration import FIXTURE_DIR
from verifiers.errors import SandboxUnavailable
from verifiers.sandbox import CGROUP_ROOT, Limits, cgroup_available, find_sandbox

SOURCE = FIXTURE_DIR / "source"
PATCH = (FIXTURE_DIR / "candidates" / "repair" / "candidate.patch").read_bytes()

try:
    find_sandbox()
    SANDBOX_PROBLEM = ""
except SandboxUnavailable as exc:  # pragma: no cover - depends on the machine
    SANDBOX_PROBLEM = str(exc)
needs_sandbox = pytest.mark.skipif(bool(SANDBOX_PROBLEM), reason=SANDBOX_PROBLEM)

ESCAPED, CONTAINED = 0, 3


def script(body: str) -> str:
    """A probe body wrapped so any OSError means 'contained' (exit 3)."""
    indented = "\n".join("    " + line for line in body.strip().splitlines())
    return f"import os, sys, socket, time\ntry:\n{indented}\nexcept OSError:\n    sys.exit(3)\n"


def probe(pid: str, body: str, *args: str) -> dict[str, Any]:
    return {"id": pid, "argv": ["{python}", "-I", "-c", script(body), *args], "expect": "reject"}


MARKER = "provledger-daemon-marker-"


def daemons(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in cmdline:
                found.append(int(entry))
    return found


def hostile_plan(secret: Path, outside: Path, port: int, marker: str) -> Any:
    return load_probe_plan(
        {
            "id": "test/hostile",
            "timeout_seconds": 20,
            "probes": [
                probe("read-key", "open(sys.argv[1]).read(); sys.exit(0)", str(secret)),
                probe(
                    "write-outside",
                    "open(sys.argv[1], 'w').write('pwned'); sys.exit(0)",
                    str(outside),
                ),
                probe(
                    "loopback",
                    "socket.create_connection(('127.0.0.1', int(sys.argv[1])), 2); sys.exit(0)",
                    str(port),
                ),
                probe(
                    "host-processes",
                    "sys.exit(0 if str(int(sys.argv[1])) in os.listdir('/proc') else 3)",
                    str(os.getpid()),
                ),
                probe(
                    "detached",
                    "if os.fork() == 0:\n"
                    "    os.setsid()\n"
                    "    if os.fork() == 0:\n"
                    "        os.execv(sys.executable, [sys.executable, '-c',"
                    " 'import time; time.sleep(30)', sys.argv[1]])\n"
                    "    os._exit(0)\n"
                    "os.wait(); sys.exit(0)",
                    marker,
                ),
            ],
        }
    )


@pytest.fixture
def listener() -> Any:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def accepted(sock: socket.socket) -> bool:
    try:
        conn, _ = sock.accept()
    except BlockingIOError:
        return False
    conn.close()
    return True


def wait_gone(marker: str) -> list[int]:
    """Bounded poll: the namespace is torn down asynchronously after bwrap exits."""
    for _ in range(100):
        alive = daemons(marker)
        if not alive:
            return []
        time.sleep(0.05)
    return daemons(marker)


def codes(evidence: dict[str, Any]) -> dict[str, int | None]:
    return {p["id"]: p["exit_code"] for p in evidence["probes"]}


@needs_sandbox
def test_hostile_probes_are_contained(tmp_path: Path, listener: socket.socket) -> None:
    secret = tmp_path / "authority.key"
    secret.write_text("PRIVATE KEY MATERIAL")
    secret.chmod(0o600)
    outside = tmp_path / "written-by-probe"
    marker = MARKER + os.urandom(6).hex()
    evidence = run_probes(
        SOURCE, PATCH, hostile_plan(secret, outside, listener.getsockname()[1], marker)
    )
    assert {p["status"] for p in evidence["probes"]} == {"completed"}, evidence["probes"]
    assert codes(evidence) == {
        "read-key": CONTAINED,
        "write-outside": CONTAINED,
        "loopback": CONTAINED,
        "host-processes": CONTAINED,
        "detached": 0,  # the fork itself works; what matters is that nothing survives
    }
    assert not outside.exists()
    assert not accepted(listener)
    assert wait_gone(marker) == []
    box = evidence["environment"]["sandbox"]
    assert box["confined"] is True and box["tool"] == "bubblewrap"
    assert evidence["environment"]["network_isolated"] is True


def test_the_same_probes_escape_without_the_sandbox(
    tmp_path: Path, listener: socket.socket
) -> None:
    """Control: unconfined, the escapes work, so the contained verdicts above can fail."""
    secret = tmp_path / "authority.key"
    secret.write_text("PRIVATE KEY MATERIAL")
    outside = tmp_path / "written-by-probe"
    marker = MARKER + os.urandom(6).hex()
    plan = hostile_plan(secret, outside, listener.getsockname()[1], marker)
    try:
        evidence = run_probes(SOURCE, PATCH, plan, unsandboxed=True, python=sys.executable)
        assert codes(evidence) == {
            "read-key": ESCAPED,
            "write-outside": ESCAPED,
            "loopback": ESCAPED,
            "host-processes": ESCAPED,
            "detached": 0,
        }
        assert outside.read_text() == "pwned"
        assert accepted(listener)
        assert daemons(marker)  # the daemon outlived the unconfined probe
    finally:
        for pid in daemons(marker):
            os.kill(pid, 9)
    assert evidence["environment"]["sandbox"] == {"confined": False, "reason": "--unsandboxed"}
    assert evidence["environment"]["network_isolated"] is False


@needs_sandbox
def test_resource_exhaustion_is_contained(tmp_path: Path) -> None:
    plan = load_probe_plan(
        {
            "id": "test/exhaust",
            "timeout_seconds": 20,
            "probes": [
                # Fork bomb: escaped when more processes exist than the limit allows.
                probe(
                    "fork-bomb",
                    "n = 0\n"
                    "while n < 1000:\n"
                    "    if os.fork() == 0:\n"
                    "        time.sleep(30); os._exit(0)\n"
                    "    n += 1\n"
                    "sys.exit(0)",
                ),
                # One file past the file-size limit (64 MiB): SIGXFSZ or EFBIG.
                probe(
                    "big-file",
                    "f = open('big', 'wb')\n"
                    "for _ in range(128):\n"
                    "    f.write(bytes(1 << 20)); f.flush()\n"
                    "sys.exit(0)",
                ),
                # Many files under the size limit: the tmpfs fills (ENOSPC) at 256 MiB.
                probe(
                    "disk-filler",
                    "for i in range(16):\n"
                    "    with open(f'fill{i}', 'wb') as f:\n"
                    "        for _ in range(60):\n"
                    "            f.write(bytes(1 << 20))\n"
                    "sys.exit(0)",
                ),
                probe("tmp-filler", "open('/tmp/x', 'wb').write(bytes(100 << 20)); sys.exit(0)"),
                probe(
                    "memory",
                    "try:\n    b = bytearray(4 << 30)\nexcept MemoryError:\n    sys.exit(3)\n"
                    "sys.exit(0)",
                ),
                probe("setuid-root", "os.setuid(0); sys.exit(0)"),
                probe("write-usr", "open('/usr/pwned', 'w'); sys.exit(0)"),
                # bwrap's root and /dev are unbounded tmpfs: they must be read-only.
                *(
                    probe(f"write-{name}", f"open('{path}', 'w'); sys.exit(0)")
                    for name, path in (("root", "/x"), ("dev", "/dev/x"), ("etc", "/etc/x"))
                ),
                probe(
                    "shm-filler",
                    "open('/dev/shm/x', 'wb').write(bytes(100 << 20)); sys.exit(0)",
                ),
            ],
        }
    )
    evidence = run_probes(SOURCE, PATCH, plan)
    results = {p["id"]: p for p in evidence["probes"]}
    for pid, p in results.items():
        assert p["status"] == "completed", (pid, p)
        assert p["exit_code"] != ESCAPED, (pid, p)
    assert not Path("/usr/pwned").exists()
    assert evidence["environment"]["sandbox"]["limits"]["processes"] == 32


@needs_sandbox
def test_timeout_kills_the_whole_sandbox() -> None:
    marker = MARKER + os.urandom(6).hex()
    plan = load_probe_plan(
        {
            "id": "test/hang",
            "timeout_seconds": 1,
            "probes": [
                {
                    "id": "hang",
                    "argv": [
                        "{python}",
                        "-I",
                        "-c",
                        "import os, time, sys\nif os.fork() == 0:\n    os.setsid()\ntime.sleep(60)",
                        marker,
                    ],
                    "expect": "accept",
                }
            ],
        }
    )
    evidence = run_probes(SOURCE, PATCH, plan)
    (hang,) = evidence["probes"]
    assert hang["status"] == "timed_out" and hang["exit_code"] is None
    assert wait_gone(marker) == []


def test_missing_sandbox_refuses_exit_4_and_writes_nothing(
    runner: CliRunner, ledger_path: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PROVLEDGER_BWRAP", str(tmp_path / "no-bwrap"))
    before = ledger_path.read_bytes()
    args = [
        "behavioral",
        "run",
        "--source-tree",
        str(SOURCE),
        "--patch",
        str(FIXTURE_DIR / "candidates" / "repair" / "candidate.patch"),
        "--probes",
        str(FIXTURE_DIR / "probes" / "task-001.probes.json"),
        "--db",
        str(ledger_path),
    ]
    result = runner.invoke(app, args)
    assert result.exit_code == 4, result.output
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("error: no sandbox for behavioral probes")
    assert "apt-get install bubblewrap" in result.stderr and "--unsandboxed" in result.stderr
    assert ledger_path.read_bytes() == before
    # The explicit way past: recorded, and shown, as unconfined.
    result = runner.invoke(app, [*args, "--unsandboxed", "--json"])
    assert result.exit_code == 0, result.output
    assert '"confined": false' in result.stdout


def _run_verifier(runner: CliRunner, db: Path, key: Path) -> str:
    runner.invoke(app, ["key", "generate", str(key)])
    # Admission refuses a run signed by an unregistered key: register it first.
    register = ["identity", "register", "--db", str(db), "--verifier-id", VERIFIER_ID]
    register += ["--adapter", ADAPTER, "--public-key", f"{key}.pub"]
    for version in ADAPTER_VERSIONS:
        register += ["--adapter-version", version]
    assert runner.invoke(app, register).exit_code == 0
    result = runner.invoke(
        app,
        [
            "run-verifier",
            "--work-unit",
            str(FIXTURE_DIR / "work-unit.json"),
            "--plan",
            str(FIXTURE_DIR / "plans" / "evaluator-plan-v0.4.json"),
            "--manifest",
            str(FIXTURE_DIR / "manifests" / "repair.result-manifest.json"),
            "--candidate-root",
            str(FIXTURE_DIR / "candidates" / "repair"),
            "--key",
            str(key),
            "--db",
            str(db),
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    digest: str = json.loads(result.stdout)["result_digest"]
    return digest


def _provenance_behavioral(runner: CliRunner, db: Path, result: str) -> dict[str, Any]:
    out = runner.invoke(app, ["provenance", result, "--db", str(db), "--json"])
    checks = {c["name"]: c for c in json.loads(out.stdout)["checks"]}
    check: dict[str, Any] = checks["behavioral evidence"]
    return check


@needs_sandbox
def test_provenance_shows_confined_and_unconfined_evidence(
    runner: CliRunner, ledger_path: Path, tmp_path: Path
) -> None:
    result = _run_verifier(runner, ledger_path, tmp_path / "v.key")
    out = runner.invoke(app, ["provenance", result, "--db", str(ledger_path), "--json"])
    names = [c["name"] for c in json.loads(out.stdout)["checks"]]
    assert "behavioral evidence" not in names
    base = [
        "behavioral",
        "run",
        "--source-tree",
        str(SOURCE),
        "--patch",
        str(FIXTURE_DIR / "candidates" / "repair" / "candidate.patch"),
        "--probes",
        str(FIXTURE_DIR / "probes" / "task-001.probes.json"),
        "--verification-result",
        result,
        "--db",
        str(ledger_path),
    ]
    sandboxed = runner.invoke(app, base)
    assert sandboxed.exit_code == 0, sandboxed.output
    assert "sandbox         bubblewrap " in sandboxed.stdout
    check = _provenance_behavioral(runner, ledger_path, result)
    assert check["reason"] == "1 confined"
    (child,) = check["children"]
    assert child["name"] == "confined" and child["reason"].startswith("bubblewrap ")
    assert child["reason"].endswith(f", evidence {child['subject']}")
    unconfined = runner.invoke(app, [*base, "--unsandboxed"])
    assert unconfined.exit_code == 0, unconfined.output
    assert "sandbox         NONE: probes ran unconfined (--unsandboxed)" in unconfined.stdout
    check = _provenance_behavioral(runner, ledger_path, result)
    assert check["reason"] == "UNCONFINED: 1 of 2 ran without a sandbox"
    assert sorted(c["name"] for c in check["children"]) == ["UNCONFINED", "confined"]
    (bad,) = [c for c in check["children"] if c["name"] == "UNCONFINED"]
    assert bad["reason"].startswith("probes ran unconfined (--unsandboxed), evidence sha256:")
    text = runner.invoke(app, ["provenance", result, "--db", str(ledger_path)]).stdout
    assert "UNCONFINED" in text


@needs_sandbox
def test_installed_cli_runs_probes_in_the_sandbox(ledger_path: Path) -> None:
    exe = Path(sys.executable).parent / "provledger"
    proc = subprocess.run(
        [
            str(exe),
            "behavioral",
            "run",
            "--source-tree",
            str(SOURCE),
            "--patch",
            str(FIXTURE_DIR / "candidates" / "repair" / "candidate.patch"),
            "--probes",
            str(FIXTURE_DIR / "probes" / "task-001.probes.json"),
            "--db",
            str(ledger_path),
            "--json",
        ],
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["sandbox"]["confined"] is True
    assert info["summary"]["all_expectations_met"] is True


@needs_sandbox
def test_memory_across_processes_is_bounded_by_the_probe_cgroup() -> None:
    """Rlimits bound each process; only the probe's cgroup bounds all of them together."""
    limits = Limits.for_timeout(20)
    if not cgroup_available(limits):
        pytest.skip("no writable cgroup (v1 memory + pids) on this machine")
    bomb = probe(
        "memory-across-processes",
        "kids = []\n"
        "for _ in range(8):\n"
        "    pid = os.fork()\n"
        "    if pid == 0:\n"
        "        try:\n"
        "            b = bytearray(400 << 20)\n"
        "            for j in range(0, len(b), 4096):\n"
        "                b[j] = 1\n"
        "            time.sleep(2); os._exit(0)\n"
        "        except MemoryError:\n"
        "            os._exit(3)\n"
        "    kids.append(pid)\n"
        "codes = [os.waitstatus_to_exitcode(os.waitpid(k, 0)[1]) for k in kids]\n"
        "sys.exit(0 if all(c == 0 for c in codes) else 3)",
    )
    plan = load_probe_plan({"id": "test/memory", "timeout_seconds": 20, "probes": [bomb]})
    evidence = run_probes(SOURCE, PATCH, plan)
    assert codes(evidence) == {"memory-across-processes": CONTAINED}
    cgroup = evidence["environment"]["sandbox"]["cgroup"]
    assert cgroup == {"version": 1, "memory_bytes": 1 << 30, "pids": limits.processes + 8}
    for controller in ("memory", "pids"):  # every probe cgroup was removed
        assert not list((CGROUP_ROOT / controller).glob("provledger-probe-*"))
