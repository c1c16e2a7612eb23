"""``verify`` checks each entry's own row where its objects are checked (``check_chunk``,
in the audit's workers), and gives exactly the one-process report.

- On tampered ledgers (changed bytes, rows swapped inside a chunk and across a chunk
  boundary, an entry or object row missing, a column of the wrong SQL type), the
  pooled audit, with the parent checking every chunk it can or none, reports the same
  findings in the same order as the audit in one process, and they name the tampering.
- Rows rewritten by a hostile writer while the audit runs do not reach it: the workers
  check the rows the auditing process read, from its snapshot, so the report is the one
  of the ledger as it was when the audit started; the next audit finds the rewrite.
- Totals re-derived per chunk and merged equal those of one pass over the rows.
- Rows reach the workers as read (the usual row without the seq, digest and kind it
  repeats from its entry), and each entry's checks come back as computed.
"""

from __future__ import annotations

import gc
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from generated_ledger import generated_ledger
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.audit import entry_check, full, parallel
from ledger.audit.entry_check import EntryRow, check_chunk, pack, run_totals, unpack
from ledger.audit.findings import LedgerFinding
from ledger.audit.full import LedgerAuditReport, audit
from ledger.store import sqlite_scan
from ledger.store.base import (
    OBJECT_COLUMNS,
    RawLogRow,
    RawObjectRow,
    StoredObject,
    unchecked_object,
)
from ledger.store.sqlite import open_store

_TRIGGERS = ("objects_no_update", "entries_no_update", "objects_no_delete", "entries_no_delete")


@pytest.fixture
def corpus_ledger(tmp_path: Path) -> Path:
    """60 entries of the benchmark corpus (documents of every kind, float hints)."""
    return Path(generated_ledger(tmp_path, 60, 11))


def _writer(db: Path) -> sqlite3.Connection:
    """A connection of a hostile writer: the append-only triggers dropped."""
    conn = sqlite3.connect(db)
    names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
    for name in names:
        if name in _TRIGGERS:
            conn.execute(f"DROP TRIGGER {name}")
    conn.commit()
    return conn


def _swap(conn: sqlite3.Connection, a: int, b: int) -> None:
    """Swap entries ``a`` and ``b`` (their entry and object rows) in the log order."""
    for table in ("entries", "objects"):
        conn.execute(f"UPDATE {table} SET seq = -1 WHERE seq = ?", (a,))
        conn.execute(f"UPDATE {table} SET seq = ? WHERE seq = ?", (a, b))
        conn.execute(f"UPDATE {table} SET seq = ? WHERE seq = -1", (b,))


_TAMPERING: dict[str, tuple[list[str], set[str]]] = {
    "bytes": (
        [
            "UPDATE objects SET data = CAST(data || ' ' AS BLOB) WHERE seq = 5",
            "UPDATE objects SET data = CAST(replace(CAST(data AS TEXT), '1', '2') AS BLOB)"
            " WHERE seq = 22",
        ],
        {"digest-mismatch"},
    ),
    "swapped-in-chunk": (["swap 9 10"], {"tree-node-mismatch"}),
    "swapped-across-chunks": (["swap 11 12", "swap 3 40"], {"tree-node-mismatch"}),
    "entry-missing": (["DELETE FROM entries WHERE seq = 17"], {"sequence-gap"}),
    "object-missing": (["DELETE FROM objects WHERE seq = 30"], {"object-missing"}),
    "column-type": (
        [
            "UPDATE entries SET appended_at = 7 WHERE seq = 2",
            "UPDATE objects SET object_version = 'x' WHERE seq = 26",
        ],
        {"entry-invalid", "object-row-invalid"},
    ),
    "entry-kind": (
        ["UPDATE entries SET kind = 'blob' WHERE seq = 33"],
        {"entry-object-mismatch", "totals-mismatch"},
    ),
}


def _apply(db: Path, statements: list[str]) -> None:
    conn = _writer(db)
    for statement in statements:
        if statement.startswith("swap "):
            a, b = map(int, statement.split()[1:])
            _swap(conn, a, b)
        else:
            conn.execute(statement)
    conn.commit()
    conn.close()


