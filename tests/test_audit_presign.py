"""Signature checks in the audit's worker processes (``ledger.audit.parallel.Presign``).

The workers verify attestation signatures ahead; the audit's judgement uses a verdict
only for exactly the key, message and signature it was computed for. Same findings
with or without workers, and a forged signature is still found.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from ledger_state import append_unchecked

from ledger.audit.full import audit
from ledger.store.prepared import prepare_blob, prepare_value
from ledger.store.sqlite import open_store
from ledger.trust import judgement
from ledger.trust.attestation import attest
from ledger.trust.judgement import SignatureMemo
from ledger.trust.keys import Ed25519Signer

BLOBS = 40


def _forged(attestation: bytes) -> Any:
    """The attestation with its signature replaced by another key's (same key id)."""
    value = json.loads(attestation)
    other = Ed25519PrivateKey.from_private_bytes(b"\7" * 32).sign(b"something else")
    value["signatures"][0]["sig"] = base64.b64encode(other).decode("ascii")
    return value


@pytest.fixture
def attested(ledger_path: Path) -> tuple[Path, int]:
    """BLOBS blobs, each followed by the authority's attestation; one signature forged."""
    authority = Ed25519Signer.from_file(ledger_path.with_name(ledger_path.name + ".authority.key"))
    items = []
    with open_store(ledger_path, readonly=True) as store:
        for i in range(BLOBS):
            blob = prepare_blob(b"blob %d" % i)
            items += [blob, attest(store, blob.digest, authority, pending=[blob])]
    forged_at = 2 * 17 + 1
    items[forged_at] = prepare_value(_forged(items[forged_at].data))
    append_unchecked(ledger_path, items)
    return ledger_path, forged_at


def _counted_audits(
    db: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> tuple[tuple[Any, int], tuple[Any, int]]:
    """The audit in one process and with workers, each with the number of calls the
    judgement made in this process to its function ``name``."""
    calls = 0
    real = getattr(judgement, name)

    def counted(*args: Any) -> Any:
        nonlocal calls
        calls += 1
        return real(*args)

    monkeypatch.setattr(judgement, name, counted)
    with open_store(db, readonly=True) as store:
        alone = audit(store, workers=1)
        in_process, calls = calls, 0
        pooled = audit(store, workers=2)
    return (alone, in_process), (pooled, calls)


def test_workers_verify_signatures_with_the_same_findings(
    attested: tuple[Path, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    db, forged_at = attested
    (alone, in_process), (pooled, calls) = _counted_audits(db, monkeypatch, "verify")
    assert in_process == BLOBS  # every signature checked here without workers
    assert calls == 0  # with workers, every verdict came from them
    assert alone.to_json() == pooled.to_json()
    assert [(f.code, f.seq) for f in pooled.findings] == [("bad-signature", forged_at)]


def test_a_memo_answers_only_what_it_was_computed_for() -> None:
    key = Ed25519PrivateKey.from_private_bytes(b"\1" * 32)
    raw = key.public_key().public_bytes_raw()
    sig = key.sign(b"message")
    memo = SignatureMemo()
    # A (wrong) verdict recorded for other bytes is never used for these.
    memo.add(raw, hashlib.sha256(b"other").digest(), sig, False)
    assert memo.verify(raw, b"message", sig) is True
    memo.add(raw, hashlib.sha256(b"message").digest(), sig, False)
    assert memo.verify(raw, b"message", sig) is False  # an exact match is used, once
    assert memo.verify(raw, b"message", sig) is True


def _malformed(attestation: bytes, how: str) -> Any:
    value = json.loads(attestation)
    if how == "two signatures":
        value["signatures"] = value["signatures"] * 2
    elif how == "bad base64":
        value["signatures"][0]["sig"] = "not base64!"
    elif how == "unknown key":
        value["signatures"][0]["keyid"] = "0" * 64
    else:  # another subject kind: read fine, judged wrong
        value["subject"]["kind"] = "work-unit"
    return value


def test_the_judgement_reads_no_attestation_a_worker_read(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With workers, each attestation whose subject they saw is read there
    (``presign_read``) and judged from what they read (``SignatureMemo.read``): the same
    findings as one process reading every one itself, also for attestations that are
    malformed, name an unknown key or another kind."""
    authority = Ed25519Signer.from_file(ledger_path.with_name(ledger_path.name + ".authority.key"))
    items = []
    hows = ["two signatures", "bad base64", "unknown key", "wrong kind"]
    unreadable: dict[int, bytes] = {}  # seq -> bytes written past the store (schema-invalid)
    with open_store(ledger_path, readonly=True) as store:
        for i in range(BLOBS):
            blob = prepare_blob(b"blob %d" % i)
            att = attest(store, blob.digest, authority, pending=[blob])
            how = hows[(i // 9) % len(hows)]
            if i % 9 == 4 and how in ("unknown key", "wrong kind"):
                att = prepare_value(_malformed(att.data, how))
            elif i % 9 == 4:
                unreadable[2 * i + 1] = json.dumps(_malformed(att.data, how)).encode()
            items += [blob, att]
    append_unchecked(ledger_path, items)
    conn = sqlite3.connect(ledger_path)
    conn.execute("DROP TRIGGER objects_no_update")
    for seq, data in unreadable.items():
        conn.execute("UPDATE objects SET data = ? WHERE seq = ?", (data, seq))
    conn.commit()
    conn.close()
    (alone, in_process), (pooled, reads) = _counted_audits(
        ledger_path, monkeypatch, "parse_attestation"
    )
    assert in_process == BLOBS  # each read by the judgement without workers
    assert reads == 2  # with workers only the unreadable ones (read again to report them)
    assert alone.to_json() == pooled.to_json()
    codes = {f.code for f in pooled.findings}
    assert len(codes) >= 3, codes
