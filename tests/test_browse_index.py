"""`provledger index` / `verify --browse`: the browse projection of the corpus + demo ledger.

Every cohort, burn notice, excluded outcome and result of the ledger is checked against
values read independently from the ledger's objects; the incrementally built browse
database must equal a full rebuild; the ledger file is never changed.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browse_ledger import BURNED, TOY_V1, BuiltLedger, build, run
from typer.testing import CliRunner

from cohorts.browse.check import check_browse
from cohorts.browse.tables import TABLES, VIEWS
from cohorts.browse.web import CANNED_QUERIES, metadata
from ledger.cli import app
from ledger.store.sqlite import open_store

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltLedger:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    return build(tmp_path_factory.mktemp("browse"), CORPUS)


@pytest.fixture
def conn(built: BuiltLedger) -> Iterator[sqlite3.Connection]:
    c = sqlite3.connect(built.browse)
    c.row_factory = sqlite3.Row
    yield c
    c.close()


def _values(db: Path, kind: str) -> list[tuple[str, int, dict[str, Any]]]:
    with open_store(db, readonly=True) as store:
        return [(o.digest, o.seq, json.loads(o.data)) for o in store.by_kind(kind)]


def test_runs_were_incremental(built: BuiltLedger) -> None:
    sizes = [(r["previous_size"], r["size"]) for r in built.reports]
    assert sizes[0][0] == 0
    for (_, before), (after_prev, _) in itertools.pairwise(sizes):
        assert after_prev == before  # each run started where the previous one stopped
    with open_store(built.db, readonly=True) as store:
        assert sizes[-1][1] == store.size()


def test_every_cohort_with_its_values(built: BuiltLedger, conn: sqlite3.Connection) -> None:
    cohorts = _values(built.db, "benchmark-cohort")
    assert {v["id"] for _, _, v in cohorts} >= {BURNED, TOY_V1, "example/toy-v2"}
    rows = {r["digest"]: r for r in conn.execute("SELECT * FROM cohorts")}
    assert set(rows) == {d for d, _, _ in cohorts}
    for digest, seq, value in cohorts:
        row = rows[digest]
        assert (row["cohort_id"], row["stage"], row["seq"]) == (value["id"], value["stage"], seq)
        assert row["task_count"] == len(value["tasks"])
        assert row["title"] == value["title"]
        assert row["definition_digest"] == value.get("definition_digest")
        if "definition_digest" in value:  # recomputed digest equals the recorded one
            assert value["definition_digest"] in (
                row["definition_digest_jcs"],
                row["definition_digest_legacy"],
            )
        tasks = conn.execute(
            "SELECT * FROM tasks WHERE cohort_digest = ? ORDER BY position", (digest,)
        ).fetchall()
        assert [t["task_id"] for t in tasks] == [t["id"] for t in value["tasks"]]
        assert [t["status"] for t in tasks] == [t["evidence"]["status"] for t in value["tasks"]]


def test_every_burn_and_exclusion(built: BuiltLedger, conn: sqlite3.Connection) -> None:
    notices = _values(built.db, "burn-notice")
    assert {v["cohort_id"] for _, _, v in notices} == {BURNED, TOY_V1}
    for digest, _, value in notices:
        row = conn.execute("SELECT * FROM burn_notices WHERE digest = ?", (digest,)).fetchone()
        assert (row["cohort_id"], row["reason"], row["issued_at"]) == (
            value["cohort_id"],
            value["reason"],
            value.get("issued_at"),
        )
        with open_store(built.db, readonly=True) as store:
            entry = next(store.entries(since=row["seq"], limit=1))
        assert row["recorded_at"] == entry.appended_at
        excluded = conn.execute(
            "SELECT task_id, reason FROM excluded_outcomes WHERE burn_notice_digest = ?"
            " ORDER BY task_id",
            (digest,),
        ).fetchall()
        assert [tuple(e) for e in excluded] == sorted(
            (e["task"], e["reason"]) for e in value["excluded_outcomes"]
        )
        # The cohort rows of that id say when and why it burned.
        for cohort in conn.execute(
            "SELECT * FROM cohorts WHERE cohort_id = ? AND seq < ?",
            (value["cohort_id"], row["seq"]),
        ):
            assert (cohort["burned_at"], cohort["burn_reason"], cohort["burn_notice_digest"]) == (
                value.get("issued_at"),
                value["reason"],
                digest,
            )
    first_five = conn.execute(
        "SELECT count(*) FROM excluded_outcomes WHERE cohort_id = ?", (BURNED,)
    ).fetchone()[0]
    assert first_five == 5


def test_rows_built_where_objects_are_checked(built: BuiltLedger, conn: sqlite3.Connection) -> None:
    """The rows the checking workers build (``prebuild``: each column read from the
    document the check parsed) are the documents' members, column by column."""

    def member(value: Any, *path: str) -> Any:
        """The member at ``path`` when it is text or an integer (a column's type), else None."""
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        return value if isinstance(value, str | int) and not isinstance(value, bool) else None

    expected = {
        "work-unit": ("work_units", {"work_unit_id": ("id",), "version": ("version",),
                      "work_kind": ("kind",), "objective": ("objective",)}),
        "evaluator-plan": ("plans", {"plan_id": ("id",), "backend": ("backend", "type"),
                           "schema_version": ("schema_version",),
                           "visibility": ("visibility",),
                           "work_unit_id": ("binding", "work_unit_id"),
                           "work_unit_digest": ("binding", "work_unit_digest")}),
        "result-manifest": ("manifests", {"manifest_id": ("id",), "status": ("status",),
                            "worker_id": ("worker", "id"),
                            "work_unit_id": ("work_unit_id",)}),
        "verification-result": ("results", {"result_id": ("id",), "status": ("status",),
                                "rationale": ("decision_support", "rationale"),
                                "verifier_adapter": ("verifier", "adapter"),
                                "work_unit_id": ("work_unit_id",),
                                "work_unit_digest": ("provenance", "work_unit_digest"),
                                "result_manifest_digest": ("provenance",
                                                           "result_manifest_digest"),
                                "plan_digest": ("provenance", "verifier_config_digest"),
                                "finished_at": ("finished_at",)}),
    }  # fmt: skip
    for kind, (table, columns) in expected.items():
        values = _values(built.db, kind)
        rows = {r["digest"]: r for r in conn.execute(f"SELECT * FROM {table}")}
        assert values and set(rows) == {d for d, _, _ in values}, kind
        for digest, seq, value in values:
            got = {name: rows[digest][name] for name in ("seq", *columns)}
            assert got == {"seq": seq, **{n: member(value, *p) for n, p in columns.items()}}
    # A plan's ``backend`` is an object ({"type": "unified_diff", ...}): the column shows
    # its type, on every plan that has one (v0.1 plans name no backend).
    backends = dict(conn.execute("SELECT schema_version, backend FROM plans WHERE backend IS NULL"))
    assert set(backends) <= {"0.1"}, backends
    filled = conn.execute("SELECT DISTINCT backend FROM plans WHERE backend IS NOT NULL")
    assert [r[0] for r in filled] == ["unified_diff"]


