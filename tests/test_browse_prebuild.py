"""What the index's checking workers build from an object's bytes (``prebuild``) is what
the projecting process would build from the same bytes itself.

A worker builds from the document its check parsed (the strict canonical parse); the
projecting process, when it checked the object itself, from ``StoredObject.json()``.
For an attestation the worker reads the members its row needs (``attestation_fields``);
any shape of those members, however malformed, must read the same both ways.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from cohorts.browse.project import attestation_fields, prebuild
from ledger.encoding.canonical import canonical_value, encode
from ledger.store.base import StoredObject

_SCALARS = st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | st.text(max_size=12)
_ANY = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)
_TEXT = st.text(max_size=24)
_SIGNATURE = st.fixed_dictionaries({}, optional={"keyid": _TEXT | _ANY, "sig": _TEXT | _ANY})
_ATTESTATION = st.fixed_dictionaries(
    {},
    optional={
        "subject": st.fixed_dictionaries({}, optional={"digest": _TEXT | _ANY, "kind": _TEXT})
        | _ANY,
        "signatures": st.lists(_SIGNATURE | _ANY, max_size=3) | _ANY,
        "payloadType": _TEXT | _ANY,
        "note": _ANY,
    },
)


def _stored(value: dict[str, Any], kind: str = "attestation") -> StoredObject:
    data = encode(json.dumps(value).encode()).canonical
    return StoredObject(
        digest="sha256:" + hashlib.sha256(data).hexdigest(),
        seq=3,
        kind=kind,
        schema_version=None,
        object_id=None,
        object_version=None,
        legacy_digest=None,
        legacy_hints=None,
        data=data,
    )


@settings(max_examples=300, deadline=None)
@given(_ATTESTATION)
def test_attestation_read_in_a_worker_equals_read_here(value: dict[str, Any]) -> None:
    obj = _stored(value)
    # As the check parses it (``check_parsed``): the fast reading, else the encoder's.
    shown, parsed = canonical_value(obj.data)
    if not shown:
        parsed = encode(obj.data).value
    assert isinstance(parsed, dict)
    in_worker = prebuild(obj, parsed)
    here = prebuild(obj, None)
    assert in_worker == here
    text, pure, fields = here
    assert pure is None and text is not None
    assert fields == attestation_fields(value)
    # A member of the wrong type reads as None, never as something else.
    # The one signature: the only object among the signatures (others are not read).
    sigs = value.get("signatures")
    objects = [s for s in sigs if isinstance(s, dict)] if isinstance(sigs, list) else []
    one = objects[0] if len(objects) == 1 else None
    subject = value.get("subject")
    assert fields[0] == (
        subject.get("digest")
        if isinstance(subject, dict) and isinstance(subject.get("digest"), str)
        else None
    )
    assert fields[2] == (
        one.get("keyid") if isinstance(one, dict) and isinstance(one.get("keyid"), str) else None
    )
    assert fields[4] == (
        one.get("sig") if isinstance(one, dict) and isinstance(one.get("sig"), str) else None
    )


def test_other_kinds_carry_no_attestation_fields() -> None:
    blob = _stored({"subject": {"digest": "sha256:" + "0" * 64}}, kind="blob")
    assert prebuild(blob, None)[1:] == (None, None)
