"""``provledger verify``'s parent-side fast paths give exactly what their references give.

- ``sqlite_scan.log_rows`` reads text with the C decoder while it is valid UTF-8 and
  falls back to the audit's tolerant decoding from the first row it is not: the rows
  equal a tolerant reading of every row (the previous implementation, kept here).
- ``entry_check.object_row_problem`` decides usual rows by exact types: same answer as the
  column-by-column definition for any SQL values.
- Rows cross to workers as tuples (``parallel._wire``/``_unwire``): the same
  ``StoredObject`` as ``unchecked_object``, which names every field.
- ``SQLiteNodeScan`` moves a level's cursor on after a match: still equal to point queries.
- The parent checks chunks itself when the workers are behind: same report, in the
  same order, as the one-process audit, on clean and tampered ledgers, whoever checks.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bench_corpus
import ctrl_c
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.audit import entry_check, parallel
from ledger.audit.full import audit
from ledger.store import sqlite_scan
from ledger.store.base import (
    OBJECT_COLUMNS,
    RawLogRow,
    RawObjectRow,
    StoredObject,
    unchecked_object,
)
from ledger.store.bulk import import_jsonl
from ledger.store.sqlite import _surrogate_text, open_store
from ledger.store.sqlite_scan import SQLiteNodeScan

# -- log_rows ---------------------------------------------------------------------------

_ENTRY_TEXT = ("digest", "kind", "appended_at")
_OBJECT_TEXT = ("digest", "kind", "schema_version", "object_id", "legacy_digest", "legacy_hints")


def _reference_log_rows(conn: sqlite3.Connection, since: int) -> Iterator[RawLogRow]:
    """The previous ``SQLiteStore.log_rows``: every row read with the connection's factory."""
    columns = ", ".join(f"o.{name}" for name in OBJECT_COLUMNS)
    cursor = conn.execute(
        f"SELECT e.seq, e.digest, e.kind, e.appended_at, {columns}"
        " FROM entries e LEFT JOIN objects o ON o.seq = e.seq WHERE e.seq >= ?"
        " ORDER BY e.seq",
        (since,),
    )
    for seq, digest, kind, appended_at, *obj in cursor:
        named = dict(zip(OBJECT_COLUMNS, obj, strict=True))
        raw = None if named["digest"] is None else RawObjectRow(**named)
        yield RawLogRow(seq, digest, kind, appended_at, raw)


def _log_db(rows: int, bad: set[tuple[int, str, str]], missing: set[int]) -> sqlite3.Connection:
    """``entries`` and ``objects`` as a ledger has them; ``bad`` cells (seq, table, column)
    hold bytes that are not UTF-8 as TEXT; ``missing`` entries have no object row."""
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE TABLE entries (seq INTEGER PRIMARY KEY, digest TEXT NOT NULL,"
        " kind TEXT NOT NULL, appended_at TEXT NOT NULL)"
    )
    conn.execute(
        "CREATE TABLE objects (digest TEXT NOT NULL, seq INTEGER NOT NULL UNIQUE,"
        " kind TEXT NOT NULL, schema_version TEXT, object_id TEXT, object_version INTEGER,"
        " legacy_digest TEXT, legacy_hints TEXT, data BLOB NOT NULL)"
    )
    for seq in range(rows):
        conn.execute(
            "INSERT INTO entries VALUES (?, ?, 'blob', '2026-01-01T00:00:00.000000Z')",
            (seq, f"sha256:{seq:064x}"),
        )
        if seq not in missing:
            conn.execute(
                "INSERT INTO objects VALUES (?, ?, 'blob', ?, ?, ?, ?, ?, ?)",
                (f"sha256:{seq:064x}", seq, "1", f"id-é{seq}", seq, None, "[]", b"x" * seq),
            )
    for seq, table, column in sorted(bad):
        if table == "objects" and seq in missing:
            continue
        conn.execute(f"UPDATE {table} SET {column} = CAST(X'ff41c3' AS TEXT) WHERE seq = ?", (seq,))
    return conn


_CELLS = st.one_of(
    st.tuples(st.integers(0, 599), st.just("entries"), st.sampled_from(_ENTRY_TEXT)),
    st.tuples(st.integers(0, 599), st.just("objects"), st.sampled_from(_OBJECT_TEXT)),
)


