"""Export ledger objects in interoperable formats: ``export intoto``.

Exported documents are written as exact bytes (``write_out``), to stdout or a file.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import DEFAULT_DB, DbOption, new_app
from ledger.cli.keycmds import KeyOption, PassphraseEnv, signer_from_file

if TYPE_CHECKING:
    pass

export_app = new_app("Export ledger objects in interoperable formats.")

OutOption = Annotated[
    Path | None, typer.Option("-o", "--output", help="Write to FILE (exact bytes) not stdout.")
]


def write_out(data: bytes, output: Path | None) -> None:
    if output is None:
        sys.stdout.buffer.write(data + b"\n")
        sys.stdout.buffer.flush()
    else:
        from ledger.files import write_output

        write_output(output, data)


@export_app.command("intoto")
@export_app.command("intoto")
def export_intoto(
    subject: Annotated[str, typer.Argument(help="Digest (or id) of the object.")],
    key: KeyOption,
    db: DbOption = DEFAULT_DB,
    passphrase_env: PassphraseEnv = None,
    output: OutOption = None,
) -> None:
    """Write an in-toto Statement v1 about the object in a DSSE envelope signed by KEY."""
    from ledger.api import open_ledger

    signer = signer_from_file(key, passphrase_env)
    with open_ledger(db, readonly=True) as book:
        envelope = book.export_intoto(subject, signer)
    write_out(envelope, output)
