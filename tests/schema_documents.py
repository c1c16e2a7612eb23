"""Hypothesis strategies for JSON values: arbitrary ones, and documents shaped by a schema.

``documents(schema)`` draws values that follow a schema's structure (``type``,
``properties``/``required``, ``items``, ``enum``/``const``, ``pattern`` via
``st.from_regex``, bounds, ``oneOf``/``anyOf`` branches, local ``$ref``). It ignores
``allOf``/``if``/``then``/``not``, so some drawn documents are invalid: the tests use it
as a source of mostly-valid documents of every kind to mutate, never as an oracle.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

FINITE = st.floats(allow_nan=False, allow_infinity=False)

# Arbitrary JSON values: unicode keys and text, big integers, finite floats.
JSON_VALUES: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | FINITE
    | st.sampled_from([0, 1, -1, 0.0, 1.0, -0.0, 2**53, 1e300])
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)

_ANY: st.SearchStrategy[Any] = JSON_VALUES


def _resolve(root: Any, pointer: str) -> Any:
    target = root
    for part in pointer[2:].split("/") if pointer != "#" else []:
        target = target[part.replace("~1", "/").replace("~0", "~")]
    return target


def documents(root: Any, schema: Any = None, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values following ``schema`` (default: the root) of the document ``root``."""
    schema = root if schema is None else schema
    if not isinstance(schema, dict) or depth > 12:
        return _ANY
    if "const" in schema:
        return st.just(json.loads(json.dumps(schema["const"])))
    if "enum" in schema:
        return st.sampled_from([json.loads(json.dumps(o)) for o in schema["enum"]])
    for keyword in ("oneOf", "anyOf"):
        if keyword in schema:
            return st.one_of([documents(root, sub, depth + 1) for sub in schema[keyword]])
    if "$ref" in schema:
        return documents(root, _resolve(root, schema["$ref"]), depth + 1)
    names = schema.get("type")
    if isinstance(names, list):
        return st.one_of([documents(root, {**schema, "type": name}, depth) for name in names])
    if names == "object":
        return _object(root, schema, depth)
    if names == "array":
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", low + 3)
        items = documents(root, schema.get("items", True), depth + 1)
        unique = schema.get("uniqueItems", False)
        key = (lambda v: json.dumps(v, sort_keys=True)) if unique else None
        return st.lists(items, min_size=low, max_size=max(low, high), unique_by=key)
    if names == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"])
        low = schema.get("minLength", 0)
        return st.text(min_size=low, max_size=schema.get("maxLength", low + 8))
    if names in ("integer", "number"):
        bottom: Any = schema.get("minimum", schema.get("exclusiveMinimum", -(2**40)))
        top: Any = schema.get("maximum", schema.get("exclusiveMaximum", 2**40))
        ints = st.integers(int(bottom) + 1, int(top) - 1) if top - bottom > 2 else st.just(bottom)
        if names == "integer":
            return ints
        return ints | st.floats(bottom, top, allow_nan=False, exclude_min=True, exclude_max=True)
    if names == "boolean":
        return st.booleans()
    if names == "null":
        return st.none()
    if "properties" in schema or "required" in schema:
        return _object(root, schema, depth)
    return _ANY


def _object(root: Any, schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    props = schema.get("properties", {})
    required = schema.get("required", [])
    fixed = {name: documents(root, props.get(name, True), depth + 1) for name in required}
    optional = {
        name: documents(root, sub, depth + 1) for name, sub in props.items() if name not in fixed
    }
    return st.fixed_dictionaries(fixed, optional=optional)


def value_paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """The path of every value in ``node`` (itself first: the empty path), depth first."""
    out = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            out.extend(value_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            out.extend(value_paths(value, (*prefix, index)))
    return out
