"""Digest strings.

``sha256:`` + 64 lowercase hex of SHA-256. The ledger digest of a JSON object is over
its RFC 8785 bytes. The *legacy* digest is upstream IDKMesh's: SHA-256 over
``json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)``.

The two differ exactly when (a) the document holds a non-integer-valued or
exponent-form number whose Python ``repr`` differs from the ECMAScript form
(``1.0`` vs ``1``, ``1e+21`` vs ``1e21``, ``-0.0`` vs ``0``, ``1e-07`` vs ``1e-7``), or
(b) two member names of one object order differently by code point (Python) than
by UTF-16 code unit (RFC 8785), which needs a name with a character above U+FFFF
next to one in U+E000..U+FFFF. Escaping is the same in both.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from ledger.encoding.canonical import canonicalize
from ledger.errors import InputError

DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}\Z")


def sha256_digest(data: bytes) -> str:
    """Digest string of raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_digest(value: Any) -> str:
    """Digest of a JSON value's RFC 8785 bytes."""
    return sha256_digest(canonicalize(value))


def legacy_bytes(value: Any) -> bytes:
    """Upstream IDKMesh's serialization (sorted keys, compact, UTF-8)."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode("utf-8")


def legacy_digest(value: Any) -> str:
    """Upstream IDKMesh's "canonical digest" of a JSON value."""
    return sha256_digest(legacy_bytes(value))


def float_hints(value: Any) -> list[list[Any]]:
    """Paths of integral doubles (``1.0``, ``-0.0``) that RFC 8785 spells as integers.

    Each hint is the list of path segments followed by the Python ``repr`` of the number.
    Canonical bytes alone cannot tell ``1`` from ``1.0``; these hints let anyone
    recompute the legacy digest from the stored canonical bytes.
    """
    hints: list[list[Any]] = []

    def walk(node: Any, path: list[Any]) -> None:
        if isinstance(node, dict):
            for key, item in node.items():
                walk(item, [*path, key])
        elif isinstance(node, list):
            for index, item in enumerate(node):
                walk(item, [*path, index])
        elif isinstance(node, float) and node.is_integer() and abs(node) < 1e21:
            hints.append([*path, repr(node)])

    walk(value, [])
    return hints


def apply_float_hints(value: Any, hints: list[list[Any]]) -> Any:
    """Turn the hinted integers of a canonical value back into doubles (in place)."""
    for hint in hints:
        *path, text = hint
        if not path:
            return float(text)
        parent = value
        for segment in path[:-1]:
            parent = parent[segment]
        parent[path[-1]] = float(text)
    return value


def is_digest(text: str) -> bool:
    """True for a well-formed ``sha256:<64 lowercase hex>`` string."""
    return DIGEST_RE.match(text) is not None


def check_digest(text: str, what: str = "digest") -> str:
    """Return ``text`` when well formed, else raise ``InputError``."""
    if not is_digest(text):
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise InputError(f"malformed {what}, got {shown!r}, expected sha256:<64 lowercase hex>")
    return text
