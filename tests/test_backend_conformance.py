"""One conformance suite, run against both backends (an SQLite file and a PostgreSQL database).

Append and idempotence, append-only refusal by the database itself, tamper detection by
``verify``, interruption (a client killed mid-import leaves an exact prefix; a re-run
completes it) and the same exit codes. Across backends: the same digests for the same
inputs, and after ``copy`` the same roots, proofs and bundles.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from typer.testing import CliRunner

from ledger.cli import app

ROOT = Path(__file__).resolve().parents[1]
PROVLEDGER = ROOT / ".venv" / "bin" / "provledger"
EXAMPLES = ROOT / "verifiers" / "fixtures" / "calibration"
sys.path.insert(0, str(ROOT / "scripts"))

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def db(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh, initialised ledger on each backend; keys in tmp_path (the cwd)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PROVLEDGER_DB", raising=False)
    if request.param == "sqlite":
        location = str(tmp_path / "ledger.db")
    else:
        location = request.getfixturevalue("pg_url")
    result = CliRunner().invoke(
        app,
        [
            "init",
            "--db",
            location,
            "--log-key",
            str(tmp_path / "log.key"),
            "--authority-key",
            str(tmp_path / "authority.key"),
        ],
    )
    assert result.exit_code == 0, result.output
    return location


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def corpus_jsonl(path: Path, n: int, seed: int = 7) -> list[str]:
    """n synthetic IDKMesh documents as JSON Lines; returns their digests in order."""
    from bench_corpus import write_corpus

    write_corpus(path, n, seed)
    return [
        "sha256:" + hashlib.sha256(rfc8785.dumps(json.loads(line))).hexdigest()
        for line in path.read_text("utf-8").splitlines()
    ]


def stored_digests(location: str) -> list[str]:
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    with open_store(parse_location(location), readonly=True) as store:
        return [e.digest for e in store.entries()]


def raw_sql(location: str, statement: str) -> None:
    """Run SQL on the ledger's database directly, as its owner would."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            conn.execute(statement)
    else:
        conn = sqlite3.connect(location, isolation_level=None)
        try:
            conn.execute(statement)
        finally:
            conn.close()


def test_append_is_idempotent_with_the_same_exit_codes(db: str) -> None:
    wu = str(EXAMPLES / "work-unit.json")
    first = cli("append", wu, "--db", db, "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)[0]["seq"] == 0
    assert json.loads(first.stdout)[0]["status"] == "new"
    again = cli("append", wu, "--db", db, "--json")
    assert again.exit_code == 0
    assert json.loads(again.stdout)[0] == {**json.loads(first.stdout)[0], "status": "present"}
    missing = cli("show", "sha256:" + "0" * 64, "--db", db)
    assert missing.exit_code == 3 and missing.stderr.startswith("error: object not found")
    bad = Path("bad.json")
    bad.write_text('{"a": 1, "a": 2}')
    refused = cli("append", wu, str(bad), "--db", db)
    assert refused.exit_code == 3 and refused.stderr.count("\n") == 1
    assert stored_digests(db) == [json.loads(first.stdout)[0]["digest"]]
    reinit = cli("init", "--db", db, "--log-key", "k2", "--authority-key", "a2")
    assert reinit.exit_code == 4, reinit.output
    assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    ok = cli("verify", "--db", db, "--json")
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["findings"] == []


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE objects SET kind = 'x'",
        "DELETE FROM entries",
        "UPDATE tree_nodes SET hash = hash",
        "DELETE FROM checkpoints",
        "UPDATE meta SET value = 'x'",
        "UPDATE kind_totals SET bytes = bytes - 1",
        "UPDATE kind_totals SET kind = 'other'",
        "DELETE FROM kind_totals",
    ],
)
def test_the_database_refuses_updates_and_deletes(db: str, statement: str) -> None:
    assert cli("append", str(EXAMPLES / "work-unit.json"), "--db", db).exit_code == 0
    assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    with pytest.raises(Exception, match="append-only"):
        raw_sql(db, statement)
    assert cli("verify", "--db", db).exit_code == 0


def test_postgres_refuses_truncate(pg_url: str, tmp_path: Path) -> None:
    from ledger.create import initialise
    from ledger.store.location import parse_location

    initialise(parse_location(pg_url), None, tmp_path / "l.key", tmp_path / "a.key")
    for table in ("entries", "objects", "refs", "tree_nodes", "checkpoints", "meta", "kind_totals"):
        with pytest.raises(Exception, match="append-only"):
            raw_sql(pg_url, f"TRUNCATE {table}")


