"""CLI commands of the verifiers package: ``run-verifier``, ``calibrate``, ``behavioral run``.

Mounted lazily by the composition root's command table (``ledger.cli.COMMANDS``).
Every command appends everything it records in ONE ``append_many`` call (see
``verifiers.record``), so a ledger holds a run completely or not at all; a refusal
(e.g. ``SovereigntyError``, exit 4) is raised before anything is appended.
Exit codes: 0 passed / all expectations met; 1 failed; 3 bad input; 4 refused.
The JSON shapes are documented in docs/VERIFIERS.md ("Recording runs").
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ledger.cli.common import (
    DEFAULT_DB,
    DbOption,
    DryRunOption,
    JsonOption,
    dry_run_note,
    emit_json,
    new_app,
)
from ledger.errors import ProblemsReported

if TYPE_CHECKING:
    from ledger.trust.judgement import AttestationVerdict
    from ledger.trust.keys import Ed25519Signer

#: The run's ``--json`` document (built by the run, of mixed member types), read back
#: field by field to print it for a person.
RunInfo = dict[str, Any]

behavioral_app = new_app("Behavioral channel: evaluator-owned probes on a patched copy of a tree.")

PassphraseEnv = Annotated[
    str | None,
    typer.Option(
        "--passphrase-env",
        metavar="VAR",
        help="Read the private key's passphrase from environment variable VAR.",
    ),
]


# --- helpers -------------------------------------------------------------------------


def _signer(path: Path, passphrase_env: str | None) -> Ed25519Signer:
    from ledger.cli.keycmds import passphrase_from_env
    from ledger.trust.keys import Ed25519Signer

    return Ed25519Signer.from_file(path, passphrase_from_env(passphrase_env))


def _out(line: str) -> None:
    sys.stdout.write(line + "\n")


# --- run-verifier --------------------------------------------------------------------


def run_verifier(
    work_unit: Annotated[Path, typer.Option("--work-unit", help="WorkUnit JSON file.")],
    plan: Annotated[Path, typer.Option("--plan", help="EvaluatorPlan JSON file.")],
    manifest: Annotated[Path, typer.Option("--manifest", help="The worker's ResultManifest.")],
    candidate_root: Annotated[
        Path, typer.Option("--candidate-root", help="Directory holding the worker's files.")
    ],
    key: Annotated[Path, typer.Option("--key", help="Verifier private key (signs the result).")],
    passphrase_env: PassphraseEnv = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", help="Also write the result's exact bytes to FILE."),
    ] = None,
    db: DbOption = DEFAULT_DB,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Judge a candidate under an EvaluatorPlan and record the run (exit 0 passed, 1 failed).

    Appends in one transaction: WorkUnit, plan, ResultManifest, candidate and log blobs,
    inline observations, the VerificationResult and its DSSE attestation by KEY. A
    sovereignty refusal exits 4 and records nothing.
    """
    from ledger.api import open_ledger
    from verifiers.api import run_verifier as run

    signer = _signer(key, passphrase_env)
    with open_ledger(db, dry_run=dry_run) as book:
        done = run(
            book,
            work_unit=work_unit,
            plan=plan,
            manifest=manifest,
            candidate_root=candidate_root,
            signer=signer,
            output=output,
        )
    _warn_failures(done.attestation)
    info = done.to_json()
    if json_out:
        emit_json(info)
    else:
        _print_run(info)
    dry_run_note(dry_run)
    if not done.passed:
        raise ProblemsReported(f"candidate {done.status}")


def _warn_failures(verdict: AttestationVerdict) -> None:
    for failure in verdict.failures:
        typer.echo(f"warning: {failure.code}: {' '.join(failure.message.split())}", err=True)


def _print_run(info: RunInfo) -> None:
    _out(f"status          {info['status']}")
    _out(f"recommendation  {info['recommendation']}")
    _out(f"plan            v{info['plan_schema_version']} {info['plan_digest']}")
    for i, line in enumerate(info["summary"]):
        _out(f"{'summary' if i == 0 else '':16}{line}")
    for check in info["checks"]:
        _out(f"check           {check['id']}: {check['status']}")
    rows = {row["role"]: row for row in info["recorded"]}
    result, att = rows["verification-result"], rows["attestation"]
    _out(f"result          {info['result_digest']} seq={result['seq']}")
    state = "valid" if info["attestation"]["ok"] else "NOT valid (see warnings)"
    _out(
        f"attestation     {info['attestation_digest']} seq={att['seq']}"
        f" key {info['attestation']['key_id']} {state}"
    )
    new = sum(1 for row in info["recorded"] if row["status"] == "new")
    _out(f"recorded        {len(info['recorded'])} objects ({new} new)")
    for u in info["not_recorded"]:
        _out(
            f"not recorded    {u['role']} {u['locator']} {u['digest']} ({u['size']} bytes):"
            f" {u['reason']}"
        )
    if info["output"] is not None:
        _out(f"output          {info['output']}")


# --- calibrate -----------------------------------------------------------------------


