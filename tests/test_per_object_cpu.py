"""The per-object fast paths of import and verify equal their reference paths.

- ``ledger.encoding._fast.parse_encode`` checks numbers in the decoder's hooks and the
  nesting depth on the bytes (no walk over the parsed value), and skips the float
  conversion walk when no float is integral or exponent-form: the value, both byte
  forms, the float hints and the errors must still be exactly the reference's.
- ``ledger.schema._compiled``'s generated object checks (members counted instead of
  listed for ``additionalProperties: false``, ``propertyNames``, a second keyword) must
  give ``jsonschema``'s verdict.
- ``ledger.log.leaf.utc_now`` formats a cached second: the text must be ``datetime``'s.
"""

from __future__ import annotations

import json
import threading
from dataclasses import fields
from datetime import UTC, datetime
from typing import Any

import bench_corpus
import pytest
from encoding_reference import assert_parse_encode
from encoding_reference import marked_values as _marked_values
from encoding_reference import reference as _reference
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from ledger.encoding import _fast, strict
from ledger.encoding.strict import Limits
from ledger.log import leaf
from ledger.schema import _compiled
from ledger.store import bulk
from ledger.store.prepared import Prepared, prepare_blob, prepare_value

# -- parse_encode -------------------------------------------------------------------------


def _same(data: bytes, limits: Limits = strict.DEFAULT_LIMITS) -> None:
    assert_parse_encode(data, limits)


_numbers = (
    st.integers(min_value=-(2**54), max_value=2**54)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e-4, 9.9e-5, 1e16, 2.0**53, 2.0**53 + 2, 1e21])
)
_values = st.recursive(
    _numbers | st.text(max_size=5) | st.booleans() | st.none(),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=3), kids, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None)
@given(_values, st.sampled_from([None, 1]), st.integers(min_value=1, max_value=6))
def test_parse_encode_equals_reference(value: Any, indent: int | None, depth: int) -> None:
    data = json.dumps(value, indent=indent).encode()
    _same(data)
    _same(data, Limits(max_depth=depth))


@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=0, max_value=12), st.integers(min_value=1, max_value=12))
def test_depth_limit_boundary(nesting: int, limit: int) -> None:
    data = (b'[{"a":' * nesting) + b'"[{x}]"' + (b"}]" * nesting)
    _same(data, Limits(max_depth=limit))
    _same(b"[" * nesting + b"1.0" + b"]" * nesting, Limits(max_depth=limit))


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1,"a":2}',
        b"[9007199254740992]",
        b"[-9007199254740991, 9007199254740991]",
        b"[9007199254740992.0]",
        b"[1e400]",
        b"[-1e400]",
        b"[NaN]",
        b"[1E2, 1e-7, 0.00001, 0.0001, 5e-324]",
        b'{"x": -0, "y": -0.0, "z": 0.5}',
        b"1.0",
        b"-0.0",
        b"7",
        b'"s"',
        b"[" + b"1" * 5000 + b"]",
    ],
)
def test_number_edge_cases(data: bytes) -> None:
    _same(data)


def test_float_walk_skipped_only_when_forms_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[Any] = []
    original = _fast._jcs_floats

    def counting(node: Any, *rest: Any) -> Any:
        calls.append(node)
        return original(node, *rest)

    monkeypatch.setattr(_fast, "_jcs_floats", counting)
    # Forget where earlier documents held integral floats (the msgspec path would find
    # them there without the walk: tests/test_fast_msgspec.py).
    _fast._NUMBERS.paths.clear()
    plain = b'{"a": [0.5, 2.25, -3.75], "b": {"c": 1}}'
    got = _fast.parse_encode(plain)
    assert not calls and got.has_float and got.float_hints == []
    assert got.canonical is got.legacy
    _same(plain)
    for odd in (b'{"a": [0.5, 2.0]}', b'{"a": 1e-7}', b"[-0.0]"):
        calls.clear()
        _fast.parse_encode(odd)
        assert calls
        _same(odd)


@settings(max_examples=500, deadline=None)
@given(_marked_values)
def test_one_encode_equals_two(value: Any) -> None:
    """The marker path gives the two-encode path's bytes and hints, also when input
    strings spell a marker (then it must fall back)."""
    try:
        twice = _fast._encode_twice(value, True)
    except ValueError:
        with pytest.raises(ValueError):
            _fast._encode(value, True)
        return
    assert _fast._encode(value, True) == twice
    data = json.dumps(value).encode()
    _same(data)


