"""The SQLite file layout: short-key digest indexes, format versions and `migrate`.

Format 2 indexes 16 hex digits of each digest instead of the whole 71-character text
(docs/PERFORMANCE.md, "File layout"). These tests hold it to three promises: every
lookup uses a key index (never a table scan), answers are exactly those of comparing
full digests even when many digests share a key, and a format-1 ledger is refused
until `provledger migrate` has rewritten it, after which it verifies clean with the
same log (roots, proofs) as before.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.prepared import Prepared, prepare_blob
from ledger.store.sqlite import FORMAT, create_store, digest_key, open_store, trigger_names

PROVLEDGER = Path(sys.executable).with_name("provledger")

# The format-1 ``objects`` table and indexes, as ``ledger/store/sqlite.py`` created
# them up to this change (provledger repository, main at commit 0a27bdd).
V1_OBJECTS = """CREATE TABLE objects (
  digest TEXT PRIMARY KEY,
  seq INTEGER NOT NULL UNIQUE,
  kind TEXT NOT NULL,
  schema_version TEXT,
  object_id TEXT,
  object_version INTEGER,
  legacy_digest TEXT,
  legacy_hints TEXT,
  data BLOB NOT NULL
)"""
V1_INDEXES = (
    "CREATE INDEX IF NOT EXISTS objects_by_id ON objects(object_id, object_version)"
    " WHERE object_id IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS objects_by_legacy ON objects(legacy_digest)"
    " WHERE legacy_digest IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS objects_by_kind ON objects(kind)",
    "CREATE INDEX IF NOT EXISTS refs_to ON refs(to_digest, rel)",
)


def _fake(digest_hex: str, n: int, legacy_hex: str | None, target: str | None) -> Prepared:
    """An object with a chosen digest: the store trusts ``Prepared`` for it, which lets
    the test put many digests under one index key (reads then run with the row checks
    stubbed out, ``_unchecked_reads``: no bytes hash to a chosen digest)."""
    return Prepared(
        digest="sha256:" + digest_hex,
        kind="blob",
        data=b"object %d" % n,
        legacy_digest=None if legacy_hex is None else "sha256:" + legacy_hex,
        refs=() if target is None else (("about", target),),
    )


@contextmanager
def _unchecked_reads(items: list[Prepared]) -> Iterator[None]:
    """Reads that take each row as stored: the query logic under test, not the
    re-derivation of rows from their bytes (``ledger.store.derived``, tested elsewhere)."""
    refs = {i.data: i.refs for i in items}
    with (
        mock.patch("ledger.store.sqlstore.row_problem", lambda *_a: None),
        mock.patch(
            "ledger.store.sqlstore.derive",
            lambda _kind, data, _hints: SimpleNamespace(refs=refs.get(data, ())),
        ),
    ):
        yield


_KEYS = ["0" * 16, "0123456789abcdef", "f" * 16]
_hex_digest = st.tuples(st.sampled_from(_KEYS), st.text("0123456789abcdef", min_size=1)).map(
    lambda t: (t[0] + t[1] * 48)[:64]
)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(_hex_digest, st.none() | _hex_digest, st.integers(0, 30)),
        min_size=1,
        max_size=30,
        unique_by=lambda t: t[0],
    ),
    st.lists(_hex_digest, min_size=1, max_size=10),
)
def test_lookups_compare_full_digests_when_keys_collide(
    tmp_path_factory: object, rows: list[tuple[str, str | None, int]], probes: list[str]
) -> None:
    path = tmp_path_factory.mktemp("keys") / "ledger.db"  # type: ignore[attr-defined]
    digests = ["sha256:" + d for d, _l, _t in rows]
    items = [
        _fake(d, n, legacy, digests[target % len(digests)] if target % 3 else None)
        for n, (d, legacy, target) in enumerate(rows)
    ]
    with create_store(path) as store, _unchecked_reads(items):
        store.append_many(items)
        again = store.append_many(items)  # idempotent: every digest already present
        assert [r.new for r in again] == [False] * len(items)
        assert [r.entry.seq for r in again] == list(range(len(items)))
        for probe in ["sha256:" + p for p in probes] + digests:
            want = [i for i in items if i.digest == probe]
            got = store.get(probe)
            assert (got.digest if got else None) == (want[0].digest if want else None)
            assert [o.digest for o in store.by_legacy(probe)] == [
                i.digest for i in items if i.legacy_digest == probe
            ]
            assert sorted(store.refs_to(probe)) == sorted(
                (i.digest, rel) for i in items for rel, t in i.refs if t == probe
            )
            assert set(store.ids_of([probe])) == ({probe} if want else set())
            for cut in (11, 15, 23, 30):
                prefix = probe[:cut]
                every = {i.digest for i in items if i.digest.startswith(prefix)} | {
                    i.digest
                    for i in items
                    if i.legacy_digest is not None and i.legacy_digest.startswith(prefix)
                }
                assert store.by_digest_prefix(prefix, limit=100) == sorted(every)


def test_every_digest_lookup_uses_a_key_index(tmp_path: Path) -> None:
    items = [prepare_blob(b"x%d" % i) for i in range(50)]
    with create_store(tmp_path / "ledger.db") as store:
        store.append_many(items)
        conn = store.connection
        seen: list[str] = []
        conn.set_trace_callback(seen.append)
        store.append_many(items[:10])
        store.get(items[3].digest)
        store.by_legacy(items[3].digest)
        store.refs_to(items[3].digest)
        store.refs_to(items[3].digest, "about")
        store.ids_of([items[3].digest])
        store.by_digest_prefix(items[3].digest[:12])
        conn.set_trace_callback(None)
        lookups = [s for s in seen if "substr(" in s]
        assert len(lookups) >= 7, seen
        for sql in lookups:
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
            assert not any(p.startswith(("SCAN objects", "SCAN refs", "SCAN o")) for p in plan), (
                sql,
                plan,
            )
            assert any("objects_by_" in p or "refs_to" in p for p in plan), (sql, plan)


def _to_format_1(db: Path) -> None:
    """Rewrite a current ledger into the format-1 layout (same rows, old table/indexes)."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    # Format-1 files made by recent releases have the read-only views too.
    saved = conn.execute(
        "SELECT type, name, sql FROM sqlite_master WHERE type IN ('trigger', 'view')"
    ).fetchall()
    assert {name for _t, name, _s in saved} >= set(trigger_names())
    for kind, name, _sql in saved:
        conn.execute(f"DROP {kind.upper()} {name}")
    for index in ("objects_by_id", "objects_by_digest", "objects_by_legacy", "objects_by_kind"):
        conn.execute(f"DROP INDEX {index}")
    conn.execute("DROP INDEX refs_to")
    conn.execute("DROP TABLE kind_totals")  # format 1 kept no totals
    conn.execute("ALTER TABLE objects RENAME TO objects_new")
    conn.execute(V1_OBJECTS)
    conn.execute("INSERT INTO objects SELECT * FROM objects_new ORDER BY seq")
    conn.execute("DROP TABLE objects_new")
    for sql in V1_INDEXES:
        conn.execute(sql)
    conn.execute("UPDATE meta SET value = 'provledger-sqlite/1' WHERE key = 'format'")
    for _kind, name, sql in saved:
        if not name.startswith("kind_totals_"):
            conn.execute(sql)
    conn.execute("COMMIT")
    conn.close()


