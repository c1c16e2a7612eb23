"""Key, identity, signing and attestation commands.

``key generate``; ``identity register|list|show|revoke``; ``sign``;
``attestation check|export|verify-envelope|import``; ``export intoto``.
Every command that reads a private key (``--key``, ``--authority-key``) also takes
``--passphrase-env VAR``: the passphrase is read from that environment variable, never
from the command line. Private keys never enter the database.
"""

from __future__ import annotations

import os
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ledger.cli.common import DbOption, JsonOption, console, emit_json, new_app

if TYPE_CHECKING:
    from ledger.store.base import LedgerReader, Store
    from ledger.trust.judgement import AttestationVerdict
    from ledger.trust.keys import Ed25519Signer

key_app = new_app("Ed25519 key files (PKCS#8 PEM, mode 0600, optional passphrase).")
identity_app = new_app("Verifier identities: register, list, show, revoke (authority-attested).")
attestation_app = new_app("DSSE attestations stored in the ledger: check, export, import.")
export_app = new_app("Export ledger objects in interoperable formats.")

PassphraseEnv = Annotated[
    str | None,
    typer.Option(
        "--passphrase-env",
        metavar="VAR",
        help="Read the private key's passphrase from environment variable VAR.",
    ),
]
KeyOption = Annotated[Path, typer.Option("--key", help="Private key file (PKCS#8 PEM).")]
AuthorityKeyOption = Annotated[
    Path | None,
    typer.Option("--authority-key", help="Authority private key (default: <db>.authority.key)."),
]
OutOption = Annotated[
    Path | None, typer.Option("-o", "--output", help="Write to FILE (exact bytes) not stdout.")
]


class RevokeReason(StrEnum):
    """Why a key is revoked (see docs/IDENTITIES.md for the effect of each)."""

    retired = "retired"
    compromised = "compromised"


# --- helpers -------------------------------------------------------------------------


def passphrase_from_env(var: str | None) -> bytes | None:
    """The passphrase held by environment variable ``var``; None when no VAR was given."""
    from ledger.errors import KeyFileError

    if var is None:
        return None
    value = os.environ.get(var)
    if value is None:
        raise KeyFileError(
            f"passphrase environment variable {var}, got unset, expected the key's passphrase"
        )
    if not value:
        raise KeyFileError(
            f"passphrase environment variable {var}, got an empty value, expected a passphrase"
        )
    return value.encode("utf-8")


def _signer(path: Path, passphrase_env: str | None) -> Ed25519Signer:
    from ledger.trust.keys import Ed25519Signer

    return Ed25519Signer.from_file(path, passphrase_from_env(passphrase_env))


def _authority(db: Path, given: Path | None, passphrase_env: str | None) -> Ed25519Signer:
    from ledger.cli.core import authority_key_path

    return _signer(authority_key_path(db, given), passphrase_env)


def _subject_digest(store: LedgerReader, ref: str) -> str:
    from ledger.store.resolve import resolve

    return resolve(store, ref).digest


def _warn_failures(verdict: AttestationVerdict) -> None:
    for failure in verdict.failures:
        typer.echo(f"warning: {failure.code}: {' '.join(failure.message.split())}", err=True)


def _append_attestations(store: Store, prepared: list[Any]) -> list[dict[str, Any]]:
    """Append attestations in one transaction, check each at its position, warn on stderr."""
    from ledger.trust.identity import trust_index
    from ledger.trust.judgement import check_attestation

    results = store.append_many(prepared)
    index = trust_index(store)
    rows = []
    for result in results:
        stored = store.get(result.entry.digest)
        assert stored is not None  # just appended in a committed transaction
        verdict = check_attestation(store, stored, index)
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


def _write_out(data: bytes, output: Path | None) -> None:
    if output is None:
        sys.stdout.buffer.write(data + b"\n")
        sys.stdout.buffer.flush()
    else:
        output.write_bytes(data)


# --- key -----------------------------------------------------------------------------


