"""The SQLite import's commits run on a thread of their own (``bulk_session``).

While one batch's COMMIT writes and syncs the WAL (and, every
``BULK_AUTOCHECKPOINT_PAGES``, copies it into the file), the importer takes the workers'
next results. What must still hold, each shown here against the store's own reads:

- every commit runs off the importing thread, and the next write transaction begins
  only after the previous commit ended (one transaction at a time);
- a commit that fails is raised to the importer; the ledger holds exactly the batches
  committed before it, and a second import completes it;
- when ``import_jsonl`` returns, everything it counted is committed (another
  connection reads it);
- a dry run commits nothing, on no thread; the session's settings are restored.

With workers, each batch is also written (admission, rows, inserts) on a writer thread
of its own (``ledger.store.bulk._batch_writer``) while the importer takes the workers'
next results; the same holds, one batch at a time, in input order.
"""

from __future__ import annotations

import io
import json
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bench_corpus
import pytest

from ledger.errors import StorageError
from ledger.store import bulk
from ledger.store import sqlite as sqlite_store
from ledger.store.bulk import import_jsonl
from ledger.store.prepared import prepare_json
from ledger.store.sqlite import SQLiteStore, open_store
from ledger.trust.keys import Ed25519Signer

GROUP = bench_corpus.GROUP


def _lines(db: Path, tasks: int) -> tuple[bytes, list[str]]:
    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    docs = list(bench_corpus.corpus(tasks * GROUP, 3, signer))
    raw = [json.dumps(doc).encode() for doc in docs]
    return b"".join(line + b"\n" for line in raw), [prepare_json(line).digest for line in raw]


def _stored(db: Path) -> list[str]:
    """The ledger's entries as a separate connection reads them."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return [str(d) for (d,) in conn.execute("SELECT digest FROM entries ORDER BY seq")]
    finally:
        conn.close()


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int]]]:
    """(event, thread id) of every commit's start and end and every write's BEGIN."""
    seen: list[tuple[str, int]] = []
    lock = threading.Lock()
    commit, begin = SQLiteStore._commit_now, SQLiteStore._begin_immediate

    def note(event: str) -> None:
        with lock:
            seen.append((event, threading.get_ident()))

    def commit_now(self: SQLiteStore) -> None:
        note("commit")
        commit(self)
        note("committed")

    def begin_immediate(self: SQLiteStore) -> None:
        note("begin")
        begin(self)

    monkeypatch.setattr(SQLiteStore, "_commit_now", commit_now)
    monkeypatch.setattr(SQLiteStore, "_begin_immediate", begin_immediate)
    yield seen


@pytest.mark.parametrize("workers", [1, 2])
def test_commits_run_off_the_importer_one_transaction_at_a_time(
    ledger_path: Path, events: list[tuple[str, int]], workers: int
) -> None:
    data, digests = _lines(ledger_path, 5)
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(data), batch=GROUP, workers=workers)
        # Counted, hence committed: another connection reads every entry already.
        assert summary.new == len(digests)
        assert _stored(ledger_path)[-len(digests) :] == digests
    main = threading.get_ident()
    names = [name for name, _ in events]
    assert names.count("commit") == names.count("committed") == summary.batches == 5
    assert all(thread != main for name, thread in events if name.startswith("commit"))
    # Each BEGIN after the first comes after the previous commit ended.
    assert names == ["begin", "commit", "committed"] * 5


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failed_commit_is_raised_and_leaves_the_batches_before(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    data, digests = _lines(ledger_path, 5)
    before = _stored(ledger_path)
    commit = SQLiteStore._commit_now
    calls = []

    def failing(self: SQLiteStore) -> None:
        calls.append(threading.get_ident())
        if len(calls) == 3:  # the third batch's commit fails as a full disk would
            self._conn.execute("ROLLBACK")
            raise StorageError("cannot write ledger, got 'database or disk is full'")
        commit(self)

    monkeypatch.setattr(SQLiteStore, "_commit_now", failing)
    with open_store(ledger_path) as store:
        with pytest.raises(StorageError, match="disk is full"):
            import_jsonl(store, io.BytesIO(data), batch=GROUP, workers=workers)
        assert len(calls) == 3  # no batch was written after the failed one
        assert [e.digest for e in store.entries()] == before + digests[: 2 * GROUP]
    assert _stored(ledger_path) == before + digests[: 2 * GROUP]
    monkeypatch.setattr(SQLiteStore, "_commit_now", commit)
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(data), batch=GROUP)
    assert (summary.new, summary.present) == (3 * GROUP, 2 * GROUP)
    assert _stored(ledger_path) == before + digests


@pytest.mark.parametrize("workers", [1, 2])
def test_a_dry_run_commits_nothing_and_the_settings_come_back(
    ledger_path: Path, events: list[tuple[str, int]], workers: int
) -> None:
    data, _ = _lines(ledger_path, 2)
    before = _stored(ledger_path)
    with open_store(ledger_path, dry_run=True) as store:
        summary = import_jsonl(store, io.BytesIO(data), batch=GROUP, workers=workers)
        assert summary.new == 2 * GROUP
    assert not [name for name, _ in events if name.startswith("commit")]
    assert _stored(ledger_path) == before
    with open_store(ledger_path) as store:
        conn = store.connection
        saved = [conn.execute(f"PRAGMA {p}").fetchone()[0] for p in _PRAGMAS]
        inside: list[Any] = []
        with store.bulk_session():
            inside = [conn.execute(f"PRAGMA {p}").fetchone()[0] for p in _PRAGMAS]
        after = [conn.execute(f"PRAGMA {p}").fetchone()[0] for p in _PRAGMAS]
    assert inside == [-sqlite_store.BULK_CACHE_KIB, sqlite_store.BULK_AUTOCHECKPOINT_PAGES]
    assert after == saved != inside


_PRAGMAS = ("cache_size", "wal_autocheckpoint")


def test_with_workers_a_batch_is_written_while_the_importer_takes_the_next(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first batch's write waits until the importer has taken documents of the
    second batch: it can only end that way if the two run at once. Writes still come
    one at a time, in input order, all on one thread that is not the importer's."""
    data, digests = _lines(ledger_path, 4)
    taken: list[int] = []  # documents the importer has turned into ``Prepared``
    next_batch = threading.Event()
    made = bulk._prepared

    def prepared(values: Any) -> Any:
        taken.append(1)
        if len(taken) > GROUP:
            next_batch.set()
        return made(values)

    writes: list[int] = []  # the thread of each write
    active: list[int] = []
    overlapped: list[bool] = []  # the next batch was being taken during the first write
    append_many = SQLiteStore.append_many

    def write(self: SQLiteStore, items: Any, *args: Any, **kwargs: Any) -> Any:
        active.append(1)
        assert len(active) == 1  # never two batches at once
        writes.append(threading.get_ident())
        try:
            if len(writes) == 1:
                # Generous: it only runs out when the importer waits for this write.
                overlapped.append(next_batch.wait(timeout=60))
            return append_many(self, items, *args, **kwargs)
        finally:
            active.pop()

    monkeypatch.setattr(bulk, "_prepared", prepared)
    monkeypatch.setattr(SQLiteStore, "append_many", write)
    before = _stored(ledger_path)
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(data), batch=GROUP, workers=2)
    assert overlapped == [True]
    assert (summary.new, summary.batches) == (len(digests), 4)
    assert len(set(writes)) == 1 and threading.get_ident() not in writes
    assert _stored(ledger_path) == before + digests  # input order


