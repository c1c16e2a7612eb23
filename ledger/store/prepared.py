"""Turning input bytes into validated, canonical records ready to append.

A ``Prepared`` value is the whole truth about one object before it is written: its
canonical bytes (exactly what will be stored, hashed and signed), the digest of
those bytes, and the index fields derived from the parsed value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.encoding.canonical import (
    DEFAULT_LIMITS,
    Encoded,
    Limits,
    canonicalize,
    encode,
    float_hints,
)
from ledger.encoding.digest import legacy_digest, sha256_digest
from ledger.schema import validation as schema
from ledger.schema.kinds import BLOB, KindSpec, detect_kind, document, get_kind, schema_version_of

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject


@dataclass(frozen=True)
class Prepared:
    """A validated object. ``data`` is canonical JSON, or raw bytes for a blob."""

    digest: str
    kind: str
    data: bytes
    schema_version: str | None = None
    object_id: str | None = None
    object_version: int | None = None
    legacy_digest: str | None = None
    legacy_hints: str | None = None
    refs: tuple[tuple[str, str], ...] = ()


def prepare_value(value: object, kind: str | None = None) -> Prepared:
    """Validate an already strictly-parsed JSON value and canonicalize it once."""
    return _prepare(value, kind, None)


def prepare_json(raw: bytes, kind: str | None = None, limits: Limits = DEFAULT_LIMITS) -> Prepared:
    """Parse strictly, detect or check the kind, validate, canonicalize, digest."""
    if kind == BLOB:
        return prepare_blob(raw)
    # One pass gives the value, its RFC 8785 bytes and the legacy bytes.
    return prepare_encoded(encode(raw, limits), kind)


def prepare_encoded(encoded: Encoded, kind: str | None = None) -> Prepared:
    """``prepare_json`` of a document already parsed once by ``encoding.canonical.encode``
    (no second parse: the canonical and legacy bytes are the ones ``encode`` made)."""
    return _prepare(encoded.value, kind, encoded)


def _prepare(value: object, kind: str | None, encoded: Encoded | None) -> Prepared:
    spec, doc = _resolve_kind(value, kind)
    version = schema_version_of(spec, doc)
    schema.validate(spec.name, version, doc)
    data = canonicalize(value) if encoded is None else encoded.canonical
    digest = sha256_digest(data)
    legacy: str | None = None
    hints: str | None = None
    if not spec.native:
        if encoded is None:
            legacy = legacy_digest(value)
            hints = _hints_text(value)
        else:
            legacy = digest if encoded.legacy == data else sha256_digest(encoded.legacy)
            known = encoded.float_hints
            if known is not None:
                hints = canonicalize(known).decode("utf-8") if known else None
            elif encoded.legacy != data:  # only integral floats make the forms differ
                hints = _hints_text(value)
    # What ``Prepared(...)`` makes, without the frozen dataclass's ``object.__setattr__``
    # per field (~2 us per document, paid by every import worker): a plain frozen
    # dataclass, no ``__post_init__`` (tests/test_import_writer.py holds them equal).
    item: Prepared = object.__new__(Prepared)
    item.__dict__.update(
        digest=digest,
        kind=spec.name,
        data=data,
        schema_version=version,
        object_id=spec.object_id(doc),
        object_version=spec.object_version(doc),
        legacy_digest=legacy,
        legacy_hints=hints,
        refs=tuple(spec.refs(doc)),
    )
    return item


def prepare_blob(raw: bytes) -> Prepared:
    """A content-addressed artifact (patch, log): digest over the raw bytes."""
    return Prepared(digest=sha256_digest(raw), kind=BLOB, data=bytes(raw))


def _resolve_kind(value: object, kind: str | None) -> tuple[KindSpec, JSONObject]:
    """The document's kind (an explicit kind skips detection; the kind's schema then
    decides) and the document as the object it must be."""
    doc = document(value)
    return (detect_kind(doc) if kind is None else get_kind(kind)), doc


def _hints_text(value: object) -> str | None:
    hints = float_hints(value)
    return canonicalize(hints).decode("utf-8") if hints else None
