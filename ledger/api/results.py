"""What the generic API returns: frozen values, each with ``to_json()``.

``to_json()`` is exactly what the matching command prints with ``--json`` (the command
prints it; ``tests/test_api.py`` checks the two agree), so a program and a shell script
read the same keys. Where a command adds what only it knows (the file an input was read
from), the value says so.

Values the lower layers already return whole are used as they are and re-exported by
``ledger.api``: ``InclusionProof`` and ``ConsistencyProof`` (``proof inclusion|consistency``),
``VerifiedBundle`` (``bundle verify``), ``LedgerFinding`` (one problem ``verify`` found),
``AttestationVerdict`` (one attestation judged).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from http.server import ThreadingHTTPServer

    from ledger.audit.findings import LedgerFinding
    from ledger.encoding.values import JSONObject
    from ledger.log.bundle import VerifiedBundle
    from ledger.trust.identity import IdentityRecord, RevocationRecord
    from ledger.trust.judgement import AttestationVerdict


@dataclass(frozen=True)
class Created:
    """A new ledger and its two key pairs (``provledger init --json``).

    ``pg_*`` are set for a PostgreSQL ledger only: the writer and auditor roles, and the
    statements a role administrator must run when the roles could not be created.
    """

    db: str
    origin: str
    log_key_file: str
    log_key_id: str
    log_verifier_key: str
    authority_key_file: str
    authority_key_id: str
    pg_writer_role: str | None = None
    pg_auditor_role: str | None = None
    pg_grants: tuple[str, ...] | None = None

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "db": self.db,
            "origin": self.origin,
            "log_key_file": self.log_key_file,
            "log_key_id": self.log_key_id,
            "log_verifier_key": self.log_verifier_key,
            "authority_key_file": self.authority_key_file,
            "authority_key_id": self.authority_key_id,
        }
        if self.pg_grants is not None:
            out["pg_writer_role"] = self.pg_writer_role
            out["pg_auditor_role"] = self.pg_auditor_role
            out["pg_grants"] = list(self.pg_grants)
        return out


@dataclass(frozen=True)
class Appended:
    """One appended object: its entry, and whether it was new or already present.

    ``append --json`` prints one of these per input, with the input's ``file`` added.
    On a ledger opened with ``dry_run`` it says what would have been written.
    """

    digest: str
    seq: int
    kind: str
    status: str  # "new" or "present"

    @property
    def new(self) -> bool:
        return self.status == "new"

    def to_json(self) -> JSONObject:
        return {"digest": self.digest, "seq": self.seq, "kind": self.kind, "status": self.status}


@dataclass(frozen=True)
class WitnessAnswer:
    """What one witness answered when asked to cosign: the cosignature lines stored, the
    lines rejected (``(signer, why)``: never stored), or why it failed.

    ``error`` is the ``ledger.errors`` error it failed with (``exit_code`` says how)."""

    witness: str
    cosignatures: tuple[str, ...] = ()
    rejected: tuple[tuple[str, str], ...] = ()
    error: str | None = None
    exit_code: int | None = None

    @property
    def ok(self) -> bool:
        return self.error is None

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "witness": self.witness,
            "ok": self.ok,
            "cosignatures": list(self.cosignatures),
            "rejected": [{"witness": w, "error": e} for w, e in self.rejected],
        }
        if self.error is not None:
            out["error"] = self.error
            out["exit_code"] = self.exit_code
        return out


@dataclass(frozen=True)
class Checkpoint:
    """A signed tree head as stored, with the cosignatures collected (``checkpoint --json``).

    ``note`` is the C2SP signed note with every stored cosignature line."""

    origin: str | None
    size: int
    root: str
    note: str
    created_at: str
    witnesses: tuple[WitnessAnswer, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every witness asked cosigned."""
        return all(w.ok for w in self.witnesses)

    def to_json(self) -> JSONObject:
        return {
            "origin": self.origin,
            "size": self.size,
            "root": self.root,
            "note": self.note,
            "created_at": self.created_at,
            "witnesses": [w.to_json() for w in self.witnesses],
        }


@dataclass(frozen=True)
class BrowseFinding:
    """One difference between a browse database and the ledger it was built from."""

    code: str
    table: str
    message: str

    def to_json(self) -> JSONObject:
        return {"code": self.code, "table": self.table, "message": self.message}


