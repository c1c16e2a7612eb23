"""Ed25519 keys: key ids, key files, raw sign/verify and the ``Signer`` plug point.

Invariants:

* A key id is defined once, from the raw 32-byte public key: the lowercase hex SHA-256 of
  those bytes (64 hex characters). Identities, DSSE ``keyid`` and revocations all use it.
* A private key file is PKCS#8 PEM (encrypted with the best available scheme when a
  passphrase is given), created with mode 0600 and never overwritten; ``PATH.pub`` next to
  it holds the SubjectPublicKeyInfo PEM (mode 0644).
* A private key file that group or others may read or write is refused, like ssh does.
* ``verify`` never raises for a bad signature or a malformed key; it returns False.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from ledger.bounded import read_bounded
from ledger.errors import KeyFileError, LedgerError
from ledger.trust import sodium

PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
KEY_ID_HEX_LEN = 64

PRIVATE_KEY_MODE = 0o600
PUBLIC_KEY_MODE = 0o644
# Bits that make a private key file readable or writable by group or others.
_UNSAFE_BITS = stat.S_IRWXG | stat.S_IRWXO

# A PEM Ed25519 key is a few hundred bytes; anything this big is not one.
_MAX_KEY_FILE_SIZE = 64 * 1024
_PEM_MARKER = b"-----BEGIN"
_ENCRYPTED_PEM_MARKER = b"-----BEGIN ENCRYPTED PRIVATE KEY-----"

PublicKeyLike = Ed25519PublicKey | bytes


# --- public keys and key ids -------------------------------------------------------------


def public_key_raw(public_key: Ed25519PublicKey) -> bytes:
    """The 32 raw bytes of an Ed25519 public key (RFC 8032 encoding)."""
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_key_from_raw(raw: bytes) -> Ed25519PublicKey:
    """An Ed25519 public key from exactly 32 raw bytes."""
    if not isinstance(raw, bytes | bytearray) or len(raw) != PUBLIC_KEY_SIZE:
        got = f"{len(raw)} bytes" if isinstance(raw, bytes | bytearray) else type(raw).__name__
        raise KeyFileError(f"raw Ed25519 public key, got {got}, expected {PUBLIC_KEY_SIZE} bytes")
    try:
        return Ed25519PublicKey.from_public_bytes(bytes(raw))
    except ValueError as exc:
        raise KeyFileError(
            f"raw Ed25519 public key, got an invalid encoding ({exc}), expected a curve point"
        ) from exc


def public_key_pem(public_key: Ed25519PublicKey) -> str:
    """SubjectPublicKeyInfo PEM text of a public key (ends with a newline)."""
    return public_key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    ).decode("ascii")


def key_id(public_key: PublicKeyLike) -> str:
    """Lowercase hex SHA-256 of the raw 32-byte public key; the one key id of the project."""
    raw = public_key if isinstance(public_key, bytes) else public_key_raw(public_key)
    if len(raw) != PUBLIC_KEY_SIZE:
        raise KeyFileError(
            f"raw Ed25519 public key, got {len(raw)} bytes, expected {PUBLIC_KEY_SIZE} bytes"
        )
    return hashlib.sha256(raw).hexdigest()


def is_key_id(value: object) -> bool:
    """True when ``value`` has the shape of a key id (64 lowercase hex characters)."""
    return (
        isinstance(value, str)
        and len(value) == KEY_ID_HEX_LEN
        and all(c in "0123456789abcdef" for c in value)
    )


def _public_key_from_pem(data: bytes, source: str) -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, UnsupportedAlgorithm) as exc:
        raise KeyFileError(
            f"public key {source}, got unreadable PEM ({exc}), expected a PUBLIC KEY PEM block"
        ) from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"public key {source}, got {type(key).__name__}, expected Ed25519")
    return key


def load_public_key(source: Path | str | bytes | Ed25519PublicKey) -> Ed25519PublicKey:
    """An Ed25519 public key from a file path, PEM text/bytes, or 32 raw bytes.

    A ``str`` is PEM when it contains a ``-----BEGIN`` line and a file path otherwise;
    ``bytes`` are raw when exactly 32 long and PEM otherwise. Hex strings are not accepted
    on purpose: a hex public key and a hex key id look alike.
    """
    if isinstance(source, Ed25519PublicKey):
        return source
    if isinstance(source, str) and _PEM_MARKER.decode() in source:
        return _public_key_from_pem(source.encode("ascii", "replace"), "PEM text")
    if isinstance(source, str | Path):
        path = Path(source)
        try:
            data = read_bounded(path, _MAX_KEY_FILE_SIZE, "public key")
        except LedgerError as exc:
            raise KeyFileError(
                f"public key file {path} cannot be read, got {exc}, expected a readable file"
            ) from exc
        if len(data) == PUBLIC_KEY_SIZE and _PEM_MARKER not in data:
            return public_key_from_raw(data)
        return _public_key_from_pem(data, f"file {path}")
    if isinstance(source, bytes | bytearray):
        data = bytes(source)
        if len(data) == PUBLIC_KEY_SIZE:
            return public_key_from_raw(data)
        if _PEM_MARKER in data:
            return _public_key_from_pem(data, "PEM bytes")
        raise KeyFileError(
            f"public key bytes, got {len(data)} bytes without PEM armour, "
            f"expected {PUBLIC_KEY_SIZE} raw bytes or PEM"
        )
    raise KeyFileError(
        f"public key, got {type(source).__name__}, expected a path, PEM or 32 raw bytes"
    )


# --- private key files ---------------------------------------------------------------


def public_key_path(path: Path) -> Path:
    """Where the public half of the private key file ``path`` lives: ``PATH.pub``."""
    return path.with_name(path.name + ".pub")


def _write_new_file(path: Path, data: bytes, mode: int) -> None:
    """Create ``path`` exclusively with exactly ``mode`` and write ``data``; no partial file."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError as exc:
        raise KeyFileError(
            f"key file {path} already exists, got an existing file, expected a new path"
        ) from exc
    except OSError as exc:
        raise KeyFileError(
            f"key file {path} cannot be created, got {type(exc).__name__}: {exc.strerror}, "
            "expected a writable directory"
        ) from exc
    try:
        # The umask can only remove bits; fchmod makes the mode exact either way.
        os.fchmod(fd, mode)
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except OSError as exc:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise KeyFileError(
            f"key file {path} cannot be written, got {type(exc).__name__}: {exc.strerror}, "
            "expected a writable file"
        ) from exc
    os.close(fd)


