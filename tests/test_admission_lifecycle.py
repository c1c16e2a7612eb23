"""Property: whichever write path stores them, the cohort documents of one id always form
a legal lifecycle (``cohorts.lifecycle.check_update`` holds between consecutive ones).

Random sequences of the toy cohort at random stages, some with an edited definition, go
through random write paths: ``append`` with the authority's attestation in the same
batch, ``append`` without one, history import (``--unsigned``), ``import jsonl`` and
``cohort freeze``. For every path but freeze (whose gate decides more), the outcome must
also equal the model's: accepted iff the record is ungoverned or attested, and a legal
successor of the newest stored document of its id.
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cohorts.definition import definition_digests
from cohorts.errors import CohortError
from cohorts.lifecycle import STAGES, check_update
from cohorts.service import freeze_cohort
from ledger.create import initialise
from ledger.errors import LedgerError
from ledger.store.bulk import import_jsonl
from ledger.store.prepared import prepare_json, prepare_value
from ledger.store.sqlite import SQLiteStore, open_store
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer

TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
BASE: dict[str, Any] = json.loads((TOY / "cohort-v1.json").read_text())
PATHS = ("append-signed", "append-unsigned", "history", "jsonl", "freeze")

steps = st.lists(
    st.tuples(
        st.sampled_from(STAGES),
        st.booleans(),  # edit the definition (title)
        st.booleans(),  # record the (new) definition digest
        st.sampled_from(PATHS),
    ),
    min_size=1,
    max_size=7,
)


def _doc(stage: str, edit: bool, record: bool) -> dict[str, Any]:
    doc = copy.deepcopy(BASE)
    doc["stage"] = stage
    if edit:
        doc["title"] = doc["title"] + " (edited)"
    if record:
        doc["definition_digest"] = definition_digests(doc).legacy
    return doc


def _legal_after(stored: list[dict[str, Any]], doc: dict[str, Any]) -> bool:
    try:
        check_update(stored[-1] if stored else None, doc)
    except CohortError:
        return False
    return True


def _stored(store: SQLiteStore) -> list[dict[str, Any]]:
    return [o.json() for o in store.by_id(BASE["id"], kind="benchmark-cohort")]


def _write(store: SQLiteStore, path: str, doc: dict[str, Any], authority: Ed25519Signer) -> None:
    prepared = prepare_value(doc)
    signed = [prepared, attest_prepared(prepared, authority)]
    if path == "append-signed":
        store.append_many(signed)
    elif path == "append-unsigned":
        store.append_many([prepared])
    elif path == "history":
        store.append_many([prepared], history=True)
    elif path == "jsonl":
        lines = b"".join(p.data + b"\n" for p in signed)
        import_jsonl(store, io.BytesIO(lines))
    else:
        freeze_cohort(store, doc, authority)


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(steps)
def test_stored_lifecycle_is_always_a_legal_path(plan: list[tuple[str, bool, bool, str]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "ledger.db"
        initialise(db, "test", Path(tmp) / "log.key", Path(tmp) / "authority.key")
        authority = Ed25519Signer.from_file(Path(tmp) / "authority.key")
        with open_store(db) as store:
            objects = [*sorted((TOY / "work-units").glob("*.json"))]
            objects += sorted((TOY / "evaluators").glob("*.json"))
            store.append_many([prepare_json(p.read_bytes()) for p in objects])
            for stage, edit, record, path in plan:
                doc = _doc(stage, edit, record)
                before = _stored(store)
                # A document already stored is not written again: nothing to judge.
                known = prepare_value(doc).digest in {prepare_value(d).digest for d in before}
                size = store.size()
                try:
                    _write(store, path, doc, authority)
                    accepted = True
                except LedgerError:
                    accepted = False
                    assert store.size() == size  # a refusal writes nothing
                if path != "freeze" and not known:
                    unsigned = path == "append-unsigned"
                    governed = stage in ("frozen", "burned") and unsigned
                    expected = not governed and _legal_after(before, doc)
                    assert accepted == expected, (path, stage, edit, record, before[-1:])
                    assert (len(_stored(store)) == len(before) + 1) == expected
            history = _stored(store)
            for previous, current in itertools.pairwise(history):
                check_update(previous, current)  # raises on an illegal step