@dataclass(frozen=True)
class VerifyReport:
    """The whole audit (``verify --json``); ``ok`` iff no check found a problem.

    ``findings`` lists every problem (``LedgerFinding``: stable ``code``, message, where),
    those of the witness quorum included. ``witnesses`` is set when witness keys were
    given, ``browse`` and ``browse_findings`` when a browse database was compared.
    """

    entries: int
    root: str | None
    checkpoints_checked: int
    from_checkpoint: JSONObject | None
    since_checkpoint: JSONObject | None
    findings: tuple[LedgerFinding, ...]
    witnesses: Mapping[str, object] | None = None
    browse: str | None = None
    browse_findings: tuple[BrowseFinding, ...] = ()

    @property
    def ok(self) -> bool:
        return not self.findings and not self.browse_findings

    def to_json(self) -> dict[str, object]:
        from ledger.audit.full import report_json

        out: dict[str, object] = report_json(self)
        if self.browse is not None:
            out["browse"] = {
                "file": self.browse,
                "ok": not self.browse_findings,
                "findings": [f.to_json() for f in self.browse_findings],
            }
        if self.witnesses is not None:
            out["witnesses"] = dict(self.witnesses)
        return out


@dataclass(frozen=True)
class Signed:
    """An attestation appended by ``sign`` (or ``attestation import``), judged at its own
    log position (``sign --json``): the verdict's members, plus the entry."""

    attestation: str
    seq: int
    status: str  # "new" or "present"
    verdict: AttestationVerdict

    @property
    def ok(self) -> bool:
        return self.verdict.ok

    def to_json(self) -> JSONObject:
        verdict = {
            k: v for k, v in self.verdict.to_json().items() if k not in ("attestation", "seq")
        }
        return {"attestation": self.attestation, "seq": self.seq, "status": self.status, **verdict}


@dataclass(frozen=True)
class AttestationCheck:
    """Every attestation of one subject judged (``attestation check --json``): ``ok`` iff
    there is at least one and none is invalid."""

    subject: str
    ok: bool
    reason: str
    attestations: tuple[AttestationVerdict, ...]

    def to_json(self) -> JSONObject:
        return {
            "subject": self.subject,
            "ok": self.ok,
            "reason": self.reason,
            "attestations": [v.to_json() for v in self.attestations],
        }


@dataclass(frozen=True)
class Identity:
    """A verifier identity appended with the authority's attestation
    (``identity register --json``)."""

    verifier_id: str
    key_id: str
    identity: str
    identity_seq: int
    attestation: str
    status: str  # "new" or "present"

    def to_json(self) -> JSONObject:
        return {
            "verifier_id": self.verifier_id,
            "key_id": self.key_id,
            "identity": self.identity,
            "identity_seq": self.identity_seq,
            "attestation": self.attestation,
            "status": self.status,
        }


@dataclass(frozen=True)
class Revoked:
    """A key revocation appended with the authority's attestation (``identity revoke --json``)."""

    key_id: str
    reason: str
    revocation: str
    seq: int
    attestation: str

    def to_json(self) -> JSONObject:
        return {
            "key_id": self.key_id,
            "reason": self.reason,
            "revocation": self.revocation,
            "seq": self.seq,
            "attestation": self.attestation,
        }


@dataclass(frozen=True)
class GeneratedKey:
    """A new Ed25519 key pair on disk (``key generate --json``)."""

    key_id: str
    private_key: str
    public_key: str

    def to_json(self) -> JSONObject:
        return {
            "key_id": self.key_id,
            "private_key": self.private_key,
            "public_key": self.public_key,
        }


@dataclass(frozen=True)
class ExportedBundle:
    """An offline bundle of one object (``bundle export``): ``data`` is the bundle file's
    bytes, ``verified`` what it proves (checked before it is handed out), ``omitted`` the
    attestations appended after the checkpoint it is proven against."""

    data: bytes = field(repr=False)
    verified: VerifiedBundle
    omitted: tuple[str, ...] = ()

    def to_json(self, file: str) -> JSONObject:
        """``bundle export --json``: what was verified, written to ``file``."""
        out: JSONObject = dict(self.verified.to_json())
        out.update(
            {"file": file, "bytes": len(self.data), "omitted_attestations": list(self.omitted)}
        )
        return out


