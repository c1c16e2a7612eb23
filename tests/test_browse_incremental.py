"""Property: indexing a ledger in any number of incremental runs equals one full build.

``Prefix`` (``ledger.store.prefix``) shows a ledger as it was when it held only its
first ``n`` entries (every read of a later object, node, reference or checkpoint
answers "absent"), so a browse
database can be built at arbitrary log positions of one real ledger (corpus + demo +
toy lineage, see ``browse_ledger``) and then carried forward to the end.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from browse_ledger import BuiltLedger, build
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cohorts.browse.build import build_index
from cohorts.browse.tables import TABLES
from ledger.store.prefix import Prefix
from ledger.store.sqlite import open_store

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"


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