def generate_key_file(path: Path, passphrase: bytes | None = None) -> tuple[Ed25519PrivateKey, str]:
    """Create a new Ed25519 key at ``path`` (0600 PKCS#8 PEM) and ``PATH.pub`` (0644 SPKI PEM).

    Never overwrites: an existing ``path`` or ``PATH.pub`` raises ``KeyFileError`` and
    leaves both untouched. Returns the private key and its key id.
    """
    path = Path(path)
    pub_path = public_key_path(path)
    if pub_path.exists():
        raise KeyFileError(
            f"key file {pub_path} already exists, got an existing file, expected a new path"
        )
    if passphrase is not None and not passphrase:
        raise KeyFileError("passphrase, got an empty passphrase, expected at least one byte")
    private_key = Ed25519PrivateKey.generate()
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption()
        if passphrase is None
        else serialization.BestAvailableEncryption(passphrase)
    )
    private_pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )
    public_key = private_key.public_key()
    _write_new_file(path, private_pem, PRIVATE_KEY_MODE)
    try:
        _write_new_file(pub_path, public_key_pem(public_key).encode("ascii"), PUBLIC_KEY_MODE)
    except KeyFileError:
        # Do not leave a private key without its public half behind.
        path.unlink(missing_ok=True)
        raise
    return private_key, key_id(public_key)


def _refuse_public_key(path: Path, data: bytes) -> None:
    if b"PUBLIC KEY-----" in data and b"PRIVATE KEY-----" not in data:
        raise KeyFileError(
            f"key file {path} holds a public key, got a PUBLIC KEY PEM, expected the private"
            " key file (the one without .pub, written by `provledger key generate` or init)"
        )


def _read_private_key_file(path: Path) -> bytes:
    """Read the file after checking its mode on the open descriptor (no stat/open race)."""
    # O_NONBLOCK so a FIFO planted at the path cannot hang us; no effect on regular files.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise KeyFileError(
            f"private key file {path} cannot be read, got {type(exc).__name__}, "
            "expected a readable file"
        ) from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise KeyFileError(
                f"private key file {path} is not a regular file, got mode "
                f"{stat.filemode(info.st_mode)}, expected a regular file"
            )
        if os.name == "posix" and info.st_mode & _UNSAFE_BITS:
            mode = stat.S_IMODE(info.st_mode)
            # A public key (readable by all, as it should be) given where the private
            # key belongs: say that, not that its mode is wrong.
            _refuse_public_key(path, os.read(fd, _MAX_KEY_FILE_SIZE))
            raise KeyFileError(
                f"private key file {path} is accessible by others, got mode {mode:04o}, "
                "expected 0600 or stricter"
            )
        if info.st_size > _MAX_KEY_FILE_SIZE:
            raise KeyFileError(
                f"private key file {path} is too large, got {info.st_size} bytes, "
                f"expected at most {_MAX_KEY_FILE_SIZE}"
            )
        chunks = []
        while chunk := os.read(fd, _MAX_KEY_FILE_SIZE + 1):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise KeyFileError(
            f"private key file {path} cannot be read, got {type(exc).__name__}, "
            "expected a readable file"
        ) from exc
    finally:
        os.close(fd)


