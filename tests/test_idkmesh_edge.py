"""The generic core names no IDKMesh kind: kinds are data, attestation rules a plug-in."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import given
from hypothesis import strategies as st
from ledger_state import append_unchecked

from ledger.errors import KindError
from ledger.schema import kinds
from ledger.store.prepared import prepare_json
from ledger.store.sqlite import SQLiteStore, open_store
from ledger.trust.admission import CORE_ONLY, AdmissionPolicy, default_policy
from ledger.trust.attestation import attest_prepared
from ledger.trust.identity import register_identity
from ledger.trust.judgement import check_subject_attestations
from ledger.trust.keys import Ed25519Signer
from verifiers.attestation_policy import IDKMeshAttestationPolicy

ROOT = Path(__file__).resolve().parents[1]
# Core kinds: "checkpoint", "batch" and "legacy-alias" records are written by the store
# itself, a "history-import" marker by an importer.
CORE_KINDS = {
    "attestation",
    "verifier-identity",
    "revocation",
    "checkpoint",
    "batch",
    "legacy-alias",
    "history-import",
}
IDKMESH_KINDS = set(kinds.KINDS) - CORE_KINDS
SMOKE_VR = "examples/results/phase0-smoke.verification-result.json"


def test_every_registered_version_has_its_schema_and_every_schema_is_registered() -> None:
    registered = {
        f"{spec.name}-v{version}.schema.json"
        for spec in kinds.KINDS.values()
        for version in spec.versions
    }
    shipped = {p.name for p in (ROOT / "schemas").glob("*.schema.json")}
    assert registered == shipped
    assert {"work-unit", "verification-result", "burn-notice"} <= IDKMESH_KINDS


def test_registry_data_gives_the_documented_detection_and_refs() -> None:
    plan = kinds.detect_kind(
        {"binding": {"work_unit_digest": "sha256:" + "a" * 64}, "required_validator_ids": []}
    )
    assert plan.name == "evaluator-plan"
    assert plan.refs({"binding": {"work_unit_digest": "sha256:" + "a" * 64}}) == [
        ("binds-work-unit", "sha256:" + "a" * 64)
    ]
    assert kinds.get_kind("revocation").object_id({"key_id": "k"}) == "k"
    assert kinds.get_kind("attestation").object_id({"id": "x"}) is None


_UPSTREAM = [spec for spec in kinds.KINDS.values() if not spec.native]
_DETECT_KEYS = sorted({k for spec in _UPSTREAM for k in spec.detect_keys})


@st.composite
def _shapes(draw: st.DrawFn) -> dict[str, None]:
    """The detect keys of some kinds (exactly one kind's, often), some taken away, some
    other members added."""
    chosen = draw(st.lists(st.sampled_from(_UPSTREAM), max_size=3))
    keys = {k for spec in chosen for k in spec.detect_keys}
    keys -= set(draw(st.lists(st.sampled_from(_DETECT_KEYS), max_size=2)))
    keys |= set(draw(st.lists(st.sampled_from(["other", "schema_version"]), max_size=2)))
    return dict.fromkeys(keys)


@given(_shapes())
def test_detection_is_the_documented_rule(doc: dict[str, None]) -> None:
    """Exactly one non-native kind whose ``detect_keys`` are all members, in registry
    order of the candidates; none or several is a ``KindError`` naming them."""
    matches = [
        spec
        for spec in kinds.KINDS.values()
        if not spec.native and all(key in doc for key in spec.detect_keys)
    ]
    if len(matches) == 1:
        assert kinds.detect_kind(doc) is matches[0]
        return
    with pytest.raises(KindError) as caught:
        kinds.detect_kind(doc)
    if matches:
        assert ", ".join(spec.name for spec in matches) in str(caught.value)


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(format="other/v9"),
        lambda d: d.update(extra=1),
        lambda d: d["kinds"][0].update(colour="red"),
        lambda d: d["kinds"].append(dict(d["kinds"][0])),
        lambda d: d["kinds"][0].update(detect_keys=[]),
        lambda d: d["kinds"][0].update(refs=[{"rel": "x"}]),
        lambda d: d["kinds"][0].update(native="yes"),
    ],
)
def test_registry_parser_rejects_what_it_does_not_understand(mutate: object) -> None:
    doc = json.loads((ROOT / "schemas" / "kinds.json").read_text())
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(ValueError):
        kinds.parse_registry(json.dumps(doc))


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return {
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    }


def test_the_core_names_no_idkmesh_kind() -> None:
    found = {}
    for path in sorted((ROOT / "ledger").rglob("*.py")):
        if "cli" in path.relative_to(ROOT / "ledger").parts:
            continue  # the composition root mounts the IDKMesh commands
        named = _string_constants(path) & IDKMESH_KINDS
        if named:
            found[str(path.relative_to(ROOT))] = sorted(named)
    assert found == {}


def test_default_policy_is_idkmesh_loaded_from_the_package_entry_points() -> None:
    from cohorts.admission import CohortGovernance, CohortLifecycle

    policy = default_policy()
    assert isinstance(policy.attestation, IDKMeshAttestationPolicy)
    assert CohortGovernance() in policy.governance
    assert CohortLifecycle() in policy.state_rules
    assert policy == default_policy()  # a value: built again, equal
    assert CORE_ONLY.state_rules == () and not CORE_ONLY.attestation.verifier_signed(
        "verification-result"
    )


@pytest.fixture
def store(ledger_path: Path) -> Iterator[SQLiteStore]:
    with open_store(ledger_path) as s:
        yield s


def test_verifier_rules_come_from_the_policy(
    store: SQLiteStore, ledger_path: Path, corpus: Path
) -> None:
    authority = Ed25519Signer.from_file(ledger_path.with_name(ledger_path.name + ".authority.key"))
    signer = Ed25519Signer(Ed25519PrivateKey.from_private_bytes(bytes([9]) * 32))
    register_identity(
        store,
        verifier_id="someone-else",
        adapter="other-adapter",
        adapter_versions=["9.9"],
        public_key=signer.public_key,
        authority=authority,
    )
    vr = prepare_json((corpus / SMOKE_VR).read_bytes())
    # Admission refuses these attestations; a ledger written before admission may hold them.
    append_unchecked(store.path, [vr, attest_prepared(vr, signer), attest_prepared(vr, authority)])

    idkmesh = [v.codes for v in check_subject_attestations(store, vr.digest, store.policy)]
    assert idkmesh == [("wrong-verifier-id", "wrong-adapter-version"), ("unregistered-key",)]
    assert store.policy == default_policy()

    generic = check_subject_attestations(store, vr.digest, AdmissionPolicy())
    assert [v.codes for v in generic] == [(), ()]
    assert [v.signer for v in generic] == ["verifier", "authority"]
