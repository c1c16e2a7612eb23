"""The ``provledger`` command: the composition root.

This is the only module of ``ledger`` that may import ``verifiers`` and ``cohorts``;
it mounts their typer sub-apps.
"""

from __future__ import annotations

from ledger.cli.common import new_app

app = new_app("provledger: a content-addressed, verifiable provenance ledger for IDKMesh evidence.")


def _mount() -> None:
    from ledger.cli import bundlecmds, core, logcmds

    core.register(app)
    logcmds.register(app)
    bundlecmds.register(app)
    __import__("ledger.cli.identity", fromlist=["register"]).register(app)
    __import__("ledger.cli.importcmds", fromlist=["register"]).register(app)
    importcmds = __import__("ledger.cli.importcmds", fromlist=["import_app"])
    __import__("cohorts.cli", fromlist=["register"]).register(app, importcmds.import_app)
    __import__("verifiers.cli", fromlist=["register"]).register(app)


_mount()


def main() -> None:
    """Console-script entry point."""
    app(prog_name="provledger")
