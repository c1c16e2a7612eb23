"""libsodium's Ed25519 acceptance (``ledger.trust.sodium``) against the reference.

The reference is OpenSSL through ``cryptography`` (what ``keys.verify`` decided alone
before). ``sodium.accepts`` may only say yes where the reference says yes, and
``keys.verify`` must give the reference's verdict everywhere: on Wycheproof's and
RFC 8032's vectors, on the benchmark corpus's attestation signatures (and the same
with one bit flipped), and on generated cases: fresh keys and messages, signatures
with any bit flipped, S moved beyond the group order, keys and R replaced by
small-order and non-canonical encodings, arbitrary bytes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bench_corpus
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.store.prepared import prepare_value
from ledger.trust import keys, sodium
from ledger.trust.attestation import parse_attestation
from ledger.trust.dsse import pae
from ledger.trust.keys import Ed25519Signer, public_key_raw
from ledger.trust.presign import RecentSubjects

VECTORS = Path(__file__).resolve().parent / "vectors" / "ed25519"
ROOT = Path(__file__).resolve().parents[1]
L = 2**252 + 27742317777372353535851937790883648493  # the group order
P = 2**255 - 19
# Encodings of the points of small order (libsodium refuses them as keys and as R;
# OpenSSL does not), with the sign bit set too, and y values that are not reduced.
_SMALL = [
    bytes(32),
    (1).to_bytes(32, "little"),
    bytes.fromhex("26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05"),
    bytes.fromhex("c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a"),
    (P - 1).to_bytes(32, "little"),
    (P).to_bytes(32, "little"),
    (P + 1).to_bytes(32, "little"),
]
ODD = _SMALL + [bytes(e[:31]) + bytes([e[31] | 0x80]) for e in _SMALL]
ODD += [(P + k).to_bytes(32, "little") for k in range(2, 19)]  # y >= p: not canonical


def reference(key: bytes, message: bytes, signature: bytes) -> bool:
    if len(key) != 32 or len(signature) != 64:
        return False
    try:
        Ed25519PublicKey.from_public_bytes(key).verify(signature, message)
    except (InvalidSignature, ValueError):
        return False
    return True


@pytest.fixture(autouse=True)
def _loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """libsodium from the first signature on (not after ``FAST_AFTER``)."""
    monkeypatch.setattr(sodium, "FAST_AFTER", 0)


def check(key: bytes, message: bytes, signature: bytes) -> bool:
    """The reference's verdict, after asserting the fast path agrees with it."""
    expected = reference(key, message, signature)
    if len(key) == 32 and len(signature) == 64 and sodium.accepts(key, message, signature):
        assert expected, (key.hex(), message.hex(), signature.hex())
    assert keys.verify(key, message, signature) is expected
    return expected


def _flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


def test_wycheproof_and_rfc8032() -> None:
    wycheproof = json.loads((VECTORS / "wycheproof_ed25519_test.json").read_text("utf-8"))
    seen = 0
    for group in wycheproof["testGroups"]:
        key = bytes.fromhex(group["publicKey"]["pk"])
        for test in group["tests"]:
            got = check(key, bytes.fromhex(test["msg"]), bytes.fromhex(test["sig"]))
            assert got is (test["result"] == "valid")
            seen += 1
    assert seen == 151
    rfc = json.loads((VECTORS / "rfc8032_vectors.json").read_text("utf-8"))["vectors"]
    for vec in rfc:
        key, message = bytes.fromhex(vec["public_key"]), bytes.fromhex(vec["message"])
        signature = bytes.fromhex(vec["signature"])
        assert check(key, message, signature)
        assert sodium.accepts(key, message, signature)  # the fast path answered
        for bit in (0, 255, 256, 511):
            assert not check(key, message, _flip(signature, bit))


