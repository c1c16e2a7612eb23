"""The admission gate, rule by rule, on bytes (in the manner of python-tuf's
``tests/test_trusted_metadata_set.py``).

Each test starts from one trusted state in memory (``memory_ledger.MemoryLedger``: the
ledger's authority key, a registered verifier identity, a WorkUnit, its ResultManifest)
and asks the package's default policy (``default_policy``) about one batch of objects,
changing one thing from a batch it admits. The CLI tests (``tests/test_admission.py``)
show the same rules on every write path of a real ledger; these show each rule alone,
with no store, no CLI and nothing installed.
"""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import bench_corpus
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from memory_ledger import MemoryLedger, judged

from cohorts.definition import definition_digests
from ledger.store.prepared import Prepared, prepare_value
from ledger.trust.admission import CORE_ONLY, AdmissionPolicy, default_policy
from ledger.trust.attestation import attest_prepared
from ledger.trust.identity import identity_value, revocation_value
from ledger.trust.keys import Ed25519Signer

TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
VERIFIER_ID, ADAPTER, VERSION = "idkmesh-local-verifier", "deterministic-patch-verifier", "0.3.0"


def _signer(seed: int) -> Ed25519Signer:
    return Ed25519Signer(Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


AUTHORITY, VERIFIER, STRANGER = _signer(1), _signer(2), _signer(3)
POLICY = default_policy()


def _toy(name: str, **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / name).read_text())
    value.update(changes)
    return value


def _cohort(stage: str, **changes: Any) -> Prepared:
    return prepare_value(_toy("cohort-v1.json", stage=stage, **changes))


def _identity(signer: Ed25519Signer = VERIFIER, verifier_id: str = VERIFIER_ID) -> Prepared:
    return prepare_value(identity_value(verifier_id, ADAPTER, [VERSION], signer.public_key))


def _retyped(att: Prepared, **changes: Any) -> Prepared:
    """``att`` with members of its stored value replaced (a forged attestation)."""
    value = json.loads(att.data)
    value.update(changes)
    return prepare_value(value)


class State:
    """The trusted state every test starts from, and the documents it makes."""

    def __init__(self, policy: AdmissionPolicy = POLICY, worker: str | None = None) -> None:
        rng = random.Random(7)
        self.wu = bench_corpus.work_unit(rng, 1, "rules", "a" * 40)
        wu_digest = bench_corpus._digest(self.wu)
        self.rm = bench_corpus.result_manifest(rng, self.wu, wu_digest, 1, 1_790_000_000.0)
        if worker is not None:
            self.rm["worker"]["id"] = worker
        rm_digest = bench_corpus._digest(self.rm)
        self.vr = prepare_value(
            bench_corpus.verification_result(
                rng, self.wu, wu_digest, self.rm, rm_digest, "sha256:" + "0" * 64, 1.79e9
            )
        )
        self.ledger = MemoryLedger.with_authority(policy, AUTHORITY)
        identity = _identity()
        self.ledger.add(
            identity,
            attest_prepared(identity, AUTHORITY),
            prepare_value(self.wu),
            prepare_value(self.rm),
        )

    def judge(self, *items: Prepared, history: bool = False) -> list[str]:
        return judged(self.ledger, items, history)


@pytest.fixture
def state() -> State:
    return State()


def _refused(found: list[str], *says: str) -> None:
    assert found, "admitted, expected a refusal"
    assert all(text in found[0] for text in says), found


# --- 1. attestations verify, as of their own position ---------------------------------


def test_valid_attestations_are_admitted(state: State) -> None:
    wu = prepare_value(state.wu)
    assert state.judge(attest_prepared(wu, AUTHORITY)) == []
    assert state.judge(state.vr, attest_prepared(state.vr, VERIFIER)) == []


def test_signature_over_other_bytes_is_refused(state: State) -> None:
    wu = prepare_value(state.wu)
    other = attest_prepared(prepare_value(state.rm), AUTHORITY)
    forged = _retyped(
        attest_prepared(wu, AUTHORITY), signatures=json.loads(other.data)["signatures"]
    )
    _refused(state.judge(forged), "bad-signature")


def test_attestation_of_an_object_not_stored_is_refused(state: State) -> None:
    _refused(state.judge(attest_prepared(state.vr, VERIFIER)), "subject-missing")


def test_attestation_with_another_payload_type_is_refused(state: State) -> None:
    wu = prepare_value(state.wu)
    forged = _retyped(attest_prepared(wu, AUTHORITY), payloadType="application/vnd.provledger.blob")
    _refused(state.judge(forged), "payload-type-mismatch")


