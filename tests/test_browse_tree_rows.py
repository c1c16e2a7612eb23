"""The index reads the tree nodes of a run of entries one level at a time
(``tree_node_range``); it must give exactly the rows, or the error, of reading them
entry by entry (``tree_node_rows``), on a sound tree and on a tampered one (a node
missing, repeated, or not bytes), and in the projection whole (``_TreeRuns``).
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cohorts.browse.build import _TreeRuns, tree_node_range, tree_node_rows
from ledger.errors import InputError
from ledger.log.merkle import CompactRange


class _Nodes:
    """A ``NodeScan`` over stored rows (level, idx, hash), as a tampered file may hold
    them: an idx repeated, a hash of another type."""

    def __init__(self, rows: list[tuple[int, int, object]]) -> None:
        self.rows = sorted(rows, key=lambda r: (r[0], r[1]))

    def get(self, level: int, index: int) -> tuple[object] | None:
        for lv, idx, value in self.rows:
            if (lv, idx) == (level, index):
                return (value,)
        return None

    def hashes(self, level: int, first: int, end: int) -> list[tuple[object, object]]:
        return [(idx, v) for lv, idx, v in self.rows if lv == level and first <= idx < end]


def _tree(size: int) -> list[tuple[int, int, object]]:
    frontier = CompactRange()
    rows: list[tuple[int, int, object]] = []
    for seq in range(size):
        rows += frontier.append(hashlib.sha256(b"%d" % seq).digest())
    return rows


def _outcome(read: object) -> object:
    try:
        return sorted(read())  # type: ignore[operator]
    except InputError as exc:
        return ("error", str(exc))


@st.composite
def _case(draw: st.DrawFn) -> tuple[list[tuple[int, int, object]], int, int]:
    size = draw(st.integers(1, 200))
    rows = _tree(size)
    tampers = draw(st.lists(st.sampled_from(["drop", "repeat", "text", "bytearray"]), max_size=2))
    for tamper in tampers:  # none, one, or two at once (a drop and a repeat keep the count)
        if not rows:
            break
        at = draw(st.integers(0, len(rows) - 1))
        level, idx, value = rows[at]
        if tamper == "drop":
            del rows[at]
        elif tamper == "repeat":
            rows.insert(at, (level, idx, b"\x00" * 32))
        elif tamper == "text":
            rows[at] = (level, idx, "not bytes")
        elif isinstance(value, bytes):
            rows[at] = (level, idx, bytearray(value))
    first = draw(st.integers(0, size - 1))
    end = draw(st.integers(first + 1, size))
    return rows, first, end


@settings(max_examples=300, deadline=None)
@given(_case())
def test_a_run_read_by_level_equals_entry_by_entry(
    case: tuple[list[tuple[int, int, object]], int, int],
) -> None:
    rows, first, end = case
    by_entry = _outcome(
        lambda: [n for seq in range(first, end) for n in tree_node_rows(_Nodes(rows), seq)]
    )
    assert _outcome(lambda: tree_node_range(_Nodes(rows), first, end)) == by_entry


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 300), st.integers(1, 40), st.data())
def test_runs_cover_every_entry_once(size: int, run: int, data: st.DataObject) -> None:
    """Entries taken one by one (a gap where the log skips a seq), runs closed at any
    length: the rows of every entry taken, each once."""
    nodes = _Nodes(_tree(size))
    seqs = sorted(data.draw(st.sets(st.integers(0, size - 1), min_size=1)))
    runs = _TreeRuns(nodes)
    runs.RUN = run
    got = [n for seq in seqs for n in runs.add(seq)] + runs.close()
    assert sorted(got) == sorted(n for seq in seqs for n in tree_node_rows(nodes, seq))
    assert len(set(got)) == len(got)


def test_a_missing_node_is_refused_as_before() -> None:
    rows = [r for r in _tree(8) if (r[0], r[1]) != (1, 2)]
    with pytest.raises(InputError, match="tree node level 1 index 2, got None"):
        tree_node_range(_Nodes(rows), 0, 8)


def test_a_drop_and_a_repeat_in_one_level_are_not_copied_by_position() -> None:
    """The count of a level's rows stays right when one node is repeated and another
    dropped: the run must still notice the indexes and read entry by entry."""
    rows = _tree(8)
    rows = [r for r in rows if (r[0], r[1]) != (0, 5)]
    rows.append((0, 2, b"\x00" * 32))
    with pytest.raises(InputError, match="tree node level 0 index 5, got None"):
        tree_node_range(_Nodes(rows), 0, 8)
