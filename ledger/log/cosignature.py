"""C2SP tlog-cosignature/v1 (Ed25519): witness cosignatures on checkpoints.

A cosignature is a signed-note signature line (c2sp.org/tlog-cosignature)::

    — <witness name> base64(key ID || u64 big-endian timestamp || Ed25519 signature)

Key ID = ``SHA-256(name || 0x0A || 0x04 || 32-byte public key)[:4]`` (type 0x04, not the
0x01 of plain note signatures, so a cosignature can never pass for a log signature).
The signed message is::

    cosignature/v1
    time <timestamp, decimal, no leading zeros>
    <the whole checkpoint body, final newline included, no signature lines>

Verifier key string: ``<name>+<8 hex key ID>+base64(0x04 || public key)``.

Invariants: a cosignature verifies only over the exact checkpoint body and timestamp it was
made for, only under the witness key that made it; the timestamp is at most 2**63 - 1.
"""

from __future__ import annotations

import base64
import hashlib
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from ledger.errors import CheckFailed
from ledger.log.note import (
    ED25519_SIGNATURE_SIZE,
    KEY_ID_SIZE,
    NoteSignature,
    VerifierKeyError,
    key_name_problem,
    parse_note,
    strict_b64decode,
)

COSIGNATURE_TYPE_ED25519: Final = 0x04
TIMESTAMP_SIZE: Final = 8
MAX_TIMESTAMP: Final = 2**63 - 1
COSIGNATURE_SIZE: Final = TIMESTAMP_SIZE + ED25519_SIGNATURE_SIZE
HEADER: Final = b"cosignature/v1\n"
# A witness clock may run a little ahead of ours; more than this is a future timestamp.
DEFAULT_MAX_SKEW_S: Final = 300
_SIG_PREFIX: Final = "\u2014 "


class CosignatureError(CheckFailed):
    """A cosignature does not verify, or is malformed (exit 1)."""


@dataclass(frozen=True)
class WitnessKey:
    """A witness's public identity: key name, 4-byte key ID and Ed25519 public key."""

    name: str
    key_id: bytes
    public_key: Ed25519PublicKey

    def vkey(self) -> str:
        """The verifier key string (type 0x04)."""
        material = bytes([COSIGNATURE_TYPE_ED25519]) + self.public_key.public_bytes_raw()
        return f"{self.name}+{self.key_id.hex()}+{base64.b64encode(material).decode('ascii')}"

    @property
    def label(self) -> str:
        return f"{self.name}+{self.key_id.hex()}"


def witness_key_id(name: str, public_key: Ed25519PublicKey) -> bytes:
    """The 4-byte cosignature/v1 key ID of ``public_key`` under ``name``."""
    material = bytes([COSIGNATURE_TYPE_ED25519]) + public_key.public_bytes_raw()
    return hashlib.sha256(name.encode("utf-8") + b"\n" + material).digest()[:KEY_ID_SIZE]


def witness_key(name: str, public_key: Ed25519PublicKey) -> WitnessKey:
    """The witness identity of ``public_key`` under ``name`` (name checked)."""
    problem = key_name_problem(name)
    if problem is not None:
        raise VerifierKeyError(
            f"witness name, got {name!r} ({problem}), expected non-empty, no spaces, no '+'"
        )
    return WitnessKey(name, witness_key_id(name, public_key), public_key)


def parse_witness_key(text: str) -> WitnessKey:
    """Parse ``<name>+<hex key ID>+base64(0x04 || key)`` strictly (exit 3 when malformed)."""
    name, sep1, rest = text.strip().partition("+")
    kid_hex, sep2, material_b64 = rest.partition("+")
    if not (sep1 and sep2):
        raise VerifierKeyError(
            f"witness key, got {text[:80]!r}, expected <name>+<hex key id>+<base64 key>"
        )
    problem = key_name_problem(name)
    if problem is not None:
        raise VerifierKeyError(f"witness key name, got {name!r} ({problem}), expected a name")
    material = strict_b64decode(material_b64)
    if material is None or len(material) != 33 or material[0] != COSIGNATURE_TYPE_ED25519:
        kind = "unreadable" if material is None else f"{len(material)} bytes"
        if material is not None and material[:1] == b"\x01":
            kind += " of type 01 (a log key, not a witness key)"
        raise VerifierKeyError(
            f"witness key material, got {kind}, expected 33 bytes of type 04"
            " (Ed25519 cosignature/v1)"
        )
    public_key = Ed25519PublicKey.from_public_bytes(material[1:])
    computed = witness_key_id(name, public_key)
    if computed.hex() != kid_hex:
        raise VerifierKeyError(f"witness key id, got {kid_hex!r}, expected {computed.hex()}")
    return WitnessKey(name, computed, public_key)


def signed_message(body: bytes, timestamp: int) -> bytes:
    """The bytes a cosignature/v1 signs: header, time line, then the checkpoint body."""
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise CosignatureError(f"cosignature timestamp, got {timestamp}, expected 0..2**63-1")
    if not body.endswith(b"\n") or body.count(b"\n") < 3:
        raise CosignatureError("cosigned body, got fewer than 3 lines, expected a checkpoint")
    return HEADER + f"time {timestamp}\n".encode("ascii") + body