def test_attestation_by_an_unregistered_key_is_refused(state: State) -> None:
    _refused(state.judge(attest_prepared(prepare_value(state.wu), STRANGER)), "unregistered-key")


def test_identity_signs_only_once_the_authority_attested_it(state: State) -> None:
    identity = _identity(STRANGER, "another-verifier")
    state.ledger.add(identity)  # stored (e.g. unsigned history), never authority-attested
    found = state.judge(attest_prepared(prepare_value(state.wu), STRANGER))
    _refused(found, "identity-not-authorized")


@pytest.mark.parametrize("reason", ["compromised", "retired"])
def test_revoked_key_signs_nothing_after_its_revocation(state: State, reason: str) -> None:
    revocation = prepare_value(revocation_value(VERIFIER.key_id, reason))
    state.ledger.add(revocation, attest_prepared(revocation, AUTHORITY))
    _refused(state.judge(state.vr, attest_prepared(state.vr, VERIFIER)), f"revoked-{reason}")


# --- 1b. the attestation policy: who may attest a verifier's statement ------------------


def test_verifier_statement_needs_a_verifier_not_the_authority(state: State) -> None:
    _refused(state.judge(state.vr, attest_prepared(state.vr, AUTHORITY)), "unregistered-key")
    # The generic core alone knows no verifier-signed kind: the authority key suffices.
    assert State(CORE_ONLY).judge(state.vr, attest_prepared(state.vr, AUTHORITY)) == []


def test_verifier_must_hold_the_claimed_id_and_adapter_version(state: State) -> None:
    value = json.loads(state.vr.data)
    value["verifier"]["adapter_version"] = "9.9"
    vr = prepare_value(value)
    _refused(state.judge(vr, attest_prepared(vr, VERIFIER)), "wrong-adapter-version")
    value["verifier"]["id"] = "someone-else"
    vr = prepare_value(value)
    _refused(state.judge(vr, attest_prepared(vr, VERIFIER)), "wrong-verifier-id")


def test_verifier_may_not_attest_its_own_work() -> None:
    own = State(worker=VERIFIER_ID)
    _refused(own.judge(own.vr, attest_prepared(own.vr, VERIFIER)), "self-verification")


# --- 2. authority-governed records need the authority in the same batch ----------------


def test_identity_needs_the_authority_in_the_same_batch(state: State) -> None:
    identity = _identity(STRANGER, "another-verifier")
    _refused(state.judge(identity), "verifier identity", "authority-governed")
    _refused(
        state.judge(identity, attest_prepared(identity, STRANGER)),
        "got an attestation by key " + STRANGER.key_id,
    )
    assert state.judge(identity, attest_prepared(identity, AUTHORITY)) == []


def test_revocation_needs_the_authority(state: State) -> None:
    revocation = prepare_value(revocation_value(VERIFIER.key_id, "retired"))
    _refused(state.judge(revocation), "revocation of key", "authority-governed")
    assert state.judge(revocation, attest_prepared(revocation, AUTHORITY)) == []


@pytest.mark.parametrize("stage", ["scaffold", "collecting", "frozen", "burned"])
def test_fixed_cohort_needs_the_authority(state: State, stage: str) -> None:
    cohort = _cohort(stage)
    found = state.judge(cohort)
    if stage in ("frozen", "burned"):
        _refused(found, f"at stage {stage}", "authority-governed", "provledger cohort")
        assert state.judge(cohort, attest_prepared(cohort, AUTHORITY)) == []
    else:
        assert found == []  # a scaffold or collecting cohort is anyone's to record


@pytest.mark.parametrize("name", ["burn-notice.json", "cohort-binding.json"])
def test_burn_notice_and_binding_need_the_authority(state: State, name: str) -> None:
    record = prepare_value(_toy(name))
    _refused(state.judge(record), "authority-governed")
    assert state.judge(record, attest_prepared(record, AUTHORITY)) == []


def test_authority_attestation_in_a_later_batch_does_not_admit(state: State) -> None:
    cohort = _cohort("frozen")
    _refused(state.judge(cohort), "authority-governed")
    # Each batch is judged alone: signing the record afterwards does not admit it now.
    _refused(state.judge(cohort), "in the same batch")


def test_history_keeps_governed_records_without_the_authority(state: State) -> None:
    assert (
        state.judge(_cohort("burned"), prepare_value(_toy("burn-notice.json")), history=True) == []
    )


# --- 3. state rules: a cohort's lifecycle only moves forward ----------------------------


