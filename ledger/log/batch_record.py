"""Batch boundaries in the log: which entries one transaction appended.

One admission rule looks at a whole batch: an authority-governed record needs the
authority's attestation *in the same batch* (or the batch is upstream history, kept
without standing). So that ``verify`` can replay that rule from the log alone, a batch
that adds a governed record ends with one more entry the store writes itself, of the
ledger-native kind ``batch``:

    {"first":<seq>,"history":<bool>,"nonce":"<32 hex>","provledger_kind":"batch",
     "schema_version":"0.1"}

It covers the entries from ``first`` to just before itself. The nonce (128 random bits)
makes every record's bytes, hence its digest, unpredictable: objects are stored once per
digest, so a record someone could predict could be stored first, by hand, and the
store's own record would then be "already present" and never logged. Like every entry it is a
leaf of the tree, so the boundary and the history flag are covered by the log's hashes
(and by every checkpoint, proof and bundle over it); nothing else about the log
changes: the entry record, the C2SP formats, proofs, bundles and ``copy`` treat it as
any other entry. Batches that add no governed record need no boundary and get no
record. Records are written by the store only; an append of one is refused.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ledger.errors import InputError

if TYPE_CHECKING:
    from ledger.store.prepared import Prepared

BATCH_KIND = "batch"
RECORD_VERSION = "0.1"


@dataclass(frozen=True)
class BatchBoundary:
    """A batch record read back: the batch is the entries ``first`` .. ``end - 1``."""

    first: int
    end: int  # the record's own seq
    history: bool


def batch_record(first: int, history: bool) -> Prepared:
    """The prepared (validated, canonical) record closing a batch that began at ``first``."""
    # Imported here: the schema checks it loads are only needed when a record is made.
    from ledger.store.prepared import prepare_value

    value = {
        "provledger_kind": BATCH_KIND,
        "schema_version": RECORD_VERSION,
        "first": first,
        "history": history,
        "nonce": os.urandom(16).hex(),
    }
    return prepare_value(value, BATCH_KIND)


def boundary_of(value: object, seq: int) -> BatchBoundary:
    """The boundary a record at ``seq`` states; ``InputError`` when it cannot be one."""
    if not isinstance(value, dict) or value.get("provledger_kind") != BATCH_KIND:
        raise InputError("batch record, got another object, expected a batch record")
    first, history = value.get("first"), value.get("history")
    if type(first) is not int or type(history) is not bool:
        raise InputError("batch record, got no integer first or boolean history, expected both")
    if not 0 <= first < seq:
        raise InputError(f"batch record at seq {seq}, got first {first}, expected an earlier entry")
    return BatchBoundary(first, seq, history)
