"""The one type of a parsed JSON value.

``JSONValue`` is what ``ledger.encoding.canonical.parse_strict`` returns and what
``canonicalize`` accepts: null, booleans, numbers, strings, arrays and objects with
string keys, nested. ``JSONObject`` is an object as parsed (a ``dict``: the parser builds
one), ``JSONArray`` an array. Readers of a value that may be malformed take ``object``
or ``Mapping[str, object]`` and narrow it (``verifiers.model.json``); code that built
or validated a value says ``JSONValue``.
"""

from __future__ import annotations

from typing import TypeAlias

JSONValue: TypeAlias = "bool | int | float | str | list[JSONValue] | dict[str, JSONValue] | None"
JSONObject: TypeAlias = "dict[str, JSONValue]"
JSONArray: TypeAlias = "list[JSONValue]"

#: Where a value sits in a document: member names and array indexes from the root.
JSONPath: TypeAlias = tuple[str | int, ...]
#: One float hint: the path of an integral double, then its Python ``repr`` (``"1.0"``);
#: ``ledger.encoding.strict.reference_float_hints`` lists them.
FloatHint: TypeAlias = list[str | int]



def child_at(node: JSONValue, segment: str | int) -> JSONValue:
    """The member or item ``segment`` of ``node``; ``KeyError``/``IndexError`` when absent,
    ``TypeError`` when ``node`` has no such part (a member name of an array...)."""
    if isinstance(node, dict) and isinstance(segment, str):
        return node[segment]
    if isinstance(node, list) and isinstance(segment, int):
        return node[segment]
    raise TypeError(f"no part {segment!r} in a {type(node).__name__}")


def set_at(node: JSONValue, segment: str | int, child: JSONValue) -> None:
    """Replace the member or item ``segment`` of ``node`` (errors as ``child_at``)."""
    if isinstance(node, dict) and isinstance(segment, str):
        node[segment] = child
        return
    if isinstance(node, list) and isinstance(segment, int):
        node[segment] = child
        return
    raise TypeError(f"no part {segment!r} in a {type(node).__name__}")


__all__ = ["FloatHint", "JSONArray", "JSONObject", "JSONPath", "JSONValue", "child_at", "set_at"]
