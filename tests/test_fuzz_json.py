"""Fuzzing the strict JSON reader and the canonicalizer.

Properties:
* any bytes: ``parse_strict`` returns a value or raises a ``ParseError``; nothing else;
* differential: on JSON-like text (generated values, then byte-level mutations) the reader
  accepts exactly what an independent statement of the rules (``_oracle``) accepts, and
  returns the same value;
* round trip: every accepted value canonicalizes without error, its canonical bytes parse
  back to an equal value, canonicalization is idempotent, and the canonical bytes pass
  ``require_canonical``; any other spelling of them is refused by ``require_canonical``;
* documents through ``prepare_json``: only ``LedgerError`` subclasses escape.
"""

from __future__ import annotations

import contextlib
import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ledger.encoding.canonical import (
    MAX_SAFE_INTEGER,
    Limits,
    canonicalize,
    parse_strict,
    require_canonical,
)
from ledger.errors import CanonicalFormError, LedgerError, ParseError

DEPTH = 128
SMALL = Limits(max_bytes=1 << 20, max_depth=DEPTH)
FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _Reject(Exception):
    """The oracle's refusal."""


def _oracle(data: bytes) -> Any:
    """The documented rules, stated independently of ledger.encoding.canonical's code.

    UTF-8 without BOM; one JSON value with only JSON whitespace around it; no duplicate
    member names; no NaN/Infinity; integers within +-(2**53-1); floats finite, and an
    integral float not beyond 2**53-1 unless it is at least 1e21 (RFC 8785 prints those
    in exponent form); no unpaired surrogates; at most 128 nested containers.
    """
    if data[:3] == b"\xef\xbb\xbf":
        raise _Reject("bom")
    try:
        text = data.decode("utf-8", errors="strict")
    except UnicodeDecodeError:
        raise _Reject("utf-8") from None

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        names = [name for name, _ in items]
        if len(names) != len(set(names)):
            raise _Reject("duplicate")
        return dict(items)

    def constant(name: str) -> Any:
        raise _Reject(name)

    try:
        value = json.loads(text, object_pairs_hook=pairs, parse_constant=constant)
    except (ValueError, RecursionError):
        raise _Reject("syntax") from None

    def surrogate_free(s: str) -> bool:
        return not any(0xD800 <= ord(c) <= 0xDFFF for c in s)

    def check(v: Any, level: int) -> None:
        if isinstance(v, dict | list):
            if level >= DEPTH:
                raise _Reject("depth")
            items = v.items() if isinstance(v, dict) else enumerate(v)
            for k, item in items:
                if isinstance(k, str) and not surrogate_free(k):
                    raise _Reject("surrogate")
                check(item, level + 1)
        elif isinstance(v, str):
            if not surrogate_free(v):
                raise _Reject("surrogate")
        elif isinstance(v, bool) or v is None:
            pass
        elif isinstance(v, int):
            if abs(v) > MAX_SAFE_INTEGER:
                raise _Reject("integer")
        elif isinstance(v, float):
            if not math.isfinite(v):
                raise _Reject("overflow")
            if v == int(v) and MAX_SAFE_INTEGER < abs(v) < 1e21:
                raise _Reject("integral float")

    check(value, 0)
    return value