def calibrate(
    fixture: Annotated[
        Path | None,
        typer.Option("--fixture", help="Calibration fixture directory (default: Task 001)."),
    ] = None,
    record: Annotated[
        bool, typer.Option("--record", help="Append the runs and calibration records.")
    ] = False,
    key: Annotated[
        Path | None, typer.Option("--key", help="Verifier private key (required with --record).")
    ] = None,
    passphrase_env: PassphraseEnv = None,
    db: DbOption = DEFAULT_DB,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Judge every fixture candidate under every fixture plan and print the table.

    Exit 1 when a row contradicts the plan's declared expected status. With --record
    (and --key) the runs and one signed calibration-record per row are appended in one
    transaction, timed by the wall clock; without it the clock is fixed and the output
    is reproducible byte for byte. Before anything is appended, --record checks that a
    registered identity of --key covers every adapter version it signs for, and otherwise
    prints the exact `provledger identity register ...` command to run (exit 4).
    """
    from ledger.errors import CheckFailed, InputError
    from verifiers.api import calibrate as run

    if record and key is None:
        raise InputError("calibrate --record, got no --key, expected the verifier key to sign")
    if record and key is not None:
        from ledger.api import open_ledger

        signer = _signer(key, passphrase_env)
        with open_ledger(db, dry_run=dry_run) as book:
            done = run(book, signer=signer, fixture=fixture)
    else:
        done = run(fixture=fixture)
    info = done.to_json()
    if json_out:
        emit_json(info)
    else:
        _out(done.table.render())
        for row in done.records:
            _out(
                f"recorded v{row.plan_schema_version} {row.candidate_name}"
                f" ({row.candidate}): {row.digest} seq={row.seq}"
            )
        if done.attestations_ok is not None:
            new = sum(1 for r in done.recorded if r.status == "new")
            _out(f"recorded {len(done.recorded)} objects ({new} new) in one transaction")
    dry_run_note(dry_run and record)
    broken = [r for r in done.table.rows if r.matches_expectation is False]
    if broken:
        first = broken[0]
        raise CheckFailed(
            f"calibration expectation, got v{first.plan_version} {first.candidate} {first.status}"
            f" ({len(broken)} row(s) differ), expected {first.expected_status}"
        )


# --- behavioral run ------------------------------------------------------------------


@behavioral_app.command("run")
def behavioral_run(
    source_tree: Annotated[
        Path, typer.Option("--source-tree", help="Evaluator-owned source tree (never written).")
    ],
    patch: Annotated[Path, typer.Option("--patch", help="Candidate patch (unified diff).")],
    probes: Annotated[Path, typer.Option("--probes", help="Probe plan JSON file.")],
    verification_result: Annotated[
        str | None,
        typer.Option(
            "--verification-result",
            metavar="DIGEST",
            help="The stored VerificationResult this evidence accompanies (same candidate).",
        ),
    ] = None,
    unsandboxed: Annotated[
        bool,
        typer.Option(
            "--unsandboxed",
            help="Run probes WITHOUT the bubblewrap sandbox (recorded as unconfined).",
        ),
    ] = False,
    db: DbOption = DEFAULT_DB,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Apply the patch to a temporary copy of the tree, run the probes, record the evidence.

    Probes run inside a bubblewrap sandbox (docs/VERIFIERS.md, "Behavioral sandbox");
    without a working one the command refuses (exit 4) unless --unsandboxed is given,
    which the evidence records. Appends the patch blob, the probe plan (canonical bytes,
    as a blob) and the behavioral-evidence object in one transaction; never touches a
    VerificationResult. Exit 0 when every probe met its expectation, 1 otherwise.
    """
    from ledger.api import open_ledger
    from verifiers.api import run_behavioral

    with open_ledger(db, dry_run=dry_run) as book:
        done = run_behavioral(
            book,
            source_tree=source_tree,
            patch=patch,
            probes=probes,
            verification_result=verification_result,
            unsandboxed=unsandboxed,
        )
    info = done.to_json()
    if json_out:
        emit_json(info)
    else:
        evidence = done.evidence
        applied = (
            "applied" if evidence["patch_applied"] else f"NOT applied: {evidence['apply_error']}"
        )
        _out(f"patch           {evidence['candidate_digest']} {applied}")
        box: Any = info["sandbox"]  # a member of the run's --json document
        _out(
            f"sandbox         {box['tool']} {box['version']}"
            if box["confined"]
            else "sandbox         NONE: probes ran unconfined (--unsandboxed)"
        )
        probes_run: Any = info["probes"]  # (as above)
        for p in probes_run:
            mark = "ok  " if p["expectation_met"] else "FAIL"
            _out(f"{mark} {p['id']}: expect {p['expect']}, {p['status']} exit {p['exit_code']}")
        summary: Any = info["summary"]  # (as above)
        _out(
            f"summary         {summary['expectations_met']} of {summary['probe_count']}"
            " expectations met"
        )
        seq = next(r.seq for r in done.recorded if r.role == "behavioral-evidence")
        _out(f"evidence        {info['evidence_digest']} seq={seq}")
    dry_run_note(dry_run)
    if not done.ok:
        raise ProblemsReported("behavioral expectations not met")
