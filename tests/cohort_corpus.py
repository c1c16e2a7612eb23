"""Shared test helper: every protocol object under a folder, as a cohorts MemoryLookup."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cohorts.lookup import MemoryLookup
from ledger.errors import KindError
from ledger.schema.kinds import detect_kind

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "idkmesh"
TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"


def load(path: Path) -> Any:
    return json.loads(path.read_text("utf-8"))


def lookup_from(root: Path) -> tuple[MemoryLookup, dict[str, dict[str, Any]]]:
    """Every protocol object under ``root`` (kind by structure) and its cohorts by dir."""
    lookup = MemoryLookup()
    cohorts: dict[str, dict[str, Any]] = {}
    for path in sorted(root.rglob("*.json")):
        if "schemas" in path.relative_to(root).parts:
            continue
        doc = load(path)
        try:
            kind = detect_kind(doc).name
        except KindError:
            continue
        lookup.add(kind, doc)
        if kind == "benchmark-cohort":
            cohorts[path.stem if path.parent == root else path.parent.name] = doc
    return lookup, cohorts
