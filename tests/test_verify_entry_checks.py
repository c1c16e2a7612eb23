"""``verify`` checks each entry's own row where its objects are checked (``check_chunk``,
in the audit's workers), and gives exactly the one-process report.

- On tampered ledgers (changed bytes, rows swapped inside a chunk and across a chunk
  boundary, an entry or object row missing, a column of the wrong SQL type), the
  pooled audit, with the parent checking every chunk it can or none, reports the same
  findings in the same order as the audit in one process, and they name the tampering.
- Rows rewritten by a hostile writer while the audit runs do not reach it: the workers
  check the rows the auditing process read, from its snapshot, so the report is the one
  of the ledger as it was when the audit started; the next audit finds the rewrite.
- Totals re-derived per chunk and merged equal those of one pass over the rows.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from generated_ledger import generated_ledger
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.audit import full, parallel
from ledger.audit.entry_check import run_totals
from ledger.audit.full import LedgerAuditReport, audit
from ledger.store import sqlite_scan
from ledger.store.base import StoredObject
from ledger.store.sqlite import open_store

_TRIGGERS = ("objects_no_update", "entries_no_update", "objects_no_delete", "entries_no_delete")


@pytest.fixture
def corpus_ledger(tmp_path: Path) -> Path:
    """60 entries of the benchmark corpus (documents of every kind, float hints)."""
    return Path(generated_ledger(tmp_path, 60, 11))


def _writer(db: Path) -> sqlite3.Connection:
    """A connection of a hostile writer: the append-only triggers dropped."""
    conn = sqlite3.connect(db)
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
    for name in names:
        if name in _TRIGGERS:
            conn.execute(f"DROP TRIGGER {name}")
    conn.commit()
    return conn


def _swap(conn: sqlite3.Connection, a: int, b: int) -> None:
    """Swap entries ``a`` and ``b`` (their entry and object rows) in the log order."""
    for table in ("entries", "objects"):
        conn.execute(f"UPDATE {table} SET seq = -1 WHERE seq = ?", (a,))
        conn.execute(f"UPDATE {table} SET seq = ? WHERE seq = ?", (a, b))
        conn.execute(f"UPDATE {table} SET seq = ? WHERE seq = -1", (b,))


_TAMPERING: dict[str, tuple[list[str], set[str]]] = {
    "bytes": (
        [
            "UPDATE objects SET data = CAST(data || ' ' AS BLOB) WHERE seq = 5",
            "UPDATE objects SET data = CAST(replace(CAST(data AS TEXT), '1', '2') AS BLOB)"
            " WHERE seq = 22",
        ],
        {"digest-mismatch"},
    ),
    "swapped-in-chunk": (["swap 9 10"], {"tree-node-mismatch"}),
    "swapped-across-chunks": (["swap 11 12", "swap 3 40"], {"tree-node-mismatch"}),
    "entry-missing": (["DELETE FROM entries WHERE seq = 17"], {"sequence-gap"}),
    "object-missing": (["DELETE FROM objects WHERE seq = 30"], {"object-missing"}),
    "column-type": (
        [
            "UPDATE entries SET appended_at = 7 WHERE seq = 2",
            "UPDATE objects SET object_version = 'x' WHERE seq = 26",
        ],
        {"entry-invalid", "object-row-invalid"},
    ),
    "entry-kind": (
        ["UPDATE entries SET kind = 'blob' WHERE seq = 33"],
        {"entry-object-mismatch", "totals-mismatch"},
    ),
}


def _apply(db: Path, statements: list[str]) -> None:
    conn = _writer(db)
    for statement in statements:
        if statement.startswith("swap "):
            a, b = map(int, statement.split()[1:])
            _swap(conn, a, b)
        else:
            conn.execute(statement)
    conn.commit()
    conn.close()


def _pooled(db: Path, monkeypatch: pytest.MonkeyPatch, steal: bool) -> LedgerAuditReport:
    monkeypatch.setattr(parallel, "_CHUNK", 4)  # many chunks for a small ledger
    real_done = parallel._Done
    if steal:  # a pool task never looks done: the parent checks what it can
        monkeypatch.setattr(parallel, "_ready", lambda task: isinstance(task, real_done))
    else:  # a pool task always looks done: the parent waits for it
        monkeypatch.setattr(parallel, "_ready", lambda task: True)
    with open_store(db, readonly=True) as store:
        return audit(store, workers=2)


@pytest.mark.parametrize("tampering", sorted(_TAMPERING))
@pytest.mark.parametrize("steal", [True, False])
def test_pooled_audit_finds_what_the_one_process_audit_finds(
    corpus_ledger: Path, monkeypatch: pytest.MonkeyPatch, tampering: str, steal: bool
) -> None:
    statements, expected = _TAMPERING[tampering]
    _apply(corpus_ledger, statements)
    with open_store(corpus_ledger, readonly=True) as store:
        alone = audit(store, workers=1)
    pooled = _pooled(corpus_ledger, monkeypatch, steal)
    assert [f.to_json() for f in pooled.findings] == [f.to_json() for f in alone.findings]
    assert pooled.to_json() == alone.to_json()
    codes = {f.code for f in alone.findings}
    assert expected <= codes, codes


def test_rows_rewritten_during_the_audit_do_not_reach_it(
    corpus_ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile writer rewrites rows the workers have not checked yet, mid-audit (after
    the first chunk): the report is the one of the ledger before the rewrite."""
    writer = _writer(corpus_ledger)  # triggers dropped before the audits: both see that
    with open_store(corpus_ledger, readonly=True) as store:
        before = audit(store, workers=1)
    monkeypatch.setattr(parallel, "_CHUNK", 4)
    monkeypatch.setattr(parallel, "_ready", lambda task: True)  # the workers check
    monkeypatch.setattr(sqlite_scan, "_FETCH", 4)  # the parent reads during the pass too
    done: list[bool] = []

    def rewrite(_n: int) -> None:
        if not done:
            writer.execute("UPDATE objects SET data = CAST(data || ' ' AS BLOB) WHERE seq >= 20")
            writer.execute("UPDATE entries SET appended_at = 'then' WHERE seq >= 20")
            writer.commit()
            done.append(True)

    with open_store(corpus_ledger, readonly=True) as store:
        during = audit(store, workers=2, advance=rewrite)
    writer.close()
    assert done
    assert during.to_json() == before.to_json()
    assert not {f.code for f in during.findings} & {"digest-mismatch", "entry-invalid"}
    # The rewrite is in the file: the next audit finds it, entry by entry.
    with open_store(corpus_ledger, readonly=True) as store:
        after = audit(store, workers=2)
    digests = [f for f in after.findings if f.code == "digest-mismatch"]
    assert [f.seq for f in digests] == list(range(20, 60))


_KINDS = st.sampled_from(["a", "b", 1, b"c", None])


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(_KINDS, st.one_of(st.none(), st.tuples(_KINDS, st.binary(max_size=3)))),
        max_size=30,
    ),
    cut=st.integers(1, 7),
)
def test_totals_per_chunk_merged_equal_one_pass(rows: list[tuple[Any, Any]], cut: int) -> None:
    entries = [
        (
            seq,
            "d",
            kind,
            "t",
            None
            if obj is None
            else StoredObject("d", seq, obj[0], None, None, None, None, None, obj[1]),
        )
        for seq, (kind, obj) in enumerate(rows)
    ]
    merged = full._Totals()
    for at in range(0, len(entries), cut):
        merged.merge(run_totals(entries[at : at + cut]))
    whole = run_totals(entries)
    assert merged.by_kind == whole
    assert list(merged.by_kind) == list(whole)
    # One pass counts each entry by its kind and each object row by its own.
    assert sum(f[0] for f in whole.values()) == len(rows)
    assert sum(f[1] for f in whole.values()) == sum(obj is not None for _k, obj in rows)
