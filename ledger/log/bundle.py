"""Offline evidence bundles: one object, its attestations, their proofs and a checkpoint.

A bundle (media type :data:`MEDIA_TYPE`, format in docs/LOG.md "Bundle format") is one
RFC 8785 JSON document plus a final newline. Each logged item in it carries its stored
bytes, its entry record (the Merkle leaf bytes) and a verbatim C2SP tlog-proof
(``c2sp.org/tlog-proof@v1``: index, inclusion proof, signed checkpoint). Every item is
proven against the same checkpoint.

Invariants:

* :func:`verify_bundle` needs only the bundle bytes and the log's verifier key; it trusts
  nothing else in the file. Every byte of a bundle is either checked against a hash or a
  signature, or has exactly one accepted spelling, so any changed byte fails with
  :class:`BundleError` (exit 1) naming the part: ``bundle``, ``checkpoint``, ``object``,
  ``leaf``, ``proof`` or ``attestation[i]``. The one exception is a witness cosignature
  line after the log's signature (c2sp.org/tlog-cosignature): it must be well-formed, and
  it is verified only against the witness keys the verifier trusts (C2SP: lines from
  other keys are ignored); with witness keys, a quorum of them must have cosigned.
* :func:`build_bundle` reads a store and never writes to it.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ledger.encoding.canonical import Limits, canonicalize, require_canonical
from ledger.encoding.digest import is_digest, sha256_digest
from ledger.encoding.values import JSONObject
from ledger.errors import CheckFailed, LedgerError, NotFound
from ledger.log import merkle
from ledger.log.checkpoints import entry_at, entry_leaf, latest_checkpoint
from ledger.log.cosignature import (
    CosignatureError,
    QuorumResult,
    WitnessKey,
    check_cosignatures,
    from_note_signature,
)
from ledger.log.cosigning import cosigned_note
from ledger.log.note import (
    Checkpoint,
    NoteSignature,
    open_checkpoint,
    parse_note,
    parse_verifier_key,
)
from ledger.schema.kinds import BLOB, KINDS, detect_kind, document, get_kind
from ledger.store.base import LedgerReader, StoredObject

MEDIA_TYPE: Final = "application/vnd.provledger.bundle.v1+json"
TLOG_PROOF_HEADER: Final = "c2sp.org/tlog-proof@v1"
MAX_BUNDLE_BYTES: Final = 64 * 1024 * 1024
ATTESTATION_KIND: Final = "attestation"
SUBJECT_REL: Final = "subject"

# Parts named by BundleError.
PART_BUNDLE: Final = "bundle"
PART_CHECKPOINT: Final = "checkpoint"
PART_OBJECT: Final = "object"
PART_LEAF: Final = "leaf"
PART_PROOF: Final = "proof"

_MAX_PROOF_HASHES: Final = 64  # a tree of at most 2**64 - 1 leaves
_DECIMAL = re.compile(r"(?:0|[1-9][0-9]{0,19})", re.ASCII)
_APPENDED_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
_BUNDLE_KEYS: Final = frozenset({"media_type", "object", "leaf", "proof", "attestations"})
#: A bundle with the objects a replay of its subject needs (``export --with-inputs``).
_BUNDLE_KEYS_WITH_INPUTS: Final = _BUNDLE_KEYS | {"inputs"}
_OBJECT_KEYS: Final = frozenset({"digest", "kind", "data"})
_ATTESTATION_KEYS: Final = frozenset({"digest", "data", "leaf", "proof"})
_INPUT_KEYS: Final = frozenset({"digest", "kind", "data", "leaf", "proof"})
MAX_INPUTS: Final = 10_000
_LEAF_KEYS: Final = frozenset({"appended_at", "digest", "kind", "seq"})


def attestation_part(position: int) -> str:
    """Part name of the attestation at ``position`` in the bundle."""
    return f"attestation[{position}]"


def input_part(position: int) -> str:
    """Part name of the carried input at ``position`` in the bundle."""
    return f"input[{position}]"


class BundleError(CheckFailed):
    """A bundle failed to parse or verify (exit 1); ``part`` names where."""

    def __init__(self, part: str, detail: str) -> None:
        super().__init__(f"bundle part {part}: {detail}")
        self.part = part
        self.detail = detail


class TlogProofError(CheckFailed):
    """Text that is not a strict ``c2sp.org/tlog-proof@v1`` proof (exit 1)."""


def _b64encode(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _strict_b64decode(text: str) -> bytes | None:
    """Standard padded base64 with one spelling per value; None when malformed."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error, ValueError):
        return None
    # Non-zero padding bits would be a second spelling of the same bytes.
    return raw if _b64encode(raw) == text else None