def _pooled(db: Path, monkeypatch: pytest.MonkeyPatch, steal: bool) -> LedgerAuditReport:
    monkeypatch.setattr(parallel, "_CHUNK", 4)  # many chunks for a small ledger
    real_done = parallel._Done
    if steal:  # a pool task never looks done: the parent checks what it can
        monkeypatch.setattr(parallel, "_ready", lambda task: isinstance(task, real_done))
    else:  # a pool task always looks done: the parent waits for it
        monkeypatch.setattr(parallel, "_ready", lambda task: True)
    with open_store(db, readonly=True) as store:
        return audit(store, workers=2)


@pytest.mark.parametrize("tampering", sorted(_TAMPERING))
@pytest.mark.parametrize("steal", [True, False])
def test_pooled_audit_finds_what_the_one_process_audit_finds(
    corpus_ledger: Path, monkeypatch: pytest.MonkeyPatch, tampering: str, steal: bool
) -> None:
    statements, expected = _TAMPERING[tampering]
    _apply(corpus_ledger, statements)
    with open_store(corpus_ledger, readonly=True) as store:
        alone = audit(store, workers=1)
    pooled = _pooled(corpus_ledger, monkeypatch, steal)
    assert [f.to_json() for f in pooled.findings] == [f.to_json() for f in alone.findings]
    assert pooled.to_json() == alone.to_json()
    codes = {f.code for f in alone.findings}
    assert expected <= codes, codes


