"""``provledger verify`` runs its whole-file reads beside the pass (``ledger.audit.aside``).

- An SQLite audit reads one snapshot: ``audit_session`` holds one read transaction, so
  a writer appending during the audit changes nothing in its report.
- The second reader (``second_reader``) is handed out only when its snapshot is the
  audit's: a commit between the two read transactions is seen by ``PRAGMA
  data_version`` (even one that adds no row) or by the newest rows, and then there is
  none (the audit reads everything itself, as before).
- With or without the second reader the report is the same, findings in the same order,
  on clean and tampered files (integrity, orphans, duplicates), resumed or not.
- What a read raises is raised by the audit as in the serial order: the integrity
  check's error before anything the pass raises; ``Aside.stop`` interrupts a read.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
from test_tamper_record import point_digest_index

from ledger.audit import aside as aside_module
from ledger.audit.aside import Aside
from ledger.audit.full import audit
from ledger.store import sqlite_audit
from ledger.store.base import StorageFinding
from ledger.store.bulk import import_jsonl
from ledger.store.sqlite import SQLiteStore, open_store


def _lines(n: int, db: Path, seed: int) -> bytes:
    from ledger.trust.keys import Ed25519Signer

    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    return b"".join(json.dumps(d).encode() + b"\n" for d in bench_corpus.corpus(n, seed, signer))


def _append(db: Path, n: int, seed: int) -> None:
    with open_store(db) as store:
        summary = import_jsonl(store, io.BytesIO(_lines(n, db, seed)), batch=n)
    assert summary.new == n


@pytest.fixture
def led(ledger_path: Path) -> Path:
    _append(ledger_path, 60, 11)
    return ledger_path


@pytest.fixture
def led90(ledger_path: Path) -> Path:
    """90 entries written at once (the index tampering finds each key once in the file)."""
    _append(ledger_path, 90, 11)
    return ledger_path


def _head(db: Path) -> bytes:
    from typer.testing import CliRunner

    from ledger.cli import app

    result = CliRunner().invoke(app, ["checkpoint", "--db", str(db)])
    assert result.exit_code == 0, result.output
    return result.stdout_bytes


@pytest.fixture
def used(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The second readers the audits of the test were given."""
    given: list[object] = []
    real = SQLiteStore.second_reader

    def spy(self: SQLiteStore) -> Any:
        reader = real(self)
        given.append(reader)
        return reader

    monkeypatch.setattr(SQLiteStore, "second_reader", spy)
    return given


def _raw(db: Path, *statements: str) -> None:
    conn = sqlite3.connect(db)
    for sql in statements:
        conn.execute(sql)
    conn.commit()
    conn.close()


_DUPLICATE = (
    "INSERT INTO objects (digest, seq, kind, schema_version, object_id, object_version,"
    " legacy_digest, legacy_hints, data) SELECT digest, 1000 + seq, kind, schema_version,"
    " object_id, object_version, legacy_digest, legacy_hints, data FROM objects"
    " WHERE seq IN (5, 50)"
)
_ORPHAN = (
    "INSERT INTO objects (digest, seq, kind, data) VALUES"
    " ('sha256:' || hex(randomblob(32)), 2000, 'blob', x'00')"
)


def _index(db: Path) -> None:
    conn = sqlite3.connect(db)
    # Two objects nothing refers to: the refs index holds no record with their key.
    a, b = [
        seq
        for (seq,) in conn.execute(
            "SELECT seq FROM objects WHERE digest NOT IN (SELECT to_digest FROM refs)"
            " ORDER BY seq LIMIT 2"
        )
    ]
    conn.close()
    point_digest_index(db, a, b)


def _rows(db: Path) -> None:
    _raw(db, _DUPLICATE, _ORPHAN)


def _both(db: Path) -> None:
    _index(db)
    _rows(db)


