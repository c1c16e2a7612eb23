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
    from ledger.api import AttestationCheck, Signed
    from ledger.trust.judgement import AttestationVerdict

attestation_app = new_app("DSSE attestations stored in the ledger: check, export, import.")


def _warn_failures(signed: list[Signed]) -> None:
    for done in signed:
        for failure in done.verdict.failures:
            typer.echo(f"warning: {failure.code}: {' '.join(failure.message.split())}", err=True)


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
    from ledger.api import open_ledger

    signer = signer_from_file(key, passphrase_env)
    with open_ledger(db, dry_run=dry_run) as book:
        signed = book.sign(subject, signer)
    _warn_failures([signed])
    if json_out:
        emit_json(signed.to_json())
    else:
        state = "new" if signed.status == "new" else "already present"
        sys.stdout.write(
            f"{signed.attestation} seq={signed.seq} attestation of {signed.verdict.subject_digest}"
            f" by {signed.verdict.key_id} {state}\n"
        )
    dry_run_note(dry_run)


def _print_verdicts(verdicts: tuple[AttestationVerdict, ...]) -> None:
    out = console()
    for v in verdicts:
        where = f"seq {v.seq} {v.attestation_digest}" if v.seq is not None else "envelope"
        who = f" verifier {v.verifier_id}" if v.verifier_id else f" ({v.signer})"
        if v.ok:
            out.print(f"OK   {where} key {v.key_id}{who}", markup=False)
        for f in v.failures:
            out.print(f"FAIL {where} key {v.key_id}: {f.code}: {f.message}", markup=False)


def _finish_check(check: AttestationCheck, json_out: bool) -> None:
    from ledger.errors import CheckFailed

    if json_out:
        emit_json(check.to_json())
    else:
        _print_verdicts(check.attestations)
        console().print(f"{'ok' if check.ok else 'FAILED'}: {check.reason}", markup=False)
    if not check.ok:
        raise CheckFailed(
            f"attestation check of {check.subject}, got {check.reason}, expected at least one"
            " valid attestation and none invalid"
        )


@attestation_app.command("check")
def attestation_check(
    subject: Annotated[str, typer.Argument(help="Digest (or id) of the attested object.")],
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Check every attestation of a subject. Exit 0 iff >= 1 attestation and all are valid."""
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        check = book.check_attestations(subject)
    _finish_check(check, json_out)


@attestation_app.command("export")
def attestation_export(
    attestation: Annotated[
        str, typer.Argument(help="Digest of the attestation object (or a unique prefix).")
    ],
    db: DbOption = DEFAULT_DB,
    output: OutOption = None,
) -> None:
    """Print the full standard DSSE envelope (payload = the subject's stored bytes)."""
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        envelope = book.export_attestation(attestation)
    write_out(envelope, output)


@attestation_app.command("verify-envelope")
def attestation_verify_envelope(
    file: Annotated[str, typer.Argument(help="A full DSSE envelope (JSON file; - is stdin).")],
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Check an envelope from outside against the ledger, as if appended now (same rule)."""
    from ledger.api import open_ledger
    from ledger.cli.common import read_input

    envelope = read_input(file)
    with open_ledger(db, readonly=True) as book:
        check = book.verify_envelope(envelope)
    _finish_check(check, json_out)


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
    from ledger.api import open_ledger
    from ledger.cli.common import read_input

    envelope = read_input(file)
    with open_ledger(db, dry_run=dry_run) as book:
        signed = book.import_envelope(envelope)
    _warn_failures(signed)
    if json_out:
        emit_json([done.to_json() for done in signed])
    else:
        for done in signed:
            sys.stdout.write(
                f"{done.attestation} seq={done.seq} attestation of {done.verdict.subject_digest}"
                f" by {done.verdict.key_id} {done.status}\n"
            )
    dry_run_note(dry_run)
