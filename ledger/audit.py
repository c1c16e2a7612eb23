"""Full audit of a ledger file (``provledger verify``): trust nothing the database says.

Streams the log once (memory is O(log n)): recomputes every digest from the stored
bytes, checks canonical form and schema, the contiguous sequence, every stored tree
node, every checkpoint's root and signature, the append-only triggers, and derived
tables. Each problem becomes a ``Finding`` naming the entry.
"""

from __future__ import annotations

import hashlib
import hmac
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ledger import merkle, schema
from ledger.canonical import require_canonical
from ledger.digest import apply_float_hints, legacy_digest
from ledger.errors import LedgerError
from ledger.kinds import BLOB, detect_kind
from ledger.leaf import entry_record
from ledger.note import Checkpoint, open_checkpoint
from ledger.sqlite_store import SQLiteStore, trigger_names
from ledger.store import StoredObject


@dataclass(frozen=True)
class Finding:
    """One problem. ``code`` is stable; ``seq``/``digest`` locate it when known."""

    code: str
    message: str
    seq: int | None = None
    digest: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, "seq": self.seq, "digest": self.digest}


ObjectCheck = Callable[[StoredObject, Any], list[Finding]]


def default_object_checks() -> list[ObjectCheck]:
    """Per-object checks beyond bytes and schema (attestations, ...); extend here."""
    return []


@dataclass
class AuditReport:
    """The audit's result; ``ok`` iff there are no findings."""

    entries: int = 0
    checkpoints_checked: int = 0
    root: str | None = None
    from_checkpoint: dict[str, Any] | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "entries": self.entries,
            "root": self.root,
            "checkpoints_checked": self.checkpoints_checked,
            "from_checkpoint": self.from_checkpoint,
            "findings": [f.to_json() for f in self.findings],
        }