# Resumed (``since``): no index tampering, the integrity check is the full audit's.
@pytest.mark.parametrize(
    ("tamper", "since"),
    [(None, False), (_index, False), (_rows, False), (_both, False), (None, True), (_rows, True)],
)
def test_the_report_is_the_same_with_and_without_the_second_reader(
    ledger_path: Path,
    used: list[object],
    monkeypatch: pytest.MonkeyPatch,
    tamper: Callable[[Path], None] | None,
    since: bool,
) -> None:
    led, note = ledger_path, None
    if since:  # resumed at 60: the rows past it are audited
        _append(led, 60, 11)
        note = _head(led)
        _append(led, 30, 12)
    else:
        _append(led, 90, 11)
    if tamper is not None:
        tamper(led)
    with open_store(led, readonly=True) as store:
        beside = audit(store, workers=1, since_checkpoint=note)
    assert len(used) == 1 and used[0] is not None
    monkeypatch.setattr(SQLiteStore, "second_reader", lambda self: None)
    with open_store(led, readonly=True) as store:
        serial = audit(store, workers=1, since_checkpoint=note)
    assert beside.to_json() == serial.to_json()
    codes = [f.code for f in serial.findings]
    if tamper is None:
        assert codes == []
    if tamper in (_index, _both):
        assert codes[:3] == ["database-corrupt", "digest-index-mismatch", "digest-index-mismatch"]
    if tamper in (_rows, _both):
        assert "object-without-entry" in codes and "object-duplicate" in codes
        assert codes.index("object-without-entry") < codes.index("object-duplicate")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_writer_appending_during_the_audit_changes_nothing(
    led: Path, used: list[object], workers: int
) -> None:
    with open_store(led, readonly=True) as store:
        before = audit(store, workers=workers)
    assert before.ok and before.entries == 60
    appended = []

    def advance(_n: int) -> None:
        if not appended:  # after the first entry: the pass and the reader are under way
            _append(led, 30, 12)
            appended.append(True)

    with open_store(led, readonly=True) as store:
        during = audit(store, workers=workers, advance=advance)
        assert store.size() == 90  # the writer committed while the audit ran
    assert appended and used[-1] is not None
    assert during.to_json() == before.to_json()


def _commit_between(
    monkeypatch: pytest.MonkeyPatch, led: Path, write: Callable[[], None]
) -> list[object]:
    """Run ``write`` after the audit's snapshot starts, before the second reader's."""
    real = SQLiteStore._same_snapshot

    def late(self: SQLiteStore, side: Any, version: int, mark: Any) -> Any:
        write()
        return real(self, side, version, mark)

    monkeypatch.setattr(SQLiteStore, "_same_snapshot", late)
    readers = []
    with open_store(led, readonly=True) as store, store.audit_session():
        readers.append(store.second_reader())
    return readers


