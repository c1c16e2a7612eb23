"""Log commands: checkpoint, proof inclusion, proof consistency."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from ledger.cli.common import (
    BROWSE_CHECK,
    DEFAULT_DB,
    DbOption,
    DryRunOption,
    JsonOption,
    console,
    dry_run_note,
    emit_json,
    new_app,
    read_verifier_key,
)
from ledger.errors import CheckFailed, ProblemsReported, reported_like

proof_app = new_app("Inclusion and consistency proofs (RFC 9162).")


def checkpoint(
    db: DbOption = DEFAULT_DB,
    log_key: Annotated[
        Path | None, typer.Option("--log-key", help="Log private key (default: next to the db).")
    ] = None,
    witness: Annotated[
        list[str] | None,
        typer.Option(
            "--witness",
            help="Witness to ask for a cosignature: tlog-witness URL or local witness state"
            " file (repeatable).",
        ),
    ] = None,
    witness_key: Annotated[
        list[str] | None,
        typer.Option(
            "--witness-key",
            help="Verifier key of a URL witness (repeatable, required with a URL --witness):"
            " only cosignatures that verify under a key named here are stored.",
        ),
    ] = None,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Sign the current tree head as a C2SP checkpoint and store it; collect cosignatures.

    A cosignature is stored only if it verifies under a --witness-key (or, for a local
    witness, under its own key); any other line a witness returns is reported, not stored.
    With --dry-run nothing is stored and no witness is asked."""
    from ledger.cli.common import fail_line
    from ledger.cli.core import log_key_path
    from ledger.cli.witnesscmds import witness_keys
    from ledger.errors import UsageError
    from ledger.log.checkpoints import make_checkpoint
    from ledger.log.cosigning import collect, cosigned_note, is_url
    from ledger.store.backends import open_store
    from ledger.trust.keys import load_private_key

    trusted = witness_keys(witness_key)
    unkeyed = [w for w in witness or [] if is_url(w)] if not trusted else []
    if unkeyed:
        raise UsageError(
            f"--witness {unkeyed[0]}, got no --witness-key, expected the verifier key its"
            " cosignature must verify under"
        )
    outcomes = []
    # The ledger first: a path that is no ledger is reported as such, not as a key.
    with open_store(db, dry_run=dry_run) as store:
        key = load_private_key(log_key_path(db, log_key))
        row = make_checkpoint(store, key)
        origin = store.get_meta("origin")
        if witness and not dry_run:
            outcomes = collect(store, row, witness, trusted)
        note = cosigned_note(store, row)
    failed = [(o.witness, o.error) for o in outcomes if o.error is not None]
    if json_out:
        emit_json(
            {
                "origin": origin,
                "size": row.size,
                "root": row.root.hex(),
                "note": note.decode("utf-8"),
                "created_at": row.created_at,
                "witnesses": [o.to_json() for o in outcomes],
            }
        )
    else:
        sys.stdout.write(note.decode("utf-8"))
    dry_run_note(dry_run)
    for name, error in failed:
        typer.echo(fail_line(f"witness {name}: {error}"), err=True)
    if failed:
        raise reported_like([error for _, error in failed])