class CompactRange:
    """The right frontier of a growing tree: O(log n) hashes, root at any point."""

    def __init__(self) -> None:
        self.size = 0
        self._stack: list[tuple[int, bytes]] = []  # (level, hash), levels strictly decreasing

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Add a leaf hash; return every complete subtree node it closes."""
        index = self.size
        closed = [(0, index, leaf)]
        level, value, idx = 0, leaf, index
        while self._stack and self._stack[-1][0] == level:
            _, left = self._stack.pop()
            value = merkle.node_hash(left, value)
            level, idx = level + 1, idx >> 1
            closed.append((level, idx, value))
        self._stack.append((level, value))
        self.size += 1
        return closed

    def root(self) -> bytes:
        if not self._stack:
            return merkle.EMPTY_ROOT
        acc = self._stack[-1][1]
        for _, value in reversed(self._stack[:-1]):
            acc = merkle.node_hash(value, acc)
        return acc


def _check_object(obj: StoredObject) -> tuple[list[Finding], list[tuple[str, str]]]:
    """Findings for one object, and the references its bytes imply."""
    found: list[Finding] = []
    refs: list[tuple[str, str]] = []
    actual = "sha256:" + hashlib.sha256(obj.data).hexdigest()
    if actual != obj.digest:
        found.append(
            Finding(
                "digest-mismatch",
                f"stored bytes hash to {actual}, expected {obj.digest}",
                obj.seq,
                obj.digest,
            )
        )
    if obj.kind == BLOB:
        return found, refs
    try:
        value = require_canonical(obj.data)
        spec = detect_kind(value)
        version = value.get("schema_version")
        if spec.name != obj.kind:
            found.append(
                Finding(
                    "kind-mismatch",
                    f"bytes are a {spec.name}, index says {obj.kind}",
                    obj.seq,
                    obj.digest,
                )
            )
        refs = spec.refs(value)
        schema.validate(spec.name, str(version), value)
        expected = (
            str(version),
            spec.object_id(value),
            spec.object_version(value),
            None if spec.native else _legacy_from_stored(value, obj.legacy_hints),
        )
        stored = (obj.schema_version, obj.object_id, obj.object_version, obj.legacy_digest)
        if expected != stored:
            found.append(
                Finding(
                    "index-mismatch",
                    f"index columns {stored}, expected {expected}",
                    obj.seq,
                    obj.digest,
                )
            )
    except LedgerError as exc:
        code = {
            "CanonicalFormError": "not-canonical",
            "SchemaError": "schema-invalid",
            "KindError": "kind-invalid",
        }.get(type(exc).__name__, "parse-error")
        found.append(Finding(code, str(exc), obj.seq, obj.digest))
    return found, refs


def _legacy_from_stored(value: Any, hints_text: str | None) -> str:
    """Recompute the legacy digest from canonical bytes plus the stored float hints."""
    import copy
    import json

    if not hints_text:
        return legacy_digest(value)
    try:
        hints = json.loads(hints_text)
        return legacy_digest(apply_float_hints(copy.deepcopy(value), hints))
    except (ValueError, KeyError, IndexError, TypeError):
        return "invalid float hints"


def _check_triggers(conn: sqlite3.Connection) -> list[Finding]:
    present = {
        name: sql
        for name, sql in conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger'")
    }
    found = []
    for name in trigger_names():
        sql = present.get(name)
        if sql is None or "RAISE(ABORT" not in sql.upper().replace(" ", ""):
            found.append(Finding("trigger-missing", f"append-only trigger {name} is missing"))
    return found


def audit(
    store: SQLiteStore,
    *,
    trusted_key: str | None = None,
    from_checkpoint: bytes | None = None,
    object_checks: Sequence[ObjectCheck] = (),
    advance: Callable[[int], None] = lambda _n: None,
) -> AuditReport:
    """Audit the whole ledger; see the module docstring for what is checked."""
    conn = store.connection
    report = AuditReport()
    findings = report.findings
    meta_key = store.get_meta("log_verifier_key")
    origin = store.get_meta("origin")
    if meta_key is None or origin is None:
        findings.append(Finding("meta-missing", "origin or log verifier key missing from meta"))
    vkey = trusted_key or meta_key
    if trusted_key is not None and meta_key is not None and trusted_key != meta_key:
        findings.append(
            Finding(
                "log-key-mismatch",
                f"ledger records log key {meta_key}, expected the trusted key {trusted_key}",
            )
        )
    findings.extend(_check_triggers(conn))

    checkpoints = {row.size: row for row in store.checkpoints()}
    saved: Checkpoint | None = None
    if from_checkpoint is not None:
        try:
            if vkey is None:
                raise LedgerError("no log key to verify the saved checkpoint with")
            saved = open_checkpoint(from_checkpoint, vkey, origin)
            report.from_checkpoint = {"size": saved.size, "root": saved.root_hash.hex()}
        except LedgerError as exc:
            findings.append(Finding("saved-checkpoint-invalid", str(exc)))

    frontier = CompactRange()
    sql = (
        "SELECT e.seq, e.digest, e.kind, e.appended_at, o.digest, o.seq, o.kind,"
        " o.schema_version, o.object_id, o.object_version, o.legacy_digest, o.legacy_hints, o.data"
        " FROM entries e LEFT JOIN objects o ON o.seq = e.seq ORDER BY e.seq"
    )
    expected_nodes = 0
    ref_count = 0
    for row in conn.execute(sql):
        seq, digest, kind, appended_at = row[0], row[1], row[2], row[3]
        if seq != frontier.size:
            findings.append(
                Finding(
                    "sequence-gap",
                    f"entry seq {seq} follows {frontier.size - 1}, expected {frontier.size}",
                    seq=seq,
                    digest=digest,
                )
            )
        if row[4] is None:
            findings.append(Finding("object-missing", "entry has no object", seq, digest))
        else:
            obj = StoredObject(*row[4:])
            if obj.digest != digest or obj.kind != kind:
                findings.append(
                    Finding(
                        "entry-object-mismatch",
                        f"entry names {kind} {digest}, object row is {obj.kind} {obj.digest}",
                        seq,
                        digest,
                    )
                )
            problems, refs = _check_object(obj)
            findings.extend(problems)
            for rel, target in refs:
                ref_count += 1
                if (
                    conn.execute(
                        "SELECT 1 FROM refs WHERE to_digest = ? AND rel = ? AND from_digest = ?",
                        (target, rel, obj.digest),
                    ).fetchone()
                    is None
                ):
                    findings.append(
                        Finding("ref-missing", f"reference {rel} -> {target} missing", seq, digest)
                    )
            for check in object_checks:
                findings.extend(check(obj, store))
        leaf = merkle.leaf_hash(entry_record(seq, kind, digest, appended_at))
        for level, idx, value in frontier.append(leaf):
            expected_nodes += 1
            stored = conn.execute(
                "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, idx)
            ).fetchone()
            if stored is None or not hmac.compare_digest(bytes(stored[0]), value):
                findings.append(
                    Finding(
                        "tree-node-mismatch",
                        f"tree node level {level} index {idx} "
                        + ("missing" if stored is None else "differs from the recomputed hash"),
                        seq,
                        digest,
                    )
                )
        size = frontier.size
        if size in checkpoints:
            findings.extend(_check_checkpoint(checkpoints.pop(size), frontier.root(), vkey, origin))
            report.checkpoints_checked += 1
        if saved is not None and saved.size == size:
            if not hmac.compare_digest(saved.root_hash, frontier.root()):
                findings.append(
                    Finding(
                        "history-rewritten",
                        f"log at size {size} has root {frontier.root().hex()},"
                        f" expected the saved checkpoint's {saved.root_hash.hex()}",
                    )
                )
            saved = None
        advance(1)
    report.entries = frontier.size
    report.root = frontier.root().hex()

    if saved is not None:
        findings.append(
            Finding(
                "history-rewritten",
                f"log has {frontier.size} entries, expected at least the saved checkpoint's"
                f" {saved.size}",
            )
        )
    for size, row in checkpoints.items():
        findings.append(
            Finding("checkpoint-beyond-log", f"checkpoint for size {size} > log size {row.size}")
        )
    (node_count,) = conn.execute("SELECT count(*) FROM tree_nodes").fetchone()
    if node_count != expected_nodes:
        findings.append(
            Finding("tree-node-extra", f"{node_count} tree nodes stored, expected {expected_nodes}")
        )
    findings.extend(_check_orphans(conn))
    (stored_refs,) = conn.execute("SELECT count(*) FROM refs").fetchone()
    if stored_refs != ref_count:
        findings.append(
            Finding("ref-extra", f"{stored_refs} references stored, expected {ref_count}")
        )
    return report


def _check_checkpoint(row: Any, root: bytes, vkey: str | None, origin: str | None) -> list[Finding]:
    found = []
    if not hmac.compare_digest(bytes(row.root), root):
        found.append(
            Finding(
                "checkpoint-root-mismatch",
                f"checkpoint at size {row.size} stores root {bytes(row.root).hex()},"
                f" recomputed {root.hex()}",
            )
        )
    try:
        if vkey is None:
            raise LedgerError("no log key")
        body = open_checkpoint(bytes(row.note), vkey, origin)
        if body.size != row.size or not hmac.compare_digest(body.root_hash, root):
            found.append(
                Finding(
                    "checkpoint-note-mismatch",
                    f"signed note says size {body.size} root {body.root_hash.hex()},"
                    f" expected size {row.size} root {root.hex()}",
                )
            )
    except LedgerError as exc:
        found.append(
            Finding("checkpoint-signature-invalid", f"checkpoint at size {row.size}: {exc}")
        )
    return found


def _check_orphans(conn: sqlite3.Connection) -> list[Finding]:
    rows = conn.execute(
        "SELECT o.seq, o.digest FROM objects o LEFT JOIN entries e ON e.seq = o.seq"
        " WHERE e.seq IS NULL OR e.digest != o.digest"
    ).fetchall()
    return [
        Finding("object-without-entry", "object row is not in the log", int(seq), str(digest))
        for seq, digest in rows
    ]
