"""C2SP signed notes (Ed25519 only) and C2SP tlog checkpoints, parsed strictly.

Signed note (c2sp.org/signed-note)::

    <body: UTF-8 text ending in "\\n">
    <blank line>
    — <key name> <base64(4-byte key ID || 64-byte Ed25519 signature over body)>

Key ID = ``SHA-256(name || 0x0A || 0x01 || 32-byte public key)[:4]``. Verifier key string
(golang.org/x/mod/sumdb/note form) = ``<name>+<8 hex key ID>+<base64(0x01 || public key)>``.

Checkpoint (c2sp.org/tlog-checkpoint) body: origin line, decimal tree size (no leading
zeros), base64 root hash (32 bytes), then optional non-empty extension lines.

Invariant: everything this module accepts it can re-emit byte for byte (``body()`` of a parsed
checkpoint equals its input), so there is only one spelling of each value.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Final

from ledger.errors import CheckFailed, InputError

if TYPE_CHECKING:  # cryptography is imported where a key is parsed or a signature checked
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

SIGNATURE_TYPE_ED25519: Final = 0x01
KEY_ID_SIZE: Final = 4
ED25519_SIGNATURE_SIZE: Final = 64
ROOT_HASH_SIZE: Final = 32
MAX_TREE_SIZE: Final = 2**64 - 1
# C2SP requires accepting at least 16 signatures; golang.org/x/mod stops at 100.
MAX_SIGNATURES: Final = 100
MAX_NOTE_BYTES: Final = 1 << 20

_SIG_PREFIX: Final = "\u2014 "  # em dash, space
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]*)", re.ASCII)
_KEY_ID_HEX = re.compile(r"[0-9a-f]{8}", re.ASCII)


class NoteFailure(StrEnum):
    """Why a note or checkpoint was rejected; carried as ``NoteError.reason``."""

    MALFORMED = "malformed"
    UNKNOWN_KEY = "unknown-key"
    BAD_SIGNATURE = "bad-signature"
    ORIGIN_MISMATCH = "origin-mismatch"


class NoteError(CheckFailed):
    """A signed note or checkpoint failed to parse or verify (exit 1); see ``reason``."""

    def __init__(self, reason: NoteFailure, message: str) -> None:
        super().__init__(f"{message} [{reason.value}]")
        self.reason = reason


class CheckpointError(NoteError):
    """A checkpoint body is not a strict C2SP checkpoint."""

    def __init__(self, message: str, reason: NoteFailure = NoteFailure.MALFORMED) -> None:
        super().__init__(reason, message)


class VerifierKeyError(InputError):
    """A verifier key string or key name is malformed (exit 3)."""


def _malformed(message: str) -> NoteError:
    return NoteError(NoteFailure.MALFORMED, message)


def _bad_control_char(text: str) -> str | None:
    """Return the first ASCII control character other than newline, if any."""
    for ch in text:
        if ch < " " and ch != "\n":
            return ch
    return None


def _strict_b64decode(text: str) -> bytes | None:
    """Standard padded base64 with a single spelling per value; None when malformed."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return None
    # Reject non-zero padding bits so each value has one accepted spelling.
    if base64.b64encode(raw).decode("ascii") != text:
        return None
    return raw


def _name_problem(name: str) -> str | None:
    if not isinstance(name, str) or not name:
        return "empty"
    if "+" in name:
        return "contains '+'"
    if any(ch.isspace() for ch in name):
        return "contains a space"
    if _bad_control_char(name) is not None:
        return "contains a control character"
    return None


# The same rules, for sibling formats (ledger.log.cosignature): one spelling everywhere.
key_name_problem = _name_problem
strict_b64decode = _strict_b64decode


def _require_key_name(name: str) -> None:
    problem = _name_problem(name)
    if problem is not None:
        raise VerifierKeyError(
            f"key name, got {name!r} ({problem}), expected non-empty, no spaces, no '+'"
        )


