"""The ledger core end to end through the CLI on real SQLite files."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
import rfc8785
from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.base import LEDGER_TABLES
from ledger.store.sqlite import open_store

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _upstream_verdicts(corpus: Path) -> dict[Path, bool]:
    """Each protocol document of the corpus -> does upstream's own schema accept it."""
    from jsonschema import Draft202012Validator

    from ledger.schema.kinds import detect_kind

    verdicts: dict[Path, bool] = {}
    for path in sorted(corpus.rglob("*.json")):
        if "schemas" in path.relative_to(corpus).parts:
            continue
        doc = json.loads(path.read_text())
        try:
            spec = detect_kind(doc)
        except Exception:
            continue
        schema_file = corpus / "schemas" / f"{spec.name}-v{doc['schema_version']}.schema.json"
        schema = json.loads(schema_file.read_text())
        verdicts[path] = Draft202012Validator(schema).is_valid(doc)
    return verdicts


def _entries(db: Path) -> list[tuple[object, ...]]:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT seq, digest FROM entries ORDER BY seq").fetchall()


def test_corpus_append_digest_and_raw(corpus: Path, ledger_path: Path, runner: CliRunner) -> None:
    verdicts = _upstream_verdicts(corpus)
    assert sum(verdicts.values()) >= 30
    assert not all(verdicts.values()), "the corpus holds at least one document upstream rejects"
    for path, accepted in verdicts.items():
        result = runner.invoke(app, ["append", "--db", str(ledger_path), "--json", str(path)])
        if not accepted:
            assert result.exit_code == 3, (path, result.output)
            assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
            continue
        if json.loads(path.read_bytes()).get("stage") in ("frozen", "burned"):
            # A frozen or burned cohort is authority-governed: `cohort freeze`/`burn` or
            # `import idkmesh` sign it; a bare append is refused (exit 4).
            assert result.exit_code == 4, (path, result.output)
            assert "authority-governed" in result.stderr and result.stderr.count("\n") == 1
            continue
        assert result.exit_code == 0, (path, result.output)
        row = json.loads(result.stdout)[0]
        expected = rfc8785.dumps(json.loads(path.read_bytes()))
        assert row["digest"] == "sha256:" + hashlib.sha256(expected).hexdigest()
        raw = runner.invoke(app, ["show", "--db", str(ledger_path), "--raw", row["digest"]])
        assert raw.exit_code == 0
        assert raw.stdout_bytes == expected


def test_append_twice_is_one_entry(corpus: Path, ledger_path: Path, runner: CliRunner) -> None:
    doc = corpus / "examples" / "work-units" / "phase0-smoke.work-unit.json"
    first = runner.invoke(app, ["append", "--db", str(ledger_path), "--json", str(doc)])
    second = runner.invoke(app, ["append", "--db", str(ledger_path), "--json", str(doc), str(doc)])
    assert first.exit_code == 0 and second.exit_code == 0
    assert json.loads(first.stdout)[0]["status"] == "new"
    assert [r["status"] for r in json.loads(second.stdout)] == ["present", "present"]
    assert len(_entries(ledger_path)) == 1


def test_legacy_digest_and_id_resolve(corpus: Path, ledger_path: Path, runner: CliRunner) -> None:
    from ledger.encoding.digest import legacy_digest

    doc_path = corpus / "examples" / "work-units" / "phase0-smoke.work-unit.json"
    doc = json.loads(doc_path.read_bytes())
    assert runner.invoke(app, ["append", "--db", str(ledger_path), str(doc_path)]).exit_code == 0
    for ref in (legacy_digest(doc), doc["id"], f"{doc['id']}@{doc['version']}"):
        shown = runner.invoke(app, ["show", "--db", str(ledger_path), "--json", ref])
        assert shown.exit_code == 0, shown.output
        assert json.loads(shown.stdout)["object"] == doc


MALFORMED = [
    b'{"a":1,"a":2}',
    b'{"x":NaN}',
    b"[1e999]",
    b"[12345678901234567890]",
    b'"\\udfff"',
    b'{"a":"\xc3"}',
    b"{} trailing",
    b"[" * 5000,
    b"{not json",
    b"",
    b"\xef\xbb\xbf{}",
    b"[]",
    b'{"schema_version":"0.2"}',
    b'{"objective":"x","validators":[],"schema_version":"9.9"}',
    b'{"provledger_kind":"nonsense","schema_version":"0.1"}',
]


@pytest.mark.parametrize("data", MALFORMED)
def test_malformed_input_exit_3_and_ledger_unchanged(
    data: bytes, ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    before = _entries(ledger_path)
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    result = runner.invoke(app, ["append", "--db", str(ledger_path), str(bad)])
    assert result.exit_code == 3, result.output
    assert result.stderr.startswith("error: ")
    assert result.stderr.count("\n") == 1
    assert _entries(ledger_path) == before


def test_all_or_nothing(corpus: Path, ledger_path: Path, runner: CliRunner, tmp_path: Path) -> None:
    good = corpus / "examples" / "work-units" / "phase0-smoke.work-unit.json"
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"a":1,"a":1}')
    result = runner.invoke(app, ["append", "--db", str(ledger_path), str(good), str(bad)])
    assert result.exit_code == 3
    assert "bad.json" in result.stderr
    assert _entries(ledger_path) == []


