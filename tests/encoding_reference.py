"""The reference results the encoding fast paths are compared with (test helper).

``reference`` is what ``ledger.encoding._fast.parse_encode`` must equal: the strict
parser's value, the RFC 8785 bytes from the ``rfc8785`` package, the legacy bytes and
the float hints, each from its reference function.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import strategies as st

from ledger.encoding import _fast, strict
from ledger.encoding.strict import Limits, legacy_bytes, parse_strict, reference_float_hints
from ledger.errors import LedgerError


def reference(data: bytes, limits: Limits) -> tuple[Any, bytes, bytes, list[Any]]:
    """(value, RFC 8785 bytes, legacy bytes, float hints); raises as the strict parser."""
    value = parse_strict(data, limits)
    return (
        value,
        strict.reference_canonical_bytes(value),
        legacy_bytes(value),
        reference_float_hints(value),
    )


def assert_parse_encode(
    data: bytes, limits: Limits = strict.DEFAULT_LIMITS
) -> tuple[Any, bytes, bytes, list[Any]] | None:
    """``parse_encode(data)`` equals the reference (value, both byte forms, whether it
    holds a float, the float hints when given), or both raise the same error class and
    message. Returns the reference, or None when it raised."""
    try:
        expected = reference(data, limits)
    except LedgerError as exc:
        with pytest.raises(type(exc)) as info:
            _fast.parse_encode(data, limits)
        assert str(info.value) == str(exc)
        return None
    got = _fast.parse_encode(data, limits)
    # json.dumps tells 1 from 1.0 and -0.0 from 0, which == does not.
    assert json.dumps(got.value) == json.dumps(expected[0])
    assert (got.canonical, got.legacy) == expected[1:3]
    assert got.has_float == has_float(expected[0])
    if got.float_hints is not None:
        assert got.float_hints == expected[3]
    return expected


def has_float(node: Any) -> bool:
    """True when the parsed JSON value holds a float anywhere."""
    if type(node) is float:
        return True
    if type(node) is dict:
        return any(has_float(v) for v in node.values())
    if type(node) is list:
        return any(has_float(v) for v in node)
    return False


# Strings and keys that spell the marker encode's markers (NUL-delimited numbers, their
# JSON escapes, quotes, colons), and integral floats to be marked.
_MARKER_TEXT = st.text(alphabet='\x00\\"0123u:', max_size=6) | st.sampled_from(
    ["\x000\x00", "\x001\x00", '"\x000\x00"', "\\u0000", "\x00", 'a"\x00']
)
marked_values = st.recursive(
    st.sampled_from([1.0, -0.0, 2.0, 0.5, 7, 1e-7]) | _MARKER_TEXT | st.none(),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_MARKER_TEXT, kids, max_size=4),
    max_leaves=16,
)
