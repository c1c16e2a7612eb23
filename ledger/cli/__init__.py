"""The ``provledger`` command: the composition root.

This is the only module of ``ledger`` that may import ``verifiers`` and ``cohorts``;
it mounts their typer sub-apps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ledger.cli.common import new_app, set_db_env
from ledger.store.location import db_location

app = new_app("provledger: a content-addressed, verifiable provenance ledger for IDKMesh evidence.")


def _print_version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("provledger")
        except PackageNotFoundError:  # running from a source tree that is not installed
            text = "unknown"
        typer.echo(f"provledger {text}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    db: Annotated[
        Path | None,
        typer.Option(
            "--db",
            parser=db_location,
            help="Ledger file or postgresql:// URL for the command (default ./ledger.db,"
            " or $PROVLEDGER_DB);"
            " also accepted after the subcommand.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """provledger: a content-addressed, verifiable provenance ledger for IDKMesh evidence."""
    if db is not None:
        set_db_env(ctx, db)


def _mount() -> None:
    from ledger.cli import bundlecmds, core, logcmds

    core.register(app)
    logcmds.register(app)
    bundlecmds.register(app)
    __import__("ledger.cli.copycmds", fromlist=["register"]).register(app)
    __import__("ledger.cli.identity", fromlist=["register"]).register(app)
    __import__("ledger.cli.importcmds", fromlist=["register"]).register(app)
    __import__("ledger.cli.witnesscmds", fromlist=["register"]).register(app)
    importcmds = __import__("ledger.cli.importcmds", fromlist=["import_app"])
    __import__("cohorts.cli", fromlist=["register"]).register(app, importcmds.import_app)
    __import__("verifiers.cli", fromlist=["register"]).register(app)
    browse = __import__("cohorts.browse.cli", fromlist=["register"])
    browse.register(app)
    logcmds.set_browse_check(browse.browse_findings)


_mount()


def main() -> None:
    """Console-script entry point."""
    app(prog_name="provledger")
