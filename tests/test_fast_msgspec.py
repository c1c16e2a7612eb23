"""The ``msgspec`` fast paths of ``ledger.encoding._fast`` equal the reference exactly.

``parse_encode`` and ``canonical_value`` first try ``msgspec`` without per-member hooks
and establish the strict parser's facts from the bytes (``_long_integer`` for integers,
the ``:`` count for duplicate member names, a float hook for floats). Each fact gets
inputs built to break it: integers and digit runs inside and outside strings, ``\\u003a``
escapes, duplicate names at every depth, strings spelling numbers and colons, every
number edge; and the paths are shown to be the ones actually taken.
"""

from __future__ import annotations

import contextlib
import json
import re
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
from encoding_reference import assert_parse_encode
from encoding_reference import marked_values as _marked_values
from encoding_reference import reference as _reference
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.encoding import _fast, strict
from ledger.encoding.strict import Limits
from ledger.errors import LedgerError

JCS = Path(__file__).parent / "vectors" / "jcs"


@pytest.fixture(autouse=True)
def _msgspec_loaded() -> None:
    """These tests are about the msgspec paths: no warm-up (see test_warm_up)."""
    if not _fast._ready:
        _fast._load_msgspec()


def _same(data: bytes, limits: Limits = strict.DEFAULT_LIMITS) -> None:
    """``parse_encode`` and ``canonical_value`` of ``data`` against the reference."""
    shown, shown_value = _fast.canonical_value(data, limits)
    expected = assert_parse_encode(data, limits)
    if expected is None:
        assert not shown
        return
    assert shown == (expected[1] == data and _fast.canonical_value(data, limits)[0])
    if shown:
        assert expected[1] == data
        assert json.dumps(shown_value) == json.dumps(expected[0])


# -- the encoder writes json's bytes ----------------------------------------------------------


def test_every_code_point_escaped_as_json_does() -> None:
    """Each character alone and all of them in one array: the same bytes as ``json``;
    lone surrogates are refused by both."""
    chars = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    assert _fast._MSGSPEC.encode(chars) == _fast._ENCODER.encode(chars).encode("utf-8")
    for ch in chars[:0x3000]:
        assert _fast._MSGSPEC.encode(ch) == _fast._ENCODER.encode(ch).encode("utf-8")
    for c in (0xD800, 0xDBFF, 0xDC00, 0xDFFF):
        with pytest.raises(UnicodeEncodeError):
            _fast._MSGSPEC.encode(chr(c))
        with pytest.raises(UnicodeEncodeError):
            _fast._ENCODER.encode(chr(c)).encode("utf-8")


_bmp_text = st.text(
    alphabet=st.characters(max_codepoint=0xFFFF, exclude_categories=["Cs"]), max_size=6
)
_plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | _bmp_text,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_bmp_text, kids, max_size=5),
    max_leaves=25,
)


@settings(max_examples=300, deadline=None)
@given(_plain)
def test_member_order_and_scalars_as_json(value: Any) -> None:
    assert _fast._MSGSPEC.encode(value) == _fast._ENCODER.encode(value).encode("utf-8")


def _double(hex_ieee: str) -> float:
    return float(struct.unpack(">d", bytes.fromhex(hex_ieee.rjust(16, "0")))[0])


def test_float_hook_admits_only_json_spellings() -> None:
    """The hook admits a float iff its ``msgspec`` text is its ``repr`` without an
    exponent, within the safe range; the documents give the reference's results."""
    lines = (JCS / "numbers" / "es6testfile_first10000.txt").read_text().splitlines()
    numbers = _fast._Numbers()
    admitted = 0
    for line in lines:
        value = _double(line.split(",")[0])
        text = repr(value)
        try:
            numbers._fast_float(text)
        except _fast._Unsure:
            assert (
                "e" in text
                or not abs(value) <= strict.MAX_SAFE_INTEGER
                or _fast._MSGSPEC.encode(value) != text.encode()
            )
            continue
        admitted += 1
        assert _fast._MSGSPEC.encode(value) == text.encode() == json.dumps(value).encode()
    assert admitted > 100
    for line in lines[:300]:
        value = _double(line.split(",")[0])
        if value == value and abs(value) != float("inf"):
            _same(json.dumps({"n": value, "m": [value, 1]}).encode())


