"""provledger's checkpoints, cosignatures and proofs, checked by Go code we did not write.

tests/go/checker/main.go is built here against Debian's golang.org/x/mod (GOPATH mode, no
network): ``sumdb/note`` opens the cosigned checkpoint note with the log's verifier key
(and rejects it when a known key's signature fails), ``sumdb/tlog`` checks RFC 6962
inclusion (``CheckRecord``) and consistency (``CheckTree``) proofs. Debian's x/mod has no
tlog-cosignature/v1 verifier, so the checker implements one from the spec over Go's
crypto/ed25519 and plugs it into ``note.Open``.

Skips, with the install command, when ``go`` or the x/mod sources are absent.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.sqlite import open_store

CHECKER_SRC = Path(__file__).resolve().parent / "go" / "checker"
GOPATH = Path("/usr/share/gocode")
INSTALL = "apt-get install golang-go golang-golang-x-mod-dev"


@pytest.fixture(scope="module")
def checker(tmp_path_factory: pytest.TempPathFactory) -> Path:
    go = shutil.which("go")
    if go is None:
        pytest.skip(f"go not installed; to run this test: {INSTALL}")
    if not (GOPATH / "src" / "golang.org" / "x" / "mod" / "sumdb" / "note").is_dir():
        pytest.skip(f"golang.org/x/mod sources not in {GOPATH}; to run this test: {INSTALL}")
    out = tmp_path_factory.mktemp("gochecker")
    env = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": str(GOPATH),
        "GOCACHE": str(out / "cache"),
        "GOFLAGS": "",
        "GOPROXY": "off",
        "CGO_ENABLED": "0",
    }
    built = subprocess.run(
        [go, "build", "-o", str(out / "checker"), "."],
        cwd=CHECKER_SRC,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr
    return out / "checker"


def run_checker(checker: Path, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    done = subprocess.run(
        [str(checker)], input=json.dumps(request), capture_output=True, text=True, timeout=120
    )
    return done.returncode, json.loads(done.stdout)


def ok(runner: CliRunner, *args: str, input: bytes | None = None) -> str:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


def b64_of_hex(values: list[str]) -> list[str]:
    return [base64.b64encode(bytes.fromhex(h)).decode() for h in values]


def test_go_sumdb_checks_notes_cosignatures_and_proofs(
    checker: Path, tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    db = str(ledger_path)
    with open_store(ledger_path, readonly=True) as store:
        log_key = store.get_meta("log_verifier_key")
    assert log_key is not None
    witnesses = []
    for name in ("w.test/one", "w.test/two"):
        state = tmp_path / f"{name.rsplit('/', 1)[1]}.json"
        made = ok(
            runner, "witness", "init", name, "--state", str(state), "--log-key", log_key, "--json"
        )
        witnesses.append((state, json.loads(made)["verifier_key"]))
    digests = []
    sizes = [1, 2, 3, 5, 8, 13]
    for i in range(sizes[-1]):
        out = ok(
            runner, "append", "--db", db, "--kind", "blob", "--json", "-", input=f"e{i}".encode()
        )
        digests.append(json.loads(out)[0]["digest"])
        if i + 1 in sizes:
            ok(
                runner,
                "checkpoint",
                "--db",
                db,
                *[a for s, _ in witnesses for a in ("--witness", str(s))],
            )
    newest = json.loads(ok(runner, "checkpoint", "--db", db, "--json"))
    note, size = newest["note"], newest["size"]
    assert note.count("\u2014 w.test/") == 2 and size >= 13

    inclusion = []
    for digest in digests:
        proof = json.loads(ok(runner, "proof", "inclusion", digest, "--db", db, "--json"))
        assert proof["tree_size"] == size
        inclusion.append(
            {
                "index": proof["index"],
                "leaf": base64.b64encode(proof["leaf"].encode()).decode(),
                "proof": b64_of_hex(proof["proof"]),
            }
        )
    consistency = []
    for old in range(1, size + 1):
        proof = json.loads(ok(runner, "proof", "consistency", str(old), "--db", db, "--json"))
        consistency.append(
            {
                "old_size": old,
                "old_root": base64.b64encode(bytes.fromhex(proof["old_root"])).decode(),
                "proof": b64_of_hex(proof["proof"]),
            }
        )
    request = {
        "log_key": log_key,
        "witness_keys": [vkey for _, vkey in witnesses],
        "quorum": 2,
        "note": note,
        "inclusion": inclusion,
        "consistency": consistency,
    }
    code, result = run_checker(checker, request)
    assert code == 0, result
    assert result["log_signed"] and result["size"] == size
    assert sorted(c.split("+")[0] for c in result["cosigners"]) == ["w.test/one", "w.test/two"]
    assert result["inclusion_verified"] == 13 and result["consistency_verified"] == size

    # The same Go code rejects what it should: so the passes above mean something.
    def rejected(**change: Any) -> str:
        code, out = run_checker(checker, {**request, **change})
        assert code == 1, change
        return str(out["error"])

    lines = note.splitlines(keepends=True)
    cosig_line = lines[-1]
    name, blob = cosig_line[2:].split(" ")
    raw = bytearray(base64.b64decode(blob))
    raw[4 + 7] ^= 1  # the timestamp's last byte
    wrong_time = [*lines[:-1], f"\u2014 {name} {base64.b64encode(bytes(raw)).decode()}\n"]
    assert "note.Open" in rejected(note="".join(wrong_time))
    assert "quorum" in rejected(note="".join(lines[:-1]))
    assert "note.Open" in rejected(note=note.replace(f"\n{size}\n", f"\n{size - 1}\n", 1))
    bad_leaf = dict(inclusion[3], leaf=base64.b64encode(b"x").decode())
    assert "inclusion" in rejected(inclusion=[bad_leaf], consistency=[])
    bad_old = dict(consistency[4], old_root=consistency[5]["old_root"])
    assert "consistency" in rejected(inclusion=[], consistency=[bad_old])
