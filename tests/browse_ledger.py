"""Shared test helper: a ledger built from the real corpus plus the demo, indexed in stages.

Stages (each followed by ``provledger index`` on the same browse file, so the browse
database is built incrementally):
1. ``import idkmesh`` of the reference corpus (burns phase-b2-first-five), checkpoint;
2. the demo of scripts/demo.sh: a registered verifier key, the calibration WorkUnit and
   plans, run-verifier on the repair and the decoy, checkpoint;
3. the toy lineage of examples/cohorts/toy: freeze v1, then index, so the burn in stage 4
   updates a cohort projected in an earlier run;
4. burn toy v1, freeze v2, calibration records, bind v2, then a repair of a toy task
   judged and listed by v2 (``cohort record-outcome``: pre-registered); the demo
   verifier key is retired (after it signed); checkpoint.
"""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ledger.cli import app

ROOT = Path(__file__).resolve().parents[1]
CAL = ROOT / "verifiers" / "fixtures" / "calibration"
TOY = ROOT / "examples" / "cohorts" / "toy"
BURNED = "benchmark/phase-b2-first-five"
TOY_V1 = "example/toy-v1"
TOY_V2 = "example/toy-v2"
#: The toy task whose repair (examples/cohorts/toy/runs) toy-v2 lists, pre-registered.
TOY_TASK = "example/toy/002-division-test"


@dataclass(frozen=True)
class BuiltLedger:
    db: Path | str  # a file, or a postgresql:// URL
    browse: Path
    reports: tuple[dict[str, Any], ...]
    repair_digest: str
    decoy_digest: str
    verifier_key_id: str


def run(runner: CliRunner, args: list[str], code: int = 0) -> Any:
    result = runner.invoke(app, args)
    assert result.exit_code == code, (args, result.output)
    return result


def _index(runner: CliRunner, db: Path | str, browse: Path) -> dict[str, Any]:
    out = run(runner, ["index", "--db", str(db), "--out", str(browse), "--json"]).stdout
    report: dict[str, Any] = json.loads(out)
    return report


def _run_verifier(runner: CliRunner, db: str, key: Path, candidate: str, code: int) -> str:
    return _judge(
        runner, db, key, CAL / "work-unit.json", CAL / "plans" / "evaluator-plan-v0.4.json",
        CAL / "manifests" / f"{candidate}.result-manifest.json", CAL / "candidates" / candidate,
        code,
    )  # fmt: skip


def _judge(
    runner: CliRunner,
    db: str,
    key: Path,
    work_unit: Path,
    plan: Path,
    manifest: Path,
    root: Path,
    code: int,
) -> str:
    """The digest of the VerificationResult ``run-verifier`` stores for these inputs."""
    out = run(
        runner,
        [
            "run-verifier", "--db", db, "--work-unit", str(work_unit), "--plan", str(plan),
            "--manifest", str(manifest), "--candidate-root", str(root),
            "--key", str(key), "--json",
        ],
        code,
    ).stdout  # fmt: skip
    digest: str = json.loads(out)["result_digest"]
    return digest


def build(tmp: Path, corpus: Path, url: str | None = None) -> BuiltLedger:
    """The ledger in ``tmp/ledger.db``, or in the PostgreSQL database ``url`` (its key
    files then go to ``tmp``, the working directory while it is built)."""
    if url is None:
        return _build(tmp, corpus, tmp / "ledger.db")
    with contextlib.chdir(tmp):
        return _build(tmp, corpus, url)


