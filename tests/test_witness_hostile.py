"""A hostile witness on loopback cannot poison the ledger's cosignatures.

The attack: a witness URL answers ``add-checkpoint`` with a well-formed cosignature line under
an honest witness's name and key ID but with a signature that does not verify (and, in a
second mode, also a valid line under its own key). If ``checkpoint --witness`` stored that
line, every later ``verify --witness-key HONEST`` and ``bundle verify --witness-key HONEST``
of the checkpoint would fail. ``checkpoint`` stores only lines that verify under a key the
operator named with ``--witness-key``; the rest are reported and never stored.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from test_witness_cli import log_vkey, ok
from typer.testing import CliRunner

from ledger.cli import app
from ledger.log.cosignature import Cosignature, cosign, parse_witness_key, witness_key
from ledger.log.note import parse_note
from ledger.store.sqlite import open_store

EXE = Path(sys.executable).parent / "provledger"
HOSTILE_NAME = "w.test/hostile"


def stored_lines(db: Path) -> list[str]:
    with open_store(db, readonly=True) as store:
        return list(store.cosignatures(store.size()))


class HostileWitness:
    """An HTTP witness that forges the honest witness's cosignature (and may add its own)."""

    def __init__(self, honest_vkey: str) -> None:
        self.honest = parse_witness_key(honest_vkey)
        self.key = Ed25519PrivateKey.generate()
        self.vkey = witness_key(HOSTILE_NAME, self.key.public_key()).vkey()
        self.with_own_line = False
        self.asked = 0

    def forged_line(self) -> str:
        """Well-formed: the honest name and key ID, a plausible timestamp, a wrong signature."""
        return Cosignature(self.honest.name, self.honest.key_id, int(time.time()), bytes(64)).line()

    def answer(self, request: bytes) -> bytes:
        self.asked += 1
        body = parse_note(request.partition(b"\n\n")[2]).body
        lines = self.forged_line()
        if self.with_own_line:
            lines = cosign(body, HOSTILE_NAME, self.key).line() + lines
        return lines.encode("utf-8")


@pytest.fixture
def hostile(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> Iterator[tuple[str, HostileWitness, Path]]:
    """(URL of the hostile witness, the witness, the honest witness's state file)."""
    state = tmp_path / "honest.json"
    ok(
        runner,
        "witness",
        "init",
        "w.test/honest",
        "--state",
        str(state),
        "--log-key",
        log_vkey(ledger_path),
    )
    honest_vkey = json.loads(ok(runner, "witness", "show", "--state", str(state), "--json"))[
        "verifier_key"
    ]
    witness = HostileWitness(honest_vkey)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            request = self.rfile.read(int(self.headers["Content-Length"]))
            body = witness.answer(request)
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        host, port = server.server_address[:2]
        url = f"http://{host!s}:{port}"
        yield url, witness, state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def test_hostile_witness_cannot_store_a_forged_cosignature(
    hostile: tuple[str, HostileWitness, Path], tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    url, witness, honest_state = hostile
    honest = witness.honest.vkey()
    db = str(ledger_path)
    for payload in (b"a", b"b", b"c"):
        ok(runner, "append", "--db", db, "--kind", "blob", "-", input=payload)

    # No key named for a URL witness: refused before anything is asked or stored.
    unkeyed = runner.invoke(app, ["checkpoint", "--db", db, "--witness", url])
    assert unkeyed.exit_code == 2 and unkeyed.stderr.startswith("error: --witness ")
    assert unkeyed.stderr.count("\n") == 1 and witness.asked == 0

    # The honest key named: the forged line fails under it, is reported, and is not stored.
    if not EXE.exists():
        pytest.skip(f"installed console script missing: {EXE}")
    cmd = [str(EXE), "checkpoint", "--db", db, "--witness", url, "--witness-key", honest]
    run = subprocess.run([*cmd, "--json"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert run.stderr.count("\n") == 1 and "rejected, not stored" in run.stderr
    assert "invalid signature" in run.stderr and witness.asked == 1
    out = json.loads(run.stdout)["witnesses"][0]
    assert out["cosignatures"] == [] and out["rejected"][0]["witness"] == witness.honest.label
    assert stored_lines(ledger_path) == []

    # Its own valid line beside the forgery, both keys named: its line is kept, the forgery not.
    witness.with_own_line = True
    both = ["--witness-key", honest, "--witness-key", witness.vkey]
    mixed = runner.invoke(app, ["checkpoint", "--db", db, "--witness", url, *both, "--json"])
    assert mixed.exit_code == 1 and "invalid signature" in mixed.stderr
    kept = stored_lines(ledger_path)
    assert len(kept) == 1 and kept[0].startswith(f"\u2014 {HOSTILE_NAME} ")

    # The honest witness cosigns; the checkpoint verifies under its key, alone or in a bundle.
    ok(runner, "checkpoint", "--db", db, "--witness", str(honest_state))
    assert len(stored_lines(ledger_path)) == 2
    report = json.loads(ok(runner, "verify", "--db", db, "--witness-key", honest, "--json"))
    assert report["ok"] is True
    digest = "sha256:" + hashlib.sha256(b"a").hexdigest()
    bundle = tmp_path / "a.bundle.json"
    ok(runner, "bundle", "export", digest, "--db", db, "-o", str(bundle))
    lk = log_vkey(ledger_path)
    check = ["bundle", "verify", str(bundle), "--log-key", lk, "--witness-key", honest]
    verified = json.loads(ok(runner, *check, "--json"))
    assert [c["witness"] for c in verified["witnesses"]["cosigners"]] == [witness.honest.label]

    # What the attack would have done had the forged line been stored: verify fails.
    poisoned = tmp_path / "poisoned.db"
    for suffix in ("", "-wal", "-shm", ".log.key", ".log.key.pub"):
        source = ledger_path.with_name(ledger_path.name + suffix)
        if source.exists():
            shutil.copy2(source, poisoned.with_name(poisoned.name + suffix))
    with open_store(poisoned) as store:
        store.add_cosignatures(store.size(), [witness.forged_line().rstrip("\n")])
    failed = runner.invoke(
        app, ["verify", "--db", str(poisoned), "--witness-key", honest, "--json"]
    )
    assert failed.exit_code == 1 and "invalid signature" in failed.stdout, failed.stdout
