"""``verify`` compares the stored tree nodes a run of entries closes in one read per level
(``_AuditRun._grown``, ``CompactRange.extend``); each entry's own tree and checkpoint steps
are the reference. On clean and tampered ledgers (node hashes changed, of another SQL
type, deleted, repeated, extra; stored checkpoints inside a run) the report is the one
the per-entry steps give, finding for finding, in the same order, for any run length.
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

import bench_corpus
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.audit import full, parallel
from ledger.audit.full import audit
from ledger.cli import app
from ledger.store.bulk import import_jsonl
from ledger.store.sqlite import open_store
from ledger.trust.keys import Ed25519Signer

_SIZE = 91  # 90 objects and the checkpoint record logged between them


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger of corpus objects with a checkpoint (and its record) part-way through."""
    db = tmp_path_factory.mktemp("tree-runs") / "ledger.db"
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    lines = [json.dumps(d).encode() + b"\n" for d in bench_corpus.corpus(90, 11, signer)]
    with open_store(db) as store:
        import_jsonl(store, io.BytesIO(b"".join(lines[:45])), batch=15)
    assert runner.invoke(app, ["checkpoint", "--db", str(db)]).exit_code == 0
    with open_store(db) as store:
        import_jsonl(store, io.BytesIO(b"".join(lines[45:])), batch=15)
    with open_store(db, readonly=True) as store:
        assert store.size() == _SIZE
    return db


def _reports(db: Path, chunk: int, monkeypatch: pytest.MonkeyPatch) -> tuple[object, object, int]:
    """The audit's JSON with runs of ``chunk`` entries, the same with every run taking
    the per-entry steps, and how many runs took the one-read-per-level path."""
    monkeypatch.setattr(parallel, "_CHUNK", chunk)
    grown = full._AuditRun._grown
    fast = 0

    def counted(self: full._AuditRun, rows: list[object], leaves: bytes) -> object:
        nonlocal fast
        result = grown(self, rows, leaves)  # type: ignore[arg-type]
        fast += result is not None
        return result

    monkeypatch.setattr(full._AuditRun, "_grown", counted)
    with open_store(db, readonly=True) as store:
        runs = audit(store, workers=1).to_json()
    monkeypatch.setattr(full._AuditRun, "_grown", lambda self, rows, leaves: None)
    with open_store(db, readonly=True) as store:
        each = audit(store, workers=1).to_json()
    monkeypatch.setattr(full._AuditRun, "_grown", grown)
    return runs, each, fast


def test_clean_ledger_takes_the_run_path_and_finds_nothing(
    built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs, each, fast = _reports(built, 8, monkeypatch)
    assert runs == each
    assert runs["ok"] is True  # type: ignore[index]
    # Every run of 8 but the ones holding the checkpoint (size 45) and its record (seq 45).
    assert fast >= _SIZE // 8 - 2


_TAMPER = st.sampled_from(["hash", "text", "delete", "repeat", "repeat-same", "extra", "real"])


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    edits=st.lists(
        st.tuples(_TAMPER, st.integers(0, 6), st.integers(0, 90)), min_size=1, max_size=4
    ),
    checkpoint=st.none() | st.integers(1, _SIZE + 2),
    chunk=st.sampled_from([1, 3, 8, 32, 256]),
)
def test_tampered_tree_gives_the_per_entry_report(
    built: Path,
    monkeypatch: pytest.MonkeyPatch,
    edits: list[tuple[str, int, int]],
    checkpoint: int | None,
    chunk: int,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ledger.db"
        shutil.copy(built, db)
        conn = sqlite3.connect(db)
        # No key and no declared types: any row may be repeated, any value kept as given.
        conn.executescript(
            "DROP TRIGGER IF EXISTS tree_nodes_no_delete; DROP TRIGGER IF EXISTS"
            " tree_nodes_no_update; CREATE TABLE nodes AS SELECT * FROM tree_nodes;"
            " DROP TABLE tree_nodes; CREATE TABLE tree_nodes (level, idx, hash);"
            " INSERT INTO tree_nodes SELECT * FROM nodes ORDER BY level, idx; DROP TABLE nodes;"
        )
        for what, level, at in edits:
            idx = at >> level
            where = (level, idx)
            if what == "hash":
                conn.execute(
                    "UPDATE tree_nodes SET hash = ? WHERE level = ? AND idx = ?",
                    (bytes([at]) * 32, *where),
                )
            elif what == "text":
                conn.execute(
                    "UPDATE tree_nodes SET hash = hex(hash) WHERE level = ? AND idx = ?", where
                )
            elif what == "delete":
                conn.execute("DELETE FROM tree_nodes WHERE level = ? AND idx = ?", where)
            elif what in ("repeat", "repeat-same"):
                value = bytes(32) if what == "repeat" else None
                conn.execute(
                    "INSERT INTO tree_nodes SELECT level, idx, coalesce(?, hash) FROM tree_nodes"
                    " WHERE level = ? AND idx = ? LIMIT 1",
                    (value, *where),
                )
            elif what == "extra":
                conn.execute(
                    "INSERT INTO tree_nodes VALUES (?, ?, ?)", (level, idx + 200, bytes(32))
                )
            else:  # the same idx as a REAL: equal to the integer in SQL and in Python
                conn.execute(
                    "UPDATE tree_nodes SET idx = CAST(idx AS REAL) WHERE level = ? AND idx = ?",
                    where,
                )
        if checkpoint is not None:
            conn.execute("DROP TRIGGER IF EXISTS checkpoints_no_insert")
            conn.execute(
                "INSERT OR IGNORE INTO checkpoints (size, root, note, created_at)"
                " VALUES (?, ?, ?, ?)",
                (checkpoint, bytes(32), b"not a note\n", "2026-01-01T00:00:00.000000Z"),
            )
        conn.commit()
        conn.close()
        runs, each, _fast = _reports(db, chunk, monkeypatch)
    assert runs == each