def test_the_benchmark_corpus_signatures(tmp_path: Path) -> None:
    private = Ed25519PrivateKey.generate()
    key_file = tmp_path / "authority.key"
    from cryptography.hazmat.primitives import serialization

    key_file.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_file.chmod(0o600)
    signer = Ed25519Signer.from_file(key_file)
    raw = public_key_raw(private.public_key())
    recent = RecentSubjects(64)
    signatures = 0
    for doc in bench_corpus.corpus(40 * bench_corpus.GROUP, 11, signer):
        item = prepare_value(doc)
        pair = recent.see(item.kind, item.digest, item.data)
        if pair is None:
            continue
        detached = parse_attestation(pair[0])
        message = pae(detached.payload_type, pair[1])
        signature = detached.signature.sig
        assert check(raw, message, signature)
        assert sodium.accepts(raw, message, signature)
        assert not check(raw, _flip(message, 8 * len(message) - 1), signature)
        assert not check(raw, message, _flip(signature, 300))
        signatures += 1
    assert signatures == 40


_seeds = st.binary(min_size=32, max_size=32)
_messages = st.binary(max_size=300)


@settings(max_examples=300, deadline=None)
@given(seed=_seeds, message=_messages, bit=st.integers(0, 511), how=st.integers(0, 6))
def test_generated_signatures(seed: bytes, message: bytes, bit: int, how: int) -> None:
    private = Ed25519PrivateKey.from_private_bytes(seed)
    key = public_key_raw(private.public_key())
    signature = private.sign(message)
    r, s = signature[:32], int.from_bytes(signature[32:], "little")
    cases = {
        0: (key, message, signature),
        1: (key, message, _flip(signature, bit)),
        2: (_flip(key, bit % 256), message, signature),
        # S + L names the same scalar; both libraries must refuse it.
        3: (key, message, r + (s + L).to_bytes(32, "little"))
        if s + L < 2**256
        else (key, message, signature),
        4: (key, message + b"\x00", signature),
        5: (ODD[bit % len(ODD)], message, signature),
        6: (key, message, ODD[bit % len(ODD)] + signature[32:]),
    }
    got = check(*cases[how])
    assert got is (how == 0 or (how == 3 and s + L >= 2**256))


@settings(max_examples=300, deadline=None)
@given(
    key=st.one_of(st.sampled_from(ODD), st.binary(min_size=32, max_size=32)),
    r=st.one_of(st.sampled_from(ODD), st.binary(min_size=32, max_size=32)),
    s=st.one_of(
        st.integers(0, 16),
        st.integers(L - 4, L + 4),
        st.integers(0, 2**256 - 1),
    ),
    message=_messages,
)
def test_small_order_and_odd_encodings(key: bytes, r: bytes, s: int, message: bytes) -> None:
    """Keys and R of small order or not canonical, S = 0, near and beyond the order: where
    the two libraries' rules differ (OpenSSL accepts what libsodium refuses here, e.g. a
    small-order key with S = 0 and R the identity), the verdict is the reference's."""
    check(key, message, r + s.to_bytes(32, "little"))


def test_identity_key_and_r_with_zero_s_is_the_reference_verdict() -> None:
    """A case the two libraries decide differently: libsodium refuses a small-order key,
    so the reference decides (whatever it says, ``verify`` says the same)."""
    identity = (1).to_bytes(32, "little")
    signature = identity + bytes(32)
    assert not sodium.accepts(identity, b"m", signature)
    assert keys.verify(identity, b"m", signature) is reference(identity, b"m", signature)


def test_libsodium_loads_only_after_the_first_signatures() -> None:
    """A process that checks a few signatures never imports PyNaCl (start-up stays as it
    was); one that checks more does, and then answers through it."""
    code = """
import sys
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ledger.trust import keys, sodium
private = Ed25519PrivateKey.from_private_bytes(bytes(32))
key = keys.public_key_raw(private.public_key())
signature = private.sign(b"m")
for _ in range(sodium.FAST_AFTER):
    assert keys.verify(key, b"m", signature)
assert "nacl" not in sys.modules
keys._raw_public_key.cache_clear()
for _ in range(3):
    assert keys.verify(key, b"m", signature)
assert "nacl.bindings" in sys.modules
assert keys._raw_public_key.cache_info().misses == 0  # the reference was not asked
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