@dataclass(frozen=True)
class Cosignature:
    """One parsed cosignature line."""

    name: str
    key_id: bytes
    timestamp: int
    signature: bytes

    def line(self) -> str:
        """The signature line, newline-terminated."""
        blob = self.key_id + self.timestamp.to_bytes(TIMESTAMP_SIZE, "big") + self.signature
        return f"{_SIG_PREFIX}{self.name} {base64.b64encode(blob).decode('ascii')}\n"


def cosign(
    body: bytes, name: str, private_key: Ed25519PrivateKey, timestamp: int | None = None
) -> Cosignature:
    """Cosign a checkpoint body as witness ``name`` at ``timestamp`` (default: now)."""
    when = int(time.time()) if timestamp is None else timestamp
    key = witness_key(name, private_key.public_key())
    signature = private_key.sign(signed_message(body, when))
    return Cosignature(name, key.key_id, when, signature)


def from_note_signature(sig: NoteSignature) -> Cosignature:
    """Read a parsed note signature as a cosignature; wrong length is an error."""
    if len(sig.signature) != COSIGNATURE_SIZE:
        raise CosignatureError(
            f"cosignature of {sig.name}+{sig.key_id.hex()}, got {len(sig.signature)} bytes,"
            f" expected {COSIGNATURE_SIZE} (timestamp and Ed25519 signature)"
        )
    timestamp = int.from_bytes(sig.signature[:TIMESTAMP_SIZE], "big")
    return Cosignature(sig.name, sig.key_id, timestamp, sig.signature[TIMESTAMP_SIZE:])


def parse_cosignature_line(line: str) -> Cosignature:
    """Parse one signature line (with or without its newline) as a cosignature."""
    text = line if line.endswith("\n") else line + "\n"
    # Reuse the note parser: a dummy checkpoint-shaped body, then exactly this line.
    parsed = parse_note(b"x\n0\n\n" + text.encode("utf-8"))
    if len(parsed.signatures) != 1:
        raise CosignatureError(f"cosignature line, got {len(parsed.signatures)}, expected one")
    return from_note_signature(parsed.signatures[0])


def verify_cosignature(
    body: bytes,
    cosig: Cosignature,
    key: WitnessKey,
    now: int | None = None,
    max_skew: int = DEFAULT_MAX_SKEW_S,
) -> int:
    """Check one cosignature from ``key`` over ``body``; return its timestamp.

    The name and key ID must be ``key``'s; the timestamp at most 2**63 - 1 and not more
    than ``max_skew`` seconds after ``now`` (default: the current time).
    """
    if cosig.name != key.name or cosig.key_id != key.key_id:
        raise CosignatureError(
            f"cosignature, got one by {cosig.name}+{cosig.key_id.hex()}, expected {key.label}"
        )
    if cosig.timestamp > MAX_TIMESTAMP:
        raise CosignatureError(
            f"cosignature timestamp of {key.label}, got {cosig.timestamp}, expected <= 2**63-1"
        )
    current = int(time.time()) if now is None else now
    if cosig.timestamp > current + max_skew:
        raise CosignatureError(
            f"cosignature timestamp of {key.label}, got {cosig.timestamp},"
            f" expected no later than {current + max_skew} (now plus {max_skew}s)"
        )
    try:
        key.public_key.verify(cosig.signature, signed_message(body, cosig.timestamp))
    except InvalidSignature:
        raise CosignatureError(
            f"cosignature of {key.label} at time {cosig.timestamp}, got an invalid signature"
            " over this checkpoint, expected a valid one"
        ) from None
    return cosig.timestamp


@dataclass(frozen=True)
class QuorumResult:
    """Which trusted witnesses cosigned a body, and which lines failed."""

    valid: tuple[tuple[WitnessKey, int], ...]  # (witness, timestamp), one per witness
    invalid: tuple[tuple[str, str], ...]  # (witness label, reason)
    unknown: int  # signature lines from keys not trusted here (ignored)

    def to_json(self) -> dict[str, object]:
        return {
            "cosigners": [{"witness": k.label, "timestamp": t} for k, t in self.valid],
            "invalid": [{"witness": w, "error": e} for w, e in self.invalid],
            "ignored": self.unknown,
        }


def check_cosignatures(
    body: bytes,
    signatures: Iterable[NoteSignature],
    keys: Sequence[WitnessKey],
    now: int | None = None,
) -> QuorumResult:
    """Verify every signature line from a trusted witness key over ``body``.

    Lines whose (name, key ID) match no trusted key are ignored and counted (C2SP). A line
    that matches a trusted key but fails is reported invalid; a witness counts once.
    """
    by_id = {(k.name, k.key_id): k for k in keys}
    valid: dict[tuple[str, bytes], tuple[WitnessKey, int]] = {}
    invalid: list[tuple[str, str]] = []
    unknown = 0
    for sig in signatures:
        key = by_id.get((sig.name, sig.key_id))
        if key is None:
            unknown += 1
            continue
        try:
            stamp = verify_cosignature(body, from_note_signature(sig), key, now)
        except CosignatureError as exc:
            invalid.append((key.label, str(exc)))
            continue
        valid.setdefault((key.name, key.key_id), (key, stamp))
    return QuorumResult(tuple(valid.values()), tuple(invalid), unknown)