def test_rows_rewritten_during_the_audit_do_not_reach_it(
    corpus_ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hostile writer rewrites rows the workers have not checked yet, mid-audit (after
    the first chunk): the report is the one of the ledger before the rewrite."""
    writer = _writer(corpus_ledger)  # triggers dropped before the audits: both see that
    with open_store(corpus_ledger, readonly=True) as store:
        before = audit(store, workers=1)
    monkeypatch.setattr(parallel, "_CHUNK", 4)
    monkeypatch.setattr(parallel, "_ready", lambda task: True)  # the workers check
    monkeypatch.setattr(sqlite_scan, "_FETCH", 4)  # the parent reads during the pass too
    done: list[bool] = []

    def rewrite(_n: int) -> None:
        if not done:
            writer.execute("UPDATE objects SET data = CAST(data || ' ' AS BLOB) WHERE seq >= 20")
            writer.execute("UPDATE entries SET appended_at = 'then' WHERE seq >= 20")
            writer.commit()
            done.append(True)

    with open_store(corpus_ledger, readonly=True) as store:
        during = audit(store, workers=2, advance=rewrite)
    writer.close()
    assert done
    assert during.to_json() == before.to_json()
    assert not {f.code for f in during.findings} & {"digest-mismatch", "entry-invalid"}
    # The rewrite is in the file: the next audit finds it, entry by entry.
    with open_store(corpus_ledger, readonly=True) as store:
        after = audit(store, workers=2)
    digests = [f for f in after.findings if f.code == "digest-mismatch"]
    assert [f.seq for f in digests] == list(range(20, 60))


_KINDS = st.sampled_from(["a", "b", 1, b"c", None])


@settings(max_examples=100, deadline=None)
@given(
    rows=st.lists(
        st.tuples(_KINDS, st.one_of(st.none(), st.tuples(_KINDS, st.binary(max_size=3)))),
        max_size=30,
    ),
    cut=st.integers(1, 7),
)
def test_totals_per_chunk_merged_equal_one_pass(rows: list[tuple[Any, Any]], cut: int) -> None:
    entries = [
        (
            seq,
            "d",
            kind,
            "t",
            None
            if obj is None
            else StoredObject("d", seq, obj[0], None, None, None, None, None, obj[1]),
        )
        for seq, (kind, obj) in enumerate(rows)
    ]
    merged = full._Totals()
    for at in range(0, len(entries), cut):
        merged.merge(run_totals(entries[at : at + cut]))
    whole = run_totals(entries)
    assert merged.by_kind == whole
    assert list(merged.by_kind) == list(whole)
    # One pass counts each entry by its kind and each object row by its own.
    assert sum(f[0] for f in whole.values()) == len(rows)
    assert sum(f[1] for f in whole.values()) == sum(obj is not None for _k, obj in rows)


# -- what crosses to the workers and back ------------------------------------------------

_ODD = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.just(1.0), st.binary(max_size=2))
# Values an entry and its object row may share, and equal values of other types.
_SEQ = st.sampled_from([1, True, 1.0, 0, False, "1"])
_TEXT = st.sampled_from(["d", "k", b"d", 1])


@st.composite
def _log_rows(draw: st.DrawFn) -> RawLogRow:
    """Entry rows whose object row mostly repeats the entry's seq, digest and kind, some
    with equal values of other types (1 and True and 1.0), odd columns, or no object."""
    seq, digest, kind = draw(_SEQ), draw(_TEXT), draw(_TEXT)
    columns = {
        "digest": draw(st.one_of(st.just(digest), _TEXT)),
        "seq": draw(st.one_of(st.just(seq), _SEQ)),
        "kind": draw(st.one_of(st.just(kind), _TEXT)),
        **{
            name: draw(st.one_of(st.none(), st.text(max_size=2), _ODD))
            for name in ("schema_version", "object_id", "object_version")
        },
        **{name: draw(st.one_of(st.none(), _ODD)) for name in ("legacy_digest", "legacy_hints")},
        "data": draw(st.one_of(st.binary(max_size=3), _ODD)),
    }
    obj = draw(st.one_of(st.none(), st.just(RawObjectRow(**columns))))
    return RawLogRow(seq, digest, kind, draw(st.one_of(st.text(max_size=2), _ODD)), obj)


def _as_held(rows: list[RawLogRow]) -> list[EntryRow]:
    """The rows as the auditing process holds them when it checks them itself."""
    return [
        (
            r.seq,
            r.digest,
            r.kind,
            r.appended_at,
            None if r.object is None else unchecked_object(r.object),
        )
        for r in rows
    ]


def _typed(value: Any) -> Any:
    """A value with its type, so that 1 == True == 1.0 are told apart."""
    if isinstance(value, StoredObject):
        return tuple(_typed(getattr(value, name)) for name in OBJECT_COLUMNS)
    if isinstance(value, tuple):
        return tuple(_typed(v) for v in value)
    return (type(value), value)


@settings(max_examples=300, deadline=None)
@given(st.lists(_log_rows(), max_size=6))
def test_entry_rows_cross_to_the_workers_as_read(rows: list[RawLogRow]) -> None:
    sent = pickle.loads(pickle.dumps(parallel._entry_wires(rows)))
    got = parallel._entry_rows(sent)
    assert _typed(tuple(got)) == _typed(tuple(_as_held(rows)))


def test_the_usual_row_crosses_without_its_repeated_columns() -> None:
    raw = RawObjectRow("d", 3, "k", "1", None, None, None, None, b"x")
    (short,) = parallel._entry_wires([RawLogRow(3, "d", "k", "t", raw)])
    assert short[4] == ("1", None, None, None, None, b"x")
    for entry in (RawLogRow(3, "e", "k", "t", raw), RawLogRow(True, "d", "k", "t", raw)):
        (full_row,) = parallel._entry_wires([entry])
        assert full_row[4] == parallel._wire(raw)  # not the entry's: sent whole


_FINDING = st.builds(LedgerFinding, st.sampled_from(["a", "b"]), st.text(max_size=3))
_REFS = st.lists(st.tuples(st.text(max_size=3), st.text(max_size=3)), max_size=3)


@settings(max_examples=200, deadline=None)
@given(found=st.lists(_FINDING, max_size=2), refs=st.one_of(st.none(), _REFS), sound=st.booleans())
def test_entry_checks_come_back_as_computed(
    found: list[LedgerFinding], refs: list[tuple[str, str]] | None, sound: bool
) -> None:
    check = (found, refs, sound)
    packed = pack(check)
    assert unpack(pickle.loads(pickle.dumps(packed))) == check
    assert isinstance(packed, list) == (not found and sound and refs is not None)


# -- the usual rows cross column by column and take the fast path --------------------------


def _is_usual(row: RawLogRow) -> bool:
    """The definition of a row ``_entry_columns`` may send column by column."""
    obj = row.object
    if obj is None:
        return False
    optional_text = (obj.schema_version, obj.object_id, obj.legacy_digest, obj.legacy_hints)
    return (
        all(type(v) is int for v in (row.seq, obj.seq))
        and all(type(v) is str for v in (row.digest, row.kind, row.appended_at))
        and all(type(v) is str for v in (obj.digest, obj.kind))
        and all(v is None or type(v) is str for v in optional_text)
        and (obj.object_version is None or type(obj.object_version) is int)
        and type(obj.data) is bytes
        and (obj.seq, obj.digest, obj.kind) == (row.seq, row.digest, row.kind)
    )


def _reference_chunk(rows: list[RawLogRow]) -> Any:
    """``check_chunk`` of the rows as the auditing process holds them (the definition)."""
    return check_chunk(_as_held(rows))


def _sent_and_checked(rows: list[RawLogRow]) -> tuple[Any, Any]:
    """What ``with_entry_checks`` sends a worker for ``rows``, and the worker's check."""
    sent = pickle.loads(pickle.dumps(parallel._entry_columns(rows)))
    return sent, parallel._check_entries(sent)[0]


@settings(max_examples=300, deadline=None)
@given(st.lists(_log_rows(), max_size=6))
def test_rows_cross_column_by_column_exactly_when_all_are_usual(rows: list[RawLogRow]) -> None:
    sent, checked = _sent_and_checked(rows)
    assert (type(sent) is tuple) == (bool(rows) and all(map(_is_usual, rows)))
    assert repr(checked) == repr(_reference_chunk(rows))


@pytest.fixture(scope="module")
def corpus_rows(tmp_path_factory: pytest.TempPathFactory) -> list[RawLogRow]:
    """The rows of 27 entries of the benchmark corpus (every kind, float hints)."""
    db = Path(generated_ledger(tmp_path_factory.mktemp("corpus"), 27, 5))
    with open_store(db, readonly=True) as store:
        return list(store.log_rows())


def _replace(row: RawLogRow, entry: dict[str, Any], obj: dict[str, Any]) -> RawLogRow:
    """``row`` with some entry and object columns replaced (seq, digest and kind in both
    when given for the entry, so that the row stays the usual one)."""
    assert row.object is not None
    both = {k: v for k, v in entry.items() if k in ("seq", "digest", "kind")}
    columns = {name: getattr(row.object, name) for name in OBJECT_COLUMNS} | both | obj
    fields = {"seq": row.seq, "digest": row.digest, "kind": row.kind} | entry
    return RawLogRow(
        fields["seq"],
        fields["digest"],
        fields["kind"],
        entry.get("appended_at", row.appended_at),
        RawObjectRow(**columns),
    )


_STAMPS = ["", "2026-12-05T08:44:10.364684", "2026-12-05T08:44:10.364684Z\n", "x", "é"]


@st.composite
def _tampered(draw: st.DrawFn, rows: list[RawLogRow]) -> RawLogRow:
    """One of ``rows`` as a hostile writer may leave it, mostly still of the usual types."""
    row = draw(st.sampled_from(rows))
    other = draw(st.sampled_from(rows))
    assert row.object is not None and other.object is not None
    data = row.object.data
    assert isinstance(data, bytes)
    at = draw(st.integers(0, max(len(data) - 1, 0)))
    how = draw(
        st.sampled_from(
            [
                ("appended_at", st.sampled_from(_STAMPS)),
                (
                    "data",
                    st.sampled_from(
                        [
                            data + b" ",
                            data[:at] + b"\xff" + data[at + 1 :],
                            data.replace(b"1", b"2", 1),
                            other.object.data,
                            b"",
                        ]
                    ),
                ),
                ("digest", st.sampled_from([other.digest, "sha256:00", "", "é"])),
                ("kind", st.sampled_from([other.kind, "blob", "unknown", ""])),
                ("seq", st.sampled_from([0, -1, 2**53, 2**70])),
                ("schema_version", st.sampled_from([None, "9.9", "", other.object.schema_version])),
                ("object_id", st.sampled_from([None, "x", other.object.object_id])),
                (
                    "object_version",
                    st.sampled_from([None, 0, -1, 2**70, other.object.object_version]),
                ),
                ("legacy_digest", st.sampled_from([None, "sha256:00", other.object.legacy_digest])),
                (
                    "legacy_hints",
                    st.sampled_from(
                        [None, "", "[]", "x", '[["a","b","1.0"]]', other.object.legacy_hints]
                    ),
                ),
                ("object_version", st.just(True)),  # not the usual types: sent row by row
                ("seq", st.just(1.0)),
            ]
        )
    )
    name, values = how
    value = draw(values)
    if name in ("appended_at", "digest", "kind", "seq"):
        return _replace(row, {name: value}, {})
    return _replace(row, {}, {name: value})


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_the_fast_chunk_check_reports_what_the_reference_does(
    corpus_rows: list[RawLogRow], data: st.DataObject
) -> None:
    """Chunks of real rows, some tampered: column by column whenever every row keeps the
    usual types, and checked exactly as ``check_chunk`` checks the rows as read."""
    picked = data.draw(st.lists(st.sampled_from(corpus_rows), min_size=1, max_size=8))
    tampered = data.draw(st.lists(_tampered(corpus_rows), max_size=3))
    rows = data.draw(st.permutations(picked + tampered))
    sent, checked = _sent_and_checked(rows)
    assert (type(sent) is tuple) == all(map(_is_usual, rows))
    assert repr(checked) == repr(_reference_chunk(rows))


def test_clean_rows_take_the_fast_path(
    corpus_rows: list[RawLogRow], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The untampered corpus never reaches ``check_entry`` when sent column by column."""
    sent = parallel._entry_columns(corpus_rows)
    assert type(sent) is tuple
    expected = _reference_chunk(corpus_rows)
    monkeypatch.setattr(entry_check, "check_entry", None)  # would raise if called
    leaves, checks, totals = parallel._check_entries(sent)[0]
    assert (leaves, checks, totals) == expected
    assert all(type(c) is list for c in checks)


class _Text(str):
    """Text of a type SQLite never gives: equal to its ``str``, not the usual type."""


_USUAL = RawLogRow(1, "d", "k", "t", RawObjectRow("d", 1, "k", "1", "i", 2, None, None, b"x"))
# Each column given a value equal to the usual one (or standing for it) of another type.
_UNUSUAL = [
    *[({"seq": v}, {}) for v in (True, 1.0, _Text("1"))],
    ({"digest": _Text("d")}, {}),
    ({"kind": _Text("k")}, {}),
    ({"appended_at": _Text("t")}, {}),
    ({"appended_at": None}, {}),
    *[({}, {"seq": v}) for v in (True, 1.0)],
    ({}, {"digest": _Text("d")}),
    ({}, {"kind": _Text("k")}),
    ({}, {"schema_version": _Text("1")}),
    ({}, {"object_id": b"i"}),
    *[({}, {"object_version": v}) for v in (True, 2.0, "2")],
    ({}, {"legacy_digest": 0}),
    ({}, {"legacy_hints": b""}),
    *[({}, {"data": v}) for v in (bytearray(b"x"), "x", None)],
]


@pytest.mark.parametrize(("entry", "obj"), _UNUSUAL)
def test_a_row_of_other_types_is_sent_row_by_row(
    entry: dict[str, Any], obj: dict[str, Any]
) -> None:
    """Equal values of other types (1, True and 1.0; a ``str`` subclass; bytearray) never
    pass for the usual row: the chunk crosses row by row and is checked as read."""
    usual = RawLogRow(
        0, "e", "k", "t", RawObjectRow("e", 0, "k", None, None, None, None, None, b"")
    )
    assert type(parallel._entry_columns([usual, _USUAL])) is tuple
    row = RawLogRow(
        entry.get("seq", 1),
        entry.get("digest", "d"),
        entry.get("kind", "k"),
        entry.get("appended_at", "t"),
        RawObjectRow(**({name: getattr(_USUAL.object, name) for name in OBJECT_COLUMNS} | obj)),
    )
    rows = [usual, row]
    assert isinstance(parallel._entry_columns(rows), list)
    _sent, checked = _sent_and_checked(rows)
    assert repr(checked) == repr(_reference_chunk(rows))


def test_fewer_collections_during_a_pooled_pass_and_settings_restored(
    corpus_rows: list[RawLogRow], monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a pooled pass runs (the judgement included: it runs between the chunks), the
    objects from before are frozen and the youngest generation is collected rarely; after
    it, or when the judgement raises, the settings are the caller's again."""
    monkeypatch.setattr(parallel, "_CHUNK", 4)
    before = (gc.get_threshold(), gc.get_freeze_count())
    seen = []
    for _rows, _checked in parallel.with_entry_checks(corpus_rows, workers=2):
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    assert len(seen) > 1 and all(t >= parallel._COLLECT_EVERY and n > 0 for t, n in seen)
    with pytest.raises(KeyError):
        for _rows, _checked in parallel.with_entry_checks(corpus_rows, workers=2):
            raise KeyError("the judgement failed")
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
