"""Full audit of a ledger file (``provledger verify``): trust nothing the database says.

Streams the log once (memory is O(log n) plus the checkpoint list): recomputes every
digest from the stored bytes, checks canonical form and schema, the contiguous sequence,
every stored tree node (and that no other node is stored), every checkpoint's root and
signature (exactly one signature line, by the log key), the append-only triggers (present
and unaltered), the consistency of the meta records (origin, log and authority key ids),
and the derived tables (index columns, references). A saved checkpoint
(``from_checkpoint``) must still be a prefix of the log: this is what catches a ledger
truncated and re-signed with another key. Each problem becomes a ``Finding`` naming the
entry (``seq``/``digest``) or the checkpoint (``checkpoint`` = its size) when it has one.
Rows of the wrong SQL type are findings too, never crashes.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ledger.audit import object_check as fastcheck
from ledger.encoding.canonical import require_canonical
from ledger.encoding.digest import apply_float_hints, legacy_digest
from ledger.errors import LedgerError
from ledger.log import merkle
from ledger.log.leaf import entry_record
from ledger.log.note import Checkpoint, open_checkpoint, parse_note, parse_verifier_key
from ledger.schema import validation as schema
from ledger.schema.kinds import BLOB, detect_kind
from ledger.store.base import CheckpointRow, StoredObject
from ledger.store.sqlite import LEDGER_TABLES, SQLiteStore, trigger_names

if TYPE_CHECKING:
    from ledger.store.postgres import PostgresStore
from ledger.trust.keys import key_id as raw_key_id

_APPENDED_AT = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}Z")
# What an append-only trigger must be, whitespace-normalised: nothing but an abort.
_TRIGGER_SQL = re.compile(
    r"CREATE TRIGGER (?P<name>\w+) BEFORE (?P<op>UPDATE|DELETE) ON (?P<table>\w+)"
    r" BEGIN SELECT RAISE\(ABORT, '[^']*'\); END",
    re.IGNORECASE,
)
_MAX_LISTED = 100  # cap on findings listed one by one for one kind of extra row


@dataclass(frozen=True)
class Finding:
    """One problem. ``code`` is stable; ``seq``/``digest``/``checkpoint`` locate it."""

    code: str
    message: str
    seq: int | None = None
    digest: str | None = None
    checkpoint: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "seq": self.seq,
            "digest": self.digest,
            "checkpoint": self.checkpoint,
        }


ObjectCheck = Callable[[StoredObject, Any], list[Finding]]


def default_object_checks() -> list[ObjectCheck]:
    """Per-object checks beyond bytes and schema (attestations, ...); extend here."""
    # Imported here: attestation_checks imports this module for ``Finding``.
    from ledger.trust.judgement import attestation_object_check

    return [attestation_object_check()]


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


def _refs_of(kind: object, data: object) -> list[tuple[str, str]]:
    """References an object's bytes imply (none for blobs or unreadable bytes)."""
    if kind == BLOB or not isinstance(data, bytes):
        return []
    try:
        value = require_canonical(data)
        return list(detect_kind(value).refs(value))
    except LedgerError:
        return []


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


def _text(data: bytes) -> str:
    # Hand-edited files may hold invalid UTF-8 in TEXT columns: keep it visible (as lone
    # surrogates, which then fail every comparison) instead of aborting the audit.
    return data.decode("utf-8", "surrogateescape")


_OBJECT_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (str, "digest"),
    (int, "seq"),
    (str, "kind"),
    ((str, type(None)), "schema_version"),
    ((str, type(None)), "object_id"),
    ((int, type(None)), "object_version"),
    ((str, type(None)), "legacy_digest"),
    ((str, type(None)), "legacy_hints"),
    (bytes, "data"),
)


def _object_row_problem(columns: Sequence[Any]) -> str | None:
    for value, (types, name) in zip(columns, _OBJECT_TYPES, strict=True):
        if not isinstance(value, types) or isinstance(value, bool):
            return f"objects.{name} has SQL type {type(value).__name__}"
    return None


