"""Key files, key ids, public-key loading and the file-backed Signer of ledger.trust.keys."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.errors import InputError, KeyFileError
from ledger.trust.keys import (
    Ed25519Signer,
    Signer,
    generate_key_file,
    is_key_id,
    key_id,
    load_private_key,
    load_public_key,
    public_key_from_raw,
    public_key_path,
    public_key_pem,
    public_key_raw,
    sign,
    verify,
)

GO_SSL = Path(__file__).resolve().parent / "vectors" / "dsse" / "go-securesystemslib-test-data"
GO_SSL_KEY = json.loads((GO_SSL / "ed25519-test-key.pub").read_text("utf-8"))
GO_SSL_PUBLIC_HEX = GO_SSL_KEY["keyval"]["public"]

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX-only")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_key_error_is_input_error_exit_3() -> None:
    assert issubclass(KeyFileError, InputError)
    assert KeyFileError.exit_code == 3


@posix_only
def test_generate_writes_0600_private_and_0644_public(tmp_path: Path) -> None:
    path = tmp_path / "signing.key"
    old_umask = os.umask(0o077)  # the public file mode must not depend on the umask
    try:
        private_key, kid = generate_key_file(path)
    finally:
        os.umask(old_umask)
    pub = public_key_path(path)
    assert pub == tmp_path / "signing.key.pub"
    assert _mode(path) == 0o600
    assert _mode(pub) == 0o644
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----\n")
    assert pub.read_text("ascii") == public_key_pem(private_key.public_key())
    assert kid == key_id(private_key.public_key())
    loaded = load_private_key(path)
    assert public_key_raw(loaded.public_key()) == public_key_raw(private_key.public_key())
    assert key_id(load_public_key(pub)) == kid


def test_key_id_is_sha256_of_raw_public_key(tmp_path: Path) -> None:
    private_key, kid = generate_key_file(tmp_path / "k")
    raw = public_key_raw(private_key.public_key())
    assert len(raw) == 32
    assert kid == hashlib.sha256(raw).hexdigest()
    assert is_key_id(kid)
    # Stable across every way of naming the same key.
    assert key_id(raw) == key_id(private_key.public_key()) == kid
    assert key_id(load_public_key(tmp_path / "k.pub")) == kid
    assert key_id(load_private_key(tmp_path / "k").public_key()) == kid


def test_key_id_of_published_test_key() -> None:
    raw = bytes.fromhex(GO_SSL_PUBLIC_HEX)
    expected = hashlib.sha256(raw).hexdigest()
    assert key_id(raw) == expected
    assert key_id(load_public_key(GO_SSL / "ed25519-test-key-pem.pub")) == expected


@pytest.mark.parametrize("size", [0, 31, 33, 64])
def test_key_id_rejects_wrong_raw_length(size: int) -> None:
    with pytest.raises(KeyFileError, match="expected 32 bytes"):
        key_id(bytes(size))


@pytest.mark.parametrize("value", ["", "ab" * 31, "AB" * 32, "g" * 64, 123, None])
def test_is_key_id_rejects(value: object) -> None:
    assert not is_key_id(value)


def test_overwrite_refused(tmp_path: Path) -> None:
    path = tmp_path / "k"
    generate_key_file(path)
    before = (path.read_bytes(), public_key_path(path).read_bytes())
    with pytest.raises(KeyFileError, match="already exists"):
        generate_key_file(path)
    assert (path.read_bytes(), public_key_path(path).read_bytes()) == before


def test_existing_public_file_refused_and_no_private_left(tmp_path: Path) -> None:
    path = tmp_path / "k"
    public_key_path(path).write_text("someone else's\n")
    with pytest.raises(KeyFileError, match=r"k\.pub already exists"):
        generate_key_file(path)
    assert not path.exists()
    assert public_key_path(path).read_text() == "someone else's\n"


def test_missing_directory_is_key_error(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="cannot be created"):
        generate_key_file(tmp_path / "no" / "such" / "dir" / "k")


@posix_only
@pytest.mark.parametrize("mode", [0o640, 0o644, 0o604, 0o660, 0o602, 0o620, 0o666, 0o601])
def test_load_refuses_group_or_other_access(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "k"
    generate_key_file(path)
    path.chmod(mode)
    with pytest.raises(KeyFileError) as info:
        load_private_key(path)
    assert str(info.value) == (
        f"private key file {path} is accessible by others, got mode {mode:04o}, "
        "expected 0600 or stricter"
    )


@posix_only
@pytest.mark.parametrize("mode", [0o600, 0o400])
def test_load_accepts_owner_only(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "k"
    _, kid = generate_key_file(path)
    path.chmod(mode)
    assert key_id(load_private_key(path).public_key()) == kid


@posix_only
def test_encrypted_key_right_and_wrong_passphrase(tmp_path: Path) -> None:
    path = tmp_path / "enc.key"
    private_key, kid = generate_key_file(path, passphrase=b"correct horse")
    assert _mode(path) == 0o600
    assert path.read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----\n")
    loaded = load_private_key(path, passphrase=b"correct horse")
    assert key_id(loaded.public_key()) == kid
    assert sign(loaded, b"m") == sign(private_key, b"m")

    with pytest.raises(KeyFileError, match="cannot be decrypted, got a wrong passphrase"):
        load_private_key(path, passphrase=b"battery staple")
    with pytest.raises(KeyFileError, match="is encrypted, got no passphrase"):
        load_private_key(path)


def test_passphrase_for_unencrypted_key_refused(tmp_path: Path) -> None:
    path = tmp_path / "plain.key"
    generate_key_file(path)
    with pytest.raises(KeyFileError, match="is not encrypted, got a passphrase"):
        load_private_key(path, passphrase=b"x")


def test_empty_passphrase_refused(tmp_path: Path) -> None:
    with pytest.raises(KeyFileError, match="empty passphrase"):
        generate_key_file(tmp_path / "k", passphrase=b"")
    assert not (tmp_path / "k").exists()


def _write_0600(path: Path, data: bytes) -> Path:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return path


def test_non_ed25519_private_key_refused(tmp_path: Path) -> None:
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path = _write_0600(tmp_path / "ec.key", pem)
    with pytest.raises(KeyFileError, match="expected an Ed25519 key"):
        load_private_key(path)


def test_garbage_and_missing_private_key_files(tmp_path: Path) -> None:
    garbage = _write_0600(tmp_path / "garbage.key", b"not a key\n")
    with pytest.raises(KeyFileError, match="unreadable"):
        load_private_key(garbage)
    with pytest.raises(KeyFileError, match="cannot be read"):
        load_private_key(tmp_path / "missing.key")
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_private_key(tmp_path)
    huge = _write_0600(tmp_path / "huge.key", b"x" * (64 * 1024 + 1))
    with pytest.raises(KeyFileError, match="too large"):
        load_private_key(huge)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs named pipes")
def test_fifo_private_key_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "k"
    os.mkfifo(fifo, 0o600)
    with pytest.raises(KeyFileError, match="not a regular file"):
        load_private_key(fifo)


def test_third_party_pkcs8_private_key(tmp_path: Path) -> None:
    # go-securesystemslib's published PKCS#8 test key, copied to a 0600 file.
    path = tmp_path / "ed25519-test-key-pem"
    shutil.copyfile(GO_SSL / "ed25519-test-key-pem", path)
    path.chmod(0o600)
    loaded = load_private_key(path)
    assert public_key_raw(loaded.public_key()).hex() == GO_SSL_PUBLIC_HEX


def test_load_public_key_forms(tmp_path: Path) -> None:
    raw = bytes.fromhex(GO_SSL_PUBLIC_HEX)
    pem_path = GO_SSL / "ed25519-test-key-pem.pub"
    pem_text = pem_path.read_text("ascii")
    forms: list[Path | str | bytes | Ed25519PublicKey] = [
        pem_path,
        str(pem_path),
        pem_text,
        pem_text.encode("ascii"),
        raw,
        public_key_from_raw(raw),
    ]
    for form in forms:
        assert public_key_raw(load_public_key(form)) == raw, form
    assert public_key_pem(load_public_key(raw)) == pem_text


def test_load_public_key_rejects(tmp_path: Path) -> None:
    ec_pem = (
        ec.generate_private_key(ec.SECP256R1())
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    with pytest.raises(KeyFileError, match="expected Ed25519"):
        load_public_key(ec_pem)
    with pytest.raises(KeyFileError, match="cannot be read"):
        load_public_key(tmp_path / "nope.pub")
    with pytest.raises(KeyFileError, match="expected 32 raw bytes or PEM"):
        load_public_key(bytes(31))
    # A private key PEM is not a public key.
    with pytest.raises(KeyFileError, match="PUBLIC KEY"):
        load_public_key((GO_SSL / "ed25519-test-key-pem").read_bytes())
    with pytest.raises(KeyFileError, match="expected 32 bytes"):
        public_key_from_raw(bytes(33))


def test_file_signer_matches_protocol(tmp_path: Path) -> None:
    path = tmp_path / "k"
    private_key, kid = generate_key_file(path, passphrase=b"pw")
    signer = Ed25519Signer.from_file(path, passphrase=b"pw")
    assert isinstance(signer, Signer)
    assert signer.key_id == kid
    assert public_key_raw(signer.public_key) == public_key_raw(private_key.public_key())
    sig = signer.sign(b"payload")
    assert sig == sign(private_key, b"payload")
    assert verify(signer.public_key, b"payload", sig)
    assert kid in repr(signer)
    assert "PRIVATE" not in repr(signer)


@settings(max_examples=25, deadline=None)
@given(message=st.binary(max_size=256), bit=st.integers(min_value=0, max_value=511))
def test_sign_verify_property(message: bytes, bit: int) -> None:
    private_key = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(message).digest())
    signature = sign(private_key, message)
    assert len(signature) == 64
    assert verify(private_key.public_key(), message, signature)
    flipped = bytearray(signature)
    flipped[bit // 8] ^= 1 << (bit % 8)
    assert not verify(private_key.public_key(), message, bytes(flipped))
    assert not verify(private_key.public_key(), message + b"\x00", signature)
