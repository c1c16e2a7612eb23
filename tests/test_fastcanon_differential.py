"""ledger.encoding._fast must give byte-identical results (and identical errors) to the reference.

Reference = ``ledger.encoding.strict`` (``parse_strict``, ``reference_canonical_bytes``
through ``rfc8785``, ``legacy_bytes``, ``reference_float_hints``).
Checked on the RFC 8785 vectors, the ES6 number vectors, the upstream corpus, generated
documents, and hypothesis values; and the fast path must really be the one taken.
"""

from __future__ import annotations

import json
import math
import re
import struct
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
import rfc8785
from encoding_reference import assert_parse_encode, reference
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.encoding import _fast as fastcanon
from ledger.encoding import strict
from ledger.encoding.digest import legacy_digest, sha256_digest
from ledger.encoding.strict import Limits, legacy_bytes, parse_strict
from ledger.encoding.strict import reference_float_hints as float_hints
from ledger.errors import CanonicalFormError, LedgerError
from ledger.schema.kinds import detect_kind, schema_version_of
from ledger.store.prepared import Prepared, prepare_json

JCS = Path(__file__).parent / "vectors" / "jcs"


def _double(hex_ieee: str) -> float:
    return float(struct.unpack(">d", bytes.fromhex(hex_ieee.rjust(16, "0")))[0])


def _reference_encoded(data: bytes, limits: Limits = strict.DEFAULT_LIMITS) -> Any:
    return reference(data, limits)[:3]


def _assert_same(data: bytes, limits: Limits = strict.DEFAULT_LIMITS) -> None:
    """parse_encode(data) == reference (``assert_parse_encode``), or both raise the same
    error type and message; ``canonical_value`` shows only canonical bytes, with their
    value; ``canonicalize`` of the value gives the RFC 8785 bytes."""
    shown, shown_value = fastcanon.canonical_value(data, limits)
    expected = assert_parse_encode(data, limits)
    if expected is None:
        assert not shown
        return
    if shown:  # only ever for bytes that are their own canonical form
        assert expected[1] == data
        assert json.dumps(shown_value) == json.dumps(expected[0])
    assert fastcanon.canonicalize(expected[0]) == expected[1]


# -- vectors ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(p.stem for p in (JCS / "input").glob("*.json")))
def test_jcs_vectors(name: str) -> None:
    data = (JCS / "input" / f"{name}.json").read_bytes()
    expected = (JCS / "output" / f"{name}.json").read_bytes()
    assert fastcanon.parse_encode(data).canonical == expected
    assert fastcanon.canonicalize(parse_strict(data)) == expected
    assert fastcanon.is_canonical(expected)
    _assert_same(data)


def test_es6_table_vectors() -> None:
    table = json.loads((JCS / "numbers" / "es6_float_vectors_rfc8785py.json").read_text())
    for row in table["vectors"]:
        value = _double(row["hex_ieee"])
        if row["expected"] is None:
            with pytest.raises(CanonicalFormError):
                fastcanon.canonicalize(value)
        else:
            assert fastcanon.canonicalize(value).decode() == row["expected"], row
            assert fastcanon.canonicalize([value, {"k": value}]) == rfc8785.dumps(
                [value, {"k": value}]
            )


def test_es6_ten_thousand_numbers() -> None:
    lines = (JCS / "numbers" / "es6testfile_first10000.txt").read_text().splitlines()
    values = []
    for line in lines:
        hex_ieee, expected = line.split(",")
        value = _double(hex_ieee)
        assert fastcanon.canonicalize(value).decode() == expected, line
        values.append(value)
    # In documents too: the fast path handles some, the fallback the rest, same bytes.
    assert fastcanon.canonicalize(values) == rfc8785.dumps(values)
    for value in values[:400]:
        text = json.dumps({"n": value, "m": [value, 1]}).encode()
        if math.isfinite(value) and not (value.is_integer() and 2**53 <= abs(value) < 1e21):
            _assert_same(text)


@pytest.mark.parametrize(
    "number",
    [0.0, -0.0, 1.0, -1.0, 0.5, 1e-4, 9.999999999999999e-05, 1.5e-4, 1e-5, 1e-7, 0.1,
     123.456, 2.0**52 + 0.5, 2.0**53 - 1, -(2.0**53 - 1), 1e16 + 2, 1e15, 1e21, 1e22,
     5e-324, 1.7976931348623157e308],
)  # fmt: skip
def test_float_boundaries(number: float) -> None:
    assert fastcanon.canonicalize(number) == rfc8785.dumps(number)
    assert fastcanon.canonicalize({"a": [number]}) == rfc8785.dumps({"a": [number]})


