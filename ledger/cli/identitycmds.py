"""Verifier identities: ``identity register|list|show|revoke`` (authority-attested)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import Annotated

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
    table,
)
from ledger.cli.keycmds import AuthorityKeyOption, PassphraseEnv, authority_signer

identity_app = new_app("Verifier identities: register, list, show, revoke (authority-attested).")


class RevokeReason(StrEnum):
    """Why a key is revoked (see docs/IDENTITIES.md for the effect of each)."""

    retired = "retired"
    compromised = "compromised"


@identity_app.command("register")
def identity_register(
    verifier_id: Annotated[str, typer.Option("--verifier-id", help="The verifier.id it signs as.")],
    adapter: Annotated[str, typer.Option("--adapter", help="The verifier adapter name.")],
    adapter_version: Annotated[
        list[str],
        typer.Option(
            "--adapter-version",
            help="An adapter version the key may sign for; repeat it to cover several"
            " (e.g. --adapter-version 0.2.0 --adapter-version 0.3.0) in one identity.",
        ),
    ],
    public_key: Annotated[Path, typer.Option("--public-key", help="The verifier's PATH.pub.")],
    db: DbOption = DEFAULT_DB,
    authority_key: AuthorityKeyOption = None,
    passphrase_env: PassphraseEnv = None,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Append a verifier identity and its authority attestation in one transaction.

    One identity binds one key to one verifier id, one adapter and every adapter version
    given with --adapter-version (repeatable). A verifier's results, plans and
    calibration records are accepted only for the versions its identity holds.
    """
    from ledger.api import open_ledger

    authority = authority_signer(db, authority_key, passphrase_env)
    with open_ledger(db, dry_run=dry_run) as book:
        done = book.register_identity(
            verifier_id=verifier_id,
            adapter=adapter,
            adapter_versions=adapter_version,
            public_key=public_key,
            authority=authority,
        )
    if json_out:
        emit_json(done.to_json())
    else:
        state = "registered" if done.status == "new" else "already registered"
        sys.stdout.write(
            f"{done.identity} seq={done.identity_seq} {state} {verifier_id} key {done.key_id}\n"
        )
    dry_run_note(dry_run)


@identity_app.command("list")
def identity_list(
    db: DbOption = DEFAULT_DB,
    verifier_id: Annotated[
        str | None, typer.Option("--verifier-id", help="Only this verifier id.")
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """List every verifier identity with its current status."""
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        found = book.identities(verifier_id=verifier_id)
    if json_out:
        emit_json([row.to_json() for row in found])
        return
    table(
        ["seq", "verifier id", "adapter", "versions", "key id", "status"],
        [
            [
                str(row.record.seq),
                row.record.verifier_id,
                row.record.adapter,
                ", ".join(row.record.adapter_versions),
                row.record.key_id,
                row.status,
            ]
            for row in found
        ],
    )


@identity_app.command("show")
def identity_show(
    ref: Annotated[
        str, typer.Argument(help="Key id, verifier id or identity digest (or a unique prefix).")
    ],
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Show the identities a key id, verifier id or digest names, and their revocations."""
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        found = book.identity(ref)
    if json_out:
        emit_json(found.to_json())
        return
    out = console()
    for row in found.identities:
        rec = row.record
        out.print(f"identity        {rec.digest} (seq {rec.seq})")
        out.print(f"  verifier id   {rec.verifier_id}")
        out.print(f"  adapter       {rec.adapter} {', '.join(rec.adapter_versions)}")
        out.print(f"  key id        {rec.key_id}")
        out.print(f"  authorized at {rec.authorized_at}")
        out.print(f"  status        {row.status}")
    for rev in found.revocations:
        out.print(
            f"revocation      {rev.digest} (seq {rev.seq}) {rev.reason} key"
            f" {rev.key_id}, in force from {rev.effective_at}"
        )


@identity_app.command("revoke")
def identity_revoke(
    key_id: Annotated[str, typer.Argument(help="Key id of the verifier key to revoke.")],
    reason: Annotated[RevokeReason, typer.Option("--reason", help="retired or compromised.")],
    note: Annotated[str | None, typer.Option("--note", help="Free-text explanation.")] = None,
    db: DbOption = DEFAULT_DB,
    authority_key: AuthorityKeyOption = None,
    passphrase_env: PassphraseEnv = None,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Append an authority-attested revocation of a key (nothing is deleted)."""
    from ledger.api import open_ledger

    authority = authority_signer(db, authority_key, passphrase_env)
    with open_ledger(db, dry_run=dry_run) as book:
        done = book.revoke_key(key_id, reason.value, note=note, authority=authority)
    if json_out:
        emit_json(done.to_json())
    else:
        sys.stdout.write(f"{done.revocation} seq={done.seq} revoked {key_id} ({reason.value})\n")
    dry_run_note(dry_run)
