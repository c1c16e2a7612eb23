"""A successor of the real, burned first-five, drafted and bound end to end through the
installed CLI.

The ledger is built once per module with ``.venv/bin/provledger`` (subprocesses):
import the corpus, ``cohort draft-successor`` (every task carried over, the observed
Task 001 kept out of held-out use, v0.4 plans drafted from the burned v0.2 ones),
append the plans, freeze, register a verifier, ``calibrate --record``, bind. The
refusals (no calibration; the observed Task 001 presented as held-out evidence; drafts
the command must refuse) write nothing, so their order against the other tests does
not matter.
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

EXE = Path(sys.executable).with_name("provledger")
PREDECESSOR = "benchmark/phase-b2-first-five"
SUCCESSOR = "provledger/phase-b2-first-five-successor-v0.4"
OBSERVED = "benchmark/phase-b2/001-cohort-path-boundary"
CARRIED = (
    OBSERVED,
    "benchmark/phase-b2/002-frozen-definition-digest-test",
    "benchmark/phase-b2/003-definition-json-command",
    "benchmark/phase-b2/004-safe-cohort-loader-refactor",
    "benchmark/phase-b2/005-first-five-freeze-checklist",
)
#: Removed-line substrings for the v0.4 drafts (docs/WALKTHROUGH.md says what backs each).
REMOVED = (
    f"{OBSERVED}=(ROOT / args.cohort).resolve()",
    "benchmark/phase-b2/002-frozen-definition-digest-test=def self_test(",
    "benchmark/phase-b2/003-definition-json-command=definition-digest",
    "benchmark/phase-b2/004-safe-cohort-loader-refactor=(ROOT / args.cohort).resolve()",
    "benchmark/phase-b2/005-first-five-freeze-checklist=## ",
)


def draft_args(out: str, *extra: str) -> list[str]:
    args = ["cohort", "draft-successor", PREDECESSOR, "-o", out, "--id", SUCCESSOR]
    for item in REMOVED:
        args += ["--removed", item]
    return [*args, *extra]


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
        return subprocess.run(
            [str(EXE), *args],
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
    led.ok(*draft_args("successor"))
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


def test_draft_carries_every_task_and_keeps_the_observed_one_out_of_held_out(
    bound: Bound,
) -> None:
    cohort = json.loads((bound.work / "successor" / "cohort.json").read_text("utf-8"))
    assert [t["id"] for t in cohort["tasks"]] == list(CARRIED)
    assert {t["split"] for t in cohort["tasks"]} == {"pilot"}
    assert cohort["stage"] == "collecting" and "definition_digest" not in cohort
    claim = cohort["extensions"]["org.idkmesh.phase_b2"]["predecessor_burned_definition_digest"]
    assert claim.startswith("sha256:4fdec8a2")
    for task in cohort["tasks"]:
        assert task["evidence"] == {"attempts": [], "status": "pending"}
        plan = json.loads((bound.work / "successor" / task["evaluator"]["plan_path"]).read_text())
        assert plan["schema_version"] == "0.4"
        assert plan["verifier"]["adapter_version"] == "0.3.0"
        assert plan["binding"]["work_unit_digest"] == task["work_unit"]["digest"]
        assert plan["backend"]["required_removed_substrings"]
        assert "required_added_text" not in plan["backend"]


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


def test_bind_presenting_the_observed_task_as_held_out_is_refused(bound: Bound) -> None:
    """A hand-edited draft that puts Task 001 back into held-out use: gate.held_out."""
    cohort = json.loads((bound.work / "successor" / "cohort.json").read_text("utf-8"))
    cohort["id"] = f"{SUCCESSOR}-held-out"
    next(t for t in cohort["tasks"] if t["id"] == OBSERVED)["split"] = "held_out"
    (bound.work / "held-out.json").write_text(json.dumps(cohort), "utf-8")
    bound.ok("cohort", "freeze", "held-out.json")
    done = bound.run(
        "cohort",
        "bind",
        "held-out.json",
        "--predecessor",
        PREDECESSOR,
        *plan_args(CARRIED),
        *("--calibration", bound.calibrations[0], "--calibration", bound.calibrations[1]),
    )
    assert done.returncode == 4, done.stderr
    output = done.stdout + done.stderr
    assert f"gate.held_out [{OBSERVED}]" in output
    assert "got 1 failed item(s)" in output  # refused for that reason alone
    assert bound.bindings_of(f"{SUCCESSOR}-held-out") == []


@pytest.mark.parametrize(
    ("args", "code", "said"),
    [
        (["--drop-banned"], 0, None),
        (["--plan-version", "0.2"], 3, "expected one newer than its 0.2"),
        (["--drop", "benchmark/phase-b2/999-none"], 3, "expected tasks of"),
    ],
)
def test_draft_options_and_refusals(
    bound: Bound, args: list[str], code: int, said: str | None
) -> None:
    entries = bound.json("stats")["entries"]
    argv = draft_args("draft", *args)
    if "--plan-version" in args:  # v0.2 takes no removed-line substrings
        argv = ["cohort", "draft-successor", PREDECESSOR, "-o", "draft", "--id", SUCCESSOR, *args]
    done = bound.run(*argv)
    assert done.returncode == code, done.stderr
    if said is not None:
        assert said in done.stderr and done.stderr.count("\n") == 1
    else:
        drafted = json.loads((bound.work / "draft" / "cohort.json").read_text("utf-8"))
        assert [t["id"] for t in drafted["tasks"]] == list(CARRIED[1:])
    assert bound.json("stats")["entries"] == entries  # drafting only reads the ledger


def test_draft_needs_removed_substrings_and_a_burned_cohort(bound: Bound) -> None:
    bare = bound.run("cohort", "draft-successor", PREDECESSOR, "-o", "d2", "--id", "x/y-z")
    assert bare.returncode == 3
    assert "got 5 task(s) whose plan cannot be drafted" in bare.stderr
    assert all(task in bare.stderr for task in CARRIED)
    frozen = bound.run(
        "cohort", "draft-successor", "benchmark/phase-b2-successor-five", "-o", "d3", "--id", "x/y"
    )
    assert frozen.returncode == 4 and "expected a burned cohort" in frozen.stderr
