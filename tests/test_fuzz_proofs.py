"""Fuzzing proof verification where a user meets it: the JSON the CLI prints.

tests/test_merkle_properties.py already mutates proof *elements* against an independent
verifier. This file adds:
* the auditor's procedure on ``proof inclusion --json`` / ``proof consistency --json``
  documents from a real ledger (trust only the signed checkpoint notes): every mutation of
  any field — sizes, indices, leaf record, hashes, proof lists, notes — is rejected;
* ``verify_inclusion`` / ``verify_consistency`` on arbitrary integers (negative, beyond
  2**64, bools) and byte strings of any length: only ``ProofError``, never acceptance of
  hashes that are not the tree's.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.encoding.canonical import require_canonical
from ledger.errors import LedgerError
from ledger.log.merkle import (
    MemoryTree,
    ProofError,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    verify_consistency,
    verify_inclusion,
)
from ledger.log.note import open_checkpoint

FUZZ = settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
HEX64 = re.compile(r"[0-9a-f]{64}\Z")
ENTRIES = 37
CHECKPOINT_AT = (1, 2, 5, 8, 13, 21, 32, 37)


class Rejected(Exception):
    """The auditor refuses the document."""


@pytest.fixture(scope="module")
def proofs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A ledger with checkpoints at several sizes, and CLI-shaped proofs from it."""
    from ledger.cli.core import authority_key_path, log_key_path
    from ledger.create import initialise
    from ledger.log.checkpoints import make_checkpoint, prove_consistency, prove_inclusion
    from ledger.store.prepared import prepare_blob
    from ledger.store.sqlite import open_store
    from ledger.trust.keys import load_private_key

    db = tmp_path_factory.mktemp("fuzz-proofs") / "ledger.db"
    info = initialise(db, None, log_key_path(db), authority_key_path(db))
    key = load_private_key(log_key_path(db))
    entries: list[tuple[int, str]] = []
    sizes: list[int] = []  # each checkpoint is logged by the next append, so sizes shift
    with open_store(db) as store:
        for i in range(ENTRIES):
            entries += [
                (r.entry.seq, r.entry.digest) for r in store.append_many([prepare_blob(b"%d" % i)])
            ]
            if i + 1 in CHECKPOINT_AT:
                sizes.append(make_checkpoint(store, key).size)
        inclusions = [
            (digest, prove_inclusion(store, digest, size).to_json())
            for seq, digest in entries
            for size in sizes
            if seq < size
        ]
        consistencies = [
            prove_consistency(store, old, new).to_json()
            for old in sizes
            for new in sizes
            if old <= new
        ]
    return {"vkey": info["log_verifier_key"], "inclusion": inclusions, "consistency": consistencies}


def _hash(value: Any) -> bytes:
    if not isinstance(value, str) or not HEX64.match(value):
        raise Rejected(f"hash, got {value!r}, expected 64 lowercase hex")
    return bytes.fromhex(value)


def _hashes(values: Any) -> list[bytes]:
    if not isinstance(values, list):
        raise Rejected("proof is not a list")
    return [_hash(v) for v in values]


def _note(value: Any, vkey: str) -> tuple[int, bytes]:
    if not isinstance(value, str):
        raise Rejected("no signed checkpoint to anchor the proof")
    try:
        signed = open_checkpoint(value.encode("utf-8", "surrogatepass"), vkey)
    except LedgerError as exc:
        raise Rejected(str(exc)) from None
    return signed.size, signed.root_hash


