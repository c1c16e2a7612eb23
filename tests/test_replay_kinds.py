"""Admission and ``verify``'s admission replay ask a governance or state rule only about
the kinds it names (``kinds``, ``ledger.trust.admission.kinds_of``), through one dispatch
(``AdmissionPolicy.parts_for``), so the two never disagree. Exact when the names are true:

- every governance and state rule of the package's policy that names kinds gives None
  for an object of any other kind, whatever its bytes (the bytes of real governed
  records relabelled, and generated ones);
- the replay's report with the kinds used is the report asking every governance and
  rule about every entry, on a ledger a hostile writer walked back past admission.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostile_writer import sqlite_insert
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_writer import TOY, Led, _v1, burned  # noqa: F401  (a fixture)

from ledger.audit.full import audit
from ledger.store.base import StoredObject
from ledger.store.prepared import prepare_blob, prepare_value
from ledger.store.sqlite import create_store, open_store
from ledger.trust.admission import AdmissionPolicy, AdmissionRefused, default_policy, kinds_of
from ledger.trust.refusal import Refusal
from ledger.trust.standing import Standing

_POLICY = default_policy()
_NAMED = [p for p in (*_POLICY.governance, *_POLICY.state_rules) if kinds_of(p) is not None]
_KINDS = sorted({k for p in _NAMED for k in kinds_of(p) or ()})
_GOVERNED = [
    json.loads((TOY / name).read_text()) for name in ("cohort-v1.json", "burn-notice.json")
] + [_v1("frozen"), _v1("burned"), _v1("collecting")]


def test_the_package_policy_names_kinds() -> None:
    """Both of the package's governances and its lifecycle rule name their kinds."""
    assert len(_NAMED) == len(_POLICY.governance) + len(_POLICY.state_rules) == 3
    assert [sorted(kinds_of(p) or ()) for p in _NAMED] == [
        ["revocation", "verifier-identity"],
        ["benchmark-cohort", "burn-notice", "cohort-binding"],
        ["benchmark-cohort"],
    ]


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    kind=st.sampled_from([*_KINDS, "attestation", "work-unit", "blob"]) | st.text(max_size=20),
    value=st.sampled_from(_GOVERNED) | _JSON,
    named=st.sampled_from(_NAMED),
)
def test_other_kinds_get_none(burned: Led, kind: str, value: Any, named: Any) -> None:  # noqa: F811
    kinds = kinds_of(named)
    assert kinds is not None
    if kind in kinds:
        return
    data = json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
    object_id = value.get("id") if isinstance(value, dict) else None
    obj = StoredObject(
        "sha256:" + "0" * 64,
        10_000,
        kind,
        None,
        object_id if isinstance(object_id, str) else "benchmark/x",
        1,
        None,
        None,
        data,
    )
    with open_store(burned.db, readonly=True) as store:
        if hasattr(named, "governed"):
            assert named.governed(obj, store) is None
        else:
            assert named.check(obj, store, Standing(store, _POLICY)) is None


def walk_back(led: Led) -> None:
    """Written past admission into ``led`` (burned): the cohort walked back to
    collecting, then a second burn notice and an edited burned definition, unsigned."""
    notice = json.loads((TOY / "burn-notice.json").read_text())
    notice["reason"] = "a different story"
    sqlite_insert(led.db, [prepare_value(_v1("collecting"))])
    sqlite_insert(led.db, [prepare_value(notice), prepare_value(_v1("burned", title="x"))])


def test_the_report_is_the_one_asking_every_rule(
    burned: Led,  # noqa: F811  (the fixture imported above)
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    walk_back(burned)
    with open_store(burned.db, readonly=True) as store:
        named = audit(store, workers=1).to_json()
    asked: list[str] = []

    def every(self: AdmissionPolicy, kind: object) -> tuple[Any, Any]:
        asked.append(str(kind))
        return self.governance, self.state_rules

    monkeypatch.setattr(AdmissionPolicy, "parts_for", every)
    with open_store(burned.db, readonly=True) as store:
        each = audit(store, workers=1).to_json()
    assert asked  # the replay went through it
    assert named == each
    codes = {f["code"] for f in named["findings"]}
    assert {"cohort-lifecycle", "authority-governed"} <= codes


def test_a_part_without_kinds_judges_every_kind() -> None:
    class Anything:
        def governed(self, obj: StoredObject, reader: object) -> None:
            return None

    class Wrong:
        kinds = ("not", "a", "frozenset")

    assert kinds_of(Anything()) is None and kinds_of(Wrong()) is None  # type: ignore[arg-type]


@dataclass(frozen=True)
class _RefuseBlobs:
    """A state rule refusing every blob, naming ``kinds`` (truly or not)."""

    kinds: frozenset[str]

    def check(self, obj: StoredObject, reader: object, standing: object) -> Refusal | None:
        if obj.kind != "blob":
            return None
        return Refusal(obj.digest, obj.kind, "no blobs here", "none", rule="no-blobs")


@pytest.mark.parametrize(
    ("named", "refused"), [(frozenset({"blob"}), True), (frozenset({"work-unit"}), False)]
)
def test_admission_and_the_replay_ask_the_same_parts(
    tmp_path: Path, named: frozenset[str], refused: bool
) -> None:
    """One dispatch (``AdmissionPolicy.parts_for``): a rule naming its kinds truly is
    applied by both the append and ``verify``'s replay of a blob written past admission;
    one naming them wrongly by neither, so they never disagree about a ledger."""
    policy = AdmissionPolicy(state_rules=(_RefuseBlobs(named),))
    db = tmp_path / "l.db"
    create_store(db).close()
    with open_store(db, policy=policy) as store:
        store.append_many([prepare_value(_v1("collecting"))])
        try:
            store.append_many([prepare_blob(b"appended")])
            appended = True
        except AdmissionRefused:
            appended = False
    assert appended is not refused
    sqlite_insert(db, [prepare_blob(b"written past admission")])
    with open_store(db, readonly=True, policy=policy) as store:
        codes = [f["code"] for f in audit(store, workers=1).to_json()["findings"]]
    assert codes.count("no-blobs") == (2 if appended else 1) * refused