def _check_triggers(conn: sqlite3.Connection) -> list[Finding]:
    present = {
        str(name): (str(table), str(sql))
        for name, table, sql in conn.execute(
            "SELECT name, tbl_name, sql FROM sqlite_master WHERE type = 'trigger'"
        )
    }
    expected = trigger_names()
    found = []
    for name in expected:
        if name not in present:
            found.append(Finding("trigger-missing", f"append-only trigger {name} is missing"))
            continue
        table, op = name.rsplit("_no_", 1)
        match = _TRIGGER_SQL.fullmatch(" ".join(present[name][1].split()))
        if (
            match is None
            or match["name"] != name
            or match["table"] != table
            or match["op"].lower() != op
        ):
            found.append(
                Finding(
                    "trigger-altered",
                    f"append-only trigger {name} is not an unconditional abort on {op} of {table}",
                )
            )
    for name, (table, _sql) in sorted(present.items()):
        if name not in expected and table in LEDGER_TABLES:
            found.append(
                Finding("trigger-unexpected", f"trigger {name} on ledger table {table} is unknown")
            )
    return found


def _check_meta(store: SQLiteStore | PostgresStore) -> list[Finding]:
    """The meta records must agree with each other (they are not in the log)."""
    found = []
    origin = store.get_meta("origin")
    vkey = store.get_meta("log_verifier_key")
    if vkey is None or origin is None:
        return [Finding("meta-missing", "origin or log verifier key missing from meta")]
    try:
        name, _kid, public_key = parse_verifier_key(vkey)
    except LedgerError as exc:
        return [Finding("meta-invalid", f"meta log_verifier_key: {exc}")]
    if name != origin:
        found.append(
            Finding("meta-inconsistent", f"log verifier key names {name!r}, origin is {origin!r}")
        )
    log_id = store.get_meta("log_key_id")
    if log_id is not None and log_id != raw_key_id(public_key):
        found.append(
            Finding(
                "meta-inconsistent",
                f"meta log_key_id {log_id}, expected {raw_key_id(public_key)}"
                " (of the verifier key)",
            )
        )
    auth_pub, auth_id = store.get_meta("authority_public_key"), store.get_meta("authority_key_id")
    if auth_pub is not None and auth_id is not None:
        try:
            raw = base64.b64decode(auth_pub, validate=True)
            computed = raw_key_id(raw)
        except (binascii.Error, ValueError, LedgerError):
            computed = "an unreadable key"
        if computed != auth_id:
            found.append(
                Finding(
                    "meta-inconsistent",
                    f"meta authority_key_id {auth_id}, expected {computed} (of the public key)",
                )
            )
    return found


def _load_checkpoints(
    stored: Iterable[tuple[Any, ...]],
) -> tuple[dict[int, CheckpointRow], list[Finding]]:
    rows: dict[int, CheckpointRow] = {}
    found = []
    for size, root, note, created_at in stored:
        if isinstance(size, int) and isinstance(root, bytes) and isinstance(note, bytes):
            rows[size] = CheckpointRow(size, root, note, str(created_at))
        else:
            found.append(
                Finding(
                    "checkpoint-row-invalid",
                    f"checkpoint row has SQL types ({type(size).__name__},"
                    f" {type(root).__name__}, {type(note).__name__}), expected (int, blob, blob)",
                    checkpoint=size if isinstance(size, int) else None,
                )
            )
    return rows, found


def audit(
    store: SQLiteStore | PostgresStore,
    *,
    trusted_key: str | None = None,
    trusted_authority: str | None = None,
    from_checkpoint: bytes | None = None,
    object_checks: Sequence[ObjectCheck] = (),
    advance: Callable[[int], None] = lambda _n: None,
    workers: int | None = None,
) -> AuditReport:
    """Audit the whole ledger; see the module docstring for what is checked.

    ``workers`` processes run the per-object checks (default: ``fastcheck.default_workers``,
    i.e. in process for small ledgers); results are used in log order either way.

    A malformed ``trusted_key`` raises ``VerifierKeyError`` (exit 3); everything found
    in the database is reported as findings.
    """
    if trusted_key is not None:
        parse_verifier_key(trusted_key)
    if not isinstance(store, SQLiteStore):
        # The server keeps column types; one REPEATABLE READ snapshot while writers append.
        with store.snapshot():
            return _audit(
                store,
                trusted_key,
                trusted_authority,
                from_checkpoint,
                object_checks,
                advance,
                workers or fastcheck.default_workers(store.size()),
            )
    conn = store.connection
    saved_factory = conn.text_factory
    conn.text_factory = _text
    try:
        if workers is None:
            workers = fastcheck.default_workers(store.size())
        return _audit(
            store, trusted_key, trusted_authority, from_checkpoint, object_checks, advance, workers
        )
    finally:
        conn.text_factory = saved_factory


