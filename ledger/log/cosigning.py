"""The log side of witnessing: ask witnesses to cosign a stored checkpoint, keep the lines.

A witness is named by an ``http(s)://`` URL (c2sp.org/tlog-witness over HTTP) or by the
path of a local witness state file (the same decision, taken in-process under the
witness's lock). For each, the request carries a consistency proof from the size the
witness last cosigned, built from this store.

Invariant: a cosignature line is stored only if it verifies over this checkpoint under a
witness key the operator named (``--witness-key`` for a URL witness; a local witness's own
key, read from its state). Every other line of a response (unknown key, bad signature,
future timestamp) is rejected: reported in the witness's outcome, never stored. So a
hostile or impersonating witness cannot put a line into the ledger that would later make
``verify --witness-key`` or ``bundle verify`` fail for an honest witness's key.

:func:`cosigned_note` is the checkpoint note with every stored cosignature appended: the
form bundles carry and that ``golang.org/x/mod/sumdb/note`` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ledger.errors import LedgerError, UsageError
from ledger.log import merkle
from ledger.log.cosignature import (
    CosignatureError,
    WitnessKey,
    from_note_signature,
    verify_cosignature,
)
from ledger.log.note import parse_note
from ledger.log.witness import AddCheckpoint, WitnessError, WitnessFiles
from ledger.store.base import CheckpointRow, LedgerReader, Store


def cosigned_note(store: LedgerReader, row: CheckpointRow) -> bytes:
    """The stored checkpoint note followed by the stored cosignature lines for its size."""
    lines = store.cosignatures(row.size)
    return row.note + "".join(line + "\n" for line in lines).encode("utf-8")


def witness_request(store: LedgerReader, row: CheckpointRow, old_size: int) -> AddCheckpoint:
    """The add-checkpoint request for ``row`` from a witness at ``old_size``.

    A witness ahead of this checkpoint has seen a longer log: this log was truncated (or
    this is an old checkpoint), so no request can be made.
    """
    if old_size > row.size:
        raise WitnessError(
            409,
            f"the witness has cosigned size {old_size}, this checkpoint has size {row.size}:"
            " the log it saw was longer (truncated log, or an old checkpoint)",
            known_size=old_size,
            exit_code=1,
        )
    hashes = (
        () if old_size in (0, row.size) else merkle.consistency_proof(old_size, row.size, store)
    )
    return AddCheckpoint(old_size, tuple(hashes), row.note)


@dataclass(frozen=True)
class WitnessOutcome:
    """What one witness answered: the lines stored, the lines rejected, or the refusal."""

    witness: str
    lines: tuple[str, ...] = ()
    rejected: tuple[tuple[str, str], ...] = ()  # (signer label, why), never stored
    error: LedgerError | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"witness": self.witness, "ok": self.error is None}
        out["cosignatures"] = list(self.lines)
        out["rejected"] = [{"witness": w, "error": e} for w, e in self.rejected]
        if self.error is not None:
            out["error"] = str(self.error)
            out["exit_code"] = self.error.exit_code
        return out


def is_url(spec: str) -> bool:
    """Whether a ``--witness`` value names an HTTP witness (else a local state file)."""
    return spec.startswith(("http://", "https://"))


@dataclass(frozen=True)
class Judged:
    """A witness response, line by line: the lines to store and the lines rejected."""

    kept: tuple[str, ...]
    rejected: tuple[tuple[str, str], ...]


def judge_response(
    body: bytes, response: bytes, keys: Sequence[WitnessKey], witness: str
) -> Judged:
    """Split a witness response into lines that verify under ``keys`` and the rest.

    A response that is not signature lines at all is refused whole (nothing kept).
    """
    try:
        text = response.decode("utf-8")
        parsed = parse_note(body + b"\n" + response).signatures
    except (UnicodeDecodeError, LedgerError) as exc:
        raise CosignatureError(
            f"witness {witness} response, got no signature lines: {exc}"
        ) from None
    lines = [line for line in text.split("\n") if line]
    if len(lines) != len(parsed):  # the note parser read every line as a signature
        raise CosignatureError(
            f"witness {witness} response, got {len(lines)} lines and {len(parsed)}"
            " signatures, expected only signature lines"
        )
    by_id = {(k.name, k.key_id): k for k in keys}
    named = ", ".join(k.label for k in keys)
    kept: list[str] = []
    rejected: list[tuple[str, str]] = []
    for line, sig in zip(lines, parsed, strict=True):
        label = f"{sig.name}+{sig.key_id.hex()}"
        key = by_id.get((sig.name, sig.key_id))
        if key is None:
            why = f"cosignature by {label}, got a key no one named, expected one by {named}"
            rejected.append((label, why))
            continue
        try:
            verify_cosignature(body, from_note_signature(sig), key)
        except CosignatureError as exc:
            rejected.append((label, str(exc)))
            continue
        if line not in kept:
            kept.append(line)
    return Judged(tuple(kept), tuple(rejected))


def _outcome(spec: str, judged: Judged, keys: Sequence[WitnessKey]) -> WitnessOutcome:
    error: LedgerError | None = None
    if judged.rejected:
        why = judged.rejected[0][1]
        more = len(judged.rejected) - 1
        extra = f" (and {more} more line(s))" if more else ""
        error = CosignatureError(f"rejected, not stored: {why}{extra}")
    elif not judged.kept:
        labels = ", ".join(k.label for k in keys)
        error = CosignatureError(f"got no cosignature by {labels}")
    return WitnessOutcome(spec, judged.kept, judged.rejected, error)


def collect(
    store: Store,
    row: CheckpointRow,
    witnesses: Sequence[str],
    trusted: Sequence[WitnessKey] = (),
) -> list[WitnessOutcome]:
    """Ask every witness to cosign ``row``; store the lines that verify; one outcome each.

    A URL witness is judged by ``trusted`` (no key named: refused, nothing asked); a local
    witness by its own key.
    """
    from ledger.log.witness_http import request_cosignature

    body = parse_note(row.note).body
    outcomes = []
    for spec in witnesses:
        try:
            if is_url(spec):
                if not trusted:
                    raise UsageError(
                        f"--witness {spec}, got no --witness-key, expected the verifier key"
                        " its cosignature must verify under"
                    )
                keys: Sequence[WitnessKey] = trusted
                response = request_cosignature(spec, lambda old: witness_request(store, row, old))
            else:
                files = WitnessFiles(Path(spec))
                state = files.read()
                view = next(
                    (v for o, v in state.logs.items() if row.note.startswith(o.encode() + b"\n")),
                    None,
                )
                old = 0 if view is None or view.size is None else view.size
                keys = [files.identity()]
                response = files.add_checkpoint(witness_request(store, row, old)).response
            outcome = _outcome(spec, judge_response(body, response, keys, spec), keys)
            if outcome.lines:
                store.add_cosignatures(row.size, outcome.lines)
            outcomes.append(outcome)
        except LedgerError as exc:
            outcomes.append(WitnessOutcome(spec, error=exc))
    return outcomes
