"""A C2SP tlog-witness: cosign a log's checkpoints only while the log stays append-only.

The witness keeps, per log origin, the trusted log verifier key and the last checkpoint it
cosigned (size, root hash, note). :func:`add_checkpoint` is the whole decision of the
``add-checkpoint`` call of c2sp.org/tlog-witness, as a pure function of the state and the
request; :class:`WitnessFiles` makes the check-and-record step atomic on disk.

Request (``POST <prefix>/add-checkpoint``)::

    old <size of the last checkpoint this witness cosigned, 0 if none>
    <zero to 63 lines: base64 consistency-proof hashes, old size -> checkpoint size>
    <empty line>
    <signed checkpoint note>

Outcomes (HTTP status, as the spec requires): 400 malformed request or old size > checkpoint
size; 403 no valid signature by the trusted log key; 404 unknown origin; 409 old size is not
the witness's recorded size (body: that size); 422 proof does not verify, non-empty proof
from 0, equal sizes with different roots, or a size-0 checkpoint without the empty root;
200 with the cosignature line(s).

Invariants: the recorded size for an origin never decreases, and a new checkpoint is cosigned
only if a verified consistency proof links it to the recorded (size, root). So a witness that
saw one view of the log refuses a fork (another root for a size it saw, or a tree that does
not extend it) and a rollback (a smaller tree), for ever.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Final

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ledger.errors import LedgerError
from ledger.log import merkle
from ledger.log.cosignature import Cosignature, WitnessKey, cosign, witness_key
from ledger.log.note import (
    Checkpoint,
    NoteError,
    parse_checkpoint,
    parse_note,
    parse_verifier_key,
    verify_note,
)

STATE_FORMAT: Final = "provledger-witness/1"
MAX_PROOF_LINES: Final = 63
MAX_REQUEST_BYTES: Final = 1 << 20
EMPTY_ROOT: Final = hashlib.sha256(b"").digest()
SIZE_CONTENT_TYPE: Final = "text/x.tlog.size"
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]{0,19})", re.ASCII)

# HTTP status -> CLI exit code: refusals that prove log misbehavior are check failures (1),
# a stale old size is a rule refusal (4), malformed input or an unknown log is bad input (3).
_EXIT_CODES: Final = {400: 3, 403: 1, 404: 3, 409: 4, 422: 1}


class WitnessError(LedgerError):
    """The witness refuses a request. ``status`` is the tlog-witness HTTP status."""

    def __init__(
        self,
        status: int,
        message: str,
        known_size: int | None = None,
        exit_code: int | None = None,
    ) -> None:
        super().__init__(f"witness refused ({status}): {message}")
        self.status = status
        self.detail = message
        self.known_size = known_size
        self.exit_code = _EXIT_CODES.get(status, 1) if exit_code is None else exit_code


@dataclass(frozen=True)
class LogView:
    """What the witness knows of one log: its key and the last checkpoint it cosigned."""

    log_key: str
    size: int | None = None  # None: never cosigned for this log
    root: bytes | None = None
    note: bytes | None = None  # the checkpoint note with this witness's cosignature

    def to_json(self) -> dict[str, object]:
        return {
            "log_key": self.log_key,
            "size": self.size,
            "root": None if self.root is None else base64.b64encode(self.root).decode("ascii"),
            "note": None if self.note is None else self.note.decode("utf-8"),
        }


@dataclass(frozen=True)
class WitnessState:
    """A witness's whole state: its name, its public identity and one view per log."""

    name: str
    verifier_key: str
    logs: dict[str, LogView] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return {
            "format": STATE_FORMAT,
            "name": self.name,
            "verifier_key": self.verifier_key,
            "logs": {origin: view.to_json() for origin, view in sorted(self.logs.items())},
        }

    def encode(self) -> bytes:
        return (json.dumps(self.to_json(), indent=2, sort_keys=True) + "\n").encode("utf-8")