def test_stdin_and_kind_option(corpus: Path, ledger_path: Path, runner: CliRunner) -> None:
    doc = (corpus / "examples" / "work-units" / "phase0-smoke.work-unit.json").read_bytes()
    wrong = runner.invoke(
        app, ["append", "--db", str(ledger_path), "--kind", "result-manifest", "-"], input=doc
    )
    assert wrong.exit_code == 3
    ok = runner.invoke(
        app, ["append", "--db", str(ledger_path), "--kind", "work-unit", "-"], input=doc
    )
    assert ok.exit_code == 0, ok.output
    blob = runner.invoke(
        app, ["append", "--db", str(ledger_path), "--kind", "blob", "--json", "-"], input=b"\x00raw"
    )
    assert (
        json.loads(blob.stdout)[0]["digest"] == "sha256:" + hashlib.sha256(b"\x00raw").hexdigest()
    )


def test_raw_sql_update_and_delete_fail_on_every_table(
    corpus: Path, ledger_path: Path, runner: CliRunner
) -> None:
    plan = corpus / "benchmarks" / "phase-b2-first-five" / "evaluators"
    docs = [str(p) for p in sorted(plan.glob("*.json"))]
    assert runner.invoke(app, ["append", "--db", str(ledger_path), *docs]).exit_code == 0
    with open_store(ledger_path, readonly=True) as store:
        log_vkey = store.get_meta("log_verifier_key")
    assert log_vkey is not None
    witness = ledger_path.with_name("witness.json")
    made = runner.invoke(
        app, ["witness", "init", "w.test/w", "--state", str(witness), "--log-key", log_vkey]
    )
    assert made.exit_code == 0, made.output
    cosigned = runner.invoke(
        app, ["checkpoint", "--db", str(ledger_path), "--witness", str(witness)]
    )
    assert cosigned.exit_code == 0, cosigned.output
    conn = sqlite3.connect(ledger_path)
    for table in LEDGER_TABLES:
        (rows,) = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        assert rows > 0, f"{table} must hold a row for this test to mean anything"
        column = conn.execute(f"SELECT name FROM pragma_table_info('{table}')").fetchone()[0]
        for sql in (f"UPDATE {table} SET {column} = {column}", f"DELETE FROM {table}"):
            with pytest.raises(sqlite3.IntegrityError, match="append-only"):
                conn.execute(sql)
    conn.close()


def test_log_stats_show_json_shapes(corpus: Path, ledger_path: Path, runner: CliRunner) -> None:
    docs = [
        corpus / "examples" / "work-units" / "phase0-smoke.work-unit.json",
        corpus / "examples" / "results" / "phase0-smoke.result-manifest.json",
    ]
    assert runner.invoke(app, ["append", "--db", str(ledger_path), *map(str, docs)]).exit_code == 0
    log = json.loads(runner.invoke(app, ["log", "--db", str(ledger_path), "--json"]).stdout)
    assert [e["seq"] for e in log] == [0, 1]
    assert set(log[0]) == {"seq", "digest", "kind", "appended_at"}
    only = runner.invoke(
        app, ["log", "--db", str(ledger_path), "--json", "--kind", "result-manifest"]
    )
    assert [e["kind"] for e in json.loads(only.stdout)] == ["result-manifest"]
    limited = runner.invoke(app, ["log", "--db", str(ledger_path), "--json", "--since", "1"])
    assert [e["seq"] for e in json.loads(limited.stdout)] == [1]
    stats = json.loads(runner.invoke(app, ["stats", "--db", str(ledger_path), "--json"]).stdout)
    assert stats["entries"] == 2
    assert stats["by_kind"] == {"result-manifest": 1, "work-unit": 1}
    missing = runner.invoke(app, ["show", "--db", str(ledger_path), "sha256:" + "0" * 64])
    assert missing.exit_code == 3


def test_missing_ledger_is_exit_3(tmp_path: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["log", "--db", str(tmp_path / "none.db")])
    assert result.exit_code == 3
    assert "provledger init" in result.stderr


def test_init_refuses_existing(ledger_path: Path, runner: CliRunner) -> None:
    result = runner.invoke(app, ["init", "--db", str(ledger_path)])
    assert result.exit_code == 4


def test_store_sequence_contiguous_and_tree_nodes(corpus: Path, ledger_path: Path) -> None:
    from ledger.store.prepared import prepare_blob

    store = open_store(ledger_path)
    store.append_many([prepare_blob(str(i).encode()) for i in range(13)])
    assert [e.seq for e in store.entries()] == list(range(13))
    # 13 leaves: complete subtrees 13 + 6 + 3 + 1 = 23 stored nodes.
    (count,) = store.connection.execute("SELECT count(*) FROM tree_nodes").fetchone()
    assert count == 23
    store.close()