@settings(max_examples=40, deadline=None)
@given(
    bad=st.sets(_CELLS, max_size=4),
    missing=st.sets(st.integers(0, 599), max_size=3),
    since=st.sampled_from([0, 1, 255, 256, 300]),
)
def test_log_rows_equal_the_tolerant_reading(
    bad: set[tuple[int, str, str]], missing: set[int], since: int
) -> None:
    conn = _log_db(600, bad, missing)
    conn.text_factory = _surrogate_text
    expected = list(_reference_log_rows(conn, since))
    got = list(sqlite_scan.log_rows(conn, since, _surrogate_text))
    assert got == expected
    assert conn.text_factory is _surrogate_text  # restored, also after a fallback
    # Without the tolerant factory the reading is the plain one.
    conn.text_factory = str
    if not bad:
        assert list(sqlite_scan.log_rows(conn, since)) == expected


def test_bad_text_on_a_fetch_boundary_is_read_tolerantly() -> None:
    for seq in (0, 255, 256, 257, 599):
        conn = _log_db(600, {(seq, "objects", "object_id")}, set())
        conn.text_factory = _surrogate_text
        got = list(sqlite_scan.log_rows(conn, 0, _surrogate_text))
        assert got == list(_reference_log_rows(conn, 0))
        assert [row.seq for row in got] == list(range(600))
        shown = got[seq].object
        assert shown is not None and shown.object_id == "\udcffA\udcc3"


class _ReferenceRefScan:
    """The previous ``SQLiteRefScan``: one cursor row at a time, every column read with the
    connection's text factory."""

    def __init__(self, conn: sqlite3.Connection, *, resume: bool = False) -> None:
        self._conn, self._resume = conn, resume
        self._rows: Iterator[tuple[Any, ...]] = iter(())
        self._head: tuple[Any, ...] | None = None
        if not resume:
            self._start(-1)

    def _start(self, after: int) -> None:
        self._rows = iter(
            self._conn.execute(
                "SELECT from_digest, rel, to_digest FROM refs WHERE rowid > ? ORDER BY rowid",
                (after,),
            )
        )
        self._head = next(self._rows, None)

    def has(self, from_digest: str, rel: str, to_digest: str) -> bool:
        head = self._head
        if head is not None and head == (from_digest, rel, to_digest):
            self._head = next(self._rows, None)
            return True
        row = self._conn.execute(
            "SELECT rowid FROM refs WHERE substr(to_digest, 8, 16) = substr(?, 8, 16)"
            " AND +to_digest = ? AND rel = ? AND from_digest = ? ORDER BY rowid LIMIT 1",
            (to_digest, to_digest, rel, from_digest),
        ).fetchone()
        if row is not None and self._resume:
            self._resume = False
            self._start(int(row[0]))
        return row is not None


def _answer(scan: Any, ref: tuple[str, str, str]) -> object:
    try:
        return scan.has(*ref)
    except UnicodeEncodeError:  # text that is not UTF-8 cannot be a query's argument
        return "raised"


@settings(max_examples=60, deadline=None)
@given(
    bad=st.sets(
        st.tuples(st.integers(0, 599), st.sampled_from(["from_digest", "rel"])), max_size=3
    ),
    steps=st.lists(st.tuples(st.integers(-3, 3), st.booleans()), max_size=40),
    resume=st.booleans(),
)
def test_ref_scan_reads_text_as_the_tolerant_reference_does(
    bad: set[tuple[int, str]], steps: list[tuple[int, bool]], resume: bool
) -> None:
    """``SQLiteRefScan`` reads refs with the C decoder while the text is UTF-8
    (``sqlite_scan._decoded``): every answer is its previous, tolerant, reading's, also
    past text that is not UTF-8."""
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE refs (from_digest TEXT, rel TEXT, to_digest TEXT)")
    conn.executemany(
        "INSERT INTO refs VALUES (?, ?, ?)",
        [(f"sha256:{n:064x}", "subject", f"sha256:{n + 1:064x}") for n in range(600)],
    )
    for rowid, column in sorted(bad):
        conn.execute(
            f"UPDATE refs SET {column} = CAST(X'ff41c3' AS TEXT) WHERE rowid = ?", (rowid + 1,)
        )
    conn.text_factory = _surrogate_text
    rows = conn.execute("SELECT from_digest, rel, to_digest FROM refs ORDER BY rowid").fetchall()
    scan = sqlite_scan.SQLiteRefScan(conn, resume=resume, tolerant=_surrogate_text)
    reference = _ReferenceRefScan(conn, resume=resume)
    at = 0
    # Some steps back, repeats and references not stored, then every row in order.
    for step, stored in [*steps, *[(1, True)] * 600]:
        at = min(max(0, at + step), len(rows) - 1)
        ref = rows[at] if stored else (rows[at][0], "other", rows[at][2])
        assert _answer(scan, ref) == _answer(reference, ref), (at, ref)
        assert conn.text_factory is _surrogate_text  # restored, also after a fallback