# --------------------------------------------------------------------------- tlog-proof


@dataclass(frozen=True)
class TlogProof:
    """A C2SP tlog-proof: leaf index, inclusion proof (leaf to root), signed checkpoint."""

    index: int
    hashes: tuple[bytes, ...]
    checkpoint: bytes
    extra: bytes | None = None

    def encode(self) -> bytes:
        """The text form: header, optional extra, index, base64 hashes, blank, checkpoint."""
        lines = [TLOG_PROOF_HEADER]
        if self.extra is not None:
            lines.append("extra " + _b64encode(self.extra))
        lines.append(f"index {self.index}")
        lines.extend(_b64encode(h) for h in self.hashes)
        return ("\n".join(lines) + "\n\n").encode("ascii") + self.checkpoint


def parse_tlog_proof(data: bytes) -> TlogProof:
    """Parse a tlog-proof strictly; the checkpoint note is returned unverified.

    Accepts exactly what :meth:`TlogProof.encode` emits: the header line, an optional
    ``extra`` line, ``index N`` (decimal, no leading zeros, < 2**64), at most 64 lines of
    canonical base64 32-byte hashes, one empty line, then a non-empty checkpoint note.
    """
    head, sep, note = data.partition(b"\n\n")
    if not sep or not note:
        raise TlogProofError("tlog-proof, got no empty line before a checkpoint, expected one")
    try:
        lines = head.decode("ascii").split("\n")
    except UnicodeDecodeError:
        raise TlogProofError("tlog-proof header, got non-ASCII bytes, expected ASCII") from None
    if lines[0] != TLOG_PROOF_HEADER:
        raise TlogProofError(f"tlog-proof first line, got {lines[0][:40]!r}, expected header")
    rest = lines[1:]
    extra: bytes | None = None
    if rest and rest[0].startswith("extra "):
        extra = _strict_b64decode(rest[0][len("extra ") :])
        if extra is None:
            raise TlogProofError("tlog-proof extra, got malformed base64, expected base64")
        rest = rest[1:]
    if not rest or not rest[0].startswith("index "):
        raise TlogProofError("tlog-proof index line, got none, expected 'index <decimal>'")
    index_text = rest[0][len("index ") :]
    if not _DECIMAL.fullmatch(index_text) or int(index_text) > merkle.MAX_TREE_SIZE:
        raise TlogProofError(
            f"tlog-proof index, got {index_text[:24]!r}, expected decimal without leading zeros"
        )
    hash_lines = rest[1:]
    if len(hash_lines) > _MAX_PROOF_HASHES:
        raise TlogProofError(f"tlog-proof hashes, got {len(hash_lines)}, expected at most 64")
    hashes = []
    for position, line in enumerate(hash_lines):
        value = _strict_b64decode(line)
        if value is None or len(value) != merkle.HASH_SIZE:
            raise TlogProofError(
                f"tlog-proof hash line {position}, got {line[:48]!r},"
                " expected canonical base64 of 32 bytes"
            )
        hashes.append(value)
    return TlogProof(int(index_text), tuple(hashes), note, extra)


# --------------------------------------------------------------------------- building


@dataclass(frozen=True)
class LoggedItem:
    """One logged object: stored bytes, entry record (leaf bytes) and its tlog-proof."""

    digest: str
    kind: str
    data: bytes
    leaf: bytes
    proof: TlogProof


