"""ledger.trust.intoto: Statement v1 shape, canonical payload, verification by securesystemslib."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import (  # type: ignore[attr-defined]  # not re-exported
    CryptoSigner,
    SSlibKey,
)

from ledger.errors import CanonicalFormError, InputError
from ledger.trust.dsse import Envelope, parse_envelope, verify_envelope
from ledger.trust.intoto import (
    INTOTO_PAYLOAD_TYPE,
    PREDICATE_TYPE,
    STATEMENT_TYPE,
    intoto_envelope,
    statement,
    statement_bytes,
)
from ledger.trust.keys import Ed25519Signer

SIGNER = Ed25519Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
OTHER = Ed25519Signer(Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33))))
HEX = hashlib.sha256(b"a ledger object").hexdigest()
PREDICATE: dict[str, Any] = {
    "kind": "work-unit",
    "schema_version": "0.2",
    "ledger": {"seq": 7, "checkpoint": "example.org/log"},
    "note": "café ✓",
}


def _sslib_key(signer: Ed25519Signer) -> SSlibKey:
    # keyid is ours (sha256 of the raw key); securesystemslib matches keyids literally.
    return SSlibKey.from_crypto(signer.public_key, keyid=signer.key_id)


def _sslib_verify(envelope_obj: dict[str, Any], signer: Ed25519Signer) -> bytes:
    # from_dict mutates the signature dicts, so hand it a private copy.
    sslib = SslibEnvelope.from_dict(copy.deepcopy(envelope_obj))
    accepted = sslib.verify([_sslib_key(signer)], 1)
    assert list(accepted) == [signer.key_id]
    payload: bytes = sslib.payload
    return payload


def test_statement_shape() -> None:
    stmt = statement("work-unit/wu-42@3", f"sha256:{HEX}", PREDICATE)
    assert stmt == {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": "work-unit/wu-42@3", "digest": {"sha256": HEX}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": PREDICATE,
    }
    assert STATEMENT_TYPE == "https://in-toto.io/Statement/v1"
    assert PREDICATE_TYPE == "https://provledger.dev/attestation/ledger-object/v0.1"


@pytest.mark.parametrize(
    "digest",
    [
        HEX,
        f"sha256:{HEX.upper()}",
        f"sha256:{HEX[:-1]}",
        f"sha512:{HEX}",
        f"sha256:{HEX}\n",
        "",
        None,
    ],
)
def test_statement_rejects_bad_digests(digest: Any) -> None:
    with pytest.raises(InputError, match="subject digest"):
        statement("x", digest, {})


def test_statement_rejects_bad_name_and_predicate() -> None:
    with pytest.raises(InputError, match="subject name"):
        statement("", f"sha256:{HEX}", {})
    with pytest.raises(InputError, match="predicate"):
        statement("x", f"sha256:{HEX}", [])  # type: ignore[arg-type]


def test_envelope_payload_is_canonical_statement() -> None:
    stmt = statement("obj", f"sha256:{HEX}", PREDICATE)
    envelope = intoto_envelope(stmt, SIGNER)
    assert envelope.payload_type == INTOTO_PAYLOAD_TYPE == "application/vnd.in-toto+json"
    assert envelope.payload == rfc8785.dumps(stmt) == statement_bytes(stmt)
    assert envelope.payload.startswith(b'{"_type":"https://in-toto.io/Statement/v1","predicate":')
    assert json.loads(envelope.payload) == stmt
    assert verify_envelope(envelope, {SIGNER.key_id: SIGNER.public_key}) == [SIGNER.key_id]


def test_statement_bytes_rejects() -> None:
    with pytest.raises(InputError, match="_type"):
        statement_bytes({"_type": "https://in-toto.io/Statement/v0.1"})
    bad = statement("obj", f"sha256:{HEX}", {"x": float("nan")})
    with pytest.raises(CanonicalFormError):
        statement_bytes(bad)


def test_securesystemslib_verifies_our_envelope() -> None:
    stmt = statement("obj", f"sha256:{HEX}", PREDICATE)
    envelope = intoto_envelope(stmt, SIGNER)
    payload = _sslib_verify(envelope.to_json_obj(), SIGNER)
    assert payload == envelope.payload
    # Also through the JSON text, as another tool would receive it.
    _sslib_verify(json.loads(envelope.to_json_bytes()), SIGNER)


def test_securesystemslib_envelope_verifies_with_ours() -> None:
    stmt = statement("obj", f"sha256:{HEX}", PREDICATE)
    sslib = SslibEnvelope(rfc8785.dumps(stmt), INTOTO_PAYLOAD_TYPE, {})
    sslib.sign(CryptoSigner(SIGNER.private_key, _sslib_key(SIGNER)))
    envelope = parse_envelope(sslib.to_dict())
    assert verify_envelope(envelope, {SIGNER.key_id: SIGNER.public_key}) == [SIGNER.key_id]
    assert envelope == intoto_envelope(stmt, SIGNER)  # Ed25519 is deterministic


def _tamper(obj: dict[str, Any], what: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    if what == "payloadType":
        obj["payloadType"] = "application/vnd.in-toto+jsoN"
    elif what == "payload":
        payload = base64.b64decode(obj["payload"]).replace(HEX.encode(), HEX[::-1].encode())
        obj["payload"] = base64.b64encode(payload).decode()
    elif what == "sig":
        sig = bytearray(base64.b64decode(obj["signatures"][0]["sig"]))
        sig[0] ^= 0x01
        obj["signatures"][0]["sig"] = base64.b64encode(bytes(sig)).decode()
    return obj


@pytest.mark.parametrize("what", ["payloadType", "payload", "sig"])
def test_tampering_breaks_securesystemslib_verification(what: str) -> None:
    envelope = intoto_envelope(statement("obj", f"sha256:{HEX}", PREDICATE), SIGNER)
    tampered = _tamper(envelope.to_json_obj(), what)
    assert tampered != envelope.to_json_obj()
    with pytest.raises(VerificationError):
        _sslib_verify(tampered, SIGNER)
    assert verify_envelope(parse_envelope(tampered), {SIGNER.key_id: SIGNER.public_key}) == []


def test_wrong_key_fails_securesystemslib_verification() -> None:
    envelope = intoto_envelope(statement("obj", f"sha256:{HEX}", PREDICATE), SIGNER)
    obj = envelope.to_json_obj()
    obj["signatures"][0]["keyid"] = OTHER.key_id
    with pytest.raises(VerificationError):
        _sslib_verify(obj, OTHER)
    assert isinstance(parse_envelope(obj), Envelope)