# -- the row type check -----------------------------------------------------------------

_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=5),
    st.binary(max_size=5),
)
_GOOD = {
    "digest": st.text(max_size=5),
    "seq": st.integers(0, 10**6),
    "kind": st.text(max_size=5),
    "schema_version": st.none() | st.text(max_size=3),
    "object_id": st.none() | st.text(max_size=3),
    "object_version": st.none() | st.integers(),
    "legacy_digest": st.none() | st.text(max_size=3),
    "legacy_hints": st.none() | st.text(max_size=3),
    "data": st.binary(max_size=5),
}


@st.composite
def _rows(draw: st.DrawFn) -> RawObjectRow:
    """Mostly well-typed rows, some columns of any SQL type (or a bool)."""
    odd = draw(st.sets(st.sampled_from(OBJECT_COLUMNS), max_size=3))
    values = {n: draw(_VALUES if n in odd else _GOOD[n]) for n in OBJECT_COLUMNS}
    return RawObjectRow(**values)


@settings(max_examples=400, deadline=None)
@given(_rows())
def test_row_type_check_equals_the_definition(row: RawObjectRow) -> None:
    assert entry_check.object_row_problem(row) == entry_check.object_row_problem_by_name(row)


def test_row_type_check_reads_every_column() -> None:
    good: dict[str, Any] = {n: None for n in OBJECT_COLUMNS}
    good.update(digest="d", seq=1, kind="k", data=b"")
    assert entry_check.object_row_problem(RawObjectRow(**good)) is None
    for name in OBJECT_COLUMNS:
        for odd in (1.5, True, bytearray(b"x")):
            row = RawObjectRow(**{**good, name: odd})
            problem = entry_check.object_row_problem(row)
            assert problem == entry_check.object_row_problem_by_name(row)
            assert problem is not None, (name, odd)


# -- rows to the workers ------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(_rows())
def test_wire_rows_rebuild_the_unchecked_object(row: RawObjectRow) -> None:
    by_name = StoredObject(**{n: getattr(row, n) for n in OBJECT_COLUMNS})
    for rebuilt in (unchecked_object(row), parallel._unwire(parallel._wire(row))):
        assert rebuilt == by_name
        assert type(rebuilt) is StoredObject and vars(rebuilt) == vars(by_name)
        assert [type(v) for v in vars(rebuilt).values()] == [type(v) for v in vars(row).values()]


# -- tree nodes ---------------------------------------------------------------------------

_IDX = st.one_of(st.integers(-1, 40), st.just(5.0), st.just("7"), st.none())


@settings(max_examples=150, deadline=None)
@given(
    rows=st.lists(st.tuples(st.integers(0, 3), _IDX, st.binary(max_size=2)), max_size=80),
    steps=st.lists(st.tuples(st.integers(0, 4), st.integers(-1, 3)), max_size=120),
)
def test_node_scan_equals_point_queries(
    rows: list[tuple[int, Any, bytes]], steps: list[tuple[int, int]]
) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE tree_nodes (level INTEGER, idx INTEGER, hash BLOB)")
    conn.executemany("INSERT INTO tree_nodes VALUES (?,?,?)", rows)
    scan = SQLiteNodeScan(conn)
    at = {level: 0 for level in range(5)}
    for level, step in steps:  # mostly forward, level by level; some repeats and steps back
        at[level] = max(-1, at[level] + step)
        expected = conn.execute(
            "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, at[level])
        ).fetchone()
        assert scan.get(level, at[level]) == expected, (level, at[level])


