"""`provledger verify --since-checkpoint FILE`: audit only what was appended after a
checkpoint an auditor already verified, plus the consistency proof to it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from ledger.audit.full import audit
from ledger.cli import app
from ledger.log.merkle import root as merkle_root
from ledger.log.note import Checkpoint, sign_note
from ledger.store.prepared import prepare_blob
from ledger.store.sqlite import open_store, trigger_names
from ledger.trust.keys import load_private_key

PROVLEDGER = Path(sys.executable).with_name("provledger")


def _checkpoint(runner: CliRunner, db: Path, name: str) -> Path:
    result = runner.invoke(app, ["checkpoint", "--db", str(db)])
    assert result.exit_code == 0, result.output
    path = db.with_name(name)
    path.write_text(result.stdout)
    return path


@pytest.fixture
def grown(ledger_path: Path, runner: CliRunner) -> tuple[Path, Path]:
    """A ledger of 38 entries: 23 blobs checkpointed at 23 (saved note), then that
    checkpoint's record (logged as entry 23) and 14 more blobs."""
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"before %d" % i) for i in range(23)])
    note = _checkpoint(runner, ledger_path, "seen.checkpoint")
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"after %d" % i) for i in range(14)])
    _checkpoint(runner, ledger_path, "latest.checkpoint")
    return ledger_path, note


def _verify(runner: CliRunner, db: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = runner.invoke(app, ["verify", "--db", str(db), "--json", *extra])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def _codes(report: dict[str, Any]) -> set[str]:
    return {f["code"] for f in report["findings"]}


def _entries_audited(db: Path, note: Path) -> int:
    count = 0

    def advance(n: int) -> None:
        nonlocal count
        count += n

    with open_store(db, readonly=True) as store:
        report = audit(store, advance=advance, since_checkpoint=note.read_bytes())
    assert report.ok, report.findings
    return count


def test_checks_only_the_appended_entries(grown: tuple[Path, Path], runner: CliRunner) -> None:
    db, note = grown
    full_code, full = _verify(runner, db)
    code, since = _verify(runner, db, "--since-checkpoint", str(note))
    assert (full_code, code) == (0, 0), since
    assert since["since_checkpoint"]["size"] == 23
    assert since["root"] == full["root"] and since["entries"] == full["entries"] == 38
    assert since["checkpoints_checked"] == 2  # the stored one at 23 and the latest
    assert _entries_audited(db, note) == 38 - 23
    human = runner.invoke(app, ["verify", "--db", str(db), "--since-checkpoint", str(note)])
    assert human.exit_code == 0
    assert "checked from entry 23 on" in human.stdout


def test_installed_command(grown: tuple[Path, Path]) -> None:
    db, note = grown
    done = subprocess.run(
        [str(PROVLEDGER), "verify", "--db", str(db), "--since-checkpoint", str(note), "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "PROVLEDGER_NO_PROGRESS": "1"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["since_checkpoint"]["size"] == 23


def _tamper(db: Path, sql: str, args: tuple[Any, ...]) -> None:
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    saved = [s for (s,) in conn.execute("SELECT sql FROM sqlite_master WHERE type='trigger'")]
    for name in trigger_names():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute(sql, args)
    for s in saved:
        conn.execute(s)
    conn.execute("COMMIT")
    conn.close()


def test_an_edit_after_the_checkpoint_is_found(grown: tuple[Path, Path], runner: CliRunner) -> None:
    db, note = grown
    _tamper(db, "UPDATE objects SET data = ? WHERE seq = ?", (b"forged", 30))
    code, report = _verify(runner, db, "--since-checkpoint", str(note))
    assert code == 1
    assert any(f["code"] == "digest-mismatch" and f["seq"] == 30 for f in report["findings"])


def test_an_edit_before_it_is_left_to_the_full_audit(
    grown: tuple[Path, Path], runner: CliRunner
) -> None:
    # Documented scope: entries before the checkpoint were verified when it was.
    db, note = grown
    _tamper(db, "UPDATE objects SET data = ? WHERE seq = ?", (b"forged", 3))
    assert _verify(runner, db, "--since-checkpoint", str(note))[0] == 0
    code, full = _verify(runner, db)
    assert code == 1 and "digest-mismatch" in _codes(full)


def test_a_rewritten_tree_at_the_checkpoint_is_history_rewritten(
    grown: tuple[Path, Path], runner: CliRunner
) -> None:
    db, note = grown
    # 23 = 16 + 4 + 2 + 1: the level-4 node is part of the checkpoint's root.
    _tamper(db, "UPDATE tree_nodes SET hash = ? WHERE level = 4 AND idx = 0", (b"\0" * 32,))
    code, report = _verify(runner, db, "--since-checkpoint", str(note))
    assert code == 1
    assert "history-rewritten" in _codes(report)
    assert "tree-node-mismatch" in _codes(report)  # the whole log was audited instead


def test_a_checkpoint_of_another_log_is_refused(
    grown: tuple[Path, Path], runner: CliRunner
) -> None:
    db, _note = grown
    with open_store(db) as store:
        origin = store.get_meta("origin")
    assert origin is not None
    other = Ed25519PrivateKey.generate()
    forged = sign_note(Checkpoint(origin, 23, b"\1" * 32).body(), origin, other)
    path = db.with_name("forged.checkpoint")
    path.write_bytes(forged)
    code, report = _verify(runner, db, "--since-checkpoint", str(path))
    assert code == 1
    assert _codes(report) == {"since-checkpoint-invalid"}
    assert report["entries"] == 38


def test_an_entry_appended_twice_after_the_checkpoint(
    grown: tuple[Path, Path], runner: CliRunner
) -> None:
    db, note = grown
    with open_store(db) as store:
        first = store.get_by_seq(5)
    assert first is not None
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute(
        "INSERT INTO objects(digest, seq, kind, data) VALUES (?, 40, 'blob', ?)",
        (first.digest, first.data),
    )
    conn.close()
    code, report = _verify(runner, db, "--since-checkpoint", str(note))
    assert code == 1
    assert any(f["code"] == "object-duplicate" and f["seq"] == 40 for f in report["findings"])


def test_a_saved_checkpoint_before_the_resumed_one(
    grown: tuple[Path, Path], runner: CliRunner
) -> None:
    db, note = grown
    early = _checkpoint_of(db, 9)
    code, report = _verify(
        runner, db, "--since-checkpoint", str(note), "--from-checkpoint", str(early)
    )
    assert code == 0, report
    assert report["from_checkpoint"]["size"] == 9
    # The same size with another root (signed by the log key): not a prefix of this log.
    forged = _checkpoint_of(db, 9, root=b"\2" * 32)
    code, report = _verify(
        runner, db, "--since-checkpoint", str(note), "--from-checkpoint", str(forged)
    )
    assert code == 1
    assert any(
        f["code"] == "history-rewritten" and f["checkpoint"] == 9 for f in report["findings"]
    )


def _checkpoint_of(db: Path, size: int, root: bytes | None = None) -> Path:
    """A checkpoint note at ``size`` signed with the ledger's own log key."""
    with open_store(db, readonly=True) as store:
        origin = store.get_meta("origin")
        assert origin is not None
        head = merkle_root(size, store) if root is None else root
    key = load_private_key(db.with_name(db.name + ".log.key"))
    path = db.with_name(f"at-{size}-{(root or b'').hex()[:4]}.checkpoint")
    path.write_bytes(sign_note(Checkpoint(origin, size, head).body(), origin, key))
    return path