def test_tampered_bytes_are_found(db: str) -> None:
    assert cli("append", str(EXAMPLES / "work-unit.json"), "--db", db).exit_code == 0
    if db.startswith("postgresql://"):
        raw_sql(db, "ALTER TABLE objects DISABLE TRIGGER objects_no_update")
        raw_sql(db, "UPDATE objects SET data = data || '\\x20'::bytea")
        expected = {"digest-mismatch", "trigger-disabled"}
    else:
        raw_sql(db, "DROP TRIGGER objects_no_update")
        raw_sql(db, "UPDATE objects SET data = CAST(data || X'20' AS BLOB)")
        expected = {"digest-mismatch", "trigger-missing"}
    result = cli("verify", "--db", db, "--json")
    assert result.exit_code == 1
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert expected <= codes, codes


def test_postgres_verify_checks_grants(pg_url: str, tmp_path: Path) -> None:
    from ledger.create import initialise
    from ledger.store.location import parse_location

    info = initialise(parse_location(pg_url), None, tmp_path / "l.key", tmp_path / "a.key")
    assert info["pg_grants"] == []  # the test user is a superuser: roles were created
    assert cli("verify", "--db", pg_url).exit_code == 0
    writer, auditor = info["pg_writer_role"], info["pg_auditor_role"]
    raw_sql(pg_url, f'GRANT UPDATE ON entries TO "{writer}"')
    raw_sql(pg_url, f'GRANT INSERT ON refs TO "{auditor}"')
    raw_sql(pg_url, "GRANT SELECT ON meta TO PUBLIC")
    raw_sql(pg_url, "DROP TRIGGER refs_no_truncate ON refs")
    result = cli("verify", "--db", pg_url, "--json")
    assert result.exit_code == 1
    messages = [(f["code"], f["message"]) for f in json.loads(result.stdout)["findings"]]
    assert ("trigger-missing", "append-only trigger refs_no_truncate is missing") in messages
    wrong = [m for code, m in messages if code == "grant-wrong"]
    assert len(wrong) == 3, messages
    assert any(f"writer role {writer} on entries" in m for m in wrong)
    assert any(f"auditor role {auditor} on refs" in m for m in wrong)
    assert any("PUBLIC on meta" in m for m in wrong)


def test_writer_and_auditor_roles_have_exactly_their_rights(
    pg_url: str, pg_cluster: Any, tmp_path: Path
) -> None:
    """A login in the writer role can append through provledger; the auditor only read."""
    from ledger.create import initialise
    from ledger.store.location import parse_location

    info = initialise(parse_location(pg_url), None, tmp_path / "l.key", tmp_path / "a.key")
    dbname = pg_url.split("/")[3].split("?")[0]
    for login, role in (
        ("w_" + dbname, info["pg_writer_role"]),
        ("a_" + dbname, info["pg_auditor_role"]),
    ):
        pg_cluster.sql(f'CREATE ROLE "{login}" LOGIN IN ROLE "{role}"')
    as_writer = pg_cluster.url(dbname, user="w_" + dbname)
    as_auditor = pg_cluster.url(dbname, user="a_" + dbname)
    wu = str(EXAMPLES / "work-unit.json")
    assert cli("append", wu, "--db", as_writer).exit_code == 0
    # Two objects of one kind: the second adds to the kind's totals row (UPDATE).
    for version in ("0.2", "0.3"):
        plan = str(EXAMPLES / "plans" / f"evaluator-plan-v{version}.json")
        assert cli("append", plan, "--db", as_writer).exit_code == 0
    totals = json.loads(cli("stats", "--db", as_auditor, "--json").stdout)["by_kind"]
    assert totals == {"evaluator-plan": 2, "work-unit": 1}
    denied = cli("append", str(EXAMPLES / "plans" / "evaluator-plan-v0.4.json"), "--db", as_auditor)
    assert denied.exit_code == 3 and "permission denied" in denied.stderr
    assert cli("verify", "--db", as_auditor).exit_code == 0
    with pytest.raises(Exception, match=r"permission denied|append-only"):
        raw_sql(as_writer, "DELETE FROM entries")