# --------------------------------------------------------------------------- keys


def note_key_id(name: str, public_key: Ed25519PublicKey) -> bytes:
    """Return the 4-byte C2SP key ID of an Ed25519 key under ``name``."""
    material = bytes([SIGNATURE_TYPE_ED25519]) + public_key.public_bytes_raw()
    return hashlib.sha256(name.encode("utf-8") + b"\n" + material).digest()[:KEY_ID_SIZE]


def verifier_key(name: str, public_key: Ed25519PublicKey) -> str:
    """Return ``<name>+<hex key ID>+<base64(0x01 || public key)>``."""
    _require_key_name(name)
    material = bytes([SIGNATURE_TYPE_ED25519]) + public_key.public_bytes_raw()
    encoded = base64.b64encode(material).decode("ascii")
    return f"{name}+{note_key_id(name, public_key).hex()}+{encoded}"


def parse_verifier_key(text: str) -> tuple[str, bytes, Ed25519PublicKey]:
    """Parse a verifier key string into ``(name, key_id, public_key)``, strictly.

    The key ID must be 8 lowercase hex digits and must match the one computed from the key.
    """
    name, sep1, rest = text.partition("+")
    kid_hex, sep2, material_b64 = rest.partition("+")
    if not (sep1 and sep2):
        raise VerifierKeyError(
            f"verifier key, got {text!r}, expected <name>+<hex key id>+<base64 key>"
        )
    _require_key_name(name)
    if not _KEY_ID_HEX.fullmatch(kid_hex):
        raise VerifierKeyError(f"verifier key id, got {kid_hex!r}, expected 8 lowercase hex digits")
    material = _strict_b64decode(material_b64)
    if material is None:
        raise VerifierKeyError(f"verifier key material, got {material_b64!r}, expected base64")
    if len(material) != 33 or material[0] != SIGNATURE_TYPE_ED25519:
        raise VerifierKeyError(
            f"verifier key material, got {len(material)} bytes of type "
            f"{material[:1].hex() or 'none'}, expected 33 bytes of type 01 (Ed25519)"
        )
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    public_key = Ed25519PublicKey.from_public_bytes(material[1:])
    computed = note_key_id(name, public_key)
    if computed.hex() != kid_hex:
        raise VerifierKeyError(f"verifier key id, got {kid_hex}, expected {computed.hex()}")
    return name, computed, public_key


# --------------------------------------------------------------------------- notes


@dataclass(frozen=True)
class NoteSignature:
    """One signature line: key name, 4-byte key ID and the signature bytes after it."""

    name: str
    key_id: bytes
    signature: bytes


@dataclass(frozen=True)
class SignedNote:
    """A parsed (not yet verified) note: ``body`` is the exact signed bytes."""

    body: bytes
    signatures: tuple[NoteSignature, ...]


def _check_body_text(body: bytes, what: str) -> str:
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _malformed(f"{what}, got invalid UTF-8 at byte {exc.start}, expected UTF-8") from None
    bad = _bad_control_char(text)
    if bad is not None:
        raise _malformed(f"{what}, got control character {bad!r}, expected none but newline")
    return text


def sign_note(body: bytes, name: str, private_key: Ed25519PrivateKey) -> bytes:
    """Return ``body`` + blank line + one Ed25519 signature line for key ``name``."""
    _require_key_name(name)
    text = _check_body_text(body, "note body")
    if not text.endswith("\n"):
        raise _malformed("note body, got no final newline, expected text ending in newline")
    signature = private_key.sign(body)
    blob = note_key_id(name, private_key.public_key()) + signature
    line = f"{_SIG_PREFIX}{name} {base64.b64encode(blob).decode('ascii')}\n"
    return body + b"\n" + line.encode("utf-8")


