"""Write a successor of the burned IDKMesh ``phase-b2-first-five`` cohort with v0.4 plans.

Usage: ``python scripts/make_successor.py CORPUS OUT [--carry-banned]``

CORPUS is a copy of the upstream IDKMesh repository (read only; nothing is copied
from it); OUT receives ``cohort.json`` (a frozen successor cohort) and
``evaluators/*.json`` (one EvaluatorPlan v0.4 per carried-over task), all written
here from the rules below. Upstream's rule decides what is carried over: every task of
first-five except the one its burn facts name as observed (its solution is known, so
it may never again be untouched held-out evidence). The carried-over tasks keep their
WorkUnits (id, version and digest, read from the burned cohort) and their ``pilot``
split: upstream's own successor-five records outcomes for them, so they are not
untouched held-out evidence either.

The schema asks for at least five tasks, and the observed task is first-five's only
``bug_fix``, so one fresh ``bug_fix`` task is added: its WorkUnit is written here
(same source revision, the same independence, evidence and validator requirements as
the carried-over WorkUnits; objective and scope of our own), with a v0.4 plan.

``--carry-banned`` also carries the observed task, presented as ``held_out``
(untouched held-out evidence): the successor the burn notice forbids, which
``cohort bind`` must refuse; for tests and demonstrations.

The v0.4 plans keep every check of the burned v0.2 plans (sizes, log types, digest
verification, validators, policy) and turn each exact-line ``required_added_text``
into a ``required_added_substring``. v0.4 also requires at least one removed-line
substring; :data:`REMOVED` holds ours. Only task 004's is an upstream fact (the
duplicated ``(ROOT / args.cohort).resolve()`` loading line the refactor removes); the
others are our reading of the WorkUnit objectives, not checked against the source
revision, which the corpus does not include. Review them against that revision before
judging real candidates with these plans: a wrong removed-side string rejects a
legitimate solution, the defect first-five was burned for.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from cohorts.definition import definition_digest_legacy
from ledger.encoding.digest import legacy_digest

PREDECESSOR = Path("benchmarks") / "phase-b2-first-five" / "cohort.json"
SUCCESSOR_ID = "provledger/phase-b2-first-five-successor-v0.4"
PLAN_PREFIX = "provledger/phase-b2-first-five-successor-v0.4"
ADAPTER = "deterministic-patch-verifier"
ADAPTER_VERSION = "0.3.0"  # the adapter that implements EvaluatorPlan v0.4

# Removed-line substrings per task (see the module docstring for what backs each).
REMOVED: dict[str, list[str]] = {
    "benchmark/phase-b2/001-cohort-path-boundary": ["(ROOT / args.cohort).resolve()"],
    "benchmark/phase-b2/002-frozen-definition-digest-test": ["def self_test("],
    "benchmark/phase-b2/003-definition-json-command": ["definition-digest"],
    "benchmark/phase-b2/004-safe-cohort-loader-refactor": ["(ROOT / args.cohort).resolve()"],
    "benchmark/phase-b2/005-first-five-freeze-checklist": ["## "],
}

FRESH_ID = "provledger/phase-b2-successor/006-cohort-symlink-boundary"
FRESH_OBJECTIVE = (
    "Make the benchmark cohort CLI reject a --cohort path that is, or passes through, a"
    " symbolic link leading outside the repository root, failing closed before loading."
)
FRESH_ADDED = ["is_symlink()"]
FRESH_REMOVED = ["(ROOT / args.cohort).resolve()"]


def _load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, value: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def banned_tasks(predecessor: dict[str, Any]) -> set[str]:
    """Tasks upstream's burn facts name as observed: never carried as held-out evidence."""
    burn = predecessor.get("extensions", {}).get("org.idkmesh.phase_b2", {}).get("burn", {})
    observed = burn.get("observed_task")
    return {observed} if isinstance(observed, str) else set()


def v04_plan(old: dict[str, Any], task_id: str) -> dict[str, Any]:
    """A v0.4 plan for the burned plan ``old``'s WorkUnit, dropping none of its checks."""
    backend = {k: v for k, v in old["backend"].items() if k != "required_added_text"}
    backend["required_added_substrings"] = list(old["backend"]["required_added_text"])
    backend["required_removed_substrings"] = REMOVED[task_id]
    return {
        "backend": backend,
        "binding": dict(old["binding"]),
        "candidate_artifact_id": old["candidate_artifact_id"],
        "execution_mode": old["execution_mode"],
        "id": f"{PLAN_PREFIX}/{task_id.rsplit('/', 1)[-1]}/evaluator",
        "policy": dict(old["policy"]),
        "required_validator_ids": list(old["required_validator_ids"]),
        "schema_version": "0.4",
        "verifier": {**old["verifier"], "adapter": ADAPTER, "adapter_version": ADAPTER_VERSION},
        "visibility": old["visibility"],
    }


def fresh_work_unit(template: dict[str, Any]) -> dict[str, Any]:
    """The fresh bug_fix WorkUnit, keeping ``template``'s requirements (no check dropped)."""
    unit = json.loads(json.dumps(template))
    unit.update(
        id=FRESH_ID,
        version=1,
        kind="coding",
        objective=FRESH_OBJECTIVE,
        extensions={"org.idkmesh.benchmark": {"task_family": "bug_fix"}},
    )
    unit["context"]["summary"] = "Fresh task of the first-five successor (not observed)."
    unit["context"]["references"] = ["schemas/benchmark-cohort-v0.1.schema.json"]
    unit["provenance"]["source"] = "provledger successor of Phase B2 first-five"
    return dict(unit)