def test_every_bmp_escape_boundary() -> None:
    chars = [chr(c) for c in range(0x100)] + [
        "\u2028", "\u2029", "\ufeff", "\ue000", "\uffff", "\ufffe", "\u00e9", "\u20ac",
    ]  # fmt: skip
    for ch in chars:
        value = {ch: ch, "k" + ch: [ch * 3]}
        assert fastcanon.canonicalize(value) == rfc8785.dumps(value), repr(ch)
        _assert_same(json.dumps(value, ensure_ascii=True).encode())
        _assert_same(json.dumps(value, ensure_ascii=False).encode())


def test_key_order_outside_bmp_matches_rfc8785() -> None:
    # U+10000 sorts after U+FFFF by code point but before U+E000 in UTF-16.
    inner: dict[str, Any] = {"\ufb01": 1, "\U0001d11e": 2}
    value: dict[str, Any] = {"\U00010000": 1, "\ue000": 2, "\uffff": 3, "a": 4, "\U0001f600": inner}
    assert fastcanon.canonicalize(value) == rfc8785.dumps(value)
    _assert_same(json.dumps(value).encode())
    assert fastcanon.parse_encode(json.dumps(value).encode()).legacy == legacy_bytes(value)


# -- the fast path is really used, and really falls back -----------------------------------


def test_fast_path_taken_for_ordinary_documents(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_value: Any) -> bytes:
        raise AssertionError("reference canonicalizer called")

    data = json.dumps({"b": [1, 0.5, 2.0, -0.0, "x\n\u00e9"], "a": {"z": None, "y": True}}).encode()
    expected = _reference_encoded(data)
    monkeypatch.setattr(fastcanon, "reference_canonical_bytes", refuse)
    got = fastcanon.parse_encode(data)
    assert (got.value, got.canonical, got.legacy) == expected
    assert got.float_hints == [["b", 2, "2.0"], ["b", 3, "-0.0"]]
    assert fastcanon.canonicalize(expected[0]) == expected[1]


@pytest.mark.parametrize(
    "value",
    [{"\U0001f600": 1}, [1e-7], {"a": 1e21}, (1, 2), {1: 2}, [True, 2**60]],
)
def test_fallback_used_when_unsure(monkeypatch: pytest.MonkeyPatch, value: Any) -> None:
    calls: list[Any] = []
    original = strict.reference_canonical_bytes

    def counting(v: Any) -> bytes:
        calls.append(v)
        return original(v)

    monkeypatch.setattr(fastcanon, "reference_canonical_bytes", counting)
    try:
        expected = rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError):
        with pytest.raises(CanonicalFormError):
            fastcanon.canonicalize(value)
    else:
        assert fastcanon.canonicalize(value) == expected
    assert calls


# -- errors are the reference's errors ------------------------------------------------------

BAD_INPUTS = [
    b"",
    b"   ",
    b"\xef\xbb\xbf{}",
    b'{"a":1,"a":2}',
    b'{"a":{"b":1,"b":1}}',
    b"[NaN]",
    b'{"x": Infinity}',
    b"[-Infinity]",
    b"[9007199254740992]",
    b"[-9007199254740992]",
    b"[1e400]",
    b"[9007199254740993.0]",
    b'["\\ud800"]',
    b'{"\\udc00":1}',
    b"{} x",
    b"[1,]",
    b"\xff\xfe",
    b'"\xc3\x28"',
    b"[" * 200 + b"]" * 200,
    b"[" * 5000 + b"]" * 5000,
    b'{"a":[1,2,{"b":"' + b"x" * 64 + b'"}]}',
    b"123",
    b'"text"',
    b"1.5",
    b"null",
    b"\t\r\n [1]\n\r\t ",
    b"[1e21, -0.0, 1.0]",
]


@pytest.mark.parametrize("data", BAD_INPUTS)
def test_same_errors_and_values(data: bytes) -> None:
    _assert_same(data)
    _assert_same(data, Limits(max_bytes=40, max_depth=3))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=40))
def test_arbitrary_bytes(data: bytes) -> None:
    _assert_same(data)


# -- generated values --------------------------------------------------------------------