def raw_rows(location: str, query: str) -> list[tuple[Any, ...]]:
    """Rows of a query run on the ledger's database directly."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as conn:
            return [tuple(row) for row in conn.execute(query).fetchall()]
    conn = sqlite3.connect(location)
    try:
        return conn.execute(query).fetchall()
    finally:
        conn.close()


def scanned_totals(location: str) -> dict[str, tuple[int, int, int]]:
    """Per-kind (entries, objects, bytes) from a full scan of the rows."""
    length = "octet_length" if location.startswith("postgresql://") else "length"
    rows = raw_rows(
        location,
        "SELECT kind, sum(e), sum(o), sum(b) FROM ("
        " SELECT kind, 1 AS e, 0 AS o, 0 AS b FROM entries UNION ALL"
        f" SELECT o.kind, 0, 1, {length}(o.data) FROM objects o JOIN entries e ON e.seq = o.seq"
        ") t GROUP BY kind ORDER BY kind",
    )
    return {str(k): (int(e), int(o), int(b)) for k, e, o, b in rows}


def test_kind_totals_follow_the_log_and_stats_reads_them(db: str, tmp_path: Path) -> None:
    from ledger.store.location import parse_location

    jsonl = tmp_path / "in.jsonl"
    corpus_jsonl(jsonl, 40)
    assert cli("import", "jsonl", str(jsonl), "--db", db, "--batch", "15").exit_code == 0
    assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    assert cli("append", str(EXAMPLES / "work-unit.json"), "--db", db).exit_code == 0
    before = scanned_totals(db)
    assert set(before) >= {"checkpoint", "work-unit", "evaluator-plan"}
    stored = raw_rows(db, "SELECT kind, entries, objects, bytes FROM kind_totals ORDER BY kind")
    assert {str(k): (int(e), int(o), int(b)) for k, e, o, b in stored} == before
    # A dry run and a refused batch change nothing.
    plan = str(EXAMPLES / "plans" / "evaluator-plan-v0.4.json")
    assert cli("append", plan, "--db", db, "--dry-run").exit_code == 0
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1, "a": 2}')
    assert cli("append", plan, str(bad), "--db", db).exit_code == 3
    assert scanned_totals(db) == before
    shown = cli("stats", "--db", db, "--json")
    assert shown.exit_code == 0, shown.output
    info = json.loads(shown.stdout)
    assert info["by_kind"] == {kind: e for kind, (e, _o, _b) in before.items()}
    assert info["object_bytes"] == sum(b for _e, _o, b in before.values())
    assert info["entries"] == sum(info["by_kind"].values())
    # The ledger named as given (a URL without its password), its size on disk or server.
    assert info["db"] == str(parse_location(db)) and info["file_bytes"] > 0
    assert cli("verify", "--db", db).exit_code == 0


def test_forged_totals_are_found_by_verify(db: str) -> None:
    assert cli("append", str(EXAMPLES / "work-unit.json"), "--db", db).exit_code == 0
    # Raising a total is what the guard lets through; only verify can tell.
    raw_sql(db, "UPDATE kind_totals SET bytes = bytes + 1")
    result = cli("verify", "--db", db, "--json")
    assert result.exit_code == 1
    findings = json.loads(result.stdout)["findings"]
    assert [f["code"] for f in findings] == ["totals-mismatch"], findings
    assert "'work-unit'" in findings[0]["message"]


def test_interrupted_import_leaves_a_prefix_and_a_rerun_completes(db: str, tmp_path: Path) -> None:
    if not PROVLEDGER.exists():
        pytest.skip(f"console script absent: {PROVLEDGER}")
    jsonl = tmp_path / "in.jsonl"
    digests = corpus_jsonl(jsonl, 900)
    env = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
    cmd = [str(PROVLEDGER), "import", "jsonl", str(jsonl), "--db", db, "--batch", "25"]
    proc = subprocess.Popen([*cmd, "--workers", "1"], env=env, stderr=subprocess.PIPE)
    while proc.poll() is None and len(stored_digests(db)) < 100:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stored = stored_digests(db)
    assert stored == digests[: len(stored)]
    assert len(stored) % 25 == 0 or len(stored) == len(digests)
    rerun = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert f"{len(stored)} already present" in rerun.stdout
    assert stored_digests(db) == digests
    assert cli("verify", "--db", db).exit_code == 0


def test_same_inputs_same_digests_and_copies_agree_everywhere(
    pg_url: str, pg_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    lite = str(tmp_path / "a.db")
    for location, stem in ((lite, "a"), (pg_url, "p")):
        args = [
            "init",
            "--db",
            location,
            "--log-key",
            f"{stem}.log",
            "--authority-key",
            f"{stem}.auth",
        ]
        assert cli(*args).exit_code == 0
    jsonl = tmp_path / "in.jsonl"
    digests = corpus_jsonl(jsonl, 120)
    for location in (lite, pg_url):
        result = cli("import", "jsonl", str(jsonl), "--db", location, "--batch", "50")
        assert result.exit_code == 0, result.output
        assert stored_digests(location) == digests
    # Independent ledgers have other timestamps (the leaf records appended_at), so their
    # roots differ; a copy carries the entries over and so every root and proof. Each
    # checkpoint is logged as an entry by the next append.
    assert cli("checkpoint", "--db", lite, "--log-key", "a.log").exit_code == 0
    assert cli("append", str(EXAMPLES / "work-unit.json"), "--db", lite).exit_code == 0
    assert cli("checkpoint", "--db", lite, "--log-key", "a.log").exit_code == 0
    copy_pg = pg_cluster.createdb()
    back = str(tmp_path / "back.db")
    first = cli("copy", lite, copy_pg, "--json")
    assert first.exit_code == 0, first.output
    second = cli("copy", copy_pg, back, "--json")
    assert second.exit_code == 0, second.output
    roots = json.loads(first.stdout)["roots"]
    assert roots == json.loads(second.stdout)["roots"] and len(roots) == 2
    for location in (lite, copy_pg, back):
        result = cli("verify", "--db", location, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["root"] == roots[str(len(digests) + 2)]
    # The second checkpoint covers the first one's record (logged at seq 120).
    for size in (len(digests), len(digests) + 2):
        proofs = {
            cli("proof", "inclusion", digests[5], "--db", loc, "--size", str(size), "--json").stdout
            for loc in (lite, copy_pg, back)
        }
        assert len(proofs) == 1
        consistency = {
            cli("proof", "consistency", "7", str(size), "--db", loc, "--json").stdout
            for loc in (lite, copy_pg, back)
        }
        assert len(consistency) == 1
    # A bundle exported from the PostgreSQL copy verifies under the SQLite ledger's key,
    # and its checkpoint is the one the SQLite ledger stores.
    bundle = tmp_path / "b.json"
    assert cli("bundle", "export", digests[3], "--db", copy_pg, "-o", str(bundle)).exit_code == 0
    from ledger.store.sqlite import open_store

    with open_store(Path(lite)) as store:
        vkey = store.get_meta("log_verifier_key")
        lite_checkpoint = store.checkpoints()[-1]
    assert vkey is not None
    checked = cli("bundle", "verify", str(bundle), "--log-key", vkey, "--json")
    assert checked.exit_code == 0, checked.output
    assert lite_checkpoint.root.hex() in checked.stdout


def test_copy_refuses_a_destination_that_is_not_a_prefix(
    db: str, tmp_path: Path, pg_cluster: Any
) -> None:
    assert cli("append", str(EXAMPLES / "work-unit.json"), "--db", db).exit_code == 0
    other = str(tmp_path / "other.db")
    init = ["init", "--db", other, "--log-key", "o.log", "--authority-key", "o.auth"]
    assert cli(*init).exit_code == 0
    refused = cli("copy", db, other)
    assert refused.exit_code == 4 and refused.stderr.startswith(
        "error: copy destination is another"
    )
    # Same log, diverging entries: refused before anything is written.
    fork = pg_cluster.createdb() if db.endswith(".db") else str(tmp_path / "fork.db")
    assert cli("copy", db, fork).exit_code == 0
    plan = str(EXAMPLES / "plans" / "evaluator-plan-v0.4.json")
    assert cli("append", plan, "--db", fork).exit_code == 0
    assert (
        cli("append", str(EXAMPLES / "plans" / "evaluator-plan-v0.3.json"), "--db", db).exit_code
        == 0
    )
    before = stored_digests(fork)
    diverged = cli("copy", db, fork)
    assert diverged.exit_code == 4 and "not empty" in diverged.stderr
    assert stored_digests(fork) == before


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("ALTER TABLE objects ADD COLUMN note text", "column objects.note, got ('text', True, '')"),
        (
            'ALTER TABLE objects ALTER COLUMN object_id TYPE text COLLATE "POSIX"',
            "column objects.object_id, got ('text', True, 'POSIX')",
        ),
        ("ALTER TABLE entries DROP CONSTRAINT entries_pkey", "index entries_pkey is missing"),
        ("ALTER TABLE objects ALTER COLUMN data TYPE text", "column objects.data, got ('text'"),
        ("CREATE TABLE scratch (x int)", "relation scratch is not part of a ledger's schema"),
        ("CREATE INDEX extra ON objects(kind)", "index extra is not part of a ledger's schema"),
        (
            "CREATE RULE swallow AS ON INSERT TO refs DO INSTEAD NOTHING",
            "rule swallow on refs is not allowed",
        ),
        (
            "CREATE TRIGGER spy AFTER INSERT ON objects FOR EACH ROW"
            " EXECUTE FUNCTION provledger_append_only()",
            "trigger spy on table objects is unknown",
        ),
        (
            "CREATE OR REPLACE FUNCTION provledger_append_only() RETURNS trigger"
            " LANGUAGE plpgsql AS $$BEGIN RETURN NEW; END$$",
            "append-only function provledger_append_only has another body",
        ),
        (
            "ALTER TABLE entries DISABLE TRIGGER entries_no_delete",
            "append-only trigger entries_no_delete is disabled",
        ),
        (
            "ALTER TABLE objects ENABLE ROW LEVEL SECURITY",
            "row-level security is enabled on objects",
        ),
    ],
)
def test_postgres_verify_finds_an_altered_schema(
    pg_url: str, tmp_path: Path, statement: str, message: str
) -> None:
    from ledger.create import initialise
    from ledger.store.location import parse_location

    initialise(parse_location(pg_url), None, tmp_path / "l.key", tmp_path / "a.key")
    raw_sql(pg_url, statement)
    result = cli("verify", "--db", pg_url, "--json")
    assert result.exit_code == 1
    found = [f["message"] for f in json.loads(result.stdout)["findings"]]
    assert any(f.startswith(message) for f in found), found


def test_cosignatures_are_stored_once_append_only_and_copied(db: str, tmp_path: Path) -> None:
    from ledger.errors import NotFound
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    assert cli("append", str(EXAMPLES / "work-unit.json"), "--db", db).exit_code == 0
    assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    import base64

    # Well-formed signature lines (key id + 64 bytes); whether they verify is judged
    # against witness keys when read, not here.
    lines = [f"— witness.example/w{n} {base64.b64encode(bytes([n]) * 68).decode()}" for n in (1, 2)]
    with open_store(parse_location(db)) as store:
        assert store.add_cosignatures(1, lines) == 2
        assert store.add_cosignatures(1, lines[::-1]) == 0
        assert store.cosignatures(1) == lines
        with pytest.raises(NotFound):
            store.add_cosignatures(7, lines)
    with pytest.raises(Exception, match="append-only"):
        raw_sql(db, "DELETE FROM cosignatures")
    other = str(tmp_path / "copy.db") if db.startswith("postgresql://") else None
    if other is not None:
        result = cli("copy", db, other, "--json")
        assert result.exit_code == 0, result.output
        assert json.loads(result.stdout)["cosignatures"] == 2
        with open_store(parse_location(other)) as copied:
            assert copied.cosignatures(1) == lines


# --- the core's rules hold on both backends ------------------------------------------

TOY = ROOT / "examples" / "cohorts" / "toy"


def ledger_state(location: str) -> tuple[int, str]:
    from ledger_state import state

    from ledger.store.location import parse_location

    return state(parse_location(location))


def test_admission_refuses_inside_the_transaction(db: str) -> None:
    """An authority-governed record without its attestation: exit 4, one line, nothing
    written, though the batch's other documents were valid (all or nothing)."""
    files = [str(p) for p in sorted((TOY / "work-units").glob("*.json"))]
    assert cli("append", *files, "--db", db).exit_code == 0
    before = ledger_state(db)
    frozen = json.loads((TOY / "cohort-v1.json").read_text())
    frozen["stage"] = "frozen"
    Path("frozen.json").write_text(json.dumps(frozen))
    plan = str(EXAMPLES / "plans" / "evaluator-plan-v0.4.json")
    refused = cli("append", plan, "frozen.json", "--db", db)
    assert refused.exit_code == 4, refused.output
    assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1
    assert "benchmark-cohort" in refused.stderr
    assert ledger_state(db) == before
    # The plan alone is admitted: the refusal was the batch's, not a broken connection.
    assert cli("append", plan, "--db", db).exit_code == 0
    assert ledger_state(db)[0] == before[0] + 1


