"""Attestation signatures verified ahead, in worker processes, for a later judgement.

Used by ``provledger verify`` (``ledger.audit.parallel``) and ``provledger import jsonl``
(``ledger.store.bulk``): the process that judges attestations is serial, while the
workers that read or prepare the objects are not. A worker that holds an attestation
and the bytes of the subject it names verifies the Ed25519 signature over the DSSE PAE
of those bytes, with the raw key its key id names (``signing_keys``: the keys known
when the pool started), and returns a ``Verdict``. The judging process puts verdicts in
a ``SignatureMemo`` (``ledger.trust.judgement``), which answers only for exactly that
key, message and signature; anything else is verified by the judgement itself. So a
wrong pairing, an unknown key or a subject not seen is a miss that costs time, never a
different answer.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass

from ledger.recent import FirstSeen
from ledger.trust.attestation import (
    ATTESTATION_KIND,
    AttestationFacts,
    attestation_facts,
    parse_attestation,
)
from ledger.trust.dsse import pae
from ledger.trust.identity import TrustIndex
from ledger.trust.judgement import SignatureMemo, signing_key
from ledger.trust.keys import verify

Verdict = tuple[bytes, bytes, bytes, bool]  # (raw key, SHA-256 of the PAE, signature, ok)

# Canonical attestation bytes name their subject first: {"digest":...,"kind":...}.
# Only a guess of which bytes to pair: a wrong guess is a memo miss.
_SUBJECT = re.compile(rb'"subject":\{"digest":"(sha256:[0-9a-f]{64})"')


@dataclass(frozen=True)
class Presign:
    """Signatures the workers check ahead: each key id's raw key, and where verdicts go."""

    keys: dict[str, bytes]
    memo: SignatureMemo


def signing_keys(index: TrustIndex) -> dict[str, bytes]:
    """The raw key each key id known to ``index`` has its signatures checked with."""
    ids = {index.authority_key_id, *(record.key_id for record in index.identities)}
    keys = {kid: signing_key(index, kid) for kid in ids if kid is not None}
    return {kid: key for kid, key in keys.items() if key is not None}


#: What ``presign_read`` gives: the verdicts, and per attestation given (in order) what
#: ``parse_attestation`` read from its bytes (None: unreadable, the judgement reports it).
Presigned = tuple[list[Verdict], list[AttestationFacts | None]]


def presign_read(signs: Iterable[tuple[bytes, bytes]], keys: dict[str, bytes]) -> Presigned:
    """The verdict on each (attestation bytes, subject bytes) whose key id has a key, and
    each attestation as read (``attestation_facts``): the judging process then reads none
    of them again (``SignatureMemo.add_read``).

    Unreadable attestations and unknown key ids give no verdict: the judgement decides.
    """
    out: list[Verdict] = []
    read: list[AttestationFacts | None] = []
    for attestation, subject in signs:
        try:
            detached = parse_attestation(attestation)
        except Exception:
            read.append(None)
            continue  # the judgement reports it
        read.append(attestation_facts(detached))
        key = keys.get(detached.signature.keyid)
        if key is None:
            continue
        message = pae(detached.payload_type, subject)
        sig = detached.signature.sig
        out.append((key, hashlib.sha256(message).digest(), sig, verify(key, message, sig)))
    return out, read


class RecentSubjects:
    """The bytes of the last ``limit`` objects seen, to pair an attestation with its subject.

    A subject is usually attested right after it is appended, so it is among them.
    """

    def __init__(self, limit: int = 4096) -> None:
        self._data: FirstSeen[object, bytes] = FirstSeen(limit)  # digest (as read) -> bytes

    def see(self, kind: object, digest: object, data: bytes) -> tuple[bytes, bytes] | None:
        """Remember an object (first bytes seen per digest); for an attestation whose
        subject was seen, (attestation bytes, subject bytes)."""
        pair = None
        if kind == ATTESTATION_KIND:
            found = _SUBJECT.search(data)
            subject = self._data.get(found.group(1).decode()) if found else None
            if subject is not None:
                pair = (data, subject)
        self._data.add(digest, data)
        return pair
