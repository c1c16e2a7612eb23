"""provledger's Python API, generic part: open a ledger and work with it.

::

    from ledger.api import init_ledger, open_ledger

    init_ledger("ledger.db")
    with open_ledger("ledger.db") as book:
        done = book.append({"provledger_kind": ...})
        print(book.get(done.digest).to_json())

Every operation is what the command of the same name does, with the same checks and
admission: the CLI is a thin layer over this package (docs/API.md). Results are frozen
values whose ``to_json()`` is the command's ``--json``; errors are ``ledger.errors``
classes, each with the ``exit_code`` the command exits with.

The package's admission policy (IDKMesh's rules, read from this distribution's entry
points) is in force for every ledger opened here unless the caller names another
(``open_ledger(db, policy=CORE_ONLY)``). IDKMesh's own operations (run a verifier and
record it; freeze, burn, bind and audit cohorts; provenance) are ``verifiers.api`` and
``cohorts.api``: they build on this one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.api.ledger import (
    Document,
    Ledger,
    default_authority_key,
    default_log_key,
    document_bytes,
    generate_key,
    init_ledger,
    ledger_location,
    load_signer,
    migrate_ledger,
    open_ledger,
    prepare_document,
    replay_bundle,
    verify_bundle,
)
from ledger.api.witness import (
    cosign_checkpoint,
    create_witness,
    latest_cosigned,
    trust_log,
    witness_server,
    witness_state,
)
from ledger.encoding.values import JSONObject, JSONValue

if TYPE_CHECKING:
    from ledger.api.reads import LedgerObject, LogEntry, Stats
    from ledger.api.results import (
        Appended,
        AttestationCheck,
        BrowseFinding,
        Checkpoint,
        Copied,
        Created,
        CreatedWitness,
        ExportedBundle,
        GeneratedKey,
        Identity,
        IdentityMatch,
        Migrated,
        Revoked,
        Signed,
        VerifierIdentity,
        VerifyReport,
        WitnessAnswer,
        WitnessCosignature,
        WitnessedLog,
        WitnessServer,
    )
    from ledger.audit.findings import LedgerFinding
    from ledger.log.bundle import MAX_BUNDLE_BYTES, BundleError, VerifiedBundle
    from ledger.log.checkpoints import ConsistencyProof, InclusionProof
    from ledger.log.witness import WitnessState
    from ledger.store.bulk import ImportSummary
    from ledger.trust.admission import CORE_ONLY, AdmissionPolicy, default_policy
    from ledger.trust.judgement import AttestationVerdict
    from ledger.trust.keys import Signer


_READS = frozenset({"LedgerObject", "LogEntry", "Stats"})
_RESULTS = frozenset(
    {
        "Appended",
        "AttestationCheck",
        "BrowseFinding",
        "Checkpoint",
        "Copied",
        "Created",
        "CreatedWitness",
        "ExportedBundle",
        "GeneratedKey",
        "Identity",
        "IdentityMatch",
        "Migrated",
        "Revoked",
        "Signed",
        "VerifierIdentity",
        "VerifyReport",
        "WitnessAnswer",
        "WitnessCosignature",
        "WitnessServer",
        "WitnessedLog",
    }
)


def __getattr__(name: str) -> object:
    """Result classes, and names whose modules load the crypto stack or the log's proofs,
    are imported when first used (PEP 562): a command that imports this package to read
    one object builds and loads no more than it needs."""
    if name in _READS:
        from ledger.api import reads

        return getattr(reads, name)
    if name in _RESULTS:
        from ledger.api import results

        return getattr(results, name)
    if name == "WitnessState":
        from ledger.log.witness import WitnessState

        return WitnessState
    if name in ("CORE_ONLY", "AdmissionPolicy", "default_policy"):
        from ledger.trust import admission

        return getattr(admission, name)
    if name == "LedgerFinding":
        from ledger.audit.findings import LedgerFinding

        return LedgerFinding
    if name == "ImportSummary":
        from ledger.store.bulk import ImportSummary

        return ImportSummary
    if name in ("VerifiedBundle", "BundleError", "MAX_BUNDLE_BYTES"):
        from ledger.log import bundle

        return getattr(bundle, name)
    if name in ("ConsistencyProof", "InclusionProof"):
        from ledger.log import checkpoints

        return getattr(checkpoints, name)
    if name == "AttestationVerdict":
        from ledger.trust.judgement import AttestationVerdict

        return AttestationVerdict
    if name == "Signer":
        from ledger.trust.keys import Signer

        return Signer
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CORE_ONLY",
    "MAX_BUNDLE_BYTES",
    "AdmissionPolicy",
    "Appended",
    "AttestationCheck",
    "AttestationVerdict",
    "BrowseFinding",
    "BundleError",
    "Checkpoint",
    "ConsistencyProof",
    "Copied",
    "Created",
    "CreatedWitness",
    "Document",
    "ExportedBundle",
    "GeneratedKey",
    "Identity",
    "IdentityMatch",
    "ImportSummary",
    "InclusionProof",
    "JSONObject",
    "JSONValue",
    "Ledger",
    "LedgerFinding",
    "LedgerObject",
    "LogEntry",
    "Migrated",
    "Revoked",
    "Signed",
    "Signer",
    "Stats",
    "VerifiedBundle",
    "VerifierIdentity",
    "VerifyReport",
    "WitnessAnswer",
    "WitnessCosignature",
    "WitnessServer",
    "WitnessState",
    "WitnessedLog",
    "cosign_checkpoint",
    "create_witness",
    "default_authority_key",
    "default_log_key",
    "default_policy",
    "document_bytes",
    "generate_key",
    "init_ledger",
    "latest_cosigned",
    "ledger_location",
    "load_signer",
    "migrate_ledger",
    "open_ledger",
    "prepare_document",
    "replay_bundle",
    "trust_log",
    "verify_bundle",
    "witness_server",
    "witness_state",
]
