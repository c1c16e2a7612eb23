"""ledger.schema._compiled verdicts must equal jsonschema's (Draft 2020-12, no format checker).

Only "valid" is ever trusted from the compiled predicates, so soundness (compiled True
implies jsonschema valid) is the safety property; exact equality is also required
because ``not`` and ``if`` are only sound when sub-verdicts are exact.
"""

from __future__ import annotations

import copy
import functools
import json
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from schema_documents import value_paths

from ledger.encoding.canonical import parse_strict
from ledger.errors import LedgerError, SchemaError
from ledger.schema import _compiled as fastschema
from ledger.schema import validation as schema
from ledger.schema.kinds import KINDS, detect_kind

ROOT = Path(__file__).resolve().parents[1]
SCHEMA_FILES = sorted((ROOT / "schemas").glob("*.schema.json"))


def _pairs() -> list[tuple[str, str]]:
    out = []
    for path in SCHEMA_FILES:
        kind, version = path.name.removesuffix(".schema.json").rsplit("-v", 1)
        out.append((kind, version))
    return out


@functools.cache
def _documents(corpus: Path | None) -> list[Any]:
    docs = list(bench_corpus.corpus(90, 5))
    if corpus is not None:
        for path in sorted(corpus.rglob("*.json")):
            if "schemas" not in path.parts:
                docs.append(parse_strict(path.read_bytes()))
    return docs


def _kind_version(doc: Any) -> tuple[str, str] | None:
    try:
        spec = detect_kind(doc)
    except LedgerError:
        return None
    version = doc.get("schema_version")
    return (spec.name, version) if version in spec.versions else None


def _agree(kind: str, version: str, value: Any) -> None:
    expected = schema.validator(kind, version).is_valid(value)
    got = fastschema.fast_check(kind, version, value)
    assert got == expected, (kind, version, json.dumps(value)[:300])


def test_upstream_kinds_compile() -> None:
    compiled = fastschema.compiled_kinds(_pairs())
    for (kind, _version), ok in compiled.items():
        if kind in ("work-unit", "evaluator-plan", "result-manifest", "verification-result"):
            assert ok, kind
    assert all(kind in KINDS for kind, _ in compiled)


def test_documents_agree(corpus: Path) -> None:
    checked = 0
    for doc in _documents(corpus):
        pair = _kind_version(doc)
        if pair is not None:
            _agree(*pair, doc)
            checked += 1
    assert checked > 80


_REPLACEMENTS: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 0.5, -0.5, 2**40, "", "x", "sha256:" + "0" * 64,
    "coding", "passed", "0.2", [], ["a", "a"], [1], {}, {"x": 1}, "a\n", "a" * 200,
]  # fmt: skip


def _mutate(doc: Any, rng: random.Random) -> Any:
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        path = rng.choice(value_paths(doc)[1:])
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        last = path[-1]
        action = rng.randrange(5)
        if action == 0 and isinstance(parent, dict):
            del parent[last]
        elif action == 1 and isinstance(parent, dict):
            parent["unexpected_" + str(rng.randrange(3))] = rng.choice(_REPLACEMENTS)
        elif action == 2 and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[last]))
        elif action == 3 and isinstance(parent[last], str):
            parent[last] = parent[last] + rng.choice(["\n", " ", "X", "/", "é"])
        else:
            parent[last] = copy.deepcopy(rng.choice(_REPLACEMENTS))
    return doc


def test_mutations_agree(corpus: Path) -> None:
    docs = [(d, p) for d in _documents(corpus) if (p := _kind_version(d)) is not None]
    rng = random.Random(20261130)
    valid = invalid = 0
    for _ in range(1500):
        doc, (kind, version) = rng.choice(docs)
        mutated = _mutate(doc, rng)
        expected = schema.validator(kind, version).is_valid(mutated)
        assert fastschema.fast_check(kind, version, mutated) == expected, json.dumps(mutated)[:400]
        valid += expected
        invalid += not expected
    assert valid > 50 and invalid > 500


@settings(max_examples=200, deadline=None)
@given(st.randoms(use_true_random=False), st.integers(min_value=0, max_value=10**6))
def test_mutations_agree_hypothesis(rng: random.Random, pick: int) -> None:
    docs = [(d, p) for d in _documents(None) if (p := _kind_version(d)) is not None]
    doc, (kind, version) = docs[pick % len(docs)]
    _agree(kind, version, _mutate(doc, rng))


# -- keyword-level checks against jsonschema on tricky instances ------------------------------

INSTANCES: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 1.5, -0.0, 2**53, "", "a", "ab", "abc", "\U0001f600",
    "a\n", "x" * 5, [], [1], [1, 1], [1, True], [1, 1.0], [0, False], [[1], [1]], [[1], [True]],
    [{"a": 1}, {"a": 1}], [{"a": 1}, {"a": 1.0}], ["a", "b"], ["a", "a"], {}, {"a": 1},
    {"a": "x"}, {"a": True}, {"a": 1, "b": 2}, {"b": 1}, {"a": None, "c": [1]}, {"a": 1.0},
]  # fmt: skip

