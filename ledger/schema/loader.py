"""The project's JSON Schemas (draft 2020-12) shipped in ``schemas/``, loaded once each.

``load_schema`` reads and caches one schema document; ``validator`` builds (once per
kind and version) the ``jsonschema`` validator every verdict is defined by.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

    from ledger.encoding.values import JSONObject

from ledger.errors import KindError


def schema_filename(kind: str, version: str) -> str:
    """File name of a kind's schema inside the ``schemas`` package."""
    return f"{kind}-v{version}.schema.json"


@cache
def load_schema(kind: str, version: str) -> JSONObject:
    """The parsed schema document; a missing file is a ``KindError``."""
    name = schema_filename(kind, version)
    try:
        text = resources.files("schemas").joinpath(name).read_text("utf-8")
    except FileNotFoundError:
        raise KindError(
            f"no schema for {kind} {version}, got no file {name}, expected it in schemas/"
        ) from None
    schema: JSONObject = json.loads(text)  # our own schema files, each an object
    return schema


# Whether the reference validator asserts ``format`` (it is built without a format
# checker); the compiled fast path (``ledger.schema._compiled``) must agree.
FORMATS_ASSERTED = False


@cache
def validator(kind: str, version: str) -> Draft202012Validator:
    """The reference validator for one kind and version.

    The schema itself is not checked against the 2020-12 metaschema here: the schemas
    are files shipped with the package, not input, and tests/test_schemas_corpus.py
    checks every one of them. (Checking them here cost ~0.15 s of every validating
    command's start, before its workers could fork.)
    """
    # Imported here: jsonschema costs ~60-120 ms to import, and read commands (show,
    # proof, stats) never validate; the compiled fast path (ledger.schema._compiled)
    # does not need it either.
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(kind, version))