# -- integers: the digit-run test --------------------------------------------------------------

_LONG = re.compile(rb"(?:^|(?<=[\[,:\- \t\n\r]))[0-9]{16}")


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='0123456789.-eaf "[,:]{}\\\t\n\r', max_size=60).map(str.encode))
def test_long_integer_equals_its_regex(data: bytes) -> None:
    """16 digits at the start or after a byte that may precede an integer -- exactly."""
    assert _fast._long_integer(data) == bool(_LONG.search(data))


@pytest.mark.parametrize(
    "data",
    [
        b"9007199254740991",
        b"9007199254740992",
        b"-9007199254740992",
        b"[1000000000000000]",  # 16 digits, in range: the json path decides
        b"[999999999999999]",
        b"[-999999999999999, 0.1234567890123456789]",  # long fraction: not an integer
        b'{"a": 12345678901234567890}',
        b'{"a": "12345678901234567890"}',  # in a string
        b'{"12345678901234567890": 1}',
        b'{"a": "x.12345678901234567890", "b": 123456789012345678}',
        b'["0.1234567890123456789", 98765432109876543210]',
        b"[1234567890123456.5]",
        b"[0.12345678901234567890123]",
        b"[1.5e12345678901234567]",
        b"[1e16, 1e15, 100000000000000000000.0]",
        b"123456789012345678901234567890",
        b"[" + b"9" * 5000 + b"]",
    ],
)
def test_digit_runs_inside_and_outside_strings(data: bytes) -> None:
    _same(data)


# -- duplicate names: the colon count -----------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1,"a":2}',
        b'{"a":1,"a":2,"\\u003a":3}',  # the escaped colon would hide the duplicate
        b'{"a":1,"a":2,"\\u003A":3}',
        b'{"a":1,"a":2,"b":"\\u003a"}',
        b'{"a:":1,"a\\u003a":2}',  # the same name, spelled two ways
        b'{"a":"x:y","a":"z"}',
        b'{"a":"z","a":"x:y"}',
        b'{"a":{"b":1,"b":{"c:":2}}}',
        b'[{"a":1},{"a":1,"a":1}]',
        b'{"k":[[{"x":1,"y":2,"x":3}]]}',
        b'{"\\u0061":1,"a":2}',
        b'{"a":1,"b":":","c":"::"}',
        b'{"a\\u003ab":1}',
        b'{"a\\\\u003ab":1}',
        b'{":":":"}',
    ],
)
def test_duplicate_names_and_colons(data: bytes) -> None:
    _same(data)


_names = st.sampled_from(["a", "b", ":", "a:", "\\u003a", "\\u0061", "1", "1.0", "x"])
_leaves = st.sampled_from(
    ["1", "1.0", "-0.0", "0.5", '":"', '"1.0"', '"1e5"', '"::"', "null", "true", '"\\u003a"']
)


@st.composite
def _documents(draw: st.DrawFn, depth: int = 0) -> str:
    """JSON text with names drawn from a small set (so they repeat) at every depth."""
    if depth >= 4 or draw(st.integers(0, 3)) == 0:
        return draw(_leaves)
    if draw(st.booleans()):
        items = draw(st.lists(_documents(depth + 1), max_size=4))
        return "[" + ",".join(items) + "]"
    members = draw(
        st.lists(st.tuples(_names, _documents(depth + 1)), max_size=4)  # type: ignore[arg-type]
    )
    return "{" + ",".join(f'"{k}":{v}' for k, v in members) + "}"


