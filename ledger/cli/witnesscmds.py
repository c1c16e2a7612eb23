"""``provledger witness``: run a C2SP tlog-witness for provledger logs.

A witness is a state file (default ``witness.json``, or ``$PROVLEDGER_WITNESS``) with its
private key beside it (``<state>.key``, ``<state>.key.pub``). It is kept outside any
ledger: its whole point is to remember what the log showed it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import JsonOption, console, emit_json, new_app, read_verifier_key

if TYPE_CHECKING:
    from ledger.log.cosignature import WitnessKey

witness_app = new_app("A C2SP tlog-witness: cosign checkpoints of logs that stay append-only.")

StateOption = Annotated[
    Path,
    typer.Option(
        "--state",
        envvar="PROVLEDGER_WITNESS",
        help="Witness state file (default ./witness.json, or $PROVLEDGER_WITNESS).",
        show_default=False,
    ),
]


def read_key_text(value: str) -> str:
    """A verifier key given inline or as a file holding it."""
    from ledger.errors import KeyFileError

    path = Path(value)
    if "+" not in value and path.exists():
        if not path.is_file():
            raise KeyFileError(f"key file {value}, got no regular file, expected a verifier key")
        from ledger.bounded import KEY_LIMIT, read_bounded

        data = read_bounded(path, KEY_LIMIT, "key file")[:4096]
        try:
            return data.decode("utf-8").strip()
        except UnicodeDecodeError:
            raise KeyFileError(
                f"key file {value}, got non-UTF-8 bytes, expected a verifier key line"
            ) from None
    return value.strip()


def witness_keys(values: list[str] | None) -> list[WitnessKey]:
    """Parse ``--witness-key`` values (inline or a file holding the key)."""
    from ledger.log.cosignature import parse_witness_key

    return [parse_witness_key(read_key_text(v)) for v in values or []]


@witness_app.command("init")
def init(
    name: Annotated[str, typer.Argument(help="Witness name (key name), e.g. witness.example/w1.")],
    state: StateOption = Path("witness.json"),
    log_key: Annotated[
        list[str] | None,
        typer.Option(
            "--log-key",
            help="Verifier key of a log to witness, or its <db>.log.key.pub (repeatable).",
        ),
    ] = None,
    json_out: JsonOption = False,
) -> None:
    """Create a witness: an Ed25519 key and a state file. Prints the witness verifier key."""
    from ledger.api.witness import create_witness

    # A log's key may be its PEM file (<db>.log.key.pub, named by the ledger beside it).
    created = create_witness(state, name, [read_verifier_key(k) for k in log_key or []])
    if json_out:
        emit_json(created.to_json())
        return
    out = console()
    out.print(f"created witness {name} in {state} (key {created.key_file})", markup=False)
    for origin in created.logs:
        out.print(f"witnessing log  {origin}", markup=False)
    out.print("witness verifier key (give this to log verifiers):", markup=False)
    sys.stdout.write(created.verifier_key + "\n")


@witness_app.command("add-log")
def add_log(
    log_key: Annotated[
        str, typer.Argument(help="Verifier key of the log, a file holding it, or <db>.log.key.pub.")
    ],
    state: StateOption = Path("witness.json"),
) -> None:
    """Start witnessing a log (origin = the key's name)."""
    from ledger.api.witness import trust_log

    sys.stdout.write(f"witnessing log {trust_log(state, read_verifier_key(log_key)).origin}\n")


@witness_app.command("show")
def show(state: StateOption = Path("witness.json"), json_out: JsonOption = False) -> None:
    """Print the witness's key and, per log, the last checkpoint it cosigned."""
    from ledger.api.witness import witness_state

    current = witness_state(state)
    if json_out:
        emit_json(current.to_json())
        return
    out = console()
    out.print(f"witness {current.name}", markup=False)
    out.print(f"key     {current.verifier_key}", markup=False)
    for origin, view in sorted(current.logs.items()):
        where = "nothing cosigned yet" if view.size is None else f"cosigned size {view.size}"
        out.print(f"log     {origin}: {where}", markup=False)


@witness_app.command("latest")
def latest(
    origin: Annotated[
        str | None, typer.Argument(help="Log origin (default: the only log witnessed).")
    ] = None,
    state: StateOption = Path("witness.json"),
) -> None:
    """Print the last checkpoint this witness cosigned (with its cosignature).

    An auditor saves it and runs ``provledger verify --from-checkpoint`` with it: a ledger
    truncated below what the witness saw fails, even if re-grown and never re-checkpointed.
    """
    from ledger.api.witness import latest_cosigned

    sys.stdout.write(latest_cosigned(state, origin).decode("utf-8"))


@witness_app.command("cosign")
def cosign_cmd(
    checkpoint: Annotated[str, typer.Argument(help="Signed checkpoint note file; - is stdin.")],
    proof: Annotated[
        str | None,
        typer.Option(
            "--proof",
            help="Consistency proof from the size this witness last cosigned"
            " (`proof consistency --json` output, or 'old N' + base64 lines).",
        ),
    ] = None,
    state: StateOption = Path("witness.json"),
    json_out: JsonOption = False,
) -> None:
    """Verify a checkpoint against what this witness saw, record it, print the cosignature."""
    from ledger.api.witness import cosign_checkpoint
    from ledger.cli.common import read_input

    note = read_input(checkpoint, 1 << 20)
    proof_data = None if proof is None else read_input(proof, 1 << 20)
    done = cosign_checkpoint(state, note, proof_data, proof_name=proof or "")
    if json_out:
        emit_json(done.to_json())
        return
    sys.stdout.write(done.line)


@witness_app.command("serve")
def serve(
    state: StateOption = Path("witness.json"),
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="0 picks a port.")] = 0,
    prefix: Annotated[str, typer.Option("--prefix", help="URL prefix of the API.")] = "",
) -> None:
    """Serve the C2SP tlog-witness HTTP API (POST <prefix>/add-checkpoint) until stopped."""
    from ledger.api.witness import witness_server

    server = witness_server(state, host=host, port=port, prefix=prefix)
    sys.stdout.write(f"witness {server.name} listening on {server.url}\n")
    sys.stdout.flush()
    server.serve_forever()


def register(app: typer.Typer) -> None:
    """Mount ``provledger witness``."""
    app.add_typer(witness_app, name="witness")
