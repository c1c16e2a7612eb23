"""Re-judging stored VerificationResults from the ledger's own inputs.

``verifiers.replay`` re-runs a verifier on inputs found by digest; ``StoreInputs`` finds
them in a ledger: any stored object by its ledger digest, a protocol document also by
upstream's legacy digest (its value with the stored float hints, so the legacy digest
recomputes). ``replay_stored`` re-judges one stored result; the audit and provenance
report what it says (``--replay``).
"""

from __future__ import annotations

from dataclasses import dataclass

from cohorts.findings import CohortFinding, error, warning
from cohorts.store_lookup import StoreLookup
from ledger.errors import InputError
from ledger.schema.validation import validate
from ledger.store.base import LedgerReader, StoredObject
from verifiers.replay import Input, Replay, input_digests, replay


class StoreInputs:
    """``verifiers.replay.Inputs`` over a ledger."""

    where = "the ledger"

    def __init__(self, reader: LedgerReader) -> None:
        self.reader = reader
        self.lookup = StoreLookup(reader)

    def find(self, digest: str) -> Input | None:
        obj = self.reader.get(digest)
        if obj is not None:
            doc = None if obj.kind == "blob" else self.lookup.doc(obj)
            return Input(obj.kind, bytes(obj.data), None if doc is None else doc.value)
        found = self.lookup.by_digest(digest)  # a document named by its legacy digest
        if found is None or found.data is None:
            return None
        return Input(found.kind, bytes(found.data), found.value)


def replay_inputs(reader: LedgerReader, obj: StoredObject) -> list[str]:
    """Ledger digests of the stored objects a replay of ``obj`` reads (what ``bundle
    export --with-inputs`` carries); refuses anything but a VerificationResult."""
    if obj.kind != "verification-result":
        raise InputError(
            f"--with-inputs, got a {obj.kind} ({obj.digest}), expected a verification-result"
            " (its inputs are what a replay re-judges)"
        )
    return input_digests(bytes(obj.data), StoreInputs(reader))


def replay_stored(reader: LedgerReader, digest: str) -> Replay | None:
    """Re-judge the stored VerificationResult ``digest`` (None when it is not stored)."""
    obj = reader.get(digest)
    if obj is None or obj.kind != "verification-result":
        return None
    return replay(bytes(obj.data), StoreInputs(reader), validate)


@dataclass(frozen=True)
class AttemptReplay:
    """The re-judgement of one outcome a cohort lists."""

    task: str
    attempt: str
    result_digest: str
    replay: Replay

    def to_json(self) -> dict[str, object]:
        return {
            "task": self.task,
            "attempt": self.attempt,
            "result_digest": self.result_digest,
            **self.replay.to_json(),
        }

    def finding(self) -> CohortFinding | None:
        """``attempt.replay.differs`` (a defect), ``attempt.replay.missing`` (inputs not in
        the ledger) or the warning ``attempt.replay.unsupported`` (no such verifier
        version in this build); None when reproduced."""
        r = self.replay
        if r.status == "reproduced":
            return None
        if r.status == "differs":
            return error(
                "attempt.replay.differs",
                f"re-judged verdict differs, got {r.reason}, expected the stored bytes of"
                f" {self.result_digest}",
                self.task,
                self.attempt,
            )
        if r.missing:
            return error(
                "attempt.replay.missing",
                f"cannot re-judge {self.result_digest}, got {r.reason}, expected every input"
                " stored",
                self.task,
                self.attempt,
            )
        return warning(
            "attempt.replay.unsupported",
            f"cannot re-judge {self.result_digest}, got {r.reason}",
            self.task,
            self.attempt,
        )