@proof_app.command("inclusion")
def inclusion(
    digest: Annotated[str, typer.Argument(help="Object digest (or legacy digest / id).")],
    db: DbOption = DEFAULT_DB,
    size: Annotated[
        int | None, typer.Option("--size", min=1, help="Tree size (default: newest checkpoint).")
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Prove that an object's entry is in the log."""
    from ledger.log.checkpoints import prove_inclusion
    from ledger.store.backends import open_store
    from ledger.store.resolve import resolve_stored

    with open_store(db, readonly=True) as store:
        obj = resolve_stored(store, digest)
        proof = prove_inclusion(store, obj.digest, size)
    data = proof.to_json()
    if json_out:
        emit_json(data)
        return
    out = console()
    out.print(f"entry      seq {data['index']} {data['kind']} {data['digest']}")
    out.print(f"tree size  {data['tree_size']}")
    out.print(f"root       {data['root']}")
    out.print(f"leaf hash  {data['leaf_hash']}")
    for i, h in enumerate(data["proof"]):
        out.print(f"proof[{i}]  {h}")
    out.print("checkpoint " + ("none at this size" if data["checkpoint"] is None else "signed"))


@proof_app.command("consistency")
def consistency(
    old_size: Annotated[int, typer.Argument(min=1, help="Older tree size.")],
    new_size: Annotated[
        int | None, typer.Argument(help="Newer tree size (default: newest checkpoint).")
    ] = None,
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Prove that the log at OLD_SIZE is a prefix of the log at NEW_SIZE."""
    from ledger.log.checkpoints import prove_consistency
    from ledger.store.backends import open_store

    with open_store(db, readonly=True) as store:
        proof = prove_consistency(store, old_size, new_size)
    data = proof.to_json()
    if json_out:
        emit_json(data)
        return
    out = console()
    out.print(f"old size {data['old_size']} root {data['old_root']}")
    out.print(f"new size {data['new_size']} root {data['new_root']}")
    for i, h in enumerate(data["proof"]):
        out.print(f"proof[{i}] {h}")


def verify(
    db: DbOption = DEFAULT_DB,
    log_key: Annotated[
        str | None,
        typer.Option(
            "--log-key",
            help="Trusted log verifier key (signed-note form, or a file holding it).",
        ),
    ] = None,
    authority_key: Annotated[
        Path | None,
        typer.Option(
            "--authority-key",
            help="Trusted authority public key file (PEM, e.g. ledger.db.authority.key.pub).",
        ),
    ] = None,
    from_checkpoint: Annotated[
        Path | None,
        typer.Option("--from-checkpoint", help="A checkpoint note saved earlier by an auditor."),
    ] = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers", min=1, help="Processes for per-object checks (default: automatic)."
        ),
    ] = None,
    browse: Annotated[
        Path | None,
        typer.Option("--browse", help="Also check that this browse database matches the ledger."),
    ] = None,
    witness_key: Annotated[
        list[str] | None,
        typer.Option(
            "--witness-key",
            help="Trusted witness verifier key (repeatable): the newest checkpoint must be"
            " cosigned by --quorum of them.",
        ),
    ] = None,
    quorum: Annotated[
        int | None,
        typer.Option("--quorum", min=1, help="Cosignatures required (default: every key)."),
    ] = None,
    since_checkpoint: Annotated[
        Path | None,
        typer.Option(
            "--since-checkpoint",
            help="A checkpoint note you verified before: check only the entries appended"
            " after it, and the consistency proof to it.",
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Audit the whole ledger: digests, canonical form, schemas, sequence, tree, checkpoints.

    With --browse FILE, also re-derive the projection and compare it with FILE; the JSON
    output then has "browse": {"file", "ok", "findings": [{"code", "table", "message"}]}.
    """
    from ledger.audit.full import audit
    from ledger.cli.common import progress
    from ledger.store.backends import open_store

    trusted = read_verifier_key(log_key) if log_key else None
    trusted_authority = None
    if authority_key is not None:
        import base64

        from ledger.trust.keys import load_public_key, public_key_raw

        raw = public_key_raw(load_public_key(authority_key))
        trusted_authority = base64.b64encode(raw).decode("ascii")
    saved = None
    if from_checkpoint is not None:
        from ledger.cli.common import read_input

        saved = read_input(str(from_checkpoint))
    from ledger.cli.witnesscmds import required_quorum, witness_keys

    witnesses = witness_keys(witness_key)
    required = required_quorum(quorum, len(witnesses))
    witness_report = None
    since = None
    if since_checkpoint is not None:
        from ledger.cli.common import read_input

        since = read_input(str(since_checkpoint))
    with open_store(db, readonly=True) as store:
        if witnesses:
            from ledger.audit.witnesses import check_witnesses

            witness_report = check_witnesses(store, witnesses, required)
        total = store.size()
        with progress(total, "verifying", enabled=not json_out) as advance:
            report = audit(
                store,
                trusted_key=trusted,
                trusted_authority=trusted_authority,
                from_checkpoint=saved,
                advance=advance,
                workers=workers,
                since_checkpoint=since,
            )
        browse_findings = None
        if browse is not None:
            if not BROWSE_CHECK:
                raise CheckFailed("verify --browse, got no browse check installed, expected one")
            browse_findings = BROWSE_CHECK[0](store, browse)
    if witness_report is not None:
        report.findings.extend(witness_report.findings)
    ok = report.ok and not browse_findings
    if json_out:
        out_json = report.to_json()
        if browse_findings is not None:
            out_json["browse"] = {
                "file": str(browse),
                "ok": not browse_findings,
                "findings": browse_findings,
            }
        if witness_report is not None:
            out_json["witnesses"] = witness_report.info
        emit_json(out_json)
    else:
        out = console()
        for f in report.findings:
            where = f" seq {f.seq}" if f.seq is not None else ""
            what = f" {f.digest}" if f.digest else ""
            use = f" (use: {f.remedy})" if f.remedy else ""
            out.print(f"FAIL {f.code}{where}{what}: {f.message}{use}", markup=False)
        if witness_report is not None and witness_report.info["checkpoint"] is not None:
            info = witness_report.info
            names = ", ".join(c["witness"] for c in info.get("cosigners", [])) or "nobody"
            out.print(
                f"witnesses: checkpoint size {info['checkpoint']} cosigned by {names}"
                f" (quorum {info['quorum']}; {info['unwitnessed_entries']} entries after it)",
                markup=False,
            )
        status = "clean" if report.ok else f"{len(report.findings)} problem(s)"
        since_note = ""
        if report.since_checkpoint is not None and report.since_checkpoint["size"] > 0:
            since_note = f" (checked from entry {report.since_checkpoint['size']} on)"
        out.print(
            f"verified {report.entries} entries{since_note}, {report.checkpoints_checked}"
            f" checkpoints, root {report.root}: {status}"
        )
        if browse_findings is not None:
            for bf in browse_findings:
                out.print(f"FAIL {bf['code']} {bf['table']}: {bf['message']}", markup=False)
            verdict = "matches the ledger" if not browse_findings else "does NOT match the ledger"
            out.print(f"browse database {browse} {verdict}", markup=False)
    if not ok:
        raise ProblemsReported(f"{len(report.findings)} problem(s)")
