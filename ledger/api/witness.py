"""A C2SP tlog-witness run from Python: create one, trust logs, cosign, serve.

A witness is a state file with its private key beside it (``STATE.key``, ``STATE.key.pub``;
``ledger.log.witness``). It is kept outside any ledger: its whole point is to remember
what each log showed it, and to cosign a new checkpoint only when a consistency proof
links it to the last one it cosigned. Each function here is one ``provledger witness``
command; results are frozen values (``ledger.api.results``) whose ``to_json()`` is the
command's ``--json``.
Refusals are ``WitnessError`` (its ``exit_code`` says how: 1 a log that misbehaved,
3 bad input or an unknown log, 4 a stale old size).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ledger.api.results import (
        CreatedWitness,
        WitnessCosignature,
        WitnessedLog,
        WitnessServer,
    )
    from ledger.log.note import Checkpoint
    from ledger.log.witness import WitnessState

__all__ = [
    "cosign_checkpoint",
    "create_witness",
    "latest_cosigned",
    "trust_log",
    "witness_server",
    "witness_state",
]

StatePath = str | os.PathLike[str]


def create_witness(
    state: StatePath, name: str, log_keys: Sequence[str] = ()
) -> CreatedWitness:
    """Create a witness named ``name`` (its key name, e.g. ``witness.example/w1``): an
    Ed25519 key (``STATE.key``, mode 0600) and the state file, witnessing the logs whose
    verifier keys (signed-note form) are given. Never overwrites (exit 3)."""
    from ledger.api.results import CreatedWitness
    from ledger.log.witness import create_witness as create
    from ledger.log.witness import key_path

    path = Path(state)
    created, identity = create(path, name, list(log_keys))
    return CreatedWitness(
        str(path), str(key_path(path)), created.name, identity.vkey(), tuple(sorted(created.logs))
    )


def trust_log(state: StatePath, log_key: str) -> WitnessedLog:
    """Start witnessing the log whose verifier key is ``log_key`` (origin = the key's
    name); idempotent. Another key for an origin already witnessed is refused (exit 4)."""
    from ledger.api.results import WitnessedLog
    from ledger.log.note import parse_verifier_key
    from ledger.log.witness import WitnessFiles
    from ledger.log.witness import trust_log as trust

    trust(WitnessFiles(Path(state)), log_key)
    return WitnessedLog(parse_verifier_key(log_key)[0], log_key)


def witness_state(state: StatePath) -> WitnessState:
    """The witness's name, key and, per log, the last checkpoint it cosigned
    (``witness show --json`` is its ``to_json()``)."""
    from ledger.log.witness import WitnessFiles

    return WitnessFiles(Path(state)).read()


def latest_cosigned(state: StatePath, origin: str | None = None) -> bytes:
    """The last checkpoint this witness cosigned for ``origin`` (default: the only log it
    witnesses), as a signed note with its cosignature (``witness latest``). An auditor
    keeps it for ``Ledger.verify(from_checkpoint=...)``. ``NotFound`` (exit 3) when
    there is none."""
    from ledger.errors import NotFound

    logs = witness_state(state).logs
    if origin is None and len(logs) != 1:
        raise NotFound(f"log origin, got none, expected one of {sorted(logs)}")
    name = origin if origin is not None else next(iter(logs))
    view = logs.get(name)
    if view is None or view.note is None:
        raise NotFound(f"cosigned checkpoint of {name!r}, got none, expected one")
    return view.note


def cosign_checkpoint(
    state: StatePath, checkpoint: bytes, proof: bytes | None = None, *, proof_name: str = "proof"
) -> WitnessCosignature:
    """Verify a signed checkpoint note against what this witness saw, record it and
    cosign it (``witness cosign``). ``proof``: the consistency proof from the size the
    witness last cosigned, as ``Ledger.consistency_proof(...).to_json()`` bytes or the
    head of a tlog-witness request (``old N`` then base64 hashes); without one, only a
    first checkpoint or the same size again can be cosigned. ``proof_name`` names the
    proof in errors. Refusals raise ``WitnessError`` and record nothing."""
    from ledger.api.results import WitnessCosignature
    from ledger.errors import InputError
    from ledger.log.witness import AddCheckpoint, WitnessFiles

    old, new = 0, None
    hashes: tuple[bytes, ...] = ()
    if proof is not None:
        old, hashes, new = _parse_proof(proof, proof_name)
    files = WitnessFiles(Path(state))
    body = _checkpoint_or_none(checkpoint)
    if proof is None and body is not None:
        # No proof: only a first checkpoint, or the same size again, can be cosigned.
        view = files.read().logs.get(body.origin)
        if view is not None and view.size is not None:
            old = view.size
    if new is not None and body is not None and new != body.size:
        raise InputError(f"proof new size, got {new}, expected the checkpoint's {body.size}")
    # A malformed note is refused by the witness itself (400, exit 3).
    result = files.add_checkpoint(AddCheckpoint(old, hashes, checkpoint))
    return WitnessCosignature(
        result.checkpoint.origin,
        result.checkpoint.size,
        result.checkpoint.root_hash.hex(),
        result.cosignature.timestamp,
        result.cosignature.line(),
    )


def witness_server(
    state: StatePath, *, host: str = "127.0.0.1", port: int = 0, prefix: str = ""
) -> WitnessServer:
    """The witness's C2SP tlog-witness HTTP API bound to ``host:port`` (0 picks a free
    port) under ``prefix``; a missing or mismatched state or key is refused (exit 3)
    before anything listens."""
    from ledger.api.results import WitnessServer
    from ledger.log.witness import WitnessFiles
    from ledger.log.witness_http import make_server

    files = WitnessFiles(Path(state))
    server = make_server(files, host, port, prefix)
    bound_host, bound_port = server.server_address[:2]
    base = "/" + prefix.strip("/") if prefix.strip("/") else ""
    return WitnessServer(
        files.read().name, f"http://{bound_host!s}:{bound_port}{base}", server
    )


def _parse_proof(data: bytes, source: str) -> tuple[int, tuple[bytes, ...], int | None]:
    """``(old size, hashes, new size or None)`` from a proof: ``proof consistency --json``
    output, or the head of a tlog-witness request (``old N`` then base64 hashes)."""
    from ledger.errors import InputError
    from ledger.log.witness import parse_request

    text = data.strip()
    if text.startswith(b"{"):
        from ledger.encoding.canonical import parse_strict
        from ledger.errors import LedgerError

        malformed = InputError(
            f"proof file {source}, got malformed JSON, expected"
            " `provledger proof consistency --json` output"
        )
        try:
            value = parse_strict(text)
        except LedgerError:
            raise malformed from None
        if not isinstance(value, dict) or not {"old_size", "new_size"} <= value.keys():
            raise malformed
        old, new, listed = value["old_size"], value["new_size"], value.get("proof")
        if not isinstance(listed, list) or not all(isinstance(h, str) for h in listed):
            raise malformed
        try:
            hashes = tuple(bytes.fromhex(str(h)) for h in listed)
        except ValueError:
            raise malformed from None
        if not (isinstance(old, int) and isinstance(new, int)):
            raise InputError(f"proof file {source}, got non-integer sizes, expected integers")
        return old, hashes, new
    request = parse_request(text + b"\n\nx")
    return request.old_size, request.proof, None


def _checkpoint_or_none(note: bytes) -> Checkpoint | None:
    from ledger.errors import LedgerError
    from ledger.log.note import parse_checkpoint, parse_note

    try:
        return parse_checkpoint(parse_note(note).body)
    except LedgerError:
        return None
