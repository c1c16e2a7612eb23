"""Verifier identities: ``identity register|list|show|revoke`` (authority-attested)."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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

if TYPE_CHECKING:
    pass

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
    from ledger.store.backends import open_store
    from ledger.trust.identity import register_identity
    from ledger.trust.keys import load_public_key

    key = load_public_key(public_key)
    authority = authority_signer(db, authority_key, passphrase_env)
    with open_store(db, dry_run=dry_run) as store:
        done = register_identity(
            store,
            verifier_id=verifier_id,
            adapter=adapter,
            adapter_versions=adapter_version,
            public_key=key,
            authority=authority,
        )
    info = {
        "verifier_id": verifier_id,
        "key_id": done.key_id,
        "identity": done.subject.entry.digest,
        "identity_seq": done.subject.entry.seq,
        "attestation": done.attestation.entry.digest,
        "status": "new" if done.subject.new else "present",
    }
    if json_out:
        emit_json(info)
    else:
        state = "registered" if done.subject.new else "already registered"
        sys.stdout.write(
            f"{info['identity']} seq={info['identity_seq']} {state} {verifier_id}"
            f" key {done.key_id}\n"
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
    from ledger.store.backends import open_store
    from ledger.trust.identity import trust_index

    with open_store(db, readonly=True) as store:
        index = trust_index(store)
    rows = [
        {**rec.to_json(), "status": index.status(rec)}
        for rec in index.identities
        if verifier_id is None or rec.verifier_id == verifier_id
    ]
    if json_out:
        emit_json(rows)
        return
    table(
        ["seq", "verifier id", "adapter", "versions", "key id", "status"],
        [
            [
                str(row["seq"]),
                str(row["verifier_id"]),
                str(row["adapter"]),
                ", ".join(row["adapter_versions"]),
                str(row["key_id"]),
                str(row["status"]),
            ]
            for row in rows
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
    from ledger.errors import NotFound
    from ledger.store.backends import open_store
    from ledger.store.resolve import full_digest
    from ledger.trust.identity import identities_matching, trust_index

    with open_store(db, readonly=True) as store:
        index = trust_index(store)
        ref = full_digest(store, ref)  # an identity's digest prefix
    found = identities_matching(index, ref)
    if not found:
        raise NotFound(
            f"verifier identity not found, got {ref}, expected a key id, verifier id or digest"
        )
    keys = {rec.key_id for rec in found}
    info: dict[str, Any] = {  # the --json document, read back below to print it
        "ref": ref,
        "identities": [{**rec.to_json(), "status": index.status(rec)} for rec in found],
        "revocations": [r.to_json() for r in index.revocations if r.key_id in keys],
    }
    if json_out:
        emit_json(info)
        return
    out = console()
    for row in info["identities"]:
        out.print(f"identity        {row['digest']} (seq {row['seq']})")
        out.print(f"  verifier id   {row['verifier_id']}")
        out.print(f"  adapter       {row['adapter']} {', '.join(row['adapter_versions'])}")
        out.print(f"  key id        {row['key_id']}")
        out.print(f"  authorized at {row['authorized_at']}")
        out.print(f"  status        {row['status']}")
    for rev in info["revocations"]:
        out.print(
            f"revocation      {rev['digest']} (seq {rev['seq']}) {rev['reason']} key"
            f" {rev['key_id']}, in force from {rev['effective_at']}"
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
    from ledger.store.backends import open_store
    from ledger.trust.identity import revoke_key

    authority = authority_signer(db, authority_key, passphrase_env)
    with open_store(db, dry_run=dry_run) as store:
        done = revoke_key(store, key_id, reason.value, authority=authority, note=note)
    info = {
        "key_id": key_id,
        "reason": reason.value,
        "revocation": done.subject.entry.digest,
        "seq": done.subject.entry.seq,
        "attestation": done.attestation.entry.digest,
    }
    if json_out:
        emit_json(info)
    else:
        sys.stdout.write(
            f"{info['revocation']} seq={info['seq']} revoked {key_id} ({reason.value})\n"
        )
    dry_run_note(dry_run)
