"""ledger.log.bundle: tlog-proof text, bundle build/verify, and that every changed byte fails.

Bundles are built from real SQLite ledgers (``build_bundle``) and checked with the pure
``verify_bundle``; the CLI side is in test_bundle_cli.py.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st

# Bundle format, not trust: the attestations' signers are arbitrary keys, so write
# past admission (tests/test_admission.py covers what admission refuses).
from ledger_state import admit_all

from ledger.create import initialise
from ledger.errors import InputError, NotFound
from ledger.log.bundle import (
    MEDIA_TYPE,
    TLOG_PROOF_HEADER,
    BundleError,
    TlogProof,
    TlogProofError,
    build_bundle,
    parse_tlog_proof,
    verify_bundle,
)
from ledger.log.checkpoints import make_checkpoint, merkle
from ledger.log.note import parse_verifier_key, sign_note, verifier_key
from ledger.store.prepared import Prepared, prepare_blob
from ledger.store.sqlite import open_store
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer, load_private_key

# --------------------------------------------------------------------------- tlog-proof

_HASH = st.binary(min_size=32, max_size=32)
_NOTE = b"example.org/log\n5\n" + base64.b64encode(bytes(32)) + b"\n\n\xe2\x80\x94 x AAAA\n"


@given(
    index=st.integers(0, 2**64 - 1),
    hashes=st.lists(_HASH, max_size=64),
    extra=st.none() | st.binary(max_size=40),
)
def test_tlog_proof_round_trip(index: int, hashes: list[bytes], extra: bytes | None) -> None:
    proof = TlogProof(index, tuple(hashes), _NOTE, extra)
    text = proof.encode()
    assert parse_tlog_proof(text) == proof
    lines = text.split(b"\n")
    assert lines[0] == TLOG_PROOF_HEADER.encode()
    assert lines[2 if extra is not None else 1] == b"index %d" % index


def test_tlog_proof_layout_matches_c2sp() -> None:
    # Header, index line, one base64 hash per line (sibling first), empty line, note.
    h0, h1 = bytes(range(32)), bytes(range(32, 64))
    text = TlogProof(6, (h0, h1), _NOTE).encode()
    expected = (
        b"c2sp.org/tlog-proof@v1\nindex 6\n"
        + base64.b64encode(h0)
        + b"\n"
        + base64.b64encode(h1)
        + b"\n\n"
        + _NOTE
    )
    assert text == expected


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"c2sp.org/tlog-proof@v1\nindex 0\n",  # no empty line
        b"c2sp.org/tlog-proof@v1\nindex 0\n\n",  # no checkpoint
        b"c2sp.org/tlog-proof@v2\nindex 0\n\nnote\n",
        b"c2sp.org/tlog-proof@v1\nindex 01\n\nnote\n",
        b"c2sp.org/tlog-proof@v1\nindex -1\n\nnote\n",
        b"c2sp.org/tlog-proof@v1\nindex 18446744073709551616\n\nnote\n",
        b"c2sp.org/tlog-proof@v1\nindex  1\n\nnote\n",
        b"c2sp.org/tlog-proof@v1\nextra !!\nindex 1\n\nnote\n",
        b"c2sp.org/tlog-proof@v1\n\nnote\n",
        b"c2sp.org/tlog-proof@v1\nindex 1\n" + base64.b64encode(bytes(31)) + b"\n\nnote\n",
        # Non-zero padding bits: a second spelling of the same 32 bytes.
        b"c2sp.org/tlog-proof@v1\nindex 1\n" + base64.b64encode(bytes(32))[:-2] + b"B=\n\nn\n",
        b"c2sp.org/tlog-proof@v1\nindex 1\n"
        + (base64.b64encode(bytes(32)) + b"\n") * 65
        + b"\nn\n",
        "c2sp.org/tlog-proof@v1\nindex \u0661\n\nnote\n".encode(),
    ],
)
def test_tlog_proof_rejects(text: bytes) -> None:
    with pytest.raises(TlogProofError):
        parse_tlog_proof(text)


# --------------------------------------------------------------------------- fixtures


@dataclass
class Built:
    db: Path
    vkey: str
    subject: str
    data: bytes  # the encoded bundle
    value: dict[str, Any]


def _ledger(tmp_path: Path) -> tuple[Path, str]:
    db = tmp_path / "ledger.db"
    info = initialise(db, "test.example/log", tmp_path / "log.key", tmp_path / "auth.key")
    return db, str(info["log_verifier_key"])


def _build(tmp_path: Path, *, before: int, blob: bytes, attestations: int, after: int) -> Built:
    db, vkey = _ledger(tmp_path)
    subject = prepare_blob(blob)
    signers = [Ed25519Signer(Ed25519PrivateKey.generate()) for _ in range(attestations)]
    items: list[Prepared] = [prepare_blob(b"before %d" % i) for i in range(before)]
    items.append(subject)
    # Interleave the attestations with other entries so their indices differ in shape.
    for n, signer in enumerate(signers):
        items.append(prepare_blob(b"between %d" % n))
        items.append(attest_prepared(subject, signer))
    items.extend(prepare_blob(b"after %d" % i) for i in range(after))
    with open_store(db, policy=admit_all()) as store:
        store.append_many(items)
        make_checkpoint(store, load_private_key(tmp_path / "log.key"))
        bundle, omitted = build_bundle(store, subject.digest)
    assert omitted == ()
    data = bundle.encode()
    return Built(db, vkey, subject.digest, data, json.loads(data))


@pytest.fixture
def small(tmp_path: Path) -> Built:
    return _build(tmp_path, before=2, blob=b"subject bytes", attestations=2, after=2)


def _encode(value: dict[str, Any]) -> bytes:
    return bytes(rfc8785.dumps(value)) + b"\n"


def _part_of(data: bytes, key: str) -> str:
    with pytest.raises(BundleError) as info:
        verify_bundle(data, key)
    assert info.value.exit_code == 1
    assert str(info.value).startswith(f"bundle part {info.value.part}: ")
    return info.value.part


# --------------------------------------------------------------------------- good bundles


def test_bundle_shape_and_verify(small: Built) -> None:
    value = small.value
    assert small.data == _encode(value)
    assert set(value) == {"media_type", "object", "leaf", "proof", "attestations"}
    assert value["media_type"] == MEDIA_TYPE
    assert value["object"]["digest"] == small.subject
    assert base64.b64decode(value["object"]["data"]) == b"subject bytes"
    assert len(value["attestations"]) == 2
    checkpoints = {parse_tlog_proof(a["proof"].encode()).checkpoint for a in value["attestations"]}
    assert checkpoints == {parse_tlog_proof(value["proof"].encode()).checkpoint}

    verified = verify_bundle(small.data, small.vkey)
    assert verified.subject.digest == small.subject
    assert verified.subject.index == 2
    assert verified.data == b"subject bytes"
    assert [a.index for a in verified.attestations] == [4, 6]
    assert verified.checkpoint.size == 9
    assert verified.checkpoint.origin == "test.example/log"
    # The embedded tlog-proof verifies on its own: leaf = the entry record bytes.
    proof = parse_tlog_proof(value["proof"].encode())
    merkle.verify_inclusion(
        proof.index,
        verified.checkpoint.size,
        merkle.leaf_hash(value["leaf"].encode()),
        proof.hashes,
        verified.checkpoint.root_hash,
    )


def test_json_object_bundle_and_no_attestations(tmp_path: Path) -> None:
    db, vkey = _ledger(tmp_path)
    from ledger.trust.attestation import attest_prepared as attest

    blob = prepare_blob(b"x")
    att = attest(blob, Ed25519Signer(Ed25519PrivateKey.generate()))
    with open_store(db, policy=admit_all()) as store:
        store.append_many([blob, att])
        make_checkpoint(store, load_private_key(tmp_path / "log.key"))
        # The attestation itself is a JSON object: bundle it (it has no attestations).
        bundle, _ = build_bundle(store, att.digest)
    verified = verify_bundle(bundle.encode(), vkey)
    assert verified.subject.kind == "attestation" and verified.attestations == ()
    assert verified.checkpoint.size == 2


def test_build_refuses_without_covering_checkpoint(tmp_path: Path) -> None:
    db, _ = _ledger(tmp_path)
    with open_store(db, policy=admit_all()) as store:
        store.append_many([prepare_blob(b"a")])
        make_checkpoint(store, load_private_key(tmp_path / "log.key"))
        store.append_many([prepare_blob(b"b")])
        with pytest.raises(NotFound, match="provledger checkpoint"):
            build_bundle(store, prepare_blob(b"b").digest)
        with pytest.raises(NotFound):
            build_bundle(store, "sha256:" + "0" * 64)


def test_attestations_after_checkpoint_are_omitted(tmp_path: Path) -> None:
    db, vkey = _ledger(tmp_path)
    blob = prepare_blob(b"subject")
    early = attest_prepared(blob, Ed25519Signer(Ed25519PrivateKey.generate()))
    late = attest_prepared(blob, Ed25519Signer(Ed25519PrivateKey.generate()))
    key = load_private_key(tmp_path / "log.key")
    with open_store(db, policy=admit_all()) as store:
        store.append_many([blob, early])
        make_checkpoint(store, key)
        store.append_many([late])
        bundle, omitted = build_bundle(store, blob.digest)
        assert omitted == (late.digest,)
        assert [a.digest for a in bundle.attestations] == [early.digest]
        make_checkpoint(store, key)
        bundle, omitted = build_bundle(store, blob.digest)
    assert omitted == ()
    assert [a.digest for a in verify_bundle(bundle.encode(), vkey).attestations] == [
        early.digest,
        late.digest,
    ]


def test_malformed_key_is_input_error(small: Built) -> None:
    with pytest.raises(InputError):
        verify_bundle(small.data, "not a key")


# --------------------------------------------------------------------------- named parts

Edit = Callable[[dict[str, Any], Built], None]


def _resign(value: dict[str, Any], item: dict[str, Any], key: Ed25519PrivateKey) -> None:
    proof = parse_tlog_proof(item["proof"].encode())
    body = proof.checkpoint[: proof.checkpoint.rfind(b"\n\n") + 1]
    note = sign_note(body, "test.example/log", key)
    item["proof"] = TlogProof(proof.index, proof.hashes, note).encode().decode()


def _set_proof(item: dict[str, Any], **changes: Any) -> None:
    proof = dataclasses.replace(parse_tlog_proof(item["proof"].encode()), **changes)
    item["proof"] = proof.encode().decode()


def _set_leaf(item: dict[str, Any], **changes: Any) -> None:
    record = json.loads(item["leaf"])
    record.update(changes)
    item["leaf"] = bytes(rfc8785.dumps(record)).decode()


def _swap_attestations(v: dict[str, Any], _b: Built) -> None:
    v["attestations"].reverse()


def _other_object(v: dict[str, Any], _b: Built) -> None:
    # A different, internally consistent object: caught by the entry record.
    v["object"]["data"] = base64.b64encode(b"other").decode()
    v["object"]["digest"] = prepare_blob(b"other").digest


def _leaf_for_other(v: dict[str, Any], _b: Built) -> None:
    _other_object(v, _b)
    _set_leaf(v, digest=v["object"]["digest"])


def _foreign_attestation(v: dict[str, Any], _b: Built) -> None:
    other = attest_prepared(prepare_blob(b"other"), Ed25519Signer(Ed25519PrivateKey.generate()))
    v["attestations"][1]["data"] = base64.b64encode(other.data).decode()
    v["attestations"][1]["digest"] = other.digest


def _cosigned(v: dict[str, Any], _b: Built) -> None:
    proof = parse_tlog_proof(v["proof"].encode())
    body = proof.checkpoint[: proof.checkpoint.rfind(b"\n\n") + 1]
    witness = Ed25519PrivateKey.generate()
    extra = sign_note(body, "witness.example", witness)[len(body) + 1 :]
    _set_proof(v, checkpoint=proof.checkpoint + extra)


CASES: list[tuple[str, Edit, str]] = [
    ("media type", lambda v, b: v.update(media_type=MEDIA_TYPE.replace("v1", "v2")), "bundle"),
    ("extra member", lambda v, b: v.update(note="hi"), "bundle"),
    ("attestations not a list", lambda v, b: v.update(attestations={}), "bundle"),
    ("object member", lambda v, b: v["object"].update(size=1), "object"),
    (
        "object data",
        lambda v, b: v["object"].update(data=base64.b64encode(b"x").decode()),
        "object",
    ),
    ("object digest", lambda v, b: v["object"].update(digest="sha256:" + "a" * 64), "object"),
    ("object kind", lambda v, b: v["object"].update(kind="work-unit"), "object"),
    ("object data base64", lambda v, b: v["object"].update(data="???"), "object"),
    ("other object", _other_object, "leaf"),
    ("leaf for other object", _leaf_for_other, "proof"),
    ("leaf seq", lambda v, b: _set_leaf(v, seq=3), "leaf"),
    ("leaf kind", lambda v, b: _set_leaf(v, kind="work-unit"), "leaf"),
    ("leaf extra member", lambda v, b: _set_leaf(v, note=1), "leaf"),
    ("leaf time format", lambda v, b: _set_leaf(v, appended_at="2026-01-01T00:00:00Z"), "leaf"),
    (
        "leaf time value",
        lambda v, b: _set_leaf(v, appended_at="2000-01-01T00:00:00.000000Z"),
        "proof",
    ),
    ("leaf not canonical", lambda v, b: v.update(leaf=v["leaf"].replace(",", ", ", 1)), "leaf"),
    ("proof index", lambda v, b: _set_proof(v, index=3), "proof"),
    ("proof hash", lambda v, b: _set_proof(v, hashes=(bytes(32),) * 4), "proof"),
    ("proof too short", lambda v, b: _set_proof(v, hashes=()), "proof"),
    ("proof extra", lambda v, b: _set_proof(v, extra=b"x"), "proof"),
    ("proof header", lambda v, b: v.update(proof=v["proof"].replace("@v1", "@v9")), "proof"),
    (
        "checkpoint by another key",
        lambda v, b: _resign(v, v, Ed25519PrivateKey.generate()),
        "checkpoint",
    ),
    ("checkpoint cosigned", _cosigned, "checkpoint"),
    (
        "checkpoint size",
        lambda v, b: v.update(proof=v["proof"].replace("\n9\n", "\n8\n")),
        "checkpoint",
    ),
    ("attestation order", _swap_attestations, "attestation[1]"),
    (
        "attestation duplicate",
        lambda v, b: v["attestations"].append(v["attestations"][1]),
        "attestation[2]",
    ),
    ("attestation member", lambda v, b: v["attestations"][0].update(kind="x"), "attestation[0]"),
    ("attestation data", lambda v, b: v["attestations"][0].update(data="e30="), "attestation[0]"),
    ("attestation about another object", _foreign_attestation, "attestation[1]"),
    ("attestation leaf", lambda v, b: _set_leaf(v["attestations"][0], seq=5), "attestation[0]"),
    ("attestation proof", lambda v, b: _set_proof(v["attestations"][1], index=5), "attestation[1]"),
    (
        "attestation checkpoint",
        lambda v, b: _resign(v, v["attestations"][0], Ed25519PrivateKey.generate()),
        "attestation[0]",
    ),
    (
        "attestation is a blob",
        lambda v, b: v["attestations"].append(
            {
                "digest": v["object"]["digest"],
                "data": v["object"]["data"],
                "leaf": v["leaf"],
                "proof": v["proof"],
            }
        ),
        "attestation[2]",
    ),
]


@pytest.mark.parametrize(("name", "edit", "part"), CASES, ids=[c[0] for c in CASES])
def test_each_part_is_named(small: Built, name: str, edit: Edit, part: str) -> None:
    value = json.loads(small.data)
    edit(value, small)
    assert _part_of(_encode(value), small.vkey) == part, name


def test_spelling_changes_fail_as_bundle(small: Built) -> None:
    pretty = json.dumps(small.value, indent=1).encode() + b"\n"
    for data in (
        small.data[:-1],
        small.data + b"\n",
        b" " + small.data,
        pretty,
        b"",
        b"\xff",
        b"[]\n",
        b"null\n",
    ):
        assert _part_of(data, small.vkey) == "bundle"


def test_wrong_log_key_fails_checkpoint(small: Built) -> None:
    other = verifier_key("test.example/log", Ed25519PrivateKey.generate().public_key())
    assert _part_of(small.data, other) == "checkpoint"
    renamed = verifier_key("other.example/log", parse_verifier_key(small.vkey)[2])
    assert _part_of(small.data, renamed) == "checkpoint"


# --------------------------------------------------------------------------- every byte


def _regions(built: Built) -> list[tuple[int, int, str]]:
    """Byte ranges of the file and the part a change inside them may be blamed on."""
    data, value = built.data, built.value

    def span(piece: bytes, start: int = 0) -> tuple[int, int]:
        at = data.index(piece, start)
        assert data.find(piece, at + 1) < 0 or start, "piece must be unique"
        return at, at + len(piece)

    out = []
    lo, hi = span(b'"object":' + bytes(rfc8785.dumps(value["object"])))
    out.append((lo, hi, "object"))
    lo, hi = span(b'"leaf":' + bytes(rfc8785.dumps(value["leaf"])))
    out.append((lo, hi, "leaf"))
    lo, hi = span(b'"proof":' + bytes(rfc8785.dumps(value["proof"])))
    note = parse_tlog_proof(value["proof"].encode()).checkpoint
    note_lo, note_hi = span(bytes(rfc8785.dumps(note.decode()))[1:-1], lo)
    out.append((lo, note_lo, "proof"))
    out.append((note_lo, note_hi, "checkpoint"))
    for i, att in enumerate(value["attestations"]):
        a_lo, a_hi = span(bytes(rfc8785.dumps(att)))
        out.append((a_lo, a_hi, f"attestation[{i}]"))
    return out


def _allowed(regions: list[tuple[int, int, str]], position: int) -> set[str]:
    for lo, hi, part in regions:
        if lo <= position < hi:
            # A changed entry-record time still parses: the proof then fails.
            return {"bundle", part} | ({"proof"} if part == "leaf" else set())
    return {"bundle"}


def _flip_all(built: Built, positions: list[int], rng: random.Random) -> dict[str, int]:
    regions = _regions(built)
    seen: dict[str, int] = {}
    for position in positions:
        original = built.data[position]
        for new in {original ^ 0x01, rng.choice([b for b in range(256) if b != original])}:
            changed = bytearray(built.data)
            changed[position] = new
            part = _part_of(bytes(changed), built.vkey)
            assert part in _allowed(regions, position), (position, chr(original), new, part)
            seen[part] = seen.get(part, 0) + 1
    return seen


def test_every_byte_of_a_small_bundle(tmp_path: Path) -> None:
    small = _build(tmp_path, before=2, blob=b"subject bytes", attestations=1, after=2)
    assert len(small.data) < 2500
    seen = _flip_all(small, list(range(len(small.data))), random.Random(1))
    # Each part was hit, so the regions (and the test) mean something.
    assert {"bundle", "object", "leaf", "proof", "checkpoint", "attestation[0]"} <= set(seen)


def test_random_bytes_of_a_larger_bundle(tmp_path: Path) -> None:
    blob = random.Random(7).randbytes(20_000)
    built = _build(tmp_path, before=700, blob=blob, attestations=3, after=300)
    assert verify_bundle(built.data, built.vkey).checkpoint.size == 1007
    rng = random.Random(2)
    # Half spread over the file, half over the non-data parts (the data is most bytes).
    data_lo = built.data.index(b'"data"', built.data.index(b'"object"'))
    head = [rng.randrange(len(built.data)) for _ in range(150)]
    rest = [p for p in range(len(built.data)) if not data_lo <= p < data_lo + 26_700]
    seen = _flip_all(built, head + rng.sample(rest, 150), rng)
    assert {"object", "leaf", "proof", "checkpoint", "attestation[2]"} <= set(seen)
