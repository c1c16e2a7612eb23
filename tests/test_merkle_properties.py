"""Property tests for ledger.log.merkle against naive RFC 6962 definitions written here.

The oracles are deliberately different code from ledger.log.merkle: recursive MTH/PATH/PROOF
over a list of leaves (RFC 6962 s2.1), and recursive verifiers that rebuild roots by
walking the same recursion. ledger.log.merkle uses stored nodes and RFC 9162 bit arithmetic.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.log.merkle import (
    CompactRange,
    MemoryTree,
    ProofError,
    ProofRequestError,
    consistency_proof,
    consistency_proof_length,
    inclusion_proof,
    inclusion_proof_length,
    leaf_hash,
    new_nodes_for_append,
    root,
    verify_consistency,
    verify_inclusion,
)

MAX = 3000
LEAVES = [f"leaf-{i}".encode() for i in range(MAX)]
TREE = MemoryTree()
for _leaf in LEAVES:
    TREE.append(_leaf)


def _h(*parts: bytes) -> bytes:
    return hashlib.sha256(b"".join(parts)).digest()


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


@cache
def mth(lo: int, hi: int) -> bytes:
    """RFC 6962 MTH(D[lo:hi]) by plain recursion over LEAVES."""
    n = hi - lo
    if n == 0:
        return _h(b"")
    if n == 1:
        return _h(b"\x00", LEAVES[lo])
    k = _k(n)
    return _h(b"\x01", mth(lo, lo + k), mth(lo + k, hi))


def path(m: int, lo: int, hi: int) -> list[bytes]:
    """RFC 6962 PATH(m, D[lo:hi])."""
    n = hi - lo
    if n == 1:
        return []
    k = _k(n)
    if m < k:
        return [*path(m, lo, lo + k), mth(lo + k, hi)]
    return [*path(m - k, lo + k, hi), mth(lo, lo + k)]


def subproof(m: int, lo: int, hi: int, whole: bool) -> list[bytes]:
    """RFC 6962 SUBPROOF(m, D[lo:hi], b)."""
    n = hi - lo
    if m == n:
        return [] if whole else [mth(lo, hi)]
    k = _k(n)
    if m <= k:
        return [*subproof(m, lo, lo + k, whole), mth(lo + k, hi)]
    return [*subproof(m - k, lo + k, hi, False), mth(lo, lo + k)]


def naive_inclusion_ok(
    m: int, n: int, leaf: bytes, proof: Sequence[bytes], tree_root: bytes
) -> bool:
    """Accept iff walking PATH's recursion from the top rebuilds tree_root."""

    def rebuild(m: int, n: int, proof: Sequence[bytes]) -> bytes | None:
        if n == 1:
            return leaf if not proof else None
        if not proof:
            return None
        k = _k(n)
        if m < k:
            below = rebuild(m, k, proof[:-1])
            return None if below is None else _h(b"\x01", below, proof[-1])
        below = rebuild(m - k, n - k, proof[:-1])
        return None if below is None else _h(b"\x01", proof[-1], below)

    if not 0 <= m < n:
        return False
    return rebuild(m, n, proof) == tree_root