def test_dry_run_runs_every_check_and_writes_nothing(db: str) -> None:
    files = [str(p) for p in sorted((TOY / "work-units").glob("*.json"))]
    before = ledger_state(db)
    dry = cli("append", "--dry-run", "--json", *files, "--db", db)
    assert dry.exit_code == 0, dry.output
    rows = json.loads(dry.stdout)
    assert [r["status"] for r in rows] == ["new"] * len(files)
    assert [r["seq"] for r in rows] == list(range(len(files)))
    assert "dry run: nothing written" in dry.stderr
    assert ledger_state(db) == before
    checkpoint = cli("checkpoint", "--dry-run", "--db", db, "--log-key", "log.key")
    assert checkpoint.exit_code == 0, checkpoint.output
    assert cli("append", *files, "--db", db).exit_code == 0
    frozen = json.loads((TOY / "cohort-v1.json").read_text())
    frozen["stage"] = "frozen"
    Path("frozen.json").write_text(json.dumps(frozen))
    after = ledger_state(db)
    assert cli("append", "--dry-run", "frozen.json", "--db", db).exit_code == 4
    assert ledger_state(db) == after
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    with open_store(parse_location(db), readonly=True) as store:
        assert store.checkpoints() == []


def test_checkpoints_are_logged_and_their_rows_checked(db: str) -> None:
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    assert cli("append", str(EXAMPLES / "work-unit.json"), "--db", db).exit_code == 0
    assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    assert (
        cli("append", str(EXAMPLES / "plans" / "evaluator-plan-v0.4.json"), "--db", db).exit_code
        == 0
    )
    with open_store(parse_location(db), readonly=True) as store:
        kinds = [e.kind for e in store.entries()]
    assert kinds == ["work-unit", "checkpoint", "evaluator-plan"]
    assert cli("verify", "--db", db).exit_code == 0
    # Someone with the owner's rights rewrites the logged checkpoint's time.
    if db.startswith("postgresql://"):
        raw_sql(db, "ALTER TABLE checkpoints DISABLE TRIGGER checkpoints_no_update")
    else:
        raw_sql(db, "DROP TRIGGER checkpoints_no_update")
    raw_sql(db, "UPDATE checkpoints SET created_at = '2020-01-01T00:00:00.000000Z'")
    result = cli("verify", "--db", db, "--json")
    assert result.exit_code == 1
    codes = {f["code"] for f in json.loads(result.stdout)["findings"]}
    assert "checkpoint-row-mismatch" in codes, codes


