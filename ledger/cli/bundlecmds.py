"""Bundle commands: export an object with its proofs; verify a bundle with no database."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import (
    DEFAULT_DB,
    DbOption,
    JsonOption,
    console,
    emit_json,
    new_app,
    read_verifier_key,
)

if TYPE_CHECKING:
    from ledger.log.bundle import VerifiedBundle

bundle_app = new_app("Offline bundles: an object, its attestations, proofs and checkpoint.")


@bundle_app.command("export")
def export(
    ref: Annotated[str, typer.Argument(help="Object digest (or legacy digest / id).")],
    output: Annotated[
        str, typer.Option("-o", "--output", help="Bundle file to write; - is stdout.")
    ],
    with_inputs: Annotated[
        bool,
        typer.Option(
            "--with-inputs",
            help="Also carry what a replay of the VerificationResult reads (WorkUnit, plan,"
            " manifest, worker files), each proven, for `bundle verify --replay`.",
        ),
    ] = False,
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Write one object, its attestations and their proofs against the newest checkpoint."""
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        exported = book.export_bundle(ref, with_inputs=with_inputs)
    data, verified, omitted = exported.data, exported.verified, exported.omitted
    if omitted:
        typer.echo(
            f"note: {len(omitted)} attestation(s) appended after checkpoint size"
            f" {verified.checkpoint.size} left out; run `provledger checkpoint` to include them",
            err=True,
        )
    if output == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    from ledger.files import write_output

    write_output(Path(output), data)
    if json_out:
        emit_json(exported.to_json(output))
        return
    carried = "" if verified.inputs is None else f", {len(verified.inputs)} input(s)"
    sys.stdout.write(
        f"wrote {output}: {verified.subject.kind} {verified.subject.digest}"
        f" seq {verified.subject.index},"
        f" {len(verified.attestations)} attestation(s){carried},"
        f" checkpoint size {verified.checkpoint.size}\n"
    )


@bundle_app.command("verify")
def verify(
    file: Annotated[str, typer.Argument(help="Bundle file; - reads stdin.")],
    log_key: Annotated[
        str,
        typer.Option(
            "--log-key",
            help="Trusted log verifier key (signed-note form, or a file holding it, or the"
            " log's PEM public key file <db>.log.key.pub).",
        ),
    ],
    witness_key: Annotated[
        list[str] | None,
        typer.Option(
            "--witness-key",
            help="Trusted witness verifier key (repeatable): the checkpoint must carry"
            " --quorum valid cosignatures by them.",
        ),
    ] = None,
    quorum: Annotated[
        int | None,
        typer.Option("--quorum", min=1, help="Cosignatures required (default: every key)."),
    ] = None,
    replay: Annotated[
        bool,
        typer.Option(
            "--replay",
            help="Also re-run the verifier the VerificationResult names on the inputs the"
            " bundle carries (export --with-inputs) and compare the bytes.",
        ),
    ] = False,
    json_out: JsonOption = False,
) -> None:
    """Check a bundle offline: bytes, digests, entry records, proofs and checkpoint signature.

    With --replay, also re-judge the VerificationResult from the carried inputs, with no
    database: reproduced, differs (naming the members) or cannot replay (naming what the
    bundle lacks); exit 1 unless reproduced.
    """
    from ledger.api import MAX_BUNDLE_BYTES, BundleError, verify_bundle
    from ledger.api.ledger import required_quorum
    from ledger.cli.common import read_input
    from ledger.cli.witnesscmds import read_key_text, witness_keys

    witnesses = [read_key_text(v) for v in witness_key or []]
    # The witness keys and the quorum are refused (exit 3) before the bundle is read.
    required_quorum(quorum, len(witness_keys(witnesses)))
    # One byte over the limit still reaches verify_bundle, which names the part (exit 1).
    data = read_input(file, MAX_BUNDLE_BYTES + 1)
    key = read_verifier_key(log_key, lambda: _checkpoint_origin(data))
    try:
        verified = verify_bundle(data, key, witness_keys=witnesses, quorum=quorum)
    except BundleError as exc:
        if json_out:
            emit_json({"ok": False, "part": exc.part, "error": exc.detail})
        raise
    replayed = _replay(verified) if replay else None
    if json_out:
        emit_json({**verified.to_json(), **({} if replayed is None else {"replay": replayed})})
        _replay_exit(replayed)
        return
    out = console()
    subject, cp = verified.subject, verified.checkpoint
    out.print(f"object      {subject.kind} {subject.digest}", markup=False)
    out.print(f"entry       seq {subject.index} appended {subject.appended_at}", markup=False)
    out.print(f"checkpoint  {cp.origin} size {cp.size} root {cp.root_hash.hex()}", markup=False)
    for att in verified.attestations:
        out.print(f"attestation {att.digest} seq {att.index}", markup=False)
    if verified.witnesses is not None:
        for witness, stamp in verified.witnesses.valid:
            out.print(f"cosigned    {witness.label} at {stamp}", markup=False)
    elif verified.cosignatures:
        out.print(
            f"cosigned    {verified.cosignatures} witness line(s), not checked (no --witness-key)",
            markup=False,
        )
    if verified.inputs is not None:
        out.print(f"inputs      {len(verified.inputs)} carried, each proven", markup=False)
    out.print(f"bundle ok: {len(verified.attestations)} attestation(s) verified", markup=False)
    if replayed is not None:
        out.print(f"replay      {replayed['status']}: {replayed['reason']}", markup=False)
    _replay_exit(replayed)


def _replay(verified: VerifiedBundle) -> dict[str, object]:
    """The subject re-judged from the carried inputs (``ledger.api.replay_bundle``)."""
    from ledger.api import replay_bundle

    return replay_bundle(verified)


def _replay_exit(replayed: dict[str, object] | None) -> None:
    from ledger.errors import ProblemsReported

    if replayed is not None and replayed.get("status") != "reproduced":
        raise ProblemsReported(f"replay {replayed.get('status')}")


def _checkpoint_origin(data: bytes) -> str | None:
    """The origin line of a bundle's checkpoint (to name a PEM public key), or None."""
    from ledger.log.bundle import BundleError, decode_bundle

    try:
        note = decode_bundle(data).subject.proof.checkpoint
    except BundleError:
        return None  # verify_bundle says what is wrong with it
    first = note.split(b"\n", 1)[0]
    return first.decode("utf-8", "replace") or None


def register(app: typer.Typer) -> None:
    """Mount ``provledger bundle``."""
    app.add_typer(bundle_app, name="bundle")