@key_app.command("generate")
def key_generate(
    path: Annotated[Path, typer.Argument(help="Private key file to create (and PATH.pub).")],
    passphrase_env: PassphraseEnv = None,
    json_out: JsonOption = False,
) -> None:
    """Create an Ed25519 key pair (never overwrites); print its key id."""
    from ledger.trust.keys import generate_key_file, public_key_path

    _, kid = generate_key_file(path, passphrase_from_env(passphrase_env))
    info = {"key_id": kid, "private_key": str(path), "public_key": str(public_key_path(path))}
    if json_out:
        emit_json(info)
        return
    sys.stdout.write(kid + "\n")


# --- identity ------------------------------------------------------------------------


@identity_app.command("register")
def identity_register(
    verifier_id: Annotated[str, typer.Option("--verifier-id", help="The verifier.id it signs as.")],
    adapter: Annotated[str, typer.Option("--adapter", help="The verifier adapter name.")],
    adapter_version: Annotated[
        list[str], typer.Option("--adapter-version", help="An adapter version (repeatable).")
    ],
    public_key: Annotated[Path, typer.Option("--public-key", help="The verifier's PATH.pub.")],
    db: DbOption = Path("ledger.db"),
    authority_key: AuthorityKeyOption = None,
    passphrase_env: PassphraseEnv = None,
    json_out: JsonOption = False,
) -> None:
    """Append a verifier identity and its authority attestation in one transaction."""
    from ledger.store.backends import open_store
    from ledger.trust.identity import register_identity
    from ledger.trust.keys import load_public_key

    key = load_public_key(public_key)
    authority = _authority(db, authority_key, passphrase_env)
    with open_store(db) as store:
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
        return
    state = "registered" if done.subject.new else "already registered"
    sys.stdout.write(
        f"{info['identity']} seq={info['identity_seq']} {state} {verifier_id} key {done.key_id}\n"
    )