def test_every_result_signer_and_revocation(built: BuiltLedger, conn: sqlite3.Connection) -> None:
    results = _values(built.db, "verification-result")
    rows = {r["digest"]: r for r in conn.execute("SELECT * FROM results")}
    assert set(rows) == {d for d, _, _ in results}
    for digest, _, value in results:
        row = rows[digest]
        assert row["status"] == value["status"]
        assert row["verifier_id"] == value["verifier"]["id"]
        assert row["recommendation"] == value["decision_support"]["recommendation"]
    every = list(conn.execute("SELECT * FROM result_signatures WHERE signer IS NOT NULL"))
    signed = {r["result_digest"]: r for r in every if r["key_id"] == built.verifier_key_id}
    assert set(signed) == {built.repair_digest, built.decoy_digest}
    # The others are the six calibration runs (calibrate --record, its own verifier key)
    # and the toy repair toy-v2 lists, judged with that key.
    assert len([r for r in every if r["key_id"] != built.verifier_key_id]) == 7
    for sig in signed.values():
        assert sig["signer"] == "idkmesh-local-verifier"
        assert sig["key_id"] == built.verifier_key_id
        assert sig["signature_valid"] == 1
        assert (sig["revoked_reason"], sig["revoked_after_signing"]) == ("retired", 1)
    assert rows[built.repair_digest]["status"] == "passed"
    assert rows[built.decoy_digest]["status"] == "failed"