def test_without_workers_batches_are_written_by_the_importer(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One process: preparing and writing share the interpreter, so a thread would only
    add switching; the importer writes each batch itself."""
    data, digests = _lines(ledger_path, 2)
    threads: list[int] = []
    append_many = SQLiteStore.append_many

    def write(self: SQLiteStore, items: Any, *args: Any, **kwargs: Any) -> Any:
        threads.append(threading.get_ident())
        return append_many(self, items, *args, **kwargs)

    monkeypatch.setattr(SQLiteStore, "append_many", write)
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(data), batch=GROUP, workers=1)
    assert summary.new == len(digests)
    assert threads == [threading.get_ident()] * 2


def test_with_workers_the_importer_holds_at_most_two_batches(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The import's memory bound: documents taken from the workers but not yet written
    never exceed two batches (one being written, one being gathered), however slow the
    writer. The first write is held until the importer has taken a second full batch,
    then a little longer: an importer that queued batches would take more meanwhile."""
    data, digests = _lines(ledger_path, 6)
    lock = threading.Lock()
    taken = [0]  # documents the importer has turned into ``Prepared``
    written = [0]  # documents of batches whose write has ended
    most = [0]  # the largest ``taken - written`` seen
    full = threading.Event()
    batch = GROUP
    made = bulk._prepared

    def prepared(values: Any) -> Any:
        with lock:
            taken[0] += 1
            most[0] = max(most[0], taken[0] - written[0])
            if taken[0] >= 2 * batch:
                full.set()
        return made(values)

    append_many = SQLiteStore.append_many

    def write(self: SQLiteStore, items: Any, *args: Any, **kwargs: Any) -> Any:
        if not written[0]:
            assert full.wait(timeout=60)
            full.clear()
            assert not full.wait(timeout=0.2)  # nothing past the second batch is taken
        try:
            return append_many(self, items, *args, **kwargs)
        finally:
            with lock:
                written[0] += len(items)

    monkeypatch.setattr(bulk, "_prepared", prepared)
    monkeypatch.setattr(SQLiteStore, "append_many", write)
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(data), batch=batch, workers=2)
    assert (summary.new, summary.batches) == (len(digests), 6)
    assert most[0] == 2 * batch


def test_the_cli_default_batch_is_the_library_default() -> None:
    """``import jsonl --batch``'s default is kept apart (``--help`` stays light)."""
    from ledger.cli import importcmds

    assert importcmds._DEFAULT_BATCH == bulk.DEFAULT_BATCH
