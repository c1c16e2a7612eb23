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

__all__ = ["JSONArray", "JSONObject", "JSONValue"]