def decode_state(data: bytes, source: Path | str = "state") -> WitnessState:
    """Parse a state file strictly (malformed state is bad input, exit 3)."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise StateError(f"witness state {source}, got no JSON, expected a state file") from None
    if not isinstance(value, dict) or value.get("format") != STATE_FORMAT:
        raise StateError(f"witness state {source}, got no format {STATE_FORMAT!r}")
    name, vkey, logs = value.get("name"), value.get("verifier_key"), value.get("logs")
    if not isinstance(name, str) or not isinstance(vkey, str) or not isinstance(logs, dict):
        raise StateError(f"witness state {source}, got wrong members, expected name, key, logs")
    views: dict[str, LogView] = {}
    for origin, raw in logs.items():
        if not isinstance(raw, dict) or not isinstance(raw.get("log_key"), str):
            raise StateError(f"witness state {source}, log {origin!r} has no log_key")
        size, root, note = raw.get("size"), raw.get("root"), raw.get("note")
        if size is None:
            views[origin] = LogView(raw["log_key"])
            continue
        if not (isinstance(size, int) and isinstance(root, str) and isinstance(note, str)):
            raise StateError(f"witness state {source}, log {origin!r} has a malformed checkpoint")
        try:
            root_hash = base64.b64decode(root, validate=True)
        except ValueError:
            root_hash = b""
        if len(root_hash) != merkle.HASH_SIZE or size < 0:
            raise StateError(f"witness state {source}, log {origin!r} has a malformed root")
        views[origin] = LogView(raw["log_key"], size, root_hash, note.encode("utf-8"))
    return WitnessState(name, vkey, views)


class StateError(LedgerError):
    """A witness state file is missing or malformed (exit 3)."""

    exit_code = 3


# --------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class AddCheckpoint:
    """An add-checkpoint request: old size, consistency proof, signed checkpoint note."""

    old_size: int
    proof: tuple[bytes, ...]
    note: bytes

    def encode(self) -> bytes:
        lines = [f"old {self.old_size}"] + [base64.b64encode(h).decode() for h in self.proof]
        return ("".join(line + "\n" for line in lines) + "\n").encode("ascii") + self.note


def parse_request(data: bytes) -> AddCheckpoint:
    """Parse an add-checkpoint body strictly; anything malformed is a 400."""
    if len(data) > MAX_REQUEST_BYTES:
        raise WitnessError(400, f"request, got {len(data)} bytes, expected <= {MAX_REQUEST_BYTES}")
    head, sep, note = data.partition(b"\n\n")
    if not sep or not note:
        raise WitnessError(400, "request, got no empty line before a checkpoint, expected one")
    try:
        lines = head.decode("ascii").split("\n")
    except UnicodeDecodeError:
        raise WitnessError(400, "request header, got non-ASCII bytes, expected ASCII") from None
    first = lines[0]
    if not first.startswith("old ") or not _DECIMAL.fullmatch(first[4:]):
        raise WitnessError(400, f"old size line, got {first[:40]!r}, expected 'old <decimal>'")
    old_size = int(first[4:])
    if old_size > merkle.MAX_TREE_SIZE:
        raise WitnessError(400, f"old size, got {old_size}, expected < 2**64")
    if len(lines) - 1 > MAX_PROOF_LINES:
        raise WitnessError(400, f"proof lines, got {len(lines) - 1}, expected <= 63")
    proof = []
    for position, line in enumerate(lines[1:]):
        try:
            value = base64.b64decode(line.encode("ascii"), validate=True)
        except ValueError:
            value = b""
        if len(value) != merkle.HASH_SIZE or base64.b64encode(value).decode() != line:
            raise WitnessError(400, f"proof line {position}, got {line[:48]!r}, expected a hash")
        proof.append(value)
    return AddCheckpoint(old_size, tuple(proof), note)


# --------------------------------------------------------------------------- the decision


@dataclass(frozen=True)
class Cosigned:
    """A successful add-checkpoint: the cosignature and the state to record."""

    checkpoint: Checkpoint
    cosignature: Cosignature
    state: WitnessState

    @property
    def response(self) -> bytes:
        """The 200 response body: the cosignature line(s)."""
        return self.cosignature.line().encode("utf-8")


def _open_signed(note: bytes, state: WitnessState) -> tuple[Checkpoint, LogView]:
    try:
        parsed = parse_note(note)
        checkpoint = parse_checkpoint(parsed.body)
    except NoteError as exc:
        raise WitnessError(400, f"checkpoint: {exc}") from None
    view = state.logs.get(checkpoint.origin)
    if view is None:
        raise WitnessError(404, f"origin, got {checkpoint.origin!r}, expected a log it witnesses")
    name, _, _ = parse_verifier_key(view.log_key)
    try:
        verify_note(note, view.log_key)
    except NoteError as exc:
        raise WitnessError(403, f"log signature: {exc}") from None
    if name != checkpoint.origin:
        raise WitnessError(403, f"log key name, got {name!r}, expected the origin")
    return checkpoint, view


def add_checkpoint(
    state: WitnessState,
    request: AddCheckpoint,
    private_key: Ed25519PrivateKey,
    timestamp: int | None = None,
) -> Cosigned:
    """Decide an add-checkpoint request; return the cosignature and the new state.

    Raises :class:`WitnessError` with the tlog-witness status on any refusal; the state
    is then unchanged.
    """
    checkpoint, view = _open_signed(request.note, state)
    old, size = request.old_size, checkpoint.size
    known = 0 if view.size is None else view.size
    rollback = size < known
    why = f" (a rollback: size {size} < the size {known} it last cosigned)" if rollback else ""
    if old > size:
        # A rollback is log misbehavior (exit 1); any other bad old size is bad input.
        raise WitnessError(
            400, f"old size {old} > checkpoint size {size}{why}", known, 1 if rollback else None
        )
    if old != known:
        raise WitnessError(
            409,
            f"old size, got {old}, expected {known}, the size it last cosigned{why}",
            known_size=known,
            exit_code=1 if rollback else None,
        )
    if size == 0 and checkpoint.root_hash != EMPTY_ROOT:
        raise WitnessError(422, "checkpoint of size 0, got a root other than the empty hash")
    if old == 0:
        if request.proof:
            raise WitnessError(422, f"proof from size 0, got {len(request.proof)} hashes, none")
    else:
        assert view.root is not None  # known > 0 implies a recorded checkpoint
        expected = merkle.consistency_proof_length(old, size)
        if len(request.proof) != expected:
            raise WitnessError(
                422,
                f"consistency proof from size {old} to {size}, got {len(request.proof)}"
                f" hashes, expected {expected}",
            )
        try:
            merkle.verify_consistency(old, size, view.root, checkpoint.root_hash, request.proof)
        except merkle.ProofError as exc:
            raise WitnessError(
                422,
                f"checkpoint of size {size} is not consistent with the cosigned size {old}"
                f" (a fork): {exc}",
            ) from None
    body = checkpoint.body()
    cosig = cosign(body, state.name, private_key, timestamp)
    note = request.note + cosig.line().encode("utf-8")
    logs = dict(state.logs)
    logs[checkpoint.origin] = replace(view, size=size, root=checkpoint.root_hash, note=note)
    return Cosigned(checkpoint, cosig, replace(state, logs=logs))


# --------------------------------------------------------------------------- files


def key_path(state_path: Path) -> Path:
    """The witness private key file: ``<state file>.key`` (0600 PEM), public half ``.pub``."""
    return state_path.with_name(state_path.name + ".key")


def _fsync_dir(path: Path) -> None:
    fd = os.open(path.parent if str(path.parent) else Path("."), os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class WitnessFiles:
    """A witness on disk: ``STATE`` (JSON), ``STATE.key`` (+ ``.pub``) and ``STATE.lock``."""

    path: Path

    @property
    def lock_path(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")

    def read(self) -> WitnessState:
        if not self.path.is_file():
            raise StateError(f"witness state not found, got no file at {self.path}")
        from ledger.bounded import DOCUMENT_LIMIT, read_bounded

        return decode_state(read_bounded(self.path, DOCUMENT_LIMIT, "witness state"), self.path)

    def private_key(self) -> Ed25519PrivateKey:
        from ledger.trust.keys import load_private_key

        return load_private_key(key_path(self.path))

    def identity(self) -> WitnessKey:
        """The witness's public identity; the key file must be the one the state names."""
        return self._checked_key(self.read())[1]

    def _checked_key(self, state: WitnessState) -> tuple[Ed25519PrivateKey, WitnessKey]:
        key = self.private_key()
        identity = witness_key(state.name, key.public_key())
        if identity.vkey() != state.verifier_key:
            raise StateError(
                f"witness key file {key_path(self.path)}, got the key of {identity.vkey()},"
                f" expected the one the state names: {state.verifier_key}"
            )
        return key, identity

    def write(self, state: WitnessState) -> None:
        """Replace the state file atomically (temp file, fsync, rename, fsync dir)."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "wb") as handle:
            handle.write(state.encode())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, self.path)
        _fsync_dir(self.path)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the witness's exclusive lock: check-and-record must be atomic (spec)."""
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def add_checkpoint(self, request: AddCheckpoint, timestamp: int | None = None) -> Cosigned:
        """Decide a request under the lock and persist the new state before returning."""
        with self.locked():
            state = self.read()
            key, _ = self._checked_key(state)
            result = add_checkpoint(state, request, key, timestamp)
            self.write(result.state)
        return result


