"""A PostgreSQL writer login with its own client cannot undo a burn or break the ledger.

Every evaluator machine of a PostgreSQL deployment holds a login in the writer role. Each
test here is such a login using its own psycopg connection, past provledger's code,
against a real throwaway cluster (``tests/pg_cluster.py``): it inserts what its rights
allow (``hostile_writer.pg_insert``: entries, objects, references) and tries what they
should not allow. What it appends has no standing unless admission would have admitted
it, and ``verify`` flags it; what the store derives (tree nodes, per-kind totals) only
the server writes; a writer holding the log's tail lock stalls the others for the
documented timeout only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hostile_writer import pg_insert, pg_sql
from typer.testing import CliRunner, Result

from ledger.cli import app
from ledger.store.prepared import prepare_value

TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
V1 = "example/toy-v1"


class PgLedger:
    """A ledger made by its owner, burned through the CLI; ``writer`` is a writer login."""

    def __init__(self, owner: str, writer: str, keys: Path) -> None:
        self.owner, self.writer, self.keys = owner, writer, keys

    def run(self, *args: str, code: int = 0, db: str | None = None) -> Result:
        result = CliRunner().invoke(app, [*args, "--db", db or self.owner])
        assert result.exit_code == code, (args, result.exit_code, result.output)
        return result

    def json(self, *args: str, code: int = 0, db: str | None = None) -> Any:
        return json.loads(self.run(*args, "--json", code=code, db=db).stdout)


def _v1(stage: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / "cohort-v1.json").read_text())
    value["stage"] = stage
    return value


def _honest(keys: Path, n: int) -> str:
    """A file an honest writer appends (a collecting cohort, anyone's to record)."""
    value: dict[str, Any] = json.loads((TOY / "cohort-v2.json").read_text())
    value.update(stage="collecting", id=f"example/honest-{n}")
    path = keys / f"honest-{n}.json"
    path.write_text(json.dumps(value))
    return str(path)


@pytest.fixture
def burned(pg_url: str, pg_cluster: Any, tmp_path: Path) -> PgLedger:
    from ledger.create import initialise
    from ledger.store.location import parse_location

    info = initialise(parse_location(pg_url), None, tmp_path / "log.key", tmp_path / "auth.key")
    dbname = pg_url.split("/")[3].split("?")[0]
    pg_cluster.sql(f'CREATE ROLE "w_{dbname}" LOGIN IN ROLE "{info["pg_writer_role"]}"')
    led = PgLedger(pg_url, pg_cluster.url(dbname, user="w_" + dbname), tmp_path)
    files = sorted((TOY / "work-units").glob("*.json")) + sorted(
        (TOY / "evaluators").glob("*.json")
    )
    led.run("append", *map(str, files), db=led.writer)
    frozen = tmp_path / "v1.json"
    frozen.write_text(json.dumps(_v1("frozen")))
    key = ["--authority-key", str(tmp_path / "auth.key")]
    led.run("cohort", "freeze", str(frozen), *key, db=led.writer)
    led.run("cohort", "burn", V1, "--reason", "seen", *key, db=led.writer)
    assert led.json("verify")["ok"] is True
    return led


def test_walk_back_by_a_writer_login_has_no_standing_and_verify_flags_it(
    burned: PgLedger, tmp_path: Path
) -> None:
    note = tmp_path / "seen.checkpoint"
    note.write_text(burned.run("checkpoint", "--log-key", str(tmp_path / "log.key")).stdout)
    burned.run("append", _honest(burned.keys, 0), db=burned.writer)  # logs the checkpoint
    (seq,) = pg_insert(burned.writer, [prepare_value(_v1("collecting"))])
    assert burned.json("cohort", "audit", V1)["stage"] == "burned"
    # The ledger still works for everyone: a later append, stats, verify.
    burned.run("append", _honest(burned.keys, 1), db=burned.writer)
    assert burned.json("stats")["entries"] == seq + 2
    report = burned.json("verify", code=1)
    [finding] = report["findings"]
    assert (finding["seq"], finding["code"]) == (seq, "cohort-lifecycle")
    # Incrementally: only what came after the checkpoint, judged against all before it.
    since = burned.json("verify", "--since-checkpoint", str(note), code=1)
    assert since["since_checkpoint"] is not None
    assert [(f["seq"], f["code"]) for f in since["findings"]] == [(seq, "cohort-lifecycle")]
    # A copy of the tampered database carries no standing and is flagged the same.
    dst = tmp_path / "copy.db"
    assert CliRunner().invoke(app, ["copy", burned.owner, str(dst)]).exit_code == 0
    assert burned.json("cohort", "audit", V1, db=str(dst))["stage"] == "burned"
    [copied] = burned.json("verify", code=1, db=str(dst))["findings"]
    assert (copied["seq"], copied["code"]) == (seq, "cohort-lifecycle")


@pytest.mark.parametrize(
    "statement",
    [
        # The next leaf's node, before its entry: would block every later append.
        "INSERT INTO tree_nodes(level, idx, hash) VALUES (0, 1000000, '\\x00')",
        # Totals inflated: stats would refuse for good ("totals disagree with the log").
        "UPDATE kind_totals SET entries = entries + 5",
        "INSERT INTO kind_totals VALUES ('made-up', 1, 1, 1)",
    ],
)
def test_writer_login_cannot_write_what_the_server_derives(
    burned: PgLedger, statement: str
) -> None:
    with pytest.raises(Exception, match="permission denied"):
        pg_sql(burned.writer, statement)


@pytest.mark.parametrize(
    ("statement", "says"),
    [
        # An entry past the end of the log (a gap): it does not extend the log.
        (
            "INSERT INTO entries VALUES (1000000, 'sha256:' || repeat('0', 64), 'blob',"
            " '2026-01-01T00:00:00.000000Z')",
            "does not extend the log",
        ),
        # An object row no entry logs (it would block that digest's append for good).
        (
            "INSERT INTO objects(digest, seq, kind, data) VALUES"
            " ('sha256:' || repeat('0', 64), 1000000, 'blob', '\\x00')",
            "has no log entry",
        ),
    ],
)
def test_writer_login_cannot_break_the_log_it_may_append_to(
    burned: PgLedger, statement: str, says: str
) -> None:
    with pytest.raises(Exception, match=says):
        pg_sql(burned.writer, statement)
    burned.run("append", _honest(burned.keys, 1), db=burned.writer)
    assert burned.json("verify")["ok"] is True


def test_a_writer_holding_the_tail_lock_stalls_others_only_until_the_timeout(
    burned: PgLedger,
) -> None:
    import psycopg

    from ledger.store.postgres import TAIL_LOCK

    held = threading.Event()
    release = threading.Event()

    def hold() -> None:
        with psycopg.connect(burned.writer) as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (TAIL_LOCK,))
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    try:
        assert held.wait(10)
        exe = Path(sys.executable).parent / "provledger"
        env = {**os.environ, "PROVLEDGER_PG_LOCK_TIMEOUT": "1"}
        proc = subprocess.run(
            [str(exe), "append", _honest(burned.keys, 1), "--db", burned.writer],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    finally:
        release.set()
        holder.join()
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith("error: ledger tail lock") and proc.stderr.count("\n") == 1
    assert "PROVLEDGER_PG_LOCK_TIMEOUT" in proc.stderr
    burned.run("append", _honest(burned.keys, 2), db=burned.writer)  # free again


def test_migrate_brings_a_format_1_ledger_to_server_derived_tables(
    burned: PgLedger, pg_cluster: Any
) -> None:
    """A ledger of the earlier layout (the client wrote tree nodes and totals, the writer
    role could too) is refused until migrated; migrate takes the writer's rights back."""
    from ledger.store.postgres_schema import DEFINER_FUNCTIONS, DERIVE_TRIGGERS

    dbname = burned.owner.split("/")[3].split("?")[0]
    undo = [f"DROP TRIGGER {name} ON {table}" for table, name, _n, _f in DERIVE_TRIGGERS]
    undo += [f"DROP FUNCTION {name}()" for name in DEFINER_FUNCTIONS]
    undo += [
        f'GRANT INSERT ON tree_nodes TO "{dbname}_writer"',
        f'GRANT INSERT, UPDATE ON kind_totals TO "{dbname}_writer"',
        "ALTER TABLE meta DISABLE TRIGGER meta_no_update",
        "UPDATE meta SET value = 'provledger-postgres/1' WHERE key = 'format'",
        "ALTER TABLE meta ENABLE TRIGGER meta_no_update",
    ]
    for statement in undo:
        pg_cluster.sql(statement, db=dbname)
    err = burned.run("stats", code=3).stderr
    assert "earlier layout" in err and "provledger migrate" in err
    assert burned.json("migrate")["from"] == "provledger-postgres/1"
    assert burned.json("migrate")["migrated"] is False  # once only
    burned.run("append", _honest(burned.keys, 3), db=burned.writer)
    assert burned.json("verify")["ok"] is True
    with pytest.raises(Exception, match="permission denied"):
        pg_sql(burned.writer, "UPDATE kind_totals SET entries = entries + 5")


def test_rows_a_writer_login_makes_up_cannot_make_reads_fail(burned: PgLedger) -> None:
    """A reference no object's bytes make, and an entry whose object claims an id its
    bytes do not have: reads skip them (verify reports them); nothing fails for good."""
    [row] = [r for r in burned.json("cohort", "list") if r["id"] == V1]
    cohort = row["record_digest"]
    pg_sql(
        burned.writer,
        "INSERT INTO refs(from_digest, rel, to_digest) VALUES (%s, 'subject', %s)",
        ("sha256:" + "1" * 64, cohort),
    )
    # Real bytes (a collecting cohort), logged, but its row claims the burned cohort's id.
    liar = prepare_value(_v1("collecting") | {"id": "example/liar"})
    (seq,) = pg_insert(burned.writer, [liar], object_id=V1)
    assert burned.json("cohort", "audit", V1)["stage"] == "burned"
    assert any(r["id"] == V1 for r in burned.json("cohort", "list"))
    found = {(f["code"], f["seq"]) for f in burned.json("verify", code=1)["findings"]}
    assert ("index-mismatch", seq) in found and ("ref-extra", None) in found


def test_checkpoint_rows_a_writer_login_makes_up_stop_no_append_or_bundle(
    burned: PgLedger, tmp_path: Path
) -> None:
    """The writer role may insert checkpoints and cosignatures (whoever holds the log
    key checkpoints through it). Rows it makes up, not signed by the log key, or a line
    that is no signature, are skipped by every read: the next append (which logs the
    checkpoint of the current size), stats and bundle export go on; verify reports them."""
    size = burned.json("stats")["entries"]
    pg_sql(burned.writer, "INSERT INTO checkpoints VALUES (%s, '\\x00', 'made up', 'x')", (size,))
    pg_sql(burned.writer, "INSERT INTO checkpoints VALUES (%s, '\\x00', 'ahead', 'x')", (size + 1,))
    burned.run("append", _honest(burned.keys, 1), db=burned.writer)  # was: schema violation
    assert burned.json("stats")["latest_checkpoint_size"] is None
    log_key = ["--log-key", str(tmp_path / "log.key")]
    # The size the made-up row holds cannot be signed; the next one can.
    err = burned.run("checkpoint", *log_key, code=4).stderr
    assert err.startswith("error: checkpoint, got a stored row at size") and "verify" in err
    burned.run("append", _honest(burned.keys, 2), db=burned.writer)
    burned.run("checkpoint", *log_key)
    newest = burned.json("stats")["entries"]
    pg_sql(
        burned.writer,
        "INSERT INTO cosignatures(size, line, added_at) VALUES (%s, 'no signature', 'x')",
        (newest,),
    )
    bundle = tmp_path / "burn.bundle"
    burned.run("bundle", "export", V1, "-o", str(bundle))  # was: malformed signature line
    from ledger.log.checkpoints import verifier_key_of
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    with open_store(parse_location(burned.owner), readonly=True) as store:
        vkey = verifier_key_of(store)
    verified = CliRunner().invoke(app, ["bundle", "verify", str(bundle), "--log-key", vkey])
    assert verified.exit_code == 0, verified.output
    codes = {f["code"] for f in burned.json("verify", code=1)["findings"]}
    assert "checkpoint-signature-invalid" in codes