@identity_app.command("list")
def identity_list(
    db: DbOption = Path("ledger.db"),
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
    from rich.table import Table

    table = Table("seq", "verifier id", "adapter", "versions", "key id", "status")
    for row in rows:
        table.add_row(
            str(row["seq"]),
            row["verifier_id"],
            row["adapter"],
            ", ".join(row["adapter_versions"]),
            row["key_id"],
            row["status"],
        )
    console().print(table)


@identity_app.command("show")
def identity_show(
    ref: Annotated[str, typer.Argument(help="Key id, verifier id or identity digest.")],
    db: DbOption = Path("ledger.db"),
    json_out: JsonOption = False,
) -> None:
    """Show the identities a key id, verifier id or digest names, and their revocations."""
    from ledger.errors import NotFound
    from ledger.store.backends import open_store
    from ledger.trust.identity import identities_matching, trust_index

    with open_store(db, readonly=True) as store:
        index = trust_index(store)
    found = identities_matching(index, ref)
    if not found:
        raise NotFound(
            f"verifier identity not found, got {ref}, expected a key id, verifier id or digest"
        )
    keys = {rec.key_id for rec in found}
    info: dict[str, Any] = {
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
    db: DbOption = Path("ledger.db"),
    authority_key: AuthorityKeyOption = None,
    passphrase_env: PassphraseEnv = None,
    json_out: JsonOption = False,
) -> None:
    """Append an authority-attested revocation of a key (nothing is deleted)."""
    from ledger.store.backends import open_store
    from ledger.trust.identity import revoke_key

    authority = _authority(db, authority_key, passphrase_env)
    with open_store(db) as store:
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
        return
    sys.stdout.write(f"{info['revocation']} seq={info['seq']} revoked {key_id} ({reason.value})\n")


# --- sign ----------------------------------------------------------------------------


def sign(
    subject: Annotated[str, typer.Argument(help="Digest (or id) of the object to attest.")],
    key: KeyOption,
    db: DbOption = Path("ledger.db"),
    passphrase_env: PassphraseEnv = None,
    json_out: JsonOption = False,
) -> None:
    """Append a DSSE attestation by KEY over a stored object; warn if it would not verify."""
    from ledger.store.backends import open_store
    from ledger.trust.attestation import attest

    signer = _signer(key, passphrase_env)
    with open_store(db) as store:
        prepared = attest(store, _subject_digest(store, subject), signer)
        rows = _append_attestations(store, [prepared])
    if json_out:
        emit_json(rows[0])
        return
    row = rows[0]
    state = "new" if row["status"] == "new" else "already present"
    sys.stdout.write(
        f"{row['attestation']} seq={row['seq']} attestation of {row['subject']}"
        f" by {row['key_id']} {state}\n"
    )


# --- attestation ---------------------------------------------------------------------


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
    db: DbOption = Path("ledger.db"),
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
            digest = _subject_digest(store, subject)
        verdicts = check_subject_attestations(store, digest)
    _finish_check(digest, verdicts, json_out)


@attestation_app.command("export")
def attestation_export(
    attestation: Annotated[str, typer.Argument(help="Digest of the attestation object.")],
    db: DbOption = Path("ledger.db"),
    output: OutOption = None,
) -> None:
    """Print the full standard DSSE envelope (payload = the subject's stored bytes)."""
    from ledger.store.backends import open_store
    from ledger.trust.attestation import rebuild_envelope
    from ledger.trust.judgement import find_attestation

    with open_store(db, readonly=True) as store:
        envelope = rebuild_envelope(store, find_attestation(store, attestation))
    _write_out(envelope.to_json_bytes(), output)


def _read_envelope(name: str) -> Any:
    from ledger.cli.common import read_input
    from ledger.encoding.canonical import parse_strict
    from ledger.trust.dsse import parse_envelope

    return parse_envelope(parse_strict(read_input(name)))


@attestation_app.command("verify-envelope")
def attestation_verify_envelope(
    file: Annotated[str, typer.Argument(help="A full DSSE envelope (JSON file; - is stdin).")],
    db: DbOption = Path("ledger.db"),
    json_out: JsonOption = False,
) -> None:
    """Check an envelope from outside against the ledger, as if appended now (same rule)."""
    from ledger.encoding.digest import sha256_digest
    from ledger.store.backends import open_store
    from ledger.trust.judgement import check_envelope

    envelope = _read_envelope(file)
    with open_store(db, readonly=True) as store:
        verdicts = check_envelope(store, envelope)
    _finish_check(sha256_digest(envelope.payload), verdicts, json_out)


@attestation_app.command("import")
def attestation_import(
    file: Annotated[str, typer.Argument(help="A full DSSE envelope (JSON file; - is stdin).")],
    db: DbOption = Path("ledger.db"),
    json_out: JsonOption = False,
) -> None:
    """Store a full envelope over a stored object as detached attestation(s); warn on failures."""
    from ledger.store.backends import open_store
    from ledger.trust.attestation import detach_envelope

    envelope = _read_envelope(file)
    with open_store(db) as store:
        rows = _append_attestations(store, detach_envelope(store, envelope))
    if json_out:
        emit_json(rows)
        return
    for row in rows:
        sys.stdout.write(
            f"{row['attestation']} seq={row['seq']} attestation of {row['subject']}"
            f" by {row['key_id']} {row['status']}\n"
        )


# --- export --------------------------------------------------------------------------


@export_app.command("intoto")
def export_intoto(
    subject: Annotated[str, typer.Argument(help="Digest (or id) of the object.")],
    key: KeyOption,
    db: DbOption = Path("ledger.db"),
    passphrase_env: PassphraseEnv = None,
    output: OutOption = None,
) -> None:
    """Write an in-toto Statement v1 about the object in a DSSE envelope signed by KEY."""
    from ledger.store.backends import open_store
    from ledger.trust.attestation import intoto_export

    signer = _signer(key, passphrase_env)
    with open_store(db, readonly=True) as store:
        envelope = intoto_export(store, _subject_digest(store, subject), signer)
    _write_out(envelope.to_json_bytes(), output)


def register(app: typer.Typer) -> None:
    """Mount key, identity, attestation, export and sign on the root app."""
    app.add_typer(key_app, name="key")
    app.add_typer(identity_app, name="identity")
    app.add_typer(attestation_app, name="attestation")
    app.add_typer(export_app, name="export")
    app.command("sign")(sign)
