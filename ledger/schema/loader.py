"""The project's JSON Schemas (draft 2020-12) shipped in ``schemas/``, loaded once each.

``load_schema`` reads and caches one schema document; ``validator`` builds (once per
kind and version) the ``jsonschema`` validator every verdict is defined by.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

from ledger.errors import KindError


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
    # Imported here: jsonschema costs ~60 ms to import, and read commands (show, proof,
    # stats) never validate; the compiled fast path (ledger.schema._compiled) does not
    # need it either.
    from jsonschema import Draft202012Validator

    schema = load_schema(kind, version)
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)
