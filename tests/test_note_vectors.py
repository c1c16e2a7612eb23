"""ledger.log.note against third-party values from transparency-dev/formats (Apache-2.0).

Vendored in tests/vectors/merkle/signed-note/ (see PROVENANCE.md there): a real
sum.golang.org checkpoint with three witness cosignatures, and four key pairs in the
golang.org/x/mod/sumdb/note string format.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.log.note import (
    Checkpoint,
    CheckpointError,
    NoteError,
    NoteFailure,
    note_key_id,
    open_checkpoint,
    parse_checkpoint,
    parse_note,
    parse_verifier_key,
    sign_note,
    verifier_key,
    verify_note,
)

VECTORS = Path(__file__).resolve().parent / "vectors" / "merkle" / "signed-note"
DATA: dict[str, Any] = json.loads((VECTORS / "transparency-dev-formats.json").read_text("utf-8"))
SUMDB: dict[str, Any] = DATA["sumdb_checkpoint"]
NOTE = SUMDB["note"].encode("utf-8")
PAIRS: list[dict[str, str]] = DATA["key_pairs"]["pairs"]


def _seed(private_key_string: str) -> bytes:
    # PRIVATE+KEY+<name>+<hex id>+base64(0x01 || seed); the base64 may itself hold '+'.
    parts = private_key_string.split("+", 4)
    assert parts[:2] == ["PRIVATE", "KEY"]
    raw = base64.b64decode(parts[4], validate=True)
    assert raw[0] == 0x01 and len(raw) == 33
    return raw[1:]


def test_sumdb_checkpoint_verifies_and_parses() -> None:
    checkpoint = open_checkpoint(NOTE, SUMDB["verifier_key"], origin=SUMDB["origin"])
    assert checkpoint == Checkpoint(
        SUMDB["origin"], SUMDB["size"], base64.b64decode(SUMDB["root_hash_b64"])
    )
    body = verify_note(NOTE, SUMDB["verifier_key"])
    assert checkpoint.body() == body
    assert body + b"\n" == NOTE[: len(body) + 1]


def test_sumdb_cosignatures_and_unknown_signatures() -> None:
    lines = [c["signature_line"] for c in SUMDB["cosigners"]] + SUMDB["random_signature_lines"]
    cosigned = NOTE + "".join(line + "\n" for line in lines).encode("utf-8")
    body = parse_checkpoint(verify_note(NOTE, SUMDB["verifier_key"])).body()
    # The log key still verifies with five extra signatures (two from unknown keys).
    assert verify_note(cosigned, SUMDB["verifier_key"]) == body
    for cosigner in SUMDB["cosigners"]:
        assert verify_note(cosigned, cosigner["verifier_key"]) == body
        with pytest.raises(NoteError) as info:
            verify_note(NOTE, cosigner["verifier_key"])
        assert info.value.reason is NoteFailure.UNKNOWN_KEY
    assert [s.name for s in parse_note(cosigned).signatures] == [
        "sum.golang.org", "monkeys", "bananas", "witness", "random1", "random2",
    ]  # fmt: skip


def test_sumdb_tampering_is_detected() -> None:
    tampered = NOTE.replace(b"6476701", b"6476702")
    with pytest.raises(NoteError) as info:
        verify_note(tampered, SUMDB["verifier_key"])
    assert info.value.reason is NoteFailure.BAD_SIGNATURE
    with pytest.raises(CheckpointError):
        open_checkpoint(NOTE, SUMDB["verifier_key"], origin="sum.golang.org")


@pytest.mark.parametrize("pair", PAIRS, ids=[p["name"] for p in PAIRS])
def test_key_pairs_give_upstream_verifier_keys(pair: dict[str, str]) -> None:
    private_key = Ed25519PrivateKey.from_private_bytes(_seed(pair["private_key"]))
    public_key = private_key.public_key()
    assert verifier_key(pair["name"], public_key) == pair["verifier_key"]
    name, kid, parsed = parse_verifier_key(pair["verifier_key"])
    assert name == pair["name"]
    assert kid == note_key_id(name, public_key) == bytes.fromhex(pair["verifier_key"].split("+")[1])
    assert parsed.public_bytes_raw() == public_key.public_bytes_raw()
    # Our signature under an upstream key string verifies; the others' keys ignore it.
    note = sign_note(NOTE[: NOTE.index(b"\n\n") + 1], pair["name"], private_key)
    verify_note(note, pair["verifier_key"])
    for other in PAIRS:
        if other is not pair:
            with pytest.raises(NoteError):
                verify_note(note, other["verifier_key"])


CASES: list[dict[str, Any]] = DATA["checkpoint_bodies"]["cases"]
ROOT = bytes(range(32))
ROOT_B64 = base64.b64encode(ROOT).decode()


@pytest.mark.parametrize("case", CASES, ids=[c["desc"] for c in CASES])
def test_upstream_checkpoint_bodies(case: dict[str, Any]) -> None:
    body: str = case["body"]
    # Every upstream body is rejected as is: non-32-byte root hashes (upstream allows
    # them) or a case upstream rejects too.
    with pytest.raises(CheckpointError):
        parse_checkpoint(body.encode())
    if not case["upstream_ok"]:
        return
    # With a 32-byte root the upstream-valid bodies parse, trailing lines becoming
    # extension lines; empty trailing lines stay rejected (C2SP: extensions non-empty).
    lines = body.split("\n")
    lines[2] = ROOT_B64
    fixed = "\n".join(lines).encode()
    extensions = tuple(lines[3:-1])
    if "" in extensions:
        with pytest.raises(CheckpointError):
            parse_checkpoint(fixed)
    else:
        checkpoint = parse_checkpoint(fixed)
        assert (checkpoint.origin, checkpoint.size, checkpoint.root_hash) == (
            lines[0],
            int(lines[1]),
            ROOT,
        )
        assert checkpoint.extensions == extensions
        assert checkpoint.body() == fixed