def test_result_chain_view(built: BuiltLedger, conn: sqlite3.Connection) -> None:
    """The chain of the demo result: every link present in the ledger, in order."""
    (result,) = _values_of(built.db, built.repair_digest)
    chain = conn.execute(
        "SELECT role, digest, stored_digest FROM result_chain WHERE result_digest = ?"
        " ORDER BY role, seq",
        (built.repair_digest,),
    ).fetchall()
    by_role = {}
    for role, digest, stored in chain:
        by_role.setdefault(role, []).append((digest, stored is not None))
    provenance = result["provenance"]
    assert by_role["1 result"] == [(built.repair_digest, True)]
    assert by_role["2 result manifest"] == [(provenance["result_manifest_digest"], True)]
    assert by_role["3 work unit"] == [(provenance["work_unit_digest"], True)]
    assert by_role["4 evaluator plan"] == [(provenance["verifier_config_digest"], True)]
    assert len(by_role["5 attestation"]) == 1
    assert len(by_role["6 signer identity"]) == 1
    assert len(by_role["7 key revocation"]) == 1


def _values_of(db: Path, digest: str) -> list[dict[str, Any]]:
    with open_store(db, readonly=True) as store:
        obj = store.get(digest)
        return [] if obj is None else [json.loads(obj.data)]


def test_attestation_signature_is_checked(built: BuiltLedger, conn: sqlite3.Connection) -> None:
    """Authority attestations of burn notices verify; a forged row would not."""
    rows = conn.execute(
        "SELECT a.signer, a.signature_valid FROM attestations a"
        " JOIN burn_notices b ON b.digest = a.subject_digest"
    ).fetchall()
    assert rows and all(tuple(r) == ("authority", 1) for r in rows)


def _assert_same_rows(got_db: Path, want_db: Path) -> None:
    """Every declared table holds the same rows in both browse files."""
    a, b = sqlite3.connect(got_db), sqlite3.connect(want_db)
    for table in TABLES:
        order = ", ".join(table.pk)
        got = a.execute(f"SELECT * FROM {table.name} ORDER BY {order}").fetchall()
        want = b.execute(f"SELECT * FROM {table.name} ORDER BY {order}").fetchall()
        assert got == want, table.name


def test_incremental_equals_full(built: BuiltLedger, tmp_path: Path) -> None:
    full = tmp_path / "full.db"
    run(CliRunner(), ["index", "--db", str(built.db), "--out", str(full), "--full"])
    _assert_same_rows(built.browse, full)
    with open_store(built.db, readonly=True) as store:
        assert check_browse(store, built.browse) == []