def parse_note(note: bytes) -> SignedNote:
    """Split a signed note into its body and signature lines; signatures are not checked.

    The body ends at the last blank line. Every line after it must be a signature line and
    the note must end with a newline (no trailing data).
    """
    if len(note) > MAX_NOTE_BYTES:
        raise _malformed(f"note size, got {len(note)} bytes, expected <= {MAX_NOTE_BYTES}")
    _check_body_text(note, "note")
    split = note.rfind(b"\n\n")
    if split < 0:
        raise _malformed("note, got no blank line, expected body, blank line, signatures")
    body, block = note[: split + 1], note[split + 2 :].decode("utf-8")
    if not block:
        raise _malformed("note signatures, got none, expected at least one signature line")
    if not block.endswith("\n"):
        raise _malformed("note, got trailing data without newline, expected signature lines")
    lines = block[:-1].split("\n")
    if len(lines) > MAX_SIGNATURES:
        raise _malformed(f"note signatures, got {len(lines)}, expected <= {MAX_SIGNATURES}")
    signatures = tuple(_parse_signature_line(line) for line in lines)
    return SignedNote(body=body, signatures=signatures)


def _parse_signature_line(line: str) -> NoteSignature:
    if not line.startswith(_SIG_PREFIX):
        raise _malformed(f"signature line, got {line[:40]!r}, expected '\u2014 <name> <base64>'")
    parts = line[len(_SIG_PREFIX) :].split(" ")
    if len(parts) != 2:
        raise _malformed(f"signature line, got {len(parts)} fields, expected '<name> <base64>'")
    name, encoded = parts
    problem = _name_problem(name)
    if problem is not None:
        raise _malformed(f"signature key name, got {name!r} ({problem}), expected a key name")
    blob = _strict_b64decode(encoded)
    if blob is None:
        raise _malformed(f"signature of {name}, got {encoded[:20]!r}..., expected base64")
    if len(blob) <= KEY_ID_SIZE:
        raise _malformed(f"signature of {name}, got {len(blob)} bytes, expected > 4")
    return NoteSignature(name=name, key_id=blob[:KEY_ID_SIZE], signature=blob[KEY_ID_SIZE:])


def parse_signature_line(line: str) -> NoteSignature:
    """One signature line (``— <name> <base64>``, no newline); ``NoteError`` when it is
    not one (a note with it appended would not parse)."""
    if "\n" in line:
        raise _malformed("signature line, got a newline inside, expected one line")
    return _parse_signature_line(line)


def verify_note(note: bytes, verifier_key_str: str) -> bytes:
    """Verify ``note`` with one trusted key and return its body (the signed bytes).

    Per C2SP, signatures whose (name, key ID) is not the trusted key's are ignored; every
    signature from the trusted key must verify (a bad one rejects the note) and at least one
    must be present.
    """
    from cryptography.exceptions import InvalidSignature

    name, kid, public_key = parse_verifier_key(verifier_key_str)
    parsed = parse_note(note)
    verified = 0
    for sig in parsed.signatures:
        if sig.name != name or sig.key_id != kid:
            continue
        if len(sig.signature) != ED25519_SIGNATURE_SIZE:
            raise NoteError(
                NoteFailure.BAD_SIGNATURE,
                f"signature of {name}+{kid.hex()}, got {len(sig.signature)} bytes, expected 64",
            )
        try:
            public_key.verify(sig.signature, parsed.body)
        except InvalidSignature:
            raise NoteError(
                NoteFailure.BAD_SIGNATURE,
                f"signature of {name}+{kid.hex()}, got an invalid signature, expected a valid one",
            ) from None
        verified += 1
    if verified == 0:
        seen = ", ".join(f"{s.name}+{s.key_id.hex()}" for s in parsed.signatures)
        raise NoteError(
            NoteFailure.UNKNOWN_KEY,
            f"note signatures, got [{seen}], expected one by {name}+{kid.hex()}",
        )
    return parsed.body


# --------------------------------------------------------------------------- checkpoints