def test_no_second_reader_after_an_append_between_the_snapshots(
    led: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert _commit_between(monkeypatch, led, lambda: None)[0] is not None  # the control
    assert _commit_between(monkeypatch, led, lambda: _append(led, 3, 12)) == [None]


def test_no_second_reader_after_a_commit_that_adds_no_newest_row(
    led: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only ``data_version`` sees this commit: the newest rows are the same."""

    def meta() -> None:
        _raw(led, "INSERT INTO meta (key, value) VALUES ('x', 'y')")

    assert _commit_between(monkeypatch, led, meta) == [None]


def test_no_second_reader_when_the_newest_rows_differ(
    led: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the mark sees it when ``data_version`` cannot (here: made constant)."""
    monkeypatch.setattr(sqlite_audit, "data_version", lambda conn: 0)
    assert _commit_between(monkeypatch, led, lambda: None)[0] is not None
    assert _commit_between(monkeypatch, led, lambda: _append(led, 3, 12)) == [None]


def test_inside_a_transaction_the_audit_reads_alone(led: Path) -> None:
    with open_store(led) as store:
        store.connection.execute("BEGIN")
        with store.audit_session():
            assert store.second_reader() is None
        assert store.connection.in_transaction  # the caller's, left open
        store.connection.execute("COMMIT")
        with store.audit_session():
            assert store.second_reader() is not None
            assert store.connection.in_transaction  # the session's own snapshot
        assert not store.connection.in_transaction and store.second_reader() is None


def _first_error(
    led: Path, monkeypatch: pytest.MonkeyPatch, beside: bool, *, schema: bool, rows: bool
) -> str:
    """The message of what ``audit`` raises when the integrity check fails, and the schema
    check (``schema``) or the pass's row reading (``rows``) fail too."""

    def corrupt(conn: sqlite3.Connection) -> list[StorageFinding]:
        raise sqlite3.DatabaseError("integrity")

    def schema_fails(conn: sqlite3.Connection, expected: Any) -> list[StorageFinding]:
        raise sqlite3.OperationalError("schema")

    def rows_fail(self: SQLiteStore, since: int = 0) -> Iterator[Any]:
        raise sqlite3.OperationalError("rows")

    monkeypatch.setattr(sqlite_audit, "integrity_findings", corrupt)
    if schema:
        monkeypatch.setattr(sqlite_audit, "schema_findings", schema_fails)
    if rows:
        monkeypatch.setattr(SQLiteStore, "log_rows", rows_fail)
    if not beside:
        monkeypatch.setattr(SQLiteStore, "second_reader", lambda self: None)
    with open_store(led, readonly=True) as store, pytest.raises(sqlite3.Error) as exc:
        audit(store, workers=1)
    return str(exc.value)


@pytest.mark.parametrize("beside", [True, False])
def test_the_integrity_error_wins_over_the_pass_error(
    led: Path, monkeypatch: pytest.MonkeyPatch, beside: bool
) -> None:
    assert _first_error(led, monkeypatch, beside, schema=False, rows=True) == "integrity"


@pytest.mark.parametrize("beside", [True, False])
def test_the_schema_error_comes_before_the_integrity_error(
    led: Path, monkeypatch: pytest.MonkeyPatch, beside: bool
) -> None:
    """The schema check runs before the integrity check in the serial order."""
    assert _first_error(led, monkeypatch, beside, schema=True, rows=True) == "schema"


class _Reader:
    """A ``SnapshotReader`` whose integrity read blocks until interrupted (or raises)."""

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.interrupted = threading.Event()
        self.started = threading.Event()
        self.calls: list[str] = []

    def integrity_findings(self) -> list[StorageFinding]:
        self.calls.append("integrity")
        if self.fail:
            raise sqlite3.DatabaseError("corrupt")
        self.started.set()
        self.interrupted.wait(60)  # bounded: a missed interrupt fails below, never hangs
        raise sqlite3.OperationalError("interrupted")

    def orphan_objects(self, start: int = 0) -> list[tuple[object, object]]:
        self.calls.append("orphans")
        return []

    def duplicate_objects(self, start: int = 0, limit: int = 100) -> list[tuple[object, object]]:
        self.calls.append("duplicates")
        return []

    def interrupt(self) -> None:
        self.interrupted.set()


def test_stop_interrupts_the_read_under_way_and_runs_no_other() -> None:
    reader = _Reader()
    aside = Aside(reader, True, 0, 100)
    assert reader.started.wait(60)
    aside.stop()
    assert reader.interrupted.is_set()
    assert reader.calls == ["integrity"]


def test_a_read_that_raises_raises_where_it_is_taken_and_ends_the_reads() -> None:
    reader = _Reader(fail=True)
    aside = Aside(reader, True, 0, 100)
    with pytest.raises(sqlite3.DatabaseError, match="corrupt"):
        aside.integrity_findings()
    assert isinstance(aside.integrity_raised(), sqlite3.DatabaseError)
    aside.stop()
    assert reader.calls == ["integrity"]


def test_a_resumed_audit_reads_no_integrity() -> None:
    reader = _Reader()
    aside = Aside(reader, False, 5, 100)
    assert aside.integrity_findings() == []
    assert aside.orphan_objects(5) == [] and aside.duplicate_objects(5, 100) == []
    aside.stop()
    assert reader.calls == ["orphans", "duplicates"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread niceness")
def test_the_reads_run_at_a_lower_priority_than_the_pass() -> None:
    seen: list[int] = []

    class Niceness(_Reader):
        def integrity_findings(self) -> list[StorageFinding]:
            seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return []

    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    aside = Aside(Niceness(), True, 0, 100)
    assert aside.integrity_findings() == []
    aside.stop()
    assert seen == [min(19, mine + aside_module.NICE)]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # only it
