"""A ``Validator`` over the project's own schemas (``schemas/<kind>-v<version>``).

The document's ``schema_version`` member picks the schema. Every violation is reported
(not only the first) as one line naming its JSON path, so gates can list them all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ledger.encoding.canonical import path_child
from ledger.errors import KindError
from ledger.schema._compiled import fast_check
from ledger.schema.validation import validator


def _path(parts: Any) -> str:
    path = "$"
    for part in parts:
        path = path_child(path, part)
    return path


def schema_validator(kind: str, doc: Mapping[str, Any]) -> list[str]:
    """Messages for every schema violation of ``doc`` as ``kind``; empty when valid."""
    version = doc.get("schema_version")
    if not isinstance(version, str):
        return [f"$.schema_version: not a string ({version!r})"]
    # The compiled check only vouches for validity; jsonschema lists every violation.
    if fast_check(kind, version, doc):
        return []
    try:
        compiled = validator(kind, version)
    except KindError as exc:
        return [str(exc)]
    found = sorted(compiled.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{_path(e.absolute_path)}: {_short(e.message)}" for e in found]


def _short(message: str) -> str:
    return message if len(message) <= 200 else message[:197] + "..."
