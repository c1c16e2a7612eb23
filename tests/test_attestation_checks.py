"""The pure API: attest/attest_prepared, check_subject_attestations, seq-ordering rules."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given, settings
from hypothesis import strategies as st
from ledger_state import append_unchecked

from ledger.encoding.digest import sha256_digest
from ledger.errors import AttestationError, IdentityError, NotFound
from ledger.store.prepared import Prepared, prepare_blob, prepare_json, prepare_value
from ledger.store.sqlite import SQLiteStore, open_store
from ledger.trust.admission import AdmissionRefused
from ledger.trust.attestation import (
    attest,
    attest_prepared,
    attestation_from_value,
    detach_envelope,
    parse_attestation,
    rebuild_envelope,
)
from ledger.trust.dsse import Envelope, Signature, payload_type_for, sign_envelope
from ledger.trust.identity import (
    identity_value,
    register_identity,
    revocation_value,
    revoke_key,
    trust_index,
)
from ledger.trust.judgement import (
    check_attestation,
    check_envelope,
    check_subject_attestations,
    subject_verdict,
)
from ledger.trust.keys import Ed25519Signer

SMOKE_VR = "examples/results/phase0-smoke.verification-result.json"
WORK_UNIT = "examples/work-units/phase0-smoke.work-unit.json"
VERIFIER = ("phase0-independent-verifier", "phase0-schema-verifier", "0.1")


def _signer(seed: int) -> Ed25519Signer:
    return Ed25519Signer(Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


@pytest.fixture
def store(ledger_path: Path) -> Iterator[SQLiteStore]:
    with open_store(ledger_path) as s:
        yield s


@pytest.fixture
def authority(ledger_path: Path) -> Ed25519Signer:
    return Ed25519Signer.from_file(ledger_path.with_name(ledger_path.name + ".authority.key"))


def _vr(corpus: Path) -> Prepared:
    return prepare_json((corpus / SMOKE_VR).read_bytes())


def _register(store: SQLiteStore, authority: Ed25519Signer, signer: Ed25519Signer) -> None:
    vid, adapter, version = VERIFIER
    register_identity(
        store,
        verifier_id=vid,
        adapter=adapter,
        adapter_versions=[version],
        public_key=signer.public_key,
        authority=authority,
    )


def test_attest_builds_without_appending(
    store: SQLiteStore, authority: Ed25519Signer, corpus: Path
) -> None:
    signer = _signer(1)
    _register(store, authority, signer)
    vr = _vr(corpus)
    with pytest.raises(NotFound):
        attest(store, vr.digest, signer)
    # The verifier runner's path: result and attestation in one transaction.
    att = attest(store, vr.digest, signer, pending=[vr])
    assert att == attest_prepared(vr, signer)
    size = store.size()
    results = store.append_many([vr, att])
    assert [r.entry.seq for r in results] == [size, size + 1]
    assert attest(store, vr.digest, signer) == att  # deterministic, and nothing appended
    assert store.size() == size + 2
    [verdict] = check_subject_attestations(store, vr.digest, store.policy)
    assert verdict.ok and verdict.verifier_id == VERIFIER[0] and verdict.seq == size + 1
    assert subject_verdict([verdict]) == (True, "1 valid attestation(s)")
    stored = store.get(att.digest)
    assert stored is not None
    envelope = rebuild_envelope(store, stored)
    assert envelope == sign_envelope(payload_type_for("verification-result"), vr.data, signer)


def test_attest_refuses_bytes_that_are_not_the_subject(corpus: Path) -> None:
    vr = _vr(corpus)
    forged = Prepared(vr.digest, vr.kind, vr.data + b" ")
    with pytest.raises(AttestationError, match="hash to"):
        attest_prepared(forged, _signer(1))


def test_authority_signs_non_verifier_kinds(
    store: SQLiteStore, authority: Ed25519Signer, corpus: Path
) -> None:
    work_unit = prepare_json((corpus / WORK_UNIT).read_bytes())
    store.append_many([work_unit, attest_prepared(work_unit, authority)])
    [verdict] = check_subject_attestations(store, work_unit.digest, store.policy)
    assert verdict.ok and verdict.signer == "authority"
    # A registered verifier key may sign a work unit (no verifier binding to check) ...
    signer = _signer(2)
    _register(store, authority, signer)
    store.append_many([attest(store, work_unit.digest, signer)])
    assert [v.ok for v in check_subject_attestations(store, work_unit.digest, store.policy)] == [
        True,
        True,
    ]
    # ... an unregistered one may not: admission refuses it, and one stored past
    # admission (an older ledger) is judged invalid.
    stranger = attest(store, work_unit.digest, _signer(3))
    with pytest.raises(AdmissionRefused, match="unregistered-key"):
        store.append_many([stranger])
    append_unchecked(store.path, [stranger])
    verdicts = check_subject_attestations(store, work_unit.digest, store.policy)
    assert [v.codes for v in verdicts] == [(), (), ("unregistered-key",)]
    assert subject_verdict(verdicts)[0] is False


def test_identity_is_in_force_from_its_authority_attestation(
    store: SQLiteStore, authority: Ed25519Signer, corpus: Path
) -> None:
    signer = _signer(4)
    vid, adapter, version = VERIFIER
    identity = prepare_value(identity_value(vid, adapter, [version], signer.public_key))
    vr = _vr(corpus)
    # Identity alone, then a signature, then (too late) the authority attestation. Admission
    # refuses the first batch; a ledger written before admission may hold it.
    first = [identity, vr, attest_prepared(vr, signer)]
    with pytest.raises(
        AdmissionRefused, match=r"verifier identity .* authority-governed.*and 1 more"
    ):
        store.append_many(first)
    append_unchecked(store.path, first)
    store.append_many([attest_prepared(identity, authority)])
    [early] = check_subject_attestations(store, vr.digest, store.policy)
    assert early.codes == ("identity-not-authorized",)
    index = trust_index(store)
    [record] = index.identities
    # seq 3 is the first batch's record (it added a governed identity).
    assert record.authorized_at == 4 and index.status(record) == "active"


def test_retirement_is_in_force_from_its_authority_attestation(
    store: SQLiteStore, authority: Ed25519Signer, corpus: Path
) -> None:
    signer = _signer(5)
    _register(store, authority, signer)
    revocation = prepare_value(revocation_value(signer.key_id, "retired"))
    vr = _vr(corpus)
    first = [revocation, vr, attest_prepared(vr, signer)]
    with pytest.raises(AdmissionRefused, match="authority-governed"):
        store.append_many(first)
    append_unchecked(store.path, first)  # as a ledger written before admission may hold it
    assert check_subject_attestations(store, vr.digest, store.policy)[
        0
    ].ok  # revocation not yet attested
    store.append_many([attest_prepared(revocation, authority)])
    assert check_subject_attestations(store, vr.digest, store.policy)[
        0
    ].ok  # retired after the signature
    with pytest.raises(IdentityError, match="already revoked"):
        revoke_key(store, signer.key_id, "retired", authority=authority)
    revoke_key(store, signer.key_id, "compromised", authority=authority)
    assert check_subject_attestations(store, vr.digest, store.policy)[0].codes == (
        "revoked-compromised",
    )


def test_check_envelope_judges_as_if_appended_now(
    store: SQLiteStore, authority: Ed25519Signer, corpus: Path
) -> None:
    signer, stranger = _signer(6), _signer(7)
    vr = _vr(corpus)
    store.append_many([vr])
    envelope = sign_envelope(payload_type_for(vr.kind), vr.data, signer)
    assert check_envelope(store, envelope, store.policy)[0].codes == ("unregistered-key",)
    _register(store, authority, signer)
    assert check_envelope(store, envelope, store.policy)[0].ok
    two = Envelope(
        envelope.payload,
        envelope.payload_type,
        (*envelope.signatures, Signature(stranger.key_id, envelope.signatures[0].sig)),
    )
    assert [v.codes for v in check_envelope(store, two, store.policy)] == [
        (),
        ("unregistered-key",),
    ]
    assert len(detach_envelope(store, two)) == 2
    orphan = sign_envelope(payload_type_for(vr.kind), vr.data + b"\n", signer)
    assert "subject-missing" in check_envelope(store, orphan, store.policy)[0].codes
    with pytest.raises(NotFound):
        detach_envelope(store, orphan)


def test_check_attestation_reads_malformed_objects(store: SQLiteStore) -> None:
    from ledger.store.base import StoredObject

    bogus = StoredObject(
        "sha256:" + "1" * 64, 9, "attestation", "0.1", None, None, None, None, b"{}"
    )
    verdict = check_attestation(store, bogus, store.policy)
    assert verdict.codes == ("malformed",)


# --- properties ----------------------------------------------------------------------

KINDS = st.sampled_from(["verification-result", "work-unit", "evaluator-plan", "blob"])


@settings(max_examples=40, deadline=None)
@given(payload=st.binary(max_size=512), kind=KINDS, seed=st.integers(1, 255))
def test_detached_round_trip_rebuilds_the_signed_envelope(
    payload: bytes, kind: str, seed: int
) -> None:
    signer = _signer(seed)
    prepared = Prepared(sha256_digest(payload), kind, payload)
    att = attest_prepared(prepared, signer)
    detached = parse_attestation(att.data)
    assert detached == attestation_from_value(json.loads(att.data))
    assert prepare_value(detached.to_value(), "attestation").data == att.data
    expected = sign_envelope(payload_type_for(kind), payload, signer)
    assert detached.envelope(payload) == expected
    assert detached.subject_digest == prepared.digest


@pytest.fixture(scope="module")
def signed_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SQLiteStore, bytes]]:
    """One ledger (built once) holding a registered key and an object it signed."""
    from ledger.create import initialise

    root = tmp_path_factory.mktemp("prop")
    db = root / "ledger.db"
    initialise(db, None, root / "log.key", root / "authority.key")
    authority = Ed25519Signer.from_file(root / "authority.key")
    with open_store(db) as s:
        _register(s, authority, _signer(9))
        subject = prepare_blob(b"candidate.patch bytes\n")
        s.append_many([subject])
        yield s, subject.data


@settings(max_examples=30, deadline=None)
@given(bit=st.integers(0, 511), field=st.sampled_from(["sig", "payloadType", "payload"]))
def test_any_single_change_is_caught(
    signed_store: tuple[SQLiteStore, bytes], bit: int, field: str
) -> None:
    store, payload = signed_store
    signer = _signer(9)
    envelope = sign_envelope(payload_type_for("work-unit"), payload, signer)
    [wrong] = check_envelope(store, envelope, store.policy)
    assert wrong.codes == ("payload-type-mismatch",)  # signed as the wrong kind on purpose
    envelope = sign_envelope(payload_type_for("blob"), payload, signer)
    [good] = check_envelope(store, envelope, store.policy)
    assert good.ok
    if field == "sig":
        sig = bytearray(envelope.signatures[0].sig)
        sig[bit // 8] ^= 1 << (bit % 8)
        changed = Envelope(payload, envelope.payload_type, (Signature(signer.key_id, bytes(sig)),))
        expected = {"bad-signature"}
    elif field == "payloadType":
        kind = ["result-manifest", "evaluator-plan", "work-unit", "attestation"][bit % 4]
        changed = Envelope(payload, payload_type_for(kind), envelope.signatures)
        expected = {"payload-type-mismatch", "bad-signature"}
    else:
        raw = bytearray(payload)
        raw[bit % len(raw)] ^= 1 << (bit % 7)
        changed = Envelope(bytes(raw), envelope.payload_type, envelope.signatures)
        expected = {"subject-missing"}
    [verdict] = check_envelope(store, changed, store.policy)
    assert expected <= set(verdict.codes)
