"""The audit judges the usual entry of a run whose tree nodes all match inline
(``_AuditRun._judge_run``); its report is exactly the per-entry reference's
(``_judge`` of each entry with its unpacked check, the loop it replaces), on clean
ledgers and on files a careful hostile writer edited, tree and totals recomputed so the
inline path judges the edited entries itself: entries missing (sequence gaps), entries
reordered, reference rows deleted, a burned cohort walked back and governed records
written past admission, wrong column types and text that is not UTF-8 (those take the
reference path inside the run), with one process and with workers."""

from __future__ import annotations

import io
import json
import sqlite3
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
from test_hostile_writer import Led, burned  # noqa: F401  (a fixture)
from test_replay_kinds import walk_back
from test_tamper import rebuild_tree

from ledger.audit import full, parallel
from ledger.audit.entry_check import Packed
from ledger.audit.full import audit
from ledger.store.base import RawLogRow
from ledger.store.bulk import import_jsonl
from ledger.store.sqlite import open_store


def _reference(
    self: full._AuditRun, rows: list[RawLogRow], checks: list[Packed], size: int
) -> None:
    for at, row in enumerate(rows):
        self._judge(row, self._check(row, checks[at]), size + at)


def _reports(db: Path, monkeypatch: pytest.MonkeyPatch, workers: int) -> tuple[Any, Any, int]:
    """The audit's JSON inline and with the reference, and how many entries were
    judged inline (their check a list of references)."""
    inline = 0
    real = full._AuditRun._judge_run

    def counted(
        self: full._AuditRun, rows: list[RawLogRow], checks: list[Packed], size: int
    ) -> None:
        nonlocal inline
        inline += sum(type(c) is list for c in checks)
        real(self, rows, checks, size)

    monkeypatch.setattr(parallel, "_CHUNK", 8)
    monkeypatch.setattr(parallel, "POOL_THRESHOLD", 0)
    monkeypatch.setattr(full._AuditRun, "_judge_run", counted)
    with open_store(db, readonly=True) as store:
        fast = audit(store, workers=workers).to_json()
    monkeypatch.setattr(full._AuditRun, "_judge_run", _reference)
    with open_store(db, readonly=True) as store:
        slow = audit(store, workers=workers).to_json()
    return fast, slow, inline


@pytest.fixture
def corpus_ledger(ledger_path: Path) -> Path:
    from ledger.trust.keys import Ed25519Signer

    signer = Ed25519Signer.from_file(ledger_path.with_name(ledger_path.name + ".authority.key"))
    lines = b"".join(json.dumps(d).encode() + b"\n" for d in bench_corpus.corpus(90, 11, signer))
    with open_store(ledger_path) as store:
        assert import_jsonl(store, io.BytesIO(lines), batch=30).new == 90
    return ledger_path


def _edit(db: Path, *statements: str) -> None:
    """``statements`` on the file, then the tree and totals recomputed (where the entry
    rows can be read as text)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    for statement in statements:
        conn.execute(statement)
    try:
        conn.execute("SAVEPOINT tree")
        rebuild_tree(conn)
        conn.execute("RELEASE tree")
    except sqlite3.OperationalError:  # text that is not UTF-8: the tree left as it was
        conn.execute("ROLLBACK TO tree")
    conn.execute("COMMIT")
    conn.close()


_EDITS: dict[str, tuple[tuple[str, ...], set[str]]] = {
    "clean": ((), set()),
    "entries missing": (
        (
            "DELETE FROM refs WHERE from_digest IN"
            " (SELECT digest FROM objects WHERE seq IN (12, 40))",
            "DELETE FROM objects WHERE seq IN (12, 40)",
            "DELETE FROM entries WHERE seq IN (12, 40)",
        ),
        {"sequence-gap"},
    ),
    "entries reordered": (
        (
            "UPDATE entries SET seq = -1 WHERE seq = 20",
            "UPDATE objects SET seq = -1 WHERE seq = 20",
            "UPDATE entries SET seq = 20 WHERE seq = 21",
            "UPDATE objects SET seq = 20 WHERE seq = 21",
            "UPDATE entries SET seq = 21 WHERE seq = -1",
            "UPDATE objects SET seq = 21 WHERE seq = -1",
        ),
        set(),  # what the replay makes of it: compared, not named
    ),
    "reference rows deleted": (
        (
            "DELETE FROM refs WHERE rowid IN"
            " (SELECT rowid FROM refs ORDER BY rowid LIMIT 3 OFFSET 5)",
        ),
        {"ref-missing"},
    ),
    "wrong types and bad text": (
        (
            "UPDATE objects SET object_version = 'x' WHERE seq = 30",
            "UPDATE entries SET kind = CAST(X'ff' AS TEXT) WHERE seq = 33",
            "UPDATE objects SET seq = CAST(seq AS TEXT) WHERE seq = 50",
        ),
        {"object-row-invalid"},
    ),
}


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("edit", sorted(_EDITS))
def test_corpus_edits_give_the_reference_report(
    corpus_ledger: Path, monkeypatch: pytest.MonkeyPatch, edit: str, workers: int
) -> None:
    statements, codes = _EDITS[edit]
    if statements:
        _edit(corpus_ledger, *statements)
    fast, slow, inline = _reports(corpus_ledger, monkeypatch, workers)
    assert fast == slow
    assert inline > 40
    found = {f["code"] for f in fast["findings"]}
    assert codes <= found
    assert fast["ok"] is (edit == "clean")


def test_walk_back_and_governed_records_give_the_reference_report(
    burned: Led,  # noqa: F811  (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walk_back(burned)
    fast, slow, inline = _reports(burned.db, monkeypatch, 1)
    assert fast == slow
    assert inline > 5
    assert {"cohort-lifecycle", "authority-governed"} <= {f["code"] for f in fast["findings"]}