def fresh_plan(unit: dict[str, Any], template: dict[str, Any]) -> dict[str, Any]:
    """A v0.4 plan bound to the fresh WorkUnit, with ``template``'s checks."""
    plan = json.loads(json.dumps(template))
    plan["id"] = f"{PLAN_PREFIX}/006-cohort-symlink-boundary/evaluator"
    plan["binding"] = {
        "source_revision": unit["provenance"]["source_revision"],
        "work_unit_digest": legacy_digest(unit),
        "work_unit_id": unit["id"],
        "work_unit_version": unit["version"],
    }
    plan["backend"]["required_added_substrings"] = FRESH_ADDED
    plan["backend"]["required_removed_substrings"] = FRESH_REMOVED
    return dict(plan)


def successor(corpus: Path, out: Path, carry_banned: bool = False) -> dict[str, Any]:
    """Write the successor cohort and its plans under ``out``; return the cohort."""
    predecessor = _load(corpus / PREDECESSOR)
    banned = banned_tasks(predecessor)
    tasks: list[dict[str, Any]] = []
    for task in predecessor["tasks"]:
        task_id = task["id"]
        if task_id in banned and not carry_banned:
            continue
        plan = v04_plan(_load(corpus / task["evaluator"]["plan_path"]), task_id)
        plan_path = f"evaluators/{task_id.rsplit('/', 1)[-1]}.evaluator-plan.json"
        _write(out / plan_path, plan)
        tasks.append(
            {
                "accounting": task["accounting"],
                "declared_structural_signatures": task["declared_structural_signatures"],
                "difficulty": task["difficulty"],
                "evaluator": {
                    "backend": "unified_diff",
                    "plan_digest": legacy_digest(plan),
                    "plan_id": plan["id"],
                    "plan_path": plan_path,
                    "visibility": plan["visibility"],
                },
                "evidence": {"attempts": [], "status": "pending"},
                "family": task["family"],
                "id": task_id,
                "negative_case": {**task["negative_case"], "evidence_status": "pending"},
                "source": task["source"],
                "split": "held_out" if task_id in banned else task["split"],
                "work_unit": {k: task["work_unit"][k] for k in ("digest", "id", "path", "version")},
            }
        )
    first = predecessor["tasks"][1]  # a carried-over task: template for the fresh one
    unit = fresh_work_unit(_load(corpus / first["work_unit"]["path"]))
    _write(out / "work-units/006-cohort-symlink-boundary.work-unit.json", unit)
    plan = fresh_plan(unit, _load(out / tasks[0]["evaluator"]["plan_path"]))
    plan_path = "evaluators/006-cohort-symlink-boundary.evaluator-plan.json"
    _write(out / plan_path, plan)
    tasks.append(
        {
            **{k: first[k] for k in ("accounting", "declared_structural_signatures", "source")},
            "difficulty": "small",
            "evaluator": {
                "backend": "unified_diff",
                "plan_digest": legacy_digest(plan),
                "plan_id": plan["id"],
                "plan_path": plan_path,
                "visibility": plan["visibility"],
            },
            "evidence": {"attempts": [], "status": "pending"},
            "family": "bug_fix",
            "id": FRESH_ID,
            "negative_case": {
                "description": "A --cohort symlink leading outside the repository must be"
                " refused, not loaded.",
                "evidence_status": "pending",
                "expected_category": "security",
            },
            "split": "pilot",
            "work_unit": {
                "digest": legacy_digest(unit),
                "id": unit["id"],
                "path": "work-units/006-cohort-symlink-boundary.work-unit.json",
                "version": 1,
            },
        }
    )
    cohort: dict[str, Any] = {
        "authority": predecessor["authority"],
        "description": (
            "Successor of benchmark/phase-b2-first-five: its tasks except the observed one,"
            " and one fresh bug_fix task, each bound to an EvaluatorPlan v0.4 (added AND"
            " removed line substrings)."
        ),
        "extensions": {
            "org.idkmesh.phase_b2": {
                "predecessor_burned_definition_digest": predecessor["definition_digest"]
            }
        },
        "id": f"{SUCCESSOR_ID}-carrying-observed" if carry_banned else SUCCESSOR_ID,
        "minimum_final_tasks": predecessor["minimum_final_tasks"],
        "required_families": predecessor["required_families"],
        "schema_version": "0.1",
        "stage": "frozen",
        "taxonomy_frozen_before_outcomes": True,
        "tasks": tasks,
        "title": "provledger successor of the IDKMesh Phase B2 first-five cohort (v0.4 plans)",
    }
    cohort["definition_digest"] = definition_digest_legacy(cohort)
    _write(out / "cohort.json", cohort)
    return cohort


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path, help="IDKMesh repository copy (read only)")
    parser.add_argument("out", type=Path, help="directory to write cohort.json and evaluators/")
    parser.add_argument(
        "--carry-banned", action="store_true", help="also carry the observed task (refused)"
    )
    args = parser.parse_args(argv)
    if not (args.corpus / PREDECESSOR).is_file():
        print(
            f"error: not an IDKMesh corpus, got {args.corpus}, expected {PREDECESSOR}",
            file=sys.stderr,
        )
        return 3
    cohort = successor(args.corpus, args.out, args.carry_banned)
    print(f"wrote {args.out}: cohort.json, work-units/, evaluators/")
    print(f"successor {cohort['id']}, {len(cohort['tasks'])} task(s), bind with:")
    for task in cohort["tasks"][:-1]:
        print(f"  --plan {task['id']}={task['evaluator']['plan_id']}@0.4")
    print(f"definition {cohort['definition_digest']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