def test_format_1_refused_then_migrated(ledger_path: Path, runner: CliRunner) -> None:
    items = [prepare_blob(b"blob %d" % i) for i in range(20)]
    with open_store(ledger_path) as store:
        store.append_many(items)
    assert runner.invoke(app, ["checkpoint", "--db", str(ledger_path)]).exit_code == 0
    before = runner.invoke(app, ["proof", "inclusion", items[7].digest, "--db", str(ledger_path)])
    assert before.exit_code == 0, before.output
    _to_format_1(ledger_path)
    with sqlite3.connect(ledger_path) as raw:
        assert raw.execute("PRAGMA index_list(objects)").fetchall()  # the old autoindex
        v1_rows = raw.execute("SELECT * FROM objects ORDER BY seq").fetchall()

    for args in (["show", items[0].digest], ["verify"], ["stats"]):
        refused = runner.invoke(app, [*args, "--db", str(ledger_path)])
        assert refused.exit_code == 3, (args, refused.output)
        assert "provledger migrate" in refused.stderr
        assert "provledger-sqlite/1" in refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1

    migrated = runner.invoke(app, ["migrate", "--db", str(ledger_path), "--json"])
    assert migrated.exit_code == 0, migrated.output
    assert json.loads(migrated.stdout) == {
        "db": str(ledger_path),
        "from": "provledger-sqlite/1",
        "migrated": True,
        "to": FORMAT,
    }
    with sqlite3.connect(ledger_path) as raw:
        assert raw.execute("SELECT * FROM objects ORDER BY seq").fetchall() == v1_rows
        # Totals computed while migrating: 20 blobs (their bytes) and nothing else yet.
        assert raw.execute("SELECT * FROM kind_totals").fetchall() == [
            ("blob", 20, 20, sum(len(item.data) for item in items))
        ]
    verify = runner.invoke(app, ["verify", "--db", str(ledger_path), "--json"])
    assert verify.exit_code == 0, verify.output
    after = runner.invoke(app, ["proof", "inclusion", items[7].digest, "--db", str(ledger_path)])
    assert after.stdout == before.stdout
    with open_store(ledger_path) as store:
        assert store.get(items[7].digest) is not None
        store.append_many([prepare_blob(b"after migration")])

    # Installed command, a second time: nothing to do.
    again = subprocess.run(
        [str(PROVLEDGER), "migrate", "--db", str(ledger_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PROVLEDGER_NO_PROGRESS": "1"},
        check=False,
    )
    assert again.returncode == 0, again.stderr
    assert "nothing to do" in again.stdout


def test_failed_migration_changes_nothing(ledger_path: Path, runner: CliRunner) -> None:
    with open_store(ledger_path) as store:
        store.append_many([prepare_blob(b"blob %d" % i) for i in range(5)])
    _to_format_1(ledger_path)
    # Format 1 let a NULL digest through its primary key; format 2 refuses it, so the
    # copy fails half-way through the one migration transaction.
    with sqlite3.connect(ledger_path) as raw:
        raw.execute("INSERT INTO objects(digest, seq, kind, data) VALUES (NULL, 77, 'blob', x'00')")

    def state() -> list[object]:
        with sqlite3.connect(ledger_path) as raw:
            return [
                raw.execute("SELECT * FROM sqlite_master ORDER BY type, name").fetchall(),
                raw.execute("SELECT * FROM objects ORDER BY seq").fetchall(),
                raw.execute("SELECT * FROM meta ORDER BY key").fetchall(),
            ]

    before = state()
    failed = runner.invoke(app, ["migrate", "--db", str(ledger_path)])
    assert failed.exit_code not in (0, 1), failed.output
    assert len(failed.stderr.strip().splitlines()) == 1
    assert state() == before

    not_ledger = ledger_path.with_name("other.db")
    with sqlite3.connect(not_ledger) as raw:
        raw.execute("CREATE TABLE meta (key TEXT, value TEXT)")
    refused = runner.invoke(app, ["migrate", "--db", str(not_ledger)])
    assert refused.exit_code == 3, refused.output
    assert "cannot migrate" in refused.stderr


def test_verify_finds_an_object_stored_twice(ledger_path: Path, runner: CliRunner) -> None:
    item = prepare_blob(b"stored once")
    with open_store(ledger_path) as store:
        store.append_many([item, prepare_blob(b"other")])
    clean = runner.invoke(app, ["verify", "--db", str(ledger_path), "--json"])
    assert clean.exit_code == 0, clean.output
    conn = sqlite3.connect(ledger_path, isolation_level=None)
    conn.execute(
        "INSERT INTO objects(digest, seq, kind, data) VALUES (?, 99, 'blob', ?)",
        (item.digest, item.data),
    )
    conn.close()
    report = runner.invoke(app, ["verify", "--db", str(ledger_path), "--json"])
    assert report.exit_code == 1
    findings = json.loads(report.stdout)["findings"]
    assert {"code": "object-duplicate", "seq": 99, "digest": item.digest} in [
        {k: f[k] for k in ("code", "seq", "digest")} for f in findings
    ]
    assert hashlib.sha256(item.data).hexdigest() == item.digest.removeprefix("sha256:")
    assert digest_key(item.digest) == item.digest[7:23]


# ``duplicate_objects`` over the whole log before it stopped recomputing each key from the
# table row (provledger repository, main at commit 6235fac): the reference it must equal.
_DUPLICATES_BEFORE = (
    "SELECT seq, digest FROM objects WHERE substr(digest, 8, 16) IN"
    " (SELECT substr(digest, 8, 16) FROM objects GROUP BY 1 HAVING count(*) > 1)"
    " ORDER BY digest, seq"
)
# Digest column values of a tampered table: shared and distinct keys, full repeats, other
# SQL types (the column's NOT NULL and TEXT affinity are all a raw INSERT must satisfy).
_DIGESTS = st.one_of(
    st.builds(
        lambda key, tail: "sha256:" + key + tail,
        st.sampled_from(["0" * 16, "0" * 15 + "1", "a" * 16]),
        st.sampled_from(["0" * 48, "f" * 48, "0" * 47 + "e"]),
    ),
    st.sampled_from([7, 7.5, b"sha256:" + b"0" * 64, "short", "sha256:", ""]),
)


@settings(max_examples=60, deadline=None)
@given(digests=st.lists(_DIGESTS, max_size=14))
def test_duplicate_objects_equals_the_key_recomputing_query(
    tmp_path_factory: object, digests: list[object]
) -> None:
    from ledger.store.sqlite_audit import duplicate_objects

    path = tmp_path_factory.mktemp("dups") / "ledger.db"  # type: ignore[attr-defined]
    create_store(path).close()
    conn = sqlite3.connect(path, isolation_level=None)
    for seq, digest in enumerate(digests):
        conn.execute(
            "INSERT INTO objects(digest, seq, kind, data) VALUES (?, ?, 'blob', x'00')",
            (digest, seq),
        )
    expected = conn.execute(_DUPLICATES_BEFORE).fetchall()
    assert duplicate_objects(conn) == expected
    conn.close()
    # The test is not vacuous: keys shared by two rows do occur and are returned.
    if len({d for d in digests if isinstance(d, str) and len(d) >= 23}) < len(
        [d for d in digests if isinstance(d, str) and len(d) >= 23]
    ):
        assert expected
