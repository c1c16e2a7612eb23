"""ledger.trust.dsse: PAE vectors, the spec example, the Ed25519 envelope, parsing, verification."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import InputError, KeyFileError
from ledger.trust.dsse import (
    Envelope,
    EnvelopeError,
    Signature,
    add_signature,
    kind_of_payload_type,
    pae,
    parse_envelope,
    payload_type_for,
    sign_envelope,
    verify_envelope,
    verify_envelope_detailed,
)
from ledger.trust.keys import Ed25519Signer, key_id, public_key_from_raw

VECTORS: dict[str, Any] = json.loads(
    (Path(__file__).resolve().parent / "vectors" / "dsse" / "dsse_vectors.json").read_text("utf-8")
)
PAE_VECTORS: list[dict[str, Any]] = VECTORS["pae_vectors"]
ECDSA = VECTORS["ecdsa_p256_spec_example"]
ED = VECTORS["ed25519"]
DERIVED = ED["dsse_envelope_DERIVED"]

TEST_SIGNER = Ed25519Signer(
    Ed25519PrivateKey.from_private_bytes(bytes.fromhex(ED["key"]["seed_hex"]))
)
TEST_PUBLIC = public_key_from_raw(bytes.fromhex(ED["key"]["public_key_hex"]))
TEST_KID = key_id(TEST_PUBLIC)


def _signer(seed_byte: int) -> Ed25519Signer:
    return Ed25519Signer(Ed25519PrivateKey.from_private_bytes(bytes([seed_byte]) * 32))


# --- PAE -----------------------------------------------------------------------------


@pytest.mark.parametrize("vec", PAE_VECTORS, ids=[v["desc"] for v in PAE_VECTORS])
def test_pae_vectors(vec: dict[str, Any]) -> None:
    assert vec["payload_type"].encode().hex() == vec["payload_type_utf8_hex"]
    got = pae(vec["payload_type"], bytes.fromhex(vec["payload_hex"]))
    assert got == bytes.fromhex(vec["pae_hex"])
    assert base64.b64decode(vec["payload_b64"]) == bytes.fromhex(vec["payload_hex"])


def test_pae_counts_utf8_bytes_of_type() -> None:
    assert pae("é", b"") == b"DSSEv1 2 \xc3\xa9 0 "
    assert pae("t", b"x" * 100) == b"DSSEv1 1 t 100 " + b"x" * 100


# --- ECDSA P-256 example of the spec (only pae() is ours) ----------------------------


def _ecdsa_public() -> ec.EllipticCurvePublicKey:
    key = ECDSA["key"]
    numbers = ec.EllipticCurvePublicNumbers(int(key["x_dec"]), int(key["y_dec"]), ec.SECP256R1())
    public = numbers.public_key()
    spki = public.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    assert spki.decode() == key["public_key_pem_spki"]
    return public


def _der(raw: bytes) -> bytes:
    return utils.encode_dss_signature(
        int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big")
    )


@pytest.mark.parametrize(
    "which",
    [
        "envelope_from_protocol_md",
        "envelope_from_signing_spec_py",
        "envelope_from_go_securesystemslib_TestEcdsaSign",
    ],
)
def test_ecdsa_spec_example_verifies_over_our_pae(which: str) -> None:
    envelope = parse_envelope(ECDSA[which])
    assert envelope.payload == ECDSA["payload_utf8"].encode()
    assert envelope.pae() == ECDSA["pae_utf8"].encode()
    (signature,) = envelope.signatures
    assert signature.sig == base64.b64decode(ECDSA["signature_b64"])
    public = _ecdsa_public()
    public.verify(_der(signature.sig), envelope.pae(), ec.ECDSA(hashes.SHA256()))
    # The payloadType is authenticated by PAE: changing it breaks the signature.
    with pytest.raises(InvalidSignature):
        public.verify(
            _der(signature.sig),
            pae("http://example.com/HelloWorlD", envelope.payload),
            ec.ECDSA(hashes.SHA256()),
        )


def test_ecdsa_spec_example_signs_deterministically_over_our_pae() -> None:
    private = ec.derive_private_key(int(ECDSA["key"]["d_dec"]), ec.SECP256R1())
    der = private.sign(
        pae(ECDSA["payload_type"], ECDSA["payload_utf8"].encode()),
        ec.ECDSA(hashes.SHA256(), deterministic_signing=True),
    )
    r, s = utils.decode_dss_signature(der)
    assert (
        base64.b64encode(r.to_bytes(32, "big") + s.to_bytes(32, "big")).decode()
        == ECDSA["signature_b64"]
    )


def test_keyid_is_unauthenticated_in_parsing() -> None:
    spellings = [parse_envelope(ECDSA[k]) for k in ECDSA if k.startswith("envelope_from_")]
    assert [e.signatures[0].keyid for e in spellings] == ["", "66301bbf", "test key 123"]
    assert len({(e.payload, e.payload_type, e.signatures[0].sig) for e in spellings}) == 1


# --- Ed25519 DSSE envelope (DERIVED vector with a third-party key) --------------------


def test_ed25519_envelope_sign_matches_vector() -> None:
    payload = DERIVED["payload_utf8"].encode()
    assert pae(DERIVED["payload_type"], payload) == bytes.fromhex(DERIVED["pae_hex"])
    envelope = sign_envelope(DERIVED["payload_type"], payload, TEST_SIGNER)
    assert envelope.signatures[0].sig.hex() == DERIVED["signature_hex"]
    assert envelope.signatures[0].keyid == TEST_KID
    obj = envelope.to_json_obj()
    assert obj["payload"] == DERIVED["envelope"]["payload"]
    assert obj["payloadType"] == DERIVED["envelope"]["payloadType"]
    assert obj["signatures"] == [{"keyid": TEST_KID, "sig": DERIVED["signature_b64"]}]


def test_ed25519_vector_envelope_verifies_without_matching_keyid() -> None:
    # The vector carries securesystemslib's keyid, which is not our key id for this key.
    envelope = parse_envelope(DERIVED["envelope"])
    trusted = {TEST_KID: TEST_PUBLIC}
    (check,) = verify_envelope_detailed(envelope, trusted)
    assert check.status == "unknown-key"
    assert verify_envelope(envelope, trusted) == []
    # With the hint dropped, every trusted key is tried.
    bare = Envelope(
        envelope.payload, envelope.payload_type, (Signature("", envelope.signatures[0].sig),)
    )
    assert verify_envelope(bare, trusted) == [TEST_KID]


def _vector_envelope_with_our_keyid() -> Envelope:
    obj = json.loads(json.dumps(DERIVED["envelope"]))
    obj["signatures"][0]["keyid"] = TEST_KID
    return parse_envelope(obj)


def test_ed25519_vector_envelope_verifies() -> None:
    envelope = _vector_envelope_with_our_keyid()
    assert verify_envelope(envelope, {TEST_KID: TEST_PUBLIC}) == [TEST_KID]


@pytest.mark.parametrize("field", ["payloadType", "payload", "sig"])
def test_ed25519_vector_envelope_tampering_fails(field: str) -> None:
    envelope = _vector_envelope_with_our_keyid()
    if field == "payloadType":
        tampered = Envelope(envelope.payload, "application/vnd.dsse+jsoN", envelope.signatures)
    elif field == "payload":
        tampered = Envelope(b"test messagf", envelope.payload_type, envelope.signatures)
    else:
        sig = bytearray(envelope.signatures[0].sig)
        sig[10] ^= 0x01
        tampered = Envelope(
            envelope.payload, envelope.payload_type, (Signature(TEST_KID, bytes(sig)),)
        )
    (check,) = verify_envelope_detailed(tampered, {TEST_KID: TEST_PUBLIC})
    assert check.status == "bad-signature"
    assert not check.ok and check.verified_key_id is None
    assert verify_envelope(tampered, {TEST_KID: TEST_PUBLIC}) == []


# --- verification details ------------------------------------------------------------


def test_detailed_reasons_per_signature() -> None:
    a, b, c = _signer(1), _signer(2), _signer(3)
    envelope = add_signature(add_signature(sign_envelope("t", b"body", a), b), c)
    good_a, good_b, good_c = envelope.signatures
    sigs = (
        good_a,
        Signature(b.key_id, good_c.sig),  # c's signature under b's keyid
        Signature(c.key_id, good_c.sig[:63]),
        Signature("not-trusted", good_b.sig),
        good_c,
    )
    checks = verify_envelope_detailed(
        Envelope(envelope.payload, envelope.payload_type, sigs),
        {a.key_id: a.public_key, b.key_id: b.public_key, c.key_id: c.public_key},
    )
    assert [(ch.index, ch.status) for ch in checks] == [
        (0, "ok"),
        (1, "bad-signature"),
        (2, "malformed"),
        (3, "unknown-key"),
        (4, "ok"),
    ]
    assert [ch.verified_key_id for ch in checks] == [a.key_id, None, None, None, c.key_id]
    assert checks[3].keyid == "not-trusted"


def test_verify_envelope_counts_unique_keys() -> None:
    a, b = _signer(1), _signer(2)
    envelope = add_signature(add_signature(sign_envelope("t", b"x", a), a), b)
    trusted = {a.key_id: a.public_key, b.key_id: b.public_key}
    assert verify_envelope(envelope, trusted) == [a.key_id, b.key_id]
    assert verify_envelope(envelope, {b.key_id: b.public_key}) == [b.key_id]
    assert verify_envelope(envelope, {}) == []


def test_trusted_map_must_be_keyed_by_key_id() -> None:
    a = _signer(1)
    envelope = sign_envelope("t", b"x", a)
    with pytest.raises(KeyFileError, match="trusted key map entry"):
        verify_envelope(envelope, {"alias": a.public_key})


def test_envelope_without_signatures_verifies_nothing() -> None:
    envelope = parse_envelope({"payload": "", "payloadType": "", "signatures": []})
    assert verify_envelope_detailed(envelope, {}) == ()
    assert verify_envelope(envelope, {TEST_KID: TEST_PUBLIC}) == []


class _LyingSigner:
    """A signer whose key id or signatures do not match its public key."""

    def __init__(self, kid: str, sig: bytes) -> None:
        self._kid, self._sig = kid, sig

    @property
    def key_id(self) -> str:
        return self._kid

    @property
    def public_key(self) -> Any:
        return TEST_PUBLIC

    def sign(self, message: bytes) -> bytes:
        return self._sig


def test_sign_envelope_checks_the_signer() -> None:
    with pytest.raises(KeyFileError, match="signer key id"):
        sign_envelope("t", b"x", _LyingSigner("0" * 64, bytes(64)))
    with pytest.raises(KeyFileError, match="does not verify"):
        sign_envelope("t", b"x", _LyingSigner(TEST_KID, bytes(64)))


# --- parsing -------------------------------------------------------------------------


def test_parse_accepts_url_safe_base64_and_ignores_unknown_members() -> None:
    payload = bytes(range(256))
    sig = b"\xfb\xff" * 32
    obj = {
        "payload": base64.urlsafe_b64encode(payload).decode(),
        "payloadType": "t",
        "signatures": [{"sig": base64.urlsafe_b64encode(sig).decode(), "extra": 1}],
        "future": {"x": 1},
    }
    assert "-" in obj["payload"] or "_" in obj["payload"]
    envelope = parse_envelope(obj)
    assert envelope.payload == payload
    assert envelope.signatures == (Signature("", sig),)
    assert envelope.to_json_obj()["payload"] == base64.b64encode(payload).decode()


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ([], "expected a JSON object"),
        ({"payloadType": "t", "signatures": []}, "no 'payload'"),
        ({"payload": "", "signatures": []}, "no 'payloadType'"),
        ({"payload": "", "payloadType": "t"}, "no 'signatures'"),
        ({"payload": 1, "payloadType": "t", "signatures": []}, "expected a base64 string"),
        ({"payload": "", "payloadType": 1, "signatures": []}, "payloadType, got int"),
        ({"payload": "", "payloadType": "t", "signatures": {}}, "expected a list"),
        ({"payload": "", "payloadType": "t", "signatures": ["x"]}, r"signatures\[0\], got str"),
        ({"payload": "", "payloadType": "t", "signatures": [{}]}, "no 'sig'"),
        (
            {"payload": "", "payloadType": "t", "signatures": [{"sig": "", "keyid": 5}]},
            "keyid, got int",
        ),
        ({"payload": "aGVsbG8", "payloadType": "t", "signatures": []}, "invalid base64"),
        ({"payload": "aGVsbG8=x", "payloadType": "t", "signatures": []}, "base64"),
        ({"payload": "aGVs bG8=", "payloadType": "t", "signatures": []}, "invalid base64"),
        ({"payload": "aGVsbG9=", "payloadType": "t", "signatures": []}, "non-canonical"),
        ({"payload": "+-==", "payloadType": "t", "signatures": []}, "mixing"),
        ({"payload": "é===", "payloadType": "t", "signatures": []}, "invalid base64"),
        ({"payload": "", "payloadType": "\ud800", "signatures": []}, "lone surrogate"),
    ],
)
def test_parse_rejects(obj: object, message: str) -> None:
    with pytest.raises(EnvelopeError, match=message):
        parse_envelope(obj)


def test_envelope_error_is_input_error() -> None:
    assert issubclass(EnvelopeError, InputError)
    assert EnvelopeError.exit_code == 3


def test_envelope_value_types_are_checked() -> None:
    with pytest.raises(EnvelopeError):
        Envelope("text", "t", ())  # type: ignore[arg-type]
    with pytest.raises(EnvelopeError):
        Envelope(b"", "t", [])  # type: ignore[arg-type]
    with pytest.raises(EnvelopeError):
        Signature("k", "sig")  # type: ignore[arg-type]


def test_to_json_bytes_is_canonical() -> None:
    envelope = sign_envelope("t", b"x", TEST_SIGNER)
    data = envelope.to_json_bytes()
    assert data.startswith(b'{"payload":"eA==","payloadType":"t","signatures":[{"keyid":"')
    assert parse_envelope(json.loads(data)) == envelope


# --- payloadType rule ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["work-unit", "verification-result", "attestation", "blob"])
def test_payload_type_round_trip(kind: str) -> None:
    payload_type = payload_type_for(kind)
    assert payload_type == f"application/vnd.provledger.{kind}+json"
    assert kind_of_payload_type(payload_type) == kind


@pytest.mark.parametrize("kind", ["", "Work-Unit", "work_unit", "-x", "x-", "a--b", "a/b", "1x"])
def test_payload_type_rejects_bad_kinds(kind: str) -> None:
    with pytest.raises(InputError):
        payload_type_for(kind)
    assert kind_of_payload_type(f"application/vnd.provledger.{kind}+json") is None


def test_kind_of_foreign_payload_types() -> None:
    assert kind_of_payload_type("application/vnd.in-toto+json") is None
    assert kind_of_payload_type("application/vnd.provledger.work-unit+cbor") is None


# --- properties ----------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    payload_type=st.text(max_size=40),
    payload=st.binary(max_size=200),
    keyid=st.text(max_size=20),
)
def test_envelope_json_round_trip(payload_type: str, payload: bytes, keyid: str) -> None:
    try:
        payload_type.encode("utf-8")
    except UnicodeEncodeError:
        return
    envelope = Envelope(payload, payload_type, (Signature(keyid, payload[:64]),))
    assert parse_envelope(envelope.to_json_obj()) == envelope


@settings(max_examples=40, deadline=None)
@given(payload_type=st.text(min_size=0, max_size=30), payload=st.binary(max_size=100))
def test_pae_is_injective_on_lengths(payload_type: str, payload: bytes) -> None:
    try:
        type_bytes = payload_type.encode("utf-8")
    except UnicodeEncodeError:
        return
    encoded = pae(payload_type, payload)
    head, _, rest = encoded.partition(b" ")
    assert head == b"DSSEv1"
    type_len, _, rest = rest.partition(b" ")
    assert int(type_len) == len(type_bytes) and str(int(type_len)).encode() == type_len
    assert rest[: len(type_bytes)] == type_bytes
    body_len, _, body = rest[len(type_bytes) + 1 :].partition(b" ")
    assert int(body_len) == len(payload) and body == payload


@settings(max_examples=20, deadline=None)
@given(payload=st.binary(max_size=100), index=st.integers(min_value=0))
def test_sign_verify_and_tamper_property(payload: bytes, index: int) -> None:
    envelope = sign_envelope("application/vnd.provledger.work-unit+json", payload, TEST_SIGNER)
    trusted = {TEST_KID: TEST_PUBLIC}
    assert verify_envelope(envelope, trusted) == [TEST_KID]
    tampered_payload = bytearray(payload or b"\x00")
    if payload:
        tampered_payload[index % len(payload)] ^= 0x80
    tampered = Envelope(bytes(tampered_payload), envelope.payload_type, envelope.signatures)
    assert verify_envelope(tampered, trusted) == []
