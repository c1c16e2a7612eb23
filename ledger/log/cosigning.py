"""The log side of witnessing: ask witnesses to cosign a stored checkpoint, keep the lines.

A witness is named by an ``http(s)://`` URL (c2sp.org/tlog-witness over HTTP) or by the
path of a local witness state file (the same decision, taken in-process under the
witness's lock). For each, the request carries a consistency proof from the size the
witness last cosigned, built from this store. Returned lines are kept only if they are
well-formed cosignatures over this checkpoint; a line from a witness whose key is known
here (a local witness, or one given with ``--witness-key``) must also verify.

:func:`cosigned_note` is the checkpoint note with every stored cosignature appended: the
form bundles carry and that ``golang.org/x/mod/sumdb/note`` reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ledger.errors import LedgerError
from ledger.log import merkle
from ledger.log.cosignature import (
    CosignatureError,
    WitnessKey,
    check_cosignatures,
    from_note_signature,
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
    """What one witness answered: stored lines, or the refusal."""

    witness: str
    lines: tuple[str, ...] = ()
    error: LedgerError | None = None

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"witness": self.witness, "ok": self.error is None}
        if self.error is None:
            out["cosignatures"] = list(self.lines)
        else:
            out["error"] = str(self.error)
            out["exit_code"] = self.error.exit_code
        return out


def _is_url(spec: str) -> bool:
    return spec.startswith(("http://", "https://"))


def _accept_lines(
    body: bytes, response: bytes, known: Sequence[WitnessKey], witness: str
) -> tuple[str, ...]:
    """Signature lines of a witness response that are cosignatures over ``body``."""
    try:
        text = response.decode("utf-8")
        parsed = parse_note(body + b"\n" + response).signatures
    except (UnicodeDecodeError, LedgerError) as exc:
        raise CosignatureError(
            f"witness {witness} response, got no signature lines: {exc}"
        ) from None
    lines = tuple(line for line in text.split("\n") if line)
    for sig in parsed:
        from_note_signature(sig)  # right length: timestamp + Ed25519 signature
    result = check_cosignatures(body, parsed, known)
    if result.invalid:
        raise CosignatureError(f"witness {witness}: {result.invalid[0][1]}")
    if known and not result.valid:
        labels = ", ".join(k.label for k in known)
        raise CosignatureError(f"witness {witness}, got no cosignature by {labels}")
    return lines


def collect(
    store: Store,
    row: CheckpointRow,
    witnesses: Sequence[str],
    trusted: Sequence[WitnessKey] = (),
) -> list[WitnessOutcome]:
    """Ask every witness to cosign ``row``; store the accepted lines; one outcome each."""
    from ledger.log.witness_http import request_cosignature

    body = parse_note(row.note).body
    outcomes = []
    for spec in witnesses:
        try:
            if _is_url(spec):
                response = request_cosignature(spec, lambda old: witness_request(store, row, old))
                lines = _accept_lines(body, response, trusted, spec)
            else:
                files = WitnessFiles(Path(spec))
                state = files.read()
                view = next(
                    (v for o, v in state.logs.items() if row.note.startswith(o.encode() + b"\n")),
                    None,
                )
                old = 0 if view is None or view.size is None else view.size
                result = files.add_checkpoint(witness_request(store, row, old))
                lines = _accept_lines(body, result.response, [files.identity()], spec)
            store.add_cosignatures(row.size, lines)
            outcomes.append(WitnessOutcome(spec, lines))
        except LedgerError as exc:
            outcomes.append(WitnessOutcome(spec, error=exc))
    return outcomes
