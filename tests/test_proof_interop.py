"""CLI-printed proofs and checkpoints verify under independent code written here.

The verifiers below follow RFC 9162 s2.1.3.2 and s2.1.4.2 step by step and the C2SP
signed-note rules, using only hashlib and cryptography: nothing from ``ledger.log.merkle`` or
``ledger.log.note``. The ledger is built with ``append_many`` of blobs and checkpointed at
sizes from 1 to a few thousand, powers of two and their neighbours.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer.main
import typer.testing
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.prepared import prepare_blob
from ledger.store.sqlite import open_store

# Sizes at which a checkpoint is signed. Each checkpoint is logged as the next entry
# (ledger.log.checkpoint_record), so consecutive sizes are at least 2 apart; powers of
# two, 2**k - 1 and 2**k + 1 are all represented.
SIZES = [1, 3, 5, 7, 9, 16, 31, 33, 64, 100, 127, 129, 255, 257]
SIZES += [1000, 1023, 1025, 2048, 3001]

# ----------------------------------------------------------------- independent RFC 9162


def _sha(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def _node(left: bytes, right: bytes) -> bytes:
    return _sha(b"\x01" + left + right)


def rfc_verify_inclusion(
    leaf_index: int, tree_size: int, leaf: bytes, path: list[bytes], root: bytes
) -> bool:
    """RFC 9162 s2.1.3.2, literally."""
    if leaf_index >= tree_size:
        return False
    fn, sn, r = leaf_index, tree_size - 1, leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = _node(p, r)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            r = _node(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == root


def rfc_verify_consistency(
    first: int, second: int, first_hash: bytes, second_hash: bytes, path: list[bytes]
) -> bool:
    """RFC 9162 s2.1.4.2, literally (equal sizes: empty proof and equal roots)."""
    if first == second:
        return not path and first_hash == second_hash
    if not path:
        return False
    if first & (first - 1) == 0:
        path = [first_hash, *path]
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = _node(c, fr)
            sr = _node(c, sr)
            if not fn & 1:
                while not (fn & 1 or fn == 0):
                    fn >>= 1
                    sn >>= 1
        else:
            sr = _node(sr, c)
        fn >>= 1
        sn >>= 1
    return fr == first_hash and sr == second_hash and sn == 0


# ----------------------------------------------------------------- independent signed note


@dataclass(frozen=True)
class Head:
    origin: str
    size: int
    root: bytes


def open_note(note: bytes, vkey: str) -> Head:
    """C2SP signed note + tlog-checkpoint, checked with hashlib and cryptography only."""
    name, kid_hex, material_b64 = vkey.split("+", 2)  # base64 may hold "+"
    material = base64.b64decode(material_b64, validate=True)
    assert len(material) == 33 and material[0] == 0x01
    kid = _sha(name.encode() + b"\n" + material)[:4]
    assert kid.hex() == kid_hex
    text = note.decode("utf-8")
    body, _, sigs = text.rpartition("\n\n")
    body += "\n"
    lines = sigs.split("\n")
    assert lines[-1] == "" and len(lines) == 2, "one signature line, newline-terminated"
    dash, sig_name, blob_b64 = lines[0].split(" ")
    assert dash == "\u2014" and sig_name == name
    blob = base64.b64decode(blob_b64, validate=True)
    assert blob[:4] == kid and len(blob) == 68
    try:
        Ed25519PublicKey.from_public_bytes(material[1:]).verify(blob[4:], body.encode())
    except InvalidSignature:
        raise AssertionError("checkpoint signature does not verify") from None
    origin, size, root_b64, end = body.split("\n")
    assert end == "" and origin == name
    root = base64.b64decode(root_b64, validate=True)
    assert len(root) == 32 and str(int(size)) == size
    return Head(origin, int(size), root)


# ----------------------------------------------------------------- the ledger


@dataclass
class Built:
    db: Path
    vkey: str
    digests: list[str]
    kinds: list[str]
    heads: dict[int, Head]


@pytest.fixture(scope="module")
def cli() -> Iterator[CliRunner]:
    # typer rebuilds the click command on every invoke; build it once for many calls.
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(typer.testing, "_get_command", functools.cache(typer.main.get_command))
        yield CliRunner()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, cli: CliRunner) -> Built:
    runner = cli
    db = tmp_path_factory.mktemp("interop") / "ledger.db"
    init = runner.invoke(app, ["init", "--db", str(db)])
    assert init.exit_code == 0, init.output
    vkey = init.stdout.splitlines()[-1]  # the verifier key as printed for auditors
    heads: dict[int, Head] = {}
    blobs = 0
    for size in SIZES:
        with open_store(db) as store:
            # The first append after a checkpoint logs it first, as one more entry.
            count = size - store.size() - (store.checkpoint_at(store.size()) is not None)
            assert count >= 1
            store.append_many([prepare_blob(b"leaf %d" % i) for i in range(blobs, blobs + count)])
            blobs += count
            assert store.size() == size
        out = runner.invoke(app, ["checkpoint", "--db", str(db), "--json"])
        assert out.exit_code == 0, out.output
        info = json.loads(out.stdout)
        head = open_note(info["note"].encode(), vkey)
        assert (head.size, head.root.hex()) == (size, info["root"])
        heads[size] = head
    with open_store(db) as store:
        entries = list(store.entries())
    return Built(db, vkey, [e.digest for e in entries], [e.kind for e in entries], heads)


def _json(cli: CliRunner, *args: str) -> dict[str, Any]:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output)
    value = json.loads(result.stdout)
    assert isinstance(value, dict)
    return value


def test_checkpoints_are_signed_notes_under_the_printed_key(built: Built) -> None:
    assert sorted(built.heads) == SIZES
    origins = {head.origin for head in built.heads.values()}
    assert origins == {built.vkey.split("+")[0]}
    # The negative control: a flipped byte in a note is refused by the independent check.
    with open_store(built.db) as store:
        row = store.checkpoint_at(SIZES[-1])
    assert row is not None
    note = row.note
    tampered = note.replace(b"\n3001\n", b"\n3000\n")
    with pytest.raises(AssertionError):
        open_note(tampered, built.vkey)


def test_inclusion_proofs_verify_independently(built: Built, cli: CliRunner) -> None:
    rng = random.Random(9162)
    checked = 0
    for size in SIZES:
        head = built.heads[size]
        indices = {0, size - 1, size // 2, rng.randrange(size)}
        for index in sorted(indices):
            digest = built.digests[index]
            proof = _json(
                cli,
                "proof",
                "inclusion",
                digest,
                "--db",
                str(built.db),
                "--size",
                str(size),
                "--json",
            )
            assert proof["tree_size"] == size and proof["index"] == index
            assert proof["checkpoint"] is not None
            assert open_note(str(proof["checkpoint"]).encode(), built.vkey) == head
            leaf_bytes = str(proof["leaf"]).encode()
            record = json.loads(leaf_bytes)
            expected = (digest, index, built.kinds[index])
            assert (record["digest"], record["seq"], record["kind"]) == expected
            leaf = _sha(b"\x00" + leaf_bytes)
            assert proof["leaf_hash"] == leaf.hex()
            path = [bytes.fromhex(h) for h in proof["proof"]]
            assert rfc_verify_inclusion(index, size, leaf, path, head.root)
            # Negative controls, so a verifier that accepts everything would fail here.
            assert not rfc_verify_inclusion(index, size, _sha(b"other"), path, head.root)
            if path:
                bad = [path[0][:-1] + bytes([path[0][-1] ^ 1]), *path[1:]]
                assert not rfc_verify_inclusion(index, size, leaf, bad, head.root)
                assert not rfc_verify_inclusion(index, size, leaf, path[:-1], head.root)
            checked += 1
    assert checked > 3 * len(SIZES)


def test_default_inclusion_proof_uses_the_newest_checkpoint(built: Built, cli: CliRunner) -> None:
    proof = _json(cli, "proof", "inclusion", built.digests[5], "--db", str(built.db), "--json")
    head = built.heads[SIZES[-1]]
    assert proof["tree_size"] == head.size
    leaf = _sha(b"\x00" + str(proof["leaf"]).encode())
    path = [bytes.fromhex(h) for h in proof["proof"]]
    assert rfc_verify_inclusion(5, head.size, leaf, path, head.root)


def test_consistency_proofs_verify_independently(built: Built, cli: CliRunner) -> None:
    rng = random.Random(6962)
    pairs = set(itertools.pairwise(SIZES))
    pairs |= {(1, SIZES[-1]), (SIZES[-1], SIZES[-1]), (1023, 2048), (3, 5)}
    for _ in range(15):
        a, b = sorted(rng.sample(SIZES, 2))
        pairs.add((a, b))
    for old, new in sorted(pairs):
        proof = _json(
            cli, "proof", "consistency", str(old), str(new), "--db", str(built.db), "--json"
        )
        assert (proof["old_size"], proof["new_size"]) == (old, new)
        first, second = built.heads[old], built.heads[new]
        assert proof["old_root"] == first.root.hex() and proof["new_root"] == second.root.hex()
        assert open_note(str(proof["new_checkpoint"]).encode(), built.vkey) == second
        assert open_note(str(proof["old_checkpoint"]).encode(), built.vkey) == first
        path = [bytes.fromhex(h) for h in proof["proof"]]
        assert rfc_verify_consistency(old, new, first.root, second.root, path)
        if old != new:
            assert not rfc_verify_consistency(old, new, second.root, second.root, path)
            assert not rfc_verify_consistency(old, new, first.root, first.root, path)
            bad = [*path[:-1], path[-1][:-1] + bytes([path[-1][-1] ^ 1])]
            assert not rfc_verify_consistency(old, new, first.root, second.root, bad)
