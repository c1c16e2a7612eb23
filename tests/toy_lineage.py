"""The toy cohort lineage (examples/cohorts/toy) driven through the CLI, for tests.

``Toy(work)`` runs commands on ``work/ledger.db``: in-process with typer's CliRunner
(``cli``, fast, for building state) or as the installed ``provledger`` in a subprocess
(``exe``, for what a test asserts through the real program). The worker run
``examples/cohorts/toy/runs/002-division-test`` is a repair of task 002 that the v0.4
plan accepts.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "examples" / "cohorts" / "toy"
RUN = TOY / "runs" / "002-division-test"
EXE = Path(sys.executable).with_name("provledger")
TASK = "example/toy/002-division-test"
PLAN = TOY / "evaluators" / "002-division-test-v0.4.json"
PLAIN = "example/toy-plain"
CARRIED = ("002-division-test", "003-modulo-command", "004-token-refactor", "005-usage-doc")


def plain_cohort() -> dict[str, Any]:
    """toy-v2 without its predecessor claim, as a new cohort to freeze (no successor)."""
    value: dict[str, Any] = json.loads((TOY / "cohort-v2.json").read_text("utf-8"))
    value.pop("extensions", None)
    value.pop("definition_digest", None)
    value.update(id=PLAIN, stage="collecting", title="Toy calculator cohort, plain")
    return value


def with_attempt(cohort: dict[str, Any], result: dict[str, Any], digest: str) -> dict[str, Any]:
    """``cohort`` listing the stored result ``digest`` as task 002's attempt-001."""
    out = copy.deepcopy(cohort)
    task = next(t for t in out["tasks"] if t["id"] == TASK)
    provenance = result["provenance"]
    task["evidence"] = {
        "status": "verified",
        "attempts": [
            {
                "attempt_id": "attempt-001",
                "structural_signature": "solo-baseline-v1",
                "result_manifest": {
                    "id": result["result_manifest_id"],
                    "digest": provenance["result_manifest_digest"],
                    "path": "evidence/002/result-manifest.json",
                },
                "verification_result": {
                    "id": result["id"],
                    "digest": digest,
                    "path": "evidence/002/verification-result.json",
                },
                "outcome": "support",
            }
        ],
    }
    return out


class Toy:
    """Commands on one ledger in ``work``."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.db = work / "ledger.db"
        self.key = work / "verifier.key"
        self.runner = CliRunner()

    def cli(self, *args: str, code: int = 0) -> str:
        from ledger.cli import app

        result = self.runner.invoke(app, [*args, "--db", str(self.db)])
        assert result.exit_code == code, (args, result.output)
        return result.stdout

    def cli_json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self.cli(*args, "--json", code=code))

    def exe(self, *args: str, code: int = 0) -> str:
        """The installed ``provledger`` with ``--db``; asserts the exit code."""
        env = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
        env.pop("PROVLEDGER_DB", None)
        done = subprocess.run(
            [str(EXE), *args, "--db", str(self.db)],
            cwd=self.work,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == code, (args, done.stdout[-3000:], done.stderr)
        assert "Traceback" not in done.stderr
        return done.stdout

    def exe_json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self.exe(*args, "--json", code=code))

    def write(self, name: str, value: Any) -> Path:
        path = self.work / name
        path.write_text(json.dumps(value, indent=2) + "\n", "utf-8")
        return path

    # -- building blocks -----------------------------------------------------------------
    def base(self) -> Toy:
        """A ledger with the toy WorkUnits and plans, and a verifier identity for KEY."""
        from ledger.cli import app

        self.cli("init")

        result = self.runner.invoke(app, ["key", "generate", str(self.key)])
        assert result.exit_code == 0, result.output
        self.cli(
            "identity", "register", "--verifier-id", "idkmesh-local-verifier",
            "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.1.1",
            "--adapter-version", "0.2.0", "--adapter-version", "0.3.0",
            "--public-key", f"{self.key}.pub",
        )  # fmt: skip
        files = sorted(str(p) for p in (TOY / "work-units").glob("*.json"))
        files += sorted(str(p) for p in (TOY / "evaluators").glob("*.json"))
        self.cli("append", *files)
        return self

    def run(self) -> tuple[str, dict[str, Any]]:
        """Judge the task 002 repair under its v0.4 plan; (result digest, result)."""
        info = self.cli_json(
            "run-verifier", "--work-unit", str(TOY / "work-units" / "002-division-test.json"),
            "--plan", str(PLAN), "--manifest", str(RUN / "result-manifest.json"),
            "--candidate-root", str(RUN / "candidate"), "--key", str(self.key),
        )  # fmt: skip
        digest = str(info["result_digest"])
        shown = self.cli_json("show", digest)
        return digest, dict(shown["object"])

    def freeze(self, value: dict[str, Any], name: str = "cohort.json") -> None:
        self.cli("cohort", "freeze", str(self.write(name, value)))

    def lineage(self) -> list[str]:
        """toy-v1 frozen and burned, toy-v2 frozen, v0.4 calibrated; the calibration
        records' digests (straightforward, decoy) for ``bind``."""
        self.cli("cohort", "freeze", str(TOY / "cohort-v1.json"))
        self.cli(
            "cohort", "burn", "example/toy-v1",
            "--reason", "Exact-line v0.2 plans reject legitimate fixes.",
            "--observed-task", "example/toy/001-negative-operand",
        )  # fmt: skip
        self.cli("cohort", "freeze", str(TOY / "cohort-v2.json"))
        info = self.cli_json("calibrate", "--record", "--key", str(self.key))
        return [
            str(r["digest"])
            for r in info["calibration_records"]
            if r["plan_schema_version"] == "0.4"
        ]

    def bind(self, calibrations: list[str]) -> None:
        args = ["cohort", "bind", "example/toy-v2", "--predecessor", "example/toy-v1"]
        for name in CARRIED:
            task = f"example/toy/{name}"
            args += ["--plan", f"{task}=example/toy-v2/{name}/evaluator@0.4"]
        for digest in calibrations:
            args += ["--calibration", digest]
        self.cli(*args)