_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not (f.is_integer() and 2**53 <= abs(f) < 1e21)
)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
    | _floats
    | st.text()
    | st.sampled_from([0.0, -0.0, 1.0, 2.5, 1e-4, 1e16, "\u2028", "\U0001f600", "\x00\x1f\x7f"])
)
_keys = st.text(max_size=6) | st.sampled_from(["\ue000", "\U00010000", "\uffff", "a", "\x7f"])
json_values = st.recursive(
    _scalars,
    lambda kids: st.lists(kids, max_size=5) | st.dictionaries(_keys, kids, max_size=5),
    max_leaves=30,
)


def _surrogate_free(value: Any) -> bool:
    text = json.dumps(value, ensure_ascii=False)
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in text)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonicalize_matches_rfc8785(value: Any) -> None:
    try:
        expected = rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, ValueError, TypeError):
        with pytest.raises(CanonicalFormError):
            fastcanon.canonicalize(value)
        return
    assert fastcanon.canonicalize(value) == expected


@settings(max_examples=300, deadline=None)
@given(json_values, st.booleans(), st.sampled_from([None, 2]))
def test_parse_encode_matches_reference(value: Any, ascii_only: bool, indent: int | None) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only, indent=indent)
    data = text.encode("utf-8", "surrogatepass")
    _assert_same(data)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_canonical_value_on_canonical_bytes(value: Any) -> None:
    try:
        data = rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, ValueError, TypeError):
        return
    _assert_same(data)
    _assert_same(data, Limits(max_bytes=60, max_depth=2))
    text = data.decode("utf-8")
    try:
        parse_strict(data)
    except LedgerError:
        return  # e.g. an integral double beyond the safe integers
    plain = "." not in text and "e" not in text.replace("true", "").replace("false", "")
    if plain and not _NON_BMP_CHAR.search(text):
        # No number with a fraction or exponent, nothing above U+FFFF: shown fast.
        assert fastcanon.canonical_value(data) == (True, json.loads(data))


_NON_BMP_CHAR = re.compile("[\U00010000-\U0010ffff]")


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_float_hints_match(value: Any) -> None:
    assert fastcanon.float_hints(value) == float_hints(value)


# -- whole documents: prepare_json equals the pre-fastcanon pipeline -------------------------


def _reference_prepare(raw: bytes) -> Prepared:
    """What prepare_json computed before ledger.encoding._fast existed."""
    from ledger.schema import validation as schema

    value = parse_strict(raw)
    spec = detect_kind(value)
    version = schema_version_of(spec, value)
    schema.validator(spec.name, version).validate(value)
    data = bytes(rfc8785.dumps(value))
    hints = float_hints(value)
    return Prepared(
        digest=sha256_digest(data),
        kind=spec.name,
        data=data,
        schema_version=version,
        object_id=spec.object_id(value),
        object_version=spec.object_version(value),
        legacy_digest=None if spec.native else legacy_digest(value),
        legacy_hints=None if spec.native or not hints else rfc8785.dumps(hints).decode(),
        refs=tuple(spec.refs(value)),
    )


def _documents(corpus_dir: Path | None) -> list[bytes]:
    docs = [json.dumps(d).encode() for d in bench_corpus.corpus(180, 11)]
    if corpus_dir is not None:
        for path in sorted(corpus_dir.rglob("*.json")):
            if "schemas" not in path.parts:
                docs.append(path.read_bytes())
    return docs


def test_prepare_json_equals_reference_pipeline(corpus: Path) -> None:
    compared = 0
    for raw in _documents(corpus):
        try:
            expected = _reference_prepare(raw)
        except Exception:
            with pytest.raises(LedgerError):
                prepare_json(raw)
            continue
        assert prepare_json(raw) == expected
        compared += 1
    assert compared > 150


@pytest.mark.parametrize(
    ("data", "limit", "shown"),
    [
        (b"[" + b",".join([b"[]"] * 200) + b"]", 128, True),  # many containers, 2 deep
        (b"[" * 128 + b"]" * 128, 128, True),
        (b"[" * 129 + b"]" * 129, 128, False),
        (b'[{"":[]}]', 2, False),
        (b'[{"":[]}]', 3, True),
        (b'[{"[[[":"]]]{"}]', 2, True),  # brackets inside strings do not nest
    ],
)
def test_canonical_value_depth(data: bytes, limit: int, shown: bool) -> None:
    limits = Limits(max_depth=limit)
    assert fastcanon.canonical_value(data, limits)[0] is shown
    _assert_same(data, limits)
