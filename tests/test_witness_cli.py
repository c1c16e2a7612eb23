"""Witnesses end to end through the CLI: init, cosign, checkpoint --witness, verify and
bundle verify with --witness-key/--quorum, split views, truncated-and-regrown logs, and the
C2SP tlog-witness HTTP protocol served by the installed ``provledger`` on a loopback port.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.log.cosignature import parse_cosignature_line, parse_witness_key, verify_cosignature
from ledger.log.note import parse_note
from ledger.store.sqlite import open_store

EXE = Path(sys.executable).parent / "provledger"


def ok(runner: CliRunner, *args: str, input: bytes | None = None) -> str:
    result = runner.invoke(app, list(args), input=input)
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


def log_vkey(db: Path) -> str:
    with open_store(db, readonly=True) as store:
        vkey = store.get_meta("log_verifier_key")
    assert vkey is not None
    return vkey


def append(runner: CliRunner, db: Path, *payloads: bytes) -> None:
    for payload in payloads:
        ok(runner, "append", "--db", str(db), "--kind", "blob", "-", input=payload)


def make_witness(runner: CliRunner, path: Path, name: str, db: Path) -> str:
    out = json.loads(
        ok(
            runner,
            "witness",
            "init",
            name,
            "--state",
            str(path),
            "--log-key",
            log_vkey(db),
            "--json",
        )
    )
    return str(out["verifier_key"])


def copy_ledger(src: Path, dst: Path) -> Path:
    """A second view of the same log: same file, same log key (what a forking log holds)."""
    with open_store(src, readonly=True) as store:
        store.connection.execute("PRAGMA wal_checkpoint")
    for suffix in ("", ".log.key", ".log.key.pub", ".authority.key", ".authority.key.pub"):
        source = src.with_name(src.name + suffix)
        if source.exists():
            shutil.copy2(source, dst.with_name(dst.name + suffix))
    for suffix in ("-wal", "-shm"):
        source = src.with_name(src.name + suffix)
        if source.exists():
            shutil.copy2(source, dst.with_name(dst.name + suffix))
    return dst


def test_init_show_and_key_file(tmp_path: Path, ledger_path: Path, runner: CliRunner) -> None:
    state = tmp_path / "w.json"
    out = ok(
        runner,
        "witness",
        "init",
        "w.test/one",
        "--state",
        str(state),
        "--log-key",
        log_vkey(ledger_path),
    )
    vkey = out.strip().splitlines()[-1]
    assert parse_witness_key(vkey).name == "w.test/one"
    assert stat.S_IMODE(os.stat(tmp_path / "w.json.key").st_mode) == 0o600
    shown = json.loads(ok(runner, "witness", "show", "--state", str(state), "--json"))
    assert shown["verifier_key"] == vkey and shown["name"] == "w.test/one"
    assert list(shown["logs"]) == [log_vkey(ledger_path).split("+")[0]]
    again = runner.invoke(app, ["witness", "init", "w.test/one", "--state", str(state)])
    assert again.exit_code == 3 and "already exists" in again.stderr
    bad = runner.invoke(app, ["witness", "init", "bad name", "--state", str(tmp_path / "x.json")])
    assert bad.exit_code == 3 and not (tmp_path / "x.json").exists()


def test_cosign_verifies_proofs_and_refuses_fork_and_rollback(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    db = str(ledger_path)
    state = tmp_path / "w.json"
    vkey = parse_witness_key(make_witness(runner, state, "w.test/one", ledger_path))
    append(runner, ledger_path, b"a", b"b", b"c")
    cp3 = tmp_path / "cp3"
    cp3.write_text(ok(runner, "checkpoint", "--db", db))
    line = ok(runner, "witness", "cosign", str(cp3), "--state", str(state))
    cosig = parse_cosignature_line(line)
    assert verify_cosignature(parse_note(cp3.read_bytes()).body, cosig, vkey) == cosig.timestamp

    append(runner, ledger_path, b"d", b"e")
    cp5 = tmp_path / "cp5"
    newer = json.loads(ok(runner, "checkpoint", "--db", db, "--json"))
    cp5.write_text(newer["note"])
    size5 = newer["size"]  # 5, or more if the ledger logs its checkpoints as entries
    no_proof = runner.invoke(app, ["witness", "cosign", str(cp5), "--state", str(state)])
    assert no_proof.exit_code == 1 and "(422)" in no_proof.stderr
    proof = tmp_path / "p.json"
    proof.write_text(ok(runner, "proof", "consistency", "3", "--db", db, "--json"))
    wrong_from = tmp_path / "p2.json"
    wrong_from.write_text(ok(runner, "proof", "consistency", "2", str(size5), "--db", db, "--json"))
    stale = runner.invoke(
        app, ["witness", "cosign", str(cp5), "--state", str(state), "--proof", str(wrong_from)]
    )
    assert stale.exit_code == 4 and "(409)" in stale.stderr
    cosigned = json.loads(
        ok(
            runner,
            "witness",
            "cosign",
            str(cp5),
            "--state",
            str(state),
            "--proof",
            str(proof),
            "--json",
        )
    )
    assert cosigned["size"] == size5
    # The older checkpoint again: a rollback.
    rollback = runner.invoke(app, ["witness", "cosign", str(cp3), "--state", str(state)])
    assert rollback.exit_code == 1 and "rollback" in rollback.stderr
    shown = json.loads(ok(runner, "witness", "show", "--state", str(state), "--json"))
    assert [v["size"] for v in shown["logs"].values()] == [size5]
    # A proof for another tree size than the checkpoint's is bad input.
    mismatch = runner.invoke(
        app, ["witness", "cosign", str(cp3), "--state", str(state), "--proof", str(proof)]
    )
    assert mismatch.exit_code == 3


def test_checkpoint_collects_local_cosignatures_and_verify_requires_quorum(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    db = str(ledger_path)
    w1 = make_witness(runner, tmp_path / "w1.json", "w.test/one", ledger_path)
    w2 = make_witness(runner, tmp_path / "w2.json", "w.test/two", ledger_path)
    w3 = make_witness(runner, tmp_path / "w3.json", "w.test/three", ledger_path)
    append(runner, ledger_path, b"a", b"b")
    out = json.loads(
        ok(
            runner,
            "checkpoint",
            "--db",
            db,
            "--witness",
            str(tmp_path / "w1.json"),
            "--witness",
            str(tmp_path / "w2.json"),
            "--json",
        )
    )
    assert [w["ok"] for w in out["witnesses"]] == [True, True]
    names = [s.name for s in parse_note(out["note"].encode()).signatures]
    assert names == [log_vkey(ledger_path).split("+")[0], "w.test/one", "w.test/two"]

    both = ["--witness-key", w1, "--witness-key", w2]
    report = json.loads(ok(runner, "verify", "--db", db, *both, "--json"))
    assert report["ok"] and len(report["witnesses"]["cosigners"]) == 2
    three = runner.invoke(app, ["verify", "--db", db, *both, "--witness-key", w3, "--json"])
    assert three.exit_code == 1
    codes = [f["code"] for f in json.loads(three.stdout)["findings"]]
    assert codes == ["witness-quorum"]
    ok(runner, "verify", "--db", db, *both, "--witness-key", w3, "--quorum", "2")
    too_many = runner.invoke(app, ["verify", "--db", db, "--witness-key", w1, "--quorum", "2"])
    assert too_many.exit_code == 3
    log_key_as_witness = runner.invoke(
        app, ["verify", "--db", db, "--witness-key", log_vkey(ledger_path)]
    )
    assert log_key_as_witness.exit_code == 3

    # A forged line under w1's name and key ID is a finding, not a vote.
    forged = parse_cosignature_line(out["note"].splitlines()[-2])
    fake = forged.__class__(forged.name, forged.key_id, forged.timestamp, bytes(64)).line().strip()
    conn = sqlite3.connect(ledger_path)
    conn.execute("INSERT INTO cosignatures(size, line, added_at) VALUES (2, ?, 'x')", (fake,))
    conn.commit()
    bad = runner.invoke(app, ["verify", "--db", db, *both, "--json"])
    assert bad.exit_code == 1
    assert {f["code"] for f in json.loads(bad.stdout)["findings"]} == {
        "witness-cosignature-invalid"
    }
    # Deleting cosignatures (triggers dropped by hand) loses the quorum.
    conn.execute("DROP TRIGGER cosignatures_no_delete")
    conn.execute("DELETE FROM cosignatures")
    conn.commit()
    conn.close()
    gone = runner.invoke(app, ["verify", "--db", db, "--witness-key", w1, "--json"])
    codes = [f["code"] for f in json.loads(gone.stdout)["findings"]]
    assert gone.exit_code == 1 and "witness-quorum" in codes

    # New entries and a checkpoint nobody cosigned: the newest checkpoint lacks a quorum.
    append(runner, ledger_path, b"c")
    ok(runner, "checkpoint", "--db", db)
    stale = runner.invoke(app, ["verify", "--db", db, "--witness-key", w1, "--json"])
    data = json.loads(stale.stdout)
    with open_store(ledger_path, readonly=True) as store:
        newest = store.size()
    assert stale.exit_code == 1 and data["witnesses"]["checkpoint"] == newest


def test_split_view_is_caught(tmp_path: Path, ledger_path: Path, runner: CliRunner) -> None:
    w1 = make_witness(runner, tmp_path / "w1.json", "w.test/one", ledger_path)
    w2 = make_witness(runner, tmp_path / "w2.json", "w.test/two", ledger_path)
    append(runner, ledger_path, b"shared-0", b"shared-1")
    ok(
        runner,
        "checkpoint",
        "--db",
        str(ledger_path),
        "--witness",
        str(tmp_path / "w1.json"),
        "--witness",
        str(tmp_path / "w2.json"),
    )
    view_b = copy_ledger(ledger_path, tmp_path / "b.db")
    append(runner, ledger_path, b"view-a")
    append(runner, view_b, b"view-b")
    # Size 3 with two roots, each shown to a different witness: each accepts its first view.
    ok(runner, "checkpoint", "--db", str(ledger_path), "--witness", str(tmp_path / "w1.json"))
    ok(runner, "checkpoint", "--db", str(view_b), "--witness", str(tmp_path / "w2.json"))
    for db in (ledger_path, view_b):
        split = runner.invoke(
            app, ["verify", "--db", str(db), "--witness-key", w1, "--witness-key", w2]
        )
        assert split.exit_code == 1 and "witness-quorum" in split.stdout
    # Each witness refuses the view it did not see, at the same size or grown further.
    refused = runner.invoke(
        app, ["checkpoint", "--db", str(view_b), "--witness", str(tmp_path / "w1.json")]
    )
    assert refused.exit_code == 1 and "(422)" in refused.stderr and "fork" in refused.stderr
    append(runner, ledger_path, b"more")
    grown = runner.invoke(
        app, ["checkpoint", "--db", str(ledger_path), "--witness", str(tmp_path / "w2.json")]
    )
    assert grown.exit_code == 1 and "(422)" in grown.stderr


def test_truncated_and_regrown_log_is_caught(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    state = str(tmp_path / "w.json")
    make_witness(runner, tmp_path / "w.json", "w.test/one", ledger_path)
    append(runner, ledger_path, b"0", b"1", b"2")
    early = copy_ledger(ledger_path, tmp_path / "early.db")  # the log at size 3
    append(runner, ledger_path, b"3", b"4")
    ok(runner, "checkpoint", "--db", str(ledger_path), "--witness", state)
    # Truncated to 3 entries: the witness has seen 5.
    short = runner.invoke(app, ["checkpoint", "--db", str(early), "--witness", state])
    assert short.exit_code == 1 and "longer" in short.stderr
    # Re-grown past 5 with other entries: not consistent with what the witness saw.
    append(runner, early, b"x3", b"x4", b"x5", b"x6")
    regrown = runner.invoke(app, ["checkpoint", "--db", str(early), "--witness", state])
    assert regrown.exit_code == 1 and "(422)" in regrown.stderr
    with open_store(early, readonly=True) as store:
        assert store.size() >= 7 and store.cosignatures(store.size()) == []


def test_bundles_carry_cosignatures(tmp_path: Path, ledger_path: Path, runner: CliRunner) -> None:
    w1 = make_witness(runner, tmp_path / "w1.json", "w.test/one", ledger_path)
    w2 = make_witness(runner, tmp_path / "w2.json", "w.test/two", ledger_path)
    append(runner, ledger_path, b"subject", b"other")
    ok(runner, "checkpoint", "--db", str(ledger_path), "--witness", str(tmp_path / "w1.json"))
    digest = "sha256:" + hashlib.sha256(b"subject").hexdigest()
    bundle = tmp_path / "b.json"
    ok(runner, "bundle", "export", digest, "--db", str(ledger_path), "-o", str(bundle))
    lk = log_vkey(ledger_path)
    plain = json.loads(ok(runner, "bundle", "verify", str(bundle), "--log-key", lk, "--json"))
    assert plain["cosignatures"] == 1 and plain["witnesses"] is None
    checked = json.loads(
        ok(runner, "bundle", "verify", str(bundle), "--log-key", lk, "--witness-key", w1, "--json")
    )
    assert [c["witness"] for c in checked["witnesses"]["cosigners"]] == [
        "+".join(w1.split("+")[:2])
    ]
    missing = runner.invoke(
        app,
        [
            "bundle",
            "verify",
            str(bundle),
            "--log-key",
            lk,
            "--witness-key",
            w1,
            "--witness-key",
            w2,
        ],
    )
    assert missing.exit_code == 1 and "part checkpoint" in missing.stderr
    ok(
        runner,
        "bundle",
        "verify",
        str(bundle),
        "--log-key",
        lk,
        "--witness-key",
        w1,
        "--witness-key",
        w2,
        "--quorum",
        "1",
    )
    # A changed cosignature byte fails under the witness key.
    value = json.loads(bundle.read_text())
    line = value["proof"].splitlines()[-1]
    sig = parse_cosignature_line(line)
    flipped = sig.__class__(sig.name, sig.key_id, sig.timestamp + 1, sig.signature).line().strip()
    value["proof"] = value["proof"].replace(line, flipped)
    from ledger.encoding.canonical import canonicalize

    tampered = tmp_path / "t.json"
    tampered.write_bytes(canonicalize(value) + b"\n")
    bad = runner.invoke(
        app, ["bundle", "verify", str(tampered), "--log-key", lk, "--witness-key", w1]
    )
    assert bad.exit_code == 1 and "cosignature" in bad.stderr


# --------------------------------------------------------------------------- HTTP


@pytest.fixture
def served(tmp_path: Path, ledger_path: Path, runner: CliRunner) -> Iterator[tuple[str, str, Path]]:
    """A witness served by the installed provledger on 127.0.0.1 (port picked by the OS)."""
    if not EXE.exists():
        pytest.skip(f"installed console script missing: {EXE}")
    state = tmp_path / "served.json"
    vkey = make_witness(runner, state, "w.test/http", ledger_path)
    proc = subprocess.Popen(
        [str(EXE), "witness", "serve", "--state", str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert "listening on http://127.0.0.1:" in first, (
            first,
            proc.stderr and proc.stderr.read(),
        )
        yield first.split()[-1], vkey, state
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stdout:
            proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()


def post(url: str, body: bytes) -> tuple[int, str, bytes]:
    request = urllib.request.Request(url + "/add-checkpoint", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers["Content-Type"], exc.read()


def test_http_witness_through_the_installed_cli(
    served: tuple[str, str, Path], tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    url, vkey, _state = served
    db = str(ledger_path)
    append(runner, ledger_path, b"a", b"b", b"c")
    run = subprocess.run(
        [str(EXE), "checkpoint", "--db", db, "--witness", url, "--witness-key", vkey, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    first = out["size"]
    assert out["witnesses"][0]["ok"] and out["note"].count("\u2014 w.test/http ") == 1
    # Grow and ask again: the client learns the witness's size from a 409 and sends a proof.
    append(runner, ledger_path, b"d")
    again = subprocess.run(
        [str(EXE), "checkpoint", "--db", db, "--witness", url, "--witness-key", vkey],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr
    size = json.loads(ok(runner, "checkpoint", "--db", db, "--json"))["size"]
    verified = subprocess.run(
        [str(EXE), "verify", "--db", db, "--witness-key", vkey],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert verified.returncode == 0 and "clean" in verified.stdout

    # The monitoring endpoint serves the last cosigned checkpoint.
    origin = log_vkey(ledger_path).split("+")[0]
    with urllib.request.urlopen(
        f"{url}/{hashlib.sha256(origin.encode()).hexdigest()}/checkpoint"
    ) as r:
        assert r.read().startswith(f"{origin}\n{size}\n".encode())
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(f"{url}/{'0' * 64}/checkpoint")
    assert info.value.code == 404

    # Protocol statuses, spoken to directly.
    note = out["note"].encode()  # the size-3 checkpoint (with a cosignature: allowed)
    status, ctype, body = post(url, b"old 0\n\n" + note)
    assert (status, ctype, body) == (409, "text/x.tlog.size", f"{size}\n".encode())
    assert post(url, b"old 99\n\n" + note)[0] == 400  # old size > checkpoint size
    assert post(url, b"garbage")[0] == 400
    forged = note.replace(f"\n{first}\n".encode(), b"\n90\n", 1)
    assert post(url, f"old {size}\n\n".encode() + forged)[0] == 403
    other = b"other.test/log\n1\n" + b"A" * 43 + b"=\n\n" + note.split(b"\n\n", 1)[1]
    assert post(url, b"old 0\n\n" + other)[0] == 404
    view_b = copy_ledger(ledger_path, tmp_path / "b.db")
    fork = runner.invoke(app, ["checkpoint", "--db", str(view_b)])  # same size 4 exists
    assert fork.exit_code == 0
    fork_run = subprocess.run(
        [str(EXE), "checkpoint", "--db", str(view_b), "--witness", url, "--witness-key", vkey],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fork_run.returncode == 0  # same view so far: cosigned again
    append(runner, view_b, b"e-fork")
    append(runner, ledger_path, b"e-real")
    ok(runner, "checkpoint", "--db", db, "--witness", url, "--witness-key", vkey)
    refused = subprocess.run(
        [str(EXE), "checkpoint", "--db", str(view_b), "--witness", url, "--witness-key", vkey],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 1 and "(422)" in refused.stderr
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("error: ")
    # An answer that does not verify under the key the log was told to expect is not kept.
    other = make_witness(runner, tmp_path / "other.json", "w.test/other", ledger_path)
    append(runner, ledger_path, b"f")
    wrong = runner.invoke(
        app, ["checkpoint", "--db", db, "--witness", url, "--witness-key", other, "--json"]
    )
    assert wrong.exit_code == 1 and "not stored: cosignature by w.test/http+" in wrong.stderr
    assert "expected one by w.test/other+" in wrong.stderr
    answered = json.loads(wrong.stdout)
    assert "\u2014 w.test/http " not in answered["note"]
    assert answered["witnesses"][0]["cosignatures"] == []
    assert answered["witnesses"][0]["rejected"][0]["witness"].startswith("w.test/http+")


def test_unreachable_witness_is_one_error_line(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    append(runner, ledger_path, b"a")
    wkey = make_witness(runner, tmp_path / "w.json", "w.test/away", ledger_path)
    away = ["--witness", "http://127.0.0.1:9/", "--witness-key", wkey]
    result = runner.invoke(app, ["checkpoint", "--db", str(ledger_path), *away])
    assert result.exit_code == 3 and result.stderr.startswith("error: witness http://127.0.0.1:9/")
    bad_url = runner.invoke(app, ["checkpoint", "--db", str(ledger_path), "--witness", "ftp://x"])
    assert bad_url.exit_code == 3


def test_bad_inputs_are_one_error_line(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    state = tmp_path / "w.json"
    make_witness(runner, state, "w.test/one", ledger_path)
    junk = tmp_path / "junk"
    junk.write_bytes(b"junk")
    binary = tmp_path / "bin.key"
    binary.write_bytes(bytes(range(256)))
    bad_state = tmp_path / "bad.json"
    bad_state.write_text(
        json.dumps(
            {
                "format": "provledger-witness/1",
                "name": "x",
                "verifier_key": "y",
                "logs": {"o": {"log_key": "k", "size": 1, "root": "!!", "note": "n"}},
            }
        )
    )
    db = str(ledger_path)
    for args in (
        ["witness", "cosign", str(junk), "--state", str(state)],
        ["witness", "cosign", str(junk), "--state", str(tmp_path)],
        ["witness", "show", "--state", str(bad_state)],
        ["verify", "--db", db, "--witness-key", str(binary)],
        ["verify", "--db", db, "--witness-key", str(tmp_path)],
        ["bundle", "verify", str(junk), "--log-key", log_vkey(ledger_path), "--witness-key", "x"],
    ):
        result = runner.invoke(app, args)
        assert result.exit_code == 3, (args, result.output)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, args


def test_truncation_below_what_a_witness_saw_needs_its_latest_checkpoint(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    # A copy of the log taken at size 3 stands for the log truncated back to it and
    # re-grown without a new checkpoint: its newest checkpoint (size 3) really was
    # cosigned, so --witness-key alone passes and reports the unwitnessed entries; the
    # witness's latest checkpoint, given as --from-checkpoint, catches the truncation.
    state = tmp_path / "w.json"
    wkey = make_witness(runner, state, "w.test/one", ledger_path)
    append(runner, ledger_path, b"0", b"1", b"2")
    ok(runner, "checkpoint", "--db", str(ledger_path), "--witness", str(state))
    truncated = copy_ledger(ledger_path, tmp_path / "t.db")
    append(runner, ledger_path, b"3", b"4")
    ok(runner, "checkpoint", "--db", str(ledger_path), "--witness", str(state))
    append(runner, truncated, b"x3", b"x4", b"x5")
    report = json.loads(
        ok(runner, "verify", "--db", str(truncated), "--witness-key", wkey, "--json")
    )
    assert report["ok"] and report["witnesses"]["unwitnessed_entries"] >= 3
    saved = tmp_path / "latest.note"
    saved.write_text(ok(runner, "witness", "latest", "--state", str(state)))
    lk = log_vkey(ledger_path)
    args = ["--log-key", lk, "--from-checkpoint", str(saved), "--witness-key", wkey]
    ok(runner, "verify", "--db", str(ledger_path), *args)
    caught = runner.invoke(app, ["verify", "--db", str(truncated), *args, "--json"])
    assert caught.exit_code == 1
    assert "history-rewritten" in {f["code"] for f in json.loads(caught.stdout)["findings"]}


def test_a_swapped_witness_key_file_is_refused(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    make_witness(runner, tmp_path / "a.json", "w.test/a", ledger_path)
    make_witness(runner, tmp_path / "b.json", "w.test/a", ledger_path)
    (tmp_path / "a.json.key").write_bytes((tmp_path / "b.json.key").read_bytes())
    append(runner, ledger_path, b"x")
    cp = tmp_path / "cp"
    cp.write_text(ok(runner, "checkpoint", "--db", str(ledger_path)))
    result = runner.invoke(app, ["witness", "cosign", str(cp), "--state", str(tmp_path / "a.json")])
    assert result.exit_code == 3 and "expected the one the state names" in result.stderr
    shown = json.loads(ok(runner, "witness", "show", "--state", str(tmp_path / "a.json"), "--json"))
    assert all(view["size"] is None for view in shown["logs"].values())
