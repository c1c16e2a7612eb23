"""A successor of the real, burned first-five binds end to end through the installed CLI.

The ledger is built once per module with ``.venv/bin/provledger`` (subprocesses):
import the corpus, write the successor with ``scripts/make_successor.py``, append its
WorkUnit and plans, freeze it, register a verifier, ``calibrate --record``, bind. The
refusals (no calibration; the observed Task 001 carried as held-out evidence) write
nothing, so their order against the other tests does not matter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cohort_corpus import CORPUS

ROOT = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).with_name("provledger")
SCRIPT = ROOT / "scripts" / "make_successor.py"
PREDECESSOR = "benchmark/phase-b2-first-five"
SUCCESSOR = "provledger/phase-b2-first-five-successor-v0.4"
OBSERVED = "benchmark/phase-b2/001-cohort-path-boundary"
CARRIED = (
    "benchmark/phase-b2/002-frozen-definition-digest-test",
    "benchmark/phase-b2/003-definition-json-command",
    "benchmark/phase-b2/004-safe-cohort-loader-refactor",
    "benchmark/phase-b2/005-first-five-freeze-checklist",
)


def plan_args(tasks: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for task in tasks:
        out += ["--plan", f"{task}={SUCCESSOR}/{task.rsplit('/', 1)[-1]}/evaluator@0.4"]
    return out


@dataclass(frozen=True)
class Bound:
    work: Path
    calibrations: tuple[str, str]
    binding: str

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
        env.pop("PROVLEDGER_DB", None)
        if args[0] == "make_successor":
            argv = [sys.executable, str(SCRIPT), *args[1:]]
        else:
            argv = [str(EXE), *args]
        return subprocess.run(
            argv,
            cwd=self.work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )

    def ok(self, *args: str) -> str:
        done = self.run(*args)
        assert done.returncode == 0, (args, done.stderr)
        assert "Traceback" not in done.stderr
        return done.stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.ok(*args, "--json"))

    def bindings_of(self, cohort: str) -> list[str]:
        report = json.loads(self.run("cohort", "audit", cohort, "--json").stdout)
        return list(report["relations"]["bindings"])


@pytest.fixture(scope="module")
def bound(tmp_path_factory: pytest.TempPathFactory) -> Bound:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS} (it lives in ../shared, outside the repo)")
    if not EXE.exists():
        pytest.skip(f"provledger is not installed next to {sys.executable}")
    work = tmp_path_factory.mktemp("realbind")
    led = Bound(work, ("", ""), "")
    led.ok("init")
    led.ok("import", "idkmesh", str(CORPUS))
    led.ok("make_successor", str(CORPUS), "successor")
    files = sorted(str(p.relative_to(work)) for p in (work / "successor").rglob("*.json"))
    files.remove("successor/cohort.json")
    led.ok("append", *files)
    led.ok("cohort", "freeze", "successor/cohort.json")
    led.ok("key", "generate", "calibration.key")
    led.ok(
        "identity",
        "register",
        "--verifier-id",
        "idkmesh-local-verifier",
        "--adapter",
        "deterministic-patch-verifier",
        *("--adapter-version", "0.1.1", "--adapter-version", "0.2.0"),
        *("--adapter-version", "0.3.0", "--public-key", "calibration.key.pub"),
    )
    cal = led.json("calibrate", "--record", "--key", "calibration.key")
    v04 = {
        r["candidate"]: r["digest"]
        for r in cal["calibration_records"]
        if r["plan_schema_version"] == "0.4"
    }
    calibrations = (v04["straightforward"], v04["decoy"])
    out = led.ok(
        "cohort",
        "bind",
        SUCCESSOR,
        "--predecessor",
        PREDECESSOR,
        *plan_args(CARRIED),
        *("--calibration", calibrations[0], "--calibration", calibrations[1]),
    )
    binding = next(
        line.split()[-1] for line in out.splitlines() if line.startswith("appended cohort-binding")
    )
    return Bound(work, calibrations, binding)


def test_successor_carries_all_but_the_observed_task(bound: Bound) -> None:
    cohort = json.loads((bound.work / "successor" / "cohort.json").read_text("utf-8"))
    ids = [t["id"] for t in cohort["tasks"]]
    assert OBSERVED not in ids
    assert [i for i in ids if i.startswith("benchmark/phase-b2/")] == list(CARRIED)
    assert len(ids) == 5 and {t["split"] for t in cohort["tasks"]} == {"pilot"}
    for task in cohort["tasks"]:
        plan = json.loads((bound.work / "successor" / task["evaluator"]["plan_path"]).read_text())
        assert plan["schema_version"] == "0.4"
        assert plan["binding"]["work_unit_digest"] == task["work_unit"]["digest"]


def test_binding_is_stored_attested_and_audits_are_clean(bound: Bound) -> None:
    shown = bound.json("show", bound.binding)
    assert shown["kind"] == "cohort-binding"
    binding = shown["object"]
    assert sorted(binding["calibrations"]) == sorted(bound.calibrations)
    assert [c["task"] for c in binding["carried_over"]] == list(CARRIED)
    assert json.dumps(binding).count(SUCCESSOR) >= 1
    assert PREDECESSOR in json.dumps(binding)

    pred = bound.json("cohort", "audit", PREDECESSOR)
    assert pred["ok"] is True and pred["counts"]["defect"] == 0
    assert pred["attestations"][bound.binding].startswith("attested by the authority key")
    mine = [s for s in pred["successors"] if s["cohort_id"] == SUCCESSOR]
    assert mine and mine[0]["bindings"] == [bound.binding]

    succ = bound.json("cohort", "audit", SUCCESSOR)
    assert succ["ok"] is True and succ["counts"]["defect"] == 0
    assert succ["counts"]["missing"] == 0
    assert succ["relations"]["bindings"] == [bound.binding]
    assert "clean" in bound.ok("verify")


def test_bind_without_calibration_is_refused(bound: Bound) -> None:
    done = bound.run("cohort", "bind", SUCCESSOR, "--predecessor", PREDECESSOR, *plan_args(CARRIED))
    assert done.returncode == 4, done.stderr
    for task in CARRIED:
        assert f"gate.carry_over.calibration [{task}]" in done.stdout + done.stderr
    assert bound.bindings_of(SUCCESSOR) == [bound.binding]  # nothing written


def test_bind_carrying_the_observed_task_is_refused(bound: Bound) -> None:
    bound.ok("make_successor", str(CORPUS), "banned", "--carry-banned")
    plan = "banned/evaluators/001-cohort-path-boundary.evaluator-plan.json"
    bound.ok("append", plan)
    bound.ok("cohort", "freeze", "banned/cohort.json")
    done = bound.run(
        "cohort",
        "bind",
        "banned/cohort.json",
        "--predecessor",
        PREDECESSOR,
        *plan_args((OBSERVED, *CARRIED)),
        *("--calibration", bound.calibrations[0], "--calibration", bound.calibrations[1]),
    )
    assert done.returncode == 4, done.stderr
    output = done.stdout + done.stderr
    assert f"gate.held_out [{OBSERVED}]" in output
    assert "got 1 failed item(s)" in output  # refused for that reason alone
    assert bound.bindings_of(f"{SUCCESSOR}-carrying-observed") == []