def test_one_encode_for_integral_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the ``json`` path (the ``msgspec`` path's fallback, made to decline here):
    one encode for integral floats. tests/test_fast_msgspec.py counts the other path."""

    def decline(*_args: Any) -> Any:
        raise _fast._Unsure

    monkeypatch.setattr(_fast, "_parse_encode_msgspec", decline)
    encodes: list[Any] = []
    real = _fast._ENCODER

    class Counting:
        def encode(self, value: Any) -> str:
            encodes.append(value)
            return real.encode(value)

    monkeypatch.setattr(_fast, "_ENCODER", Counting())
    got = _fast.parse_encode(b'{"a": [1.0, 2.5, -0.0, {"b": 1.0}], "c": "\\u0000"}')
    assert len(encodes) == 1
    assert got.canonical == b'{"a":[1,2.5,0,{"b":1}],"c":"\\u0000"}'
    assert got.legacy == b'{"a":[1.0,2.5,-0.0,{"b":1.0}],"c":"\\u0000"}'
    encodes.clear()
    # A string spelling the marker of 1.0: counted, found twice, two encodes decide.
    spelled = b'{"a": 1.0, "b": "\\u00000\\u0000"}'
    got = _fast.parse_encode(spelled)
    assert len(encodes) == 3  # the marked try, then legacy and canonical
    assert (got.canonical, got.legacy) == _reference(spelled, strict.DEFAULT_LIMITS)[1:3]


def test_parse_encode_is_thread_safe() -> None:
    """The hooks keep per-thread state: parallel calls give the sequential results."""
    docs = [
        json.dumps({"i": i, "f": [0.5] * (i % 3) + [1.0] * (i % 2)}).encode() for i in range(300)
    ]
    expected = [_fast.parse_encode(d) for d in docs]
    results: dict[int, list[Any]] = {}

    def work(slot: int) -> None:
        results[slot] = [_fast.parse_encode(d) for d in docs]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for got in results.values():
        assert [(e.canonical, e.legacy, e.has_float, e.float_hints) for e in got] == [
            (e.canonical, e.legacy, e.has_float, e.float_hints) for e in expected
        ]


# -- compiled object checks ----------------------------------------------------------------

_MEMBER_SCHEMAS = st.sampled_from(
    [{"type": "string"}, {"type": "integer"}, {"type": "array"}, {"minLength": 2}, True, False]
)
_EXTRA = st.sampled_from([True, False, {"type": "string"}])


@st.composite
def _object_schemas(draw: st.DrawFn) -> dict[str, Any]:
    props = draw(st.dictionaries(st.sampled_from("abcd"), _MEMBER_SCHEMAS, max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    schema["required"] = draw(st.lists(st.sampled_from("abcd"), unique=True, max_size=2))
    extra = draw(_EXTRA)
    if extra is not True:
        schema["additionalProperties"] = extra
    if draw(st.booleans()):  # the general check (not check_plain)
        schema["propertyNames"] = {"maxLength": 1}
    if draw(st.booleans()):  # a second keyword: the two-check conjunction
        schema["not"] = {"required": ["d"]}
    return schema


_instances = st.dictionaries(
    st.sampled_from(["a", "b", "c", "d", "ee"]),
    st.none()
    | st.booleans()
    | st.integers(-2, 2)
    | st.sampled_from([1.0, 1.5])
    | st.text(max_size=3)
    | st.lists(st.integers(), max_size=2),
    max_size=5,
) | st.sampled_from([[], "x", 3, None])


@settings(max_examples=400, deadline=None)
@given(_object_schemas(), _instances)
def test_compiled_object_check_equals_jsonschema(schema: dict[str, Any], instance: Any) -> None:
    check = _compiled.compile_schema(schema)
    assert check(instance) == Draft202012Validator(schema).is_valid(instance)


# -- prepared values shipped from the import's workers ---------------------------------------


def test_prepared_fields_round_trip() -> None:
    """Every field survives the tuple a worker sends, in its own place."""
    every = Prepared(
        "sha256:" + "0" * 64,
        "kind",
        b"{}",
        "0.2",
        "id",
        3,
        "sha256:" + "1" * 64,
        "[[1]]",
        (("a", "b"),),
    )
    documents = list(bench_corpus.corpus(9, seed=1))
    for prepared in (every, prepare_blob(b"raw"), *(prepare_value(d) for d in documents)):
        assert bulk._prepared(bulk._fields(prepared)) == prepared
    assert len(set(bulk._fields(every))) == len(fields(Prepared))


# -- entry time stamps -----------------------------------------------------------------------


def _datetime_text(ns: int) -> str:
    moment = datetime.fromtimestamp(ns // 10**9, UTC).replace(microsecond=ns % 10**9 // 1000)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=2**62), min_size=1, max_size=5))
def test_stamp_equals_datetime(moments: list[int]) -> None:
    # Same second twice in a row (cache hit), then others (cache misses).
    for ns in [moments[0], moments[0] + 1, *moments]:
        assert leaf.stamp_ns(ns) == _datetime_text(ns)


def test_utc_now_is_now() -> None:
    before = datetime.now(UTC).replace(tzinfo=None)
    stamp = leaf.utc_now()
    after = datetime.now(UTC).replace(tzinfo=None)
    moment = datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ")
    assert before <= moment <= after
