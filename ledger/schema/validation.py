"""Loading the project's JSON Schemas (draft 2020-12) shipped in ``schemas/``.

Validators are compiled once per (kind, version) and cached for the process. A verdict
of "valid" may come from ``ledger.schema._compiled`` (compiled predicates, exact by
construction); every rejection and its message come from ``jsonschema``.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ledger.encoding.canonical import path_child
from ledger.errors import KindError, SchemaError
from ledger.schema._compiled import fast_check


def schema_filename(kind: str, version: str) -> str:
    """File name of a kind's schema inside the ``schemas`` package."""
    return f"{kind}-v{version}.schema.json"


@cache
def load_schema(kind: str, version: str) -> dict[str, Any]:
    """The parsed schema document; a missing file is a ``KindError``."""
    name = schema_filename(kind, version)
    try:
        text = resources.files("schemas").joinpath(name).read_text("utf-8")
    except FileNotFoundError:
        raise KindError(
            f"no schema for {kind} {version}, got no file {name}, expected it in schemas/"
        ) from None
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def validator(kind: str, version: str) -> Draft202012Validator:
    """A compiled validator for one kind and version."""
    schema = load_schema(kind, version)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _json_path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path = path_child(path, part)
    return path


def validate(kind: str, version: str, obj: Any) -> None:
    """Raise ``SchemaError`` naming the JSON path of the most relevant violation."""
    # The compiled check only ever vouches for validity; jsonschema decides the rest.
    if fast_check(kind, version, obj):
        return
    v = validator(kind, version)
    if v.is_valid(obj):
        return
    error = best_match(v.iter_errors(obj))
    message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
    raise SchemaError(
        f"schema violation at {_json_path(error.absolute_path)}, got {message},"
        f" expected a valid {kind} v{version}"
    )


def is_valid(kind: str, version: str, obj: Any) -> bool:
    """Validation verdict without an exception."""
    return fast_check(kind, version, obj) or bool(validator(kind, version).is_valid(obj))
