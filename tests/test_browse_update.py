"""``provledger index`` updates the browse file in place, in one transaction.

- An update reads only the entries after the last one projected and writes into the
  same file (no copy of it): its cost follows the new entries, not the file's size.
- A reader of the file (``serve`` opens it read-only, with locking) sees it as it was
  before an update or after it, never half of it; a failed update changes nothing.
- A full build still replaces the file whole, and both give the same rows.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from generated_ledger import generated_ledger

from cohorts.browse import build
from cohorts.browse.build import build_index
from cohorts.browse.project import Projector
from cohorts.browse.tables import TABLES
from ledger.store.sqlite import SQLiteStore, open_store

N = 300


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return Path(generated_ledger(tmp_path_factory.mktemp("browse-update"), N, 3))


class Upto:
    """The store as it was with ``n`` entries (what ``build_index`` reads of it)."""

    def __init__(self, inner: SQLiteStore, n: int) -> None:
        self.inner, self.n, self.read = inner, n, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def size(self) -> int:
        return self.n

    def log_rows(self, since: int = 0) -> Iterator[Any]:
        for row in self.inner.log_rows(since):
            if row.seq >= self.n:
                return
            self.read += 1
            yield row

    def checkpoints(self) -> list[Any]:
        return []


def _dump(path: Path) -> dict[str, list[tuple[object, ...]]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            t.name: conn.execute(f"SELECT * FROM {t.name} ORDER BY {', '.join(t.pk)}").fetchall()
            for t in TABLES
        }
    finally:
        conn.close()


def test_update_is_in_place_and_reads_only_new_entries(ledger: Path, tmp_path: Path) -> None:
    out = tmp_path / "b.db"
    with open_store(ledger, readonly=True) as store:
        build_index(Upto(store, 200), out)
        inode = out.stat().st_ino
        later = Upto(store, N)
        report = build_index(later, out)
        assert (report.previous_size, report.size, later.read) == (200, N, N - 200)
        assert out.stat().st_ino == inode  # the same file, written in place
        build_index(Upto(store, N), tmp_path / "full.db", full=True)
    assert _dump(out) == _dump(tmp_path / "full.db")


def test_a_reader_sees_before_or_after(
    ledger: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "b.db"
    middle, go = threading.Event(), threading.Event()
    rows = Projector.rows
    seen = {"n": 0}

    def pauses(self: Projector, obj: Any, appended_at: str, built: Any = None) -> Any:
        seen["n"] += 1
        if seen["n"] == 150:  # rows of earlier batches are written, not committed
            middle.set()
            go.wait(30)
        return rows(self, obj, appended_at, built)

    with open_store(ledger, readonly=True) as store:
        build_index(Upto(store, 100), out)
    monkeypatch.setattr(build, "BATCH", 50)
    monkeypatch.setattr(Projector, "rows", pauses)

    def update() -> None:
        with open_store(ledger, readonly=True) as store:
            build_index(Upto(store, N), out)

    thread = threading.Thread(target=update)
    thread.start()
    try:
        assert middle.wait(30)
        reader = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
        assert reader.execute("SELECT count(*) FROM objects").fetchone()[0] == 100
        assert reader.execute("SELECT value FROM ledger_info WHERE key = 'last_seq'").fetchone()[
            0
        ] == str(99)
        reader.close()
    finally:
        go.set()
        thread.join()
    reader = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    assert reader.execute("SELECT count(*) FROM objects").fetchone()[0] == N
    reader.close()


def test_a_failed_update_changes_nothing(
    ledger: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "b.db"
    with open_store(ledger, readonly=True) as store:
        build_index(Upto(store, 100), out)
        before = _dump(out)
        rows = Projector.rows
        seen = {"n": 0}

        def fails_late(self: Projector, obj: Any, appended_at: str, built: Any = None) -> Any:
            seen["n"] += 1
            if seen["n"] > 150:  # after more than one batch of rows was written
                raise RuntimeError("disk on fire")
            return rows(self, obj, appended_at, built)

        monkeypatch.setattr(Projector, "rows", fails_late)
        monkeypatch.setattr(build, "BATCH", 50)
        with pytest.raises(RuntimeError, match="disk on fire"):
            build_index(Upto(store, N), out)
    assert _dump(out) == before
    assert not (tmp_path / "b.db-journal").exists()
