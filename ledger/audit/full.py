"""Full audit of a ledger file (``provledger verify``): trust nothing the database says.

Streams the log once (memory is O(log n) plus the checkpoint list): recomputes every
digest from the stored bytes, checks canonical form and schema, the contiguous sequence,
every stored tree node (and that no other node is stored), every checkpoint's root and
signature (exactly one signature line, by the log key), the append-only triggers (present
and unaltered), the consistency of the meta records (origin, log and authority key ids),
and the derived tables (index columns, references). A saved checkpoint
(``from_checkpoint``) must still be a prefix of the log: this is what catches a ledger
truncated and re-signed with another key.

``since_checkpoint`` makes the audit incremental: given a checkpoint an auditor already
verified (size N), it checks that the stored tree still has that checkpoint's root at
size N (the left edge of a consistency proof, read from the stored complete-subtree
nodes) and then runs every per-entry check on entries N and later only, plus the RFC
9162 consistency proof from N to the current size. Its cost grows with the entries
appended since, not with the ledger. Whole-file checks (SQLite's integrity check, the
reference-count total) are left to the full audit. Each problem becomes a
``LedgerFinding`` naming the entry (``seq``/``digest``) or the checkpoint (``checkpoint``
= its size) when it has one.
Rows of the wrong SQL type are findings too, never crashes.
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ledger.audit.aside import Aside
from ledger.audit.entry_check import ChunkCheck, EntryCheck, Packed, check_entry, unpack
from ledger.audit.findings import LedgerFinding
from ledger.audit.parallel import Presign, default_workers, with_entry_checks
from ledger.audit.replay import AdmissionReplay
from ledger.encoding.canonical import require_canonical
from ledger.errors import InputError, LedgerError
from ledger.log import merkle
from ledger.log.checkpoint_record import CHECKPOINT_KIND, row_of_record
from ledger.log.note import Checkpoint, open_checkpoint, parse_note, parse_verifier_key
from ledger.recent import FirstSeen
from ledger.schema.kinds import BLOB, detect_kind, document
from ledger.store.base import (
    AuditSource,
    CheckpointRow,
    NodeScan,
    RawLogRow,
    RefScan,
    StorageFinding,
    StoredObject,
    stored_run,
    unchecked_object,
)
from ledger.trust.keys import key_id as raw_key_id

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject
    from ledger.trust.admission import AdmissionPolicy

_MAX_LISTED = 100  # cap on findings listed one by one for one kind of extra row


ObjectCheck = Callable[[StoredObject, Any], list[LedgerFinding]]  # Any: each check's reader

#: A column of a log or object row as stored: a tampered file may hold any SQL type there,
#: so the audit reads it untyped and judges its type itself.
Column = Any


def default_object_checks(policy: AdmissionPolicy) -> dict[str, ObjectCheck]:
    """Per-object checks beyond bytes and schema, by name, judging under ``policy``;
    ``audit`` runs them all. ``admission``: every entry re-judged by the admission
    policy as of its position (``ledger.audit.replay``; attestations included)."""
    return {"admission": AdmissionReplay(policy)}


@dataclass
class LedgerAuditReport:
    """The audit's result; ``ok`` iff there are no findings."""

    entries: int = 0
    checkpoints_checked: int = 0
    root: str | None = None
    from_checkpoint: JSONObject | None = None
    since_checkpoint: JSONObject | None = None
    findings: list[LedgerFinding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, object]:
        return report_json(self)


class AuditFigures(Protocol):
    """What an audit's report says (``LedgerAuditReport``, ``ledger.api.VerifyReport``)."""

    @property
    def entries(self) -> int: ...
    @property
    def root(self) -> str | None: ...
    @property
    def checkpoints_checked(self) -> int: ...
    @property
    def from_checkpoint(self) -> Mapping[str, object] | None: ...
    @property
    def since_checkpoint(self) -> Mapping[str, object] | None: ...
    @property
    def findings(self) -> Sequence[LedgerFinding]: ...


def report_json(report: AuditFigures) -> dict[str, object]:
    """``verify --json``'s members for the audit itself (the one list of them)."""
    return {
        "ok": not report.findings,
        "entries": report.entries,
        "root": report.root,
        "checkpoints_checked": report.checkpoints_checked,
        "from_checkpoint": report.from_checkpoint,
        "since_checkpoint": report.since_checkpoint,
        "findings": [f.to_json() for f in report.findings],
    }


def _refs_of(kind: object, data: object) -> list[tuple[str, str]]:
    """References an object's bytes imply (none for blobs or unreadable bytes)."""
    if kind == BLOB or not isinstance(data, bytes):
        return []
    try:
        value = document(require_canonical(data))
        return list(detect_kind(value).refs(value))
    except LedgerError:
        return []


def _storage_finding(found: StorageFinding) -> LedgerFinding:
    return LedgerFinding(found.code, found.message, found.seq, found.digest)


