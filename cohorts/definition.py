"""The pre-outcome definition of a cohort and its digest.

The projection is upstream's rule, member for member: top-level ``schema_version``,
``id``, ``title``, ``minimum_final_tasks``, sorted ``required_families``,
``taxonomy_frozen_before_outcomes``, ``authority`` (whole object); per task, tasks
sorted by ``id``: ``id``, ``family``, ``difficulty``, ``split``, ``source``
{``repository``, ``revision``}, ``work_unit`` {``id``, ``version``, ``digest``},
``evaluator`` {``visibility``, ``plan_id``, ``plan_digest``, ``backend``}, sorted
``declared_structural_signatures``, ``negative_case`` {``description``,
``expected_category``}, ``accounting`` {sorted ``required_metrics``}. Everything else
(``definition_digest``, ``stage``, ``description``, ``extensions``, ``evidence``, paths,
negative-evidence status, extra members) is left out, so attaching outcomes or moving
files never changes the digest.

Absent members: every projected member is required by the BenchmarkCohort v0.1 schema
and upstream reads each one by subscript, so a missing one fails there. We do the same,
fail closed: ``DefinitionError`` names the JSON path. A digest is never computed over a
silently defaulted (null/empty) member. Optional members (``description``,
``plan_path``, ``extensions``, ``definition_digest``, ``exclusion_reason``,
negative-evidence fields) are outside the projection, so their absence changes nothing.

Two digests of the same projection: ``definition_digest_legacy`` is upstream's
(reproduces every recorded ``definition_digest``); ``definition_digest_jcs`` is RFC 8785.
They differ only for non-integral or exponent-form numbers or astral-plane member names.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cohorts.errors import DefinitionError
from cohorts.findings import DigestScheme
from ledger.encoding.canonical import path_child
from ledger.encoding.digest import canonical_digest, legacy_digest
from verifiers.model import CohortView

#: A member of the cohort document as decoded, not validated here: the projection copies
#: it as it is (the checks that read it narrow it; the digest commits to it).
Member = Any


def _member(obj: object, key: str, path: str) -> Member:
    if not isinstance(obj, Mapping):
        raise DefinitionError(
            f"cohort definition not an object at {path}, got {type(obj).__name__},"
            " expected a JSON object"
        )
    if key not in obj:
        raise DefinitionError(
            f"cohort definition member missing at {path_child(path, key)}, got nothing,"
            " expected the member the definition digest commits to"
        )
    return obj[key]


def _array(value: object, path: str) -> list[Member]:
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise DefinitionError(
            f"cohort definition not an array at {path}, got {type(value).__name__},"
            " expected a JSON array"
        )
    return list(value)


def _sorted(value: object, path: str) -> list[Member]:
    items = _array(value, path)
    try:
        return sorted(items)
    except TypeError:
        raise DefinitionError(
            f"cohort definition array not sortable at {path}, got mixed item types,"
            " expected strings"
        ) from None


def _pick(obj: object, keys: tuple[str, ...], path: str) -> dict[str, Member]:
    return {key: copy.deepcopy(_member(obj, key, path)) for key in keys}


def _task(task: object, path: str) -> dict[str, Member]:
    evaluator_path = path_child(path, "evaluator")
    return {
        "id": _member(task, "id", path),
        "family": _member(task, "family", path),
        "difficulty": _member(task, "difficulty", path),
        "split": _member(task, "split", path),
        "source": _pick(
            _member(task, "source", path), ("repository", "revision"), path_child(path, "source")
        ),
        "work_unit": _pick(
            _member(task, "work_unit", path),
            ("id", "version", "digest"),
            path_child(path, "work_unit"),
        ),
        "evaluator": _pick(
            _member(task, "evaluator", path),
            ("visibility", "plan_id", "plan_digest", "backend"),
            evaluator_path,
        ),
        "declared_structural_signatures": _sorted(
            _member(task, "declared_structural_signatures", path),
            path_child(path, "declared_structural_signatures"),
        ),
        "negative_case": _pick(
            _member(task, "negative_case", path),
            ("description", "expected_category"),
            path_child(path, "negative_case"),
        ),
        "accounting": {
            "required_metrics": _sorted(
                _member(
                    _member(task, "accounting", path),
                    "required_metrics",
                    path_child(path, "accounting"),
                ),
                path_child(path_child(path, "accounting"), "required_metrics"),
            )
        },
    }


def projection(cohort: Mapping[str, object]) -> dict[str, Member]:
    """The pre-outcome definition (upstream's rule); a fresh value sharing nothing."""
    tasks_raw = _array(_member(cohort, "tasks", "$"), "$.tasks")
    tasks = [_task(task, f"$.tasks[{index}]") for index, task in enumerate(tasks_raw)]
    try:
        # Stable sort, like upstream: duplicate ids keep document order.
        tasks.sort(key=lambda item: item["id"])
    except TypeError:
        raise DefinitionError(
            "cohort definition task ids not sortable at $.tasks[*].id, got mixed types,"
            " expected strings"
        ) from None
    return {
        "schema_version": _member(cohort, "schema_version", "$"),
        "id": _member(cohort, "id", "$"),
        "title": _member(cohort, "title", "$"),
        "minimum_final_tasks": _member(cohort, "minimum_final_tasks", "$"),
        "required_families": _sorted(
            _member(cohort, "required_families", "$"), "$.required_families"
        ),
        "taxonomy_frozen_before_outcomes": _member(cohort, "taxonomy_frozen_before_outcomes", "$"),
        "authority": copy.deepcopy(_member(cohort, "authority", "$")),
        "tasks": tasks,
    }


def definition_digest_legacy(cohort: Mapping[str, object]) -> str:
    """Upstream's definition digest: legacy serialization of the projection."""
    return legacy_digest(projection(cohort))


def definition_digest_jcs(cohort: Mapping[str, object]) -> str:
    """RFC 8785 digest of the same projection."""
    return canonical_digest(projection(cohort))


@dataclass(frozen=True)
class DefinitionDigests:
    """A cohort's definition digest under both schemes."""

    legacy: str
    jcs: str

    def scheme_for(self, digest: object) -> DigestScheme | None:
        legacy = digest == self.legacy
        jcs = digest == self.jcs
        if legacy and jcs:
            return "both"
        if legacy:
            return "legacy"
        return "jcs" if jcs else None

    def __contains__(self, digest: object) -> bool:
        return self.scheme_for(digest) is not None

    def to_json(self) -> dict[str, str]:
        return {"legacy": self.legacy, "jcs": self.jcs}


def definition_digests(cohort: Mapping[str, object]) -> DefinitionDigests:
    """Both digests from one projection."""
    projected = projection(cohort)
    return DefinitionDigests(legacy_digest(projected), canonical_digest(projected))


def recorded_definition_digest(cohort: Mapping[str, object]) -> str | None:
    """The ``definition_digest`` the document records, if it records a string."""
    return CohortView.of(cohort).recorded_definition_digest


def definition_names(cohort: Mapping[str, object]) -> frozenset[str]:
    """Every digest that names this definition: the recorded one and both recomputed
    (empty of the recomputed ones when a projected member is missing)."""
    names: set[str] = set()
    recorded = recorded_definition_digest(cohort)
    if recorded:
        names.add(recorded)
    try:
        digests = definition_digests(cohort)
        names |= {digests.legacy, digests.jcs}
    except DefinitionError:
        pass
    return frozenset(names)