def test_workers_build_equals_in_process(
    built: BuiltLedger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With worker processes (checks and attestation signatures verified ahead there, the
    verdicts only for the exact key, message and signature asked), the rows are those of
    the one-process build: every signature verdict included."""
    import cohorts.browse.build as build_module
    from ledger.trust.judgement import SignatureMemo

    hits: list[int] = []  # per question: 1 when a worker's verdict answered it
    real_verify = SignatureMemo.verify

    def counting(self: SignatureMemo, key: bytes, message: bytes, sig: bytes) -> bool:
        before = len(self._known)
        ok = real_verify(self, key, message, sig)
        hits.append(before - len(self._known))
        return ok

    monkeypatch.setattr(SignatureMemo, "verify", counting)
    monkeypatch.setattr(build_module, "default_workers", lambda entries: 2)
    pooled = tmp_path / "pooled.db"
    run(CliRunner(), ["index", "--db", str(built.db), "--out", str(pooled), "--full"])
    assert any(hits), "no signature verdict came from the workers"
    _assert_same_rows(pooled, built.browse)


def test_ledger_file_never_changed(built: BuiltLedger, tmp_path: Path) -> None:
    before = hashlib.sha256(built.db.read_bytes()).hexdigest()
    run(CliRunner(), ["index", "--db", str(built.db), "--out", str(tmp_path / "b.db")])
    run(CliRunner(), ["index", "--db", str(built.db), "--out", str(tmp_path / "b.db")])
    assert hashlib.sha256(built.db.read_bytes()).hexdigest() == before


def test_fts_finds_task_by_title(conn: sqlite3.Connection) -> None:
    rows = conn.execute(
        "SELECT t.task_id, t.title FROM tasks t JOIN tasks_fts f ON f.rowid = t.rowid"
        " WHERE tasks_fts MATCH 'cohort path boundary'"
    ).fetchall()
    assert ("benchmark/phase-b2/001-cohort-path-boundary", "Cohort path boundary") in [
        tuple(r) for r in rows
    ]


def test_every_digest_is_hex_and_resolves(conn: sqlite3.Connection) -> None:
    objects = {r[0] for r in conn.execute("SELECT digest FROM objects")}
    for table in TABLES:
        for column in table.columns:
            if column.name == "digest" or column.name in ("cohort_digest", "burn_notice_digest"):
                for (value,) in conn.execute(f"SELECT {column.name} FROM {table.name}"):
                    if value is not None:
                        assert value in objects, (table.name, column.name, value)


def test_verify_browse_cli(built: BuiltLedger, tmp_path: Path) -> None:
    runner = CliRunner()
    ok = run(runner, ["verify", "--db", str(built.db), "--browse", str(built.browse), "--json"])
    assert json.loads(ok.stdout)["browse"] == {
        "file": str(built.browse),
        "ok": True,
        "findings": [],
    }
    bad = tmp_path / "bad.db"
    shutil.copyfile(built.browse, bad)
    with sqlite3.connect(bad) as c:
        c.execute("UPDATE excluded_outcomes SET reason = 'nothing to see' WHERE cohort_id = ?",
                  (BURNED,))  # fmt: skip
        c.execute("DELETE FROM results WHERE digest = ?", (built.decoy_digest,))
    result = run(runner, ["verify", "--db", str(built.db), "--browse", str(bad)], 1)
    assert "browse.value excluded_outcomes" in result.stdout
    assert f"browse.row.missing results: row {built.decoy_digest} missing" in result.stdout
    assert "does NOT match the ledger" in result.stdout


def test_index_refuses_another_ledger(built: BuiltLedger, tmp_path: Path) -> None:
    runner = CliRunner()
    other = tmp_path / "other.db"
    run(runner, ["init", "--db", str(other)])
    copy = tmp_path / "copy.db"
    shutil.copyfile(built.browse, copy)
    result = run(runner, ["index", "--db", str(other), "--out", str(copy)], 3)
    assert "is of another ledger" in result.output
    assert (
        hashlib.sha256(copy.read_bytes()).digest()
        == hashlib.sha256(built.browse.read_bytes()).digest()
    )


def test_installed_cli_index_and_verify(built: BuiltLedger, tmp_path: Path) -> None:
    exe = ROOT / ".venv" / "bin" / "provledger"
    if not exe.exists():
        pytest.skip("no installed .venv/bin/provledger")
    out = tmp_path / "sub.browse.db"
    done = subprocess.run(
        [str(exe), "index", "--db", str(built.db), "--out", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    with open_store(built.db, readonly=True) as store:
        size = store.size()
    assert done.stdout.startswith(f"indexed {size} new entries")
    done = subprocess.run(
        [str(exe), "verify", "--db", str(built.db), "--browse", str(out)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "matches the ledger" in done.stdout


def test_metadata_describes_every_table_and_column(conn: sqlite3.Connection) -> None:
    meta = metadata("t")["databases"]["browse"]
    described = meta["tables"]
    for (name,) in conn.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')"
        " AND name NOT LIKE '%_fts%' AND name NOT LIKE 'sqlite_%'"
    ):
        assert described.get(name, {}).get("title"), name
        assert described[name].get("description"), name
        if name in {v.name for v in VIEWS}:
            continue
        columns = [r[1] for r in conn.execute(f"PRAGMA table_info([{name}])")]
        assert set(columns) == set(described[name]["columns"]), name
        assert all(described[name]["columns"].values())


def test_canned_queries_answer_the_auditors(built: BuiltLedger, conn: sqlite3.Connection) -> None:
    burned = conn.execute(CANNED_QUERIES["burned_cohorts"]["sql"]).fetchall()
    assert {r["cohort_id"] for r in burned} == {BURNED, TOY_V1}
    excluded = conn.execute(CANNED_QUERIES["excluded_outcomes"]["sql"], {"cohort": BURNED})
    assert len(excluded.fetchall()) == 5
    signed = conn.execute(
        CANNED_QUERIES["results_signed_by"]["sql"], {"verifier": "idkmesh-local-verifier"}
    ).fetchall()
    # The demo key signed the repair and the decoy and was retired after; the six
    # calibration runs and the toy repair are signed by the calibration key (same
    # verifier id, not retired).
    demo = [r for r in signed if r["result_digest"] in {built.repair_digest, built.decoy_digest}]
    assert len(demo) == 2 and len(signed) == 9
    assert all(r["revoked_after_signing"] == 1 for r in demo)
    assert not any(r["revoked_after_signing"] == 1 for r in signed if r not in demo)
    chain = conn.execute(
        "SELECT * FROM result_chain WHERE result_digest = ? ORDER BY role, seq",
        (built.repair_digest,),
    ).fetchall()
    assert [r["role"] for r in chain][:4] == [
        "1 result",
        "2 result manifest",
        "3 work unit",
        "4 evaluator plan",
    ]
    assert all(r["stored_digest"] for r in chain)
    # A link recorded under upstream's (legacy) digest names the object stored under the
    # ledger's: the view says which object, not whether the link holds (no verdict in SQL).
    legacy = conn.execute(
        "SELECT c.digest, c.stored_digest FROM result_chain c JOIN objects o"
        " ON o.digest = c.stored_digest WHERE c.role = '2 result manifest'"
        " AND o.legacy_digest = c.digest"
    ).fetchall()
    assert legacy and all(r["digest"] != r["stored_digest"] for r in legacy)
    assert "result_provenance" not in CANNED_QUERIES


def test_serve_without_datasette_says_how(
    built: BuiltLedger, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "datasette", None)
    monkeypatch.setitem(sys.modules, "datasette.app", None)
    result = CliRunner().invoke(app, ["serve", "--browse", str(built.browse), "--port", "0"])
    assert result.exit_code == 3
    assert "pip install 'provledger[web]'" in result.output
    assert result.output.count("error:") == 1
    assert "serving" not in result.output  # said only once the server can start


def test_serve_on_a_port_in_use_says_so_in_one_line(built: BuiltLedger) -> None:
    import socket

    pytest.importorskip("datasette")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(
            app, ["serve", "--browse", str(built.browse), "--port", str(port)]
        )
    assert result.exit_code == 3
    assert result.output == (
        f"error: cannot serve on 127.0.0.1:{port}, got 'Address already in use',"
        " expected a free port (--port)\n"
    )


def test_installed_serve_on_a_port_in_use_says_so_before_serving(built: BuiltLedger) -> None:
    """The installed ``provledger serve``: a taken port is one error line (exit 3) and
    "serving" is never said."""
    import socket

    pytest.importorskip("datasette")
    exe = ROOT / ".venv" / "bin" / "provledger"
    if not exe.exists():
        pytest.skip("no installed .venv/bin/provledger")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [str(exe), "serve", "--browse", str(built.browse), "--port", str(port)],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        f"error: cannot serve on 127.0.0.1:{port}, got 'Address already in use',"
        " expected a free port (--port)\n"
    )


def test_serve_missing_browse_file(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["serve", "--browse", str(tmp_path / "none.db")])
    assert result.exit_code == 3
    assert "provledger index" in result.output


def test_a_redefined_view_or_index_is_a_finding(built: BuiltLedger, tmp_path: Path) -> None:
    """The browse database is checked whole: views, triggers, full-text indexes."""
    bad = tmp_path / "views.db"
    shutil.copyfile(built.browse, bad)
    with sqlite3.connect(bad) as c:
        columns = [r[1] for r in c.execute("PRAGMA table_info(cohorts)")]
        shown = ", ".join(
            "CASE WHEN c.stage = 'burned' THEN 'frozen' ELSE c.stage END AS stage"
            if name == "stage"
            else f"c.{name}"
            for name in columns
        )
        latest = next(v for v in VIEWS if v.name == "latest_cohorts").sql
        c.execute("DROP VIEW latest_cohorts")
        c.execute(f"CREATE VIEW latest_cohorts AS {latest.replace('c.*', shown, 1)}")
        # The attack works: the latest object of the burned cohort now reads as frozen.
        stage = c.execute(
            "SELECT stage FROM latest_cohorts WHERE cohort_id = ?", (BURNED,)
        ).fetchone()
        assert stage == ("frozen",)
    runner = CliRunner()
    result = run(runner, ["verify", "--db", str(built.db), "--browse", str(bad), "--json"], 1)
    findings = json.loads(result.stdout)["browse"]["findings"]
    assert [(f["code"], f["table"]) for f in findings] == [
        ("browse.schema.altered", "latest_cohorts")
    ]
    assert findings[0]["message"].startswith("view latest_cohorts, got the definition")

    # A trigger added, and a burned cohort's task removed from the search index only.
    other = tmp_path / "index.db"
    shutil.copyfile(built.browse, other)
    with sqlite3.connect(other) as c:
        c.execute("CREATE TRIGGER hush AFTER INSERT ON cohorts BEGIN SELECT 1; END")
        rowid, title, objective, task_id, reason = c.execute(
            "SELECT t.rowid, t.title, t.objective, t.task_id, t.exclusion_reason FROM tasks t"
            " JOIN cohorts k ON k.digest = t.cohort_digest WHERE k.cohort_id = ? LIMIT 1",
            (BURNED,),
        ).fetchone()
        c.execute(
            "INSERT INTO tasks_fts(tasks_fts, rowid, task_id, title, objective, exclusion_reason)"
            " VALUES('delete', ?, ?, ?, ?, ?)",
            (rowid, task_id, title, objective, reason),
        )
        hits = c.execute(
            "SELECT count(*) FROM tasks_fts WHERE tasks_fts MATCH ?", (f'"{title}"',)
        ).fetchone()[0]
        assert hits == 0  # the task no longer shows up in search
    with open_store(built.db, readonly=True) as store:
        codes = {(f.code, f.table) for f in check_browse(store, other)}
    assert codes == {("browse.schema.extra", "hush"), ("browse.fts", "tasks")}