def naive_consistency_ok(
    m: int, n: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> bool:
    """Accept iff walking SUBPROOF's recursion rebuilds both roots (policy: 0 < m <= n)."""

    def rebuild(m: int, n: int, whole: bool, proof: Sequence[bytes]) -> tuple[bytes, bytes] | None:
        if m == n:
            if whole:
                return (old_root, old_root) if not proof else None
            return (proof[0], proof[0]) if len(proof) == 1 else None
        if not proof:
            return None
        k = _k(n)
        if m <= k:
            below = rebuild(m, k, whole, proof[:-1])
            if below is None:
                return None
            return below[0], _h(b"\x01", below[1], proof[-1])
        below = rebuild(m - k, n - k, False, proof[:-1])
        if below is None:
            return None
        return _h(b"\x01", proof[-1], below[0]), _h(b"\x01", proof[-1], below[1])

    if not 0 < m <= n:
        return False
    return rebuild(m, n, True, proof) == (old_root, new_root)


def _accepts_inclusion(m: int, n: int, leaf: bytes, proof: list[bytes], r: bytes) -> bool:
    try:
        verify_inclusion(m, n, leaf, proof, r)
    except ProofError:
        return False
    return True


def _accepts_consistency(m: int, n: int, r1: bytes, r2: bytes, proof: list[bytes]) -> bool:
    try:
        verify_consistency(m, n, r1, r2, proof)
    except ProofError:
        return False
    return True


def _flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def _element_mutations(data: st.DataObject, proof: list[bytes]) -> list[list[bytes]]:
    """One of each single-element mutation that must always be rejected."""
    draw = data.draw
    out: list[list[bytes]] = []
    extra = draw(st.binary(min_size=32, max_size=32))
    at = draw(st.integers(0, len(proof)))
    out.append([*proof[:at], extra, *proof[at:]])
    if proof:
        j = draw(st.integers(0, len(proof) - 1))
        out.append([*proof[:j], _flip(proof[j], draw(st.integers(0, 255))), *proof[j + 1 :]])
        out.append(proof[:j] + proof[j + 1 :])
    if len(proof) >= 2:
        a, b = sorted(
            draw(st.lists(st.integers(0, len(proof) - 1), min_size=2, max_size=2, unique=True))
        )
        swapped = list(proof)
        swapped[a], swapped[b] = swapped[b], swapped[a]
        out.append(swapped)
    return out


sizes = st.integers(1, MAX)


@st.composite
def index_and_size(draw: st.DrawFn) -> tuple[int, int]:
    size = draw(sizes)
    return draw(st.integers(0, size - 1)), size


@st.composite
def old_and_new(draw: st.DrawFn) -> tuple[int, int]:
    new = draw(sizes)
    return draw(st.integers(1, new)), new


@given(sizes)
def test_root_equals_naive_mth(size: int) -> None:
    assert root(size, TREE) == mth(0, size)


@given(index_and_size())
def test_inclusion_proof_is_rfc6962_path_and_verifies(case: tuple[int, int]) -> None:
    index, size = case
    proof = inclusion_proof(index, size, TREE)
    assert proof == path(index, 0, size)
    assert len(proof) == inclusion_proof_length(index, size)
    verify_inclusion(index, size, leaf_hash(LEAVES[index]), proof, mth(0, size))
    assert naive_inclusion_ok(index, size, leaf_hash(LEAVES[index]), proof, mth(0, size))


@given(old_and_new())
def test_consistency_proof_is_rfc6962_proof_and_verifies(case: tuple[int, int]) -> None:
    old, new = case
    proof = consistency_proof(old, new, TREE)
    assert proof == subproof(old, 0, new, True)
    assert len(proof) == consistency_proof_length(old, new)
    verify_consistency(old, new, mth(0, old), mth(0, new), proof)
    assert naive_consistency_ok(old, new, mth(0, old), mth(0, new), proof)


@settings(max_examples=200)
@given(index_and_size(), st.data())
def test_inclusion_mutations_are_rejected(case: tuple[int, int], data: st.DataObject) -> None:
    index, size = case
    leaf, tree_root = leaf_hash(LEAVES[index]), mth(0, size)
    proof = inclusion_proof(index, size, TREE)
    for mutated in _element_mutations(data, proof):
        assert not _accepts_inclusion(index, size, leaf, mutated, tree_root)
    assert not _accepts_inclusion(
        index, size, _flip(leaf, data.draw(st.integers(0, 255))), proof, tree_root
    )
    assert not _accepts_inclusion(
        index, size, leaf, proof, _flip(tree_root, data.draw(st.integers(0, 255)))
    )
    # A wrong index or size is rejected unless it describes the same hashing path
    # (see test_inclusion_does_not_authenticate_size_beyond_the_path_shape): the
    # independent recursive verifier decides which.
    for wrong_index, wrong_size in {
        (index + 1, size),
        (index - 1, size),
        (index ^ 1, size),
        (index ^ 2, size),
        (index, size + 1),
        (index, size - 1),
        (index, size * 2),
        (index, size // 2),
        (index + 1, size + 1),
        (index, data.draw(st.integers(1, 2 * MAX))),
    } - {(index, size)}:
        if wrong_index < 0 or wrong_size < 0:
            continue
        expected = naive_inclusion_ok(wrong_index, wrong_size, leaf, proof, tree_root)
        assert _accepts_inclusion(wrong_index, wrong_size, leaf, proof, tree_root) == expected


@settings(max_examples=200)
@given(old_and_new(), st.data())
def test_consistency_mutations_are_rejected(case: tuple[int, int], data: st.DataObject) -> None:
    old, new = case
    old_root, new_root = mth(0, old), mth(0, new)
    proof = consistency_proof(old, new, TREE)
    for mutated in _element_mutations(data, proof):
        assert not _accepts_consistency(old, new, old_root, new_root, mutated)
    assert not _accepts_consistency(
        old, new, _flip(old_root, data.draw(st.integers(0, 255))), new_root, proof
    )
    assert not _accepts_consistency(
        old, new, old_root, _flip(new_root, data.draw(st.integers(0, 255))), proof
    )
    for wrong_old, wrong_new in {
        (old + 1, new),
        (old - 1, new),
        (old, new + 1),
        (old, new - 1),
        (old * 2, new),
        (old, new * 2),
        (old // 2, new),
        (old + 1, new + 1),
        (new, old),
        (old, data.draw(st.integers(1, 2 * MAX))),
    } - {(old, new)}:
        expected = naive_consistency_ok(wrong_old, wrong_new, old_root, new_root, proof)
        got = _accepts_consistency(wrong_old, wrong_new, old_root, new_root, proof)
        assert got == expected, (wrong_old, wrong_new)


def test_oracles_can_tell_a_wrong_size_apart() -> None:
    # Guards the oracle comparison above from degenerating into "both always reject".
    proof = inclusion_proof(12, 13, TREE)
    leaf = leaf_hash(LEAVES[12])
    assert naive_inclusion_ok(12, 13, leaf, proof, mth(0, 13))
    assert not naive_inclusion_ok(12, 14, leaf, proof, mth(0, 13))
    assert not naive_inclusion_ok(13, 13, leaf, proof, mth(0, 13))
    assert naive_inclusion_ok(0, 4, leaf_hash(LEAVES[0]), inclusion_proof(0, 3, TREE), mth(0, 3))
    cproof = consistency_proof(6, 13, TREE)
    assert not naive_consistency_ok(7, 13, mth(0, 6), mth(0, 13), cproof)


@given(st.integers(0, 300))
def test_appended_nodes_are_exactly_the_complete_subtrees(size: int) -> None:
    stored: dict[tuple[int, int], bytes] = {}

    class DictReader:
        def node(self, level: int, index: int) -> bytes:
            return stored[(level, index)]

    for i in range(size):
        for level, index, value in new_nodes_for_append(i, leaf_hash(LEAVES[i]), DictReader()):
            assert (level, index) not in stored
            stored[(level, index)] = value
    expected = {
        (level, index) for level in range(size.bit_length()) for index in range(size >> level)
    }
    assert set(stored) == expected
    for (level, index), value in stored.items():
        assert value == mth(index << level, (index + 1) << level)


class CountingReader:
    """Counts reads; fakes node values so huge trees need no storage."""

    def __init__(self, backing: MemoryTree | None = None) -> None:
        self.reads = 0
        self.backing = backing

    def node(self, level: int, index: int) -> bytes:
        self.reads += 1
        if self.backing is not None:
            return self.backing.node(level, index)
        return _h(level.to_bytes(1, "big"), index.to_bytes(8, "big"))


def _read_bound(size: int) -> int:
    return 2 * size.bit_length() + 2


@given(index_and_size())
def test_proofs_read_olog_n_nodes(case: tuple[int, int]) -> None:
    index, size = case
    reader = CountingReader(TREE)
    inclusion_proof(index, size, reader)
    assert reader.reads <= _read_bound(size)
    reader = CountingReader(TREE)
    consistency_proof(index + 1, size, reader)
    assert reader.reads <= _read_bound(size)
    reader = CountingReader(TREE)
    root(size, reader)
    assert reader.reads <= size.bit_length()


@pytest.mark.parametrize("size", [2**40 + 12345, 2**63 - 1, 2**64 - 1])
def test_huge_trees_stay_logarithmic(size: int) -> None:
    reader = CountingReader()
    proof = inclusion_proof(size // 3, size, reader)
    assert len(proof) == inclusion_proof_length(size // 3, size)
    assert reader.reads <= _read_bound(size)
    reader = CountingReader()
    cproof = consistency_proof(size // 2 + 1, size, reader)
    assert len(cproof) == consistency_proof_length(size // 2 + 1, size)
    assert reader.reads <= _read_bound(size)


# -- one append routine: the audit's frontier and the store's batches agree with it ------------


@given(st.integers(0, 300))
def test_compact_range_closes_the_same_nodes_and_has_every_root(size: int) -> None:
    frontier = CompactRange()
    closed: dict[tuple[int, int], bytes] = {}
    assert frontier.root() == mth(0, 0)
    for i in range(size):
        for level, index, value in frontier.append(leaf_hash(LEAVES[i])):
            closed[(level, index)] = value
        assert frontier.root() == mth(0, i + 1)
        # Only the right frontier is held: one node per set bit of the size.
        assert len(frontier._frontier) == bin(i + 1).count("1")
    for (level, index), value in closed.items():
        assert TREE.node(level, index) == value
    assert len(closed) == sum(size >> level for level in range(size.bit_length()))


@given(runs=st.lists(st.integers(0, 70), min_size=1, max_size=6))
def test_compact_range_extend_closes_what_each_append_closes(runs: list[int]) -> None:
    """``extend`` (the audit's run of leaves at once) is ``append`` leaf by leaf: the same
    nodes, grouped by level, the same frontier and root after every run."""
    one, many = CompactRange(), CompactRange()
    at = 0
    for count in runs:
        count = min(count, len(LEAVES) - at)
        leaves = [leaf_hash(LEAVES[i]) for i in range(at, at + count)]
        by_level: dict[int, list[tuple[int, bytes]]] = {}
        for leaf in leaves:
            for level, index, value in one.append(leaf):
                by_level.setdefault(level, []).append((index, value))
        closed = many.extend(b"".join(leaves))
        assert len(closed) == len(by_level)
        for level, (first, joined) in enumerate(closed):
            nodes = by_level[level]
            assert [index for index, _ in nodes] == list(range(first, first + len(nodes)))
            assert joined == b"".join(value for _, value in nodes)
        assert (many.size, many._frontier, many.root()) == (one.size, one._frontier, one.root())
        at += count


def test_compact_range_extend_refuses_a_partial_hash() -> None:
    with pytest.raises(ProofRequestError):
        CompactRange().extend(bytes(33))


@settings(max_examples=15, deadline=None)
@given(batches=st.lists(st.integers(1, 9), min_size=1, max_size=8))
def test_store_batches_write_exactly_the_memory_trees_nodes(
    batches: list[int], tmp_path_factory: pytest.TempPathFactory
) -> None:
    from ledger.create import initialise
    from ledger.log.leaf import entry_record
    from ledger.store.prepared import prepare_blob
    from ledger.store.sqlite import open_store

    tmp = tmp_path_factory.mktemp("tree")
    db = tmp / "l.db"
    initialise(db, "merkle.example/log", tmp / "log.key", tmp / "authority.key")
    with open_store(db) as store:
        for b, count in enumerate(batches):
            store.append_many([prepare_blob(f"{b}-{i}".encode()) for i in range(count)])
        tree = MemoryTree()
        for entry in store.entries():
            tree.append(entry_record(entry.seq, entry.kind, entry.digest, entry.appended_at))
        rows = store.connection.execute("SELECT level, idx, hash FROM tree_nodes").fetchall()
    assert tree.size == sum(batches)
    assert {(level, idx): bytes(h) for level, idx, h in rows} == {
        (level, idx): tree.node(level, idx)
        for level in range(tree.size.bit_length())
        for idx in range(tree.size >> level)
    }
