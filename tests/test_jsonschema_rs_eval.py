"""Why ``ledger.schema._compiled`` stays: jsonschema-rs is faster but not exact.

The compiled predicates may only say "valid" when ``jsonschema`` (Draft 2020-12,
``pattern`` via Python ``re.search``, the semantics upstream IDKMesh validates with)
says so. jsonschema-rs agrees on every shipped schema over the corpus and thousands of
mutations, but it evaluates ``pattern`` with ECMA-262 semantics, so on other patterns
it disagrees with the reference, in both directions. The cases below pin the
disagreement; docs/PERFORMANCE.md records it with the timings.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from ledger.schema import _compiled as fastschema
from ledger.schema import validation as schema

jsonschema_rs = pytest.importorskip("jsonschema_rs")

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# (pattern, instance, reference verdict). jsonschema-rs gives the opposite verdict.
DISAGREEMENTS = [
    # Python's "$" also matches before a trailing newline; upstream guards with (?!\n).
    ("^[a-z]+$", "a\n", True),
    ("^a$", "a\n", True),
    # Python str patterns use Unicode classes; ECMA-262 classes differ.
    (r"^\d+$", "\u0663", True),  # ARABIC-INDIC DIGIT THREE
    (r"^\w+$", "\u00e9", True),
    (r"^\s$", "\x1c", True),
    ("^.$", "\r", True),
    # The unsafe direction: jsonschema-rs accepts what the reference rejects, so as a
    # "valid" fast path it would admit documents upstream refuses.
    (r"^\s$", "\ufeff", False),
    (r"^\W$", "\u00e9", False),
    (r"^\D$", "\u0663", False),
]


def _rs(sch: dict[str, Any]) -> Any:
    return jsonschema_rs.validator_for({"$schema": DRAFT, **sch})


@pytest.mark.parametrize(("pattern", "instance", "expected"), DISAGREEMENTS)
def test_pattern_semantics_differ(pattern: str, instance: str, expected: bool) -> None:
    sch = {"type": "string", "pattern": pattern}
    assert Draft202012Validator(sch).is_valid(instance) is expected
    assert fastschema.compile_schema(sch)(instance) is expected  # the compiler is exact
    assert _rs(sch).is_valid(instance) is not expected  # jsonschema-rs is not


def test_upstream_guarded_patterns_agree() -> None:
    """With upstream's ``$(?!\\n)`` guard the trailing-newline case agrees."""
    sch = {"type": "string", "pattern": "^[a-z0-9][a-z0-9._/-]{2,127}$(?!\n)"}
    for instance in ("abc", "abc\n", "ab", "a/b.c", "abc\nd"):
        assert _rs(sch).is_valid(instance) == Draft202012Validator(sch).is_valid(instance)


def test_agrees_on_shipped_schemas(corpus: Path) -> None:
    """On our schemas, the corpus and mutations of it, the verdicts are equal."""
    from test_fastcanon_schema import _documents, _kind_version, _mutate

    docs = [(d, p) for d in _documents(corpus) if (p := _kind_version(d)) is not None]
    validators: dict[tuple[str, str], Any] = {}
    rng = random.Random(20261201)
    checked = 0
    for index in range(len(docs) + 1500):
        doc, (kind, version) = docs[index] if index < len(docs) else rng.choice(docs)
        value = doc if index < len(docs) else _mutate(doc, rng)
        if (kind, version) not in validators:
            validators[(kind, version)] = _rs(schema.load_schema(kind, version))
        expected = schema.validator(kind, version).is_valid(value)
        assert validators[(kind, version)].is_valid(value) == expected
        checked += 1
    assert checked > 1500