def _audit(
    store: SQLiteStore | PostgresStore,
    trusted_key: str | None,
    trusted_authority: str | None,
    from_checkpoint: bytes | None,
    object_checks: Sequence[ObjectCheck],
    advance: Callable[[int], None],
    workers: int = 1,
) -> AuditReport:
    sqlite = store if isinstance(store, SQLiteStore) else None
    pg = None if isinstance(store, SQLiteStore) else store
    report = AuditReport()
    findings = report.findings
    meta_key = store.get_meta("log_verifier_key")
    origin = store.get_meta("origin")
    findings.extend(_check_meta(store))
    vkey = trusted_key or meta_key
    if trusted_key is not None and meta_key is not None and trusted_key != meta_key:
        findings.append(
            Finding(
                "log-key-mismatch",
                f"ledger records log key {meta_key}, expected the trusted key {trusted_key}",
            )
        )
    meta_authority = store.get_meta("authority_public_key")
    if trusted_authority is not None and trusted_authority != meta_authority:
        findings.append(
            Finding(
                "authority-key-mismatch",
                f"ledger records authority key {meta_authority},"
                f" expected the trusted key {trusted_authority}",
            )
        )
    if sqlite is not None:
        conn = sqlite.connection
        findings.extend(_check_triggers(conn))
        integrity = [str(r[0]) for r in conn.execute("PRAGMA quick_check")]
        if integrity != ["ok"]:
            findings.append(Finding("database-corrupt", "; ".join(integrity[:5])))
        checkpoints, problems = _load_checkpoints(
            conn.execute("SELECT size, root, note, created_at FROM checkpoints ORDER BY size")
        )
    else:
        assert pg is not None
        findings.extend(Finding(code, message) for code, message in pg.schema_problems())
        checkpoints, problems = _load_checkpoints(pg.load_checkpoint_rows())
    findings.extend(problems)
    saved: Checkpoint | None = None
    if from_checkpoint is not None:
        try:
            if vkey is None:
                raise LedgerError("no log key to verify the saved checkpoint with")
            saved = open_checkpoint(from_checkpoint, vkey, origin)
            report.from_checkpoint = {"size": saved.size, "root": saved.root_hash.hex()}
        except LedgerError as exc:
            findings.append(
                Finding(
                    "saved-checkpoint-invalid",
                    "the saved checkpoint does not verify under the "
                    + ("trusted" if trusted_key else "ledger's current")
                    + f" log key (key replaced, or another log): {exc}",
                )
            )

    frontier = CompactRange()
    # Size 0 has no entry to be checked after, so its checkpoint and saved head go first.
    if 0 in checkpoints:
        findings.extend(_check_checkpoint(checkpoints.pop(0), frontier.root(), vkey, origin))
        report.checkpoints_checked += 1
    if saved is not None and saved.size == 0:
        saved = None
    sql = (
        "SELECT e.seq, e.digest, e.kind, e.appended_at, o.digest, o.seq, o.kind,"
        " o.schema_version, o.object_id, o.object_version, o.legacy_digest, o.legacy_hints, o.data"
        " FROM entries e LEFT JOIN objects o ON o.seq = e.seq ORDER BY e.seq"
    )
    ref_count = 0
    ref_trouble = False
    nodes: Any
    ref_rows: Any
    rows: Iterable[Any]
    if sqlite is not None:
        nodes = fastcheck.NodeReader(sqlite.connection)
        ref_rows = fastcheck.RefReader(sqlite.connection)
        rows = sqlite.connection.execute(sql)
    else:
        assert pg is not None
        nodes, ref_rows, rows = pg.node_reader(), pg.ref_reader(), pg.audit_rows()
    # fastcheck computes _check_object's result cheaply (maybe in workers), in row order.
    for row, checked in fastcheck.with_object_checks(rows, _check_object, workers):
        seq, digest, kind, appended_at = row[0], row[1], row[2], row[3]
        name = digest if isinstance(digest, str) else None
        if seq != frontier.size:
            findings.append(
                Finding(
                    "sequence-gap",
                    f"entry seq {seq} follows {frontier.size - 1}, expected {frontier.size}",
                    seq=seq,
                    digest=name,
                )
            )
        leaf_fields = (seq, kind, digest, appended_at)
        if not all(isinstance(v, str) for v in leaf_fields[1:]):
            findings.append(Finding("entry-invalid", "entry columns are not all text", seq, name))
        elif not _APPENDED_AT.fullmatch(appended_at):
            findings.append(
                Finding(
                    "entry-invalid",
                    f"appended_at, got {appended_at!r}, expected UTC RFC 3339 with microseconds",
                    seq,
                    name,
                )
            )
        if row[4] is None:
            findings.append(Finding("object-missing", "entry has no object", seq, name))
        elif (problem := _object_row_problem(row[4:])) is not None:
            findings.append(Finding("object-row-invalid", problem, seq, name))
        else:
            obj = StoredObject(*row[4:])
            if obj.digest != digest or obj.kind != kind:
                findings.append(
                    Finding(
                        "entry-object-mismatch",
                        f"entry names {kind} {digest}, object row is {obj.kind} {obj.digest}",
                        seq,
                        name,
                    )
                )
            problems, refs = checked if checked is not None else _check_object(obj)
            findings.extend(problems)
            for rel, target in refs:
                ref_count += 1
                if not ref_rows.has(obj.digest, rel, target):
                    ref_trouble = True
                    findings.append(
                        Finding("ref-missing", f"reference {rel} -> {target} missing", seq, name)
                    )
            for check in object_checks:
                try:
                    findings.extend(check(obj, store))
                except LedgerError as exc:
                    findings.append(Finding("object-check-error", str(exc), seq, name))
        leaf = _leaf_hash(seq, kind, digest, appended_at)
        for level, idx, value in frontier.append(leaf):
            stored = nodes.get(level, idx)
            if stored is None or not (
                isinstance(stored[0], bytes) and hmac.compare_digest(stored[0], value)
            ):
                findings.append(
                    Finding(
                        "tree-node-mismatch",
                        f"tree node level {level} index {idx} "
                        + ("missing" if stored is None else "differs from the recomputed hash"),
                        seq,
                        name,
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
                        checkpoint=size,
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
                checkpoint=saved.size,
            )
        )
    for size in checkpoints:
        findings.append(
            Finding(
                "checkpoint-beyond-log",
                f"checkpoint for size {size} > log size {frontier.size}",
                checkpoint=size,
            )
        )
    size = frontier.size
    if sqlite is not None:
        conn = sqlite.connection
        (total,) = conn.execute("SELECT count(*) FROM tree_nodes").fetchone()
        extra = conn.execute(
            "SELECT level, idx FROM tree_nodes WHERE level < 0 OR level > 63 OR idx < 0"
            " OR typeof(level) != 'integer' OR typeof(idx) != 'integer' OR idx >= (? >> level)"
            " ORDER BY level, idx LIMIT ?",
            (size, _MAX_LISTED),
        ).fetchall()
        orphans = conn.execute(
            "SELECT o.seq, o.digest FROM objects o LEFT JOIN entries e ON e.seq = o.seq"
            " WHERE e.seq IS NULL OR e.digest != o.digest"
        ).fetchall()
        (stored_refs,) = conn.execute("SELECT count(*) FROM refs").fetchone()
    else:
        assert pg is not None
        total, extra = pg.tree_node_count(), pg.tree_nodes_outside(size, _MAX_LISTED)
        orphans, stored_refs = pg.orphan_objects(), pg.ref_count()
    findings.extend(_extra_tree_nodes(total, extra, size))
    findings.extend(_check_orphans(orphans))
    if ref_trouble or stored_refs != ref_count:
        if sqlite is not None:
            findings.extend(
                _extra_refs(
                    sqlite.connection.execute(
                        "SELECT r.from_digest, r.rel, r.to_digest, o.seq, o.kind, o.data"
                        " FROM refs r LEFT JOIN objects o ON o.digest = r.from_digest"
                        " ORDER BY r.from_digest"
                    )
                )
            )
        elif pg is not None:
            findings.extend(_extra_refs(pg.refs_with_objects()))
    return report


