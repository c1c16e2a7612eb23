"""Nesting deeper than the limit is refused by a pre-scan, before the parser, early.

The attack: a 16 MiB ``append`` of ``[[[[...`` took 19 s and a 60 MB bundle 84 s of CPU
before the refusal (the old depth check peeled one level per pass over the whole input).
``ledger.encoding.strict.nesting_exceeds`` stops at the first segment that passes the
limit. Its verdict is the parser's: on every document the parser accepts without a depth
limit, the pre-scan says "too deep" exactly when the parser (``strict._parse``, which
checks depth on the decoded value) refuses the nesting; and whatever the pre-scan
refuses, the parser refuses too. Work done, not time, is what the tests assert.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import app
from ledger.encoding import strict
from ledger.encoding.strict import Limits, nesting_exceeds
from ledger.errors import LedgerError, NestingDepthError

# Strings full of the bytes the scan must not be fooled by.
TEXT = st.text(alphabet='[]{}"\\ ,:ab\n\u00e9\u4e16', max_size=6)
SCALARS = st.none() | st.booleans() | st.integers(-(10**6), 10**6) | TEXT
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=20,
)


def depth(value: Any) -> int:
    """Containers open at once at the deepest point (the parser's measure)."""
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    return 0


@st.composite
def documents(draw: st.DrawFn) -> tuple[Any, bytes]:
    """A JSON value wrapped in a chain of containers, written in a drawn style."""
    value = draw(VALUES)
    for wrap in draw(st.lists(st.sampled_from(["list", "dict", "pair"]), max_size=45)):
        if wrap == "list":
            value = [value]
        elif wrap == "dict":
            value = {draw(TEXT): value}
        else:
            value = [draw(VALUES), value, draw(VALUES)]
    indent = draw(st.sampled_from([None, 0, 2]))
    separators = draw(st.sampled_from([(",", ":"), (", ", ": ")]))
    text = json.dumps(value, indent=indent, separators=separators, ensure_ascii=draw(st.booleans()))
    return value, text.encode("utf-8")


@contextmanager
def segments(first: int, last: int) -> Iterator[None]:
    """The scan with tiny segments (and no counting shortcut): every boundary case of the
    segmenting (a string across a boundary, one longer than a segment) is reached."""
    saved = strict._COUNTED, strict._FIRST_SEGMENT, strict._LAST_SEGMENT
    strict._COUNTED, strict._FIRST_SEGMENT, strict._LAST_SEGMENT = 0, first, last
    try:
        yield
    finally:
        strict._COUNTED, strict._FIRST_SEGMENT, strict._LAST_SEGMENT = saved


def parser_refuses_nesting(data: bytes, limit: int) -> bool:
    try:
        strict._parse(data, Limits(max_depth=limit))
    except NestingDepthError:
        return True
    return False


@settings(max_examples=200, deadline=None)
@given(documents(), st.integers(0, 48), st.integers(1, 64), st.integers(1, 4))
def test_the_prescan_gives_the_parsers_verdict(
    doc: tuple[Any, bytes], limit: int, first: int, growth: int
) -> None:
    value, data = doc
    expected = depth(value) > limit
    assert parser_refuses_nesting(data, limit) == expected
    assert nesting_exceeds(data, limit) == expected  # counting shortcut, small documents
    with segments(first, first * 2**growth):
        assert nesting_exceeds(data, limit) == expected


@settings(max_examples=200, deadline=None)
@given(
    st.binary(max_size=200) | st.text(alphabet='[]{}"\\ ,:1a', max_size=200).map(str.encode),
    st.integers(0, 12),
    st.integers(1, 16),
)
def test_whatever_the_prescan_refuses_the_parser_refuses(
    data: bytes, limit: int, first: int
) -> None:
    with segments(first, first * 4):
        refused = nesting_exceeds(data, limit)
    if refused:
        with pytest.raises(LedgerError):
            strict._parse(data, Limits(max_depth=limit))


class Recording(bytes):
    """Bytes that remember the furthest position any slice of them reached."""

    furthest = 0

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            self.furthest = max(self.furthest, min(key.stop or len(self), len(self)))
        return super().__getitem__(key)


@pytest.mark.parametrize(
    "document",
    [
        b"[" * (16 << 20),
        b"[[]," * (4 << 20),
        b'{"a":' * (3 << 20),
        b'["' + b"]" * 1000 + b'", ' + b"[" * (16 << 20),  # brackets in a string first
    ],
    ids=["open", "stairs", "objects", "string-first"],
)
def test_deep_input_is_refused_after_its_first_segment(document: bytes) -> None:
    data = Recording(document)
    assert nesting_exceeds(data, 128)
    assert 0 < data.furthest <= strict._FIRST_SEGMENT  # 4 KiB of 16 MiB read


def test_a_16_mib_deep_append_is_one_error_line(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_bytes(b"[" * ((16 << 20) - 1))
    result = runner.invoke(app, ["append", "--db", str(ledger_path), str(deep)])
    assert result.exit_code == 3, result.output
    assert result.stderr.count("\n") == 1
    assert "nesting too deep, got more than 128 levels" in result.stderr
