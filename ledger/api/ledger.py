"""An open ledger (``Ledger``) and the generic operations on it.

Each method is what one generic command does, with the same checks, the same admission
and the same result (``ledger.api.results``); the command only reads its arguments,
calls the method and prints. The store underneath is the ``ledger.store.base.Store``
protocol (``Ledger.store``), SQLite or PostgreSQL alike.

Heavy modules (the schema checks, the crypto stack, the audit) are imported by the
methods that need them, so opening a ledger to read one object stays cheap.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ledger.errors import InputError
from ledger.plugins import (
    BROWSE_GROUP,
    NOTES_GROUP,
    REPLAY_GROUP,
    PluginUnavailable,
    plugin,
    plugins,
    required,
)
from ledger.store.backends import open_store
from ledger.store.location import DbLocation, SQLitePath, parse_location

if TYPE_CHECKING:
    from types import TracebackType

    from ledger.api.reads import LedgerObject, LogEntry, Stats
    from ledger.api.results import (
        Appended,
        AttestationCheck,
        BrowseFinding,
        Checkpoint,
        Copied,
        Created,
        ExportedBundle,
        GeneratedKey,
        Identity,
        IdentityMatch,
        Migrated,
        Revoked,
        Signed,
        VerifierIdentity,
        VerifyReport,
    )
    from ledger.log.bundle import VerifiedBundle
    from ledger.log.checkpoints import ConsistencyProof, InclusionProof
    from ledger.log.cosignature import WitnessKey
    from ledger.store.base import AppendResult, LedgerReader, StoredObject
    from ledger.store.bulk import ImportSummary
    from ledger.store.postgres import PostgresStore
    from ledger.store.prepared import Prepared
    from ledger.store.sqlite import SQLiteStore
    from ledger.trust.admission import AdmissionPolicy
    from ledger.trust.dsse import Envelope
    from ledger.trust.keys import Signer

#: What may be appended: a JSON value (an object), or bytes: a JSON document as text,
#: or, with ``kind="blob"``, raw bytes stored as they are.
Document = Mapping[str, object] | bytes

#: ``(reader, object) -> lines``: what a ``provledger.notes`` plug-in says about an object.
NoteMaker = Callable[["LedgerReader", "StoredObject"], list[str]]
#: ``(reader, file) -> findings``: the ``provledger.browse`` plug-in's check of a browse file.
BrowseCheck = Callable[["LedgerReader", Path], list[dict[str, str]]]
#: ``(reader, object) -> digests``: the ``provledger.replay`` plug-in ``inputs``, what a
#: replay of the object reads (a bundle exported ``with_inputs`` carries them).
ReplayInputs = Callable[["LedgerReader", "StoredObject"], list[str]]
#: ``(kind, bytes, carried (kind, bytes) pairs) -> report``: the ``provledger.replay``
#: plug-in ``carried``, the subject re-judged from what the bundle carries.
ReplayCarried = Callable[[str, bytes, Sequence[tuple[str, bytes]]], dict[str, object]]

#: Entries whose ids ``log(ids=True)`` reads first, then per chunk (the first entries
#: come after a few lookups; later ones in batches of one query each).
_IDS_FIRST_CHUNK = 50
_IDS_CHUNK = 2000


#: Where a ledger is: a file path, a ``postgresql://`` URL (text, parsed as ``--db`` is),
#: or a ``DbLocation`` already parsed.
Where = str | os.PathLike[str] | DbLocation


def ledger_location(db: Where) -> DbLocation:
    """Where ``db`` names a ledger, parsed as ``--db`` is (a ``DbLocation`` as it is)."""
    if isinstance(db, DbLocation | Path):
        return parse_location(db)
    return parse_location(os.fspath(db))


def _beside(db: DbLocation, suffix: str) -> Path:
    return db.sibling(db.name + suffix)


def default_log_key(db: Where) -> Path:
    """The log's private key file ``init`` writes: ``<db>.log.key`` beside the ledger
    file (for a PostgreSQL ledger: ``<database name>.log.key`` in the current directory)."""
    return _beside(ledger_location(db), ".log.key")


def default_authority_key(db: Where) -> Path:
    """The authority's private key file ``init`` writes: ``<db>.authority.key``."""
    return _beside(ledger_location(db), ".authority.key")


def load_signer(path: str | os.PathLike[str], passphrase: bytes | None = None) -> Signer:
    """A ``Signer`` from a PKCS#8 PEM key file (refused, exit 3, when group or others may
    read it, like ssh; ``passphrase`` for an encrypted one)."""
    from ledger.trust.keys import Ed25519Signer

    return Ed25519Signer.from_file(Path(path), passphrase)


