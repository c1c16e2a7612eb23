"""The ledger file's read-only views show canonical JSON as text and hashes as hex, exactly."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.sqlite import READABLE_VIEWS, open_store

ROOT = Path(__file__).resolve().parents[1]


def test_views_equal_the_stored_bytes(ledger_path: Path, runner: CliRunner) -> None:
    wu = str(ROOT / "verifiers" / "fixtures" / "calibration" / "work-unit.json")
    patch = str(
        ROOT
        / "verifiers"
        / "fixtures"
        / "calibration"
        / "candidates"
        / "repair"
        / "candidate.patch"
    )
    assert runner.invoke(app, ["append", "--db", str(ledger_path), wu]).exit_code == 0
    blob = runner.invoke(app, ["append", "--db", str(ledger_path), "--kind", "blob", patch])
    assert blob.exit_code == 0, blob.output
    assert runner.invoke(app, ["checkpoint", "--db", str(ledger_path)]).exit_code == 0
    with open_store(ledger_path, readonly=True) as store:
        conn = store.connection
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='view'")}
        assert names == set(READABLE_VIEWS)
        rows = conn.execute("SELECT o.data, v.canonical_json, o.kind, v.size FROM objects o"
                            " JOIN objects_text v ON v.digest = o.digest").fetchall()  # fmt: skip
        assert len(rows) == 2
        for data, text, kind, size in rows:
            assert size == len(data)
            if kind == "blob":
                assert text is None
            else:
                assert isinstance(text, str) and text.encode("utf-8") == bytes(data)
        for raw, hexed in conn.execute(
            "SELECT t.hash, v.hash FROM tree_nodes t"
            " JOIN tree_nodes_hex v ON v.level = t.level AND v.idx = t.idx"
        ):
            assert bytes(raw).hex() == hexed
        (root, note), (vroot, vnote) = (
            conn.execute("SELECT root, note FROM checkpoints").fetchone(),
            conn.execute("SELECT root, note FROM checkpoints_text").fetchone(),
        )
        assert (bytes(root).hex(), bytes(note).decode()) == (vroot, vnote)


def test_views_refuse_writes(ledger_path: Path) -> None:
    conn = sqlite3.connect(ledger_path)
    try:
        for view in READABLE_VIEWS:
            with pytest.raises(sqlite3.OperationalError, match="cannot modify"):
                conn.execute(f"DELETE FROM {view}")
    finally:
        conn.close()


def test_verify_stays_clean_with_views(ledger_path: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["verify", "--db", str(ledger_path)])
    assert result.exit_code == 0, result.output