SCHEMAS: list[Any] = [
    True,
    False,
    {"type": "integer"},
    {"type": "number", "minimum": 0, "maximum": 1},
    {"type": ["string", "null"], "minLength": 2},
    {"type": "string", "pattern": "^[a-z]+$(?!\n)"},
    {"type": "string", "pattern": "^[a-z]+$"},
    {"maxLength": 1},
    {"minimum": 1},
    {"exclusiveMinimum": 0, "exclusiveMaximum": 2},
    {"const": 1},
    {"const": True},
    {"const": "a"},
    {"const": [1]},
    {"const": {"a": 1}},
    {"enum": [1, "a", None, [1], {"a": 1}]},
    {"enum": [True, "x"]},
    {"type": "array", "uniqueItems": True},
    {"uniqueItems": True, "minItems": 1, "maxItems": 2},
    {"items": {"type": "integer"}},
    {"type": "array", "items": {"type": "string"}},
    {"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}},
    {"properties": {"a": {"type": "string"}}, "additionalProperties": False},
    {"additionalProperties": {"type": "integer"}},
    {"minProperties": 1, "maxProperties": 1},
    {"dependentRequired": {"a": ["b"]}},
    {"propertyNames": {"maxLength": 1}},
    {"not": {"type": "integer"}},
    {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    {"oneOf": [{"type": "number"}, {"type": "integer"}]},
    {"allOf": [{"minimum": 0}, {"maximum": 1}]},
    {
        "if": {"properties": {"a": {"const": 1}}},
        "then": {"required": ["b"]},
        "else": {"required": ["c"]},
    },
    {"then": {"required": ["zzz"]}},
    {"$defs": {"n": {"type": "integer", "minimum": 1}}, "items": {"$ref": "#/$defs/n"}},
    {
        "$defs": {
            "tree": {
                "type": "array",
                "items": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/tree"}]},
            }
        },
        "$ref": "#/$defs/tree",
    },
    {"type": "object", "format": "date-time", "description": "annotation only"},
]  # fmt: skip


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_keywords_agree(index: int) -> None:
    sch = SCHEMAS[index]
    check = fastschema.compile_schema(sch)
    reference = Draft202012Validator(sch)
    for instance in [*INSTANCES, [[1, [2]], 3], [[1, ["x"]]]]:
        assert check(instance) == reference.is_valid(instance), (sch, instance)


@pytest.mark.parametrize(
    "sch",
    [
        {"patternProperties": {"^a": {}}},
        {"prefixItems": [{}]},
        {"contains": {}},
        {"unevaluatedProperties": False},
        {"$ref": "https://example.org/x.json"},
        {"$defs": {"x": {"$id": "x", "type": "integer"}}, "$ref": "#/$defs/x"},
        {"$dynamicRef": "#meta"},
        {"multipleOf": 2},
        {"someCustomKeyword": 1},
    ],
)
def test_unsupported_is_refused(sch: Any) -> None:
    with pytest.raises(fastschema.Unsupported):
        fastschema.compile_schema(sch)


def test_asserted_format_is_refused() -> None:
    with pytest.raises(fastschema.Unsupported):
        fastschema.compile_schema({"format": "date-time"}, formats_asserted=True)


def test_non_json_values_are_not_vouched_for() -> None:
    check = fastschema.compile_schema({"type": "object", "properties": {"a": {"minimum": 1}}})
    assert check({"a": 2})
    assert not check({"a": object()})
    assert not check((1, 2))


def test_validate_still_reports_jsonschema_message() -> None:
    doc = next(iter(bench_corpus.corpus(1, 3)))
    doc["kind"] = "code"
    with pytest.raises(SchemaError, match=r"at \$\.kind"):
        schema.validate("work-unit", "0.2", doc)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([0.0, 1.0, -0.0, 2.5]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("ab"), inner),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(_JSON, _JSON)
def test_json_equal_is_jsonschemas_equal(one: Any, two: Any) -> None:
    from jsonschema._utils import equal

    assert fastschema._json_equal(one, two) == equal(one, two)


@settings(max_examples=400, deadline=None)
@given(st.lists(_JSON, max_size=5))
def test_unique_items_never_vouches_where_jsonschema_refuses(items: list[Any]) -> None:
    from jsonschema._utils import uniq

    if fastschema._unique(items):
        assert uniq(items)


def test_the_fast_path_asserts_formats_exactly_when_the_reference_does() -> None:
    from ledger.schema.loader import FORMATS_ASSERTED, validator

    for kind, version in _pairs():
        assert (validator(kind, version).format_checker is not None) is FORMATS_ASSERTED


def test_valid_documents_need_no_jsonschema(tmp_path: Path) -> None:
    """The compiled checks are built from the schemas alone: a run whose documents are
    all valid never imports jsonschema (~0.3 s of start with the metaschema checks)."""
    docs = tmp_path / "docs.json"
    docs.write_text(json.dumps(list(bench_corpus.corpus(40, 3))))
    code = (
        "import json, sys\n"
        "from ledger.schema import validation\n"
        "from ledger.schema.kinds import detect_kind\n"
        f"for doc in json.load(open({str(docs)!r})):\n"
        "    spec = detect_kind(doc)\n"
        "    assert validation.is_valid(spec.name, doc['schema_version'], doc)\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
