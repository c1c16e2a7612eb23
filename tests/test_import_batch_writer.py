"""The import's writer thread (``ledger.store.bulk.BatchWriter``).

- Batches are written in the order given, one at a time; ``submit`` waits while a batch
  is being written, so at most two batches are held (one written, one being filled).
- The importing thread keeps reading input (and calling ``advance``) while a batch is
  written; ``advance`` is only called from the importing thread.
- An exception raised by ``append_many`` in the writer (a storage error, a refusal, an
  interrupt) stops the import and is raised in the caller, the same object; nothing is
  written after the failing batch; through the CLI the exit code is the same.
- ``abandon`` (the caller failed or was interrupted) waits for the batch being written
  and writes nothing more.
- ``SignatureMemo`` is used from both threads: verdicts added by one are found by the
  other, each exactly once.
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import multiprocessing
import threading
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ledger_state import state
from typer.testing import CliRunner

from ledger.cli import app
from ledger.errors import StorageError
from ledger.store import bulk
from ledger.store import sqlite as sqlite_store
from ledger.store.bulk import BatchWriter, import_jsonl
from ledger.store.prepared import Prepared, prepare_json
from ledger.store.sqlite import open_store
from ledger.trust.judgement import SignatureMemo
from ledger.trust.keys import Ed25519Signer

GROUP = bench_corpus.GROUP
HANG_GUARD_S = 120  # a bound on waiting for a thread that should already have run, not a timing


def _docs(db: Path, n: int) -> list[dict[str, Any]]:
    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    return list(bench_corpus.corpus(n, 5, signer))


def _lines(docs: list[dict[str, Any]]) -> list[bytes]:
    return [json.dumps(doc).encode() for doc in docs]


def _digests(lines: list[bytes]) -> list[str]:
    return [prepare_json(line).digest for line in lines]


def _stored(db: Path) -> list[str]:
    with open_store(db, readonly=True) as store:
        return [e.digest for e in store.entries()]


class _FailOn:
    """A real store whose ``append_many`` raises ``error`` on its n-th call."""

    def __init__(self, store: Any, n: int, error: BaseException) -> None:
        self._store = store
        self._n = n
        self.error = error
        self.calls = 0

    def append_many(self, *args: Any, **options: Any) -> Any:
        self.calls += 1
        if self.calls == self._n:
            raise self.error
        return self._store.append_many(*args, **options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


# -- BatchWriter alone --------------------------------------------------------------------


def _item(n: int) -> Prepared:
    return Prepared(f"sha256:{n:064x}", "work-unit", b"{}")


def test_batches_are_written_in_order_one_at_a_time() -> None:
    written: list[list[Prepared]] = []
    active = [0]

    def write(items: list[Prepared]) -> None:
        active[0] += 1
        assert active[0] == 1  # never two batches at once
        written.append(items)
        active[0] -= 1

    writer = BatchWriter(write)
    batches = [[_item(i), _item(i + 1)] for i in range(0, 40, 2)]
    for b in batches:
        writer.submit(b)
    writer.finish()
    assert written == batches


def test_submit_waits_while_a_batch_is_written() -> None:
    """At most two batches are held: the writer's and the one being filled. A third
    ``submit`` would hold a third; it waits until the writer is idle."""
    release = threading.Event()
    started = threading.Event()
    written: list[int] = []

    def write(items: list[Prepared]) -> None:
        started.set()
        assert release.wait(HANG_GUARD_S)
        written.append(len(items))

    writer = BatchWriter(write)
    writer.submit([_item(1)])
    assert started.wait(HANG_GUARD_S)
    second = threading.Thread(target=writer.submit, args=([_item(2), _item(3)],))
    second.start()
    second.join(0.5)
    # Still waiting: the first batch is being written (a wrong writer returns at once).
    assert second.is_alive() and written == []
    release.set()
    second.join(HANG_GUARD_S)
    assert not second.is_alive()
    writer.finish()
    assert written == [1, 2]


def test_a_failing_write_is_raised_in_the_caller_and_nothing_after_it_is_written() -> None:
    error = StorageError("database or disk is full, got a full file, expected room")
    written: list[list[Prepared]] = []

    def write(items: list[Prepared]) -> None:
        if len(written) == 1:
            written.append([])
            raise error
        written.append(items)

    writer = BatchWriter(write)
    writer.submit([_item(1)])
    writer.submit([_item(2)])  # accepted once the first is written; its write fails
    with pytest.raises(StorageError) as raised:
        writer.submit([_item(3)])
    assert raised.value is error
    with pytest.raises(StorageError) as again:
        writer.finish()
    assert again.value is error
    assert written == [[_item(1)], []]


def test_abandon_waits_for_the_batch_being_written_and_writes_no_more() -> None:
    release = threading.Event()
    started = threading.Event()
    done: list[int] = []

    def write(items: list[Prepared]) -> None:
        started.set()
        assert release.wait(HANG_GUARD_S)
        done.append(len(items))

    writer = BatchWriter(write)
    writer.submit([_item(1)])
    assert started.wait(HANG_GUARD_S)
    threading.Timer(0.2, release.set).start()
    writer.abandon()
    assert done == [1]  # returned only after the write finished
    assert not writer._thread.is_alive()


# -- through import_jsonl -------------------------------------------------------------------


@pytest.mark.parametrize("workers", [1, 2])
def test_the_importer_reads_on_while_a_batch_is_written(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch, workers: int
) -> None:
    """The first batch's write waits until the importer has read on into the second
    batch's lines (small blocks: a few lines each): a writer in the importing thread
    never gets there (the guard fails the test). ``advance`` is called from the
    importing thread only."""
    lines = _lines(_docs(ledger_path, 4 * GROUP))
    data = b"".join(line + b"\n" for line in lines)
    into_second = sum(len(line) + 1 for line in lines[: GROUP + 1])
    small = functools.partial(bulk.read_blocks, block_bytes=2048)
    monkeypatch.setattr(bulk, "read_blocks", lambda source, limits: small(source, limits))
    read_on = threading.Event()
    advanced = [0]
    advancing: set[int] = set()
    writing: set[int] = set()

    def advance(n: int) -> None:
        advancing.add(threading.get_ident())
        advanced[0] += n
        if advanced[0] >= into_second:
            read_on.set()

    class _Held:
        def __init__(self, store: Any) -> None:
            self._store = store
            self.calls = 0

        def append_many(self, *args: Any, **options: Any) -> Any:
            self.calls += 1
            writing.add(threading.get_ident())
            if self.calls == 1:
                assert read_on.wait(HANG_GUARD_S), "the importer stopped while writing"
            return self._store.append_many(*args, **options)

        def __getattr__(self, name: str) -> Any:
            return getattr(self._store, name)

    with open_store(ledger_path) as store:
        held = _Held(store)
        summary = import_jsonl(
            held, io.BytesIO(data), batch=GROUP, workers=workers, advance=advance
        )  # type: ignore[arg-type]
    assert summary.ok and summary.new == 4 * GROUP and summary.batches == 4 == held.calls
    assert _stored(ledger_path) == _digests(lines)
    assert advancing == {threading.get_ident()}
    assert threading.get_ident() not in writing


@pytest.mark.parametrize("workers", [1, 2])
def test_a_storage_error_in_the_writer_stops_the_import(ledger_path: Path, workers: int) -> None:
    lines = _lines(_docs(ledger_path, 6 * GROUP))
    data = b"".join(line + b"\n" for line in lines)
    error = StorageError("database or disk is full, got a full file, expected room")
    with open_store(ledger_path) as store:
        failing = _FailOn(store, 3, error)
        with pytest.raises(StorageError) as raised:
            import_jsonl(failing, io.BytesIO(data), batch=GROUP, workers=workers)  # type: ignore[arg-type]
        assert raised.value is error
        assert failing.calls == 3  # no batch after the failing one
        assert not multiprocessing.active_children()
    assert _stored(ledger_path) == _digests(lines)[: 2 * GROUP]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_full_ledger_exits_3_through_the_cli(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch, workers: str
) -> None:
    """SQLite's own "full" error, raised in the writer thread, maps as before."""
    source = ledger_path.with_name("in.jsonl")
    source.write_bytes(b"".join(line + b"\n" for line in _lines(_docs(ledger_path, 3 * GROUP))))
    with open_store(ledger_path, readonly=True) as store:
        (pages,) = store._conn.execute("PRAGMA page_count").fetchone()
    before = state(ledger_path)
    capped = functools.partial(sqlite_store.open_store, max_page_count=pages)
    monkeypatch.setattr(sqlite_store, "open_store", capped)
    args = ["import", "jsonl", str(source), "--db", str(ledger_path), "--batch", "9"]
    result = CliRunner().invoke(app, [*args, "--workers", workers])
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    assert "full" in result.stderr
    monkeypatch.undo()
    assert state(ledger_path) == before


