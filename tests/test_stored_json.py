"""One reader of stored JSON (``StoredObject.json()``) and its rule for float hints.

The rule: hints are never applied to what is read. The stored bytes (RFC 8785) are the
record and their digest is in the log; the float hints beside them are not, so no rule
or check may depend on them. RFC 8785 spells an integral double as an integer (``1.0``
is stored as ``1``) and ``json()`` reads it so. The hints serve upstream's legacy digest
alone (``ledger.store.derived``). A blob, or bytes that are not JSON, read as None.
"""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from json_values import OBJECTS

from cohorts.store_lookup import StoreLookup
from ledger.encoding.canonical import canonicalize, encode, float_hints
from ledger.encoding.digest import legacy_digest
from ledger.store.base import StoredObject
from ledger.store.derived import derive
from ledger.store.prepared import prepare_blob, prepare_json
from ledger.store.sqlite import create_store

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = (
    ROOT / "verifiers" / "fixtures" / "calibration" / "manifests" / "decoy.result-manifest.json"
)


def _row(value: dict[str, Any]) -> StoredObject:
    """An upstream-kind row of ``value`` with the float hints the append path records."""
    encoded = encode(json.dumps(value).encode("utf-8"))
    found = float_hints(encoded.value)
    hints = canonicalize(found).decode("utf-8") if found else None
    return StoredObject(
        "sha256:" + "0" * 64, 0, "work-unit", None, None, None, None, hints, encoded.canonical
    )


def _same_typed(a: Any, b: Any) -> bool:
    """Equal, and every number of the same type (``1 == 1.0`` is not enough)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_typed(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_typed(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@settings(max_examples=200, deadline=None)
@given(OBJECTS)
def test_the_value_is_the_bytes_own_whatever_the_hints(value: dict[str, Any]) -> None:
    row = _row(value)
    own = json.loads(row.data)
    assert _same_typed(row.json(), own)
    assert _same_typed(replace(row, legacy_hints=None).json(), own)
    assert row.json() == value  # the same JSON numbers: 1.0 reads as 1
    assert row.json() is not row.json()  # a fresh value: callers may change theirs


def test_a_stored_double_reads_as_its_canonical_integer_and_hints_serve_the_legacy_digest(
    tmp_path: Path,
) -> None:
    raw = json.loads(MANIFEST.read_bytes())
    raw["resources"]["wall_seconds"] = 1.0
    prepared = prepare_json(json.dumps(raw).encode("utf-8"))
    assert prepared.legacy_hints == '[["resources","wall_seconds","1.0"]]'
    with create_store(tmp_path / "l.db") as store:
        store.append_many([prepared, prepare_blob(b"{}")])
        stored = store.get(prepared.digest)
        blob = store.get(prepare_blob(b"{}").digest)
        via_lookup = StoreLookup(store).by_digest(prepared.digest)
    assert stored is not None and blob is not None and via_lookup is not None
    value = stored.json()
    assert type(value["resources"]["wall_seconds"]) is int  # RFC 8785 wrote "1"
    assert via_lookup.value == value and via_lookup.legacy_digest == stored.legacy_digest
    # Upstream hashed the double: only the hints give its digest, kept in the row.
    assert stored.legacy_digest == legacy_digest(raw) != legacy_digest(value)
    assert derive(stored.kind, stored.data, stored.legacy_hints).legacy_digest == legacy_digest(raw)
    assert blob.json() is None  # a blob's bytes are never JSON, even "{}"


def test_an_edited_hint_changes_nothing_a_check_reads() -> None:
    row = _row({"minimum": 5, "version": 2, "id": "x"})
    assert row.legacy_hints is None
    for hints in ('[["minimum","5.0"]]', '[["version","2.0"]]', "not json", "[]"):
        edited = replace(row, legacy_hints=hints)
        assert _same_typed(edited.json(), {"minimum": 5, "version": 2, "id": "x"})


def test_what_is_not_json_reads_as_none() -> None:
    row = _row({"a": 1})
    for data in (b"\xff", b"{", b"[1,", b"", b"[" * 100_000):
        assert replace(row, data=data).json() is None


def test_stored_json_is_read_in_one_place() -> None:
    """No rule or check parses an object's bytes itself (``json.loads(x.data)``): they
    read ``StoredObject.json()``. Left: verify's own strict check of the bytes of a
    checkpoint record, the browse view that prints the stored JSON, and a calibration
    record's ``Prepared`` before it is stored."""
    allowed = {
        "ledger/store/base.py",  # StoredObject.json itself
        "ledger/audit/full.py",  # verify parses each checkpoint record it checks
        "cohorts/browse/project.py",  # the browse page prints it too
        "verifiers/api.py",  # a calibration record's own Prepared, before it is stored
    }
    found = []
    for package in ("ledger", "verifiers", "cohorts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and ast.unparse(node.func) == "json.loads"
                    and node.args
                    and ast.unparse(node.args[0]).endswith(".data")
                ):
                    found.append(str(path.relative_to(ROOT)))
    assert set(found) <= allowed, sorted(set(found) - allowed)