@dataclass(frozen=True)
class VerifierIdentity:
    """A stored verifier identity and its status now (one row of ``identity list --json``):
    ``active``, ``retired``, ``compromised``, ``unauthorized`` (no authority attestation
    stored) or ``invalid-key``."""

    record: IdentityRecord
    status: str

    @property
    def key_id(self) -> str:
        return self.record.key_id

    @property
    def verifier_id(self) -> str:
        return self.record.verifier_id

    def to_json(self) -> JSONObject:
        out: JSONObject = dict(self.record.to_json())
        out["status"] = self.status
        return out


@dataclass(frozen=True)
class IdentityMatch:
    """The identities a key id, verifier id or identity digest names, with the revocations
    of their keys (``identity show --json``); ``ref`` is the reference resolved (a digest
    prefix made whole)."""

    ref: str
    identities: tuple[VerifierIdentity, ...]
    revocations: tuple[RevocationRecord, ...]

    def to_json(self) -> JSONObject:
        return {
            "ref": self.ref,
            "identities": [i.to_json() for i in self.identities],
            "revocations": [dict(r.to_json()) for r in self.revocations],
        }


@dataclass(frozen=True)
class Migrated:
    """A ledger brought to the current layout (``migrate --json``): ``from_format`` is the
    layout it had, None when it was current already (nothing was done)."""

    db: str
    from_format: str | None
    to_format: str

    @property
    def migrated(self) -> bool:
        return self.from_format is not None

    def to_json(self) -> JSONObject:
        return {
            "db": self.db,
            "from": self.from_format,
            "to": self.to_format,
            "migrated": self.migrated,
        }


@dataclass(frozen=True)
class Copied:
    """A ledger copied entry by entry to another backend (``copy --json``): ``roots`` maps
    every checkpoint size to the root both ledgers agree on. ``pg_grants``: statements a
    role administrator must run when a PostgreSQL destination's roles could not be made
    (the command prints them as warnings; not part of the JSON)."""

    src: str
    dst: str
    source_size: int
    already_present: int
    copied: int
    checkpoints: int
    cosignatures: int
    roots: Mapping[int, str]
    pg_grants: tuple[str, ...] = ()

    def to_json(self) -> JSONObject:
        return {
            "src": self.src,
            "dst": self.dst,
            "source_size": self.source_size,
            "already_present": self.already_present,
            "copied": self.copied,
            "checkpoints": self.checkpoints,
            "cosignatures": self.cosignatures,
            "roots": {str(k): v for k, v in sorted(self.roots.items())},
        }


@dataclass(frozen=True)
class CreatedWitness:
    """A new witness (``witness init --json``): its state and key files, its name, the
    verifier key to give log verifiers, and the origins of the logs it witnesses."""

    state: str
    key_file: str
    name: str
    verifier_key: str
    logs: tuple[str, ...]

    def to_json(self) -> JSONObject:
        return {
            "state": self.state,
            "key_file": self.key_file,
            "name": self.name,
            "verifier_key": self.verifier_key,
            "logs": list(self.logs),
        }


@dataclass(frozen=True)
class WitnessedLog:
    """A log the witness now witnesses (``witness add-log``): its origin and key."""

    origin: str
    log_key: str

    def to_json(self) -> JSONObject:
        return {"origin": self.origin, "log_key": self.log_key}


@dataclass(frozen=True)
class WitnessCosignature:
    """A checkpoint the witness verified, recorded and cosigned (``witness cosign --json``);
    ``line`` is the cosignature line as the signed note carries it."""

    origin: str
    size: int
    root: str
    timestamp: int
    line: str

    def to_json(self) -> JSONObject:
        return {
            "origin": self.origin,
            "size": self.size,
            "root": self.root,
            "timestamp": self.timestamp,
            "cosignature": self.line.rstrip("\n"),
        }


@dataclass(frozen=True)
class WitnessServer:
    """The witness's HTTP API (POST ``<prefix>/add-checkpoint``), bound and not yet
    serving (``witness serve``): ``url`` is where it listens. ``serve_forever()`` serves
    until interrupted, then closes the socket; ``server`` is the standard library's
    ``ThreadingHTTPServer`` (``shutdown()`` from another thread stops it)."""

    name: str
    url: str
    server: ThreadingHTTPServer

    def serve_forever(self) -> None:
        try:
            self.server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.server.server_close()
