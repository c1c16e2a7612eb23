"""Schema validation, the public entry point: ``validate``, ``is_valid``, ``violations``.

The verdict is ``jsonschema``'s (Draft 2020-12, the schemas in ``schemas/``, loaded by
``ledger.schema.loader``). A verdict of "valid" may come from the private compiled fast
path (``ledger.schema._compiled``, exact by construction); every rejection and its
message come from ``jsonschema``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ledger.encoding.canonical import path_child
from ledger.errors import SchemaError
from ledger.schema._compiled import fast_check
from ledger.schema.loader import load_schema, schema_filename, validator

__all__ = ["Violation", "is_valid", "load_schema", "schema_filename", "validate", "violations"]


@dataclass(frozen=True)
class Violation:
    """One schema violation: the JSON path (``$.a[0]``) and jsonschema's message."""

    path: str
    message: str


def _json_path(parts: Iterable[str | int]) -> str:
    path = "$"
    for part in parts:
        path = path_child(path, part)
    return path


def _short(message: str) -> str:
    return message if len(message) <= 200 else message[:197] + "..."


def validate(kind: str, version: str, obj: object) -> None:
    """Raise ``SchemaError`` naming the JSON path of the most relevant violation."""
    # The compiled check only ever vouches for validity; jsonschema decides the rest.
    if fast_check(kind, version, obj):
        return
    v = validator(kind, version)
    if v.is_valid(obj):
        return
    from jsonschema.exceptions import best_match  # loaded only when a document fails

    error = best_match(v.iter_errors(obj))
    raise SchemaError(
        f"schema violation at {_json_path(error.absolute_path)}, got {_short(error.message)},"
        f" expected a valid {kind} v{version}"
    )


def is_valid(kind: str, version: str, obj: object) -> bool:
    """Validation verdict without an exception."""
    return fast_check(kind, version, obj) or bool(validator(kind, version).is_valid(obj))


def violations(kind: str, version: str, obj: object) -> list[Violation]:
    """Every violation of ``obj``, ordered by path; empty when valid.

    An unknown kind or version raises ``KindError``.
    """
    if fast_check(kind, version, obj):
        return []
    found = sorted(
        validator(kind, version).iter_errors(obj),
        key=lambda e: [str(p) for p in e.absolute_path],
    )
    return [Violation(_json_path(e.absolute_path), _short(e.message)) for e in found]