@dataclass(frozen=True)
class Bundle:
    """An object with its attestations, every item proven against one checkpoint;
    ``inputs`` (None: not carried) are further logged objects, e.g. what a replay of the
    subject reads, proven against the same checkpoint."""

    subject: LoggedItem
    attestations: tuple[LoggedItem, ...] = ()
    inputs: tuple[LoggedItem, ...] | None = None

    def to_value(self) -> dict[str, object]:
        """The JSON value of the bundle (see docs/LOG.md, "Bundle format")."""
        value = self._value()
        if self.inputs is not None:
            value["inputs"] = [
                {
                    "digest": item.digest,
                    "kind": item.kind,
                    "data": _b64encode(item.data),
                    "leaf": item.leaf.decode("utf-8"),
                    "proof": item.proof.encode().decode("utf-8"),
                }
                for item in self.inputs
            ]
        return value

    def _value(self) -> dict[str, object]:
        return {
            "media_type": MEDIA_TYPE,
            "object": {
                "digest": self.subject.digest,
                "kind": self.subject.kind,
                "data": _b64encode(self.subject.data),
            },
            "leaf": self.subject.leaf.decode("utf-8"),
            "proof": self.subject.proof.encode().decode("utf-8"),
            "attestations": [
                {
                    "digest": item.digest,
                    "data": _b64encode(item.data),
                    "leaf": item.leaf.decode("utf-8"),
                    "proof": item.proof.encode().decode("utf-8"),
                }
                for item in self.attestations
            ],
        }

    def encode(self) -> bytes:
        """The bundle file: RFC 8785 bytes of :meth:`to_value` and one newline."""
        return canonicalize(self.to_value()) + b"\n"


def _logged_item(store: LedgerReader, obj: StoredObject, size: int, note: bytes) -> LoggedItem:
    entry = entry_at(store, obj.seq)
    hashes = merkle.inclusion_proof(entry.seq, size, store)
    proof = TlogProof(entry.seq, tuple(hashes), note)
    return LoggedItem(obj.digest, obj.kind, obj.data, entry_leaf(entry), proof)


def attestation_objects(store: LedgerReader, digest: str) -> list[StoredObject]:
    """Attestation objects whose ``subject`` reference names ``digest``, in log order."""
    found: dict[str, StoredObject] = {}
    for from_digest, _rel in store.refs_to(digest, SUBJECT_REL):
        obj = store.get(from_digest)
        if obj is not None and obj.kind == ATTESTATION_KIND:
            found[obj.digest] = obj
    return sorted(found.values(), key=lambda o: o.seq)


def build_bundle(
    store: LedgerReader, digest: str, inputs: Sequence[str] | None = None
) -> tuple[Bundle, tuple[str, ...]]:
    """The bundle of ``digest`` against the newest checkpoint that covers its entry (and,
    with ``inputs``, the entries of those stored objects, carried in log order).

    Attestations appended after that checkpoint cannot be proven against it; their
    digests are returned as the second value (left out of the bundle).
    Raises ``NotFound`` when an object is unknown or no checkpoint covers them.
    """
    obj = store.get(digest)
    if obj is None:
        raise NotFound(f"object not found, got {digest}, expected a digest in the ledger")
    carried = []
    for named in dict.fromkeys(inputs or ()):
        found = store.get(named)
        if found is None:
            raise NotFound(f"input not found, got {named}, expected a digest in the ledger")
        if found.digest != obj.digest:
            carried.append(found)
    last = max([obj.seq, *(o.seq for o in carried)])
    row = latest_checkpoint(store, last + 1)
    if row is None:
        newest = latest_checkpoint(store)
        covered = 0 if newest is None else newest.size
        raise NotFound(
            f"checkpoint covering entry seq {last}, got none (the newest covers {covered}"
            " entries), expected one: run `provledger checkpoint` first"
        )
    note = cosigned_note(store, row)
    subject = _logged_item(store, obj, row.size, note)
    included: list[LoggedItem] = []
    omitted: list[str] = []
    for att in attestation_objects(store, obj.digest):
        if att.seq < row.size:
            included.append(_logged_item(store, att, row.size, note))
        else:
            omitted.append(att.digest)
    carried_items = (
        None
        if inputs is None
        else tuple(
            _logged_item(store, o, row.size, note) for o in sorted(carried, key=lambda o: o.seq)
        )
    )
    bundle = Bundle(subject, tuple(included), carried_items)
    size = len(bundle.encode())
    if size > MAX_BUNDLE_BYTES:
        raise BundleError(
            PART_BUNDLE, f"size, got {size} bytes, expected at most {MAX_BUNDLE_BYTES}"
        )
    return bundle, tuple(omitted)


