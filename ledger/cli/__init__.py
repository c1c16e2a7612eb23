"""The ``provledger`` command: the composition root.

``COMMANDS`` is the whole command tree as data: name -> the ``"module:attr"`` that
implements it and its one-line help. Nothing listed here is imported until its command
runs (``ledger.cli.lazy``), so ``provledger --help`` costs typer and rich only. This is
the only module of ``ledger`` that names ``verifiers`` and ``cohorts``: they are the
IDKMesh edge, mounted here beside the generic ledger commands. Nothing is installed:
each command calls the Python API (``ledger.api``, ``verifiers.api``, ``cohorts.api``),
which finds IDKMesh's additions to the core (admission rules, ``show`` notes, the
browse check) through this distribution's entry points (``ledger.plugins``) when first
needed, exactly as it does for any other Python caller.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Annotated, Any

import typer

from ledger.cli.common import Context, set_db_env, setup_before_commands
from ledger.cli.lazy import Lazy, LazyCommandGroup, LazySubgroup
from ledger.store.location import DbLocation, parse_location

COMMANDS: Mapping[str, Lazy | LazySubgroup] = {
    "init": Lazy(
        "ledger.cli.core:init",
        "Create a ledger, its log key and its authority key; print the log verifier key.",
    ),
    "append": Lazy(
        "ledger.cli.core:append",
        "Validate every input fully, then append all of them in one transaction.",
    ),
    "show": Lazy("ledger.cli.core:show", "Show one object by digest, legacy digest or id."),
    "log": Lazy(
        "ledger.cli.core:log",
        "List log entries in sequence order: seq, kind, full digest, time, object id.",
    ),
    "stats": Lazy(
        "ledger.cli.core:stats", "Entry counts by kind, sizes and the latest checkpoint."
    ),
    "migrate": Lazy(
        "ledger.cli.core:migrate",
        "Bring a ledger made by an earlier release to the current file layout, in place.",
    ),
    "checkpoint": Lazy(
        "ledger.cli.logcmds:checkpoint",
        "Sign the current tree head as a C2SP checkpoint and store it; collect cosignatures.",
    ),
    "verify": Lazy(
        "ledger.cli.logcmds:verify",
        "Audit the whole ledger: digests, canonical form, schemas, sequence, tree, checkpoints.",
    ),
    "sign": Lazy(
        "ledger.cli.attestationcmds:sign",
        "Append a DSSE attestation by KEY over a stored object.",
    ),
    "provenance": Lazy(
        "cohorts.cli:provenance_cmd",
        "Verify one VerificationResult's whole chain and say what its verdict can mean.",
    ),
    "run-verifier": Lazy(
        "verifiers.cli:run_verifier",
        "Judge a candidate under an EvaluatorPlan and record the run (exit 0 passed, 1 failed).",
    ),
    "calibrate": Lazy(
        "verifiers.cli:calibrate",
        "Judge every fixture candidate under every fixture plan and print the table.",
    ),
    "index": Lazy(
        "cohorts.browse.cli:index_cmd",
        "Project the ledger into a browse database for auditors (the ledger is only read).",
    ),
    "serve": Lazy(
        "cohorts.browse.cli:serve_cmd",
        "Serve the browse database read-only with Datasette (needs the optional web extra).",
    ),
    "proof": Lazy("ledger.cli.logcmds:proof_app", "Inclusion and consistency proofs (RFC 9162)."),
    "bundle": Lazy(
        "ledger.cli.bundlecmds:bundle_app",
        "Offline bundles: an object, its attestations, proofs and checkpoint.",
    ),
    "key": Lazy(
        "ledger.cli.keycmds:key_app",
        "Ed25519 key files (PKCS#8 PEM, mode 0600, optional passphrase).",
    ),
    "identity": Lazy(
        "ledger.cli.identitycmds:identity_app",
        "Verifier identities: register, list, show, revoke (authority-attested).",
    ),
    "attestation": Lazy(
        "ledger.cli.attestationcmds:attestation_app",
        "DSSE attestations stored in the ledger: check, export, import.",
    ),
    "export": Lazy(
        "ledger.cli.exportcmds:export_app", "Export ledger objects in interoperable formats."
    ),
    "witness": Lazy(
        "ledger.cli.witnesscmds:witness_app",
        "A C2SP tlog-witness: cosign checkpoints of logs that stay append-only.",
    ),
    "copy": Lazy(
        "ledger.cli.copycmds:copy",
        "Copy a ledger entry by entry between SQLite and PostgreSQL, with its checkpoints.",
    ),
    "import": LazySubgroup(
        "Import many documents at once.",
        {
            "jsonl": Lazy(
                "ledger.cli.importcmds:jsonl",
                "Validate every line like `append`; append the valid ones in ordered batches.",
            ),
            "idkmesh": Lazy(
                "cohorts.cli:import_idkmesh_cmd",
                "Record an IDKMesh tree as it is: every record, at any stage,"
                " with a summary per cohort.",
            ),
        },
    ),
    "cohort": Lazy(
        "cohorts.cli:cohort_app",
        "Benchmark cohorts: definition digests, freeze, burn, bind, audit.",
    ),
    "behavioral": Lazy(
        "verifiers.cli:behavioral_app",
        "Behavioral channel: evaluator-owned probes on a patched copy of a tree.",
    ),
}


#: Run once a command is about to run, then forgotten: what ``main`` was given as
#: ``before_command`` (``ledger.entry`` resumes the garbage collector it paused).
_BEFORE_COMMAND: list[Callable[[], None]] = []


def _before_command() -> None:
    while _BEFORE_COMMAND:
        _BEFORE_COMMAND.pop()()


class RootGroup(LazyCommandGroup):
    """The root group: ``COMMANDS``, errors mapped by ``ProvGroup``, ``before_command``
    run once a command is about to run (``--help`` and usage errors skip it)."""

    table = COMMANDS

    def invoke(self, ctx: Context) -> Any:  # what the command returns
        setup_before_commands(ctx, _before_command)
        return super().invoke(ctx)


app = typer.Typer(
    help="provledger: a content-addressed, verifiable provenance ledger for IDKMesh evidence.",
    cls=RootGroup,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


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
        DbLocation | None,
        typer.Option(
            "--db",
            parser=parse_location,
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


def main(before_command: Callable[[], None] | None = None) -> None:
    """Run the CLI on ``sys.argv``; ``before_command`` runs once a command is about to
    run (after every argument is parsed; never for ``--help`` or a usage error)."""
    if before_command is not None:
        _BEFORE_COMMAND.append(before_command)
    try:
        app(prog_name="provledger")
    finally:
        # Output still buffered goes now, while a reader that left (`log --limit 5 |
        # head -1`) can be told apart from a failure; at interpreter exit it would print
        # a traceback. The exit status stays the command's.
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            from ledger.cli.common import stdout_closed

            stdout_closed()
