"""Attestations: ``sign`` appends one; ``attestation check|export|verify-envelope|import``.

The store's admission policy judges every new attestation at its own log position
inside the append transaction: one that would not verify is refused (exit 4) and
nothing is written.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import (
    DEFAULT_DB,
    DbOption,
    DryRunOption,
    JsonOption,
    console,
    dry_run_note,
    emit_json,
    new_app,
)
from ledger.cli.exportcmds import OutOption, write_out
from ledger.cli.keycmds import KeyOption, PassphraseEnv, signer_from_file

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject
    from ledger.store.base import LedgerReader, Store
    from ledger.store.prepared import Prepared
    from ledger.trust.dsse import Envelope
    from ledger.trust.judgement import AttestationVerdict

attestation_app = new_app("DSSE attestations stored in the ledger: check, export, import.")


def subject_digest(store: LedgerReader, ref: str) -> str:
    from ledger.store.resolve import resolve_stored

    return resolve_stored(store, ref).digest


def _warn_failures(verdict: AttestationVerdict) -> None:
    for failure in verdict.failures:
        typer.echo(f"warning: {failure.code}: {' '.join(failure.message.split())}", err=True)


def append_attestations(store: Store, prepared: list[Prepared]) -> list[JSONObject]:
    """Append attestations in one transaction, check each at its position, warn on stderr."""
    from ledger.trust.identity import trust_index
    from ledger.trust.judgement import check_attestation

    results = store.append_many(prepared)
    index = trust_index(store)
    rows = []
    for result in results:
        stored = store.get(result.entry.digest)
        assert stored is not None  # just appended in a committed transaction
        verdict = check_attestation(store, stored, store.policy, index)
        _warn_failures(verdict)
        rows.append(
            {
                "attestation": result.entry.digest,
                "seq": result.entry.seq,
                "status": "new" if result.new else "present",
                **{k: v for k, v in verdict.to_json().items() if k not in ("attestation", "seq")},
            }
        )
    return rows


def sign(
    subject: Annotated[str, typer.Argument(help="Digest (or id) of the object to attest.")],
    key: KeyOption,
    db: DbOption = DEFAULT_DB,
    passphrase_env: PassphraseEnv = None,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Append a DSSE attestation by KEY over a stored object.

    Refused (exit 4, nothing written) when the attestation would not verify: KEY must be
    the authority key or a registered, unrevoked verifier key allowed to sign the subject.
    """
    from ledger.store.backends import open_store
    from ledger.trust.attestation import attest

    signer = signer_from_file(key, passphrase_env)
    with open_store(db, dry_run=dry_run) as store:
        prepared = attest(store, subject_digest(store, subject), signer)
        rows = append_attestations(store, [prepared])
    if json_out:
        emit_json(rows[0])
    else:
        row = rows[0]
        state = "new" if row["status"] == "new" else "already present"
        sys.stdout.write(
            f"{row['attestation']} seq={row['seq']} attestation of {row['subject']}"
            f" by {row['key_id']} {state}\n"
        )
    dry_run_note(dry_run)


def _print_verdicts(verdicts: list[AttestationVerdict]) -> None:
    out = console()
    for v in verdicts:
        where = f"seq {v.seq} {v.attestation_digest}" if v.seq is not None else "envelope"
        who = f" verifier {v.verifier_id}" if v.verifier_id else f" ({v.signer})"
        if v.ok:
            out.print(f"OK   {where} key {v.key_id}{who}", markup=False)
        for f in v.failures:
            out.print(f"FAIL {where} key {v.key_id}: {f.code}: {f.message}", markup=False)


def _finish_check(subject: str, verdicts: list[AttestationVerdict], json_out: bool) -> None:
    from ledger.errors import CheckFailed
    from ledger.trust.judgement import subject_verdict

    ok, reason = subject_verdict(verdicts)
    if json_out:
        emit_json(
            {
                "subject": subject,
                "ok": ok,
                "reason": reason,
                "attestations": [v.to_json() for v in verdicts],
            }
        )
    else:
        _print_verdicts(verdicts)
        console().print(f"{'ok' if ok else 'FAILED'}: {reason}", markup=False)
    if not ok:
        raise CheckFailed(
            f"attestation check of {subject}, got {reason}, expected at least one valid"
            " attestation and none invalid"
        )


@attestation_app.command("check")
def attestation_check(
    subject: Annotated[str, typer.Argument(help="Digest (or id) of the attested object.")],
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Check every attestation of a subject. Exit 0 iff >= 1 attestation and all are valid."""
    from ledger.encoding.digest import is_digest
    from ledger.store.backends import open_store
    from ledger.trust.attestation import attestations_of
    from ledger.trust.judgement import check_subject_attestations

    with open_store(db, readonly=True) as store:
        # An attestation may name a digest that is not stored (subject-missing): check it.
        if is_digest(subject) and store.get(subject) is None and attestations_of(store, subject):
            digest = subject
        else:
            digest = subject_digest(store, subject)
        verdicts = check_subject_attestations(store, digest, store.policy)
    _finish_check(digest, verdicts, json_out)


@attestation_app.command("export")
def attestation_export(
    attestation: Annotated[
        str, typer.Argument(help="Digest of the attestation object (or a unique prefix).")
    ],
    db: DbOption = DEFAULT_DB,
    output: OutOption = None,
) -> None:
    """Print the full standard DSSE envelope (payload = the subject's stored bytes)."""
    from ledger.store.backends import open_store
    from ledger.store.resolve import full_digest
    from ledger.trust.attestation import rebuild_envelope
    from ledger.trust.judgement import find_attestation

    with open_store(db, readonly=True) as store:
        found = find_attestation(store, full_digest(store, attestation))
        envelope = rebuild_envelope(store, found)
    write_out(envelope.to_json_bytes(), output)


def _read_envelope(name: str) -> Envelope:
    from ledger.cli.common import read_input
    from ledger.encoding.canonical import parse_strict
    from ledger.trust.dsse import parse_envelope

    return parse_envelope(parse_strict(read_input(name)))


@attestation_app.command("verify-envelope")
def attestation_verify_envelope(
    file: Annotated[str, typer.Argument(help="A full DSSE envelope (JSON file; - is stdin).")],
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Check an envelope from outside against the ledger, as if appended now (same rule)."""
    from ledger.encoding.digest import sha256_digest
    from ledger.store.backends import open_store
    from ledger.trust.judgement import check_envelope

    envelope = _read_envelope(file)
    with open_store(db, readonly=True) as store:
        verdicts = check_envelope(store, envelope, store.policy)
    _finish_check(sha256_digest(envelope.payload), verdicts, json_out)


@attestation_app.command("import")
def attestation_import(
    file: Annotated[str, typer.Argument(help="A full DSSE envelope (JSON file; - is stdin).")],
    db: DbOption = DEFAULT_DB,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Store a full envelope over a stored object as detached attestation(s).

    Refused (exit 4, nothing written) unless every signature verifies over the stored
    subject, the payloadType is the one the ledger defines for the subject's kind, and
    the key is the authority key or a registered, unrevoked verifier key.
    """
    from ledger.store.backends import open_store
    from ledger.trust.attestation import detach_envelope

    envelope = _read_envelope(file)
    with open_store(db, dry_run=dry_run) as store:
        rows = append_attestations(store, detach_envelope(store, envelope))
    if json_out:
        emit_json(rows)
    else:
        for row in rows:
            sys.stdout.write(
                f"{row['attestation']} seq={row['seq']} attestation of {row['subject']}"
                f" by {row['key_id']} {row['status']}\n"
            )
    dry_run_note(dry_run)
