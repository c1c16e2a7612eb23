"""Strict parsing: each malformed input has its own error type and names the path."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger import errors
from ledger.encoding.canonical import Limits, parse_strict

CASES = [
    (b'{"tasks":[{},{},{"id":1,"id":2}]}', errors.DuplicateKeyError, "$.tasks[2].id"),
    (b'{"a":{"b":NaN}}', errors.NonFiniteNumberError, "$.a.b"),
    (b"[Infinity]", errors.NonFiniteNumberError, "$[0]"),
    (b'{"x":-Infinity}', errors.NonFiniteNumberError, "$.x"),
    (b'{"big":1e400}', errors.NonFiniteNumberError, "$.big"),
    (b'{"n":9007199254740992}', errors.IntegerRangeError, "$.n"),
    (b'{"n":-9007199254740992}', errors.IntegerRangeError, "$.n"),
    (b'{"s":"\\ud800"}', errors.LoneSurrogateError, "$.s"),
    (b'{"\\udc00":1}', errors.LoneSurrogateError, '$["\\udc00"]'),
    (b'{"a":"\xff"}', errors.InvalidUtf8Error, "offset 6"),
    (b"\xef\xbb\xbf{}", errors.InvalidUtf8Error, "byte order mark"),
    (b"{} {}", errors.TrailingDataError, "trailing"),
    (b'{"a":1}x', errors.TrailingDataError, "trailing"),
    (b'{"a":', errors.ParseError, "line 1"),
    (b"", errors.ParseError, "malformed"),
    (b"{'a':1}", errors.ParseError, "malformed"),
    (b'{"a":"tab\there"}', errors.ParseError, "malformed"),
    (b"[" * 200 + b"]" * 200, errors.NestingDepthError, "nesting"),
    (b"[" * 100000 + b"]" * 100000, errors.NestingDepthError, "nesting"),
]


@pytest.mark.parametrize(("data", "error", "where"), CASES)
def test_rejections(data: bytes, error: type[Exception], where: str) -> None:
    with pytest.raises(error) as info:
        parse_strict(data)
    message = str(info.value)
    assert where in message
    assert "\n" not in message


def test_safe_integer_edges_accepted() -> None:
    assert parse_strict(b"[9007199254740991,-9007199254740991]") == [2**53 - 1, -(2**53 - 1)]


def test_paired_surrogates_accepted() -> None:
    assert parse_strict(b'"\\ud83d\\ude00"') == "\U0001f600"


def test_size_limit_configurable() -> None:
    with pytest.raises(errors.DocumentTooLargeError):
        parse_strict(b'"' + b"a" * 100 + b'"', Limits(max_bytes=50))
    assert parse_strict(b'"ab"', Limits(max_bytes=50)) == "ab"


def test_depth_limit_configurable() -> None:
    parse_strict(b"[[[]]]", Limits(max_depth=3))
    with pytest.raises(errors.NestingDepthError):
        parse_strict(b"[[[[]]]]", Limits(max_depth=3))


@settings(max_examples=500)
@given(st.binary(max_size=200))
def test_random_bytes_only_raise_parse_errors(data: bytes) -> None:
    with contextlib.suppress(errors.ParseError):
        parse_strict(data)
