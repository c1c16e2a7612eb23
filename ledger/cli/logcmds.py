"""Log commands: checkpoint, proof inclusion, proof consistency."""

from __future__ import annotations

import sys
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
    ledger_origin,
    new_app,
    read_verifier_key,
)
from ledger.errors import ProblemsReported, reported_for

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
    from ledger.api import open_ledger
    from ledger.cli.common import fail_line
    from ledger.cli.witnesscmds import read_key_text

    trusted = [read_key_text(k) for k in witness_key or []]
    # The ledger first: a path that is no ledger is reported as such, not as a key.
    with open_ledger(db, dry_run=dry_run) as book:
        done = book.checkpoint(log_key=log_key, witnesses=witness or (), witness_keys=trusted)
    if json_out:
        emit_json(done.to_json())
    else:
        sys.stdout.write(done.note)
    dry_run_note(dry_run)
    failed = [w for w in done.witnesses if not w.ok]
    for answer in failed:
        typer.echo(fail_line(f"witness {answer.witness}: {answer.error}"), err=True)
    if failed:
        raise reported_for([w.exit_code or 1 for w in failed])


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
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        proof = book.inclusion_proof(digest, size=size)
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
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        proof = book.consistency_proof(old_size, new_size)
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
            help="Trusted log verifier key (signed-note form, or a file holding it, or the"
            " log's PEM public key file <db>.log.key.pub).",
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
    from ledger.api import open_ledger
    from ledger.cli.common import progress, read_input
    from ledger.cli.witnesscmds import read_key_text

    # Every input is read before the ledger is opened (a missing key file is named first).
    # A PEM public key (``<db>.log.key.pub``) is named with the ledger's origin: the
    # checkpoints must then carry that origin and verify under that key.
    trusted = read_verifier_key(log_key, lambda: ledger_origin(db)) if log_key else None
    saved = None if from_checkpoint is None else read_input(str(from_checkpoint))
    since = None if since_checkpoint is None else read_input(str(since_checkpoint))
    keys = [read_key_text(k) for k in witness_key or []]
    with (
        open_ledger(db, readonly=True) as book,
        progress(book.store.size(), "verifying", enabled=not json_out) as advance,
    ):
        report = book.verify(
            log_key=trusted,
            authority_key=authority_key,
            from_checkpoint=saved,
            since_checkpoint=since,
            witness_keys=keys,
            quorum=quorum,
            workers=workers,
            browse=browse,
            progress=advance,
        )
    if json_out:
        emit_json(report.to_json())
    else:
        out = console()
        for f in report.findings:
            where = f" seq {f.seq}" if f.seq is not None else ""
            what = f" {f.digest}" if f.digest else ""
            use = f" (use: {f.remedy})" if f.remedy else ""
            out.print(f"FAIL {f.code}{where}{what}: {f.message}{use}", markup=False)
        witnessed = report.witnesses
        if witnessed is not None and witnessed["checkpoint"] is not None:
            cosigners = witnessed.get("cosigners")
            names = (
                ", ".join(str(c["witness"]) for c in cosigners if isinstance(c, dict))
                if isinstance(cosigners, list)
                else ""
            ) or "nobody"
            out.print(
                f"witnesses: checkpoint size {witnessed['checkpoint']} cosigned by {names}"
                f" (quorum {witnessed['quorum']}; {witnessed['unwitnessed_entries']} entries"
                " after it)",
                markup=False,
            )
        audit_ok = not report.findings
        status = "clean" if audit_ok else f"{len(report.findings)} problem(s)"
        since_note = ""
        start = None if report.since_checkpoint is None else report.since_checkpoint.get("size")
        if isinstance(start, int) and start > 0:
            since_note = f" (checked from entry {start} on)"
        out.print(
            f"verified {report.entries} entries{since_note}, {report.checkpoints_checked}"
            f" checkpoints, root {report.root}: {status}"
        )
        if report.browse is not None:
            for bf in report.browse_findings:
                out.print(f"FAIL {bf.code} {bf.table}: {bf.message}", markup=False)
            verdict = (
                "matches the ledger" if not report.browse_findings else "does NOT match the ledger"
            )
            out.print(f"browse database {browse} {verdict}", markup=False)
    if not report.ok:
        raise ProblemsReported(f"{len(report.findings)} problem(s)")
