"""The entry record: the bytes of one Merkle leaf.

Leaf bytes = RFC 8785 of ``{"appended_at", "digest", "kind", "seq"}``; ``appended_at``
is UTC RFC 3339 with microseconds (``2026-11-30T03:13:53.123456Z``).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from json.encoder import encode_basestring

from ledger.encoding.canonical import MAX_SAFE_INTEGER, canonicalize

_RECORD = '{"appended_at":%s,"digest":%s,"kind":%s,"seq":%d}'


def entry_record(seq: int, kind: str, digest: str, appended_at: str) -> bytes:
    """Canonical leaf bytes of one entry.

    Every append and every audit builds one per entry, so the fixed shape is written
    directly: member names in RFC 8785 order, each string escaped as ``json`` does
    (for ASCII text exactly the RFC 8785 escapes: ``"``, ``\\`` and control
    characters). Anything else (non-ASCII text, a ``seq`` that is not a plain integer
    in range, other types) goes through ``canonicalize``.
    """
    if (
        type(seq) is int
        and 0 <= seq <= MAX_SAFE_INTEGER
        and type(kind) is str
        and type(digest) is str
        and type(appended_at) is str
    ):
        text = _RECORD % (
            encode_basestring(appended_at),
            encode_basestring(digest),
            encode_basestring(kind),
            seq,
        )
        if text.isascii():
            return text.encode("ascii")
    return canonicalize({"appended_at": appended_at, "digest": digest, "kind": kind, "seq": seq})


_FORMAT = "%Y-%m-%dT%H:%M:%S"
_second: list[tuple[int, str]] = [(-1, "")]  # the last whole second formatted


def utc_now() -> str:
    """The current time in the entry-record format.

    Every appended entry takes one: the text of the current second is formatted once
    and reused, the microseconds appended (``datetime.now`` also truncates to them).
    """
    return stamp_ns(time.time_ns())


def stamp_ns(ns: int) -> str:
    """``ns`` nanoseconds after the epoch as ``datetime``'s ``%Y-%m-%dT%H:%M:%S.%fZ``."""
    second, rest = divmod(ns, 1_000_000_000)
    cached, text = _second[0]
    if cached != second:
        text = datetime.fromtimestamp(second, UTC).strftime(_FORMAT)
        _second[0] = (second, text)
    return f"{text}.{rest // 1000:06d}Z"
