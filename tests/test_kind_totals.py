"""Per-kind totals kept by the store: written with the rows, read by ``stats`` without a
scan, re-derived by ``verify``, made by ``migrate``."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import app
from ledger.errors import IntegrityError
from ledger.store.prepared import prepare_blob
from ledger.store.sqlite import FORMAT, TOTALS_TRIGGERS, open_store

PROVLEDGER = Path(sys.executable).with_name("provledger")

# What the totals must equal: the same figures from a full scan of the rows.
SCAN = (
    "SELECT kind, sum(e), sum(o), sum(b) FROM ("
    " SELECT kind, 1 AS e, 0 AS o, 0 AS b FROM entries UNION ALL"
    " SELECT o.kind, 0, 1, length(o.data) FROM objects o JOIN entries e ON e.seq = o.seq"
    ") GROUP BY kind ORDER BY kind"
)


def scanned(db: Path) -> dict[str, tuple[int, int, int]]:
    with sqlite3.connect(db) as conn:
        return {k: (e, o, b) for k, e, o, b in conn.execute(SCAN)}


def stored(db: Path) -> dict[str, tuple[int, int, int]]:
    with open_store(db, readonly=True) as store:
        return store.kind_totals()


def test_totals_follow_appends_checkpoints_and_duplicates(
    ledger_path: Path, runner: CliRunner
) -> None:
    assert stored(ledger_path) == {} == scanned(ledger_path)
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"a"), prepare_blob(b"bb"), prepare_blob(b"a")])
    assert stored(ledger_path) == {"blob": (2, 2, 3)} == scanned(ledger_path)
    assert runner.invoke(app, ["checkpoint", "--db", str(ledger_path)]).exit_code == 0
    with open_store(ledger_path) as store:
        # Already stored: no entry, no change. Then one new blob after the logged checkpoint.
        assert not store.append_many([prepare_blob(b"bb")])[0].new
        store.append_many([prepare_blob(b"ccc")])
    totals = stored(ledger_path)
    assert set(totals) == {"blob", "checkpoint"}
    assert totals["blob"] == (3, 3, 6)
    assert totals["checkpoint"][:2] == (1, 1)
    assert totals == scanned(ledger_path)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(st.binary(max_size=40), max_size=6), max_size=5))
def test_totals_equal_a_scan_after_any_batches(
    tmp_path_factory: pytest.TempPathFactory, batches: list[list[bytes]]
) -> None:
    db = tmp_path_factory.mktemp("totals") / "ledger.db"
    assert CliRunner().invoke(app, ["init", "--db", str(db)]).exit_code == 0
    with open_store(db) as store:
        for batch in batches:
            store.append_many([prepare_blob(data) for data in batch])
    assert stored(db) == scanned(db)


def test_failed_and_dry_run_batches_leave_totals_alone(ledger_path: Path) -> None:
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"kept")])
    before = stored(ledger_path)

    def refuse(_results: object) -> None:
        raise RuntimeError("refused before commit")

    with open_store(ledger_path) as store, pytest.raises(RuntimeError):
        store.append_many([prepare_blob(b"never")], before_commit=refuse)
    assert stored(ledger_path) == before

    with open_store(ledger_path, dry_run=True) as store:
        store.append_many([prepare_blob(b"dry one")])
        # Inside the dry run the totals include it, as the rows do.
        assert store.kind_totals()["blob"] == (2, 2, len(b"kept") + len(b"dry one"))
        with pytest.raises(RuntimeError):
            store.append_many([prepare_blob(b"dry two")], before_commit=refuse)
        assert store.kind_totals()["blob"][0] == 2  # the savepoint took the batch back
    assert stored(ledger_path) == before == scanned(ledger_path)


def test_stats_reads_no_table_scan(ledger_path: Path) -> None:
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"x%d" % i) for i in range(50)])
    with open_store(ledger_path, readonly=True) as store:
        conn = store.connection
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        snapshot = store.stats()
        conn.set_trace_callback(None)
        queries = [q for q in seen if q.lstrip().upper().startswith("SELECT")]
        assert queries
        for sql in queries:
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            # Only the few kind_totals rows may be read in full.
            scans = [p for p in plan if p.startswith("SCAN") and "kind_totals" not in p]
            assert not scans, (sql, plan)
    assert snapshot.counts == {"blob": 50}
    assert snapshot.object_bytes == sum(len(b"x%d" % i) for i in range(50))


def test_stats_json_shape_and_figures(ledger_path: Path, runner: CliRunner) -> None:
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"one"), prepare_blob(b"three")])
    assert runner.invoke(app, ["checkpoint", "--db", str(ledger_path)]).exit_code == 0
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"after")])
    # The installed command, as a user runs it.
    done = subprocess.run(
        [str(PROVLEDGER), "stats", "--db", str(ledger_path), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PROVLEDGER_NO_PROGRESS": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    info = json.loads(done.stdout)
    assert sorted(info) == [
        "by_kind",
        "db",
        "entries",
        "file_bytes",
        "latest_checkpoint_size",
        "object_bytes",
        "origin",
    ]
    scan = scanned(ledger_path)
    assert info["entries"] == 4
    assert info["by_kind"] == {kind: e for kind, (e, _o, _b) in scan.items()}
    assert list(info["by_kind"]) == sorted(info["by_kind"])
    assert info["object_bytes"] == sum(b for _e, _o, b in scan.values())
    assert info["latest_checkpoint_size"] == 2


def test_totals_only_grow(ledger_path: Path) -> None:
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"abc")])
    conn = sqlite3.connect(ledger_path)
    try:
        for sql in (
            "UPDATE kind_totals SET bytes = bytes - 1",
            "UPDATE kind_totals SET entries = 0",
            "UPDATE kind_totals SET kind = 'other'",
            "DELETE FROM kind_totals",
        ):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                conn.execute(sql)
    finally:
        conn.close()
    assert stored(ledger_path) == {"blob": (1, 1, 3)}
    names = {n for (n,) in sqlite3.connect(ledger_path).execute("SELECT name FROM sqlite_master")}
    assert set(TOTALS_TRIGGERS) <= names


def _forge(db: Path, sql: str) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    saved = [
        q for (q,) in conn.execute("SELECT sql FROM sqlite_master WHERE name LIKE 'kind_totals_%'")
    ]
    for name in TOTALS_TRIGGERS:
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute(sql)
    for q in saved:
        conn.execute(q)
    conn.execute("COMMIT")
    conn.close()


def test_forged_totals_are_caught_by_stats_and_verify(ledger_path: Path, runner: CliRunner) -> None:
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"one"), prepare_blob(b"two")])
    # Fewer entries than the log holds: stats' own cheap guard refuses it (exit 1).
    _forge(ledger_path, "UPDATE kind_totals SET entries = 1")
    refused = runner.invoke(app, ["stats", "--db", str(ledger_path)])
    assert refused.exit_code == IntegrityError.exit_code == 1
    assert "run `provledger verify`" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1
    found = runner.invoke(app, ["verify", "--db", str(ledger_path), "--json"])
    assert found.exit_code == 1
    codes = [f["code"] for f in json.loads(found.stdout)["findings"]]
    assert codes == ["totals-mismatch"]


def test_forged_bytes_pass_stats_but_not_verify(ledger_path: Path, runner: CliRunner) -> None:
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"one")])
    _forge(ledger_path, "UPDATE kind_totals SET bytes = 999")
    # stats shows what the store keeps (it never scans); verify re-derives it.
    shown = runner.invoke(app, ["stats", "--db", str(ledger_path), "--json"])
    assert json.loads(shown.stdout)["object_bytes"] == 999
    found = runner.invoke(app, ["verify", "--db", str(ledger_path), "--json"])
    assert found.exit_code == 1
    (finding,) = json.loads(found.stdout)["findings"]
    assert finding["code"] == "totals-mismatch"
    assert "got (1, 1, 999), expected (1, 1, 3)" in finding["message"]


def test_format_2_file_without_totals_is_migrated(ledger_path: Path, runner: CliRunner) -> None:
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"%d" % i) for i in range(12)])
    assert runner.invoke(app, ["checkpoint", "--db", str(ledger_path)]).exit_code == 0
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"last")])
    want = scanned(ledger_path)
    with sqlite3.connect(ledger_path) as conn:
        conn.execute("DROP TABLE kind_totals")  # its triggers go with it
    blob = ["append", "--kind", "blob", str(ledger_path.with_name("ledger.db.log.key.pub"))]
    for args in (["stats"], blob):
        refused = runner.invoke(app, [*args, "--db", str(ledger_path)])
        assert refused.exit_code == 3, (args, refused.output)
        assert "has no kind_totals table" in refused.stderr
        assert "provledger migrate" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    migrated = runner.invoke(app, ["migrate", "--db", str(ledger_path), "--json"])
    assert migrated.exit_code == 0, migrated.output
    assert json.loads(migrated.stdout)["from"] == FORMAT
    assert stored(ledger_path) == want
    verify = runner.invoke(app, ["verify", "--db", str(ledger_path), "--json"])
    assert verify.exit_code == 0, verify.output
    again = runner.invoke(app, ["migrate", "--db", str(ledger_path), "--json"])
    assert json.loads(again.stdout)["migrated"] is False


@pytest.fixture(scope="module")
def small_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Blobs and a logged checkpoint: two kinds, built once."""
    db = tmp_path_factory.mktemp("small") / "ledger.db"
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
    with open_store(db) as store:
        store.append_many([prepare_blob(b"b%d" % i) for i in range(6)])
    assert runner.invoke(app, ["checkpoint", "--db", str(db)]).exit_code == 0
    with open_store(db) as store:
        store.append_many([prepare_blob(b"after")])
    return db


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(["blob", "checkpoint", "work-unit"]),
    column=st.sampled_from(["entries", "objects", "bytes"]),
    delta=st.integers(min_value=-3, max_value=3).filter(bool),
)
def test_any_edit_of_a_total_is_a_finding(
    small_ledger: Path,
    tmp_path_factory: pytest.TempPathFactory,
    kind: str,
    column: str,
    delta: int,
) -> None:
    from ledger.audit.full import audit

    db = tmp_path_factory.mktemp("edit") / "ledger.db"
    db.write_bytes(small_ledger.read_bytes())
    with open_store(db, readonly=True) as store:
        assert audit(store, workers=1).findings == []
    present = kind in stored(db)
    _forge(
        db,
        f"UPDATE kind_totals SET {column} = {column} + ({delta}) WHERE kind = '{kind}'"
        if present
        else f"INSERT INTO kind_totals VALUES ('{kind}', 0, 0, 0)",
    )
    with open_store(db, readonly=True) as store:
        codes = [f.code for f in audit(store, workers=1).findings]
    assert codes == ["totals-mismatch"]