def test_an_interrupt_in_the_writer_reaches_the_caller_with_a_prefix(ledger_path: Path) -> None:
    lines = _lines(_docs(ledger_path, 4 * GROUP))
    data = b"".join(line + b"\n" for line in lines)
    with open_store(ledger_path) as store:
        failing = _FailOn(store, 2, KeyboardInterrupt())
        with pytest.raises(KeyboardInterrupt):
            import_jsonl(failing, io.BytesIO(data), batch=GROUP, workers=2)  # type: ignore[arg-type]
        assert failing.calls == 2 and not multiprocessing.active_children()
    assert _stored(ledger_path) == _digests(lines)[:GROUP]


# -- the signature memo across the two threads -----------------------------------------------


def test_signature_memo_verdicts_cross_threads_exactly_once() -> None:
    """One thread adds verdicts (the importer), another takes them (the writer): each
    is found exactly once, with the verdict given (a wrong signature marked True proves
    the memo answered, not a fresh check)."""
    memo = SignatureMemo()
    key = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    n = 5000
    messages = [f"message {i}".encode() for i in range(n)]
    sigs = [i.to_bytes(64, "big") for i in range(n)]
    added = threading.Semaphore(0)

    def add() -> None:
        for m, s in zip(messages, sigs, strict=True):
            memo.add(key, hashlib.sha256(m).digest(), s, True)
            added.release()

    adder = threading.Thread(target=add)
    adder.start()
    answers = []
    for m, s in zip(messages, sigs, strict=True):
        assert added.acquire(timeout=HANG_GUARD_S)
        answers.append(memo.verify(key, m, s))
    adder.join()
    assert answers == [True] * n  # every one from the memo: the signatures are not valid
    assert memo.verify(key, messages[0], sigs[0]) is False  # used once, then checked
