"""The entry record's direct writer gives exactly the reference RFC 8785 bytes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.encoding.strict import reference_canonical_bytes
from ledger.errors import LedgerError
from ledger.log.leaf import entry_record

_TEXT = st.text() | st.text('"\\\x00\x01\x1f\x7f/ab\u00e9\U0001f600\ud800', max_size=12)


def _reference(seq: Any, kind: Any, digest: Any, appended_at: Any) -> bytes:
    record = {"appended_at": appended_at, "digest": digest, "kind": kind, "seq": seq}
    return reference_canonical_bytes(record)


@settings(max_examples=400, deadline=None)
@given(
    st.integers(-(2**60), 2**60) | st.booleans() | st.floats(allow_nan=False),
    _TEXT,
    _TEXT,
    _TEXT,
)
def test_entry_record_is_the_reference_bytes(
    seq: Any, kind: str, digest: str, appended_at: str
) -> None:
    try:
        want: bytes | type[Exception] = _reference(seq, kind, digest, appended_at)
    except (LedgerError, ValueError, TypeError) as exc:
        want = type(exc)
    if isinstance(want, bytes):
        assert entry_record(seq, kind, digest, appended_at) == want
    else:
        with pytest.raises(want):
            entry_record(seq, kind, digest, appended_at)


def test_a_real_entry() -> None:
    digest = "sha256:" + "ab" * 32
    got = entry_record(7, "work-unit", digest, "2026-11-30T03:13:53.123456Z")
    assert got == (
        b'{"appended_at":"2026-11-30T03:13:53.123456Z","digest":"sha256:'
        + b"ab" * 32
        + b'","kind":"work-unit","seq":7}'
    )
    assert got == _reference(7, "work-unit", digest, "2026-11-30T03:13:53.123456Z")
