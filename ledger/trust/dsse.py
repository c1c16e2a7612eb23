"""DSSE v1 envelopes (secure-systems-lab/dsse protocol 1.0.2) signed with Ed25519.

Invariants:

* Signatures cover ``pae(payload_type, payload)`` and nothing else; the envelope's
  ``keyid`` is an unauthenticated hint used only to pick the trusted key.
* ``Envelope.payload`` holds the exact signed bytes; callers use those bytes after
  verification and never re-encode or re-parse the envelope to get them.
* ``to_json_obj`` writes standard base64 with padding; ``parse_envelope`` accepts standard
  or URL-safe base64 (the spec requires both), padded and canonical, one alphabet per value.
* Trusted keys are keyed by ``ledger.trust.keys.key_id``; a verified key id is always that value.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Literal

import rfc8785
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ledger.errors import InputError, KeyFileError
from ledger.trust.keys import SIGNATURE_SIZE, Signer, key_id, verify

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject

PAE_PREFIX: Final = b"DSSEv1"
PROVLEDGER_PAYLOAD_TYPE_PREFIX: Final = "application/vnd.provledger."
PROVLEDGER_PAYLOAD_TYPE_SUFFIX: Final = "+json"
_KIND_RE: Final = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")

SignatureStatus = Literal["ok", "unknown-key", "bad-signature", "malformed"]


class EnvelopeError(InputError):
    """A DSSE envelope is not well formed (exit 3)."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """DSSE v1 pre-authentication encoding.

    ``"DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`` where ``type`` is the UTF-8 of
    ``payload_type`` and LEN is the ASCII decimal byte length without leading zeros.
    """
    type_bytes = payload_type.encode("utf-8")
    body = bytes(payload)
    return b"%s %d %s %d %s" % (PAE_PREFIX, len(type_bytes), type_bytes, len(body), body)


def payload_type_for(kind: str) -> str:
    """The DSSE payloadType of a ledger object: ``application/vnd.provledger.<kind>+json``."""
    if not isinstance(kind, str) or not _KIND_RE.fullmatch(kind):
        raise InputError(
            f"object kind for a payloadType, got {kind!r}, expected lowercase words joined by '-'"
        )
    return f"{PROVLEDGER_PAYLOAD_TYPE_PREFIX}{kind}{PROVLEDGER_PAYLOAD_TYPE_SUFFIX}"


def kind_of_payload_type(payload_type: str) -> str | None:
    """The kind named by a provledger payloadType, or None if it is not one."""
    if not payload_type.startswith(PROVLEDGER_PAYLOAD_TYPE_PREFIX) or not payload_type.endswith(
        PROVLEDGER_PAYLOAD_TYPE_SUFFIX
    ):
        return None
    kind = payload_type[len(PROVLEDGER_PAYLOAD_TYPE_PREFIX) : -len(PROVLEDGER_PAYLOAD_TYPE_SUFFIX)]
    return kind if _KIND_RE.fullmatch(kind) else None


# --- values --------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """One DSSE signature: the unauthenticated ``keyid`` hint ("" when unset) and raw bytes."""

    keyid: str
    sig: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.keyid, str):
            raise EnvelopeError(f"signature keyid, got {type(self.keyid).__name__}, expected str")
        if not isinstance(self.sig, bytes):
            raise EnvelopeError(f"signature sig, got {type(self.sig).__name__}, expected bytes")


@dataclass(frozen=True)
class Envelope:
    """A DSSE envelope. ``payload`` is the exact byte string that was signed (via PAE)."""

    payload: bytes
    payload_type: str
    signatures: tuple[Signature, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.payload, bytes):
            raise EnvelopeError(
                f"envelope payload, got {type(self.payload).__name__}, expected bytes"
            )
        if not isinstance(self.payload_type, str):
            raise EnvelopeError(
                f"envelope payloadType, got {type(self.payload_type).__name__}, expected str"
            )
        try:
            self.payload_type.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise EnvelopeError(
                "envelope payloadType, got a string that is not valid Unicode (lone surrogate), "
                "expected UTF-8 encodable text"
            ) from exc
        if not isinstance(self.signatures, tuple) or not all(
            isinstance(s, Signature) for s in self.signatures
        ):
            raise EnvelopeError(
                f"envelope signatures, got {type(self.signatures).__name__}, "
                "expected a tuple of Signature"
            )

    def pae(self) -> bytes:
        """The bytes every signature of this envelope covers."""
        return pae(self.payload_type, self.payload)

    def to_json_obj(self) -> JSONObject:
        """Standard JSON envelope: standard base64 (padded); ``keyid`` always written."""
        return {
            "payload": base64.b64encode(self.payload).decode("ascii"),
            "payloadType": self.payload_type,
            "signatures": [
                {"keyid": s.keyid, "sig": base64.b64encode(s.sig).decode("ascii")}
                for s in self.signatures
            ],
        }

    def to_json_bytes(self) -> bytes:
        """RFC 8785 canonical bytes of ``to_json_obj()`` (what the ledger stores and hashes)."""
        encoded: bytes = rfc8785.dumps(self.to_json_obj())
        return encoded


@dataclass(frozen=True)
class SignatureCheck:
    """The outcome for one signature of an envelope.

    ``keyid`` is copied from the envelope (unauthenticated); ``verified_key_id`` is the
    ``key_id`` of the trusted key that verified the signature, set only when ``status`` is ok.
    """

    index: int
    keyid: str
    status: SignatureStatus
    verified_key_id: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# --- parsing -------------------------------------------------------------------------

_STD_ONLY: Final = frozenset("+/")
_URL_ONLY: Final = frozenset("-_")


def _b64decode(value: object, where: str) -> bytes:
    """Strict base64: standard or URL-safe alphabet (not mixed), padded, canonical."""
    if not isinstance(value, str):
        raise EnvelopeError(f"{where}, got {type(value).__name__}, expected a base64 string")
    chars = set(value)
    url_safe = bool(chars & _URL_ONLY)
    if url_safe and chars & _STD_ONLY:
        raise EnvelopeError(
            f"{where}, got base64 mixing standard and URL-safe alphabets, expected one alphabet"
        )
    altchars = b"-_" if url_safe else None
    try:
        data = base64.b64decode(value.encode("ascii"), altchars=altchars, validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise EnvelopeError(f"{where}, got invalid base64 ({exc}), expected padded base64") from exc
    encoder = base64.urlsafe_b64encode if url_safe else base64.b64encode
    if encoder(data).decode("ascii") != value:
        # Non-zero padding bits or stray characters: two spellings for one byte string.
        raise EnvelopeError(f"{where}, got non-canonical base64, expected canonical base64")
    return data


def parse_envelope(obj: object) -> Envelope:
    """An ``Envelope`` from a parsed JSON envelope object; raises ``EnvelopeError``.

    Required: ``payload`` (base64), ``payloadType`` (str), ``signatures`` (list of objects
    with ``sig`` (base64) and optional ``keyid`` (str, unset = "")). Unknown members are
    ignored, as the spec requires.
    """
    if not isinstance(obj, Mapping):
        raise EnvelopeError(f"DSSE envelope, got {type(obj).__name__}, expected a JSON object")
    for name in ("payload", "payloadType", "signatures"):
        if name not in obj:
            raise EnvelopeError(f"DSSE envelope, got no '{name}' member, expected one")
    payload = _b64decode(obj["payload"], "envelope payload")
    payload_type = obj["payloadType"]
    if not isinstance(payload_type, str):
        raise EnvelopeError(
            f"envelope payloadType, got {type(payload_type).__name__}, expected a string"
        )
    raw_signatures = obj["signatures"]
    if not isinstance(raw_signatures, list):
        raise EnvelopeError(
            f"envelope signatures, got {type(raw_signatures).__name__}, expected a list"
        )
    signatures: list[Signature] = []
    for index, item in enumerate(raw_signatures):
        where = f"envelope signatures[{index}]"
        if not isinstance(item, Mapping):
            raise EnvelopeError(f"{where}, got {type(item).__name__}, expected a JSON object")
        if "sig" not in item:
            raise EnvelopeError(f"{where}, got no 'sig' member, expected one")
        keyid = item.get("keyid", "")
        if not isinstance(keyid, str):
            raise EnvelopeError(f"{where}.keyid, got {type(keyid).__name__}, expected a string")
        signatures.append(Signature(keyid=keyid, sig=_b64decode(item["sig"], f"{where}.sig")))
    return Envelope(payload=payload, payload_type=payload_type, signatures=tuple(signatures))


# --- signing and verification --------------------------------------------------------


def _signature_by(signer: Signer, message: bytes) -> Signature:
    """Sign and check the result, so a misbehaving signer (HSM/KMS) cannot slip through."""
    public_key = signer.public_key
    if signer.key_id != key_id(public_key):
        raise KeyFileError(
            f"signer key id, got {signer.key_id}, expected {key_id(public_key)} "
            "(sha256 of its raw public key)"
        )
    sig = signer.sign(message)
    if not verify(public_key, message, sig):
        raise KeyFileError(
            f"signer {signer.key_id} output, got a signature that does not verify, "
            "expected a valid Ed25519 signature"
        )
    return Signature(keyid=signer.key_id, sig=bytes(sig))


def sign_envelope(payload_type: str, payload: bytes, signer: Signer) -> Envelope:
    """A one-signature envelope over ``pae(payload_type, payload)``; keyid = signer.key_id."""
    envelope = Envelope(payload=bytes(payload), payload_type=payload_type, signatures=())
    return add_signature(envelope, signer)


def add_signature(envelope: Envelope, signer: Signer) -> Envelope:
    """A copy of ``envelope`` with one more signature (multi-signature envelopes)."""
    signature = _signature_by(signer, envelope.pae())
    return Envelope(
        payload=envelope.payload,
        payload_type=envelope.payload_type,
        signatures=(*envelope.signatures, signature),
    )


def _check_trusted(trusted: Mapping[str, Ed25519PublicKey]) -> None:
    for name, public_key in trusted.items():
        if not isinstance(public_key, Ed25519PublicKey):
            raise KeyFileError(
                f"trusted key {name}, got {type(public_key).__name__}, expected Ed25519PublicKey"
            )
        actual = key_id(public_key)
        if name != actual:
            raise KeyFileError(f"trusted key map entry, got key id {name}, expected {actual}")


def verify_envelope_detailed(
    envelope: Envelope, trusted: Mapping[str, Ed25519PublicKey]
) -> tuple[SignatureCheck, ...]:
    """One ``SignatureCheck`` per signature, in envelope order.

    ``trusted`` maps ``key_id(pk) -> pk`` (anything else raises ``KeyFileError``). A
    signature whose keyid is set is checked only against that key (``unknown-key`` if it is
    not trusted); an unset keyid tries every trusted key. ``malformed`` means the signature
    is not 64 bytes; ``bad-signature`` means no candidate key verifies it.
    """
    _check_trusted(trusted)
    message = envelope.pae()
    checks: list[SignatureCheck] = []
    for index, signature in enumerate(envelope.signatures):
        status: SignatureStatus
        verified: str | None = None
        if len(signature.sig) != SIGNATURE_SIZE:
            status = "malformed"
        else:
            if signature.keyid:
                key = trusted.get(signature.keyid)
                candidates = [] if key is None else [(signature.keyid, key)]
            else:
                candidates = list(trusted.items())
            if not candidates:
                status = "unknown-key"
            else:
                verified = next(
                    (kid for kid, pk in candidates if verify(pk, message, signature.sig)), None
                )
                status = "ok" if verified is not None else "bad-signature"
        checks.append(SignatureCheck(index, signature.keyid, status, verified))
    return tuple(checks)


def verify_envelope(envelope: Envelope, trusted: Mapping[str, Ed25519PublicKey]) -> list[str]:
    """The distinct trusted key ids that produced a valid signature, in envelope order.

    An empty list means nothing verified; compare its length with a threshold for (t, n)
    envelopes. The caller still checks ``payload_type`` before using ``payload``.
    """
    verified: list[str] = []
    for check in verify_envelope_detailed(envelope, trusted):
        if check.verified_key_id is not None and check.verified_key_id not in verified:
            verified.append(check.verified_key_id)
    return verified