def _leaf_hash(seq: int, kind: Any, digest: Any, appended_at: Any) -> bytes:
    """The leaf hash of an entry row; unusable rows get a hash no real entry has."""
    try:
        return merkle.leaf_hash(entry_record(seq, kind, digest, appended_at))
    except (LedgerError, TypeError, ValueError):
        # An empty leaf is not canonical JSON, so it never equals a real entry's hash.
        return merkle.leaf_hash(b"")


def _check_checkpoint(
    row: CheckpointRow, root: bytes, vkey: str | None, origin: str | None
) -> list[Finding]:
    found = []
    if not hmac.compare_digest(row.root, root):
        found.append(
            Finding(
                "checkpoint-root-mismatch",
                f"checkpoint at size {row.size} stores root {row.root.hex()},"
                f" recomputed {root.hex()}",
                checkpoint=row.size,
            )
        )
    try:
        if vkey is None:
            raise LedgerError("no log key")
        body = open_checkpoint(row.note, vkey, origin)
        if body.size != row.size or not hmac.compare_digest(body.root_hash, root):
            found.append(
                Finding(
                    "checkpoint-note-mismatch",
                    f"signed note says size {body.size} root {body.root_hash.hex()},"
                    f" expected size {row.size} root {root.hex()}",
                    checkpoint=row.size,
                )
            )
        # Extra lines would verify (C2SP ignores unknown keys) yet change stored bytes.
        lines = len(parse_note(row.note).signatures)
        if lines != 1:
            found.append(
                Finding(
                    "checkpoint-extra-signature",
                    f"checkpoint at size {row.size} has {lines} signature lines,"
                    " expected exactly the log's one",
                    checkpoint=row.size,
                )
            )
    except LedgerError as exc:
        found.append(
            Finding(
                "checkpoint-signature-invalid",
                f"checkpoint at size {row.size}: {exc}",
                checkpoint=row.size,
            )
        )
    return found


