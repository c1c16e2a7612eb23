"""The entry record: the bytes of one Merkle leaf.

Leaf bytes = RFC 8785 of ``{"appended_at", "digest", "kind", "seq"}``; ``appended_at``
is UTC RFC 3339 with microseconds (``2026-11-30T03:13:53.123456Z``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from ledger.encoding.canonical import canonicalize


def entry_record(seq: int, kind: str, digest: str, appended_at: str) -> bytes:
    """Canonical leaf bytes of one entry."""
    return canonicalize({"appended_at": appended_at, "digest": digest, "kind": kind, "seq": seq})


def utc_now() -> str:
    """The current time in the entry-record format."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
