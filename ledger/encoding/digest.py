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
import re

from ledger.encoding.canonical import canonicalize
from ledger.encoding.strict import legacy_bytes

DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}\Z")


def sha256_digest(data: bytes) -> str:
    """Digest string of raw bytes."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_digest(value: object) -> str:
    """Digest of a JSON value's RFC 8785 bytes."""
    return sha256_digest(canonicalize(value))


def legacy_digest(value: object) -> str:
    """Upstream IDKMesh's "canonical digest" of a JSON value."""
    return sha256_digest(legacy_bytes(value))


def is_digest(text: str) -> bool:
    """True for a well-formed ``sha256:<64 lowercase hex>`` string."""
    return DIGEST_RE.match(text) is not None