def _line_problem(value: str) -> str | None:
    if not isinstance(value, str) or not value:
        return "empty"
    if "\n" in value:
        return "contains a newline"
    if _bad_control_char(value) is not None:
        return "contains a control character"
    return None


@dataclass(frozen=True)
class Checkpoint:
    """A C2SP tlog checkpoint body. Fields are validated on construction."""

    origin: str
    size: int
    root_hash: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        problem = _line_problem(self.origin)
        if problem is not None:
            raise CheckpointError(
                f"checkpoint origin, got {self.origin!r} ({problem}), expected one non-empty line"
            )
        if (
            not isinstance(self.size, int)
            or isinstance(self.size, bool)
            or not 0 <= self.size <= MAX_TREE_SIZE
        ):
            raise CheckpointError(
                f"checkpoint size, got {self.size!r}, expected an integer in [0, 2**64-1]"
            )
        if not isinstance(self.root_hash, bytes) or len(self.root_hash) != ROOT_HASH_SIZE:
            got = len(self.root_hash) if isinstance(self.root_hash, bytes) else "non-bytes"
            raise CheckpointError(f"checkpoint root hash, got {got} bytes, expected 32")
        if not isinstance(self.extensions, tuple):
            raise CheckpointError(
                f"checkpoint extensions, got {type(self.extensions).__name__}, expected tuple"
            )
        for position, line in enumerate(self.extensions):
            problem = _line_problem(line)
            if problem is not None:
                raise CheckpointError(
                    f"checkpoint extension line {position}, got {line!r} ({problem}), "
                    "expected one non-empty line"
                )

    def body(self) -> bytes:
        """The note text: origin, size, base64 root, extension lines, each ending in newline."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root_hash).decode("ascii")]
        lines.extend(self.extensions)
        return "".join(line + "\n" for line in lines).encode("utf-8")


def parse_checkpoint(body: bytes) -> Checkpoint:
    """Parse a checkpoint body strictly; the result's ``body()`` equals ``body``."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CheckpointError(
            f"checkpoint, got invalid UTF-8 at byte {exc.start}, expected UTF-8"
        ) from None
    if not text.endswith("\n"):
        raise CheckpointError("checkpoint, got no final newline, expected lines ending in newline")
    lines = text[:-1].split("\n")
    if len(lines) < 3:
        raise CheckpointError(
            f"checkpoint, got {len(lines)} lines, expected origin, size, root hash"
        )
    origin, size_text, root_text, *extensions = lines
    # 2**64-1 has 20 digits; the length cap also keeps int() away from huge strings.
    if len(size_text) > 20 or not _DECIMAL.fullmatch(size_text):
        raise CheckpointError(
            f"checkpoint size, got {size_text!r}, expected decimal digits without leading zeros"
        )
    size = int(size_text)
    if size > MAX_TREE_SIZE:
        raise CheckpointError(f"checkpoint size, got {size_text}, expected <= 2**64-1")
    root_hash = _strict_b64decode(root_text)
    if root_hash is None:
        raise CheckpointError(f"checkpoint root hash, got {root_text!r}, expected base64")
    checkpoint = Checkpoint(origin, size, root_hash, tuple(extensions))
    if checkpoint.body() != body:  # pragma: no cover - guarded by the checks above
        raise CheckpointError("checkpoint, got a non-canonical spelling, expected canonical")
    return checkpoint


def open_checkpoint(note: bytes, verifier_key_str: str, origin: str | None = None) -> Checkpoint:
    """Verify a signed checkpoint with one trusted key and parse its body.

    ``origin``, when given, must equal the checkpoint's origin line.
    """
    checkpoint = parse_checkpoint(verify_note(note, verifier_key_str))
    if origin is not None and checkpoint.origin != origin:
        raise CheckpointError(
            f"checkpoint origin, got {checkpoint.origin!r}, expected {origin!r}",
            NoteFailure.ORIGIN_MISMATCH,
        )
    return checkpoint