# --------------------------------------------------------------------------- verifying


@dataclass(frozen=True)
class VerifiedItem:
    """A logged item whose bytes, entry and inclusion were verified."""

    digest: str
    kind: str
    index: int
    appended_at: str


@dataclass(frozen=True)
class VerifiedBundle:
    """The result of :func:`verify_bundle`: what the bundle proves."""

    subject: VerifiedItem
    data: bytes
    checkpoint: Checkpoint
    attestations: tuple[VerifiedItem, ...]
    cosignatures: int = 0  # witness lines in the checkpoint note
    witnesses: QuorumResult | None = None  # set when witness keys were given
    #: Carried inputs (None: the bundle carries none), and their (kind, bytes).
    inputs: tuple[VerifiedItem, ...] | None = None
    input_data: tuple[tuple[str, bytes], ...] = ()

    def to_json(self) -> dict[str, Any]:  # --json; its witnesses part is not JSON-typed yet
        def item(v: VerifiedItem) -> JSONObject:
            return {
                "digest": v.digest,
                "kind": v.kind,
                "index": v.index,
                "appended_at": v.appended_at,
            }

        return {
            "ok": True,
            "media_type": MEDIA_TYPE,
            "object": item(self.subject),
            "checkpoint": {
                "origin": self.checkpoint.origin,
                "size": self.checkpoint.size,
                "root": self.checkpoint.root_hash.hex(),
            },
            "attestations": [item(a) for a in self.attestations],
            "cosignature_count": self.cosignatures,
            # deprecated: cosignature_count (elsewhere ``cosignatures`` lists them)
            "cosignatures": self.cosignatures,
            "witnesses": None if self.witnesses is None else self.witnesses.to_json(),
            "inputs": None if self.inputs is None else [item(i) for i in self.inputs],
        }


def _fields(value: object, keys: frozenset[str], part: str, what: str) -> dict[str, str]:
    if not isinstance(value, dict) or set(value) != keys:
        got = sorted(value) if isinstance(value, dict) else type(value).__name__
        raise BundleError(part, f"{what} members, got {got}, expected {sorted(keys)}")
    for key in keys:
        if not isinstance(value[key], str):
            raise BundleError(part, f"{what}.{key}, got {type(value[key]).__name__}, expected str")
    return value


