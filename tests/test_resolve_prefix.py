"""Digest prefixes: a prefix resolves exactly when it names one stored object
(ledger or legacy digest); otherwise it is refused as ambiguous or not found."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.create import initialise
from ledger.errors import InputError, NotFound
from ledger.store.prepared import prepare_blob
from ledger.store.resolve import resolve
from ledger.store.sqlite import open_store


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    blobs=st.lists(st.binary(min_size=1, max_size=8), min_size=1, max_size=12, unique=True),
    pick=st.integers(min_value=0),
    length=st.integers(min_value=4, max_value=63),
)
def test_prefix_resolves_iff_unique(
    tmp_path_factory: pytest.TempPathFactory, blobs: list[bytes], pick: int, length: int
) -> None:
    folder = tmp_path_factory.mktemp("prefix")
    db = folder / "l.db"
    initialise(db, None, Path(f"{db}.log.key"), Path(f"{db}.authority.key"))
    with open_store(db) as store:
        digests = [r.entry.digest for r in store.append_many([prepare_blob(b) for b in blobs])]
        target = digests[pick % len(digests)]
        prefix = target[: 7 + length]
        sharing = [d for d in digests if d.startswith(prefix)]
        if len(sharing) == 1:
            assert resolve(store, prefix).digest == target
            assert resolve(store, prefix[7:] if length >= 8 else target).digest == target
        else:
            with pytest.raises(InputError, match="ambiguous digest prefix"):
                resolve(store, prefix)
        absent = "sha256:" + ("0" if target[7] != "0" else "1") * length
        if not any(d.startswith(absent) for d in digests):
            with pytest.raises(NotFound):
                resolve(store, absent)


def test_short_prefix_shares_are_ambiguous(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    initialise(db, None, Path(f"{db}.log.key"), Path(f"{db}.authority.key"))
    with open_store(db) as store:
        # Find two blobs whose digests share their first 4 hex digits.
        seen: dict[str, bytes] = {}
        pair: tuple[bytes, bytes] | None = None
        for n in range(200_000):
            data = str(n).encode()
            head = prepare_blob(data).digest[:11]
            if head in seen:
                pair = (seen[head], data)
                break
            seen[head] = data
        assert pair is not None
        store.append_many([prepare_blob(pair[0]), prepare_blob(pair[1])])
        with pytest.raises(InputError, match="ambiguous digest prefix"):
            resolve(store, prepare_blob(pair[0]).digest[:11])
        assert resolve(store, prepare_blob(pair[0]).digest).data == pair[0]