def audit_inclusion(doc: dict[str, Any], vkey: str, digest: str) -> None:
    """Accept an inclusion proof of ``digest`` only as the signed checkpoint backs it."""
    size, root = _note(doc.get("checkpoint"), vkey)
    if doc.get("tree_size") != size or _hash(doc.get("root")) != root:
        raise Rejected("size or root differs from the signed checkpoint")
    leaf_text = doc.get("leaf")
    if not isinstance(leaf_text, str):
        raise Rejected("leaf is not a string")
    leaf = leaf_text.encode("utf-8", "surrogatepass")
    try:
        record = require_canonical(leaf)
    except LedgerError as exc:
        raise Rejected(str(exc)) from None
    claimed = {k: doc.get(k) for k in ("digest", "index", "kind", "appended_at")}
    if (
        record
        != {
            "digest": digest,
            "seq": claimed["index"],
            "kind": claimed["kind"],
            "appended_at": claimed["appended_at"],
        }
        or claimed["digest"] != digest
    ):
        raise Rejected("leaf record does not name the object")
    if _hash(doc.get("leaf_hash")) != leaf_hash(leaf):
        raise Rejected("leaf hash")
    try:
        verify_inclusion(record["seq"], size, leaf_hash(leaf), _hashes(doc.get("proof")), root)
    except ProofError as exc:
        raise Rejected(str(exc)) from None


def audit_consistency(doc: dict[str, Any], vkey: str) -> None:
    """Accept a consistency proof only between two signed checkpoints."""
    old = _note(doc.get("old_checkpoint"), vkey)
    new = _note(doc.get("new_checkpoint"), vkey)
    if (doc.get("old_size"), doc.get("new_size")) != (old[0], new[0]):
        raise Rejected("sizes differ from the signed checkpoints")
    if (_hash(doc.get("old_root")), _hash(doc.get("new_root"))) != (old[1], new[1]):
        raise Rejected("roots differ from the signed checkpoints")
    try:
        verify_consistency(old[0], new[0], old[1], new[1], _hashes(doc.get("proof")))
    except ProofError as exc:
        raise Rejected(str(exc)) from None


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _mutate_value(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, bool) or value is None:
        return data.draw(st.sampled_from([0, "", [], "null", not value]))
    if isinstance(value, int):
        return data.draw(
            st.sampled_from([value + 1, value - 1, -value - 1, 2**64, value * 2 + 1, str(value)])
        )
    if isinstance(value, str):
        if not value:
            return data.draw(st.sampled_from(["0", " ", None]))
        at = data.draw(st.integers(0, len(value) - 1))
        choice = data.draw(st.sampled_from(["flip", "drop", "add", "upper", "trail"]))
        if choice == "flip":
            c = data.draw(st.characters(codec="utf-8").filter(lambda c: c != value[at]))
            return value[:at] + c + value[at + 1 :]
        if choice == "drop":
            return value[:at] + value[at + 1 :]
        if choice == "add":
            return value[:at] + data.draw(st.characters(codec="utf-8")) + value[at:]
        if choice == "upper" and value.upper() != value:
            return value.upper()
        return value + data.draw(st.sampled_from(["\n", " ", "0", "\x00"]))
    if isinstance(value, list):
        choice = data.draw(st.sampled_from(["drop", "dup", "add", "reverse", "none"]))
        if choice == "drop" and value:
            at = data.draw(st.integers(0, len(value) - 1))
            return value[:at] + value[at + 1 :]
        if choice == "dup" and value:
            return [*value, value[-1]]
        if choice == "add":
            return [data.draw(st.sampled_from(["0" * 64, "e3" * 32])), *value]
        if choice == "reverse" and len(set(value)) > 1:
            return value[::-1]
        return None
    return None


def _mutate(doc: dict[str, Any], data: st.DataObject) -> dict[str, Any]:
    mutated = copy.deepcopy(doc)
    for _ in range(data.draw(st.integers(1, 2))):
        path = data.draw(st.sampled_from([p for p in _paths(mutated) if p]))
        parent = mutated
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = _mutate_value(parent[path[-1]], data)
    return mutated


def test_unmutated_cli_proofs_are_accepted(proofs: dict[str, Any]) -> None:
    for digest, doc in proofs["inclusion"]:
        audit_inclusion(doc, proofs["vkey"], digest)
    for doc in proofs["consistency"]:
        audit_consistency(doc, proofs["vkey"])
    assert len(proofs["inclusion"]) > 100 and len(proofs["consistency"]) > 20