@pytest.fixture
def burned(state: State) -> State:
    for stage in ("frozen", "burned"):
        cohort = _cohort(stage)
        assert state.judge(cohort, attest_prepared(cohort, AUTHORITY)) == []
        state.ledger.add(cohort, attest_prepared(cohort, AUTHORITY))
    return state


@pytest.mark.parametrize("stage", ["scaffold", "collecting", "frozen"])
def test_burned_cohort_never_walks_back(burned: State, stage: str) -> None:
    back = _cohort(stage, description="walked back")  # new bytes, whatever the stage
    _refused(burned.judge(back, attest_prepared(back, AUTHORITY)), "not a legal successor")
    _refused(burned.judge(back, history=True), "not a legal successor")
    # The generic core alone has no lifecycle rule: opting out is explicit.
    trial = copy.copy(burned.ledger)
    trial.policy = CORE_ONLY
    assert judged(trial, [back]) == []


def test_fixed_definition_never_changes(burned: State) -> None:
    edited = _toy("cohort-v1.json", stage="burned")
    edited["title"] = "another title"
    edited["definition_digest"] = definition_digests(edited).legacy
    changed = prepare_value(edited)
    _refused(burned.judge(changed, attest_prepared(changed, AUTHORITY)), "frozen definition")


def test_what_has_no_standing_never_blocks_the_authority(state: State) -> None:
    # Upstream history kept unsigned, at a later stage and with another definition ...
    history = _toy("cohort-v1.json", stage="burned", title="upstream's own title")
    history["definition_digest"] = definition_digests(history).legacy
    state.ledger.add(prepare_value(history))
    # ... and a scaffold anyone may write (it has standing, but no authority's weight).
    state.ledger.add(_cohort("scaffold", description="written by anyone"))
    frozen = _cohort("frozen")
    assert state.judge(frozen, attest_prepared(frozen, AUTHORITY)) == []
    state.ledger.add(frozen, attest_prepared(frozen, AUTHORITY))
    # Once the authority's document counts, nobody walks it back.
    _refused(state.judge(_cohort("collecting")), "frozen -> collecting")


# --- a store opened from Python applies the package's default -------------------------

_LIBRARY_USE = """
import json, sys
from pathlib import Path
from ledger.create import initialise
from ledger.store.backends import open_store
from ledger.store.prepared import prepare_value
from ledger.trust.admission import CORE_ONLY, AdmissionRefused
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer

work, toy = Path(sys.argv[1]), Path(sys.argv[2])
db = work / "ledger.db"
initialise(db, "example.org/rules", work / "log.key", work / "authority.key")
authority = Ed25519Signer.from_file(work / "authority.key")
cohort = json.loads(toy.read_text())
out = {}
with open_store(db) as store:  # no policy named: the package's default
    for stage in ("frozen", "burned"):
        doc = prepare_value(dict(cohort, stage=stage))
        store.append_many([doc, attest_prepared(doc, authority)])
    back = prepare_value(dict(cohort, stage="collecting"))
    try:
        store.append_many([back])
        out["default"] = "admitted"
    except AdmissionRefused as exc:
        out["default"] = str(exc)
    out["size"] = store.size()
with open_store(db, policy=CORE_ONLY) as store:  # the generic core alone, by name
    store.append_many([back])
    out["core_only_size"] = store.size()
out["cli_loaded"] = sorted(m for m in sys.modules if m.startswith("ledger.cli"))
print(json.dumps(out))
"""


def test_library_store_refuses_a_cohort_walk_back(tmp_path: Path) -> None:
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-c", _LIBRARY_USE, str(tmp_path), str(TOY / "cohort-v1.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    out = json.loads(proc.stdout)
    assert out["cli_loaded"] == []  # nothing of the CLI ran, nothing was installed
    assert "not a legal successor" in out["default"] and "burned -> collecting" in out["default"]
    assert out["size"] == 6  # two batches of 3 (with their batch records); nothing refused
    assert out["core_only_size"] == 7


def test_standing_is_counted_from_the_authority_attestation_on(state: State) -> None:
    from ledger.trust.standing import Standing

    frozen = _cohort("frozen")
    state.ledger.add(frozen)  # kept without the authority (as history)
    scaffold = _cohort("scaffold", id="example/anyone")
    state.ledger.add(scaffold)
    state.ledger.add(attest_prepared(frozen, AUTHORITY))
    standing = Standing(state.ledger)
    f, s, a = state.ledger.objects[-3:]
    assert standing.since(s) == s.seq and standing.has_standing(s, s.seq + 1)
    assert standing.since(f) == a.seq  # from its attestation on, not from its own entry
    assert not standing.has_standing(f, a.seq) and standing.has_standing(f, a.seq + 1)
