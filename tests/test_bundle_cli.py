"""`provledger bundle export/verify` end to end on real SQLite files."""

from __future__ import annotations

import functools
import json
import os
import random
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

# Bundle format, not trust: the attestations' signers are arbitrary keys, so write
# past admission (tests/test_admission.py covers what admission refuses).
from ledger_state import admit_all
from typer.testing import CliRunner

from ledger.cli import app
from ledger.log.note import verifier_key
from ledger.store.prepared import prepare_blob
from ledger.store.sqlite import open_store, trigger_names
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer

ROOT = Path(__file__).resolve().parents[1]
PROVLEDGER = ROOT / ".venv" / "bin" / "provledger"


@dataclass
class Setup:
    db: Path
    vkey: str
    subject: str
    attestations: list[str]


def _ok(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


@pytest.fixture
def setup(tmp_path: Path, runner: CliRunner) -> Setup:
    db = tmp_path / "ledger.db"
    vkey = _ok(runner, "init", "--db", str(db)).splitlines()[-1]
    subject = prepare_blob(b"evidence bytes\n")
    atts = [attest_prepared(subject, Ed25519Signer(Ed25519PrivateKey.generate())) for _ in "ab"]
    with open_store(db, policy=admit_all()) as store:
        store.append_many([prepare_blob(b"%d" % i) for i in range(5)])
        store.append_many([subject, atts[0], prepare_blob(b"x"), atts[1], prepare_blob(b"y")])
    _ok(runner, "checkpoint", "--db", str(db))
    return Setup(db, vkey, subject.digest, [a.digest for a in atts])


def _export(runner: CliRunner, s: Setup, out: Path) -> dict[str, Any]:
    info = json.loads(
        _ok(runner, "bundle", "export", s.subject, "-o", str(out), "--db", str(s.db), "--json")
    )
    assert isinstance(info, dict)
    return info


def test_export_and_verify(setup: Setup, runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "evidence.bundle.json"
    info = _export(runner, setup, out)
    assert info["file"] == str(out) and info["omitted_attestations"] == []
    assert [a["digest"] for a in info["attestations"]] == setup.attestations

    report = json.loads(
        _ok(runner, "bundle", "verify", str(out), "--log-key", setup.vkey, "--json")
    )
    assert report["ok"] is True
    assert report["object"] == {
        "digest": setup.subject,
        "kind": "blob",
        "index": 5,
        "appended_at": report["object"]["appended_at"],
    }
    assert [a["index"] for a in report["attestations"]] == [6, 8]
    assert report["checkpoint"]["size"] == 10

    key_file = tmp_path / "log.vkey"
    key_file.write_text(setup.vkey + "\n")
    human = _ok(runner, "bundle", "verify", str(out), "--log-key", str(key_file))
    assert "bundle ok: 2 attestation(s) verified" in human
    assert setup.subject in human
    # stdout form and stdin input.
    data = runner.invoke(
        app, ["bundle", "export", setup.subject, "-o", "-", "--db", str(setup.db)]
    ).stdout_bytes
    assert data == out.read_bytes()
    piped = runner.invoke(app, ["bundle", "verify", "-", "--log-key", setup.vkey], input=data)
    assert piped.exit_code == 0, piped.output


def test_export_by_id_resolution_and_errors(
    setup: Setup, runner: CliRunner, tmp_path: Path
) -> None:
    missing = runner.invoke(
        app,
        [
            "bundle",
            "export",
            "sha256:" + "0" * 64,
            "-o",
            str(tmp_path / "b"),
            "--db",
            str(setup.db),
        ],
    )
    assert missing.exit_code == 3 and missing.stderr.startswith("error: ")
    assert not (tmp_path / "b").exists()
    nodb = runner.invoke(
        app, ["bundle", "export", setup.subject, "-o", "x", "--db", str(tmp_path / "none.db")]
    )
    assert nodb.exit_code == 3


def test_export_refuses_without_checkpoint(setup: Setup, runner: CliRunner, tmp_path: Path) -> None:
    fresh = prepare_blob(b"after the checkpoint")
    with open_store(setup.db, policy=admit_all()) as store:
        store.append_many([fresh])
    out = tmp_path / "b.json"
    result = runner.invoke(
        app, ["bundle", "export", fresh.digest, "-o", str(out), "--db", str(setup.db)]
    )
    assert result.exit_code == 3
    assert "run `provledger checkpoint`" in result.stderr
    assert result.stderr.count("\n") == 1
    assert not out.exists()
    _ok(runner, "checkpoint", "--db", str(setup.db))
    _ok(runner, "bundle", "export", fresh.digest, "-o", str(out), "--db", str(setup.db))
    _ok(runner, "bundle", "verify", str(out), "--log-key", setup.vkey)


def test_export_notes_attestations_newer_than_checkpoint(
    setup: Setup, runner: CliRunner, tmp_path: Path
) -> None:
    late = attest_prepared(
        prepare_blob(b"evidence bytes\n"), Ed25519Signer(Ed25519PrivateKey.generate())
    )
    with open_store(setup.db, policy=admit_all()) as store:
        store.append_many([late])
    out = tmp_path / "b.json"
    result = runner.invoke(
        app, ["bundle", "export", setup.subject, "-o", str(out), "--db", str(setup.db), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert "1 attestation(s) appended after checkpoint size 10 left out" in result.stderr
    assert json.loads(result.stdout)["omitted_attestations"] == [late.digest]
    _ok(runner, "checkpoint", "--db", str(setup.db))
    info = _export(runner, setup, out)
    assert len(info["attestations"]) == 3


def test_verify_offline_in_a_fresh_directory(
    setup: Setup, runner: CliRunner, tmp_path: Path
) -> None:
    if not PROVLEDGER.is_file():
        pytest.skip(f"console script absent: {PROVLEDGER} (install the project into .venv)")
    fresh = tmp_path / "offline"
    fresh.mkdir()
    _export(runner, setup, fresh / "evidence.json")
    (fresh / "log.vkey").write_text(setup.vkey + "\n")
    env = {k: v for k, v in os.environ.items() if k != "PROVLEDGER_DB"}
    run = subprocess.run(
        [str(PROVLEDGER), "bundle", "verify", "evidence.json", "--log-key", "log.vkey", "--json"],
        cwd=fresh,
        env=env,
        capture_output=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["object"]["digest"] == setup.subject
    assert sorted(p.name for p in fresh.iterdir()) == ["evidence.json", "log.vkey"]

    data = bytearray((fresh / "evidence.json").read_bytes())
    data[len(data) // 2] ^= 0x01
    (fresh / "evidence.json").write_bytes(bytes(data))
    bad = subprocess.run(
        [str(PROVLEDGER), "bundle", "verify", "evidence.json", "--log-key", "log.vkey"],
        cwd=fresh,
        env=env,
        capture_output=True,
        check=False,
    )
    assert bad.returncode == 1
    assert bad.stderr.startswith(b"error: bundle part ")


def test_changed_bytes_exit_1_naming_the_part(
    setup: Setup, runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "b.json"
    _export(runner, setup, out)
    good = out.read_bytes()
    # typer rebuilds the click command on every invoke; build it once for this loop.
    monkeypatch.setattr(typer.testing, "_get_command", functools.cache(typer.main.get_command))
    rng = random.Random(3)
    parts = set()
    for n, position in enumerate([0, len(good) - 1, *rng.sample(range(len(good)), 60)]):
        changed = bytearray(good)
        changed[position] ^= 1 << rng.randrange(8)
        out.write_bytes(bytes(changed))
        args = ["bundle", "verify", str(out), "--log-key", setup.vkey]
        result = runner.invoke(app, args + (["--json"] if n % 2 else []))
        assert result.exit_code == 1, (position, result.output)
        assert result.stderr.startswith("error: bundle part ")
        assert result.stderr.count("\n") == 1
        parts.add(result.stderr.split()[3].rstrip(":"))
        if n % 2:
            report = json.loads(result.stdout)
            assert report["ok"] is False and f"part {report['part']}: " in result.stderr
    assert "bundle" in parts and len(parts) >= 3
    for junk in (b"", b"not json at all", b"{}\n", b"\x00\xff"):
        out.write_bytes(junk)
        result = runner.invoke(app, ["bundle", "verify", str(out), "--log-key", setup.vkey])
        assert result.exit_code == 1
        assert result.stderr.startswith("error: bundle part bundle: ")


def test_keys_and_inputs(setup: Setup, runner: CliRunner, tmp_path: Path) -> None:
    out = tmp_path / "b.json"
    _export(runner, setup, out)
    other = verifier_key(setup.vkey.split("+")[0], Ed25519PrivateKey.generate().public_key())
    wrong = runner.invoke(app, ["bundle", "verify", str(out), "--log-key", other])
    assert wrong.exit_code == 1
    assert wrong.stderr.startswith("error: bundle part checkpoint: ")
    malformed = runner.invoke(app, ["bundle", "verify", str(out), "--log-key", "nonsense"])
    assert malformed.exit_code == 3
    absent = runner.invoke(
        app, ["bundle", "verify", str(tmp_path / "nope"), "--log-key", setup.vkey]
    )
    assert absent.exit_code == 3
    no_key = runner.invoke(app, ["bundle", "verify", str(out)])
    assert no_key.exit_code == 2


def test_export_from_a_tampered_ledger_is_refused(
    setup: Setup, runner: CliRunner, tmp_path: Path
) -> None:
    copy = tmp_path / "copy.db"
    shutil.copy(setup.db, copy)
    conn = sqlite3.connect(copy)
    for name in trigger_names():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE objects SET data = ? WHERE digest = ?", (b"forged", setup.subject))
    conn.commit()
    conn.close()
    result = runner.invoke(
        app, ["bundle", "export", setup.subject, "-o", str(tmp_path / "b"), "--db", str(copy)]
    )
    assert result.exit_code == 1
    # The store refuses the row before a bundle is even built: its bytes no longer hash
    # to the digest the log entry names.
    assert result.stderr.startswith("error: ledger object row at seq ")
    assert "disagrees with its bytes" in result.stderr
    assert not (tmp_path / "b").exists()
