"""Checkpoints in the log: each signed checkpoint is also a log entry.

A checkpoint signed at tree size ``n`` is stored in ``checkpoints`` at once, and the
next append logs it as the entry at ``seq == n`` (kind ``checkpoint``), before the
appended items, in the same transaction. From then on every tree head of size > n
covers it: its note and ``created_at`` are record bytes, and the ``checkpoints`` row is
only an index that ``verify`` re-derives from the entry. Only the newest checkpoint,
signed after the last append, is not yet covered; it needs an outside anchor (a saved
checkpoint, or witnesses).

The record is canonical JSON ``{"created_at", "note", "provledger_kind": "checkpoint",
"schema_version": "0.1"}``; the note is the stored signed note, verbatim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.errors import InputError, LedgerError
from ledger.log.note import parse_checkpoint, parse_note
from ledger.store.base import CheckpointRow

if TYPE_CHECKING:
    from ledger.store.prepared import Prepared

CHECKPOINT_KIND = "checkpoint"
RECORD_VERSION = "0.1"


def record_value(row: CheckpointRow) -> dict[str, object]:
    """The JSON value logged for a stored checkpoint row."""
    return {
        "provledger_kind": CHECKPOINT_KIND,
        "schema_version": RECORD_VERSION,
        "note": row.note.decode("utf-8"),
        "created_at": row.created_at,
    }


def checkpoint_record(row: CheckpointRow) -> Prepared:
    """The prepared (validated, canonical) record of a checkpoint row."""
    # Imported here: the schema checks it loads are only needed when a record is made.
    from ledger.store.prepared import prepare_value

    return prepare_value(record_value(row), CHECKPOINT_KIND)


def row_of_record(value: object) -> CheckpointRow:
    """The ``checkpoints`` row a logged record implies (signature not checked here).

    Raises ``InputError`` when the record or its note cannot be read.
    """
    if not isinstance(value, dict) or value.get("provledger_kind") != CHECKPOINT_KIND:
        raise InputError("checkpoint record, got another object, expected a checkpoint")
    note, created_at = value.get("note"), value.get("created_at")
    if not isinstance(note, str) or not isinstance(created_at, str):
        raise InputError("checkpoint record, got no note or created_at, expected both")
    data = note.encode("utf-8")
    try:
        body = parse_checkpoint(parse_note(data).body)
    except LedgerError as exc:
        raise InputError(f"checkpoint record note: {exc}") from None
    return CheckpointRow(body.size, body.root_hash, data, created_at)