def _extra_tree_nodes(total: int, extra: Sequence[Any], size: int) -> list[Finding]:
    """Stored nodes that are not complete subtrees of the log (all others were compared).

    ``total`` is the count of stored nodes, ``extra`` the (level, idx) of those outside.
    """
    found = []
    for level, idx in extra:
        first = idx << level if isinstance(idx, int) and isinstance(level, int) else None
        sane = first is not None and 0 <= level <= 63 and idx >= 0
        found.append(
            Finding(
                "tree-node-extra",
                f"tree node level {level} index {idx} is not a complete subtree of the"
                f" {size}-entry log",
                seq=first if sane else None,
            )
        )
    # Expected count: one node per complete subtree, sum of size >> level.
    expected = sum(size >> level for level in range(size.bit_length()))
    if not extra and total != expected:
        found.append(Finding("tree-node-extra", f"{total} tree nodes stored, expected {expected}"))
    return found


def _check_orphans(rows: Iterable[tuple[Any, ...]]) -> list[Finding]:
    return [
        Finding(
            "object-without-entry",
            "object row is not in the log",
            seq if isinstance(seq, int) else None,
            str(digest),
        )
        for seq, digest in rows
    ]


def _extra_refs(rows: Iterable[tuple[Any, ...]]) -> list[Finding]:
    """Name the reference rows no object's bytes imply (run only when counts disagree)."""
    found: list[Finding] = []
    group: list[tuple[Any, ...]] = []
    for row in rows:
        if group and row[0] != group[0][0]:
            found.extend(_extra_refs_of(group))
            group = []
        group.append(row)
        if len(found) >= _MAX_LISTED:
            break
    if group:
        found.extend(_extra_refs_of(group))
    return found[:_MAX_LISTED]


def _extra_refs_of(group: Iterable[tuple[Any, ...]]) -> list[Finding]:
    rows = list(group)
    from_digest, _rel, _to, seq, kind, data = rows[0]
    stored = Counter((rel, to) for _f, rel, to, *_ in rows)
    implied = Counter(_refs_of(kind, data))
    extra = stored - implied
    where = "an object not in the ledger" if seq is None else "an object whose bytes imply it not"
    return [
        Finding(
            "ref-extra",
            f"reference {rel} -> {to} from {where}" + (f" ({count} copies)" if count > 1 else ""),
            seq if isinstance(seq, int) else None,
            str(from_digest),
        )
        for (rel, to), count in sorted(extra.items())
    ]