def _check_meta(store: AuditSource) -> list[LedgerFinding]:
    """The meta records: only known keys, text values, agreeing with each other.

    They are not in the log; the keys themselves are checked against the trust anchors
    by the caller, the key ids and origin are re-derived here.
    """
    found = []
    rows = store.meta_rows()
    for key, value in rows:
        if key not in store.meta_keys:
            found.append(
                LedgerFinding("meta-unexpected", f"meta key {key!r} is not a ledger record")
            )
        elif not isinstance(value, str):
            found.append(
                LedgerFinding("meta-invalid", f"meta {key} has SQL type {type(value).__name__}")
            )
    keys = [key for key, _value in rows]
    for key in store.meta_keys:
        if keys.count(key) != 1:
            found.append(
                LedgerFinding(
                    "meta-missing", f"meta {key}, got {keys.count(key)} records, expected 1"
                )
            )
    fmt = store.get_meta("format")
    if fmt is not None and fmt != store.format_name:
        found.append(
            LedgerFinding(
                "meta-invalid", f"meta format, got {fmt!r}, expected {store.format_name!r}"
            )
        )
    origin = store.get_meta("origin")
    vkey = store.get_meta("log_verifier_key")
    if vkey is None or origin is None:
        return [LedgerFinding("meta-missing", "origin or log verifier key missing from meta")]
    try:
        name, _kid, public_key = parse_verifier_key(vkey)
    except LedgerError as exc:
        return [LedgerFinding("meta-invalid", f"meta log_verifier_key: {exc}")]
    if name != origin:
        found.append(
            LedgerFinding(
                "meta-inconsistent", f"log verifier key names {name!r}, origin is {origin!r}"
            )
        )
    log_id = store.get_meta("log_key_id")
    if log_id is not None and log_id != raw_key_id(public_key):
        found.append(
            LedgerFinding(
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
                LedgerFinding(
                    "meta-inconsistent",
                    f"meta authority_key_id {auth_id}, expected {computed} (of the public key)",
                )
            )
    return found


def _load_checkpoints(
    stored: Iterable[tuple[object, object, object, object]],
) -> tuple[dict[int, CheckpointRow], list[LedgerFinding]]:
    rows: dict[int, CheckpointRow] = {}
    found = []
    for size, root, note, created_at in stored:
        if isinstance(size, int) and isinstance(root, bytes) and isinstance(note, bytes):
            rows[size] = CheckpointRow(size, root, note, str(created_at))
        else:
            found.append(
                LedgerFinding(
                    "checkpoint-row-invalid",
                    f"checkpoint row has SQL types ({type(size).__name__},"
                    f" {type(root).__name__}, {type(note).__name__}), expected (int, blob, blob)",
                    checkpoint=size if isinstance(size, int) else None,
                )
            )
    return rows, found


def audit(
    store: AuditSource,
    *,
    trusted_key: str | None = None,
    trusted_authority: str | None = None,
    from_checkpoint: bytes | None = None,
    skip_checks: Collection[str] = (),
    advance: Callable[[int], None] = lambda _n: None,
    workers: int | None = None,
    since_checkpoint: bytes | None = None,
    policy: AdmissionPolicy | None = None,
) -> LedgerAuditReport:
    """Audit the whole ledger; see the module docstring for what is checked.

    ``policy``: the admission policy records are judged under (default: the one the
    store was opened with, ``store.policy``).

    ``workers`` processes run the per-object checks (default: ``parallel.default_workers``,
    i.e. in process for small ledgers); results are used in log order either way.

    Every check runs unless named in ``skip_checks`` (names: ``default_object_checks``);
    an unknown name raises ``InputError`` rather than silently checking less.

    A malformed ``trusted_key`` raises ``VerifierKeyError`` (exit 3); everything found
    in the database is reported as findings.
    """
    if trusted_key is not None:
        parse_verifier_key(trusted_key)
    checks = default_object_checks(store.policy if policy is None else policy)
    unknown = sorted(set(skip_checks) - set(checks))
    if unknown:
        raise InputError(
            f"unknown audit check, got {', '.join(unknown)}, expected one of {', '.join(checks)}"
        )
    object_checks = [check for name, check in checks.items() if name not in skip_checks]
    with store.audit_session():
        if workers is None:
            workers = default_workers(store.size())
        return _audit(
            store,
            trusted_key,
            trusted_authority,
            from_checkpoint,
            object_checks,
            advance,
            workers,
            since_checkpoint,
        )


def _audit(
    store: AuditSource,
    trusted_key: str | None,
    trusted_authority: str | None,
    from_checkpoint: bytes | None,
    object_checks: Sequence[ObjectCheck],
    advance: Callable[[int], None],
    workers: int = 1,
    since_checkpoint: bytes | None = None,
) -> LedgerAuditReport:
    """One audit: trust anchors, the stored checkpoints, one pass over the log, the
    whole-ledger checks after it. Findings come in that order."""
    run = _AuditRun(store, trusted_key, object_checks)
    run.check_anchors(trusted_authority)
    try:
        run.resume(since_checkpoint)
        run.load_checkpoints(from_checkpoint)
        for check in object_checks:
            if isinstance(check, AdmissionReplay):
                check.begin(run.reader, run.start)
        rows = store.log_rows(since=run.start)
        # Each run of rows with its own checks (maybe computed in workers), in row order.
        for batch, checked in with_entry_checks(rows, workers, run.presign(workers)):
            run.entries(batch, checked)
            advance(len(batch))
        return run.finish()
    except Exception:
        # The integrity check ran before all of this in the serial order: what it
        # raised is what the audit raises.
        # (Once the backend's other own checks, which ran before it, are done.)
        aside, ran = run.aside, run.integrity_at is not None
        if aside is not None and ran and (first := aside.integrity_raised()) is not None:
            raise first from None
        raise
    finally:
        if run.aside is not None:
            run.aside.stop()


class _AuditRun:
    """The mutable state of one audit pass; each method is one step of ``_audit``.

    Invariant: ``frontier`` is the compact range of the entries checked so far (from
    ``start``); ``checkpoints`` holds the stored checkpoints not yet reached, ``seen``
    those compared with the tree, ``logged`` the sizes whose checkpoint record was found
    in the log; ``saved`` is the auditor's saved head until the log reaches its size.
    ``nodes`` and ``ref_rows`` are opened once the start is known (``load_checkpoints``).
    """

    nodes: NodeScan
    ref_rows: RefScan

    def __init__(
        self, store: AuditSource, trusted_key: str | None, object_checks: Sequence[ObjectCheck]
    ) -> None:
        self.store = store
        self.trusted_key = trusted_key
        self.object_checks = object_checks
        self.report = LedgerAuditReport()
        self.findings = self.report.findings
        self.meta_key = store.get_meta("log_verifier_key")
        self.origin = store.get_meta("origin")
        self.vkey = trusted_key or self.meta_key
        self.frontier = merkle.CompactRange()
        self.start = 0
        self.checkpoints: dict[int, CheckpointRow] = {}
        self.seen: dict[int, CheckpointRow] = {}
        self.logged: set[int] = set()
        self.saved: Checkpoint | None = None
        self.ref_count = 0
        self.ref_trouble = False
        # The per-kind totals the store keeps, re-derived from the rows of the pass.
        self.totals = _Totals()
        self.reader = _Recent(store)
        # The whole-file reads running beside the pass (``resume``), and where the
        # integrity check's findings go: right after the backend's other own checks.
        self.aside: Aside | None = None
        self.integrity_at: int | None = None

    # -- before the pass -----------------------------------------------------------------
    def check_anchors(self, trusted_authority: str | None) -> None:
        """The meta records, and the log and authority keys against the trusted ones."""
        store, findings = self.store, self.findings
        findings.extend(_check_meta(store))
        trusted_key, meta_key = self.trusted_key, self.meta_key
        if trusted_key is not None and meta_key is not None and trusted_key != meta_key:
            findings.append(
                LedgerFinding(
                    "log-key-mismatch",
                    f"ledger records log key {meta_key}, expected the trusted key {trusted_key}",
                )
            )
        meta_authority = store.get_meta("authority_public_key")
        if trusted_authority is not None and trusted_authority != meta_authority:
            findings.append(
                LedgerFinding(
                    "authority-key-mismatch",
                    f"ledger records authority key {meta_authority},"
                    f" expected the trusted key {trusted_authority}",
                )
            )

    def resume(self, since_checkpoint: bytes | None) -> None:
        """Start at an already verified checkpoint, then run the backend's own checks."""
        if since_checkpoint is not None:
            self.frontier = _resume(
                self.store, since_checkpoint, self.vkey, self.origin, self.report
            )
        self.start = self.frontier.size
        whole = self.start == 0
        # The backend's own checks: exact schema, triggers (and grants); the checks that
        # read the whole file (SQLite's integrity_check) only when the whole log is audited.
        # With a second reader of the snapshot, those and the orphan and duplicate scans
        # run beside the pass (``Aside``); their results are taken where they were read.
        second = self.store.second_reader()
        if second is None:
            self.findings.extend(
                _storage_finding(f) for f in self.store.storage_findings(whole=whole)
            )
            return
        self.aside = Aside(second, whole, self.start, _MAX_LISTED)
        self.findings.extend(_storage_finding(f) for f in self.store.storage_findings(whole=False))
        self.integrity_at = len(self.findings)

    def load_checkpoints(self, from_checkpoint: bytes | None) -> None:
        """Load the stored checkpoints and the saved head; check those at the start."""
        findings, start = self.findings, self.start
        checkpoints, problems = _load_checkpoints(self.store.raw_checkpoints())
        findings.extend(problems)
        self.checkpoints = checkpoints
        if from_checkpoint is not None:
            self.saved = self._open_saved(from_checkpoint)
        # Checkpoints before the resumed size were verified with the checkpoint resumed from.
        for size in [size for size in checkpoints if size < start]:
            del checkpoints[size]
        # Size 0 (or the resumed size) has no entry to be checked after, so its checkpoint
        # and saved head go first.
        if start > 0 and start in checkpoints:
            self._reach_checkpoint(start)
        if 0 in checkpoints:
            self._reach_checkpoint(0)
        saved = self.saved
        if saved is not None and saved.size == 0:
            self.saved = None
        elif saved is not None and 0 < saved.size <= start:
            # The saved head lies before the resumed one: both are verified checkpoints, so
            # a consistency proof between them (from the stored nodes) decides it.
            findings.extend(_check_saved_before(self.store, saved, start, self.frontier.root()))
            self.saved = None
        self.nodes = self.store.node_scan()
        self.ref_rows = self.store.ref_scan(resume=start > 0)

    def _open_saved(self, note: bytes) -> Checkpoint | None:
        try:
            if self.vkey is None:
                raise LedgerError("no log key to verify the saved checkpoint with")
            saved = open_checkpoint(note, self.vkey, self.origin)
        except LedgerError as exc:
            self.findings.append(
                LedgerFinding(
                    "saved-checkpoint-invalid",
                    "the saved checkpoint does not verify under the "
                    + ("trusted" if self.trusted_key else "ledger's current")
                    + f" log key (key replaced, or another log): {exc}",
                )
            )
            return None
        self.report.from_checkpoint = {"size": saved.size, "root": saved.root_hash.hex()}
        return saved

    def presign(self, workers: int) -> Presign | None:
        """With workers, attestation signatures are verified there, ahead of the judgement."""
        presign = None
        for check in self.object_checks:
            if isinstance(check, AdmissionReplay) and workers > 1:
                presign = Presign(check.signing_keys(self.reader), check.memo)
        return presign

    # -- one entry -----------------------------------------------------------------------
    def entries(self, rows: list[RawLogRow], checked: ChunkCheck) -> None:
        """Every check of consecutive entries, given their ``check_chunk``."""
        leaves, checks, totals = checked
        self.totals.merge(totals)
        grown = self._grown(rows, leaves)
        if grown is None:
            for at, row in enumerate(rows):
                self.entry(row, self._check(row, checks[at]), leaves[32 * at : 32 * at + 32])
            return
        self._judge_run(rows, checks, self.frontier.size)
        self.frontier = grown
        self._reached(grown.size)

    @staticmethod
    def _check(row: RawLogRow, packed: Packed) -> EntryCheck:
        """The entry's ``check_entry``: as the chunk carries it, else computed here."""
        if packed is None:  # not computed where the chunk was checked: here, then
            raw = row.object
            obj = None if raw is None else unchecked_object(raw)
            return check_entry(row.seq, row.digest, row.kind, row.appended_at, obj)
        return unpack(packed)

    def _judge_run(self, rows: list[RawLogRow], checks: list[Packed], size: int) -> None:
        """``_judge`` of each of ``rows`` (entry ``size + at``), whose tree steps find
        nothing (``_grown``). The usual entry (its check found nothing: ``Packed`` is
        its references) is judged inline, in the steps and order ``_judge`` and
        ``_object`` take for it: sequence, memory of recent objects, references, object
        checks (a checkpoint record takes ``_judge``). ~3 us less per entry than the
        calls and the ``EntryCheck`` it would build."""
        findings = self.findings
        reader = self.reader
        keep = reader.keep
        has = self.ref_rows.has
        object_checks = self.object_checks
        for at, row in enumerate(rows):
            packed = checks[at]
            kind: Column = row.kind
            if type(packed) is not list or kind == CHECKPOINT_KIND:
                self._judge(row, self._check(row, packed), size + at)
                continue
            seq: Column = row.seq
            digest: Column = row.digest
            if seq != size + at:
                findings.append(_gap(seq, digest, size + at))
            raw = row.object
            assert raw is not None  # refs come only with a usable object row
            obj = unchecked_object(raw)
            if obj.digest == digest and obj.kind == kind:  # and check_object found nothing
                keep(obj)
            if packed:
                pairs = iter(packed)
                for rel, target in zip(pairs, pairs, strict=True):
                    self.ref_count += 1
                    if not has(obj.digest, rel, target):
                        self.ref_trouble = True
                        findings.append(_ref_missing(rel, target, seq, digest))
            for check in object_checks:
                try:
                    findings.extend(check(obj, reader))
                except LedgerError as exc:
                    findings.append(
                        LedgerFinding("object-check-error", str(exc), seq, _name(digest))
                    )

    def _grown(self, rows: list[RawLogRow], leaves: bytes) -> merkle.CompactRange | None:
        """The frontier after ``rows`` (leaf hashes ``leaves``) when every node they close
        is stored with its hash and nothing needs the tree part-way through them (a
        stored checkpoint or the saved head inside the run, a checkpoint record): then
        ``entry``'s tree and checkpoint steps would find nothing for any of them. Else
        None, and each entry takes those steps itself. One read of the stored nodes per
        level instead of one per node."""
        start = self.frontier.size
        end = start + len(rows)
        saved = self.saved
        if saved is not None and start < saved.size < end:
            return None
        if any(start < size < end for size in self.checkpoints):
            return None
        for row in rows:
            raw = row.object
            if row.kind == CHECKPOINT_KIND or (raw is not None and raw.kind == CHECKPOINT_KIND):
                return None
        grown = self.frontier.copy()
        for level, (first, joined) in enumerate(grown.extend(leaves)):
            hashes = stored_run(self.nodes, level, first, first + len(joined) // 32)
            if hashes is None or b"".join(hashes) != joined:
                return None  # a node missing, repeated or changed: ``_tree`` names it
        return grown

    def entry(self, row: RawLogRow, checked: EntryCheck, leaf: bytes) -> None:
        """Every check of one log entry (``checked``: those reading no other entry, its
        leaf hash ``leaf``), then its leaf into the tree."""
        self._judge(row, checked, self.frontier.size)
        digest: Column = row.digest
        self._tree(leaf, row.seq, digest if isinstance(digest, str) else None)
        self._reached(self.frontier.size)

    def _judge(self, row: RawLogRow, checked: EntryCheck, size: int) -> None:
        """The checks of one log entry before its leaf joins the tree, which then has
        ``size`` leaves."""
        # Entry columns as stored: any SQL type in a tampered file.
        seq: Column = row.seq
        digest: Column = row.digest
        findings = self.findings
        name = _name(digest)
        if seq != size:
            findings.append(_gap(seq, digest, size))
        found, refs, sound = checked
        if found:
            findings.extend(found)
        if refs is not None:
            raw = row.object
            assert raw is not None  # refs come only with a usable object row
            self._object(unchecked_object(raw), refs, sound, seq, row.kind, digest, name)

    def _object(
        self,
        obj: StoredObject,  # every column type was checked (``check_entry``)
        refs: list[tuple[str, str]],
        sound: bool,  # check_object found nothing
        seq: Column,
        kind: Column,
        digest: Column,
        name: str | None,
    ) -> None:
        findings = self.findings
        if sound and obj.digest == digest and obj.kind == kind:
            self.reader.keep(obj)
        for rel, target in refs:
            self.ref_count += 1
            if not self.ref_rows.has(obj.digest, rel, target):
                self.ref_trouble = True
                findings.append(_ref_missing(rel, target, seq, name))
        for check in self.object_checks:
            try:
                findings.extend(check(obj, self.reader))
            except LedgerError as exc:
                findings.append(LedgerFinding("object-check-error", str(exc), seq, name))
        if obj.kind == CHECKPOINT_KIND and kind == CHECKPOINT_KIND and sound:
            self.logged.add(seq)
            findings.extend(
                _check_record(obj, self.seen.get(seq), self.frontier.root(), self.vkey, self.origin)
            )

    def _tree(self, leaf: bytes, seq: Column, name: str | None) -> None:
        """Append the leaf; every node it completes must be stored with that hash."""
        for level, idx, value in self.frontier.append(leaf):
            stored = self.nodes.get(level, idx)
            if stored is None or not (
                isinstance(stored[0], bytes) and hmac.compare_digest(stored[0], value)
            ):
                self.findings.append(
                    LedgerFinding(
                        "tree-node-mismatch",
                        f"tree node level {level} index {idx} "
                        + ("missing" if stored is None else "differs from the recomputed hash"),
                        seq,
                        name,
                    )
                )

    def _reach_checkpoint(self, size: int) -> None:
        self.seen[size] = self.checkpoints.pop(size)
        self.findings.extend(
            _check_checkpoint(self.seen[size], self.frontier.root(), self.vkey, self.origin)
        )
        self.report.checkpoints_checked += 1

    def _reached(self, size: int) -> None:
        """The log has ``size`` entries: its stored checkpoint and the saved head there."""
        if size in self.checkpoints:
            self._reach_checkpoint(size)
        saved = self.saved
        if saved is not None and saved.size == size:
            if not hmac.compare_digest(saved.root_hash, self.frontier.root()):
                self.findings.append(
                    LedgerFinding(
                        "history-rewritten",
                        f"log at size {size} has root {self.frontier.root().hex()},"
                        f" expected the saved checkpoint's {saved.root_hash.hex()}",
                        checkpoint=size,
                    )
                )
            self.saved = None

    # -- after the pass ------------------------------------------------------------------
    def finish(self) -> LedgerAuditReport:
        """What only the whole pass can tell: heads not reached, extra rows, totals."""
        store, findings, frontier, start = self.store, self.findings, self.frontier, self.start
        aside = self.aside
        if aside is not None:
            at = self.integrity_at
            assert at is not None  # set with ``aside``
            findings[at:at] = [_storage_finding(f) for f in aside.integrity_findings()]
        self.report.entries = frontier.size
        self.report.root = frontier.root().hex()
        for check in self.object_checks:
            if isinstance(check, AdmissionReplay):
                # Governed records no batch record covered, known only at the end.
                findings.extend(check.finish(self.reader))
        findings.extend(self._unreached())
        if start > 0:
            findings.extend(_check_consistency(store, start, self.report, frontier.root()))
        findings.extend(_extra_tree_nodes(store, frontier.size, start))
        scans = store if aside is None else aside
        findings.extend(_check_orphans(scans, start))
        findings.extend(_check_duplicates(scans, start))
        ref_trouble = self.ref_trouble
        if start == 0:
            # The totals cover the whole log: an audit resumed at a checkpoint has not
            # seen the rows before it, so leaves them to the full audit (as the ref count).
            findings.extend(self.totals.compare(store.kind_totals_rows()))
            ref_trouble = ref_trouble or store.ref_count() != self.ref_count
        if ref_trouble:
            findings.extend(_extra_refs(store))
        return self.report

    def _unreached(self) -> list[LedgerFinding]:
        size = self.frontier.size
        found = []
        if self.saved is not None:
            found.append(
                LedgerFinding(
                    "history-rewritten",
                    f"log has {size} entries, expected at least the saved checkpoint's"
                    f" {self.saved.size}",
                    checkpoint=self.saved.size,
                )
            )
        for at in sorted(set(self.seen) - self.logged):
            if at < size:
                found.append(
                    LedgerFinding(
                        "checkpoint-unlogged",
                        f"checkpoint at size {at} is not logged as entry {at},"
                        " expected its record there (only the newest may be unlogged)",
                        seq=at,
                        checkpoint=at,
                    )
                )
        for at in self.checkpoints:
            found.append(
                LedgerFinding(
                    "checkpoint-beyond-log",
                    f"checkpoint for size {at} > log size {size}",
                    checkpoint=at,
                )
            )
        return found


def _name(digest: Column) -> str | None:
    """An entry's digest as findings name it (None: not text in a tampered file)."""
    return digest if isinstance(digest, str) else None


def _gap(seq: Column, digest: Column, size: int) -> LedgerFinding:
    """Entry ``seq`` stands where entry ``size`` should."""
    return LedgerFinding(
        "sequence-gap",
        f"entry seq {seq} follows {size - 1}, expected {size}",
        seq=seq,
        digest=_name(digest),
    )


def _ref_missing(rel: str, target: str, seq: Column, digest: Column) -> LedgerFinding:
    return LedgerFinding("ref-missing", f"reference {rel} -> {target} missing", seq, _name(digest))


class _Totals:
    """Per-kind (entries, objects, bytes) re-derived from the log rows as streamed:
    entries by their kind, object rows by theirs with the length of their bytes."""

    def __init__(self) -> None:
        self.by_kind: dict[object, list[int]] = {}

    def _of(self, kind: object) -> list[int]:
        return self.by_kind.setdefault(kind, [0, 0, 0])

    def merge(self, run: dict[object, list[int]]) -> None:
        """Add the totals of the next run of rows (``entry_check.run_totals``)."""
        for kind, figures in run.items():
            mine = self._of(kind)
            for at in range(3):
                mine[at] += figures[at]

    def compare(
        self, stored: Iterable[tuple[object, object, object, object]]
    ) -> list[LedgerFinding]:
        """A ``totals-mismatch`` finding for every kind whose stored row differs."""
        want = {kind: tuple(figures) for kind, figures in self.by_kind.items()}
        got: dict[object, tuple[object, ...]] = {}
        found = []
        for kind, *figures in stored:
            if kind in got:
                found.append(LedgerFinding("totals-mismatch", f"totals of {kind!r} stored twice"))
            got[kind] = tuple(figures)
        for kind in sorted(set(want) | set(got), key=repr):
            if got.get(kind) != want.get(kind):
                found.append(
                    LedgerFinding(
                        "totals-mismatch",
                        f"stored totals of kind {kind!r} (entries, objects, bytes), got"
                        f" {_shown(got.get(kind))}, expected {_shown(want.get(kind))}"
                        " re-derived from the rows",
                    )
                )
        return found


def _shown(figures: tuple[object, ...] | None) -> str:
    return "no row" if figures is None else "(" + ", ".join(map(repr, figures)) + ")"


def _resume(
    store: AuditSource,
    note: bytes,
    vkey: str | None,
    origin: str | None,
    report: LedgerAuditReport,
) -> merkle.CompactRange:
    """The tree frontier at a verified checkpoint's size, from the stored nodes.

    Returns an empty frontier (so the whole log is audited) with a finding when the
    checkpoint does not verify, or when the stored tree does not have its root: an
    incremental audit is only as good as the point it resumes from.
    """
    findings = report.findings
    try:
        if vkey is None:
            raise LedgerError("no log key to verify the checkpoint with")
        saved = open_checkpoint(note, vkey, origin)
    except LedgerError as exc:
        findings.append(
            LedgerFinding(
                "since-checkpoint-invalid",
                f"the checkpoint to resume from does not verify: {exc}; audited the whole log",
            )
        )
        return merkle.CompactRange()
    report.since_checkpoint = {"size": saved.size, "root": saved.root_hash.hex()}
    frontier = merkle.CompactRange()
    if saved.size == 0:
        return frontier
    try:
        if saved.size > store.size():
            raise LedgerError(f"the log has only {store.size()} entries")
        frontier = merkle.CompactRange.at(saved.size, store)
        for level in range(saved.size.bit_length()):
            if saved.size >> level & 1:
                value = frontier.node(level, (saved.size >> level) - 1)
                if not isinstance(value, bytes) or len(value) != 32:
                    raise LedgerError(f"tree node level {level} is not a 32-byte hash")
    except (LedgerError, TypeError, ValueError) as exc:
        findings.append(
            LedgerFinding(
                "history-rewritten",
                f"cannot rebuild the tree at the checkpoint's size {saved.size}: {exc};"
                " audited the whole log",
                checkpoint=saved.size,
            )
        )
        return merkle.CompactRange()
    if not hmac.compare_digest(frontier.root(), saved.root_hash):
        findings.append(
            LedgerFinding(
                "history-rewritten",
                f"stored tree at size {saved.size} has root {frontier.root().hex()},"
                f" expected the checkpoint's {saved.root_hash.hex()}; audited the whole log",
                checkpoint=saved.size,
            )
        )
        return merkle.CompactRange()
    return frontier


def _check_saved_before(
    store: AuditSource, saved: Checkpoint, start: int, root: bytes
) -> list[LedgerFinding]:
    """A saved checkpoint at or before the resumed size must be a prefix of the tree at
    that size (``root``, already matched with the resumed checkpoint)."""
    try:
        if saved.size == start:
            ok = hmac.compare_digest(saved.root_hash, root)
        else:
            proof = merkle.consistency_proof(saved.size, start, store)
            merkle.verify_consistency(saved.size, start, saved.root_hash, root, proof)
            ok = True
    except (LedgerError, TypeError, ValueError):
        ok = False
    if ok:
        return []
    return [
        LedgerFinding(
            "history-rewritten",
            f"the saved checkpoint at size {saved.size} is not a prefix of the log at the"
            f" resumed size {start}",
            checkpoint=saved.size,
        )
    ]


def _check_consistency(
    store: AuditSource, old_size: int, report: LedgerAuditReport, new_root: bytes
) -> list[LedgerFinding]:
    """The RFC 9162 consistency proof from the resumed checkpoint to the audited log,
    read from the stored nodes and verified against both roots."""
    assert report.since_checkpoint is not None
    old_root = bytes.fromhex(str(report.since_checkpoint["root"]))
    new_size = report.entries
    try:
        proof = merkle.consistency_proof(old_size, new_size, store)
        merkle.verify_consistency(old_size, new_size, old_root, new_root, proof)
    except (LedgerError, TypeError, ValueError) as exc:
        return [
            LedgerFinding(
                "consistency-proof-invalid",
                f"consistency proof from size {old_size} to {new_size} does not verify: {exc}",
                checkpoint=old_size,
            )
        ]
    return []


class _Recent:
    """The store, serving the objects the audit has just found clean from memory.

    A read of such an object would re-derive the same row from the same bytes, which the
    audit has just done (``check_object``, entry digest and kind); object checks read
    recent objects (an attestation's subject) often. Everything else goes to the store.
    """

    LIMIT = 4096

    def __init__(self, store: AuditSource) -> None:
        self._store = store
        # The first stored copy per digest, as ``get`` would find it.
        self._objects: FirstSeen[str, StoredObject] = FirstSeen(self.LIMIT)
        # The size the audit started at: object checks ask for it per object (to know
        # whether their trust index is current), one query each otherwise.
        self._size = store.size()

    def __getattr__(self, name: str) -> Any:  # the store's other methods, as they are
        return getattr(self._store, name)

    def size(self) -> int:
        return self._size

    def keep(self, obj: StoredObject) -> None:
        self._objects.add(obj.digest, obj)

    def get(self, digest: str) -> StoredObject | None:
        found = self._objects.get(digest)
        return found if found is not None else self._store.get(digest)


def _check_checkpoint(
    row: CheckpointRow, root: bytes, vkey: str | None, origin: str | None
) -> list[LedgerFinding]:
    found = []
    if not hmac.compare_digest(row.root, root):
        found.append(
            LedgerFinding(
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
                LedgerFinding(
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
                LedgerFinding(
                    "checkpoint-extra-signature",
                    f"checkpoint at size {row.size} has {lines} signature lines,"
                    " expected exactly the log's one",
                    checkpoint=row.size,
                )
            )
    except LedgerError as exc:
        found.append(
            LedgerFinding(
                "checkpoint-signature-invalid",
                f"checkpoint at size {row.size}: {exc}",
                checkpoint=row.size,
            )
        )
    return found


def _check_record(
    obj: StoredObject, row: CheckpointRow | None, root: bytes, vkey: str | None, origin: str | None
) -> list[LedgerFinding]:
    """A logged checkpoint record at ``obj.seq``: it is the checkpoint of that size,
    signed over the tree of that size, and the stored row is exactly its index."""
    import json

    seq = obj.seq
    try:
        record = row_of_record(json.loads(obj.data))
    except (LedgerError, ValueError) as exc:
        return [LedgerFinding("checkpoint-record-invalid", str(exc), seq, obj.digest, seq)]
    if record.size != seq:
        return [
            LedgerFinding(
                "checkpoint-record-invalid",
                f"record of the checkpoint at size {record.size} logged at seq {seq},"
                " expected seq == size",
                seq,
                obj.digest,
                seq,
            )
        ]
    if row is None:
        found = [
            LedgerFinding(
                "checkpoint-missing",
                f"checkpoint at size {seq} is logged (entry {seq}) but not stored",
                seq,
                obj.digest,
                seq,
            )
        ]
        # The record alone still has to be a valid checkpoint of this log.
        return found + _check_checkpoint(record, root, vkey, origin)
    if row != record:
        differs = [
            name
            for name, a, b in (
                ("root", row.root, record.root),
                ("note", row.note, record.note),
                ("created_at", row.created_at, record.created_at),
            )
            if a != b
        ]
        return [
            LedgerFinding(
                "checkpoint-row-mismatch",
                f"stored checkpoint at size {seq} differs from its logged record in"
                f" {', '.join(differs)}",
                seq,
                obj.digest,
                seq,
            )
        ]
    return []


def _extra_tree_nodes(store: AuditSource, size: int, start: int = 0) -> list[LedgerFinding]:
    """Stored nodes that are not complete subtrees of the log (all others were compared).

    Resumed at ``start`` > 0: only nodes past the end of the log, level by level (the
    part before ``start`` was audited with the checkpoint resumed from).
    """
    if start > 0:
        return [
            LedgerFinding(
                "tree-node-extra",
                f"tree node level {level} index {idx} is not a complete subtree of the"
                f" {size}-entry log",
                seq=idx << level if isinstance(idx, int) else None,
            )
            for level, idx in store.tree_nodes_past(size, _MAX_LISTED)
        ][:_MAX_LISTED]
    found = []
    total = store.tree_node_count()
    extra = store.tree_nodes_outside(size, _MAX_LISTED)
    for level, idx in extra:
        sane = isinstance(idx, int) and isinstance(level, int) and 0 <= level <= 63 and idx >= 0
        first = idx << level if sane else None  # type: ignore[operator]
        found.append(
            LedgerFinding(
                "tree-node-extra",
                f"tree node level {level} index {idx} is not a complete subtree of the"
                f" {size}-entry log",
                seq=first if sane else None,
            )
        )
    # Expected count: one node per complete subtree, sum of size >> level.
    expected = sum(size >> level for level in range(size.bit_length()))
    if not extra and total != expected:
        found.append(
            LedgerFinding("tree-node-extra", f"{total} tree nodes stored, expected {expected}")
        )
    return found


def _check_orphans(store: AuditSource | Aside, start: int = 0) -> list[LedgerFinding]:
    rows = store.orphan_objects(start)
    return [
        LedgerFinding(
            "object-without-entry",
            "object row is not in the log",
            seq if isinstance(seq, int) else None,
            str(digest),
        )
        for seq, digest in rows
    ]


def _check_duplicates(store: AuditSource | Aside, start: int = 0) -> list[LedgerFinding]:
    """Objects stored more than once (appends are idempotent: each digest is one entry).

    ``duplicate_objects`` gives every row of a digest stored twice (from ``start`` on),
    in digest then seq order; all but the first are findings.
    """
    found: list[LedgerFinding] = []
    first: dict[Column, Column] = {}
    for seq, digest in store.duplicate_objects(start, _MAX_LISTED):
        if digest in first:
            found.append(
                LedgerFinding(
                    "object-duplicate",
                    f"object stored again at seq {seq}, first at seq {first[digest]}",
                    seq if isinstance(seq, int) else None,
                    str(digest),
                )
            )
        else:
            first[digest] = seq
    return found[:_MAX_LISTED]


def _extra_refs(store: AuditSource) -> list[LedgerFinding]:
    """Name the reference rows no object's bytes imply (run only when counts disagree)."""
    found: list[LedgerFinding] = []
    rows = store.refs_with_objects()
    group: list[tuple[Column, ...]] = []
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


def _extra_refs_of(group: Iterable[tuple[Column, ...]]) -> list[LedgerFinding]:
    rows = list(group)
    from_digest, _rel, _to, seq, kind, data = rows[0]
    stored = Counter((rel, to) for _f, rel, to, *_ in rows)
    implied = Counter(_refs_of(kind, data))
    extra = stored - implied
    where = "an object not in the ledger" if seq is None else "an object whose bytes imply it not"
    return [
        LedgerFinding(
            "ref-extra",
            f"reference {rel} -> {to} from {where}" + (f" ({count} copies)" if count > 1 else ""),
            seq if isinstance(seq, int) else None,
            str(from_digest),
        )
        for (rel, to), count in sorted(extra.items())
    ]