class Ledger:
    """An open ledger; close it (or use ``with``) when done.

    ``policy`` is the admission policy every append passes and every judgement uses
    (``open_ledger(policy=...)``; by default the package's own: IDKMesh's rules).
    ``dry_run``: every append runs every check, then is rolled back; results say what
    would have been written.
    """

    def __init__(self, store: SQLiteStore | PostgresStore, location: DbLocation) -> None:
        self.store = store
        self.location = location

    # -- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def policy(self) -> AdmissionPolicy:
        return self.store.policy

    @property
    def dry_run(self) -> bool:
        return self.store.dry_run

    # -- appending ----------------------------------------------------------------------

    def append(self, document: Document, *, kind: str | None = None) -> Appended:
        """Validate one document fully and append it (one transaction); see ``append_many``."""
        (done,) = self.append_many([document], kind=kind)
        return done

    def append_blob(self, data: bytes) -> Appended:
        """Append raw bytes as a blob (digest = sha256 of exactly these bytes)."""
        return self.append(data, kind="blob")

    def append_many(
        self, documents: Iterable[Document], *, kind: str | None = None
    ) -> list[Appended]:
        """Validate every document, then append all of them in one transaction.

        A document is a JSON value (an object) or its bytes; with ``kind="blob"`` bytes
        are stored as they are. ``kind`` (else detected) applies to every document.
        Every document passes the ledger's admission: an authority-governed record (a
        frozen or burned cohort, a burn notice, a binding, an identity, a revocation)
        needs the authority's attestation among the same documents, else nothing is
        written (``AdmissionRefused``, exit 4). Errors name the document's position.
        """
        prepared: list[Prepared] = []
        for position, document in enumerate(documents):
            try:
                prepared.append(prepare_document(document, kind))
            except InputError as exc:
                raise type(exc)(f"document {position}: {exc}") from None
        return self.append_prepared(prepared)

    def append_prepared(
        self, prepared: Sequence[Prepared], *, history: bool = False
    ) -> list[Appended]:
        """Append objects already prepared (``ledger.store.prepared``) in one transaction."""
        return [_appended(r) for r in self.store.append_many(prepared, history=history)]

    # -- reading ------------------------------------------------------------------------

    def get(self, ref: str, *, notes: bool = True) -> LedgerObject:
        """The object ``ref`` names: a digest (either scheme), a unique digest prefix, an
        id or ``id@version`` (the newest entry of an id). ``NotFound`` (exit 3) when none,
        ``InputError`` (exit 3) for an ambiguous prefix. ``notes``: ask the package's
        plug-in for the object's kind what it says about it (``LedgerObject.notes``)."""
        from ledger.api.reads import LedgerObject
        from ledger.store.resolve import resolve_stored

        obj = resolve_stored(self.store, ref)
        entry = next(self.store.entries(since=obj.seq, limit=1))
        return LedgerObject(
            digest=obj.digest,
            seq=obj.seq,
            kind=obj.kind,
            schema_version=obj.schema_version,
            object_id=obj.object_id,
            object_version=obj.object_version,
            legacy_digest=obj.legacy_digest,
            appended_at=entry.appended_at,
            data=obj.data,
            value=obj.json(),
            notes=tuple(note_lines(self.store, obj)) if notes else (),
        )

    def log(
        self,
        *,
        since: int = 0,
        limit: int | None = None,
        kind: str | None = None,
        ids: bool = False,
    ) -> Iterator[LogEntry]:
        """Log entries in sequence order, streamed: the first come before later ones are
        read. ``kind``: only that kind (a registered kind or ``blob``; another name is
        ``KindError``, exit 3). ``ids``: also read each object's id and version."""
        import itertools

        from ledger.api.reads import LogEntry
        from ledger.schema.kinds import BLOB, get_kind

        if kind is not None and kind != BLOB:
            get_kind(kind)  # unknown kinds: the error lists the known ones
        entries = self.store.entries(since=since, limit=limit, kind=kind)
        if not ids:
            for e in entries:
                yield LogEntry(e.seq, e.digest, e.kind, e.appended_at)
            return
        size = _IDS_FIRST_CHUNK
        while chunk := list(itertools.islice(entries, size)):
            found = self.store.ids_of([e.digest for e in chunk])
            for e in chunk:
                object_id, version = found.get(e.digest, (None, None))
                yield LogEntry(e.seq, e.digest, e.kind, e.appended_at, object_id, version)
            size = _IDS_CHUNK

    def stats(self) -> Stats:
        """Entry counts by kind, sizes and the newest checkpoint, from one snapshot."""
        from ledger.api.reads import Stats

        snapshot = self.store.stats()
        where = self.location
        return Stats(
            db=self.location.shown,
            entries=snapshot.size,
            by_kind=dict(snapshot.counts),
            object_bytes=snapshot.object_bytes,
            file_bytes=(
                where.path.stat().st_size
                if isinstance(where, SQLitePath)
                else snapshot.storage_bytes
            ),
            origin=snapshot.origin,
            latest_checkpoint_size=snapshot.latest_checkpoint_size,
        )

    # -- the log ------------------------------------------------------------------------

    def checkpoint(
        self,
        *,
        log_key: str | os.PathLike[str] | None = None,
        passphrase: bytes | None = None,
        witnesses: Sequence[str] = (),
        witness_keys: Sequence[str] = (),
    ) -> Checkpoint:
        """Sign the current tree head with the log key (default: the file ``init`` wrote,
        ``default_log_key``) and store it; then ask each witness (a tlog-witness URL or a
        local witness state file) to cosign it and store what it answers.

        ``witness_keys``: verifier keys a URL witness's answer must verify under (required
        with a URL witness: ``UsageError``, exit 2, without one); only cosignatures that
        verify are stored. A witness that fails is reported in ``Checkpoint.witnesses``
        (``ok`` False), not raised: the checkpoint is stored either way. On a dry run no
        witness is asked.
        """
        from ledger.api.results import Checkpoint, WitnessAnswer
        from ledger.errors import UsageError
        from ledger.log.checkpoints import make_checkpoint
        from ledger.log.cosigning import collect, cosigned_note, is_url
        from ledger.trust.keys import load_private_key

        trusted = _witness_keys(witness_keys)
        unkeyed = [w for w in witnesses if is_url(w)] if not trusted else []
        if unkeyed:
            raise UsageError(
                f"--witness {unkeyed[0]}, got no --witness-key, expected the verifier key its"
                " cosignature must verify under"
            )
        key_file = Path(log_key) if log_key is not None else default_log_key(self.location)
        key = load_private_key(key_file, passphrase)
        row = make_checkpoint(self.store, key)
        outcomes = []
        if witnesses and not self.dry_run:
            outcomes = collect(self.store, row, witnesses, trusted)
        note = cosigned_note(self.store, row)
        return Checkpoint(
            origin=self.store.get_meta("origin"),
            size=row.size,
            root=row.root.hex(),
            note=note.decode("utf-8"),
            created_at=row.created_at,
            witnesses=tuple(
                WitnessAnswer(
                    o.witness,
                    o.lines,
                    o.rejected,
                    None if o.error is None else str(o.error),
                    None if o.error is None else o.error.exit_code,
                )
                for o in outcomes
            ),
        )

    def inclusion_proof(self, ref: str, *, size: int | None = None) -> InclusionProof:
        """Prove that the entry of the object ``ref`` names is in the log of ``size``
        entries (default: the newest checkpoint's size), RFC 9162."""
        from ledger.log.checkpoints import prove_inclusion
        from ledger.store.resolve import resolve_stored

        return prove_inclusion(self.store, resolve_stored(self.store, ref).digest, size)

    def consistency_proof(self, old_size: int, new_size: int | None = None) -> ConsistencyProof:
        """Prove that the log of ``old_size`` entries is a prefix of the log of ``new_size``
        (default: the newest checkpoint's size), RFC 9162."""
        from ledger.log.checkpoints import prove_consistency

        return prove_consistency(self.store, old_size, new_size)

    def verify(
        self,
        *,
        log_key: str | None = None,
        authority_key: str | os.PathLike[str] | bytes | None = None,
        from_checkpoint: bytes | None = None,
        since_checkpoint: bytes | None = None,
        witness_keys: Sequence[str] = (),
        quorum: int | None = None,
        workers: int | None = None,
        browse: str | os.PathLike[str] | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> VerifyReport:
        """Audit the ledger: every stored byte, digest, schema and entry, admission replayed
        at each position, the tree, the checkpoints and the derived tables.

        Trust anchors held outside the ledger: ``log_key`` (the log's verifier key, in
        signed-note form), ``authority_key`` (the authority's public key: a PEM file or
        its bytes), ``from_checkpoint`` (a checkpoint note saved earlier) and
        ``witness_keys`` (the newest checkpoint must be cosigned by ``quorum`` of them,
        default all). ``since_checkpoint``: a checkpoint note verified before; only the
        entries after it are checked, with the consistency proof to it (incremental).
        ``browse``: also compare that browse database with the ledger. ``workers``:
        processes for the per-object checks (default: automatic). ``progress(n)`` is
        called as entries are checked. Problems are findings in the report, never raised.
        """
        from ledger.api.results import BrowseFinding, VerifyReport
        from ledger.audit.full import audit

        trusted_authority = None
        if authority_key is not None:
            import base64

            from ledger.trust.keys import load_public_key, public_key_raw

            source = authority_key if isinstance(authority_key, bytes) else Path(authority_key)
            raw = public_key_raw(load_public_key(source))
            trusted_authority = base64.b64encode(raw).decode("ascii")
        keys = _witness_keys(witness_keys)
        required = required_quorum(quorum, len(keys))
        witness_report = None
        if keys:
            from ledger.audit.witnesses import check_witnesses

            witness_report = check_witnesses(self.store, keys, required)
        report = audit(
            self.store,
            trusted_key=log_key.strip() if log_key is not None else None,
            trusted_authority=trusted_authority,
            from_checkpoint=from_checkpoint,
            advance=progress or _ignore,
            workers=workers,
            since_checkpoint=since_checkpoint,
        )
        browse_findings: tuple[BrowseFinding, ...] = ()
        if browse is not None:
            check = _browse_check()
            browse_findings = tuple(
                BrowseFinding(f["code"], f["table"], f["message"])
                for f in check(self.store, Path(browse))
            )
        findings = list(report.findings)
        if witness_report is not None:
            findings.extend(witness_report.findings)
        return VerifyReport(
            entries=report.entries,
            root=report.root,
            checkpoints_checked=report.checkpoints_checked,
            from_checkpoint=report.from_checkpoint,
            since_checkpoint=report.since_checkpoint,
            findings=tuple(findings),
            witnesses=None if witness_report is None else witness_report.info,
            browse=None if browse is None else os.fspath(browse),
            browse_findings=browse_findings,
        )

    # -- signing and identities ---------------------------------------------------------

    def sign(self, ref: str, signer: Signer) -> Signed:
        """Append a DSSE attestation by ``signer`` over the object ``ref`` names.

        Refused (``AdmissionRefused``, exit 4, nothing written) when it would not verify:
        the key must be the authority key or a registered, unrevoked verifier key
        allowed to sign the subject."""
        from ledger.store.resolve import resolve_stored
        from ledger.trust.attestation import attest

        prepared = attest(self.store, resolve_stored(self.store, ref).digest, signer)
        (signed,) = self.append_attestations([prepared])
        return signed

    def append_attestations(self, prepared: Sequence[Prepared]) -> list[Signed]:
        """Append attestations in one transaction; each is judged at its own position."""
        from ledger.api.results import Signed
        from ledger.trust.identity import trust_index
        from ledger.trust.judgement import check_attestation

        results = self.store.append_many(prepared)
        index = trust_index(self.store)
        signed = []
        for result in results:
            stored = self.store.get(result.entry.digest)
            assert stored is not None  # just appended in a committed transaction
            verdict = check_attestation(self.store, stored, self.policy, index)
            status = "new" if result.new else "present"
            signed.append(Signed(result.entry.digest, result.entry.seq, status, verdict))
        return signed

    def check_attestations(self, ref: str) -> AttestationCheck:
        """Judge every attestation of the object ``ref`` names (``ok`` iff at least one and
        none invalid). An attestation may name a digest that is not stored: a full digest
        is then checked as it is (``subject-missing``)."""
        from ledger.api.results import AttestationCheck
        from ledger.encoding.digest import is_digest
        from ledger.store.resolve import resolve_stored
        from ledger.trust.attestation import attestations_of
        from ledger.trust.judgement import check_subject_attestations, subject_verdict

        if is_digest(ref) and self.store.get(ref) is None and attestations_of(self.store, ref):
            digest = ref
        else:
            digest = resolve_stored(self.store, ref).digest
        verdicts = check_subject_attestations(self.store, digest, self.policy)
        ok, reason = subject_verdict(verdicts)
        return AttestationCheck(digest, ok, reason, tuple(verdicts))

    def export_attestation(self, ref: str) -> bytes:
        """The full standard DSSE envelope of the stored attestation ``ref`` names (a digest
        or unique prefix; ``attestation export``): its JSON bytes, payload = the subject's
        stored bytes. ``NotFound`` / ``InputError`` (exit 3) when ``ref`` names no
        attestation."""
        from ledger.store.resolve import full_digest
        from ledger.trust.attestation import rebuild_envelope
        from ledger.trust.judgement import find_attestation

        found = find_attestation(self.store, full_digest(self.store, ref))
        return rebuild_envelope(self.store, found).to_json_bytes()

    def verify_envelope(self, envelope: Document) -> AttestationCheck:
        """Judge a full DSSE envelope from outside against the ledger, one verdict per
        signature, as if appended now (``attestation verify-envelope``); nothing is
        written. ``subject`` is the digest of the payload; ``ok`` as ``check_attestations``."""
        from ledger.api.results import AttestationCheck
        from ledger.encoding.digest import sha256_digest
        from ledger.trust.judgement import check_envelope, subject_verdict

        parsed = _envelope(envelope)
        verdicts = check_envelope(self.store, parsed, self.policy)
        ok, reason = subject_verdict(verdicts)
        return AttestationCheck(sha256_digest(parsed.payload), ok, reason, tuple(verdicts))

    def import_envelope(self, envelope: Document) -> list[Signed]:
        """Store a full DSSE envelope over a stored object as detached attestations, one
        per signature, in one transaction (``attestation import``). Refused
        (``AdmissionRefused``, exit 4, nothing written) unless every signature verifies
        over the stored subject, the payloadType is the one the ledger defines for the
        subject's kind and the key is the authority key or a registered, unrevoked
        verifier key. ``envelope``: its JSON bytes or value."""
        from ledger.trust.attestation import detach_envelope

        return self.append_attestations(detach_envelope(self.store, _envelope(envelope)))

    def identities(self, *, verifier_id: str | None = None) -> list[VerifierIdentity]:
        """Every stored verifier identity (of ``verifier_id`` only, if given) in log order,
        with its status now (``identity list``)."""
        from ledger.api.results import VerifierIdentity
        from ledger.trust.identity import trust_index

        index = trust_index(self.store)
        return [
            VerifierIdentity(rec, index.status(rec))
            for rec in index.identities
            if verifier_id is None or rec.verifier_id == verifier_id
        ]

    def identity(self, ref: str) -> IdentityMatch:
        """The identities a key id, verifier id or identity digest (or unique prefix) names,
        with the revocations of their keys (``identity show``); ``NotFound`` (exit 3)
        when none."""
        from ledger.api.results import IdentityMatch, VerifierIdentity
        from ledger.errors import NotFound
        from ledger.store.resolve import full_digest
        from ledger.trust.identity import identities_matching, trust_index

        index = trust_index(self.store)
        ref = full_digest(self.store, ref)  # an identity's digest prefix
        found = identities_matching(index, ref)
        if not found:
            raise NotFound(
                f"verifier identity not found, got {ref}, expected a key id, verifier id or digest"
            )
        keys = {rec.key_id for rec in found}
        return IdentityMatch(
            ref,
            tuple(VerifierIdentity(rec, index.status(rec)) for rec in found),
            tuple(r for r in index.revocations if r.key_id in keys),
        )

    def register_identity(
        self,
        *,
        verifier_id: str,
        adapter: str,
        adapter_versions: Sequence[str],
        public_key: str | os.PathLike[str] | bytes,
        authority: Signer | None = None,
    ) -> Identity:
        """Append a verifier identity (one key, one verifier id, one adapter and the
        adapter versions it may sign for) and the authority's attestation over it.

        ``public_key``: the verifier's public key, a PEM file (``key generate`` writes
        ``PATH.pub``) or its bytes. ``authority``: default the key file ``init`` wrote
        (``default_authority_key``). Refused (``IdentityError``, exit 4): a key bound to
        another verifier id, a revoked key, the authority or log key."""
        from ledger.api.results import Identity
        from ledger.trust.identity import register_identity
        from ledger.trust.keys import load_public_key

        key = load_public_key(public_key if isinstance(public_key, bytes) else Path(public_key))
        done = register_identity(
            self.store,
            verifier_id=verifier_id,
            adapter=adapter,
            adapter_versions=adapter_versions,
            public_key=key,
            authority=authority or self.authority(),
        )
        return Identity(
            verifier_id,
            done.key_id,
            done.subject.entry.digest,
            done.subject.entry.seq,
            done.attestation.entry.digest,
            "new" if done.subject.new else "present",
        )

    def revoke_key(
        self,
        key_id: str,
        reason: str,
        *,
        note: str | None = None,
        authority: Signer | None = None,
    ) -> Revoked:
        """Append an authority-attested revocation of a verifier key (``retired`` or
        ``compromised``; nothing is deleted)."""
        from ledger.api.results import Revoked
        from ledger.trust.identity import revoke_key

        done = revoke_key(
            self.store, key_id, reason, authority=authority or self.authority(), note=note
        )
        return Revoked(
            key_id,
            reason,
            done.subject.entry.digest,
            done.subject.entry.seq,
            done.attestation.entry.digest,
        )

    def authority(self, passphrase: bytes | None = None) -> Signer:
        """The authority's signer from the key file ``init`` wrote beside the ledger."""
        return load_signer(default_authority_key(self.location), passphrase)

    def import_jsonl(
        self,
        source: BinaryIO,
        *,
        kind: str | None = None,
        batch: int | None = None,
        workers: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> ImportSummary:
        """Import a JSON Lines stream (``import jsonl``): every line checked as ``append``
        checks a document, the valid ones appended in input order in transactions of
        ``batch`` lines (default 6,000), prepared by ``workers`` processes (default one
        per CPU, at most 2). Bad lines are rejected, never written, and listed in the
        summary (``ok`` is False); ``progress(n)`` is told the input bytes consumed."""
        from ledger.store.bulk import DEFAULT_BATCH, default_workers
        from ledger.store.bulk import import_jsonl as run_import

        return run_import(
            self.store,
            source,
            kind=kind,
            batch=DEFAULT_BATCH if batch is None else batch,
            workers=default_workers() if workers is None else workers,
            advance=progress or _ignore,
        )

    def export_intoto(self, ref: str, signer: Signer) -> bytes:
        """An in-toto Statement v1 about the object ``ref`` names, in a DSSE envelope
        signed by ``signer`` (``export intoto``): the envelope's JSON bytes. Nothing is
        appended; ``Ledger.sign`` records an attestation."""
        from ledger.store.resolve import resolve_stored
        from ledger.trust.attestation import intoto_export

        envelope = intoto_export(self.store, resolve_stored(self.store, ref).digest, signer)
        return envelope.to_json_bytes()

    # -- whole ledgers -------------------------------------------------------------------

    def copy_to(
        self, dst: Where, *, progress: Callable[[int], None] | None = None
    ) -> Copied:
        """Copy this ledger entry by entry, with its checkpoints and cosignatures, to
        ``dst`` on either backend (``copy``): ``dst`` must be empty or a prefix of this
        ledger (an interrupted copy is completed by copying again) and is created when it
        is a missing file or a database without ledger tables. Key files are not copied.
        Every checkpoint's root is recomputed in ``dst`` (``Copied.roots``); a destination
        that is another ledger or not a prefix is refused (``RuleViolation``, exit 4).
        ``progress(n)`` is told the entries copied (the entries already there first)."""
        from ledger.api.results import Copied
        from ledger.errors import RuleViolation
        from ledger.store.copy import copy_ledger

        target_at = ledger_location(dst)
        if target_at == self.location:
            raise RuleViolation(
                f"copy, got the same ledger twice ({target_at}), expected two ledgers"
            )
        target, grants = _open_or_create(target_at)
        with target:
            summary = copy_ledger(self.store, target, advance=progress or _ignore)
        return Copied(
            src=str(self.location),
            dst=str(target_at),
            source_size=summary.source_size,
            already_present=summary.already,
            copied=summary.copied,
            checkpoints=summary.checkpoints,
            cosignatures=summary.cosignatures,
            roots=dict(summary.roots),
            pg_grants=tuple(grants),
        )

    # -- bundles ------------------------------------------------------------------------

    def export_bundle(self, ref: str, *, with_inputs: bool = False) -> ExportedBundle:
        """An offline bundle of the object ``ref`` names: the object, its attestations and
        their inclusion proofs against the newest checkpoint; ``with_inputs`` also carries,
        each proven, what a replay of a VerificationResult reads (``replay_bundle``). The
        bundle is verified under the ledger's own log key before it is returned (never
        hand out one that fails)."""
        from ledger.api.results import ExportedBundle
        from ledger.log.bundle import build_bundle, verify_bundle
        from ledger.log.checkpoints import verifier_key_of
        from ledger.store.resolve import resolve_stored

        obj = resolve_stored(self.store, ref)
        inputs = None
        if with_inputs:
            replay_inputs: ReplayInputs = required(REPLAY_GROUP, "inputs")  # type: ignore[assignment]
            inputs = replay_inputs(self.store, obj)
        bundle, omitted = build_bundle(self.store, obj.digest, inputs)
        data = bundle.encode()
        verified = verify_bundle(data, verifier_key_of(self.store))
        return ExportedBundle(data, verified, tuple(omitted))


# -- module functions ---------------------------------------------------------------------


def open_ledger(
    db: Where,
    *,
    readonly: bool = False,
    dry_run: bool = False,
    policy: AdmissionPolicy | None = None,
) -> Ledger:
    """Open the ledger at ``db``: an SQLite file, or a ``postgresql://`` URL.

    ``policy``: the admission policy (default: the package's own, IDKMesh's rules, found
    through this distribution's entry points; ``ledger.trust.admission.CORE_ONLY`` is the
    generic core alone). ``readonly`` refuses every write; ``dry_run`` runs every append
    and rolls it back. ``NotFound`` (exit 3) when no ledger is there."""
    location = ledger_location(db)
    store = open_store(location, readonly=readonly, policy=policy, dry_run=dry_run)
    return Ledger(store, location)


def migrate_ledger(db: Where) -> Migrated:
    """Bring a ledger made by an earlier release to the current layout, in place
    (``migrate``); a current one is left as it is (``Migrated.migrated`` False)."""
    from ledger.api.results import Migrated
    from ledger.store.location import PostgresURL

    location = ledger_location(db)
    if isinstance(location, SQLitePath):
        from ledger.store import sqlite

        return Migrated(str(location), sqlite.migrate_store(location.path), sqlite.FORMAT)
    from ledger.store import postgres, postgres_schema

    assert isinstance(location, PostgresURL)
    return Migrated(str(location), postgres.migrate_store(location), postgres_schema.FORMAT)


def _open_or_create(dst: DbLocation) -> tuple[SQLiteStore | PostgresStore, list[str]]:
    """A copy's destination store, created when missing, and the role statements a role
    administrator must still run (a PostgreSQL destination made now)."""
    from ledger.store.location import PostgresURL

    if isinstance(dst, PostgresURL):
        from ledger.store import postgres

        if not postgres.has_ledger_tables(dst):
            store, pending = postgres.create_store(dst)
            return store, list(pending)
    elif isinstance(dst, SQLitePath) and not dst.path.exists():
        from ledger.store.sqlite import create_store

        return create_store(dst.path), []
    return open_store(dst), []


def _envelope(envelope: Document) -> Envelope:
    """A DSSE envelope from its JSON bytes or value, parsed strictly."""
    from ledger.encoding.canonical import parse_strict
    from ledger.trust.dsse import parse_envelope

    raw = bytes(envelope) if isinstance(envelope, bytes | bytearray) else document_bytes(envelope)
    return parse_envelope(parse_strict(raw))


def prepare_document(document: Document, kind: str | None = None) -> Prepared:
    """The one admission of a document's bytes (``ledger.store.prepared``): parse strictly,
    detect or check the kind, validate, canonicalize. A JSON value is written out and read
    back by the same strict parser, so it is held to exactly the rules its bytes would be
    (a value that is not JSON, e.g. a tuple or a non-string key, is ``InputError``)."""
    from ledger.store.prepared import prepare_blob, prepare_json

    if isinstance(document, bytes | bytearray | memoryview):
        raw = bytes(document)
        return prepare_blob(raw) if kind == "blob" else prepare_json(raw, kind)
    if kind == "blob":
        raise InputError(
            f"blob, got a {type(document).__name__}, expected bytes (a blob is stored as given)"
        )
    return prepare_json(document_bytes(document), kind)


def document_bytes(value: object) -> bytes:
    """JSON text of a value, held to the strict parser's rules: ``InputError`` (exit 3)
    for a value that is not JSON or that JSON would change (a tuple, a non-string key)."""
    import json

    from ledger.encoding.canonical import parse_strict

    try:
        text = json.dumps(value, ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(f"document, got a value that is not JSON ({exc}), expected JSON") from None
    raw = text.encode("ascii")
    if parse_strict(raw) != value:
        raise InputError(
            "document, got a value JSON would change (a tuple, a non-string key or another"
            " type JSON has not), expected a JSON value"
        )
    return raw


def _ignore(_n: int) -> None:
    return None


def _appended(result: AppendResult) -> Appended:
    from ledger.api.results import Appended

    e = result.entry
    return Appended(e.digest, e.seq, e.kind, "new" if result.new else "present")


def note_lines(reader: LedgerReader, obj: StoredObject) -> list[str]:
    """What the package's ``provledger.notes`` plug-in for ``obj.kind`` says about it."""
    try:
        found = plugin(NOTES_GROUP, obj.kind)
    except PluginUnavailable:
        return []
    if found is None:
        return []
    make: NoteMaker = found.load()  # type: ignore[assignment]
    return list(make(reader, obj))


def _browse_check() -> BrowseCheck:
    found = plugins(BROWSE_GROUP)
    if not found:
        raise PluginUnavailable(
            f"browse check, got no {BROWSE_GROUP} plug-in, expected the package's"
            " (install the package: pip install .)"
        )
    check: BrowseCheck = found[0].load()  # type: ignore[assignment]
    return check


def _witness_keys(values: Sequence[str]) -> list[WitnessKey]:
    from ledger.log.cosignature import parse_witness_key

    return [parse_witness_key(v) for v in values]


def required_quorum(quorum: int | None, keys: int) -> int:
    """Cosignatures required: ``quorum``, else every witness key given."""
    if quorum is None:
        return keys
    if quorum > keys:
        raise InputError(f"--quorum, got {quorum}, expected at most the {keys} --witness-key given")
    if quorum < 1:
        raise InputError(f"--quorum, got {quorum}, expected at least 1")
    return quorum


def init_ledger(
    db: Where,
    *,
    origin: str | None = None,
    log_key: str | os.PathLike[str] | None = None,
    authority_key: str | os.PathLike[str] | None = None,
) -> Created:
    """Create a ledger at ``db`` (an SQLite file, or a ``postgresql://`` URL of an empty
    database) with its log key (signs checkpoints) and authority key (attests governance
    records), written to ``log_key`` / ``authority_key`` (default ``default_log_key`` /
    ``default_authority_key``). Refused (exit 4 or 3) when a ledger or key file is
    already there: nothing is overwritten."""
    from ledger.api.results import Created
    from ledger.create import initialise

    location = ledger_location(db)
    info = initialise(
        location,
        origin,
        Path(log_key) if log_key is not None else default_log_key(location),
        Path(authority_key) if authority_key is not None else default_authority_key(location),
    )
    text = {key: value for key, value in info.items() if isinstance(value, str)}
    grants = info.get("pg_grants")
    return Created(
        db=text["db"],
        origin=text["origin"],
        log_key_file=text["log_key_file"],
        log_key_id=text["log_key_id"],
        log_verifier_key=text["log_verifier_key"],
        authority_key_file=text["authority_key_file"],
        authority_key_id=text["authority_key_id"],
        pg_writer_role=text.get("pg_writer_role"),
        pg_auditor_role=text.get("pg_auditor_role"),
        pg_grants=None if not isinstance(grants, list) else tuple(str(g) for g in grants),
    )


def generate_key(path: str | os.PathLike[str], passphrase: bytes | None = None) -> GeneratedKey:
    """Create an Ed25519 key pair: ``path`` (PKCS#8 PEM, mode 0600, encrypted with
    ``passphrase`` if given) and ``path.pub``. Never overwrites (exit 3)."""
    from ledger.api.results import GeneratedKey
    from ledger.files import shown
    from ledger.trust.keys import generate_key_file, public_key_path

    target = Path(path)
    _, kid = generate_key_file(target, passphrase)
    return GeneratedKey(kid, shown(target), shown(public_key_path(target)))


def verify_bundle(
    data: bytes,
    log_key: str,
    *,
    witness_keys: Sequence[str] = (),
    quorum: int | None = None,
) -> VerifiedBundle:
    """Check an offline bundle with no ledger, trusting only ``log_key`` (the log's
    verifier key, signed-note form): bytes, digests, entry records, inclusion proofs and
    the checkpoint's signature; with ``witness_keys``, ``quorum`` of them (default all)
    must have cosigned the checkpoint. ``BundleError`` (exit 1) names the failing part."""
    from ledger.log import bundle

    keys = _witness_keys(witness_keys)
    return bundle.verify_bundle(data, log_key.strip(), keys, required_quorum(quorum, len(keys)))


def replay_bundle(verified: VerifiedBundle) -> dict[str, object]:
    """Re-judge a verified bundle's subject from the inputs it carries, with no ledger
    (``bundle verify --replay``; the package's ``provledger.replay`` plug-in
    ``carried``): ``status`` is ``reproduced``, ``differs`` (naming the members) or
    ``cannot_replay`` (naming what the bundle lacks), with its ``reason``."""
    replay: ReplayCarried = required(REPLAY_GROUP, "carried")  # type: ignore[assignment]
    return replay(verified.subject.kind, verified.data, verified.input_data)