def _build(tmp: Path, corpus: Path, db: Path | str) -> BuiltLedger:
    runner = CliRunner()
    browse = tmp / "ledger.browse.db"
    d = str(db)
    run(runner, ["init", "--db", d])
    reports = []
    # 1. the corpus
    run(runner, ["import", "idkmesh", str(corpus), "--db", d])
    run(runner, ["checkpoint", "--db", d])
    reports.append(_index(runner, db, browse))
    # 2. the demo
    key = tmp / "verifier.key"
    run(runner, ["key", "generate", str(key)])
    reg = run(
        runner,
        [
            "identity", "register", "--db", d, "--verifier-id", "idkmesh-local-verifier",
            "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.3.0",
            "--public-key", f"{key}.pub", "--json",
        ],
    ).stdout  # fmt: skip
    key_id = json.loads(reg)["key_id"]
    plans = sorted(str(p) for p in (CAL / "plans").glob("*.json"))
    run(runner, ["append", "--db", d, str(CAL / "work-unit.json"), *plans])
    repair = _run_verifier(runner, d, key, "repair", 0)
    decoy = _run_verifier(runner, d, key, "decoy", 1)
    run(runner, ["checkpoint", "--db", d])
    reports.append(_index(runner, db, browse))
    # 3. toy v1 frozen
    files = sorted(str(p) for p in (TOY / "work-units").glob("*.json"))
    files += sorted(str(p) for p in (TOY / "evaluators").glob("*.json"))
    run(runner, ["append", "--db", d, *files])
    v1 = json.loads((TOY / "cohort-v1.json").read_text())
    v1["stage"] = "frozen"
    v1_path = tmp / "toy-v1.json"
    v1_path.write_text(json.dumps(v1))
    run(runner, ["cohort", "freeze", str(v1_path), "--db", d])
    reports.append(_index(runner, db, browse))
    # 4. burn, bind, revoke
    task = v1["tasks"][0]["id"]
    run(
        runner,
        ["cohort", "burn", TOY_V1, "--db", d, "--reason", "toy outcome seen early",
         "--observed-task", task],
    )  # fmt: skip
    v2 = str(TOY / "cohort-v2.json")
    run(runner, ["cohort", "freeze", v2, "--db", d])
    # Calibration evidence counts only signed by a registered verifier (calibrate --record).
    cal_key = tmp / "calibration.key"
    run(runner, ["key", "generate", str(cal_key)])
    run(
        runner,
        [
            "identity", "register", "--db", d, "--verifier-id", "idkmesh-local-verifier",
            "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.1.1",
            "--adapter-version", "0.2.0", "--adapter-version", "0.3.0",
            "--public-key", f"{cal_key}.pub",
        ],
    )  # fmt: skip
    cal = json.loads(
        run(runner, ["calibrate", "--record", "--key", str(cal_key), "--db", d, "--json"]).stdout
    )
    bind = ["cohort", "bind", v2, "--predecessor", TOY_V1, "--db", d]
    for slug in ("002-division-test", "003-modulo-command", "004-token-refactor", "005-usage-doc"):
        bind += ["--plan", f"example/toy/{slug}=example/toy-v2/{slug}/evaluator@0.4"]
    for row in cal["calibration_records"]:
        if row["plan_schema_version"] == "0.4":
            bind += ["--calibration", row["digest"]]
    run(runner, bind)
    # A result judged after the binding, listed by toy-v2: a pre-registered outcome.
    toy_run = TOY / "runs" / "002-division-test"
    toy_result = _judge(
        runner, d, cal_key, TOY / "work-units" / "002-division-test.json",
        TOY / "evaluators" / "002-division-test-v0.4.json", toy_run / "result-manifest.json",
        toy_run / "candidate", 0,
    )  # fmt: skip
    run(
        runner,
        ["cohort", "record-outcome", TOY_V2, "--task", TOY_TASK, "--result", toy_result,
         "--signature", "solo-baseline-v1", "--db", d],
    )  # fmt: skip
    run(
        runner,
        ["identity", "revoke", key_id, "--reason", "retired", "--note", "host decommissioned",
         "--db", d],
    )  # fmt: skip
    run(runner, ["checkpoint", "--db", d])
    reports.append(_index(runner, db, browse))
    return BuiltLedger(db, browse, tuple(reports), repair, decoy, key_id)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Served:
    """A running ``provledger serve``: its base URL, process and output files."""

    base: str
    proc: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path


@contextmanager
def serving(db: Path, browse: Path) -> Iterator[Served]:
    """The installed ``provledger serve`` on a free loopback port. Its output goes to
    files next to ``browse`` (a pipe nobody reads could block the server)."""
    exe = ROOT / ".venv" / "bin" / "provledger"
    assert exe.exists(), "the package must be installed in .venv (pip install -e '.[test]')"
    port = _free_port()
    args = ["serve", "--db", str(db), "--browse", str(browse), "--port", str(port)]
    out, err = browse.with_suffix(".stdout"), browse.with_suffix(".stderr")
    with out.open("wb") as stdout, err.open("wb") as stderr:
        proc = subprocess.Popen([str(exe), *args], stdout=stdout, stderr=stderr)
    served = Served(f"http://127.0.0.1:{port}", proc, out, err)
    try:
        # Bounded readiness poll (not a timed assertion): up to 300 tries.
        for _ in range(300):
            if proc.poll() is not None:
                pytest.fail(f"provledger serve exited {proc.returncode}: {err.read_text()}")
            try:
                with urllib.request.urlopen(served.base + "/-/versions.json") as reply:
                    if reply.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        else:
            pytest.fail("provledger serve never answered")
        yield served
    finally:
        proc.terminate()
        proc.wait()


def corpus_ledger(tmp_path_factory: Any, name: str) -> BuiltLedger:
    """``build`` in a new folder, or skip (saying why) when the reference corpus is absent."""
    corpus = ROOT.parent / "shared" / "reference" / "idkmesh"
    if not corpus.is_dir():
        pytest.skip(f"reference corpus absent: {corpus}")
    return build(tmp_path_factory.mktemp(name), corpus)