@settings(max_examples=600, deadline=None)
@given(_documents(), st.sampled_from(["", " ", "\n"]))
def test_generated_documents_with_repeated_names(text: str, pad: str) -> None:
    _same((pad + text + pad).encode())
    _same(text.encode(), Limits(max_depth=3))


# -- numbers and other edges ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        b"[0.0001, 0.00001, 9.891170751941125e-05, 0.00009891170751941125]",
        b"[1e16, 1e+16, 10000000000000000.0, 1e15, 1000000000000000.0]",
        b"[1E2, 1.5e1, 1.25E-1, 2e0, -0.0, -0, 0, 0.0]",
        b"[9007199254740991.0, 9007199254740992.0, 4503599627370496.5]",
        b"[1e400, -1e400]",
        b"[5e-324, 1.7976931348623157e308]",
        b"[0.1, 0.2, 0.30000000000000004, 123.456, -2.5]",
        b'{"a": "1.0", "b": "1e5", "c": 1.0}',
        b"1.0",
        b"0.5",
        b"-0.0",
        b'"\\u00000\\u0000"',
        b'{"a": 1.0, "b": "\\u00000\\u0000"}',
        b'{"a": [1.0, 2.0, 1.0], "b": {"c": 2.0}}',
        b'["\\ud800"]',
        b'["\\ud83d\\ude00", {"\\ud83d\\ude00": 1, "\\ue000": 2}]',
        b'{"\xf0\x9f\x98\x80": 1, "\xee\x80\x80": 2.0}',
        b'"\xed\xa0\x80"',
        b'"\xf4\x90\x80\x80"',
        b"\xef\xbb\xbf{}",
        b"[1] x",
        b"[1]\x0c",
        b"\x0c[1]",
        b'"a\x01b"',
        b'"\x7f"',
        b"[1,]",
        b"[NaN, Infinity]",
        b"[01]",
        b"[" * 129 + b"]" * 129,
        b"[" * 2000 + b"]" * 2000,
        b'"a\tb"',
        b'["\\a"]',
        b'["\\/"]',
        b"[-01]",
        b"[+1]",
        b"[1.5E]",
        b"[0.1e1, 100e-2, 1.0e5, 1E+2, 1e-2]",
        b'["\\udc00\\ud800"]',
        b'["\\ud800\\u0041"]',
        b'["\\ude00"]',
        b'["\\uD83D\\uDE00"]',
        b'["\xc2\xa0"]',
        b"\xc2\xa0[]",
        b'{"a":1,}',
        b'{"a" 1}',
        b"[1 2]",
        b"[1]]",
        b"[1.7976931348623157e309, 2.2250738585072014e-308]",
        b"[123456789012345.5]",
        b'"\xe2\x80\xa8"',
        b'{"\xef\xbf\xbf": 1, "\xee\x80\x80": 2}',
    ],
)
def test_number_and_text_edges(data: bytes) -> None:
    _same(data)
    _same(data, Limits(max_bytes=30, max_depth=2))


