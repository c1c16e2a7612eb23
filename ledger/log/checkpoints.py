"""The verifiable log over a store: signed checkpoints and proofs.

Checkpoints are C2SP tlog-checkpoint bodies signed as C2SP signed notes by the log key,
under the key name = the log origin. The ledger never stores two roots for one size.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ledger.errors import InputError, IntegrityError, NotFound, RuleViolation
from ledger.log import merkle
from ledger.log.leaf import entry_record, utc_now
from ledger.log.note import Checkpoint, parse_verifier_key, sign_note
from ledger.store.base import CheckpointRow, Entry, LedgerReader, Store

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def origin_of(store: LedgerReader) -> str:
    """The log origin recorded at init."""
    origin = store.get_meta("origin")
    if origin is None:
        raise NotFound("log origin, got none in the ledger, expected one set by `provledger init`")
    return origin


def verifier_key_of(store: LedgerReader) -> str:
    """The log's verifier key (signed-note form) recorded at init."""
    vkey = store.get_meta("log_verifier_key")
    if vkey is None:
        raise NotFound("log verifier key, got none in the ledger, expected one set by init")
    return vkey


def make_checkpoint(store: Store, log_key: Ed25519PrivateKey) -> CheckpointRow:
    """Sign the current tree head and store it; return the stored row (maybe existing).

    The next append logs it as an entry (``ledger.log.checkpoint_record``)."""
    origin = origin_of(store)
    vkey = verifier_key_of(store)
    _, _, expected_pub = parse_verifier_key(vkey)
    if expected_pub.public_bytes_raw() != log_key.public_key().public_bytes_raw():
        raise RuleViolation(
            "log key, got a private key whose public half differs from the ledger's,"
            " expected the key created by `provledger init`"
        )

    def sign(reader: LedgerReader, size: int) -> CheckpointRow:
        root = merkle.root(size, reader)
        body = Checkpoint(origin, size, root).body()
        return CheckpointRow(size, root, sign_note(body, origin, log_key), utc_now())

    # Signed inside the write lock, so the checkpoint is of the log's newest size.
    return store.add_checkpoint(sign)


def latest_checkpoint(store: LedgerReader, at_least: int = 0) -> CheckpointRow | None:
    """The newest stored checkpoint whose size is at least ``at_least``."""
    rows = [row for row in store.checkpoints() if row.size >= at_least]
    return rows[-1] if rows else None


def entry_leaf(entry: Entry) -> bytes:
    """Leaf bytes of an entry (see ledger.log.leaf)."""
    return entry_record(entry.seq, entry.kind, entry.digest, entry.appended_at)


def entry_at(store: LedgerReader, seq: int) -> Entry:
    """The entry with sequence number ``seq``."""
    for entry in store.entries(since=seq, limit=1):
        if entry.seq == seq:
            return entry
    raise NotFound(f"log entry, got no entry at seq {seq}, expected one below {store.size()}")


@dataclass(frozen=True)
class InclusionProof:
    """An inclusion proof of one entry in the tree of ``size`` leaves."""

    entry: Entry
    size: int
    leaf: bytes
    hashes: tuple[bytes, ...]
    root: bytes
    checkpoint: CheckpointRow | None

    def to_json(self) -> dict[str, Any]:  # the --json document, read back by the CLI
        return {
            "digest": self.entry.digest,
            "index": self.entry.seq,
            "kind": self.entry.kind,
            "appended_at": self.entry.appended_at,
            "tree_size": self.size,
            "leaf": self.leaf.decode("utf-8"),
            "leaf_hash": merkle.leaf_hash(self.leaf).hex(),
            "proof": [h.hex() for h in self.hashes],
            "root": self.root.hex(),
            "checkpoint": None if self.checkpoint is None else self.checkpoint.note.decode(),
        }


@dataclass(frozen=True)
class ConsistencyProof:
    """A consistency proof between two tree sizes."""

    old_size: int
    new_size: int
    old_root: bytes
    new_root: bytes
    hashes: tuple[bytes, ...]
    old_checkpoint: CheckpointRow | None
    new_checkpoint: CheckpointRow | None

    def to_json(self) -> dict[str, Any]:  # the --json document, read back by the CLI
        return {
            "old_size": self.old_size,
            "new_size": self.new_size,
            "old_root": self.old_root.hex(),
            "new_root": self.new_root.hex(),
            "proof": [h.hex() for h in self.hashes],
            "old_checkpoint": None
            if self.old_checkpoint is None
            else self.old_checkpoint.note.decode(),
            "new_checkpoint": None
            if self.new_checkpoint is None
            else self.new_checkpoint.note.decode(),
        }


def _proof_size(
    store: LedgerReader, needed: int, size: int | None
) -> tuple[int, CheckpointRow | None]:
    """Tree size for a proof: given, else the newest checkpoint covering it, else current."""
    current = store.size()
    if size is not None:
        if not needed <= size <= current:
            raise InputError(
                f"tree size, got {size}, expected between {needed} and the log size {current}"
            )
        return size, store.checkpoint_at(size)
    checkpoint = latest_checkpoint(store, needed)
    if checkpoint is not None:
        return checkpoint.size, checkpoint
    return current, None


def prove_inclusion(store: LedgerReader, digest: str, size: int | None = None) -> InclusionProof:
    """Inclusion proof for the object ``digest`` (default: against the newest checkpoint)."""
    obj = store.get(digest)
    if obj is None:
        raise NotFound(f"object not found, got {digest}, expected a digest in the ledger")
    entry = entry_at(store, obj.seq)
    tree_size, checkpoint = _proof_size(store, entry.seq + 1, size)
    hashes = merkle.inclusion_proof(entry.seq, tree_size, store)
    root = merkle.root(tree_size, store)
    _same_root(checkpoint, root)
    return InclusionProof(entry, tree_size, entry_leaf(entry), tuple(hashes), root, checkpoint)


def prove_consistency(
    store: LedgerReader, old_size: int, new_size: int | None = None
) -> ConsistencyProof:
    """Consistency proof from ``old_size`` to ``new_size`` (default: newest checkpoint)."""
    current = store.size()
    if not 1 <= old_size <= current:
        raise InputError(f"old tree size, got {old_size}, expected between 1 and {current}")
    size, checkpoint = _proof_size(store, old_size, new_size)
    hashes = merkle.consistency_proof(old_size, size, store)
    old_root, new_root = merkle.root(old_size, store), merkle.root(size, store)
    old_checkpoint = store.checkpoint_at(old_size)
    _same_root(old_checkpoint, old_root)
    _same_root(checkpoint, new_root)
    return ConsistencyProof(
        old_size, size, old_root, new_root, tuple(hashes), old_checkpoint, checkpoint
    )


def _same_root(checkpoint: CheckpointRow | None, root: bytes) -> None:
    """A proof is handed out with a checkpoint only when the stored tree agrees with it."""
    if checkpoint is not None and checkpoint.root != root:
        raise IntegrityError(
            f"stored tree disagrees with the checkpoint at size {checkpoint.size}, got root"
            f" {root.hex()}, expected {checkpoint.root.hex()}; run `provledger verify`"
        )
