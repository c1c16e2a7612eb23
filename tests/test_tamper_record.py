"""Every byte the ledger reads is covered: side columns, schema, meta and checkpoints.

The tamperings of issue 13 (float hints, a digest index pointed at another row, the
checkpoints table, meta rows, extra or missing schema objects), each run against
``provledger verify`` with no anchor, with each anchor alone (``--log-key``,
``--authority-key``, ``--from-checkpoint``) and with all three: every one is caught by
the file alone, so every anchor combination must report it, naming the entry, object
or checkpoint. The read paths (``show``, resolution by legacy digest or id) refuse the
same rows instead of serving them.

The ledger holds an upstream ResultManifest from the reference corpus
(``examples/results/phase0-smoke.result-manifest.json``; its ``resources`` numbers are
integral doubles, so it is stored with float hints).
"""

from __future__ import annotations

import functools
import json
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing
from typer.testing import CliRunner

from ledger.cli import app
from ledger.encoding.digest import legacy_digest
from ledger.store.prepared import prepare_blob, prepare_json
from ledger.store.sqlite import open_store, trigger_names
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer

ORIGIN = "record.example/log"
MANIFEST = Path("examples") / "results" / "phase0-smoke.result-manifest.json"
# Layout: blob 0, manifest 1, attestation of it 2, blobs 3-4; checkpoint 5 (logged as
# entry 5), blobs 6-7; checkpoint 8 (entry 8), blob 9; checkpoint 10 (newest, unlogged).
BLOB_SEQ, MANIFEST_SEQ, ATTESTATION_SEQ = 0, 1, 2
LOGGED = (5, 8)
NEWEST = 10


@dataclass
class Led:
    db: Path
    vkey: str
    saved: Path  # the newest checkpoint (size 10), saved by an auditor
    authority_pub: Path
    digests: list[str]
    manifest_hints: str

    def anchors(self, which: str) -> list[str]:
        log = ["--log-key", self.vkey]
        auth = ["--authority-key", str(self.authority_pub)]
        saved = ["--from-checkpoint", str(self.saved)]
        return {
            "none": [],
            "log-key": log,
            "authority-key": auth,
            "saved-checkpoint": saved,
            "all": log + auth + saved,
        }[which]


ANCHORS = ["none", "log-key", "authority-key", "saved-checkpoint", "all"]


@pytest.fixture(scope="module")
def cached_cli() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.testing, "_get_command", functools.cache(typer.main.get_command))
        yield


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, cached_cli: None) -> Led:
    from conftest import CORPUS

    if not (CORPUS / MANIFEST).is_file():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    runner = CliRunner()
    db = tmp_path_factory.mktemp("record") / "ledger.db"
    init = runner.invoke(app, ["init", "--db", str(db), "--origin", ORIGIN])
    assert init.exit_code == 0, init.output
    vkey = init.stdout.splitlines()[-1]
    manifest = prepare_json((CORPUS / MANIFEST).read_bytes())
    assert manifest.legacy_hints is not None
    authority = Ed25519Signer.from_file(db.with_name("ledger.db.authority.key"))
    first = [prepare_blob(b"b0"), manifest, attest_prepared(manifest, authority)]
    first += [prepare_blob(b"b3"), prepare_blob(b"b4")]

    def checkpoint() -> str:
        result = runner.invoke(app, ["checkpoint", "--db", str(db)])
        assert result.exit_code == 0, result.output
        return result.stdout

    with open_store(db) as store:
        store.append_many(first)
    checkpoint()
    with open_store(db) as store:
        store.append_many([prepare_blob(b"b6"), prepare_blob(b"b7")])
    checkpoint()
    with open_store(db) as store:
        store.append_many([prepare_blob(b"b9")])
    saved = db.with_name("saved.checkpoint")
    saved.write_text(checkpoint())
    with open_store(db) as store:
        entries = list(store.entries())
        assert [e.seq for e in entries if e.kind == "checkpoint"] == list(LOGGED)
        assert store.size() == NEWEST and [c.size for c in store.checkpoints()] == [5, 8, 10]
    led = Led(
        db,
        vkey,
        saved,
        db.with_name("ledger.db.authority.key.pub"),
        [e.digest for e in entries],
        manifest.legacy_hints,
    )
    for which in ANCHORS:
        assert verify(runner, led, which) == (0, []), which
    return led