def decode_bundle(data: bytes) -> Bundle:
    """Parse a bundle's structure (nothing is verified yet).

    Malformed JSON, a non-canonical spelling, unknown or missing top-level members and
    the wrong media type fail as part ``bundle``; wrong members of the object, malformed
    data or a malformed tlog-proof fail as ``object`` / ``proof`` (``attestation[i]`` for
    an attestation's).
    """
    if len(data) > MAX_BUNDLE_BYTES:
        raise BundleError(
            PART_BUNDLE, f"size, got {len(data)} bytes, expected at most {MAX_BUNDLE_BYTES}"
        )
    if not data.endswith(b"\n"):
        raise BundleError(PART_BUNDLE, "final byte, got no newline, expected canonical JSON + LF")
    try:
        value = require_canonical(data[:-1], Limits(max_bytes=MAX_BUNDLE_BYTES))
    except LedgerError as exc:
        raise BundleError(PART_BUNDLE, str(exc)) from None
    top = value if isinstance(value, dict) else None
    if top is None or set(top) not in (_BUNDLE_KEYS, _BUNDLE_KEYS_WITH_INPUTS):
        got = sorted(top) if top is not None else type(value).__name__
        raise BundleError(
            PART_BUNDLE,
            f"members, got {got}, expected {sorted(_BUNDLE_KEYS)} (and optionally inputs)",
        )
    if top["media_type"] != MEDIA_TYPE:
        raise BundleError(
            PART_BUNDLE, f"media_type, got {top['media_type']!r}, expected {MEDIA_TYPE}"
        )
    obj = _fields(top["object"], _OBJECT_KEYS, PART_OBJECT, "object")
    leaf, proof = top["leaf"], top["proof"]
    for key, part in (("leaf", leaf), ("proof", proof)):
        if not isinstance(part, str):
            raise BundleError(PART_BUNDLE, f"{key}, got {type(part).__name__}, expected str")
    assert isinstance(leaf, str) and isinstance(proof, str)  # checked just above
    if not isinstance(top["attestations"], list):
        raise BundleError(PART_BUNDLE, "attestations, got no array, expected an array")
    subject = _decode_item(obj["digest"], obj["kind"], obj["data"], leaf, proof, None)
    attestations = []
    for position, raw in enumerate(top["attestations"]):
        att = _fields(raw, _ATTESTATION_KEYS, attestation_part(position), "attestation")
        attestations.append(
            _decode_item(
                att["digest"], ATTESTATION_KIND, att["data"], att["leaf"], att["proof"], position
            )
        )
    inputs = None
    if "inputs" in top:
        raw_inputs = top["inputs"]
        if not isinstance(raw_inputs, list) or len(raw_inputs) > MAX_INPUTS:
            raise BundleError(
                PART_BUNDLE, f"inputs, got no array of at most {MAX_INPUTS}, expected one"
            )
        inputs = []
        for position, raw in enumerate(raw_inputs):
            item = _fields(raw, _INPUT_KEYS, input_part(position), "input")
            inputs.append(
                _decode_item(
                    item["digest"], item["kind"], item["data"], item["leaf"], item["proof"],
                    position, input_part(position),
                )
            )  # fmt: skip
    return Bundle(subject, tuple(attestations), None if inputs is None else tuple(inputs))


def _decode_item(
    digest: str,
    kind: str,
    data: str,
    leaf: str,
    proof: str,
    position: int | None,
    part: str | None = None,
) -> LoggedItem:
    named = part if part is not None else None if position is None else attestation_part(position)
    object_part = PART_OBJECT if named is None else named
    proof_part = PART_PROOF if named is None else named
    raw = _strict_b64decode(data)
    if raw is None:
        raise BundleError(object_part, "data, got malformed base64, expected canonical base64")
    try:
        parsed = parse_tlog_proof(proof.encode("utf-8"))
    except TlogProofError as exc:
        raise BundleError(proof_part, str(exc)) from None
    if parsed.extra is not None:
        raise BundleError(proof_part, "tlog-proof extra, got extra data, expected none in v1")
    return LoggedItem(digest, kind, raw, leaf.encode("utf-8"), parsed)


def _open_checkpoint(note: bytes, log_key: str) -> tuple[Checkpoint, tuple[NoteSignature, ...]]:
    """The verified checkpoint and its witness cosignature lines (not yet verified).

    The first signature line must be the log's (key name = origin), and the only one by
    the log key; every later line must be a well-formed cosignature, each line once.
    """
    name, kid, _ = parse_verifier_key(log_key)
    try:
        checkpoint = open_checkpoint(note, log_key, name)
        signatures = parse_note(note).signatures
    except LedgerError as exc:
        raise BundleError(PART_CHECKPOINT, str(exc)) from None
    first, rest = signatures[0], signatures[1:]
    if (first.name, first.key_id) != (name, kid):
        raise BundleError(
            PART_CHECKPOINT,
            f"first signature, got {first.name}+{first.key_id.hex()}, expected the log's",
        )
    seen = set()
    for sig in rest:
        if (sig.name, sig.key_id) == (name, kid):
            raise BundleError(PART_CHECKPOINT, "signatures, got a second by the log key")
        if sig in seen:
            raise BundleError(PART_CHECKPOINT, f"cosignature by {sig.name}, got it twice")
        seen.add(sig)
        try:
            from_note_signature(sig)
        except CosignatureError as exc:
            raise BundleError(PART_CHECKPOINT, str(exc)) from None
    return checkpoint, rest


