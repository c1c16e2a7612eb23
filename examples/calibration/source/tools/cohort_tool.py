#!/usr/bin/env python3
"""Tiny benchmark-cohort CLI: provledger's synthetic Task 001 calibration fixture.

``validate --cohort PATH`` checks a cohort file and the WorkUnit files it references;
``definition-digest --cohort PATH`` prints the cohort's definition digest. Referenced
files go through ``resolve_repo_file``, which refuses absolute paths and paths that
leave the repository. The ``--cohort`` argument itself does not (the seeded bug that
the calibration candidates try to fix). Output never contains file-system paths, so
probe transcripts are reproducible.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


class CohortError(Exception):
    """A cohort or a file it references is unusable."""


def load_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CohortError(f"cannot read JSON ({type(exc).__name__})") from None
    if not isinstance(value, dict):
        raise CohortError("expected a JSON object")
    return value


def resolve_repo_file(raw: str, *, label: str) -> Path:
    """A repository-relative file path, refusing absolute paths and escapes."""
    if Path(raw).is_absolute():
        raise CohortError(f"{label} path must be relative to the repository")
    path = (ROOT / raw).resolve()
    if not path.is_relative_to(ROOT):
        raise CohortError(f"{label} path escapes the repository")
    if not path.is_file():
        raise CohortError(f"{label} file not found")
    return path


def check_cohort(cohort: dict[str, Any]) -> list[dict[str, Any]]:
    tasks = cohort.get("tasks")
    if not isinstance(cohort.get("id"), str) or not isinstance(tasks, list) or not tasks:
        raise CohortError("a cohort needs a string id and a non-empty task list")
    for task in tasks:
        if not isinstance(task, dict) or not isinstance(task.get("work_unit"), str):
            raise CohortError("each task needs a work_unit path")
        load_json(resolve_repo_file(task["work_unit"], label="WorkUnit"))
    return tasks


def definition_digest(cohort: dict[str, Any], tasks: list[dict[str, Any]]) -> str:
    projection = {
        "id": cohort["id"],
        "tasks": sorted(
            (
                {
                    "id": task.get("id"),
                    "work_unit_sha256": hashlib.sha256(
                        resolve_repo_file(task["work_unit"], label="WorkUnit").read_bytes()
                    ).hexdigest(),
                }
                for task in tasks
            ),
            key=lambda item: str(item["id"]),
        ),
    }
    text = json.dumps(projection, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def cmd_validate(args: argparse.Namespace) -> int:
    cohort = load_json((ROOT / args.cohort).resolve())
    tasks = check_cohort(cohort)
    print(f"valid: {cohort['id']} ({len(tasks)} tasks)")
    return 0


def cmd_definition_digest(args: argparse.Namespace) -> int:
    cohort = load_json((ROOT / args.cohort).resolve())
    tasks = check_cohort(cohort)
    print(definition_digest(cohort, tasks))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, func in (("validate", cmd_validate), ("definition-digest", cmd_definition_digest)):
        sub = commands.add_parser(name)
        sub.add_argument("--cohort", required=True)
        sub.set_defaults(func=func)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except CohortError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
