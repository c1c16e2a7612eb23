"""The ``provledger`` console script: the CLI, with the cyclic garbage collector paused
while the process starts.

Start-up (importing typer and a command's module, building the command, parsing the
arguments, and, when that is all there is to do, printing a help page or a usage error)
creates tens of thousands of objects that live as long as the process: module
namespaces, classes, functions, the command tree. The collector, run every 700 new
container objects, traverses them again and again and finds nothing to free; on a help
page that is several ms of CPU. It is paused here, before ``ledger.cli`` is imported,
and resumed just before a command runs (``ledger.cli.main``'s ``before_command``), so
every command runs with the collector exactly as before. A process that only prints
help or a usage error exits with it paused. A collector already disabled by the caller
is left disabled.
"""

from __future__ import annotations

import gc


def main() -> None:
    """Console-script entry point (``provledger``, and ``python -m ledger``)."""
    paused = gc.isenabled()
    gc.disable()
    from ledger.cli import main as cli_main

    cli_main(before_command=gc.enable if paused else None)
