"""The SQLite audit scan builds its rows (``sqlite_scan._build``) without the
dataclasses' ``__init__``; each row is exactly the one ``__init__`` would build: the
same fields, the same values of the same types (any SQL type a tampered file holds),
None for an entry without an object row."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

from hypothesis import given
from hypothesis import strategies as st

from ledger.store.base import OBJECT_COLUMNS, RawLogRow, RawObjectRow, SQLValue
from ledger.store.sqlite_scan import _build

# What SQLite hands back for a column: NULL, INTEGER, REAL, TEXT (maybe surrogate-escaped
# by the audit's tolerant decoding), BLOB.
_VALUE = st.one_of(
    st.none(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(max_size=40),
)
_ROW = st.tuples(*([_VALUE] * 4), st.one_of(st.none(), st.text()), *([_VALUE] * 8))


def _reference(row: Sequence[SQLValue]) -> RawLogRow:
    obj = None if row[4] is None else RawObjectRow(*row[4:])
    return RawLogRow(*row[:4], obj)


def _typed(row: object) -> list[tuple[str, type, object]]:
    """Each field with its value's exact type (1, 1.0 and True are equal, not the same)."""
    out: list[tuple[str, type, object]] = []
    for f in fields(row):  # type: ignore[arg-type]
        value = getattr(row, f.name)
        if isinstance(value, RawObjectRow):
            out += [(f"object.{name}", t, v) for name, t, v in _typed(value)]
        else:
            out.append((f.name, type(value), value))
    return out


@given(st.lists(_ROW, max_size=8))
def test_rows_are_those_init_builds(rows: list[tuple[SQLValue, ...]]) -> None:
    built = list(_build(rows))
    expected = [_reference(row) for row in rows]
    assert built == expected
    assert [_typed(b) for b in built] == [_typed(e) for e in expected]
    for row in built:
        assert list(vars(row)) == [f.name for f in fields(RawLogRow)]
        if row.object is not None:
            assert tuple(vars(row.object)) == OBJECT_COLUMNS


def test_a_row_without_an_object_has_none() -> None:
    (row,) = _build([(0, "d", "k", "t", None, None, None, None, None, None, None, None, None)])
    assert row.object is None and row == RawLogRow(0, "d", "k", "t", None)
