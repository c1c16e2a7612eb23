"""Canonical encoding, the public entry points: bytes in, canonical bytes out.

- ``encode(raw) -> Encoded``: strict parse, RFC 8785 bytes and upstream legacy bytes
  (and float hints) of one document in one pass. Every write path starts here.
- ``canonicalize(value) -> bytes``: RFC 8785 bytes of a value already parsed.
- ``parse_strict(raw)``, ``require_canonical(raw)``, ``is_canonical(raw)``.

Each is computed by a private fast path that hands whatever it cannot vouch for to the
reference in ``ledger.encoding.strict``, so values, bytes and errors are always exactly
the reference's (tests/test_fastcanon_differential.py proves the equality).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.encoding import _fast
from ledger.encoding._fast import Encoded
from ledger.encoding.strict import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    MAX_SAFE_INTEGER,
    Limits,
    decode_utf8,
    parse_strict,
    path_child,
)
from ledger.errors import CanonicalFormError

if TYPE_CHECKING:
    from ledger.encoding.values import FloatHint, JSONValue

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "MAX_SAFE_INTEGER",
    "Encoded",
    "Limits",
    "canonical_value",
    "canonicalize",
    "decode_utf8",
    "encode",
    "float_hints",
    "is_canonical",
    "legacy_with_doubles",
    "parse_canonical",
    "parse_strict",
    "path_child",
    "require_canonical",
]


def encode(raw: bytes, limits: Limits = DEFAULT_LIMITS) -> Encoded:
    """Parse ``raw`` strictly; return the value with its canonical and legacy bytes."""
    return _fast.parse_encode(raw, limits)


def canonicalize(value: object) -> bytes:
    """RFC 8785 bytes of an already-checked JSON value."""
    return _fast.canonicalize(value)


def canonical_value(data: bytes, limits: Limits = DEFAULT_LIMITS) -> tuple[bool, JSONValue]:
    """``(True, value)`` when ``data`` is quickly shown to be canonical (``value`` is its
    strict parse); ``(False, None)`` means "not shown": ask ``encode``, which decides."""
    return _fast.canonical_value(data, limits)


def legacy_with_doubles(
    data: bytes, value: JSONValue, applied: JSONValue, texts: list[str]
) -> bytes | None:
    """``legacy_bytes(applied)`` from ``data == legacy_bytes(value)`` and the texts of the
    doubles ``applied`` holds where ``value`` holds equal integers; None: not established
    quickly (``legacy_bytes(applied)`` decides)."""
    return _fast.legacy_with_doubles(data, value, applied, texts)


def float_hints(value: object) -> list[FloatHint]:
    """Integral doubles RFC 8785 spells as integers (``strict.reference_float_hints``)."""
    return _fast.float_hints(value)


def parse_canonical(
    data: bytes, limits: Limits = DEFAULT_LIMITS
) -> tuple[JSONValue, bytes]:
    """Parse strictly and return the value with its canonical bytes."""
    encoded = encode(data, limits)
    return encoded.value, encoded.canonical


def require_canonical(data: bytes, limits: Limits = DEFAULT_LIMITS) -> JSONValue:
    """Parse bytes that must already be canonical; refuse any other spelling."""
    value, canonical = parse_canonical(data, limits)
    if canonical != data:
        raise CanonicalFormError(
            f"bytes are not RFC 8785 canonical, got {len(data)} bytes,"
            f" expected the {len(canonical)}-byte canonical form"
        )
    return value


def is_canonical(data: bytes, limits: Limits = DEFAULT_LIMITS) -> bool:
    """True iff ``data`` parses strictly and is its own RFC 8785 form (no exceptions)."""
    return _fast.is_canonical(data, limits)