# -- the parent checks chunks too -------------------------------------------------------


def _lines(n: int, db: Path) -> bytes:
    from ledger.trust.keys import Ed25519Signer

    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    return b"".join(json.dumps(d).encode() + b"\n" for d in bench_corpus.corpus(n, 11, signer))


@pytest.fixture
def corpus_ledger(ledger_path: Path) -> Path:
    with open_store(ledger_path) as store:
        summary = import_jsonl(store, io.BytesIO(_lines(90, ledger_path)), batch=30)
    assert summary.new == 90
    return ledger_path


def _tamper(db: Path) -> None:
    conn = sqlite3.connect(db)
    for name in ("objects_no_update", "entries_no_update", "tree_nodes_no_delete"):
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("UPDATE objects SET data = CAST(' ' || data AS BLOB) WHERE seq = 7")
    conn.execute("UPDATE objects SET object_version = 'x' WHERE seq = 20")
    conn.execute("UPDATE entries SET kind = CAST(X'ff' AS TEXT) WHERE seq = 33")
    conn.execute('UPDATE objects SET legacy_hints = \'[["nope","1.0"]]\' WHERE seq = 41')
    conn.execute("DELETE FROM tree_nodes WHERE level = 1 AND idx = 30")
    conn.commit()
    conn.close()


@pytest.mark.parametrize("tampered", [False, True])
@pytest.mark.parametrize("steal", ["always", "never"])
def test_parent_and_workers_give_the_one_process_report(
    corpus_ledger: Path, monkeypatch: pytest.MonkeyPatch, tampered: bool, steal: str
) -> None:
    if tampered:
        _tamper(corpus_ledger)
    with open_store(corpus_ledger, readonly=True) as store:
        alone = audit(store, workers=1)
    monkeypatch.setattr(parallel, "_CHUNK", 4)  # many chunks for a small ledger
    stolen = 0
    real_done = parallel._Done

    class Counted(real_done):  # type: ignore[misc, valid-type]
        def __init__(self, result: Any) -> None:
            nonlocal stolen
            stolen += 1
            super().__init__(result)

    monkeypatch.setattr(parallel, "_Done", Counted)
    if steal == "always":  # a pool task never looks done: the parent checks what it can
        monkeypatch.setattr(parallel, "_ready", lambda task: isinstance(task, real_done))
    else:  # a pool task always looks done: the parent waits for it
        monkeypatch.setattr(parallel, "_ready", lambda task: True)
    with open_store(corpus_ledger, readonly=True) as store:
        pooled = audit(store, workers=2)
    # The parent always checks the first chunk itself, before the workers fork.
    assert (stolen > 5) if steal == "always" else (stolen == 1)
    assert pooled.to_json() == alone.to_json()
    assert [f.to_json() for f in pooled.findings] == [f.to_json() for f in alone.findings]
    assert alone.ok is not tampered
    if tampered:
        codes = {f.code for f in alone.findings}
        assert {"digest-mismatch", "object-row-invalid", "entry-object-mismatch"} <= codes
        assert {"hints-invalid", "tree-node-mismatch"} <= codes