def load_private_key(path: Path, passphrase: bytes | None = None) -> Ed25519PrivateKey:
    """Load an Ed25519 PKCS#8 PEM private key file written by ``generate_key_file``.

    Refuses files group/others can access, a missing or wrong passphrase for an encrypted
    file, a passphrase for an unencrypted file, and keys that are not Ed25519.
    """
    path = Path(path)
    data = _read_private_key_file(path)
    _refuse_public_key(path, data)
    encrypted = _ENCRYPTED_PEM_MARKER in data
    if encrypted and passphrase is None:
        raise KeyFileError(
            f"private key file {path} is encrypted, got no passphrase, expected its passphrase"
        )
    if not encrypted and passphrase is not None:
        raise KeyFileError(
            f"private key file {path} is not encrypted, got a passphrase, expected none"
        )
    try:
        key = serialization.load_pem_private_key(data, password=passphrase)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        if encrypted:
            raise KeyFileError(
                f"private key file {path} cannot be decrypted, got a wrong passphrase or a "
                "corrupt file, expected the passphrase the key was written with"
            ) from exc
        raise KeyFileError(
            f"private key file {path} is unreadable, got {type(exc).__name__}, "
            "expected a PKCS#8 PEM Ed25519 private key"
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(
            f"private key file {path} holds a {type(key).__name__}, expected an Ed25519 key"
        )
    return key


# --- raw signatures ------------------------------------------------------------------


def sign(private_key: Ed25519PrivateKey, message: bytes) -> bytes:
    """Pure Ed25519 (RFC 8032) signature of ``message``: 64 bytes, deterministic."""
    return private_key.sign(bytes(message))


@functools.lru_cache(maxsize=256)
def _raw_public_key(raw: bytes) -> Ed25519PublicKey | None:
    """The key object for 32 raw bytes (None: not a valid encoding).

    Cached: decoding the point costs about a quarter of a verification, and a ledger's
    signatures come from a handful of keys. Key objects are immutable.
    """
    try:
        return Ed25519PublicKey.from_public_bytes(raw)
    except ValueError:
        return None


def verify(public_key: PublicKeyLike, message: bytes, signature: bytes) -> bool:
    """True iff ``signature`` is a valid Ed25519 signature of ``message`` under the key.

    Never raises for bad input: a signature that is not exactly 64 bytes or a raw key that
    is not exactly 32 bytes (or not a valid encoding) verifies as False.
    """
    if not isinstance(signature, bytes | bytearray) or len(signature) != SIGNATURE_SIZE:
        return False
    if not isinstance(message, bytes | bytearray):
        return False
    if isinstance(public_key, bytes | bytearray):
        if len(public_key) != PUBLIC_KEY_SIZE:
            return False
        # libsodium's yes is the reference's yes (``ledger.trust.sodium``); anything
        # else is decided below.
        if sodium.accepts(bytes(public_key), bytes(message), bytes(signature)):
            return True
        parsed = _raw_public_key(bytes(public_key))
        if parsed is None:
            return False
        key = parsed
    elif isinstance(public_key, Ed25519PublicKey):
        key = public_key
    else:
        return False
    try:
        key.verify(bytes(signature), bytes(message))
    except InvalidSignature:
        return False
    return True


# --- signers -------------------------------------------------------------------------


@runtime_checkable
class Signer(Protocol):
    """Something that signs with one Ed25519 key (a file today, an HSM/KMS later).

    ``key_id`` must equal ``ledger.trust.keys.key_id(public_key)``.
    """

    @property
    def key_id(self) -> str: ...

    @property
    def public_key(self) -> Ed25519PublicKey: ...

    def sign(self, message: bytes) -> bytes: ...


@dataclass(frozen=True, eq=False)
class Ed25519Signer:
    """A ``Signer`` holding the private key in process memory (e.g. loaded from a key file)."""

    private_key: Ed25519PrivateKey = field(repr=False)

    @classmethod
    def from_file(cls, path: Path, passphrase: bytes | None = None) -> Ed25519Signer:
        """Load the key file at ``path`` with the checks of ``load_private_key``."""
        return cls(load_private_key(path, passphrase))

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.private_key.public_key()

    @property
    def key_id(self) -> str:
        return key_id(self.public_key)

    def sign(self, message: bytes) -> bytes:
        return sign(self.private_key, message)

    def __repr__(self) -> str:
        return f"Ed25519Signer(key_id={self.key_id!r})"