def _same(a: Any, b: Any) -> bool:
    """Structural equality that also tells 1 from True and -0.0 from 0.0 correctly."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    return bool(a == b)


safe_ints = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
edge_ints = st.sampled_from(
    [0, -1, MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER + 1, -(2**53), 2**64, 10**30]
)
floats = st.floats(allow_nan=False, allow_infinity=False)
strings = st.text(st.characters(codec="utf-8"), max_size=12)
leaves = st.none() | st.booleans() | safe_ints | edge_ints | floats | strings
json_values = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(strings, children, max_size=4)
    ),
    max_leaves=20,
)

ALPHABET = b'{}[]",:0123456789eE+-. \t\n\\utfnrlsaNIy\x00\x7f\xc3\xa9\xed\xa0\x80\xff'


@st.composite
def mutated_json(draw: st.DrawFn) -> bytes:
    """JSON text of a generated value, then a few byte insertions/deletions/replacements."""
    data = bytearray(json.dumps(draw(json_values), ensure_ascii=draw(st.booleans())).encode())
    for _ in range(draw(st.integers(0, 4))):
        op = draw(st.sampled_from(["insert", "delete", "replace"]))
        at = draw(st.integers(0, len(data)))
        byte = draw(st.sampled_from(ALPHABET))
        if op == "insert":
            data.insert(at, byte)
        elif data and at < len(data):
            if op == "delete":
                del data[at]
            else:
                data[at] = byte
    return bytes(data)


def _differential(data: bytes) -> None:
    try:
        expected = _oracle(data)
        oracle_ok = True
    except _Reject:
        oracle_ok = False
    try:
        got = parse_strict(data, SMALL)
    except ParseError:
        assert not oracle_ok, f"refused what the rules accept: {data!r}"
        return
    assert oracle_ok, f"accepted what the rules refuse: {data!r}"
    assert _same(got, expected)
    _round_trip(got)


def _round_trip(value: Any) -> None:
    canonical = canonicalize(value)
    back = parse_strict(canonical)
    assert back == value
    assert canonicalize(back) == canonical
    assert require_canonical(canonical) == value


@FUZZ
@given(st.binary(max_size=300))
@example(b"\xef\xbb\xbf{}")
@example(b'"\\ud800"')
@example(b"[" * 2000)
@example(b"1" * 4000)
def test_any_bytes_only_parse_errors(data: bytes) -> None:
    try:
        value = parse_strict(data, SMALL)
    except ParseError:
        return
    _round_trip(value)


@FUZZ
@given(mutated_json())
@example(b'{"a":1,"\\u0061":2}')
@example(b"9007199254740993.0")
@example(b"1e21")
@example(b"-0.0")
@example(b'{"\\udbff\\udfff":"\\ud83d\\ude00"}')
@example(b" [] ")
@example(b"[]\x00")
def test_reader_matches_the_rules_on_mutated_json(data: bytes) -> None:
    _differential(data)


@st.composite
def objects_with_repeats(draw: st.DrawFn) -> bytes:
    """Object text assembled by hand so member names repeat (json.dumps never does)."""

    def obj(depth: int) -> str:
        names = draw(st.lists(st.sampled_from(["a", "b", "\\u0061", "\\ud83d\\ude00"]), max_size=4))
        members = []
        for name in names:
            nested = depth < 3 and draw(st.booleans())
            value = obj(depth + 1) if nested else json.dumps(draw(leaves))
            members.append(f'"{name}":{value}')
        return "{" + ",".join(members) + "}"

    return obj(0).encode()


@FUZZ
@given(objects_with_repeats())
def test_duplicate_names_anywhere_are_refused(data: bytes) -> None:
    _differential(data)


@FUZZ
@given(json_values, st.booleans(), st.sampled_from([None, 0, 1, 2]))
def test_generated_values_round_trip(value: Any, ascii_only: bool, indent: int | None) -> None:
    data = json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode()
    _differential(data)


@FUZZ
@given(st.integers(1, 300))
def test_depth_limit_is_exact(depth: int) -> None:
    data = b"[" * depth + b"]" * depth
    if depth <= DEPTH:
        assert parse_strict(data, SMALL) is not None
    else:
        with pytest.raises(ParseError, match="nesting too deep"):
            parse_strict(data, SMALL)


@FUZZ
@given(st.lists(st.characters(categories=["Cs"]), min_size=1, max_size=3), strings)
def test_lone_surrogate_escapes_are_refused(surrogates: list[str], text: str) -> None:
    # ensure_ascii spells each surrogate as its own \\uXXXX escape.
    lone = "".join(surrogates)
    data = json.dumps({"k": text + lone}, ensure_ascii=True).encode()
    value = json.loads(data)["k"]
    paired = value.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in paired):
        with pytest.raises(ParseError, match="lone surrogate"):
            parse_strict(data)
    else:  # the surrogates happened to form a valid pair
        parse_strict(data)


@FUZZ
@given(json_values.filter(lambda v: isinstance(v, dict | list)), st.data())
def test_other_spellings_are_not_canonical(value: Any, data: st.DataObject) -> None:
    try:
        canonical = canonicalize(parse_strict(json.dumps(value).encode()))
    except ParseError:
        return
    spelled = json.dumps(
        json.loads(canonical), indent=data.draw(st.sampled_from([None, 1])), sort_keys=False
    ).encode()
    spelled += data.draw(st.sampled_from([b"", b" ", b"\n"]))
    if spelled == canonical:
        return
    with pytest.raises(CanonicalFormError):
        require_canonical(spelled)


@FUZZ
@given(mutated_json())
def test_prepare_json_raises_only_ledger_errors(data: bytes) -> None:
    from ledger.store.prepared import prepare_json

    with contextlib.suppress(LedgerError):
        prepare_json(data)


def test_integer_beyond_python_digit_limit_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_strict(b"[" + b"7" * 4301 + b"]")