def create_witness(path: Path, name: str, log_keys: list[str]) -> tuple[WitnessState, WitnessKey]:
    """Create ``STATE`` and ``STATE.key``; never overwrites either."""
    from ledger.errors import KeyFileError
    from ledger.trust.keys import generate_key_file

    if path.exists():
        raise KeyFileError(f"witness state {path} already exists, expected a new path")
    witness_key(name, Ed25519PrivateKey.generate().public_key())  # name check before writing
    logs = _log_views(log_keys)
    private_key, _ = generate_key_file(key_path(path))
    identity = witness_key(name, private_key.public_key())
    state = WitnessState(name, identity.vkey(), logs)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    with os.fdopen(fd, "wb") as handle:
        handle.write(state.encode())
        handle.flush()
        os.fsync(handle.fileno())
    return state, identity


def _log_views(log_keys: list[str]) -> dict[str, LogView]:
    logs: dict[str, LogView] = {}
    for vkey in log_keys:
        name, _, _ = parse_verifier_key(vkey)
        logs[name] = LogView(vkey)
    return logs


def trust_log(files: WitnessFiles, log_key: str) -> WitnessState:
    """Add a log (by its verifier key; origin = key name) to a witness; idempotent."""
    name, _, _ = parse_verifier_key(log_key)
    with files.locked():
        state = files.read()
        current = state.logs.get(name)
        if current is not None:
            if current.log_key != log_key:
                raise WitnessError(
                    409, f"log {name!r} is already witnessed under another key", current.size
                )
            return state
        logs = dict(state.logs)
        logs[name] = LogView(log_key)
        state = replace(state, logs=logs)
        files.write(state)
    return state
