"""RFC 8785 vectors and properties of the canonical form and digests."""

from __future__ import annotations

import hashlib
import json
import math
import struct
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.encoding.canonical import canonicalize, parse_strict, require_canonical
from ledger.encoding.digest import canonical_digest, legacy_digest, sha256_digest
from ledger.errors import CanonicalFormError, IntegerRangeError

JCS = Path(__file__).parent / "vectors" / "jcs"
NAMES = sorted(p.stem for p in (JCS / "input").glob("*.json"))


def test_six_vectors_present() -> None:
    assert NAMES == ["arrays", "french", "structures", "unicode", "values", "weird"]


@pytest.mark.parametrize("name", NAMES)
def test_jcs_vector_bytes(name: str) -> None:
    value = parse_strict((JCS / "input" / f"{name}.json").read_bytes())
    expected = (JCS / "output" / f"{name}.json").read_bytes()
    assert canonicalize(value) == expected
    hex_text = (JCS / "outhex" / f"{name}.txt").read_text().split()
    assert canonicalize(value) == bytes(int(h, 16) for h in hex_text)
    assert require_canonical(expected) == value


def _double(hex_ieee: str) -> float:
    return float(struct.unpack(">d", bytes.fromhex(hex_ieee.rjust(16, "0")))[0])


def test_es6_table_vectors() -> None:
    table = json.loads((JCS / "numbers" / "es6_float_vectors_rfc8785py.json").read_text())
    assert len(table["vectors"]) == 26
    for row in table["vectors"]:
        value = _double(row["hex_ieee"])
        if row["expected"] is None:
            with pytest.raises(CanonicalFormError):
                canonicalize(value)
        else:
            assert canonicalize(value).decode() == row["expected"], row


def test_es6_ten_thousand_numbers() -> None:
    lines = (JCS / "numbers" / "es6testfile_first10000.txt").read_text().splitlines()
    assert len(lines) == 10000
    for line in lines:
        hex_ieee, expected = line.split(",")
        value = _double(hex_ieee)
        assert canonicalize(value).decode() == expected, line


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**53 - 1), max_value=2**53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda f: not (f.is_integer() and 2**53 <= abs(f) < 1e21)
    )
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    # -0.0 canonicalizes to 0; integral floats come back as ints: compare numerically.
    if isinstance(a, float) or isinstance(b, float):
        return (
            isinstance(a, int | float) and isinstance(b, int | float) and math.isclose(a, b)
        ) or a == b
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b) and type(a) is type(b)


@settings(max_examples=300)
@given(json_values)
def test_roundtrip_and_idempotence(value: Any) -> None:
    data = canonicalize(value)
    again = parse_strict(data)
    assert _same(value, again)
    assert canonicalize(again) == data
    assert require_canonical(data) == again


@settings(max_examples=200)
@given(json_values)
def test_digest_is_sha256_of_canonical(value: Any) -> None:
    data = canonicalize(value)
    assert canonical_digest(value) == "sha256:" + hashlib.sha256(data).hexdigest()
    assert sha256_digest(data) == canonical_digest(value)


def test_legacy_digest_agrees_without_floats() -> None:
    doc = {"b": [1, "é", {"z": None}], "a": True}
    assert legacy_digest(doc) == canonical_digest(doc)


def test_legacy_digest_differs_on_floats() -> None:
    doc = {"cpu": 1.0}
    assert canonicalize(doc) == b'{"cpu":1}'
    assert legacy_digest(doc) == sha256_digest(b'{"cpu":1.0}')
    assert legacy_digest(doc) != canonical_digest(doc)


def test_legacy_digest_differs_on_astral_key_order() -> None:
    # U+1F600 sorts after U+FB01 by code point but before it by UTF-16 code unit.
    doc = {"\U0001f600": 1, "\ufb01": 2}
    assert canonicalize(doc).decode().index("\U0001f600") < canonicalize(doc).decode().index(
        "\ufb01"
    )
    assert legacy_digest(doc) != canonical_digest(doc)


def test_integral_doubles_beyond_safe_range_refused() -> None:
    # 1e20 would canonicalize to the integer 100000000000000000000: refused up front.
    with pytest.raises(IntegerRangeError):
        parse_strict(b"[1e20]")
    assert parse_strict(b"[1e21]") == [1e21]
    assert canonicalize(1e21) == b"1e+21"


def test_require_canonical_refuses_other_spellings() -> None:
    with pytest.raises(CanonicalFormError):
        require_canonical(b'{"b":1, "a":2}')
