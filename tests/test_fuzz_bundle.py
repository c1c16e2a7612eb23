"""Fuzzing offline bundle verification (``ledger.log.bundle.verify_bundle``).

tests/test_bundle_format.py flips every byte of encoded bundles. This file adds changes
that keep the file well spelled (re-encoded as RFC 8785), so they get past the structure
checks and reach the hash, signature and proof checks: values replaced, members dropped
or added, list items dropped, duplicated or reordered, two changes at once; and arbitrary
bytes. Property: ``verify_bundle`` raises ``BundleError`` (exit 1) and nothing else, or
(only when whole attestations were left out) verifies to exactly the original claims
minus those attestations: a bundle may say less, never something else.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import rfc8785
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

bundle = pytest.importorskip("ledger.log.bundle")

FUZZ = settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, Any], str]:
    """A bundle of a blob with two attestations, entries around it; (bytes, value, key)."""
    import json

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from ledger_state import admit_all  # bundle format, not trust: arbitrary signers

    from ledger.create import initialise
    from ledger.log.checkpoints import make_checkpoint
    from ledger.store.prepared import Prepared, prepare_blob
    from ledger.store.sqlite import open_store
    from ledger.trust.attestation import attest_prepared
    from ledger.trust.keys import Ed25519Signer, load_private_key

    tmp = tmp_path_factory.mktemp("fuzz-bundle")
    db = tmp / "ledger.db"
    info = initialise(db, "fuzz.example/log", tmp / "log.key", tmp / "auth.key")
    subject = prepare_blob(b"the subject of the bundle")
    items: list[Prepared] = [prepare_blob(b"before %d" % i) for i in range(5)]
    items.append(subject)
    for n in range(2):
        items.append(prepare_blob(b"between %d" % n))
        items.append(attest_prepared(subject, Ed25519Signer(Ed25519PrivateKey.generate())))
    items += [prepare_blob(b"after %d" % i) for i in range(3)]
    with open_store(db, policy=admit_all()) as store:
        store.append_many(items)
        make_checkpoint(store, load_private_key(tmp / "log.key"))
        made, omitted = bundle.build_bundle(store, subject.digest)
    assert omitted == ()
    data = made.encode()
    return data, json.loads(data), str(info["log_verifier_key"])


def _encode(value: Any) -> bytes:
    return bytes(rfc8785.dumps(value)) + b"\n"


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


replacement = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-1, 2**53 - 1),
    st.text(max_size=8),
    st.just(""),
    st.builds(list),  # a fresh list each draw: _change mutates what it adds
    st.builds(dict),
    st.sampled_from(["sha256:" + "0" * 64, "blob", "attestation", "AAAA", "0"]),
)


def _change(value: dict[str, Any], data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_paths(value)[1:]))
    parent: Any = value
    for step in path[:-1]:
        parent = parent[step]
    key = path[-1]
    old = parent[key]
    action = data.draw(st.sampled_from(["replace", "drop", "add", "edit", "shuffle"]))
    if action == "drop":
        del parent[key]
    elif action == "add" and isinstance(old, dict):
        old[data.draw(st.sampled_from(["extra", "digest", "data", "kind", "seq"]))] = data.draw(
            replacement
        )
    elif action == "edit" and isinstance(old, str) and old:
        at = data.draw(st.integers(0, len(old) - 1))
        c = data.draw(st.characters(codec="utf-8").filter(lambda c: c != old[at]))
        parent[key] = old[:at] + c + old[at + 1 :]
    elif action == "edit" and isinstance(old, int) and not isinstance(old, bool):
        parent[key] = old + data.draw(st.sampled_from([-1, 1, 2**32]))
    elif action == "shuffle" and isinstance(old, list) and len(old) > 1:
        parent[key] = [*old[1:], old[0]] if data.draw(st.booleans()) else [*old, old[0]]
    else:
        parent[key] = data.draw(replacement)


def _rejected(data: bytes, key: str) -> None:
    try:
        bundle.verify_bundle(data, key)
    except bundle.BundleError as exc:
        assert exc.exit_code == 1 and "\n" not in str(exc)
        return
    pytest.fail("a changed bundle verified")


def test_untouched_bundle_verifies(built: tuple[bytes, dict[str, Any], str]) -> None:
    data, value, key = built
    assert _encode(value) == data
    assert len(bundle.verify_bundle(data, key).attestations) == 2


@FUZZ
@given(st.data())
def test_well_spelled_changes_are_rejected(
    built: tuple[bytes, dict[str, Any], str], data: st.DataObject
) -> None:
    raw, value, key = built
    changed = copy.deepcopy(value)
    for _ in range(data.draw(st.integers(1, 2))):
        if not isinstance(changed, dict) or not _paths(changed)[1:]:
            break
        _change(changed, data)
    encoded = _encode(changed)
    if encoded == raw:
        return
    try:
        weaker = bundle.verify_bundle(encoded, key)
    except bundle.BundleError as exc:
        assert exc.exit_code == 1 and "\n" not in str(exc)
        return
    original = bundle.verify_bundle(raw, key)
    assert (weaker.subject, weaker.data, weaker.checkpoint) == (
        original.subject,
        original.data,
        original.checkpoint,
    )
    assert set(weaker.attestations) < set(original.attestations)


@FUZZ
@given(st.binary(max_size=400))
def test_arbitrary_bytes_are_bundle_errors(
    built: tuple[bytes, dict[str, Any], str], blob: bytes
) -> None:
    _rejected(blob, built[2])


@FUZZ
@given(st.data())
def test_splicing_a_prefix_of_another_bundle_fails(
    built: tuple[bytes, dict[str, Any], str], data: st.DataObject
) -> None:
    raw, _, key = built
    cut = data.draw(st.integers(0, len(raw) - 1))
    tail = data.draw(st.sampled_from([b"", b"\n", b" ", b"{}", raw]))
    spliced = raw[:cut] + tail
    if spliced != raw:
        _rejected(spliced, key)
