"""The protocol model (verifiers.model): parsed once, bytes and digests carried exactly.

Properties (hypothesis): for any JSON object, ``parse(raw)`` of any serialization
carries the RFC 8785 bytes (oracle: the independent ``rfc8785`` package) and
``digest == sha256(canonical)``; ``legacy_digest`` is upstream's digest of the value as
parsed; ``of(value)`` agrees with ``parse``. Invalid inputs raise the documented
errors; schema-invalid documents parse (members read as None), as the audits need.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cohort_corpus import CORPUS
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import DuplicateKeyError, InvalidUtf8Error, KindError, ParseError, SchemaError
from ledger.schema.kinds import detect_kind
from ledger.store.prepared import prepare_json
from verifiers.model import (
    Cohort,
    Document,
    EvaluatorPlan,
    Ref,
    ResultManifest,
    VerificationResult,
    WorkUnit,
)
from verifiers.model.json import at, json_key, member, shown

CLASSES: tuple[type[Document], ...] = (
    WorkUnit,
    EvaluatorPlan,
    ResultManifest,
    VerificationResult,
    Cohort,
)

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False, min_value=-1e15, max_value=1e15)
    | st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=8)
)
_keys = st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=6)
_values = st.recursive(
    _scalars,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_keys, kids, max_size=4),
    max_leaves=20,
)
objects = st.dictionaries(_keys, _values, max_size=6)


def _sha256(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _legacy(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _sha256(text.encode("utf-8"))


@settings(max_examples=200, deadline=None)
@given(objects, st.sampled_from(CLASSES), st.booleans())
def test_parse_carries_canonical_bytes_and_digests(
    value: dict[str, Any], cls: type[Document], pretty: bool
) -> None:
    raw = json.dumps(value, indent=2 if pretty else None, ensure_ascii=pretty).encode("utf-8")
    doc = cls.parse(raw)
    assert doc.canonical == rfc8785.dumps(value)
    assert doc.digest == _sha256(doc.canonical)
    assert doc.legacy_digest == _legacy(value)
    assert doc.digests == {doc.digest, doc.legacy_digest}
    assert doc.value == value
    again = cls.parse(doc.canonical)
    assert again.canonical == doc.canonical and again.digest == doc.digest
    assert cls.of(value) == doc  # equal by bytes and digests


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("raw", [b"[]", b"1", b'"x"', b"null", b"true"])
def test_a_json_value_that_is_not_an_object_is_kind_invalid(
    cls: type[Document], raw: bytes
) -> None:
    with pytest.raises(KindError) as caught:
        cls.parse(raw)
    assert caught.value.exit_code == 3
    assert caught.value.finding_code == "kind-invalid"
    assert f"{cls.kind} is not a JSON object" in str(caught.value)
    with pytest.raises(KindError):
        cls.of(json.loads(raw))


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b'{"a":1,"a":2}', DuplicateKeyError),
        (b'{"a":"\xff"}', InvalidUtf8Error),
        (b'{"a":1} x', ParseError),
        (b'{"a":NaN}', ParseError),
        (b"", ParseError),
    ],
)
def test_bytes_that_are_not_strict_json_are_parse_errors(
    raw: bytes, error: type[Exception]
) -> None:
    with pytest.raises(error) as caught:
        VerificationResult.parse(raw)
    assert isinstance(caught.value, ParseError)
    assert caught.value.finding_code == "parse-error"


def test_schema_invalid_documents_parse_and_read_as_none() -> None:
    """Tolerance: wrong types and missing members never raise; typed members are None."""
    vr = VerificationResult.parse(b'{"status": 5, "decision_support": [], "findings": {}}')
    assert vr.status is None
    assert vr.recommendation is None
    assert vr.result_manifest_digest is None
    assert vr.verifier == (None, None, None)
    assert vr.verifier_member == {}
    assert vr.finding_categories == ()
    assert vr.resources == {}
    cohort = Cohort.parse(b'{"tasks": [1, {"id": "t", "evidence": {"attempts": ["x", {}]}}]}')
    assert [t.id for t in cohort.tasks] == ["t"]
    (task,) = cohort.tasks
    assert task.index == 0 and [a.label for a in task.attempts] == ["attempts[0]"]
    assert task.attempts[0].result_manifest == Ref()
    assert cohort.stage is None and cohort.extensions == {}


def test_members_keep_recorded_values_for_drift_messages() -> None:
    rm = ResultManifest.parse(
        b'{"work_unit_id": 7, "work_unit_version": "1",'
        b' "provenance": {"work_unit_digest": ["x"], "source_revision": "abc"}}'
    )
    assert rm.work_unit == (7, "1")
    assert rm.work_unit_digest == ["x"]
    assert rm.source_revision == "abc"
    assert rm.expected_validator_ids == frozenset()
    worker = ResultManifest.parse(b'{"worker": {"id": 7}}')
    assert (worker.recorded_worker_id, worker.worker_id) == (7, None)
    plan = EvaluatorPlan.parse(
        b'{"backend": {"type": "unified_diff"}, "verifier": {"id": "v", "adapter": 1}}'
    )
    assert plan.backend_type == "unified_diff"
    assert plan.verifier == ("v", 1, None) and plan.verifier_member == {"id": "v", "adapter": 1}


def test_total_readers() -> None:
    value = {"a": [{"b": 1}], "s": "x"}
    assert at(value, "a", 0, "b") == 1
    assert at(value, "a", 5) is None
    assert at(value, "s", "t") is None
    assert at(value, "missing") is None
    assert member(["unhashable"], frozenset({"a"})) is False
    assert json_key({"b": 1, "a": 2}) == '{"a": 2, "b": 1}'
    assert shown("x" * 100).endswith("...") and len(shown("x" * 100)) == 80


def _corpus_documents() -> list[Path]:
    if not CORPUS.is_dir():
        return []
    return sorted(p for p in CORPUS.rglob("*.json") if "schemas" not in p.relative_to(CORPUS).parts)


MODEL_OF = {cls.kind: cls for cls in CLASSES}


def test_every_corpus_protocol_object_parses_with_the_ledger_digests() -> None:
    """On the real upstream corpus, the model's bytes and digests are the ledger's."""
    paths = _corpus_documents()
    if not paths:
        pytest.skip(f"reference corpus absent: {CORPUS}")
    seen: dict[str, int] = {}
    for path in paths:
        raw = path.read_bytes()
        try:
            kind = detect_kind(json.loads(raw)).name
        except (KindError, ValueError):
            continue
        cls = MODEL_OF.get(kind)
        if cls is None:
            continue
        doc = cls.parse(raw)
        try:
            prepared = prepare_json(raw, kind)
        except SchemaError:  # schema-invalid upstream record: the model still parses it
            assert doc.digest == _sha256(rfc8785.dumps(json.loads(raw)))
        else:
            assert (doc.digest, doc.legacy_digest) == (prepared.digest, prepared.legacy_digest)
            assert doc.canonical == prepared.data
        seen[kind] = seen.get(kind, 0) + 1
    assert set(seen) == set(MODEL_OF), seen


def _read_every_member(value: object) -> None:
    """Every public member of every view over ``value``."""
    for name in dir(value):
        if not name.startswith("_") and name not in ("parse", "of", "from_encoded", "all_of"):
            member = getattr(value, name)
            if name == "at":
                member("a", 0, "b")


_shapes = st.fixed_dictionaries(
    {},
    optional={
        k: _values
        for k in (
            "id",
            "version",
            "stage",
            "status",
            "tasks",
            "provenance",
            "verifier",
            "binding",
            "findings",
            "checks",
            "evidence",
            "logs",
            "decision_support",
            "work_unit_id",
        )
    },
)


@settings(max_examples=150, deadline=None)
@given(_shapes, st.lists(st.dictionaries(_keys, _values, max_size=4) | _values, max_size=3))
def test_reading_any_member_of_any_object_never_raises(
    value: dict[str, Any], tasks: list[Any]
) -> None:
    """Tolerance as a property: typed members are total over arbitrary JSON objects."""
    for cls in CLASSES:
        doc = cls.of(value)
        _read_every_member(doc)
    cohort = Cohort.of({**value, "tasks": [*tasks, {"evidence": {"attempts": tasks}}]})
    for task in cohort.tasks:
        _read_every_member(task)
        _read_every_member(task.work_unit)
        _read_every_member(task.evaluator)
        for attempt in task.attempts:
            _read_every_member(attempt)
            _read_every_member(attempt.result_manifest)


def test_a_stored_row_becomes_its_document_without_a_second_parse() -> None:
    """``Document.stored``: the row's bytes and digests, the value its caller parsed; a
    row without a legacy digest is named by its own digest."""
    from ledger.store.base import StoredObject

    data = b'{"verifier":{"id":"v"}}'
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    row = StoredObject(digest, 1, "verification-result", None, None, None, None, None, data)
    value = json.loads(data)
    doc = VerificationResult.stored(row, value)
    assert (doc.value, doc.canonical) == (value, data)
    assert (doc.digest, doc.legacy_digest) == (digest, digest)
    assert doc.verifier == ("v", None, None)
