"""Property: whichever write path stores them, the cohort documents of one id that count
(``ledger.trust.standing``) always form a legal lifecycle: the authority's (frozen,
burned) documents a legal path among themselves, and every other counted document a
legal successor (``cohorts.lifecycle.check_update``) of the newest counted one before it,
in the order they gained standing (a governed document counts from the authority's
attestation of it, not from its own seq); and the cohort every view reads
(``StandingLookup.latest_cohort``) is the last of them.

Random sequences of the toy cohort at random stages, some with an edited definition, go
through random write paths: ``append`` with the authority's attestation in the same
batch, ``append`` without one, history import (``--unsigned``), ``import jsonl`` and
``cohort freeze``. For every path but freeze (whose gate decides more), the outcome must
also equal the model's: accepted iff the record is ungoverned, attested or history, and
a legal successor of the newest counted document of its id (for the authority's
documents: the newest counted one the authority signed); it counts iff accepted and
ungoverned or attested.
"""

from __future__ import annotations

import copy
import io
import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from cohorts.definition import definition_digests
from cohorts.errors import CohortError
from cohorts.lifecycle import STAGES, check_update
from cohorts.service import freeze_cohort
from cohorts.standing import StandingLookup
from ledger.create import initialise
from ledger.errors import LedgerError
from ledger.store.bulk import import_jsonl
from ledger.store.prepared import prepare_json, prepare_value
from ledger.store.sqlite import SQLiteStore, open_store
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer
from ledger.trust.standing import Standing

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


FIXED = ("frozen", "burned")


def _legal_after(counted: list[dict[str, Any]], doc: dict[str, Any]) -> bool:
    if doc["stage"] in FIXED:
        counted = [d for d in counted if d["stage"] in FIXED]
    try:
        check_update(counted[-1] if counted else None, doc)
    except CohortError:
        return False
    return True


def _stored(store: SQLiteStore) -> list[dict[str, Any]]:
    return [o.json() for o in store.by_id(BASE["id"], kind="benchmark-cohort")]


def _counted(store: SQLiteStore) -> list[dict[str, Any]]:
    """The documents that count, in the order they gained standing: a document counts
    from where it is established (the authority's attestation for a governed one), not
    from its own seq."""
    standing = Standing(store)
    counted = [
        (since, o.json())
        for o in store.by_id(BASE["id"], kind="benchmark-cohort")
        if (since := standing.since(o)) is not None
    ]
    return [doc for _, doc in sorted(counted, key=lambda pair: pair[0])]


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


# Found by hypothesis: freezing bytes equal to an unattested history copy appends only
# the attestation; the history copy must count from there (after the scaffold), not from
# its own seq (before it), or the counted lifecycle reads frozen -> scaffold.
@example(
    [
        ("frozen", False, False, "history"),
        ("scaffold", False, False, "append-signed"),
        ("scaffold", False, False, "freeze"),
    ]
)
@example(
    [
        ("frozen", False, False, "history"),
        ("frozen", True, True, "append-signed"),
        ("frozen", False, False, "freeze"),
    ]
)
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
                before, counted = _stored(store), _counted(store)
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
                    governed = stage in FIXED
                    signed = path in ("append-signed", "jsonl")
                    refused = governed and path == "append-unsigned"
                    expected = not refused and _legal_after(counted, doc)
                    assert accepted == expected, (path, stage, edit, record, counted[-1:])
                    assert (len(_stored(store)) == len(before) + 1) == expected
                    counts = expected and (signed or not governed)
                    assert (len(_counted(store)) == len(counted) + 1) == counts
            counted = _counted(store)
            # Every view reads the same order: the cohort is the document established last.
            latest = StandingLookup(store).latest_cohort(BASE["id"])
            assert (None if latest is None else latest.value) == (counted[-1] if counted else None)
            fixed = [d for d in counted if d["stage"] in FIXED]
            for previous, current in itertools.pairwise(fixed):
                check_update(previous, current)  # raises on an illegal step
            for i, current in enumerate(counted):
                if current["stage"] not in FIXED:
                    check_update(counted[i - 1] if i else None, current)
