"""ledger.trust.keys sign/verify against RFC 8032, Wycheproof and go-securesystemslib vectors."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.trust.keys import key_id, public_key_from_raw, public_key_raw, sign, verify

VECTORS = Path(__file__).resolve().parent / "vectors"
RFC8032: list[dict[str, Any]] = json.loads(
    (VECTORS / "ed25519" / "rfc8032_vectors.json").read_text("utf-8")
)["vectors"]
WYCHEPROOF: dict[str, Any] = json.loads(
    (VECTORS / "ed25519" / "wycheproof_ed25519_test.json").read_text("utf-8")
)
DSSE_ED25519: dict[str, Any] = json.loads(
    (VECTORS / "dsse" / "dsse_vectors.json").read_text("utf-8")
)["ed25519"]


def _flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


@pytest.mark.parametrize("vec", RFC8032, ids=[v["name"] for v in RFC8032])
def test_rfc8032_derive_sign_verify(vec: dict[str, Any]) -> None:
    private_key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(vec["secret_key"]))
    public = bytes.fromhex(vec["public_key"])
    message = bytes.fromhex(vec["message"])
    expected = bytes.fromhex(vec["signature"])

    assert public_key_raw(private_key.public_key()) == public
    assert sign(private_key, message) == expected
    assert verify(public, message, expected)
    assert verify(public_key_from_raw(public), message, expected)


@pytest.mark.parametrize("vec", RFC8032, ids=[v["name"] for v in RFC8032])
def test_rfc8032_flipped_bits_fail(vec: dict[str, Any]) -> None:
    public = bytes.fromhex(vec["public_key"])
    message = bytes.fromhex(vec["message"])
    signature = bytes.fromhex(vec["signature"])
    for bit in (0, 7, 255, 256, 511):  # first/last bit of R and of S
        assert not verify(public, message, _flip(signature, bit))
    if message:
        assert not verify(public, _flip(message, 0), signature)
        assert not verify(public, _flip(message, len(message) * 8 - 1), signature)
    else:
        assert not verify(public, b"\x00", signature)
    assert not verify(_flip(public, 0), message, signature)


def _wycheproof_cases() -> list[tuple[str, str, str, str, bool]]:
    cases = []
    for group in WYCHEPROOF["testGroups"]:
        pk = group["publicKey"]["pk"]
        for test in group["tests"]:
            assert test["result"] in ("valid", "invalid")  # no "acceptable" in this file
            cases.append(
                (f"tc{test['tcId']}", pk, test["msg"], test["sig"], test["result"] == "valid")
            )
    return cases


WYCHEPROOF_CASES = _wycheproof_cases()


def test_wycheproof_file_is_complete() -> None:
    assert len(WYCHEPROOF_CASES) == WYCHEPROOF["numberOfTests"] == 151
    assert sum(1 for c in WYCHEPROOF_CASES if c[4]) == 88


@pytest.mark.parametrize(
    ("pk", "msg", "sig", "valid"),
    [c[1:] for c in WYCHEPROOF_CASES],
    ids=[c[0] for c in WYCHEPROOF_CASES],
)
def test_wycheproof_verify(pk: str, msg: str, sig: str, valid: bool) -> None:
    assert verify(bytes.fromhex(pk), bytes.fromhex(msg), bytes.fromhex(sig)) is valid


def test_wycheproof_verdicts_same_with_parsed_keys_cached(monkeypatch: pytest.MonkeyPatch) -> None:
    """Raw keys are parsed once and cached: every verdict is the same on a cold cache, a
    warm one, and in reverse order (a cached key never answers for another). Through the
    reference alone (libsodium's fast yes, ``ledger.trust.sodium``, parses no key)."""
    from ledger.trust import keys, sodium

    monkeypatch.setattr(sodium, "accepts", lambda *_args: False)

    cases = [
        (bytes.fromhex(c[1]), bytes.fromhex(c[2]), bytes.fromhex(c[3]), c[4])
        for c in WYCHEPROOF_CASES
    ]
    keys._raw_public_key.cache_clear()
    cold = [verify(pk, msg, sig) for pk, msg, sig, _ in cases]
    assert cold == [valid for *_, valid in cases]
    before = keys._raw_public_key.cache_info().hits
    warm = [verify(pk, msg, sig) for pk, msg, sig, _ in reversed(cases)]
    assert warm == cold[::-1]
    # Every 32-byte key with a 64-byte signature was parsed on the cold pass (other
    # lengths are refused before the key is looked at).
    parsed = sum(1 for pk, _, sig, _ in cases if (len(pk), len(sig)) == (32, 64))
    assert keys._raw_public_key.cache_info().hits - before == parsed


def test_go_securesystemslib_raw_signature() -> None:
    key = DSSE_ED25519["key"]
    raw = DSSE_ED25519["raw_signature_third_party"]
    private_key = Ed25519PrivateKey.from_private_bytes(bytes.fromhex(key["seed_hex"]))
    public = bytes.fromhex(key["public_key_hex"])
    message = raw["message_utf8"].encode()
    expected = bytes.fromhex(raw["signature_hex"])

    assert public_key_raw(private_key.public_key()) == public
    assert sign(private_key, message) == expected
    assert verify(public, message, expected)
    assert not verify(public, raw["negative"]["message_utf8"].encode(), expected)


def test_go_securesystemslib_jcs_link_signature() -> None:
    link = DSSE_ED25519["jcs_plus_ed25519_link_third_party"]
    canonical = rfc8785.dumps(link["signed"])
    assert canonical == link["canonical_bytes_utf8"].encode()
    public = bytes.fromhex(DSSE_ED25519["key"]["public_key_hex"])
    signature = bytes.fromhex(link["signature_hex"])
    assert verify(public, canonical, signature)
    assert not verify(public, canonical.replace(b"test-ed25519", b"test-ed25518"), signature)


def test_key_id_differs_from_securesystemslib_keyid() -> None:
    # Ours hashes the raw key; securesystemslib hashes its key JSON. Pin both so nobody
    # "fixes" one into the other by accident.
    public = bytes.fromhex(DSSE_ED25519["key"]["public_key_hex"])
    assert key_id(public) == hashlib.sha256(public).hexdigest()
    assert key_id(public) != DSSE_ED25519["key"]["securesystemslib_keyid"]


@pytest.mark.parametrize(
    ("public", "signature"),
    [
        (bytes(31), bytes(64)),
        (bytes(33), bytes(64)),
        (bytes.fromhex(RFC8032[0]["public_key"]), bytes.fromhex(RFC8032[0]["signature"])[:63]),
        (bytes.fromhex(RFC8032[0]["public_key"]), bytes.fromhex(RFC8032[0]["signature"]) + b"\x00"),
        (bytes.fromhex(RFC8032[0]["public_key"]), b""),
    ],
)
def test_verify_strict_lengths_return_false(public: bytes, signature: bytes) -> None:
    assert verify(public, b"", signature) is False


def test_verify_never_raises_on_wrong_types() -> None:
    public = bytes.fromhex(RFC8032[0]["public_key"])
    signature = bytes.fromhex(RFC8032[0]["signature"])
    assert verify(public, "", signature) is False  # type: ignore[arg-type]
    assert verify(public, b"", signature.hex()) is False  # type: ignore[arg-type]
    assert verify(public.hex(), b"", signature) is False  # type: ignore[arg-type]
    assert verify(public, b"", signature) is True