def _check_witnesses(
    checkpoint: Checkpoint,
    cosignatures: tuple[NoteSignature, ...],
    keys: Sequence[WitnessKey],
    quorum: int,
) -> QuorumResult:
    result = check_cosignatures(checkpoint.body(), cosignatures, keys)
    if result.invalid:
        label, error = result.invalid[0]
        raise BundleError(PART_CHECKPOINT, f"cosignature by {label}: {error}")
    if len(result.valid) < quorum:
        names = ", ".join(k.label for k, _ in result.valid) or "none"
        raise BundleError(
            PART_CHECKPOINT,
            f"cosignatures by trusted witnesses, got {len(result.valid)} ({names}),"
            f" expected at least {quorum}",
        )
    return result


def _check_object(item: LoggedItem, part: str) -> None:
    if not is_digest(item.digest):
        raise BundleError(part, f"digest, got {item.digest[:80]!r}, expected sha256:<64 hex>")
    actual = sha256_digest(item.data)
    if actual != item.digest:
        raise BundleError(part, f"digest of data, got {actual}, expected {item.digest}")
    if item.kind == BLOB:
        return
    if item.kind not in KINDS:
        raise BundleError(part, f"kind, got {item.kind[:40]!r}, expected a registered kind")
    try:
        value = require_canonical(item.data)
        detected = detect_kind(value).name
    except LedgerError as exc:
        raise BundleError(part, f"data: {exc}") from None
    if detected != item.kind:
        raise BundleError(part, f"kind of data, got {detected}, expected {item.kind}")


def _check_leaf(item: LoggedItem, part: str) -> tuple[int, str]:
    """Check the entry record names the item; return its ``(seq, appended_at)``."""
    try:
        value = require_canonical(item.leaf)
    except LedgerError as exc:
        raise BundleError(part, f"entry record: {exc}") from None
    if not isinstance(value, dict) or set(value) != _LEAF_KEYS:
        got = sorted(value) if isinstance(value, dict) else type(value).__name__
        raise BundleError(part, f"entry record members, got {got}, expected {sorted(_LEAF_KEYS)}")
    seq, appended_at = value["seq"], value["appended_at"]
    if value["digest"] != item.digest:
        raise BundleError(part, f"entry digest, got {value['digest']!r}, expected {item.digest}")
    if value["kind"] != item.kind:
        raise BundleError(part, f"entry kind, got {value['kind']!r}, expected {item.kind}")
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise BundleError(part, f"entry seq, got {seq!r}, expected an integer >= 0")
    if not isinstance(appended_at, str) or not _APPENDED_AT.fullmatch(appended_at):
        raise BundleError(
            part, f"entry appended_at, got {appended_at!r}, expected UTC RFC 3339 with micros"
        )
    return seq, appended_at


def _check_inclusion(
    item: LoggedItem, seq: int, checkpoint: Checkpoint, leaf_part: str, proof_part: str
) -> None:
    leaf_hash = merkle.leaf_hash(item.leaf)
    index = item.proof.index

    def included_at(position: int) -> bool:
        try:
            merkle.verify_inclusion(
                position, checkpoint.size, leaf_hash, item.proof.hashes, checkpoint.root_hash
            )
        except merkle.ProofError:
            return False
        return True

    if seq != index:
        # Blame the side that was changed: an intact leaf is still included at its seq.
        if included_at(seq):
            raise BundleError(proof_part, f"index, got {index}, expected the entry seq {seq}")
        raise BundleError(leaf_part, f"entry seq, got {seq}, expected the proof index {index}")
    try:
        merkle.verify_inclusion(
            index, checkpoint.size, leaf_hash, item.proof.hashes, checkpoint.root_hash
        )
    except merkle.ProofError as exc:
        raise BundleError(
            proof_part,
            f"entry record at index {index} not included in the checkpoint of size"
            f" {checkpoint.size}: {exc}",
        ) from None


