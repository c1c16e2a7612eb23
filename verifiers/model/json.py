"""Total readers for JSON values that may be malformed: the one copy.

Upstream IDKMesh records are sometimes schema-invalid, and audits must report on them
rather than crash. Every reader here is total: where the shape is not what a
schema-valid document has, it returns None (or an empty container), never raises.
The protocol documents (``verifiers.model.documents``) are built with these readers,
so a check reads a typed member (``str | None``) instead of walking a dict.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import TypeAlias

#: A JSON object as read (read-only view).
JsonObject: TypeAlias = Mapping[str, object]


def at(value: object, *keys: str | int) -> object:
    """Walk objects/arrays by key/index; None as soon as a step does not exist."""
    current: object = value
    for key in keys:
        if isinstance(key, str) and isinstance(current, Mapping):
            if key not in current:
                return None
            current = current[key]
        elif (
            isinstance(key, int)
            and isinstance(current, Sequence)
            and not isinstance(current, str | bytes)
            and -len(current) <= key < len(current)
        ):
            current = current[key]
        else:
            return None
    return current


def as_str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def is_int(value: object) -> bool:
    """A JSON integer (``bool`` is not one)."""
    return isinstance(value, int) and not isinstance(value, bool)


def as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def as_map(value: object) -> JsonObject:
    return value if isinstance(value, Mapping) else {}


def as_list(value: object) -> list[object]:
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return list(value)
    return []


def maps(value: object) -> list[JsonObject]:
    """The object elements of an array (others dropped)."""
    return [item for item in as_list(value) if isinstance(item, Mapping)]


def str_set(value: object) -> frozenset[str]:
    """The string elements of an array as a set."""
    return frozenset(item for item in as_list(value) if isinstance(item, str))


def str_list(value: object) -> list[str] | None:
    """``value`` when it is an array of strings, else None."""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def shown(value: object, limit: int = 80) -> str:
    """Short printable form of a value for one-line messages."""
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= limit else text[: limit - 3] + "..."


def member(value: object, collection: Collection[object]) -> bool:
    """``value in collection``, False (not TypeError) for unhashable JSON values."""
    try:
        return value in collection
    except TypeError:
        return False


def json_key(value: object) -> str:
    """A hashable stand-in for any JSON value (for sets and dict keys)."""
    return json.dumps(value, sort_keys=True, default=repr)
