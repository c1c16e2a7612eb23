"""When the ledger learnt an entry: the first signed checkpoint that covers it.

A log proves order, not wall-clock time. Entry ``seq`` precedes every later entry; a
checkpoint of size ``s`` covers entries ``0 .. s-1`` and, being signed over the log's
size at signing time (inside the write lock), was made before entry ``s`` existed. So a
checkpoint with ``a < s <= b`` is the log's signed statement that entry ``a`` was
recorded while entry ``b`` was not yet. The checkpoint's ``created_at`` is the log's own
clock (a record, not a proof); a witness cosignature's timestamp is the witness's clock:
the checkpoint, hence the entry, existed no later than that moment. Witnesses bound how
late; nothing in the log bounds how early.

``Checkpoints.covering`` reads only stored checkpoints whose note verifies under the
log key (each signed before the log grew past it) and, for the cosignature lines, the
cosignatures stored for that size. Only a trusted witness key turns a line into a
proof: with ``witness_keys``, each line by one of them is verified over that
checkpoint (``verified`` true or false); a line by no given key is reported as stored,
``verified`` None (``verify --witness-key`` checks the newest checkpoint only).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ledger.errors import LedgerError
from ledger.log.checkpoints import verifier_key_of
from ledger.log.cosignature import (
    Cosignature,
    WitnessKey,
    parse_cosignature_line,
    verify_cosignature,
)
from ledger.log.note import open_checkpoint, parse_note
from ledger.store.base import CheckpointRow, LedgerReader


@dataclass(frozen=True)
class Cosigned:
    """One stored witness cosignature line of a checkpoint; ``verified``: True or False
    when a trusted key of that witness was given, None when none was (as stored)."""

    witness: str  # name+keyid
    timestamp: int  # seconds since the epoch, the witness's clock
    verified: bool | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "witness": self.witness,
            "timestamp": self.timestamp,
            "time": self.time,
            "verified": self.verified,
        }

    def phrase(self) -> str:
        said = {
            True: "verified under its key",
            False: "DOES NOT VERIFY under its key",
            None: "as stored, not checked: no --witness-key for it",
        }[self.verified]
        return f"{self.witness} at {self.time} ({said})"

    @property
    def time(self) -> str:
        moment = datetime.fromtimestamp(min(self.timestamp, 253402300799), UTC)
        return moment.isoformat().replace("+00:00", "Z")


@dataclass(frozen=True)
class CoveringCheckpoint:
    """The first stored checkpoint covering an entry, and what vouches for it."""

    size: int
    created_at: str  # the log's clock when it signed (a record, not a proof)
    signature_ok: bool  # the note verifies under the ledger's log key
    cosignatures: tuple[Cosigned, ...]

    def to_json(self) -> dict[str, object]:
        return {
            "size": self.size,
            "created_at": self.created_at,
            "log_signature": "verified" if self.signature_ok else "does not verify",
            "cosignatures": [c.to_json() for c in self.cosignatures],
        }

    def line(self) -> str:
        """One phrase for a text report."""
        text = f"checkpoint size {self.size} signed at {self.created_at} (log clock), "
        text += "log signature verified" if self.signature_ok else "log signature DOES NOT VERIFY"
        if not self.cosignatures:
            return text + ", no witness cosignature"
        return text + ", cosigned by " + ", ".join(c.phrase() for c in self.cosignatures)


class Checkpoints:
    """The stored checkpoints of one ledger, read once, and the first covering an entry."""

    def __init__(self, reader: LedgerReader, witness_keys: Sequence[WitnessKey] = ()) -> None:
        self.reader = reader
        self._witnesses = {(k.name, k.key_id): k for k in witness_keys}
        self._rows = sorted(reader.checkpoints(), key=lambda r: r.size)
        self._found: dict[int, CoveringCheckpoint] = {}

    def covering(self, seq: int, before: int | None = None) -> CoveringCheckpoint | None:
        """The smallest stored checkpoint whose note verifies under the log key, covering
        entry ``seq`` (size > ``seq``) and, with ``before``, signed before entry
        ``before`` existed (size <= ``before``); None when there is none. A stored row
        whose signature does not verify is no statement of the log (``verify`` reports
        it): it can neither stand in for, nor hide, a genuine checkpoint."""
        for row in self._rows:
            if row.size <= seq:
                continue
            if before is not None and row.size > before:
                return None
            found = self._found.get(row.size)
            if found is None:
                found = self._found[row.size] = self._vouch(row)
            if found.signature_ok:
                return found
        return None

    def _vouch(self, row: CheckpointRow) -> CoveringCheckpoint:
        try:
            open_checkpoint(row.note, verifier_key_of(self.reader))
            ok = True
        except LedgerError:
            ok = False
        cosigned = []
        for line in self.reader.cosignatures(row.size):
            try:
                cosig = parse_cosignature_line(line)
            except LedgerError:
                continue  # a malformed line is verify's finding, not a cosignature
            key = self._witnesses.get((cosig.name, cosig.key_id))
            verified = None if key is None else self._verifies(row.note, cosig, key)
            name = f"{cosig.name}+{cosig.key_id.hex()}"
            cosigned.append(Cosigned(name, cosig.timestamp, verified))
        return CoveringCheckpoint(row.size, row.created_at, ok, tuple(cosigned))

    @staticmethod
    def _verifies(note: bytes, cosig: Cosignature, key: WitnessKey) -> bool:
        try:
            verify_cosignature(parse_note(note).body, cosig, key)
        except LedgerError:
            return False
        return True
