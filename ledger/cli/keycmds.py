"""Key files: ``key generate``, and the key options every signing command shares.

Every command that reads a private key (``--key``, ``--authority-key``) also takes
``--passphrase-env VAR``: the passphrase is read from that environment variable, never
from the command line. Private keys never enter the database.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import JsonOption, emit_json, new_app

if TYPE_CHECKING:
    from ledger.store.location import DbLocation
    from ledger.trust.keys import Ed25519Signer

key_app = new_app("Ed25519 key files (PKCS#8 PEM, mode 0600, optional passphrase).")

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


def signer_from_file(path: Path, passphrase_env: str | None) -> Ed25519Signer:
    from ledger.trust.keys import Ed25519Signer

    return Ed25519Signer.from_file(path, passphrase_from_env(passphrase_env))


def authority_signer(
    db: DbLocation, given: Path | None, passphrase_env: str | None
) -> Ed25519Signer:
    from ledger.cli.core import authority_key_path

    return signer_from_file(authority_key_path(db, given), passphrase_env)


@key_app.command("generate")
def key_generate(
    path: Annotated[Path, typer.Argument(help="Private key file to create (and PATH.pub).")],
    passphrase_env: PassphraseEnv = None,
    json_out: JsonOption = False,
) -> None:
    """Create an Ed25519 key pair (never overwrites); print its key id."""
    from ledger.api import generate_key

    key = generate_key(path, passphrase_from_env(passphrase_env))
    if json_out:
        emit_json(key.to_json())
        return
    sys.stdout.write(key.key_id + "\n")