@FUZZ
@given(st.data())
def test_every_mutation_of_an_inclusion_proof_is_rejected(
    proofs: dict[str, Any], data: st.DataObject
) -> None:
    digest, doc = data.draw(st.sampled_from(proofs["inclusion"]))
    mutated = _mutate(doc, data)
    if mutated == doc:
        return
    with pytest.raises(Rejected):
        audit_inclusion(mutated, proofs["vkey"], digest)


@FUZZ
@given(st.data())
def test_every_mutation_of_a_consistency_proof_is_rejected(
    proofs: dict[str, Any], data: st.DataObject
) -> None:
    doc = data.draw(st.sampled_from(proofs["consistency"]))
    mutated = _mutate(doc, data)
    if mutated == doc:
        return
    with pytest.raises(Rejected):
        audit_consistency(mutated, proofs["vkey"])


@FUZZ
@given(st.data())
def test_a_proof_for_one_object_never_proves_another(
    proofs: dict[str, Any], data: st.DataObject
) -> None:
    digest, doc = data.draw(st.sampled_from(proofs["inclusion"]))
    other = data.draw(st.sampled_from([d for d, _ in proofs["inclusion"] if d != digest]))
    with pytest.raises(Rejected):
        audit_inclusion(doc, proofs["vkey"], other)


# --------------------------------------------------------------------------- raw verifiers

TREE = MemoryTree()
for _i in range(300):
    TREE.append(b"leaf %d" % _i)

any_int = st.one_of(
    st.integers(-3, 310),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**64 - 1, 2**64, 2**63, -(2**63)]),
    st.booleans(),
)
any_hash = st.one_of(st.binary(min_size=32, max_size=32), st.binary(max_size=40))


@FUZZ
@given(any_int, any_int, any_hash, st.lists(any_hash, max_size=12), any_hash)
def test_inclusion_verifier_on_arbitrary_input(
    index: int, size: int, leaf: bytes, proof: list[bytes], root: bytes
) -> None:
    try:
        verify_inclusion(index, size, leaf, proof, root)
    except ProofError:
        return
    # Accepted: only well-typed, in-range input (the hashes then chain to the root).
    assert type(index) is int and type(size) is int
    assert 0 <= index < size <= 2**64 - 1
    assert all(len(h) == 32 for h in (leaf, root, *proof))


@FUZZ
@given(st.integers(1, 300), st.data())
def test_inclusion_verifier_rejects_random_proofs_for_real_trees(
    size: int, data: st.DataObject
) -> None:
    index = data.draw(st.integers(0, size - 1))
    real = inclusion_proof(index, size, TREE)
    fake = data.draw(st.lists(st.binary(min_size=32, max_size=32), max_size=len(real) + 2))
    if fake == real:
        return
    with pytest.raises(ProofError):
        verify_inclusion(index, size, leaf_hash(b"leaf %d" % index), fake, TREE.root(size))


@FUZZ
@given(any_int, any_int, any_hash, any_hash, st.lists(any_hash, max_size=12))
def test_consistency_verifier_on_arbitrary_input(
    old: int, new: int, old_root: bytes, new_root: bytes, proof: list[bytes]
) -> None:
    try:
        verify_consistency(old, new, old_root, new_root, proof)
    except ProofError:
        return
    # Accepted: only well-typed, in-range input (the hashes then chain to both roots).
    assert type(old) is int and type(new) is int
    assert 0 < old <= new <= 2**64 - 1
    assert all(len(h) == 32 for h in (old_root, new_root, *proof))
    if old == new:
        assert old_root == new_root and proof == []


@FUZZ
@given(st.integers(1, 300), st.data())
def test_consistency_verifier_rejects_random_proofs_for_real_trees(
    new: int, data: st.DataObject
) -> None:
    old = data.draw(st.integers(1, new))
    real = consistency_proof(old, new, TREE)
    fake = data.draw(st.lists(st.binary(min_size=32, max_size=32), max_size=len(real) + 2))
    if fake == real:
        return
    with pytest.raises(ProofError):
        verify_consistency(old, new, TREE.root(old), TREE.root(new), fake)
