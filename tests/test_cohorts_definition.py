"""Definition projection and digests: upstream's recorded digests reproduce, and the
projection commits to exactly the members it should."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cohorts.definition import (
    definition_digest_jcs,
    definition_digest_legacy,
    definition_digests,
    projection,
    recorded_definition_digest,
)
from cohorts.errors import DefinitionError
from ledger.errors import InputError

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "reference" / "idkmesh"
TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"

# Every definition_digest recorded in the corpus (the scaffold records none).
RECORDED = {
    name: "sha256:" + hexdigest
    for name, hexdigest in (
        ("phase-b2-first-five", "4fdec8a2768e32dc223b218ed70aec3a67aefcd87c64b72c5675c9921a4eab5c"),
        (
            "phase-b2-successor-five",
            "3182d8710e1239c19cb95daddd0677241c0cd9123614786fd919b036922dbdd9",
        ),
        (
            "phase-b2-first-five-v2",
            "7ecb58c72a5819151c98c3916f810f22313e2fd0981cfa09ff6158a6e7103f8c",
        ),
        (
            "phase-b2-first-five-v3",
            "fe4488053c794d696d3168664674a73f9d16b196a8ac8127ffd36734087000dd",
        ),
    )
}


def _cohort(name: str) -> dict[str, Any]:
    path = CORPUS / "benchmarks" / name / "cohort.json"
    if not path.is_file():
        pytest.skip(f"reference corpus absent: {path} (lives in ../shared, outside the repo)")
    value: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return value


def _toy() -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / "cohort-v1.json").read_text("utf-8"))
    return value


@pytest.mark.parametrize("name", sorted(RECORDED))
def test_recorded_definition_digest_reproduces(name: str) -> None:
    cohort = _cohort(name)
    assert recorded_definition_digest(cohort) == RECORDED[name]
    assert definition_digest_legacy(cohort) == RECORDED[name]
    # No floats or astral member names in these projections: the schemes agree.
    assert definition_digest_jcs(cohort) == RECORDED[name]


def test_every_recorded_digest_in_the_corpus_is_checked() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    recorded = {}
    for path in sorted((CORPUS / "benchmarks").glob("*/cohort.json")):
        digest = json.loads(path.read_text("utf-8")).get("definition_digest")
        if digest is not None:
            recorded[path.parent.name] = digest
    assert recorded == RECORDED


def test_scaffold_records_no_digest_but_projects() -> None:
    cohort = _cohort("phase-b2-successor-v2")
    assert cohort["stage"] == "scaffold"
    assert recorded_definition_digest(cohort) is None
    digests = definition_digests(cohort)
    assert digests.legacy == digests.jcs
    assert digests.legacy.startswith("sha256:")


def test_projection_shape_and_order() -> None:
    cohort = _toy()
    projected = projection(cohort)
    assert set(projected) == {
        "schema_version", "id", "title", "minimum_final_tasks", "required_families",
        "taxonomy_frozen_before_outcomes", "authority", "tasks",
    }  # fmt: skip
    assert projected["required_families"] == sorted(cohort["required_families"])
    assert [t["id"] for t in projected["tasks"]] == sorted(t["id"] for t in cohort["tasks"])
    task = projected["tasks"][0]
    assert set(task) == {
        "id", "family", "difficulty", "split", "source", "work_unit", "evaluator",
        "declared_structural_signatures", "negative_case", "accounting",
    }  # fmt: skip
    assert set(task["work_unit"]) == {"id", "version", "digest"}
    assert set(task["evaluator"]) == {"visibility", "plan_id", "plan_digest", "backend"}
    assert set(task["negative_case"]) == {"description", "expected_category"}
    assert set(task["source"]) == {"repository", "revision"}
    # The projection shares nothing with its input.
    projected["authority"]["merge"] = True
    task["source"]["revision"] = "x"
    assert cohort["authority"]["merge"] is False
    assert cohort["tasks"][0]["source"]["revision"] != "x"


# Members outside the projection: changing them never changes the digest.
EXCLUDED_EDITS = [
    ("stage", lambda c: c.__setitem__("stage", "frozen")),
    ("description", lambda c: c.__setitem__("description", "changed")),
    ("no description", lambda c: c.pop("description")),
    ("extensions", lambda c: c.__setitem__("extensions", {"x": {"y": 1.5}})),
    ("definition_digest", lambda c: c.__setitem__("definition_digest", "sha256:" + "0" * 64)),
    ("evidence", lambda c: c["tasks"][0].__setitem__("evidence", {"status": "pending"})),
    ("work_unit path", lambda c: c["tasks"][1]["work_unit"].__setitem__("path", "a/b.json")),
    ("plan_path", lambda c: c["tasks"][2]["evaluator"].pop("plan_path")),
    (
        "evidence_status",
        lambda c: c["tasks"][3]["negative_case"].__setitem__("evidence_status", "verified"),
    ),
    ("extra source member", lambda c: c["tasks"][4]["source"].__setitem__("note", "x")),
]

# Members inside the projection: changing any one changes the digest.
INCLUDED_EDITS = [
    ("title", lambda c: c.__setitem__("title", "other")),
    ("minimum_final_tasks", lambda c: c.__setitem__("minimum_final_tasks", 6)),
    ("required_families", lambda c: c["required_families"].append("other")),
    ("authority", lambda c: c["authority"].__setitem__("merge", True)),
    ("difficulty", lambda c: c["tasks"][0].__setitem__("difficulty", "large")),
    ("family", lambda c: c["tasks"][0].__setitem__("family", "other")),
    ("split", lambda c: c["tasks"][1].__setitem__("split", "held_out")),
    ("revision", lambda c: c["tasks"][1]["source"].__setitem__("revision", "f" * 40)),
    (
        "work_unit digest",
        lambda c: c["tasks"][2]["work_unit"].__setitem__("digest", "sha256:" + "1" * 64),
    ),
    ("work_unit version", lambda c: c["tasks"][2]["work_unit"].__setitem__("version", 2)),
    (
        "plan digest",
        lambda c: c["tasks"][3]["evaluator"].__setitem__("plan_digest", "sha256:" + "2" * 64),
    ),
    ("visibility", lambda c: c["tasks"][3]["evaluator"].__setitem__("visibility", "hidden")),
    ("signatures", lambda c: c["tasks"][4]["declared_structural_signatures"].append("x-v1")),
    (
        "negative description",
        lambda c: c["tasks"][4]["negative_case"].__setitem__("description", "other"),
    ),
    ("metrics", lambda c: c["tasks"][0]["accounting"]["required_metrics"].append("tokens")),
]


@pytest.mark.parametrize("edit", [e for _, e in EXCLUDED_EDITS], ids=[n for n, _ in EXCLUDED_EDITS])
def test_excluded_members_do_not_change_the_digest(edit: Any) -> None:
    cohort = _toy()
    before = definition_digests(cohort)
    edit(cohort)
    assert definition_digests(cohort) == before


@pytest.mark.parametrize("edit", [e for _, e in INCLUDED_EDITS], ids=[n for n, _ in INCLUDED_EDITS])
def test_included_members_change_the_digest(edit: Any) -> None:
    cohort = _toy()
    before = definition_digests(cohort)
    edit(cohort)
    after = definition_digests(cohort)
    assert after.legacy != before.legacy
    assert after.jcs != before.jcs


@settings(max_examples=50, deadline=None)
@given(st.randoms(use_true_random=False))
def test_order_of_sorted_lists_does_not_matter(rnd: random.Random) -> None:
    cohort = _toy()
    before = definition_digests(cohort)
    rnd.shuffle(cohort["tasks"])
    rnd.shuffle(cohort["required_families"])
    for task in cohort["tasks"]:
        rnd.shuffle(task["declared_structural_signatures"])
        rnd.shuffle(task["accounting"]["required_metrics"])
        task["evaluator"] = dict(reversed(list(task["evaluator"].items())))
    assert definition_digests(cohort) == before


@settings(max_examples=50, deadline=None)
@given(title=st.text(max_size=30), minimum=st.integers(min_value=5, max_value=1000))
def test_schemes_agree_without_floats(title: str, minimum: int) -> None:
    cohort = _toy()
    cohort["title"] = title
    cohort["minimum_final_tasks"] = minimum
    digests = definition_digests(cohort)
    assert digests.legacy == digests.jcs
    assert digests.scheme_for(digests.legacy) == "both"


def test_schemes_differ_on_a_float() -> None:
    cohort = _toy()
    cohort["minimum_final_tasks"] = 5.0  # JSON Schema counts 5.0 as an integer
    digests = definition_digests(cohort)
    assert digests.legacy != digests.jcs
    assert digests.scheme_for(digests.legacy) == "legacy"
    assert digests.scheme_for(digests.jcs) == "jcs"
    assert digests.scheme_for("sha256:" + "0" * 64) is None
    # JCS writes 5.0 as 5, so the JCS digest equals the integer cohort's.
    assert digests.jcs == definition_digest_jcs(_toy())


MISSING = [
    (("title",), "$.title"),
    (("authority",), "$.authority"),
    (("tasks",), "$.tasks"),
    (("tasks", 0, "split"), "$.tasks[0].split"),
    (("tasks", 1, "source", "revision"), "$.tasks[1].source.revision"),
    (("tasks", 2, "work_unit", "digest"), "$.tasks[2].work_unit.digest"),
    (("tasks", 3, "evaluator", "backend"), "$.tasks[3].evaluator.backend"),
    (
        ("tasks", 4, "negative_case", "expected_category"),
        "$.tasks[4].negative_case.expected_category",
    ),
    (("tasks", 0, "accounting", "required_metrics"), "$.tasks[0].accounting.required_metrics"),
]


@pytest.mark.parametrize(("path", "shown"), MISSING, ids=[s for _, s in MISSING])
def test_missing_projected_member_fails_closed(path: tuple[Any, ...], shown: str) -> None:
    cohort = _toy()
    parent: Any = cohort
    for key in path[:-1]:
        parent = parent[key]
    del parent[path[-1]]
    with pytest.raises(DefinitionError) as info:
        projection(cohort)
    assert shown in str(info.value)
    assert isinstance(info.value, InputError)
    assert info.value.exit_code == 3


@pytest.mark.parametrize(
    ("edit", "fragment"),
    [
        (lambda c: c.__setitem__("tasks", {"a": 1}), "not an array at $.tasks"),
        (lambda c: c["tasks"].__setitem__(0, "task"), "not an object at $.tasks[0]"),
        (lambda c: c.__setitem__("required_families", ["a", 1]), "not sortable"),
        (lambda c: c["tasks"][0].__setitem__("id", 7), "task ids not sortable"),
    ],
)
def test_wrong_shapes_fail_closed(edit: Any, fragment: str) -> None:
    cohort = _toy()
    edit(cohort)
    with pytest.raises(DefinitionError, match=None) as info:
        projection(cohort)
    assert fragment in str(info.value)


def test_duplicate_task_ids_keep_document_order() -> None:
    cohort = _toy()
    twin = copy.deepcopy(cohort["tasks"][0])
    twin["difficulty"] = "large"
    cohort["tasks"].append(twin)
    first = projection(cohort)["tasks"]
    cohort["tasks"].insert(0, cohort["tasks"].pop())
    second = projection(cohort)["tasks"]
    same_id = [t["difficulty"] for t in first if t["id"] == twin["id"]]
    assert same_id == ["small", "large"]
    assert [t["difficulty"] for t in second if t["id"] == twin["id"]] == ["large", "small"]
