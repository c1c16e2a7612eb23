"""Hand tampering with a ledger file is caught by `provledger verify`.

Each case drops the append-only triggers with raw sqlite3, edits the file the way a hostile
operator would, and (except in the trigger cases) puts the triggers back, so the findings
are the edit's own and not just "trigger missing". Every case asserts the finding's code
and the entry (``seq``) or checkpoint it names.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from ledger.cli import app
from ledger.log import merkle
from ledger.log.checkpoint_record import checkpoint_record
from ledger.log.leaf import entry_record
from ledger.log.note import Checkpoint, sign_note, verifier_key
from ledger.store.base import CheckpointRow
from ledger.store.prepared import prepare_blob, prepare_json
from ledger.store.sqlite import open_store, trigger_names
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer, key_id, load_private_key

ORIGIN = "tamper.example/log"
SUBJECT_SEQ = 5
ATTESTATION_SEQ = 6
# The template: blobs 0-4, subject 5, attestation 6, blobs 7-9, checkpoint 10; its record
# (logged by the next append) is entry 10, blobs 11-13, newest checkpoint 14 (unlogged).
RECORD_SEQ = 10
SIZE = 14


@dataclass
class Ledger:
    db: Path
    vkey: str
    saved: Path  # the checkpoint note at size 10, saved by an auditor
    digests: list[str]


@pytest.fixture(scope="module")
def cached_cli() -> Iterator[None]:
    # typer rebuilds the click command on every invoke; build it once for this module.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.testing, "_get_command", functools.cache(typer.main.get_command))
        yield


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, cached_cli: None) -> Ledger:
    """One clean ledger, built once; each test tampers with its own copy."""
    runner = CliRunner()
    db = tmp_path_factory.mktemp("template") / "ledger.db"
    init = runner.invoke(app, ["init", "--db", str(db), "--origin", ORIGIN])
    assert init.exit_code == 0, init.output
    vkey = init.stdout.splitlines()[-1]
    subject = prepare_blob(b"the subject")
    authority = Ed25519Signer.from_file(db.with_name("ledger.db.authority.key"))
    items = [prepare_blob(b"blob %d" % i) for i in range(5)]
    items += [subject, attest_prepared(subject, authority)]
    items += [prepare_blob(b"blob %d" % i) for i in range(7, 10)]
    with open_store(db) as store:
        store.append_many(items)
    saved = db.with_name("saved.checkpoint")
    result = runner.invoke(app, ["checkpoint", "--db", str(db)])
    assert result.exit_code == 0
    saved.write_text(result.stdout)
    with open_store(db) as store:
        store.append_many([prepare_blob(b"blob %d" % i) for i in range(10, 13)])
    assert runner.invoke(app, ["checkpoint", "--db", str(db)]).exit_code == 0
    with open_store(db) as store:
        digests = [e.digest for e in store.entries()]
    ledger = Ledger(db, vkey, saved, digests)
    code, findings = verify(runner, ledger)
    assert (code, findings) == (0, []), findings
    assert verify(runner, ledger, "--from-checkpoint", str(saved), "--log-key", vkey)[0] == 0
    return ledger


@pytest.fixture
def led(template: Ledger, tmp_path: Path) -> Ledger:
    """A private copy of the template ledger (database, keys, saved checkpoint)."""
    copy = tmp_path / "ledger"
    shutil.copytree(template.db.parent, copy)
    return Ledger(copy / "ledger.db", template.vkey, copy / "saved.checkpoint", template.digests)


def verify(runner: CliRunner, led: Ledger, *extra: str) -> tuple[int, list[dict[str, Any]]]:
    result = runner.invoke(app, ["verify", "--db", str(led.db), "--json", *extra])
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    assert report["ok"] is (result.exit_code == 0)
    return result.exit_code, report["findings"]


@contextmanager
def tampered(db: Path, *, restore: bool = True) -> Iterator[sqlite3.Connection]:
    """A raw connection with every append-only trigger dropped; one transaction.

    With ``restore`` the original triggers are put back (same SQL) before commit, so the
    audit's findings are the edit's own.
    """
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA synchronous = OFF")  # a test file: no need to wait for the disk
    conn.execute("BEGIN")
    saved = [sql for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE type='trigger'")]
    for name in trigger_names():
        conn.execute(f"DROP TRIGGER {name}")
    yield conn
    if restore:
        for sql in saved:
            conn.execute(sql)
    conn.execute("COMMIT")
    conn.close()


def has(findings: list[dict[str, Any]], code: str, **where: Any) -> bool:
    return any(f["code"] == code and all(f[k] == v for k, v in where.items()) for f in findings)


def rebuild_totals(conn: sqlite3.Connection) -> None:
    """Recompute the per-kind totals from the rows, as a careful forger would."""
    conn.execute("DELETE FROM kind_totals")
    conn.execute(
        "INSERT INTO kind_totals SELECT kind, sum(e), sum(o), sum(b) FROM ("
        " SELECT kind, 1 AS e, 0 AS o, 0 AS b FROM entries UNION ALL"
        " SELECT o.kind, 0, 1, length(o.data) FROM objects o JOIN entries e ON e.seq = o.seq"
        ") GROUP BY kind"
    )


def rebuild_tree(conn: sqlite3.Connection) -> bytes:
    """Recompute every stored node (and the totals) from the entries, as a careful
    forger would."""
    rebuild_totals(conn)
    tree = merkle.MemoryTree()
    for seq, digest, kind, at in conn.execute(
        "SELECT seq, digest, kind, appended_at FROM entries ORDER BY seq"
    ):
        tree.append(entry_record(seq, kind, digest, at))
    conn.execute("DELETE FROM tree_nodes")
    level = 0
    while tree.size >> level:
        for idx in range(tree.size >> level):
            conn.execute(
                "INSERT INTO tree_nodes(level, idx, hash) VALUES (?,?,?)",
                (level, idx, tree.node(level, idx)),
            )
        level += 1
    return tree.root()


def resign(conn: sqlite3.Connection, key: Ed25519PrivateKey, sizes: list[int]) -> None:
    """Replace the checkpoints by ones signed with ``key`` over the current tree.

    A careful forger: each checkpoint's record in the log (entry ``seq == size``) is
    rewritten too, and the tree rebuilt, so the file is consistent again.
    """
    conn.execute("DELETE FROM checkpoints")
    for size in sizes:
        tree = merkle.MemoryTree()
        for seq, digest, kind, at in conn.execute(
            "SELECT seq, digest, kind, appended_at FROM entries WHERE seq < ? ORDER BY seq",
            (size,),
        ):
            tree.append(entry_record(seq, kind, digest, at))
        root = tree.root(size)
        row = CheckpointRow(
            size,
            root,
            sign_note(Checkpoint(ORIGIN, size, root).body(), ORIGIN, key),
            "2026-01-01T00:00:00.000000Z",
        )
        conn.execute(
            "INSERT INTO checkpoints(size, root, note, created_at) VALUES (?,?,?,?)",
            (row.size, row.root, row.note, row.created_at),
        )
        logged = conn.execute(
            "SELECT digest FROM entries WHERE seq = ? AND kind = 'checkpoint'", (size,)
        ).fetchone()
        if logged is not None:
            record = checkpoint_record(row)
            conn.execute("UPDATE entries SET digest = ? WHERE seq = ?", (record.digest, size))
            conn.execute(
                "UPDATE objects SET digest = ?, data = ? WHERE seq = ?",
                (record.digest, record.data, size),
            )
    rebuild_tree(conn)


def swap_log_key(conn: sqlite3.Connection, key: Ed25519PrivateKey) -> None:
    conn.execute(
        "UPDATE meta SET value = ? WHERE key = 'log_verifier_key'",
        (verifier_key(ORIGIN, key.public_key()),),
    )
    conn.execute("UPDATE meta SET value = ? WHERE key = 'log_key_id'", (key_id(key.public_key()),))


def truncate(conn: sqlite3.Connection, size: int) -> None:
    conn.execute(
        "DELETE FROM refs WHERE from_digest IN (SELECT digest FROM objects WHERE seq >= ?)", (size,)
    )
    conn.execute("DELETE FROM objects WHERE seq >= ?", (size,))
    conn.execute("DELETE FROM entries WHERE seq >= ?", (size,))
    conn.execute("DELETE FROM checkpoints")
    rebuild_tree(conn)


def flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


# --------------------------------------------------------------------------- cases

Tamper = Callable[[sqlite3.Connection, Ledger], None]
Expect = list[tuple[str, dict[str, Any]]]


def _byte_in_blob(c: sqlite3.Connection, led: Ledger) -> None:
    (data,) = c.execute("SELECT data FROM objects WHERE seq = 2").fetchone()
    c.execute("UPDATE objects SET data = ? WHERE seq = 2", (flip(data, 3),))


def _byte_in_json(c: sqlite3.Connection, led: Ledger) -> None:
    (data,) = c.execute("SELECT data FROM objects WHERE seq = ?", (ATTESTATION_SEQ,)).fetchone()
    c.execute(
        "UPDATE objects SET data = ? WHERE seq = ?",
        (data.replace(b'"kind":"blob"', b'"kind":"blib"'), ATTESTATION_SEQ),
    )


def _replace_object(c: sqlite3.Connection, led: Ledger) -> None:
    other = prepare_blob(b"a different, perfectly valid object")
    c.execute("UPDATE objects SET data = ?, digest = ? WHERE seq = 3", (other.data, other.digest))


def _replace_object_and_entry(c: sqlite3.Connection, led: Ledger) -> None:
    _replace_object(c, led)
    c.execute(
        "UPDATE entries SET digest = (SELECT digest FROM objects WHERE seq = 3) WHERE seq = 3"
    )


def _replace_and_rebuild_tree(c: sqlite3.Connection, led: Ledger) -> None:
    _replace_object_and_entry(c, led)
    rebuild_tree(c)


def _delete_entry(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("DELETE FROM entries WHERE seq = 4")


def _delete_entry_and_object(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("DELETE FROM entries WHERE seq = 4")
    c.execute("DELETE FROM objects WHERE seq = 4")


def _swap_entries(c: sqlite3.Connection, led: Ledger) -> None:
    one = c.execute("SELECT digest, kind, appended_at FROM entries WHERE seq = 1").fetchone()
    two = c.execute("SELECT digest, kind, appended_at FROM entries WHERE seq = 2").fetchone()
    c.execute("UPDATE entries SET digest = ?, kind = ?, appended_at = ? WHERE seq = 1", two)
    c.execute("UPDATE entries SET digest = ?, kind = ?, appended_at = ? WHERE seq = 2", one)
    c.execute("UPDATE objects SET seq = -1 WHERE seq = 1")
    c.execute("UPDATE objects SET seq = 1 WHERE seq = 2")
    c.execute("UPDATE objects SET seq = 2 WHERE seq = -1")


def _insert_object_row(c: sqlite3.Connection, led: Ledger) -> None:
    blob = prepare_blob(b"smuggled in")
    c.execute(
        "INSERT INTO objects(digest, seq, kind, data) VALUES (?, 99, 'blob', ?)",
        (blob.digest, blob.data),
    )


def _append_behind_back(c: sqlite3.Connection, led: Ledger, nodes: bool = False) -> None:
    blob = prepare_blob(b"appended behind the log's back")
    at = "2026-01-01T00:00:00.000000Z"
    c.execute("INSERT INTO entries VALUES (?, ?, 'blob', ?)", (SIZE, blob.digest, at))
    c.execute(
        "INSERT INTO objects(digest, seq, kind, data) VALUES (?, ?, 'blob', ?)",
        (blob.digest, SIZE, blob.data),
    )
    if nodes:
        # A forged tree: the leaf node of the previous entry reused.
        (leaf,) = c.execute(
            "SELECT hash FROM tree_nodes WHERE level = 0 AND idx = ?", (SIZE - 1,)
        ).fetchone()
        c.execute("INSERT INTO tree_nodes VALUES (0, ?, ?)", (SIZE, leaf))


def _append_with_forged_checkpoint(c: sqlite3.Connection, led: Ledger) -> None:
    _append_behind_back(c, led)
    root = rebuild_tree(c)  # the tree is right; only the log key is missing
    forger = Ed25519PrivateKey.generate()
    note = sign_note(Checkpoint(ORIGIN, SIZE + 1, root).body(), ORIGIN, forger)
    c.execute("INSERT INTO checkpoints VALUES (?, ?, ?, 'x')", (SIZE + 1, root, note))


def _insert_ref(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute(
        "INSERT INTO refs VALUES (?, 'subject', ?)", (led.digests[ATTESTATION_SEQ], led.digests[0])
    )


def _insert_ref_from_nowhere(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("INSERT INTO refs VALUES (?, 'subject', ?)", ("sha256:" + "e" * 64, led.digests[0]))


def _edit_ref(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE refs SET to_digest = ?", (led.digests[0],))


def _edit_checkpoint_note(c: sqlite3.Connection, led: Ledger) -> None:
    (note,) = c.execute("SELECT note FROM checkpoints WHERE size = 10").fetchone()
    c.execute("UPDATE checkpoints SET note = ? WHERE size = 10", (flip(note, len(ORIGIN) + 6),))


def _edit_checkpoint_root(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE checkpoints SET root = ? WHERE size = 10", (bytes(32),))


def _cosign_checkpoint(c: sqlite3.Connection, led: Ledger) -> None:
    (note,) = c.execute("SELECT note FROM checkpoints WHERE size = 10").fetchone()
    body = note[: note.rfind(b"\n\n") + 1]
    line = sign_note(body, "witness.example", Ed25519PrivateKey.generate())[len(body) + 1 :]
    c.execute("UPDATE checkpoints SET note = ? WHERE size = 10", (note + line,))


def _move_checkpoint(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE checkpoints SET size = 11 WHERE size = 10")


def _swap_log_key(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute(
        "UPDATE meta SET value = ? WHERE key = 'log_verifier_key'",
        (verifier_key(ORIGIN, Ed25519PrivateKey.generate().public_key()),),
    )


def _edit_origin(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE meta SET value = 'elsewhere.example/log' WHERE key = 'origin'")


def _swap_authority_key(c: sqlite3.Connection, led: Ledger) -> None:
    raw_key = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    c.execute(
        "UPDATE meta SET value = ? WHERE key = 'authority_public_key'",
        (base64.b64encode(raw_key).decode(),),
    )


def _edit_tree_node(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE tree_nodes SET hash = ? WHERE level = 1 AND idx = 2", (bytes(32),))


def _extra_tree_node(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("INSERT INTO tree_nodes VALUES (0, 50, ?)", (bytes(32),))


def _edit_object_id(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE objects SET object_id = 'forged' WHERE seq = ?", (ATTESTATION_SEQ,))


def _edit_appended_at(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE entries SET appended_at = '2020-01-01T00:00:00.000000Z' WHERE seq = 7")


def _malformed_appended_at(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE entries SET appended_at = 'yesterday' WHERE seq = 7")


def _edit_entry_kind(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE entries SET kind = 'work-unit' WHERE seq = 8")


def _data_as_text(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE objects SET data = CAST(data AS TEXT) WHERE seq = 9")


def _delete_object(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("DELETE FROM objects WHERE seq = 9")


def _renumber_object(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE objects SET seq = 100 WHERE seq = 9")


def _edit_node_type(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("UPDATE tree_nodes SET hash = hex(hash) WHERE level = 0 AND idx = 11")


def _totals_bytes_raised(c: sqlite3.Connection, led: Ledger) -> None:
    # An update the triggers allow (totals may grow), yet no append made it.
    c.execute("UPDATE kind_totals SET bytes = bytes + 1 WHERE kind = 'blob'")


def _totals_row_deleted(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("DELETE FROM kind_totals WHERE kind = 'checkpoint'")


def _totals_row_inserted(c: sqlite3.Connection, led: Ledger) -> None:
    c.execute("INSERT INTO kind_totals VALUES ('work-unit', 1, 1, 10)")


def _totals_count_as_text(c: sqlite3.Connection, led: Ledger) -> None:
    # Text that INTEGER affinity cannot turn back into a number.
    c.execute("UPDATE kind_totals SET entries = 'n=' || entries WHERE kind = 'blob'")


CASES: dict[str, tuple[Tamper, Expect]] = {
    "stored totals raised": (_totals_bytes_raised, [("totals-mismatch", {})]),
    "stored totals row deleted": (_totals_row_deleted, [("totals-mismatch", {})]),
    "stored totals row inserted": (_totals_row_inserted, [("totals-mismatch", {})]),
    "stored totals of the wrong type": (_totals_count_as_text, [("totals-mismatch", {})]),
    "byte in stored blob": (_byte_in_blob, [("digest-mismatch", {"seq": 2})]),
    "byte in stored json": (_byte_in_json, [("digest-mismatch", {"seq": ATTESTATION_SEQ})]),
    "object replaced by another valid object": (
        _replace_object,
        [("entry-object-mismatch", {"seq": 3}), ("object-without-entry", {"seq": 3})],
    ),
    "object and entry replaced": (_replace_object_and_entry, [("tree-node-mismatch", {"seq": 3})]),
    "object, entry and tree rewritten": (
        _replace_and_rebuild_tree,
        [
            ("checkpoint-root-mismatch", {"checkpoint": 10}),
            ("checkpoint-root-mismatch", {"checkpoint": SIZE}),
        ],
    ),
    "entry deleted": (
        _delete_entry,
        [("sequence-gap", {"seq": 5}), ("object-without-entry", {"seq": 4})],
    ),
    "entry and object deleted": (_delete_entry_and_object, [("sequence-gap", {"seq": 5})]),
    "two entries swapped": (
        _swap_entries,
        [("tree-node-mismatch", {"seq": 1}), ("tree-node-mismatch", {"seq": 2})],
    ),
    "object row inserted": (_insert_object_row, [("object-without-entry", {"seq": 99})]),
    "entry appended without tree": (_append_behind_back, [("tree-node-mismatch", {"seq": SIZE})]),
    "entry appended with forged tree": (
        lambda c, led: _append_behind_back(c, led, nodes=True),
        [("tree-node-mismatch", {"seq": SIZE})],
    ),
    "entry appended with forged checkpoint": (
        _append_with_forged_checkpoint,
        [("checkpoint-signature-invalid", {"checkpoint": SIZE + 1})],
    ),
    "reference inserted": (_insert_ref, [("ref-extra", {"seq": ATTESTATION_SEQ})]),
    "reference from nowhere": (
        _insert_ref_from_nowhere,
        [("ref-extra", {"seq": None, "digest": "sha256:" + "e" * 64})],
    ),
    "reference edited": (
        _edit_ref,
        [("ref-missing", {"seq": ATTESTATION_SEQ}), ("ref-extra", {"seq": ATTESTATION_SEQ})],
    ),
    "checkpoint note edited": (
        _edit_checkpoint_note,
        [("checkpoint-signature-invalid", {"checkpoint": 10})],
    ),
    "checkpoint root edited": (
        _edit_checkpoint_root,
        [("checkpoint-root-mismatch", {"checkpoint": 10})],
    ),
    "checkpoint given a fake cosignature": (
        _cosign_checkpoint,
        [("checkpoint-extra-signature", {"checkpoint": 10})],
    ),
    "checkpoint moved to another size": (
        _move_checkpoint,
        [("checkpoint-root-mismatch", {"checkpoint": 11}), ("checkpoint-note-mismatch", {})],
    ),
    "log key swapped": (
        _swap_log_key,
        [
            ("checkpoint-signature-invalid", {"checkpoint": 10}),
            ("checkpoint-signature-invalid", {"checkpoint": SIZE}),
            ("meta-inconsistent", {}),
        ],
    ),
    "origin edited": (
        _edit_origin,
        [("meta-inconsistent", {}), ("checkpoint-signature-invalid", {"checkpoint": 10})],
    ),
    "authority key swapped": (_swap_authority_key, [("meta-inconsistent", {})]),
    "tree node edited": (_edit_tree_node, [("tree-node-mismatch", {"seq": 5})]),
    "tree node inserted": (_extra_tree_node, [("tree-node-extra", {"seq": 50})]),
    "tree node of the wrong type": (_edit_node_type, [("tree-node-mismatch", {"seq": 11})]),
    "index column edited": (_edit_object_id, [("index-mismatch", {"seq": ATTESTATION_SEQ})]),
    "appended_at edited": (_edit_appended_at, [("tree-node-mismatch", {"seq": 7})]),
    "appended_at malformed": (
        _malformed_appended_at,
        [("entry-invalid", {"seq": 7}), ("tree-node-mismatch", {"seq": 7})],
    ),
    "entry kind edited": (
        _edit_entry_kind,
        [("entry-object-mismatch", {"seq": 8}), ("tree-node-mismatch", {"seq": 8})],
    ),
    "object bytes stored as text": (_data_as_text, [("object-row-invalid", {"seq": 9})]),
    "object row deleted": (_delete_object, [("object-missing", {"seq": 9})]),
    "object renumbered": (
        _renumber_object,
        [("object-missing", {"seq": 9}), ("object-without-entry", {"seq": 100})],
    ),
}


ANCHORS = ["none", "log-key", "authority-key", "saved-checkpoint", "all"]
# Where a trusted log key changes which finding reports the edit.
KEY_SWAP_TRUSTED: Expect = [("log-key-mismatch", {}), ("meta-inconsistent", {})]
ANCHOR_OVERRIDES: dict[tuple[str, str], Expect] = {
    ("log key swapped", "log-key"): KEY_SWAP_TRUSTED,
    ("log key swapped", "all"): KEY_SWAP_TRUSTED,
}


def anchor_args(led: Ledger, which: str) -> list[str]:
    log = ["--log-key", led.vkey]
    auth = ["--authority-key", str(led.db.with_name("ledger.db.authority.key.pub"))]
    saved = ["--from-checkpoint", str(led.saved)]
    return {
        "none": [],
        "log-key": log,
        "authority-key": auth,
        "saved-checkpoint": saved,
        "all": log + auth + saved,
    }[which]


@pytest.mark.parametrize("which", ANCHORS)
@pytest.mark.parametrize("name", list(CASES))
def test_tampering_is_detected(name: str, which: str, led: Ledger, runner: CliRunner) -> None:
    tamper, expected = CASES[name]
    expected = ANCHOR_OVERRIDES.get((name, which), expected)
    with tampered(led.db) as conn:
        tamper(conn, led)
    code, findings = verify(runner, led, *anchor_args(led, which))
    assert code == 1
    for finding_code, where in expected:
        assert has(findings, finding_code, **where), (finding_code, where, findings)
    assert not has(findings, "trigger-missing")


# --------------------------------------------------------------------------- triggers


def test_dropped_triggers_are_detected(led: Ledger, runner: CliRunner) -> None:
    with tampered(led.db, restore=False):
        pass
    code, findings = verify(runner, led)
    assert code == 1
    missing = {f["message"].split()[2] for f in findings if f["code"] == "trigger-missing"}
    assert missing == set(trigger_names())


def test_one_dropped_trigger_is_named(led: Ledger, runner: CliRunner) -> None:
    conn = sqlite3.connect(led.db)
    conn.execute("DROP TRIGGER entries_no_delete")
    conn.close()
    code, findings = verify(runner, led)
    assert code == 1
    assert [f["message"] for f in findings] == ["append-only trigger entries_no_delete is missing"]


def test_defused_and_extra_triggers_are_detected(led: Ledger, runner: CliRunner) -> None:
    conn = sqlite3.connect(led.db)
    conn.execute("DROP TRIGGER objects_no_update")
    # Same name, still mentions RAISE(ABORT, but never fires.
    conn.execute(
        "CREATE TRIGGER objects_no_update BEFORE UPDATE ON objects WHEN 0"
        " BEGIN SELECT RAISE(ABORT, 'provledger: the ledger is append-only'); END"
    )
    conn.execute("CREATE TRIGGER sneaky AFTER INSERT ON entries BEGIN SELECT 1; END")
    conn.close()
    code, findings = verify(runner, led)
    assert code == 1
    assert has(findings, "trigger-altered") and has(findings, "trigger-unexpected")
    assert (
        "objects_no_update"
        in next(f for f in findings if f["code"] == "trigger-altered")["message"]
    )


# --------------------------------------------------------------------------- needs an anchor


def test_consistent_key_swap_needs_a_trusted_key_or_saved_checkpoint(
    led: Ledger, runner: CliRunner
) -> None:
    forger = Ed25519PrivateKey.generate()
    with tampered(led.db) as conn:
        swap_log_key(conn, forger)
        resign(conn, forger, [10, SIZE])
    # Self-consistent: the file alone cannot tell (the log key is the trust anchor).
    assert verify(runner, led) == (0, [])
    code, findings = verify(runner, led, "--log-key", led.vkey)
    assert code == 1
    assert has(findings, "log-key-mismatch")
    assert has(findings, "checkpoint-signature-invalid", checkpoint=10)
    code, findings = verify(runner, led, "--from-checkpoint", str(led.saved))
    assert code == 1 and has(findings, "saved-checkpoint-invalid")


def test_truncated_and_resigned_with_another_key(led: Ledger, runner: CliRunner) -> None:
    forger = Ed25519PrivateKey.generate()
    with tampered(led.db) as conn:
        truncate(conn, 8)
        swap_log_key(conn, forger)
        resign(conn, forger, [8])
    assert verify(runner, led) == (0, [])
    code, findings = verify(runner, led, "--from-checkpoint", str(led.saved))
    assert code == 1
    assert has(findings, "saved-checkpoint-invalid")
    code, findings = verify(runner, led, "--from-checkpoint", str(led.saved), "--log-key", led.vkey)
    assert code == 1
    assert has(findings, "log-key-mismatch")
    assert has(findings, "history-rewritten", checkpoint=10)
    assert has(findings, "checkpoint-signature-invalid", checkpoint=8)


def test_truncated_and_resigned_with_the_log_key(led: Ledger, runner: CliRunner) -> None:
    key = load_private_key(led.db.with_name("ledger.db.log.key"))
    with tampered(led.db) as conn:
        truncate(conn, 8)
        resign(conn, key, [8])
    assert verify(runner, led) == (0, [])
    code, findings = verify(runner, led, "--from-checkpoint", str(led.saved))
    assert code == 1
    assert [f["code"] for f in findings] == ["history-rewritten"]
    assert findings[0]["checkpoint"] == 10


def test_history_rewritten_and_regrown_with_the_log_key(led: Ledger, runner: CliRunner) -> None:
    key = load_private_key(led.db.with_name("ledger.db.log.key"))
    with tampered(led.db) as conn:
        _replace_and_rebuild_tree(conn, led)
        resign(conn, key, [10, SIZE])
    assert verify(runner, led) == (0, [])
    code, findings = verify(runner, led, "--from-checkpoint", str(led.saved))
    assert code == 1
    assert [(f["code"], f["checkpoint"]) for f in findings] == [("history-rewritten", 10)]


def test_saved_checkpoint_must_verify(led: Ledger, runner: CliRunner, tmp_path: Path) -> None:
    forged = tmp_path / "forged"
    forged.write_bytes(flip(led.saved.read_bytes(), 2))
    code, findings = verify(runner, led, "--from-checkpoint", str(forged))
    assert code == 1 and has(findings, "saved-checkpoint-invalid")


def test_malformed_trusted_key_is_input_error(led: Ledger, runner: CliRunner) -> None:
    result = runner.invoke(app, ["verify", "--db", str(led.db), "--log-key", "nonsense+1+2"])
    assert result.exit_code == 3


def test_empty_checkpoint_and_empty_saved_head(
    tmp_path: Path, runner: CliRunner, cached_cli: None
) -> None:
    db = tmp_path / "ledger.db"
    assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
    empty = runner.invoke(app, ["checkpoint", "--db", str(db)])
    assert empty.exit_code == 0
    saved = tmp_path / "empty.checkpoint"
    saved.write_text(empty.stdout)
    with open_store(db) as store:
        store.append_many([prepare_blob(b"one")])
    led = Ledger(db, "", saved, [])
    assert verify(runner, led) == (0, [])
    assert verify(runner, led, "--from-checkpoint", str(saved)) == (0, [])


def test_legacy_digest_column_pointed_elsewhere(
    corpus: Path, tmp_path: Path, runner: CliRunner, cached_cli: None
) -> None:
    docs = sorted((corpus / "examples" / "work-units").glob("*.json"))[:2]
    assert len(docs) == 2
    db = tmp_path / "ledger.db"
    assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
    prepared = [prepare_json(p.read_bytes()) for p in docs]
    with open_store(db) as store:
        store.append_many(prepared)
    led = Ledger(db, "", tmp_path / "none", [p.digest for p in prepared])
    assert verify(runner, led) == (0, [])
    with tampered(db) as conn:
        conn.execute(
            "UPDATE objects SET legacy_digest = ? WHERE seq = 0", (prepared[1].legacy_digest,)
        )
    code, findings = verify(runner, led)
    assert code == 1
    assert has(findings, "index-mismatch", seq=0, digest=prepared[0].digest)
    assert hashlib.sha256(prepared[0].data).hexdigest() in prepared[0].digest


def test_authority_key_anchor(led: Ledger, runner: CliRunner) -> None:
    real_pub = led.db.with_name("ledger.db.authority.key.pub")
    assert verify(runner, led, "--authority-key", str(real_pub)) == (0, [])
    forged = Ed25519PrivateKey.generate().public_key()
    with tampered(led.db) as conn:
        conn.execute(
            "UPDATE meta SET value = ? WHERE key = 'authority_public_key'",
            (base64.b64encode(forged.public_bytes_raw()).decode(),),
        )
        conn.execute("UPDATE meta SET value = ? WHERE key = 'authority_key_id'", (key_id(forged),))
    code, findings = verify(runner, led, "--authority-key", str(real_pub))
    assert code == 1
    assert has(findings, "authority-key-mismatch")