def test_a_forged_index_column_is_refused_on_read(db: str) -> None:
    added = cli("append", str(EXAMPLES / "work-unit.json"), "--db", db, "--json")
    digest = json.loads(added.stdout)[0]["digest"]
    if db.startswith("postgresql://"):
        raw_sql(db, "ALTER TABLE objects DISABLE TRIGGER objects_no_update")
    else:
        raw_sql(db, "DROP TRIGGER objects_no_update")
    raw_sql(db, "UPDATE objects SET object_id = 'forged/id'")
    shown = cli("show", digest, "--db", db)
    assert shown.exit_code == 1, shown.output
    assert shown.stderr.startswith("error: ledger object row") and shown.stderr.count("\n") == 1
    result = cli("verify", "--db", db, "--json")
    assert result.exit_code == 1
    assert any(f["digest"] == digest for f in json.loads(result.stdout)["findings"])


def test_real_corpus_and_cohort_audit_agree_across_backends(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, corpus: Path
) -> None:
    """The reference corpus imported on each backend: the same records, the same cohort
    audit (each ledger signs with its own authority key, so attestations differ)."""
    monkeypatch.chdir(tmp_path)
    lite = str(tmp_path / "c.db")
    audits = []
    for location, stem in ((lite, "c"), (pg_url, "p")):
        init = ["init", "--db", location, "--log-key", f"{stem}.log"]
        assert cli(*init, "--authority-key", f"{stem}.auth").exit_code == 0
        imported = cli(
            "import", "idkmesh", str(corpus), "--db", location, "--authority-key", f"{stem}.auth"
        )
        assert imported.exit_code == 0, imported.output
        audit = cli("cohort", "audit", "--all", "--db", location, "--json")
        audits.append(json.loads(audit.stdout))
        assert cli("verify", "--db", location).exit_code == 0

    # Attestations differ (two authority keys); what the cohorts are does not.
    def summary(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
        fields = ("id", "stage", "definition_digest", "record_digest", "ok", "defects")
        return [tuple(row[f] for f in fields) for row in rows]

    assert summary(audits[0]) == summary(audits[1])
    assert {row["stage"] for row in audits[0]} >= {"burned", "frozen"}
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    def unsigned(location: str) -> list[str]:
        # Attestations differ (keys), and so do batch records (each has its own nonce).
        with open_store(parse_location(location), readonly=True) as store:
            return [e.digest for e in store.entries() if e.kind not in ("attestation", "batch")]

    assert unsigned(lite) == unsigned(pg_url)


def test_an_unexpected_server_error_is_one_line_exit_3(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    from ledger.create import initialise
    from ledger.store import postgres
    from ledger.store.location import parse_location

    initialise(parse_location(pg_url), None, tmp_path / "l.key", tmp_path / "a.key")

    def broken(self: Any) -> Any:
        raise psycopg.errors.InternalError("could not read block 7")

    monkeypatch.setattr(postgres.PostgresStore, "stats", broken)
    result = cli("stats", "--db", pg_url)
    assert result.exit_code == 3, result.output
    assert (
        result.stderr
        == "error: database error, got 'could not read block 7', expected a usable ledger\n"
    )


def test_copy_continues_a_prefix_with_every_checkpoint(
    db: str, tmp_path: Path, pg_cluster: Any
) -> None:
    """A copy run again after the source grew (or after an interrupted copy) appends only
    the rest; checkpoints logged in between arrive as the source has them."""
    other = pg_cluster.createdb() if db.endswith(".db") else str(tmp_path / "other.db")
    files = [str(p) for p in sorted((TOY / "work-units").glob("*.json"))]
    assert cli("append", *files[:2], "--db", db).exit_code == 0
    assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    first = cli("copy", db, other, "--json")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["copied"] == 2
    for name in files[2:]:
        assert cli("append", name, "--db", db).exit_code == 0
        assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    again = cli("copy", db, other, "--json")
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert summary["already_present"] == 2
    assert summary["copied"] == summary["source_size"] - 2
    assert stored_digests(other) == stored_digests(db)
    source_roots = {}
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    for location in (db, other):
        with open_store(parse_location(location), readonly=True) as store:
            source_roots[location] = [(c.size, c.root, c.note) for c in store.checkpoints()]
    assert source_roots[db] == source_roots[other] and len(source_roots[db]) == len(files) - 1
    verified = cli("verify", "--db", other, "--json")
    assert verified.exit_code == 0, verified.output


def test_init_without_role_rights_prints_the_grants_for_an_administrator(
    pg_cluster: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A database owner who may not create roles: init succeeds, prints what a role
    administrator must run, and verify reports the missing roles until it is run."""
    import uuid

    monkeypatch.chdir(tmp_path)
    name = "o_" + uuid.uuid4().hex[:10]
    pg_cluster.sql(f'CREATE ROLE "{name}" LOGIN')
    pg_cluster.sql(f'CREATE DATABASE "{name}" OWNER "{name}"')
    url = pg_cluster.url(name, user=name)
    init = cli("init", "--db", url, "--json")
    assert init.exit_code == 0, init.output
    info = json.loads(init.stdout)
    statements = info["pg_grants"]
    assert len(statements) == 6 and statements[0] == f'CREATE ROLE "{name}_writer" NOLOGIN'
    # The server derives tree nodes and totals: the writer may only read them.
    assert f'GRANT SELECT ON tree_nodes, kind_totals TO "{name}_writer"' in statements
    assert (tmp_path / f"{name}.log.key").is_file()  # keys next to the cwd, named after the db
    result = cli("verify", "--db", url, "--json")
    assert result.exit_code == 1
    codes = [f["code"] for f in json.loads(result.stdout)["findings"]]
    assert codes == ["grant-missing", "grant-missing"]
    for statement in statements:
        pg_cluster.sql(statement, db=name)
    assert cli("verify", "--db", url).exit_code == 0


def test_the_demo_chain_verifies_and_bundles_on_both_backends(db: str) -> None:
    """scripts/demo.sh's steps: identity, inputs, a recorded verifier run, a checkpoint,
    the result's provenance, a bundle checked offline under the ledger's log key."""
    assert cli("key", "generate", "verifier.key").exit_code == 0
    register = [
        "identity", "register", "--db", db, "--authority-key", "authority.key",
        "--verifier-id", "idkmesh-local-verifier", "--adapter", "deterministic-patch-verifier",
        "--adapter-version", "0.3.0", "--public-key", "verifier.key.pub",
    ]  # fmt: skip
    assert cli(*register).exit_code == 0
    plans = sorted(str(p) for p in (EXAMPLES / "plans").glob("*.json"))
    assert cli("append", str(EXAMPLES / "work-unit.json"), *plans, "--db", db).exit_code == 0
    run = cli(
        "run-verifier", "--db", db, "--key", "verifier.key", "--json",
        "--work-unit", str(EXAMPLES / "work-unit.json"),
        "--plan", str(EXAMPLES / "plans" / "evaluator-plan-v0.4.json"),
        "--manifest", str(EXAMPLES / "manifests" / "repair.result-manifest.json"),
        "--candidate-root", str(EXAMPLES / "candidates" / "repair"),
    )  # fmt: skip
    assert run.exit_code == 0, run.output
    result = json.loads(run.stdout)["result_digest"]
    assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    provenance = cli("provenance", result, "--db", db, "--json")
    assert provenance.exit_code == 0, provenance.output
    assert cli("bundle", "export", result, "--db", db, "-o", "r.bundle.json").exit_code == 0
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    with open_store(parse_location(db), readonly=True) as store:
        vkey = store.get_meta("log_verifier_key")
    assert vkey is not None
    checked = cli("bundle", "verify", "r.bundle.json", "--log-key", vkey)
    assert checked.exit_code == 0, checked.output
    assert cli("verify", "--db", db).exit_code == 0


def test_postgres_scans_can_start_part_way(pg_url: str, tmp_path: Path) -> None:
    """``log_rows(since)`` and ``ref_scan(resume=True)``: what an audit resumed at a
    checkpoint reads; every reference is still found, in or out of order."""
    from ledger.create import initialise
    from ledger.store import postgres
    from ledger.store.base import unchecked_object
    from ledger.store.derived import derive
    from ledger.store.location import parse_location

    initialise(parse_location(pg_url), None, tmp_path / "l.key", tmp_path / "a.key")
    jsonl = tmp_path / "in.jsonl"
    corpus_jsonl(jsonl, 60)
    assert cli("import", "jsonl", str(jsonl), "--db", pg_url, "--batch", "20").exit_code == 0
    with postgres.open_store(parse_location(pg_url), readonly=True) as store:
        rows = list(store.log_rows(since=25))
        assert [r.seq for r in rows] == list(range(25, 60))
        objects = [unchecked_object(r.object) for r in rows if r.object is not None]
        refs = [
            (obj.digest, rel, target)
            for obj in objects
            for rel, target in derive(obj.kind, obj.data, obj.legacy_hints).refs
        ]
        assert refs
        scan = store.ref_scan(resume=True)
        assert all(scan.has(*ref) for ref in refs)
        assert all(store.ref_scan(resume=True).has(*ref) for ref in reversed(refs))
        assert not scan.has(refs[0][0], refs[0][1], "sha256:" + "0" * 64)


def test_verify_since_a_checkpoint_on_both_backends(db: str) -> None:
    """An audit resumed at a verified checkpoint: clean on a clean ledger, and a rewrite
    of the tree below that checkpoint is caught (``history-rewritten``)."""
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    files = [str(p) for p in sorted((TOY / "work-units").glob("*.json"))]
    assert cli("append", *files[:2], "--db", db).exit_code == 0
    assert cli("checkpoint", "--db", db, "--log-key", "log.key").exit_code == 0
    with open_store(parse_location(db), readonly=True) as store:
        Path("saved.note").write_bytes(store.checkpoints()[-1].note)
    assert cli("append", *files[2:], "--db", db).exit_code == 0
    result = cli("verify", "--db", db, "--since-checkpoint", "saved.note", "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["since_checkpoint"]["size"] == 2 and report["findings"] == []
    if db.startswith("postgresql://"):
        raw_sql(db, "ALTER TABLE tree_nodes DISABLE TRIGGER tree_nodes_no_update")
    else:
        raw_sql(db, "DROP TRIGGER tree_nodes_no_update")
    raw_sql(
        db,
        "UPDATE tree_nodes SET hash = zeroblob(32) WHERE level = 1 AND idx = 0"
        if not db.startswith("postgresql://")
        else "UPDATE tree_nodes SET hash = '\\x"
        + "00" * 32
        + "'::bytea WHERE level = 1 AND idx = 0",
    )
    tampered = cli("verify", "--db", db, "--since-checkpoint", "saved.note", "--json")
    assert tampered.exit_code == 1
    codes = {f["code"] for f in json.loads(tampered.stdout)["findings"]}
    assert "history-rewritten" in codes, codes


def test_import_workers_refuse_what_the_writer_refuses(db: str, tmp_path: Path) -> None:
    """Signatures checked by the import's workers (and subjects read from the batch in
    memory): a forged attestation is refused with the same message as with one process,
    nothing of its batch is written, and the genuine input then imports and verifies."""
    import base64

    from bench_corpus import GROUP, corpus

    from ledger.trust.keys import Ed25519Signer

    signer = Ed25519Signer.from_file(tmp_path / "authority.key")
    docs = list(corpus(4 * GROUP, 11, signer))
    forged = json.loads(json.dumps(docs[2 * GROUP - 1]))
    raw = bytearray(base64.b64decode(forged["signatures"][0]["sig"]))
    raw[0] ^= 1
    forged["signatures"][0]["sig"] = base64.b64encode(bytes(raw)).decode("ascii")
    bad, good = tmp_path / "bad.jsonl", tmp_path / "good.jsonl"
    bad.write_text("".join(json.dumps(d) + "\n" for d in [*docs[: 2 * GROUP - 1], forged]))
    good.write_text("".join(json.dumps(d) + "\n" for d in docs))
    refusals = []
    for workers in ("2", "1"):
        result = cli(
            "import", "jsonl", str(bad), "--db", db, "--batch", str(GROUP), "--workers", workers
        )
        assert result.exit_code == 4, result.output
        refusals.append(result.stderr)
        assert len(stored_digests(db)) == GROUP
    assert refusals[0] == refusals[1] and "bad-signature" in refusals[0]
    done = cli("import", "jsonl", str(good), "--db", db, "--workers", "2", "--json")
    assert done.exit_code == 0, done.output
    assert len(stored_digests(db)) == 4 * GROUP
    assert cli("verify", "--db", db).exit_code == 0
