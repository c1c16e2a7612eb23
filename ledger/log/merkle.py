"""RFC 9162 Merkle tree (SHA-256): hashing, proofs from stored nodes, strict proof verifiers.

Hashing is the RFC 6962 / RFC 9162 SHA-256 case: a leaf is ``SHA-256(0x00 || data)``, an
interior node ``SHA-256(0x01 || left || right)`` and the empty tree ``SHA-256("")``.

Storage plug point: a :class:`NodeReader` returns the hash of a *complete* subtree, addressed
as ``(level, index)`` = leaves ``[index * 2**level, (index + 1) * 2**level)``. A log persists
exactly those nodes, so every proof below needs O(log n) node reads and O(log n) hashing,
whatever the tree size.

Appending is written once, :func:`new_nodes_for_append`: the SQLite store (through
:class:`PendingNodes`, for a batch not yet committed), the audit's :class:`CompactRange`
(which holds only the right frontier) and :class:`MemoryTree` all call it. The audit
appends a run of leaves at once with ``CompactRange.extend``, the same nodes level by level
(tests/test_merkle_properties.py holds it to ``append``).

The verifiers follow RFC 9162 s2.1.3.2 / s2.1.4.2 and add the strict policy documented in
docs/LOG.md: every hash is 32 bytes, proof lengths must be exact, ``old_size == 0`` is
rejected and equal sizes need an empty proof.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from enum import StrEnum
from typing import Final, Protocol

from ledger.errors import CheckFailed, InputError

HASH_SIZE: Final = 32
MAX_TREE_SIZE: Final = 2**64 - 1  # RFC 9162 tree sizes are uint64
EMPTY_ROOT: Final = hashlib.sha256(b"").digest()

_LEAF_PREFIX: Final = b"\x00"
_NODE_PREFIX: Final = b"\x01"


def leaf_hash(data: bytes) -> bytes:
    """Return ``SHA-256(0x00 || data)``, the hash of one log entry."""
    return hashlib.sha256(_LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """Return ``SHA-256(0x01 || left || right)``; inputs are not length-checked."""
    return hashlib.sha256(_NODE_PREFIX + left + right).digest()


class NodeReader(Protocol):
    """Source of complete-subtree hashes (the store's ``tree_nodes`` table, or memory).

    ``node(level, index)`` is the hash of the complete subtree over leaves
    ``[index * 2**level, (index + 1) * 2**level)``; level 0 holds leaf hashes. The functions
    here only ask for nodes lying wholly inside ``[0, size)`` of the size they are given.
    """

    def node(self, level: int, index: int) -> bytes: ...


class ProofRequestError(InputError):
    """A proof or root was requested for sizes/indices that do not describe one (exit 3)."""


class ProofFailure(StrEnum):
    """Why a proof was rejected; carried as ``ProofError.reason``."""

    BAD_SIZE = "bad-size"
    INDEX_OUT_OF_RANGE = "index-out-of-range"
    BAD_HASH_LENGTH = "bad-hash-length"
    WRONG_PROOF_LENGTH = "wrong-proof-length"
    ROOT_MISMATCH = "root-mismatch"
    OLD_ROOT_MISMATCH = "old-root-mismatch"
    NEW_ROOT_MISMATCH = "new-root-mismatch"
    OLD_SIZE_ZERO = "old-size-zero"
    SIZE_DECREASED = "size-decreased"
    NONEMPTY_PROOF_FOR_EQUAL_SIZES = "nonempty-proof-for-equal-sizes"


class ProofError(CheckFailed):
    """An inclusion or consistency proof does not verify (exit 1); ``reason`` names why."""

    def __init__(self, reason: ProofFailure, message: str) -> None:
        super().__init__(f"{message} [{reason.value}]")
        self.reason = reason


# --------------------------------------------------------------------------- generation


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _split(n: int) -> int:
    """Largest power of two strictly below ``n`` (``n >= 2``): RFC 6962's ``k``."""
    return 1 << ((n - 1).bit_length() - 1)


def _require_tree_size(size: int, what: str = "tree size") -> None:
    if not _is_int(size) or not 0 <= size <= MAX_TREE_SIZE:
        raise ProofRequestError(f"{what}, got {size!r}, expected an integer in [0, 2**64-1]")


def subtree_hash(start: int, end: int, reader: NodeReader) -> bytes:
    """Return MTH(D[start:end]) from at most log2(end - start) + 1 complete-subtree reads.

    ``start`` must be a multiple of the largest power of two <= ``end - start`` (true of every
    subtree that RFC 6962 PATH/PROOF refer to); an empty range gives :data:`EMPTY_ROOT`.
    """
    _require_tree_size(start, "subtree start")
    _require_tree_size(end, "subtree end")
    width = end - start
    if width < 0:
        raise ProofRequestError(f"subtree range, got [{start}, {end}), expected start <= end")
    if width == 0:
        return EMPTY_ROOT
    top_level = width.bit_length() - 1
    if start % (1 << top_level):
        raise ProofRequestError(
            f"subtree start, got {start}, expected a multiple of {1 << top_level} "
            f"for a range of {width} leaves"
        )
    # MTH splits at the largest power of two below the width, so the range is a run of
    # complete subtrees of decreasing size, folded together from the right.
    parts: list[bytes] = []
    offset = start
    for level in range(top_level, -1, -1):
        if width >> level & 1:
            parts.append(reader.node(level, offset >> level))
            offset += 1 << level
    acc = parts[-1]
    for part in reversed(parts[:-1]):
        acc = node_hash(part, acc)
    return acc


def root(size: int, reader: NodeReader) -> bytes:
    """Return the tree head MTH(D[0:size]); :data:`EMPTY_ROOT` for ``size == 0``."""
    _require_tree_size(size)
    return subtree_hash(0, size, reader)


def inclusion_proof(index: int, size: int, reader: NodeReader) -> list[bytes]:
    """Return RFC 6962 PATH(index, D[0:size]), leaf-to-root order, in O(log size) reads."""
    _require_tree_size(size)
    if not _is_int(index) or not 0 <= index < size:
        raise ProofRequestError(f"leaf index, got {index!r}, expected 0 <= index < {size}")
    top_down: list[bytes] = []
    lo, hi, m = 0, size, index
    while hi - lo > 1:
        k = _split(hi - lo)
        if m < k:
            top_down.append(subtree_hash(lo + k, hi, reader))
            hi = lo + k
        else:
            top_down.append(subtree_hash(lo, lo + k, reader))
            lo, m = lo + k, m - k
    top_down.reverse()
    return top_down


def consistency_proof(old_size: int, new_size: int, reader: NodeReader) -> list[bytes]:
    """Return RFC 6962 PROOF(old_size, D[0:new_size]) in O(log new_size) reads.

    Defined for ``0 < old_size <= new_size``; equal sizes give the empty proof.
    """
    _require_tree_size(old_size, "old size")
    _require_tree_size(new_size, "new size")
    if not 0 < old_size <= new_size:
        raise ProofRequestError(
            f"consistency sizes, got {old_size} -> {new_size}, expected 0 < old <= new"
        )
    top_down: list[bytes] = []
    lo, hi, m, whole_old_tree = 0, new_size, old_size, True
    while True:
        n = hi - lo
        if m == n:
            # The old tree's own root is omitted: the verifier already holds it.
            if not whole_old_tree:
                top_down.append(subtree_hash(lo, hi, reader))
            break
        k = _split(n)
        if m <= k:
            top_down.append(subtree_hash(lo + k, hi, reader))
            hi = lo + k
        else:
            top_down.append(subtree_hash(lo, lo + k, reader))
            lo, m, whole_old_tree = lo + k, m - k, False
    top_down.reverse()
    return top_down


def new_nodes_for_append(
    index: int, leaf_hash: bytes, reader: NodeReader
) -> list[tuple[int, int, bytes]]:
    """Return the ``(level, index, hash)`` nodes to persist when appending leaf ``index``.

    ``reader`` must hold the nodes of leaves ``[0, index)``. The result is the leaf node and,
    while the new node is a right child, its parent: exactly the complete subtrees that end
    at leaf ``index``. Appending every leaf this way stores all complete subtrees.
    """
    if not _is_int(index) or not 0 <= index < MAX_TREE_SIZE:
        raise ProofRequestError(f"leaf index, got {index!r}, expected 0 <= index < 2**64-1")
    if len(leaf_hash) != HASH_SIZE:
        raise ProofRequestError(f"leaf hash length, got {len(leaf_hash)}, expected {HASH_SIZE}")
    nodes = [(0, index, leaf_hash)]
    level, position, current = 0, index, leaf_hash
    while position & 1:
        current = node_hash(reader.node(level, position - 1), current)
        level, position = level + 1, position >> 1
        nodes.append((level, position, current))
    return nodes


class PendingNodes:
    """A :class:`NodeReader` over the nodes of a batch being appended, then ``base``'s.

    A store appends several leaves in one transaction before any node is readable from
    it; the batch's own nodes are served from here.
    """

    def __init__(self, base: NodeReader) -> None:
        self._base = base
        self._new: dict[tuple[int, int], bytes] = {}

    def node(self, level: int, index: int) -> bytes:
        found = self._new.get((level, index))
        return found if found is not None else self._base.node(level, index)

    def append(self, index: int, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """``new_nodes_for_append`` for leaf ``index``, remembering the nodes it returns."""
        nodes = new_nodes_for_append(index, leaf, self)
        for level, position, value in nodes:
            self._new[(level, position)] = value
        return nodes


class CompactRange:
    """The right frontier of a growing tree: O(log n) hashes, the root at every size.

    ``node`` serves exactly the frontier (the complete subtrees the size's binary form
    names), which are the only nodes ``new_nodes_for_append`` reads.
    """

    def __init__(self) -> None:
        self.size = 0
        self._frontier: dict[int, tuple[int, bytes]] = {}  # level -> (index, hash)

    @classmethod
    def at(cls, size: int, reader: NodeReader) -> CompactRange:
        """The frontier at ``size`` read from stored complete subtrees (<= log2 n reads).

        The hashes are taken as ``reader`` gives them: compare ``root()`` with a trusted
        root before relying on them.
        """
        frontier = cls()
        offset = 0
        for level in reversed(range(size.bit_length())):
            if size >> level & 1:
                index = offset >> level
                frontier._frontier[level] = (index, reader.node(level, index))
                offset += 1 << level
        frontier.size = size
        return frontier

    def node(self, level: int, index: int) -> bytes:
        held = self._frontier.get(level)
        if held is None or held[0] != index:
            raise KeyError(f"tree node, got ({level}, {index}), expected a frontier node")
        return held[1]

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add a leaf hash; return every complete subtree node it closes (leaf first)."""
        closed = new_nodes_for_append(self.size, leaf, self)
        for level, _position, _value in closed[:-1]:
            del self._frontier[level]  # merged into the node one level up
        level, position, value = closed[-1]
        self._frontier[level] = (position, value)
        self.size += 1
        return closed

    def copy(self) -> CompactRange:
        """An independent frontier at the same size."""
        other = CompactRange()
        other.size, other._frontier = self.size, dict(self._frontier)
        return other

    def extend(self, leaves: bytes) -> list[tuple[int, bytes]]:
        """Add the leaf hashes ``leaves`` (32 bytes each, in order) at once.

        Returns, level by level from the leaves up, ``(index of the first node, the nodes'
        hashes concatenated)`` of every complete subtree node they close: exactly the
        nodes ``append`` of each leaf in turn would return, grouped by level (level ``i``
        is the list's item ``i``). One pass per level, no tuple per node.
        """
        count, rest = divmod(len(leaves), HASH_SIZE)
        if rest or self.size + count > MAX_TREE_SIZE:
            raise ProofRequestError(
                f"leaf hashes, got {len(leaves)} bytes at size {self.size},"
                f" expected a multiple of {HASH_SIZE} within 2**64-1 leaves"
            )
        frontier, sha, prefix = self._frontier, hashlib.sha256, _NODE_PREFIX
        nodes = [leaves[at : at + HASH_SIZE] for at in range(0, len(leaves), HASH_SIZE)]
        level, first = 0, self.size  # ``first``: index of nodes[0] on its level
        closed: list[tuple[int, bytes]] = []
        while nodes:
            closed.append((first, b"".join(nodes)))
            if first & 1:  # its left sibling closed before: the frontier's node there
                nodes.insert(0, self.node(level, first - 1))
                first -= 1
            # An odd count leaves the last node without its right sibling: the frontier's.
            if len(nodes) & 1:
                frontier[level] = (first + len(nodes) - 1, nodes[-1])
            else:
                frontier.pop(level, None)
            nodes = [
                sha(prefix + nodes[at] + nodes[at + 1]).digest()
                for at in range(0, len(nodes) - 1, 2)
            ]
            level, first = level + 1, first >> 1
        self.size += count
        return closed

    def root(self) -> bytes:
        if not self._frontier:
            return EMPTY_ROOT
        levels = sorted(self._frontier)  # the lowest subtree is the rightmost
        acc = self._frontier[levels[0]][1]
        for level in levels[1:]:
            acc = node_hash(self._frontier[level][1], acc)
        return acc


class MemoryTree:
    """In-memory :class:`NodeReader` that stores nodes exactly as the SQLite store does."""

    def __init__(self) -> None:
        self._levels: list[list[bytes]] = [[]]

    @property
    def size(self) -> int:
        return len(self._levels[0])

    def node(self, level: int, index: int) -> bytes:
        if 0 <= level < len(self._levels) and 0 <= index < len(self._levels[level]):
            return self._levels[level][index]
        raise KeyError(f"tree node, got ({level}, {index}), expected a stored complete subtree")

    def append_hash(self, leaf: bytes) -> int:
        """Append a leaf hash; return its index."""
        index = self.size
        for level, position, value in new_nodes_for_append(index, leaf, self):
            if level == len(self._levels):
                self._levels.append([])
            # Nodes arrive in order, so each lands at the end of its level.
            assert len(self._levels[level]) == position
            self._levels[level].append(value)
        return index

    def append(self, data: bytes) -> int:
        """Append an entry (hashed with :func:`leaf_hash`); return its index."""
        return self.append_hash(leaf_hash(data))

    def root(self, size: int | None = None) -> bytes:
        """Root at ``size`` (default: the current size)."""
        return root(self.size if size is None else size, self)


# --------------------------------------------------------------------------- verification


def _check_verify_size(size: int, what: str) -> None:
    if not _is_int(size) or not 0 <= size <= MAX_TREE_SIZE:
        raise ProofError(
            ProofFailure.BAD_SIZE, f"{what}, got {size!r}, expected an integer in [0, 2**64-1]"
        )


def _check_hash(value: bytes, what: str) -> None:
    if not isinstance(value, bytes) or len(value) != HASH_SIZE:
        got = f"{len(value)} bytes" if isinstance(value, bytes) else type(value).__name__
        raise ProofError(ProofFailure.BAD_HASH_LENGTH, f"{what}, got {got}, expected 32 bytes")


def _check_proof_hashes(proof: Sequence[bytes]) -> None:
    for position, element in enumerate(proof):
        _check_hash(element, f"proof[{position}] length")


def inclusion_proof_length(index: int, size: int) -> int:
    """Exact length of PATH(index, D[0:size]) for ``0 <= index < size``."""
    # Below the level where index and size-1 diverge the path runs through complete
    # subtrees (one sibling per level); above it, one sibling per left turn (set bit).
    inner = (index ^ (size - 1)).bit_length()
    return inner + (index >> inner).bit_count()


def consistency_proof_length(old_size: int, new_size: int) -> int:
    """Exact length of PROOF(old_size, D[0:new_size]) for ``0 < old_size <= new_size``."""
    if old_size == new_size:
        return 0
    last = old_size - 1
    inner = (last ^ (new_size - 1)).bit_length()
    border = (last >> inner).bit_count()
    trailing_zeros = (old_size & -old_size).bit_length() - 1
    # The complete subtree of 2**trailing_zeros leaves ending at old_size is sent as one
    # seed hash, unless it is the whole old tree (old_size a power of two).
    seed = 0 if old_size == 1 << trailing_zeros else 1
    return seed + inner - trailing_zeros + border


def root_from_inclusion_proof(
    index: int, size: int, leaf_hash: bytes, proof: Sequence[bytes]
) -> bytes:
    """Recompute the root implied by an inclusion proof (RFC 9162 s2.1.3.2 steps 1-4).

    Raises :class:`ProofError` for a size/index out of range, a hash that is not 32 bytes
    or a proof of the wrong length; the caller compares the result with a trusted root.
    """
    _check_verify_size(size, "tree size")
    _check_verify_size(index, "leaf index")
    if size == 0 or index >= size:
        raise ProofError(
            ProofFailure.INDEX_OUT_OF_RANGE, f"leaf index, got {index}, expected < tree size {size}"
        )
    _check_hash(leaf_hash, "leaf hash length")
    _check_proof_hashes(proof)
    expected = inclusion_proof_length(index, size)
    if len(proof) != expected:
        raise ProofError(
            ProofFailure.WRONG_PROOF_LENGTH,
            f"inclusion proof length for leaf {index} of {size}, got {len(proof)}, "
            f"expected {expected}",
        )
    fn, sn, r = index, size - 1, leaf_hash
    for p in proof:
        if sn == 0:
            raise ProofError(ProofFailure.WRONG_PROOF_LENGTH, "inclusion proof, got extra hashes")
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(ProofFailure.WRONG_PROOF_LENGTH, "inclusion proof, got too few hashes")
    return r


def verify_inclusion(
    index: int, size: int, leaf_hash: bytes, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that ``leaf_hash`` is leaf ``index`` of the tree of ``size`` with ``root``.

    Returns None on success; raises :class:`ProofError` otherwise.
    """
    _check_verify_size(size, "tree size")
    _check_verify_size(index, "leaf index")
    _check_hash(root, "root hash length")
    computed = root_from_inclusion_proof(index, size, leaf_hash, proof)
    if not hmac.compare_digest(computed, root):
        raise ProofError(
            ProofFailure.ROOT_MISMATCH,
            f"inclusion proof root, got {computed.hex()}, expected {root.hex()}",
        )


def verify_consistency(
    old_size: int, new_size: int, old_root: bytes, new_root: bytes, proof: Sequence[bytes]
) -> None:
    """Check that the tree (old_size, old_root) is a prefix of (new_size, new_root).

    RFC 9162 s2.1.4.2 for ``0 < old_size < new_size``; ``old_size == new_size`` needs an
    empty proof and equal roots; ``old_size == 0`` is rejected (nothing to prove, and a
    verifier that accepts it would accept any new tree). Raises :class:`ProofError`.
    """
    _check_verify_size(old_size, "old size")
    _check_verify_size(new_size, "new size")
    if old_size > new_size:
        raise ProofError(
            ProofFailure.SIZE_DECREASED, f"tree size, got {old_size} -> {new_size}, expected growth"
        )
    if old_size == 0:
        raise ProofError(
            ProofFailure.OLD_SIZE_ZERO,
            "old size, got 0, expected > 0 (an empty tree is consistent with every tree)",
        )
    _check_hash(old_root, "old root length")
    _check_hash(new_root, "new root length")
    _check_proof_hashes(proof)
    if old_size == new_size:
        if proof:
            raise ProofError(
                ProofFailure.NONEMPTY_PROOF_FOR_EQUAL_SIZES,
                f"consistency proof for equal sizes, got {len(proof)} hashes, expected 0",
            )
        if not hmac.compare_digest(old_root, new_root):
            raise ProofError(
                ProofFailure.ROOT_MISMATCH,
                f"root at size {new_size}, got {new_root.hex()}, expected {old_root.hex()}",
            )
        return
    expected = consistency_proof_length(old_size, new_size)
    if len(proof) != expected:
        raise ProofError(
            ProofFailure.WRONG_PROOF_LENGTH,
            f"consistency proof length for {old_size} -> {new_size}, got {len(proof)}, "
            f"expected {expected}",
        )
    path = list(proof)
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            raise ProofError(ProofFailure.WRONG_PROOF_LENGTH, "consistency proof, got extra hashes")
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            while not fn & 1 and fn != 0:
                fn, sn = fn >> 1, sn >> 1
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    if sn != 0:
        raise ProofError(ProofFailure.WRONG_PROOF_LENGTH, "consistency proof, got too few hashes")
    if not hmac.compare_digest(fr, old_root):
        raise ProofError(
            ProofFailure.OLD_ROOT_MISMATCH,
            f"old root from proof, got {fr.hex()}, expected {old_root.hex()}",
        )
    if not hmac.compare_digest(sr, new_root):
        raise ProofError(
            ProofFailure.NEW_ROOT_MISMATCH,
            f"new root from proof, got {sr.hex()}, expected {new_root.hex()}",
        )
