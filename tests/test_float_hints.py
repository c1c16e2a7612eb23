"""Float hints may only turn an integer into the equal double (ledger.store.derived).

Properties over generated JSON values: the hints recorded at append time are always
accepted and rebuild upstream's legacy digest exactly; any hint that points elsewhere
(a string, a boolean, null, a container, a missing path), carries another number, or is
spelled otherwise is refused with ``HintError``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from json_values import OBJECTS

from ledger.encoding.canonical import canonicalize, encode, float_hints
from ledger.encoding.digest import legacy_digest
from ledger.store.derived import HintError, apply_checked_hints, parse_hints


def stored(value: Any) -> tuple[Any, str | None]:
    """(canonical value, hints text) as the store keeps them."""
    hints = float_hints(value)
    canonical = encode(canonicalize(value)).value
    return canonical, canonicalize(hints).decode("utf-8") if hints else None


def paths(node: Any, path: list[Any]) -> list[tuple[list[Any], Any]]:
    out = [(path, node)]
    if isinstance(node, dict):
        for key, item in node.items():
            out += paths(item, [*path, key])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            out += paths(item, [*path, index])
    return out


@settings(max_examples=300, deadline=None)
@given(value=OBJECTS)
def test_recorded_hints_are_accepted_and_rebuild_the_legacy_digest(value: dict[str, Any]) -> None:
    canonical, text = stored(value)
    hints = parse_hints(canonical, text)
    assert legacy_digest(apply_checked_hints(canonical, hints)) == legacy_digest(value)


@settings(max_examples=300, deadline=None)
@given(value=OBJECTS, data=st.data())
def test_a_hint_anywhere_but_an_equal_integer_is_refused(
    value: dict[str, Any], data: st.DataObject
) -> None:
    canonical, text = stored(value)
    hints = json.loads(text) if text else []
    target_path, target = data.draw(st.sampled_from(paths(canonical, [])[1:] or [([], None)]))
    if not target_path:
        return
    number = data.draw(st.sampled_from(["0.0", "1.0", "-0.0", "1e+16", "0.5", "nan", "x"]))
    forged = [h for h in hints if h[:-1] != target_path] + [[*target_path, number]]
    legit = (
        isinstance(target, int)
        and not isinstance(target, bool)
        and number in ("0.0", "1.0", "-0.0")
        and float(number) == target
    )
    if legit:
        parse_hints(canonical, canonicalize(forged).decode())
        return
    with pytest.raises(HintError):
        parse_hints(canonical, canonicalize(forged).decode())


@pytest.mark.parametrize(
    "text",
    [
        "",  # not JSON
        "[]",  # empty list: no hints are stored as NULL
        "{}",
        '[["a", "1.0"]]',  # not canonical (space)
        '[["a","1.0"],["a","1.0"]]',  # one path twice
        '[["1.0"]]',  # the root
        '[["a",1]]',  # the number as a number
        '[["b","1.0"]]',  # no such member
        '[["t","1.0"]]',  # a boolean
        '[["s","0.0"]]',  # a string
        '[["l",5,"1.0"]]',  # index out of range
        '[["l","0","1.0"]]',  # a string index into a list
        '[["a","1.00"]]',  # not the repr
        '[["a","2.0"]]',  # another number
    ],
)
def test_malformed_hints_are_refused(text: str) -> None:
    canonical = {"a": 1, "l": [0], "s": "x", "t": True}
    with pytest.raises(HintError):
        parse_hints(canonical, text)
    assert parse_hints(canonical, '[["a","1.0"],["l",0,"-0.0"]]')
