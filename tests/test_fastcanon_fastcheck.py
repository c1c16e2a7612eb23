"""ledger.audit.object_check: its inner fast path gives exactly the reference result."""

from __future__ import annotations

import dataclasses
import io
import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import bench_corpus
import pytest

from ledger.audit import object_check, parallel
from ledger.audit.full import audit
from ledger.store.base import RawLogRow, StoredObject
from ledger.store.bulk import import_jsonl
from ledger.store.sqlite import open_store
from ledger.store.sqlite_scan import SQLiteNodeScan, SQLiteRefScan

ROOT = Path(__file__).resolve().parents[1]


def _lines(n: int, db: Path) -> bytes:
    from ledger.trust.keys import Ed25519Signer

    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    return b"".join(json.dumps(d).encode() + b"\n" for d in bench_corpus.corpus(n, 9, signer))


@pytest.fixture
def filled(ledger_path: Path) -> Path:
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(_lines(45, ledger_path)), batch=10)
    assert summary.new == 45
    return ledger_path


def _objects(db: Path) -> list[StoredObject]:
    with open_store(db, readonly=True) as store:
        return [store.get_by_seq(s) for s in range(store.size())]  # type: ignore[misc]


def test_clean_objects_take_the_fast_path(filled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_obj: StoredObject) -> Any:
        raise AssertionError("reference used for a clean object")

    objects = _objects(filled)
    expected = [object_check._reference_check(obj) for obj in objects]
    assert all(found == [] for found, _refs in expected)
    monkeypatch.setattr(object_check, "_reference_check", refuse)
    assert [object_check.check_object(obj) for obj in objects] == expected


def _tampered(obj: StoredObject, rng: random.Random) -> list[StoredObject]:
    value = json.loads(obj.data)
    respelled = json.dumps(value, indent=1).encode()
    out = [
        dataclasses.replace(obj, data=obj.data + b" "),
        dataclasses.replace(obj, data=respelled),
        dataclasses.replace(obj, kind="revocation"),
        dataclasses.replace(obj, schema_version="9.9"),
        dataclasses.replace(obj, object_id="other"),
        dataclasses.replace(obj, object_version=(obj.object_version or 0) + 1),
        dataclasses.replace(obj, legacy_digest="sha256:" + "0" * 64),
        dataclasses.replace(obj, legacy_hints='[["nope","1.0"]]'),
        dataclasses.replace(obj, legacy_hints="not json"),
        dataclasses.replace(obj, digest="sha256:" + "1" * 64),
        dataclasses.replace(obj, data=b"\xff"),
    ]
    # Canonical, correctly digested, but schema-invalid: only the schema check can tell.
    broken = dict(value)
    broken.pop(rng.choice(sorted(k for k in broken if k != "provledger_kind")))
    from ledger.encoding.canonical import canonicalize

    data = canonicalize(broken)
    import hashlib

    out.append(
        dataclasses.replace(obj, data=data, digest="sha256:" + hashlib.sha256(data).hexdigest())
    )
    return out


def test_tampered_objects_get_the_reference_findings(filled: Path) -> None:
    rng = random.Random(4)
    checked = 0
    for obj in _objects(filled):
        for bad in _tampered(obj, rng):
            expected = object_check._reference_check(bad)
            assert object_check.check_object(bad) == expected
            checked += 1
    assert checked > 400


def test_workers_and_in_process_audits_agree(filled: Path) -> None:
    with open_store(filled, readonly=True) as store:
        one = audit(store, workers=1)
        two = audit(store, workers=2)
    assert one.ok and two.ok
    assert one.to_json() == two.to_json()
    assert one.entries == 45


def test_tampered_ledger_same_findings_with_workers(filled: Path) -> None:
    conn = sqlite3.connect(filled)
    conn.execute("DROP TRIGGER objects_no_update")
    conn.execute("UPDATE objects SET data = CAST(' ' || data AS BLOB) WHERE seq = 7")
    conn.execute("DROP TRIGGER tree_nodes_no_delete")
    conn.execute("DELETE FROM tree_nodes WHERE level = 1 AND idx = 3")
    conn.execute("DROP TRIGGER refs_no_delete")
    conn.execute("DELETE FROM refs WHERE rowid = (SELECT min(rowid) FROM refs)")
    conn.commit()
    conn.close()
    with open_store(filled, readonly=True) as store:
        one = audit(store, workers=1)
        two = audit(store, workers=2)
    codes = {f.code for f in one.findings}
    assert {"digest-mismatch", "tree-node-mismatch", "ref-missing"} <= codes
    assert one.to_json() == two.to_json()


def test_with_object_checks_keeps_row_order() -> None:
    rows = [RawLogRow(i, "d", "k", "t", None) for i in range(600)]
    got = [row.seq for row, checked in parallel.with_object_checks(iter(rows), 2)]
    assert got == list(range(600))


def _node_db(rows: list[tuple[Any, Any, Any]]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE tree_nodes (level INTEGER, idx INTEGER, hash BLOB)")
    conn.executemany("INSERT INTO tree_nodes VALUES (?,?,?)", rows)
    return conn


def test_node_reader_equals_point_queries() -> None:
    rng = random.Random(8)
    rows: list[tuple[Any, Any, Any]] = [
        (lvl, i, bytes([lvl, i % 256])) for lvl in range(4) for i in range(40 >> lvl)
    ]
    rows = [r for r in rows if rng.random() > 0.1]  # some missing
    rows += [(0, 5.0, b"real idx"), (1, "7", b"text idx"), (2, -1, b"negative")]
    conn = _node_db(rows)
    requests = [(lvl, i) for i in range(45) for lvl in range(5) if i < (50 >> lvl)]
    requests += [(0, 3), (1, 2), (0, 5), (2, -1)]  # out of order: point queries
    reader = SQLiteNodeScan(conn)
    for level, idx in requests:
        expected = conn.execute(
            "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, idx)
        ).fetchone()
        assert reader.get(level, idx) == expected, (level, idx)


def test_ref_reader_equals_point_queries() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE refs (from_digest TEXT, rel TEXT, to_digest TEXT)")
    stored = [("a", "r", "x"), ("a", "r", "y"), ("b", "s", "x"), ("c", "r", "z")]
    conn.executemany("INSERT INTO refs VALUES (?,?,?)", stored)
    reader = SQLiteRefScan(conn)
    asks = [("a", "r", "x"), ("a", "r", "q"), ("a", "r", "y"), ("c", "r", "z"), ("b", "s", "x")]
    asks += [("b", "s", "x"), ("d", "r", "x")]
    for ask in asks:
        assert reader.has(*ask) == (ask in stored), ask
