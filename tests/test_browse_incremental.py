"""Property: indexing a ledger in any number of incremental runs equals one full build.

``Prefix`` shows a ledger as it was when it held only its first ``n`` entries (every
read of a later object, node, reference or checkpoint answers "absent"), so a browse
database can be built at arbitrary log positions of one real ledger (corpus + demo +
toy lineage, see ``browse_ledger``) and then carried forward to the end.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from browse_ledger import BuiltLedger, build
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cohorts.browse.build import build_index
from cohorts.browse.tables import TABLES
from ledger.errors import NotFound
from ledger.store.base import CheckpointRow, Entry, LedgerReader, StoredObject
from ledger.store.sqlite import open_store
from ledger.trust.admission import AdmissionPolicy

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"


class Prefix:
    """A ``LedgerReader`` over the first ``n`` entries of another reader."""

    def __init__(self, inner: LedgerReader, n: int) -> None:
        self.inner, self.n = inner, n

    @property
    def policy(self) -> AdmissionPolicy:
        return self.inner.policy

    def _keep(self, obj: StoredObject | None) -> StoredObject | None:
        return obj if obj is not None and obj.seq < self.n else None

    def size(self) -> int:
        return min(self.n, self.inner.size())

    def get(self, digest: str) -> StoredObject | None:
        return self._keep(self.inner.get(digest))

    def get_by_seq(self, seq: int) -> StoredObject | None:
        return self._keep(self.inner.get_by_seq(seq))

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        return [o for o in self.inner.by_legacy(legacy) if o.seq < self.n]

    def by_id(
        self, object_id: str, version: int | None = None, kind: str | None = None
    ) -> list[StoredObject]:
        return [o for o in self.inner.by_id(object_id, version, kind) if o.seq < self.n]

    def by_kind(self, kind: str) -> Iterator[StoredObject]:
        return (o for o in self.inner.by_kind(kind) if o.seq < self.n)

    def entries(
        self, since: int = 0, limit: int | None = None, kind: str | None = None
    ) -> Iterator[Entry]:
        for count, entry in enumerate(self.inner.entries(since, None, kind)):
            if entry.seq >= self.n or (limit is not None and count >= limit):
                return
            yield entry

    def refs_to(self, digest: str, rel: str | None = None) -> list[tuple[str, str]]:
        return [(f, r) for f, r in self.inner.refs_to(digest, rel) if self.get(f) is not None]

    def counts(self) -> dict[str, int]:
        raise NotImplementedError

    def node(self, level: int, index: int) -> bytes:
        if (index + 1) << level > self.n:
            raise NotFound(f"no node at level {level} index {index} in a prefix of {self.n}")
        return self.inner.node(level, index)

    def get_meta(self, key: str) -> str | None:
        return self.inner.get_meta(key)

    def checkpoints(self) -> list[CheckpointRow]:
        return [c for c in self.inner.checkpoints() if c.size <= self.n]

    def checkpoint_at(self, size: int) -> CheckpointRow | None:
        return self.inner.checkpoint_at(size) if size <= self.n else None

    def cosignatures(self, size: int) -> list[str]:
        return self.inner.cosignatures(size) if size <= self.n else []


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltLedger:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    return build(tmp_path_factory.mktemp("incremental"), CORPUS)


@pytest.fixture(scope="module")
def full(built: BuiltLedger, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("full") / "full.db"
    with open_store(built.db, readonly=True) as store:
        build_index(store, out, full=True)
    return out


def _dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(path) as conn:
        return {
            t.name: conn.execute(f"SELECT * FROM {t.name} ORDER BY {', '.join(t.pk)}").fetchall()
            for t in TABLES
        }


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(picks=st.lists(st.integers(min_value=0, max_value=10**6), min_size=1, max_size=3))
def test_any_split_equals_full(
    built: BuiltLedger, full: Path, tmp_path: Path, picks: list[int]
) -> None:
    with open_store(built.db, readonly=True) as store:
        splits = [p % (store.size() + 1) for p in picks]
    out = tmp_path / f"inc-{'-'.join(map(str, splits))}.db"
    out.unlink(missing_ok=True)
    with open_store(built.db, readonly=True) as store:
        for n in sorted(splits):
            build_index(Prefix(store, n), out)
        report = build_index(store, out)
    assert report.previous_size == max(splits)
    assert _dump(out) == _dump(full)


def test_prefix_is_a_real_prefix(built: BuiltLedger, tmp_path: Path) -> None:
    """The wrapper really hides later objects: a prefix projection has fewer rows."""
    out = tmp_path / "p.db"
    with open_store(built.db, readonly=True) as store:
        build_index(Prefix(store, 40), out)
    dump = _dump(out)
    assert len(dump["objects"]) == 40
    assert dump["results"] and len(dump["results"]) < 5
