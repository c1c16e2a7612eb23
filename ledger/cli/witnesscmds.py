"""``provledger witness``: run a C2SP tlog-witness for provledger logs.

A witness is a state file (default ``witness.json``, or ``$PROVLEDGER_WITNESS``) with its
private key beside it (``<state>.key``, ``<state>.key.pub``). It is kept outside any
ledger: its whole point is to remember what the log showed it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ledger.cli.common import JsonOption, console, emit_json, new_app, read_verifier_key

if TYPE_CHECKING:
    from ledger.log.cosignature import WitnessKey
    from ledger.log.note import Checkpoint

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
    from ledger.log.witness import create_witness, key_path

    # A log's key may be its PEM file (<db>.log.key.pub, named by the ledger beside it).
    keys = [read_verifier_key(k) for k in log_key or []]
    created, identity = create_witness(state, name, keys)
    info = {
        "state": str(state),
        "key_file": str(key_path(state)),
        "name": created.name,
        "verifier_key": identity.vkey(),
        "logs": sorted(created.logs),
    }
    if json_out:
        emit_json(info)
        return
    out = console()
    out.print(f"created witness {name} in {state} (key {key_path(state)})", markup=False)
    for origin in info["logs"]:
        out.print(f"witnessing log  {origin}", markup=False)
    out.print("witness verifier key (give this to log verifiers):", markup=False)
    sys.stdout.write(identity.vkey() + "\n")


@witness_app.command("add-log")
def add_log(
    log_key: Annotated[
        str, typer.Argument(help="Verifier key of the log, a file holding it, or <db>.log.key.pub.")
    ],
    state: StateOption = Path("witness.json"),
) -> None:
    """Start witnessing a log (origin = the key's name)."""
    from ledger.log.note import parse_verifier_key
    from ledger.log.witness import WitnessFiles, trust_log

    key = read_verifier_key(log_key)
    trust_log(WitnessFiles(state), key)
    sys.stdout.write(f"witnessing log {parse_verifier_key(key)[0]}\n")


@witness_app.command("show")
def show(state: StateOption = Path("witness.json"), json_out: JsonOption = False) -> None:
    """Print the witness's key and, per log, the last checkpoint it cosigned."""
    from ledger.log.witness import WitnessFiles

    current = WitnessFiles(state).read()
    data = current.to_json()
    if json_out:
        emit_json(data)
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
    from ledger.errors import NotFound
    from ledger.log.witness import WitnessFiles

    logs = WitnessFiles(state).read().logs
    if origin is None and len(logs) != 1:
        raise NotFound(f"log origin, got none, expected one of {sorted(logs)}")
    name = origin if origin is not None else next(iter(logs))
    view = logs.get(name)
    if view is None or view.note is None:
        raise NotFound(f"cosigned checkpoint of {name!r}, got none, expected one")
    sys.stdout.write(view.note.decode("utf-8"))


def _parse_proof(data: bytes, source: str) -> tuple[int, tuple[bytes, ...], int | None]:
    """``(old size, hashes, new size or None)`` from a proof file.

    Accepts the output of ``provledger proof consistency --json`` or the head of a
    tlog-witness request (``old N`` then base64 hashes).
    """
    from ledger.errors import InputError
    from ledger.log.witness import parse_request

    text = data.strip()
    if text.startswith(b"{"):
        import json

        try:
            value: Any = json.loads(text)  # decoded bytes, narrowed below
            old, new = value["old_size"], value["new_size"]
            hashes = tuple(bytes.fromhex(h) for h in value["proof"])
        except (ValueError, KeyError, TypeError):
            raise InputError(
                f"proof file {source}, got malformed JSON, expected"
                " `provledger proof consistency --json` output"
            ) from None
        if not (isinstance(old, int) and isinstance(new, int)):
            raise InputError(f"proof file {source}, got non-integer sizes, expected integers")
        return old, hashes, new
    request = parse_request(text + b"\n\nx")
    return request.old_size, request.proof, None


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
    from ledger.cli.common import read_input
    from ledger.errors import InputError
    from ledger.log.witness import AddCheckpoint, WitnessFiles

    note = read_input(checkpoint, 1 << 20)
    old, new = 0, None
    hashes: tuple[bytes, ...] = ()
    if proof is not None:
        old, hashes, new = _parse_proof(read_input(proof, 1 << 20), proof)
    files = WitnessFiles(state)
    checkpoint_body = _checkpoint_or_none(note)
    if proof is None and checkpoint_body is not None:
        # No proof: only a first checkpoint, or the same size again, can be cosigned.
        view = files.read().logs.get(checkpoint_body.origin)
        if view is not None and view.size is not None:
            old = view.size
    if new is not None and checkpoint_body is not None and new != checkpoint_body.size:
        raise InputError(
            f"proof new size, got {new}, expected the checkpoint's {checkpoint_body.size}"
        )
    # A malformed note is refused by the witness itself (400, exit 3).
    result = files.add_checkpoint(AddCheckpoint(old, hashes, note))
    line = result.cosignature.line()
    if json_out:
        emit_json(
            {
                "origin": result.checkpoint.origin,
                "size": result.checkpoint.size,
                "root": result.checkpoint.root_hash.hex(),
                "timestamp": result.cosignature.timestamp,
                "cosignature": line.rstrip("\n"),
            }
        )
        return
    sys.stdout.write(line)


def _checkpoint_or_none(note: bytes) -> Checkpoint | None:
    from ledger.errors import LedgerError
    from ledger.log.note import parse_checkpoint, parse_note

    try:
        return parse_checkpoint(parse_note(note).body)
    except LedgerError:
        return None


@witness_app.command("serve")
def serve(
    state: StateOption = Path("witness.json"),
    host: Annotated[str, typer.Option("--host", help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="0 picks a port.")] = 0,
    prefix: Annotated[str, typer.Option("--prefix", help="URL prefix of the API.")] = "",
) -> None:
    """Serve the C2SP tlog-witness HTTP API (POST <prefix>/add-checkpoint) until stopped."""
    from ledger.log.witness import WitnessFiles
    from ledger.log.witness_http import make_server

    files = WitnessFiles(state)
    server = make_server(files, host, port, prefix)
    bound_host, bound_port = server.server_address[:2]
    base = "/" + prefix.strip("/") if prefix.strip("/") else ""
    sys.stdout.write(
        f"witness {files.read().name} listening on http://{bound_host!s}:{bound_port}{base}\n"
    )
    sys.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def register(app: typer.Typer) -> None:
    """Mount ``provledger witness``."""
    app.add_typer(witness_app, name="witness")