@pytest.fixture
def led(template: Led, tmp_path: Path) -> Led:
    copy = tmp_path / "ledger"
    shutil.copytree(template.db.parent, copy)
    return Led(
        copy / "ledger.db",
        template.vkey,
        copy / "saved.checkpoint",
        copy / "ledger.db.authority.key.pub",
        template.digests,
        template.manifest_hints,
    )


def verify(runner: CliRunner, led: Led, which: str) -> tuple[int, list[dict[str, Any]]]:
    args = ["verify", "--db", str(led.db), "--json", *led.anchors(which)]
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    report = json.loads(result.stdout)
    return result.exit_code, report["findings"]


def raw(db: Path) -> sqlite3.Connection:
    """A raw connection with the append-only triggers dropped (put back by ``close``)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    saved = [q for (q,) in conn.execute("SELECT sql FROM sqlite_master WHERE type='trigger'")]
    for name in trigger_names():
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("CREATE TEMP TABLE restore(sql TEXT)")
    conn.executemany("INSERT INTO restore VALUES (?)", [(q,) for q in saved])
    return conn


def close(conn: sqlite3.Connection) -> None:
    for (sql,) in conn.execute("SELECT sql FROM restore").fetchall():
        conn.execute(sql)
    conn.execute("COMMIT")
    conn.close()


def point_digest_index(db: Path, a: int, b: int) -> None:
    """Swap the row ids the digest index holds for objects ``a`` and ``b`` (by seq).

    A byte edit of the index B-tree, the same result as rewriting it through
    ``writable_schema``: a lookup of one digest lands on the other object's row.
    """
    conn = sqlite3.connect(db)
    digests = [
        d
        for (d,) in conn.execute(
            "SELECT digest FROM objects WHERE seq IN (?, ?) ORDER BY seq", (a, b)
        )
    ]
    rowids = [r for (r,) in conn.execute("SELECT rowid FROM objects WHERE seq IN (?, ?)", (a, b))]
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    # A record of the digest index, (16-char key ``substr(digest, 8, 16)``, rowid 2..127):
    # header 03 2d 01, the key's text, the rowid in 1 byte.
    assert all(2 <= r <= 127 for r in rowids)
    data = bytearray(db.read_bytes())
    where = []
    for digest in digests:
        needle = b"\x03\x2d\x01" + digest[7:23].encode()
        at = data.find(needle)
        assert at >= 0 and data.find(needle, at + 1) == -1
        where.append(at + len(needle))
    data[where[0]], data[where[1]] = data[where[1]], data[where[0]]
    db.write_bytes(bytes(data))


def has(findings: list[dict[str, Any]], code: str, **where: Any) -> bool:
    return any(f["code"] == code and all(f[k] == v for k, v in where.items()) for f in findings)


def named(findings: list[dict[str, Any]], code: str, text: str) -> bool:
    return any(f["code"] == code and text in f["message"] for f in findings)


# --------------------------------------------------------------------------- tamperings

Tamper = Callable[[Led], None]
Check = Callable[[Led, list[dict[str, Any]]], bool]


def sql(*statements: str | tuple[str, tuple[Any, ...]]) -> Tamper:
    def tamper(led: Led) -> None:
        conn = raw(led.db)
        for statement in statements:
            if isinstance(statement, tuple):
                conn.execute(*statement)
            else:
                conn.execute(statement)
        close(conn)

    return tamper


def _hint_forges_string(led: Led) -> None:
    # A hint at a string member, with legacy_digest rewritten to match the forged value:
    # the whole of the attack the issue describes, on a member no number lives at.
    conn = raw(led.db)
    (data,) = conn.execute("SELECT data FROM objects WHERE seq = ?", (MANIFEST_SEQ,)).fetchone()
    value = json.loads(data)
    value["schema_version"] = 0.0
    hints = '[["schema_version","0.0"]]'
    conn.execute(
        "UPDATE objects SET legacy_hints = ?, legacy_digest = ? WHERE seq = ?",
        (hints, legacy_digest(value), MANIFEST_SEQ),
    )
    close(conn)


def _hint_adds_member(led: Led) -> None:
    conn = raw(led.db)
    conn.execute(
        "UPDATE objects SET legacy_hints = ? WHERE seq = ?",
        ('[["never_again_held_out","0.0"]]', MANIFEST_SEQ),
    )
    close(conn)


def at(code: str, seq: int) -> Check:
    return lambda led, f: has(f, code, seq=seq, digest=led.digests[seq])


def at_checkpoint(code: str, size: int) -> Check:
    return lambda led, f: has(f, code, checkpoint=size)


def message(code: str, text: str) -> Check:
    return lambda led, f: named(f, code, text)


CASES: dict[str, tuple[Tamper, list[Check]]] = {
    "float hint over a string, legacy digest rewritten to match": (
        _hint_forges_string,
        [at("hints-invalid", MANIFEST_SEQ)],
    ),
    "float hint adds a member": (_hint_adds_member, [at("hints-invalid", MANIFEST_SEQ)]),
    "float hints removed": (
        sql(("UPDATE objects SET legacy_hints = NULL WHERE seq = ?", (MANIFEST_SEQ,))),
        [at("index-mismatch", MANIFEST_SEQ)],
    ),
    "float hints respelled (not canonical JSON)": (
        sql(
            (
                "UPDATE objects SET legacy_hints = replace(legacy_hints, ',', ', ') WHERE seq = ?",
                (MANIFEST_SEQ,),
            )
        ),
        [at("hints-invalid", MANIFEST_SEQ)],
    ),
    "float hint on a ledger-native object": (
        sql(
            (
                'UPDATE objects SET legacy_hints = \'[["schema_version","0.0"]]\' WHERE seq = ?',
                (ATTESTATION_SEQ,),
            )
        ),
        [at("hints-invalid", ATTESTATION_SEQ)],
    ),
    "blob given an id and a legacy digest": (
        sql(
            (
                "UPDATE objects SET object_id = 'forged', legacy_digest = ? WHERE seq = ?",
                ("sha256:" + "a" * 64, BLOB_SEQ),
            )
        ),
        [at("index-mismatch", BLOB_SEQ)],
    ),
    "digest index pointed at another row": (
        lambda led: point_digest_index(led.db, 3, 4),
        [
            message("database-corrupt", "objects_by_digest"),
            at("digest-index-mismatch", 3),
            at("digest-index-mismatch", 4),
        ],
    ),
    "every checkpoint row deleted": (
        sql("DELETE FROM checkpoints"),
        [at_checkpoint("checkpoint-missing", 5), at_checkpoint("checkpoint-missing", 8)],
    ),
    "old checkpoint row deleted": (
        sql("DELETE FROM checkpoints WHERE size = 5"),
        [at("checkpoint-missing", 5)],
    ),
    "old checkpoint created_at edited": (
        sql("UPDATE checkpoints SET created_at = '2020-01-01T00:00:00.000000Z' WHERE size = 8"),
        [at("checkpoint-row-mismatch", 8), message("checkpoint-row-mismatch", "created_at")],
    ),
    "two checkpoint rows reordered": (
        sql(
            "UPDATE checkpoints SET size = -5 WHERE size = 5",
            "UPDATE checkpoints SET size = 5 WHERE size = 8",
            "UPDATE checkpoints SET size = 8 WHERE size = -5",
        ),
        [at("checkpoint-row-mismatch", 5), at("checkpoint-row-mismatch", 8)],
    ),
    "meta row added": (
        sql("INSERT INTO meta VALUES ('witness', 'trust me')"),
        [message("meta-unexpected", "witness")],
    ),
    "meta format edited": (
        sql("UPDATE meta SET value = 'provledger-sqlite/0' WHERE key = 'format'"),
        [message("meta-invalid", "format")],
    ),
    "meta key id deleted": (
        sql("DELETE FROM meta WHERE key = 'authority_key_id'"),
        [message("meta-missing", "authority_key_id")],
    ),
    "table added": (sql("CREATE TABLE notes(x)"), [message("schema-extra", "table notes")]),
    "view added": (
        sql("CREATE VIEW objects_view AS SELECT digest FROM objects"),
        [message("schema-extra", "view objects_view")],
    ),
    "index added": (
        sql("CREATE INDEX entries_by_kind ON entries(kind)"),
        [message("schema-extra", "index entries_by_kind")],
    ),
    "index dropped": (
        sql("DROP INDEX objects_by_legacy"),
        [message("schema-missing", "index objects_by_legacy")],
    ),
    "index narrowed": (
        sql(
            "DROP INDEX objects_by_kind",
            "CREATE INDEX objects_by_kind ON objects(kind) WHERE kind != 'blob'",
        ),
        [message("schema-altered", "index objects_by_kind")],
    ),
    "trigger added": (
        sql("CREATE TRIGGER quiet AFTER INSERT ON meta BEGIN SELECT 1; END"),
        [message("trigger-unexpected", "quiet")],
    ),
}


@pytest.mark.parametrize("which", ANCHORS)
@pytest.mark.parametrize("name", list(CASES))
def test_tampering_is_caught_with_any_anchors(
    name: str, which: str, led: Led, runner: CliRunner
) -> None:
    tamper, checks = CASES[name]
    tamper(led)
    code, findings = verify(runner, led, which)
    assert code == 1
    for check in checks:
        assert check(led, findings), (name, which, findings)


# --------------------------------------------------------------------------- read paths


def test_show_refuses_a_row_the_digest_index_misplaces(led: Led, runner: CliRunner) -> None:
    a, b = led.digests[3], led.digests[4]
    before = runner.invoke(app, ["show", "--raw", a, "--db", str(led.db)])
    assert before.exit_code == 0 and before.stdout_bytes == b"b3"
    point_digest_index(led.db, 3, 4)
    for args in (["show", "--raw", a], ["show", a], ["show", "--json", b]):
        result = runner.invoke(app, [*args, "--db", str(led.db)])
        assert result.exit_code == 1, (args, result.output)
        assert result.stdout_bytes == b""
        # Depending on the query plan SQLite reports the digest from the index (then the
        # bytes do not hash to it) or from the row (then it is not the one asked for).
        assert result.stderr.startswith("error: ledger ")
        assert "disagrees" in result.stderr and "run `provledger verify`" in result.stderr


def test_resolution_by_legacy_digest_or_id_checks_the_bytes(led: Led, runner: CliRunner) -> None:
    with open_store(led.db, readonly=True) as store:
        manifest = store.get(led.digests[MANIFEST_SEQ])
    assert manifest is not None and manifest.legacy_digest is not None
    legacy = manifest.legacy_digest
    shown = runner.invoke(app, ["show", legacy, "--json", "--db", str(led.db)])
    assert shown.exit_code == 0 and json.loads(shown.stdout)["digest"] == manifest.digest
    _hint_forges_string(led)
    with open_store(led.db, readonly=True) as store:
        (forged,) = [
            r[0]
            for r in store.connection.execute(
                "SELECT legacy_digest FROM objects WHERE seq = ?", (MANIFEST_SEQ,)
            )
        ]
    for ref in (forged, manifest.digest):
        result = runner.invoke(app, ["show", ref, "--db", str(led.db)])
        assert result.exit_code == 1, result.output
        assert "float hint" in result.stderr and manifest.digest in result.stderr
    sql(("UPDATE objects SET object_id = 'forged' WHERE seq = ?", (BLOB_SEQ,)))(led)
    result = runner.invoke(app, ["show", "forged", "--db", str(led.db)])
    assert result.exit_code == 1
    assert "index columns" in result.stderr and led.digests[BLOB_SEQ] in result.stderr


def test_injected_reference_is_refused_by_readers(led: Led, runner: CliRunner) -> None:
    # A reference row claiming blob 0 attests the manifest: attestation checks read refs.
    sql(
        (
            "INSERT INTO refs VALUES (?, 'subject', ?)",
            (led.digests[BLOB_SEQ], led.digests[MANIFEST_SEQ]),
        )
    )(led)
    result = runner.invoke(
        app, ["attestation", "check", led.digests[MANIFEST_SEQ], "--db", str(led.db)]
    )
    assert result.exit_code == 1
    assert "reference disagrees with the objects" in result.stderr


# --------------------------------------------------------------------------- checkpoints


def test_checkpoint_records_are_logged_at_their_size(template: Led) -> None:
    with open_store(template.db, readonly=True) as store:
        rows = {row.size: row for row in store.checkpoints()}
        for size in LOGGED:
            record = store.get_by_seq(size)
            assert record is not None and record.kind == "checkpoint"
            value = json.loads(record.data)
            assert value["note"].encode() == rows[size].note
            assert value["created_at"] == rows[size].created_at
        assert store.get_by_seq(NEWEST) is None  # the newest waits for the next append


def test_checkpoint_is_idempotent_until_the_log_grows(led: Led, runner: CliRunner) -> None:
    again = runner.invoke(app, ["checkpoint", "--db", str(led.db)])
    assert again.exit_code == 0 and again.stdout == led.saved.read_text()
    with open_store(led.db) as store:
        assert store.size() == NEWEST
        # Appending nothing new logs nothing.
        store.append_many([prepare_blob(b"b9")])
        assert store.size() == NEWEST
        store.append_many([prepare_blob(b"b11")])
        assert store.size() == NEWEST + 2
        assert store.entries(since=NEWEST, limit=1).__next__().kind == "checkpoint"


def test_checkpoint_records_cannot_be_appended_by_hand(led: Led, runner: CliRunner) -> None:
    with open_store(led.db, readonly=True) as store:
        record = store.get_by_seq(LOGGED[0])
    assert record is not None
    forged = json.loads(record.data)
    forged["created_at"] = "2020-01-01T00:00:00.000000Z"
    path = led.db.with_name("forged.json")
    path.write_text(json.dumps(forged))
    result = runner.invoke(app, ["append", str(path), "--db", str(led.db)])
    assert result.exit_code == 4
    assert result.stderr.startswith("error: append, got a checkpoint record")


def test_newest_checkpoint_needs_an_outside_anchor(led: Led, runner: CliRunner) -> None:
    # Documented limit: the newest checkpoint is not yet in the log. Deleting its row is
    # invisible to the file alone; the saved copy still pins the tree it signed.
    sql(f"DELETE FROM checkpoints WHERE size = {NEWEST}")(led)
    assert verify(runner, led, "none") == (0, [])
    # Truncating the log below it is caught by the saved checkpoint.
    sql(
        "DELETE FROM objects WHERE seq = 9",
        "DELETE FROM entries WHERE seq = 9",
        "DELETE FROM tree_nodes WHERE level = 0 AND idx = 9",
    )(led)
    code, findings = verify(runner, led, "saved-checkpoint")
    assert code == 1 and has(findings, "history-rewritten", checkpoint=NEWEST)


def test_expected_schema_is_what_init_creates(led: Led) -> None:
    from ledger.store.sqlite import expected_schema

    conn = sqlite3.connect(led.db)
    rows = conn.execute(
        "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name"
    ).fetchall()
    conn.close()
    assert tuple(rows) == expected_schema()
    kinds = {kind for kind, *_ in rows}
    assert kinds == {"table", "index", "trigger", "view"}


# --------------------------------------------------------------------------- cohorts


def test_burn_notice_hint_cannot_hide_a_held_out_task(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    """Issue 13: a float hint turning ``never_again_held_out`` into ``0.0`` used to drop
    the relation.held_out error from the audit. Now every reader refuses the row."""
    toy = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
    db = str(ledger_path)
    files = sorted(str(p) for p in (toy / "work-units").glob("*.json"))
    files += sorted(str(p) for p in (toy / "evaluators").glob("*.json"))
    assert runner.invoke(app, ["append", "--db", db, *files]).exit_code == 0
    cohort = json.loads((toy / "cohort-v1.json").read_text())
    cohort["stage"] = "frozen"
    v1 = tmp_path / "v1.json"
    v1.write_text(json.dumps(cohort))
    assert runner.invoke(app, ["cohort", "freeze", str(v1), "--db", db]).exit_code == 0
    task = cohort["tasks"][0]["id"]
    burn = ["cohort", "burn", cohort["id"], "--reason", "seen", "--observed-task", task]
    assert runner.invoke(app, [*burn, "--db", db]).exit_code == 0
    clean = runner.invoke(app, ["cohort", "audit", cohort["id"], "--db", db, "--json"])
    assert clean.exit_code in (0, 1), clean.output
    conn = raw(ledger_path)
    (seq, digest) = conn.execute(
        "SELECT seq, digest FROM objects WHERE kind = 'burn-notice'"
    ).fetchone()
    conn.execute(
        'UPDATE objects SET legacy_hints = \'[["never_again_held_out","0.0"]]\' WHERE seq = ?',
        (seq,),
    )
    close(conn)
    audit = runner.invoke(app, ["cohort", "audit", cohort["id"], "--db", db, "--json"])
    assert audit.exit_code == 1
    assert "float hints on a ledger-native object" in audit.stderr and digest in audit.stderr
    code, findings = verify(
        runner, Led(ledger_path, "", tmp_path / "none", tmp_path / "none", [], ""), "none"
    )
    assert code == 1 and has(findings, "hints-invalid", seq=seq, digest=digest)


def test_proofs_refuse_a_tree_that_disagrees_with_its_checkpoint(
    led: Led, runner: CliRunner
) -> None:
    # The complete subtree over entries 0-7: part of every root from size 8 on.
    sql("UPDATE tree_nodes SET hash = zeroblob(32) WHERE level = 3 AND idx = 0")(led)
    digest = led.digests[BLOB_SEQ]
    for args in (["proof", "inclusion", digest], ["proof", "consistency", "5"]):
        result = runner.invoke(app, [*args, "--db", str(led.db), "--json"])
        assert result.exit_code == 1, (args, result.output)
        assert result.stderr.startswith("error: stored tree disagrees with the checkpoint")