def test_workers_inherit_the_schema_checks_instead_of_building_them(
    corpus_ledger: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The first chunk is checked before the workers fork, so the schema checks its
    kinds need are built once, in the auditing process, and the worker uses them."""
    from ledger.schema import _compiled

    built = tmp_path / "built"
    generate = _compiled.generate

    def logged(*args: Any, **kwargs: Any) -> Any:
        with built.open("a") as f:  # appended from whichever process builds
            f.write(f"{os.getpid()}\n")
        return generate(*args, **kwargs)

    monkeypatch.setattr(_compiled, "generate", logged)
    # The corpus repeats its kinds every 9 objects: the first chunk holds all of them,
    # and the other nine chunks go to the worker.
    monkeypatch.setattr(parallel, "_CHUNK", 9)
    monkeypatch.setattr(parallel, "_ready", lambda task: True)  # the parent never steals
    _compiled._compiled.cache_clear()
    try:
        with open_store(corpus_ledger, readonly=True) as store:
            report = audit(store, workers=2)
    finally:
        _compiled._compiled.cache_clear()  # nothing built with the wrapper stays cached
    assert report.ok
    builders = built.read_text().split()
    assert len(builders) >= 4  # one per kind and version of the corpus
    assert set(builders) == {str(os.getpid())}


def test_verify_json_is_utf8_when_a_stored_kind_is_not(corpus_ledger: Path) -> None:
    """A text column holding bytes that are not UTF-8 is reported, and ``--json`` stays
    UTF-8: the undecodable byte is written as a ``\\udcxx`` escape that reads back as
    the same string, never as the raw byte (the installed CLI, a real process)."""
    _tamper(corpus_ledger)
    cli = Path(sys.executable).with_name("provledger")
    proc = subprocess.run(
        [str(cli), "verify", "--db", str(corpus_ledger), "--json"], capture_output=True
    )
    assert proc.returncode == 1, proc.stderr
    text = proc.stdout.decode("utf-8")  # strict: raises on a raw 0xff byte
    assert "\\udcff" in text
    report = json.loads(text)
    shown = json.dumps(report, ensure_ascii=False)
    assert "\udcff" in shown  # the same string the store read, surrogate and all


def _group_gone(group: int, wait: float = 30.0) -> bool:
    """True once no process of ``group`` is left (workers exit when their pipe closes:
    allow them a moment; a bound, not a timing check)."""
    import os
    import time

    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_ctrl_c_ends_a_pooled_verify(ledger_path: Path) -> None:
    """SIGINT to the whole process group (Ctrl-C) while the workers check objects: they
    ignore it, the auditing process stops with exit 130 and one line, no traceback,
    and the pool ends (the installed CLI, a real process group)."""
    import signal
    import time

    with open_store(ledger_path) as store:
        import_jsonl(store, io.BytesIO(_lines(5000, ledger_path)), batch=1000)
    cli = Path(sys.executable).with_name("provledger")
    interrupted = 0
    # Stages vary with the machine (3,000 entries and 0.6 s were once enough, until
    # verify's start got 0.3 s shorter): aim at several.
    for delay in (0.4, 0.6, 0.9, 1.2):
        proc = ctrl_c.start([str(cli), "verify", "--db", str(ledger_path), "--workers", "2"])
        time.sleep(delay)
        stderr = ctrl_c.interrupt(proc)
        if proc.returncode != 0:  # 0 only if it finished before the signal arrived
            interrupted += 1
            # 130: click's exit for an interrupt; -SIGINT: the signal's own default
            # action (it can arrive before Python's handler is in place).
            assert proc.returncode in (130, -signal.SIGINT), stderr.decode()
            assert b"Traceback" not in stderr
        assert _group_gone(proc.pid), "a worker outlived the interrupted verify"
    assert interrupted, "verify always finished before the signal: use a larger ledger"


# -- the legacy form of objects with float hints ----------------------------------------

_KEYS = st.sampled_from(["a", "b", "resources", 'q"', "x\\", "é"])
_LEAVES = st.one_of(
    st.integers(-5, 5),
    st.integers(-(2**53), 2**53),  # every one equals a double (a hint may name it)
    st.sampled_from(['"a":0', '{"a":0}', '"resources":{"a":1}', "x", ""]),
    st.booleans(),
    st.none(),
)
_JSON = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_KEYS, inner, max_size=3)),
    max_leaves=12,
)


def _int_paths(node: Any, path: list[Any]) -> Iterator[list[Any]]:
    if isinstance(node, dict):
        for key, item in node.items():
            yield from _int_paths(item, [*path, key])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            yield from _int_paths(item, [*path, index])
    elif type(node) is int:
        yield path


def _sorted(node: Any) -> Any:
    """The value as a canonical parse gives it: members in sorted order."""
    if isinstance(node, dict):
        return {key: _sorted(node[key]) for key in sorted(node)}
    if isinstance(node, list):
        return [_sorted(item) for item in node]
    return node


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _JSON, min_size=1, max_size=4), st.data())
def test_spliced_legacy_form_equals_the_encoded_one(raw: dict[str, Any], data: Any) -> None:
    from ledger.audit.object_check import _spliced_legacy
    from ledger.encoding import _fast

    if not _fast._ready:  # the fast path, not its warm-up (tests/test_fast_msgspec.py)
        _fast._load_msgspec()
    from ledger.encoding.strict import legacy_bytes
    from ledger.store.derived import apply_checked_hints, parse_hints

    value = _sorted(raw)
    paths = list(_int_paths(value, []))
    if not paths:
        return
    chosen = data.draw(st.lists(st.sampled_from(paths), min_size=1, max_size=3, unique_by=str))
    hints = []
    for path in chosen:
        node = value
        for segment in path:
            node = node[segment]
        hints.append([*path, repr(float(node))])
    text = json.dumps(hints, separators=(",", ":"), ensure_ascii=False)
    checked = parse_hints(value, text)
    applied = apply_checked_hints(value, checked)
    stored = legacy_bytes(value)  # what a canonical document's stored bytes are
    spliced = _spliced_legacy(stored, value, applied, checked)
    # Exact, and only doubles of 1e16 or more (exponent forms) are left to the encoder.
    if spliced is None:
        assert any("e" in str(hint[-1]) for hint in checked)
    else:
        assert spliced == legacy_bytes(applied)


def test_spliced_legacy_form_on_the_corpus_and_its_fallback(corpus_ledger: Path) -> None:
    from ledger.audit.object_check import _spliced_legacy
    from ledger.encoding.canonical import canonical_value
    from ledger.encoding.strict import legacy_bytes
    from ledger.store.derived import apply_checked_hints, parse_hints

    spliced = 0
    with open_store(corpus_ledger, readonly=True) as store:
        for seq in range(store.size()):
            obj = store.get_by_seq(seq)
            assert obj is not None
            if obj.legacy_hints is None:
                continue
            shown, value = canonical_value(obj.data)
            assert shown
            applied = apply_checked_hints(value, parse_hints(value, obj.legacy_hints))
            form = _spliced_legacy(obj.data, value, applied, parse_hints(value, obj.legacy_hints))
            assert form == legacy_bytes(applied)
            spliced += 1
    assert spliced > 20
    # A member whose text occurs twice is written right (no text is searched for).
    value = {"a": {"n": 1}, "b": {"a": {"n": 1}}}
    applied = apply_checked_hints(value, [["a", "n", "1.0"]])
    assert _spliced_legacy(legacy_bytes(value), value, applied, [["a", "n", "1.0"]]) == (
        b'{"a":{"n":1.0},"b":{"a":{"n":1}}}'
    )
    # Doubles the fast encoder spells otherwise (exponent forms) go to the full encoding.
    value = {"a": 10**16, "b": 0}
    hints: list[Any] = [["a", "1e+16"], ["b", "-0.0"]]
    applied = apply_checked_hints(value, hints)
    assert _spliced_legacy(legacy_bytes(value), value, applied, hints) is None
    applied = apply_checked_hints(value, hints[1:])
    assert _spliced_legacy(legacy_bytes(value), value, applied, hints[1:]) == legacy_bytes(applied)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_KEYS, _JSON, min_size=1, max_size=4), st.data())
def test_spliced_legacy_form_with_a_member_repeated_deeper(raw: dict[str, Any], data: Any) -> None:
    """The hinted member's text also occurs earlier, nested under a smaller key: the
    legacy form still changes exactly the hinted number."""
    from ledger.audit.object_check import _spliced_legacy
    from ledger.encoding.strict import legacy_bytes
    from ledger.store.derived import apply_checked_hints, parse_hints

    key = data.draw(st.sampled_from(sorted(raw)))
    raw = {**raw, key: {"n": data.draw(st.integers(0, 3)), "m": raw[key]}}
    value = _sorted({**raw, "\x00": {key: raw[key]}, " ": [{key: raw[key]}]})
    hint = [key, "n", repr(float(value[key]["n"]))]
    checked = parse_hints(value, json.dumps([hint], separators=(",", ":"), ensure_ascii=False))
    applied = apply_checked_hints(value, checked)
    stored = legacy_bytes(value)
    assert _spliced_legacy(stored, value, applied, checked) == legacy_bytes(applied)
    alone = _sorted(raw)
    applied = apply_checked_hints(alone, checked)
    assert _spliced_legacy(legacy_bytes(alone), alone, applied, checked) == legacy_bytes(applied)
