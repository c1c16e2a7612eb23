"""in-toto Statement v1 export of ledger objects, wrapped in DSSE.

Invariants: a statement has exactly one subject named by the caller whose digest is the
object's ``sha256:<hex>`` ledger digest; the DSSE payload is the RFC 8785 canonical bytes
of the statement, signed once and never re-serialized.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Final, cast

import rfc8785

from ledger.errors import CanonicalFormError, InputError
from ledger.trust.dsse import Envelope, sign_envelope
from ledger.trust.keys import Signer

if TYPE_CHECKING:
    from ledger.encoding.values import JSONValue

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE: Final = "https://provledger.dev/attestation/ledger-object/v0.1"
INTOTO_PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"

_DIGEST_RE: Final = re.compile(r"sha256:([0-9a-f]{64})")


def statement(
    subject_name: str, subject_digest: str, predicate: Mapping[str, object]
) -> dict[str, object]:
    """An in-toto Statement v1 about one subject with the provledger ledger-object predicate.

    ``subject_digest`` is a ledger digest ``sha256:<64 lowercase hex>``; it becomes
    ``{"sha256": "<hex>"}`` as in-toto's DigestSet requires.
    """
    if not isinstance(subject_name, str) or not subject_name:
        raise InputError(f"in-toto subject name, got {subject_name!r}, expected a non-empty string")
    match = _DIGEST_RE.fullmatch(subject_digest) if isinstance(subject_digest, str) else None
    if match is None:
        raise InputError(
            f"in-toto subject digest, got {subject_digest!r}, expected sha256:<64 lowercase hex>"
        )
    if not isinstance(predicate, Mapping):
        raise InputError(f"in-toto predicate, got {type(predicate).__name__}, expected an object")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [{"name": subject_name, "digest": {"sha256": match.group(1)}}],
        "predicateType": PREDICATE_TYPE,
        "predicate": dict(predicate),
    }


def statement_bytes(stmt: Mapping[str, object]) -> bytes:
    """RFC 8785 canonical bytes of a statement (the DSSE payload)."""
    if not isinstance(stmt, Mapping) or stmt.get("_type") != STATEMENT_TYPE:
        got = stmt.get("_type") if isinstance(stmt, Mapping) else type(stmt).__name__
        raise InputError(f"in-toto statement _type, got {got!r}, expected {STATEMENT_TYPE}")
    try:
        # rfc8785 judges whatever the statement holds: a value that is not I-JSON raises.
        encoded: bytes = rfc8785.dumps(cast("JSONValue", dict(stmt)))
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CanonicalFormError(
            f"in-toto statement, got a value RFC 8785 cannot encode ({exc}), expected I-JSON"
        ) from exc
    return encoded


def intoto_envelope(stmt: Mapping[str, object], signer: Signer) -> Envelope:
    """A DSSE envelope (payloadType application/vnd.in-toto+json) over the canonical statement."""
    return sign_envelope(INTOTO_PAYLOAD_TYPE, statement_bytes(stmt), signer)