_numbers = (
    st.integers(min_value=-(2**54), max_value=2**54)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1.0, 1e-4, 9.9e-5, 1e15, 1e16, 2.0**53, 1e21, 0.1])
)
_spelled = st.sampled_from(["1.0", "12345678901234567", ":", "a:b", "\u2028", "\x7f", "\x00"])
_values = st.recursive(
    _numbers | st.text(max_size=5) | _spelled | st.booleans() | st.none(),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(st.text(max_size=3) | _spelled, kids, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=500, deadline=None)
@given(_values, st.sampled_from([None, 1]), st.booleans())
def test_generated_values(value: Any, indent: int | None, ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    data = text.encode("utf-8", "surrogatepass")
    _same(data)
    try:
        canonical = strict.reference_canonical_bytes(value)
    except LedgerError:
        return
    _same(canonical)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_arbitrary_bytes(data: bytes) -> None:
    _same(data)


# -- the fast paths are the ones taken ---------------------------------------------------------


def _refuse(*_args: Any) -> Any:
    raise AssertionError("a slower path was taken")


def test_msgspec_path_taken_for_ordinary_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [json.dumps(d).encode() for d in bench_corpus.corpus(180, 11)]
    expected = [_reference(d, strict.DEFAULT_LIMITS) for d in docs]
    canonical = [e[1] for e in expected]
    monkeypatch.setattr(_fast, "_parse_encode_json", _refuse)
    monkeypatch.setattr(_fast, "_reference", _refuse)
    monkeypatch.setattr(_fast, "reference_canonical_bytes", _refuse)
    monkeypatch.setattr(_fast, "_canonical_value_json", _refuse)
    for data, want in zip(docs, expected, strict=True):
        got = _fast.parse_encode(data)
        assert (got.canonical, got.legacy, got.float_hints) == (want[1], want[2], want[3])
    assert sum(1 for e in expected if e[3]) > 50  # documents with integral floats
    for data in canonical:
        assert _fast.canonical_value(data)[0]


def test_msgspec_encodes_per_document(monkeypatch: pytest.MonkeyPatch) -> None:
    """One encode gives both byte forms without integral floats, two with them."""
    encodes: list[Any] = []
    real = _fast._MSGSPEC

    class Counting:
        def encode(self, value: Any) -> bytes:
            if type(value) is not float:  # the float hook's own check
                encodes.append(value)
            return real.encode(value)

    monkeypatch.setattr(_fast, "_MSGSPEC", Counting())
    monkeypatch.setattr(_fast, "_parse_encode_json", _refuse)
    plain = _fast.parse_encode(b'{"a": [0.5, 2.5, -3], "c": "x\\u0000:"}')
    assert len(encodes) == 1 and plain.canonical is plain.legacy
    encodes.clear()
    got = _fast.parse_encode(b'{"a": [1.0, 2.5, -0.0, {"b": 1.0}], "c": "x\\u0000:"}')
    assert len(encodes) == 2
    assert got.canonical == b'{"a":[1,2.5,0,{"b":1}],"c":"x\\u0000:"}'
    assert got.legacy == b'{"a":[1.0,2.5,-0.0,{"b":1.0}],"c":"x\\u0000:"}'
    assert got.float_hints == [["a", 0, "1.0"], ["a", 2, "-0.0"], ["a", 3, "b", "1.0"]]


@pytest.mark.parametrize(
    "data",
    [
        b'{"a":1,"a":2}',  # duplicate: the colon count differs
        b'{"a\\u003a":1}',  # a colon escape
        b"[12345678901234567]",  # a long integer
        b"[1e-7]",  # an exponent-form float
        b"[1e16]",  # msgspec writes 1e16, json 1e+16
        b"[0.00001]",  # msgspec writes 0.00001, json 1e-05
    ],
)
def test_msgspec_path_declines(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    calls: list[bytes] = []
    original = _fast._parse_encode_json

    def counting(raw: bytes, numbers: Any) -> Any:
        calls.append(raw)
        return original(raw, numbers)

    monkeypatch.setattr(_fast, "_parse_encode_json", counting)
    with contextlib.suppress(LedgerError):
        _fast.parse_encode(data)
    assert calls == [data]


# -- integral floats where they were in a recent document ----------------------------------------

_floaty = st.recursive(
    st.sampled_from([1.0, -0.0, 2.0, 0.5, 7, "1.0", None]),
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from("abc0"), kids, max_size=4)
    ),
    max_leaves=16,
)


def _reversed(node: Any) -> Any:
    """The same value with every object's members in reverse order."""
    if type(node) is dict:
        return {k: _reversed(node[k]) for k in reversed(node)}
    if type(node) is list:
        return [_reversed(v) for v in node]
    return node


def _paths(value: Any) -> tuple[tuple[Any, ...], ...]:
    hints: list[list[Any]] = []
    _fast._jcs_floats(value, [], hints, {})
    return tuple(tuple(h[:-1]) for h in hints)


@settings(max_examples=500, deadline=None)
@given(_floaty, _floaty)
def test_known_paths_equal_the_walk(value: Any, other: Any) -> None:
    """``_fix_known`` gives the walk's value (integral floats as integers) and hints, or
    None; with the paths of the same value (in any member order) it never gives None."""
    if type(value) is not dict and type(value) is not list:
        return
    before = json.dumps(value)
    hints: list[list[Any]] = []
    fixed = _fast._jcs_floats(value, [], hints)
    for candidate in (other, value, _reversed(value)):
        if type(candidate) is not dict and type(candidate) is not list:
            continue
        got = _fast._fix_known(value, len(hints), [_paths(candidate)])
        if candidate is not other and hints:
            assert got is not None
        if got is not None:
            assert json.dumps(got[0]) == json.dumps(fixed)
            assert got[1] == hints
        assert json.dumps(value) == before  # copy on write


def test_known_paths_follow_member_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same shape with members in another order: hints in the new order, and the
    walk is not needed (the paths are remembered)."""
    first = b'{"r": {"a": 1.0, "b": 2.0}, "s": [0.5, 3.0]}'
    second = b'{"s": [0.5, 4.0], "r": {"b": 1.0, "a": -0.0}}'
    _same(first)
    monkeypatch.setattr(_fast, "_jcs_floats", _refuse)
    got = _fast.parse_encode(second)
    assert got.float_hints == [["s", 1, "4.0"], ["r", "b", "1.0"], ["r", "a", "-0.0"]]
    assert got.canonical == b'{"r":{"a":0,"b":1},"s":[0.5,4]}'
    assert got.legacy == b'{"r":{"a":-0.0,"b":1.0},"s":[0.5,4.0]}'
    monkeypatch.undo()
    _same(second)
    # Another float where one was: the count differs, the walk decides.
    _same(b'{"s": [0.5, 4.0], "r": {"b": 1.0, "a": -0.0, "c": 5.0}}')
    _same(b'{"s": [0.5, 4.5], "r": {"b": 1.0, "a": -0.0}, "t": 1.0}')


@settings(max_examples=500, deadline=None)
@given(_marked_values)
def test_msgspec_encode_equals_json_encodes(value: Any) -> None:
    """The msgspec path's bytes and hints are ``_encode_twice``'s (``json``), also
    with strings that spell ``_encode``'s markers."""
    data = json.dumps(value).encode()
    numbers = _fast._Numbers()
    try:
        decoded = numbers.fast_decoder().decode(data)
        got = _fast._encode_msgspec(decoded, numbers)
    except _fast._Unsure:
        return
    assert got == _fast._encode_twice(decoded, numbers.floats)
    _same(data)


_WARM_UP_SCRIPT = """
import json, sys
import bench_corpus
from ledger.encoding import _fast, strict
docs = [json.dumps(d).encode() for d in bench_corpus.corpus(60, 3)]
seen = []
for data in docs:
    got = _fast.parse_encode(data)
    value = strict.parse_strict(data)
    assert got.canonical == strict.reference_canonical_bytes(value)
    assert got.legacy == strict.legacy_bytes(value)
    assert _fast.canonical_value(got.canonical)[0]
    seen.append("msgspec" in sys.modules)
print(json.dumps([seen.index(True), _fast._WARM_UP]))
"""


def test_warm_up() -> None:
    """A process imports msgspec only after ``_WARM_UP`` documents (two calls each
    here), with the same results before and after."""
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-c", _WARM_UP_SCRIPT],
        capture_output=True,
        text=True,
        check=True,
        cwd=root,
        env={"PYTHONPATH": f"{root}:{root / 'scripts'}", "PATH": ""},
    ).stdout
    first, warm_up = json.loads(out)
    assert first == warm_up // 2