def _subject_refs(data: bytes) -> Iterable[tuple[str, str]]:
    return get_kind(ATTESTATION_KIND).refs(document(require_canonical(data)))


def verify_bundle(
    data: bytes,
    log_key: str,
    witness_keys: Sequence[WitnessKey] = (),
    quorum: int | None = None,
) -> VerifiedBundle:
    """Verify a bundle with no database, trusting only ``log_key`` (verifier key string).

    Checks, in order: structure (``bundle``); the checkpoint note's signature under
    ``log_key`` and origin = key name (``checkpoint``); the object's digest, canonical
    form and kind (``object``); the entry record names it (``leaf``); the leaf's
    inclusion at its index under the checkpoint root (``proof``); then each attestation
    (``attestation[i]``): same checks against the same checkpoint, kind ``attestation``,
    subject = the object, indices strictly increasing.
    With ``witness_keys``, the checkpoint must carry valid cosignatures by ``quorum`` of
    them (default: all); a line by a trusted witness that does not verify fails
    (``checkpoint``).
    A malformed ``log_key`` raises ``VerifierKeyError`` (exit 3); failures ``BundleError``.
    """
    parse_verifier_key(log_key)
    bundle = decode_bundle(data)
    subject = bundle.subject
    checkpoint, cosignatures = _open_checkpoint(subject.proof.checkpoint, log_key)
    witnesses = None
    if witness_keys:
        required = len(witness_keys) if quorum is None else quorum
        witnesses = _check_witnesses(checkpoint, cosignatures, witness_keys, required)
    _check_object(subject, PART_OBJECT)
    seq, appended_at = _check_leaf(subject, PART_LEAF)
    _check_inclusion(subject, seq, checkpoint, PART_LEAF, PART_PROOF)
    verified = VerifiedItem(subject.digest, subject.kind, seq, appended_at)

    attestations: list[VerifiedItem] = []
    previous = -1
    for position, item in enumerate(bundle.attestations):
        part = attestation_part(position)
        if item.proof.checkpoint != subject.proof.checkpoint:
            raise BundleError(part, "checkpoint, got another note, expected the object's")
        _check_object(item, part)
        if (SUBJECT_REL, subject.digest) not in _subject_refs(item.data):
            raise BundleError(part, f"subject, got another object, expected {subject.digest}")
        att_seq, att_at = _check_leaf(item, part)
        _check_inclusion(item, att_seq, checkpoint, part, part)
        if att_seq <= previous:
            raise BundleError(part, f"index, got {att_seq}, expected > {previous} (log order)")
        previous = att_seq
        attestations.append(VerifiedItem(item.digest, item.kind, att_seq, att_at))
    inputs = None if bundle.inputs is None else _check_inputs(bundle, checkpoint, seq)
    return VerifiedBundle(
        verified,
        subject.data,
        checkpoint,
        tuple(attestations),
        len(cosignatures),
        witnesses,
        inputs,
        tuple((i.kind, i.data) for i in bundle.inputs or ()),
    )


def _check_inputs(
    bundle: Bundle, checkpoint: Checkpoint, subject_seq: int
) -> tuple[VerifiedItem, ...]:
    """Each carried input: the object, its entry record and its inclusion, against the
    subject's checkpoint; in strictly increasing log order, never the subject itself."""
    out: list[VerifiedItem] = []
    previous = -1
    for position, item in enumerate(bundle.inputs or ()):
        part = input_part(position)
        if item.proof.checkpoint != bundle.subject.proof.checkpoint:
            raise BundleError(part, "checkpoint, got another note, expected the object's")
        _check_object(item, part)
        seq, appended_at = _check_leaf(item, part)
        _check_inclusion(item, seq, checkpoint, part, part)
        if seq <= previous or seq == subject_seq:
            raise BundleError(
                part, f"index, got {seq}, expected > {previous} and not the object's (log order)"
            )
        previous = seq
        out.append(VerifiedItem(item.digest, item.kind, seq, appended_at))
    return tuple(out)
