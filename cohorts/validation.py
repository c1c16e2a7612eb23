"""A ``Validator`` over the project's own schemas (``schemas/<kind>-v<version>``).

The document's ``schema_version`` member picks the schema. Every violation is reported
(not only the first) as one line naming its JSON path, so gates can list them all.
"""

from __future__ import annotations

from collections.abc import Mapping

from ledger.errors import KindError
from ledger.schema.validation import violations


def schema_validator(kind: str, doc: Mapping[str, object]) -> list[str]:
    """Messages for every schema violation of ``doc`` as ``kind``; empty when valid."""
    version = doc.get("schema_version")
    if not isinstance(version, str):
        return [f"$.schema_version: not a string ({version!r})"]
    try:
        return [f"{v.path}: {v.message}" for v in violations(kind, version, doc)]
    except KindError as exc:
        return [str(exc)]
