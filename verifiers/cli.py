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
from dataclasses import dataclass
from datetime import UTC, datetime
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
    from ledger.encoding.canonical import Encoded
    from ledger.store.base import AppendResult, Store
    from ledger.store.location import DbLocation
    from ledger.trust.judgement import AttestationVerdict
    from ledger.trust.keys import Ed25519Signer, Signer
    from verifiers.calibration import CalibrationTable, Fixture
    from verifiers.record import RunRecord
    from verifiers.runner import VerificationOutcome

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


def _now() -> datetime:
    return datetime.now(UTC)


def _signer(path: Path, passphrase_env: str | None) -> Ed25519Signer:
    from ledger.cli.keycmds import passphrase_from_env
    from ledger.trust.keys import Ed25519Signer

    return Ed25519Signer.from_file(path, passphrase_from_env(passphrase_env))


def _read(path: Path, what: str, limit: int | None = None) -> bytes:
    """A bounded read (``ledger.bounded``): over the limit is one error line, exit 3."""
    from ledger.bounded import DOCUMENT_LIMIT, read_bounded
    from ledger.errors import NotFound

    if not path.is_file():
        raise NotFound(f"{what} file not found, got {path}, expected a readable file")
    return read_bounded(path, DOCUMENT_LIMIT if limit is None else limit, what)


def _encode(raw: bytes, path: Path) -> Encoded:
    """Strict parse (value, canonical and legacy bytes in one pass); errors name the file."""
    from ledger.encoding.canonical import encode
    from ledger.errors import LedgerError

    try:
        return encode(raw)
    except LedgerError as exc:
        raise type(exc)(f"{path}: {exc}") from None


def _append(
    store: Store, record: RunRecord, output: tuple[Path, bytes] | None = None
) -> list[dict[str, Any]]:
    """Append the record in one transaction; one row per item, in order.

    ``output`` (path, bytes) is written inside the transaction, before COMMIT: an
    unwritable output file leaves the run unrecorded.
    """
    from ledger.files import write_output

    def write(_results: list[AppendResult]) -> None:
        if output is not None:
            write_output(*output)

    results: list[AppendResult] = store.append_many(record.prepared, before_commit=write)
    return [
        {
            "role": item.role,
            "name": item.name,
            "kind": r.entry.kind,
            "digest": r.entry.digest,
            "seq": r.entry.seq,
            "status": "new" if r.new else "present",
        }
        for item, r in zip(record.items, results, strict=True)
    ]


def _check_attestations(store: Store, digests: list[str]) -> list[AttestationVerdict]:
    """Each appended attestation judged at its own seq; failures warned on stderr."""
    from ledger.trust.identity import trust_index
    from ledger.trust.judgement import check_attestation

    index = trust_index(store)
    verdicts = []
    for digest in digests:
        stored = store.get(digest)
        assert stored is not None  # appended in a committed transaction
        verdict = check_attestation(store, stored, store.policy, index)
        for failure in verdict.failures:
            typer.echo(f"warning: {failure.code}: {' '.join(failure.message.split())}", err=True)
        verdicts.append(verdict)
    return verdicts


def _verdict_json(verdict: AttestationVerdict) -> dict[str, Any]:
    return {
        "digest": verdict.attestation_digest,
        "key_id": verdict.key_id,
        "verifier_id": verdict.verifier_id,
        "ok": verdict.ok,
        "failures": [f.to_json() for f in verdict.failures],
    }


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
    from ledger.errors import InputError
    from ledger.store.backends import open_store

    signer = _signer(key, passphrase_env)
    if output is not None and (output.is_dir() or not output.parent.is_dir()):
        raise InputError(f"--output, got {output}, expected a file path in an existing directory")
    inputs = _RunInputs.read(work_unit, plan, manifest)
    with open_store(db, dry_run=dry_run) as store:
        outcome = _judge(inputs, candidate_root, plan, output)
        record = _run_record(inputs, outcome, signer)
        written = None if output is None or dry_run else (output, outcome.result_bytes)
        rows = _append(store, record, written)
        attestation = record.only("attestation").digest
        (verdict,) = _check_attestations(store, [attestation])
    info = _run_info(outcome, record, rows, verdict, output)
    if json_out:
        emit_json(info)
    else:
        _print_run(info)
    dry_run_note(dry_run)
    if not outcome.passed:
        raise ProblemsReported(f"candidate {outcome.status}")


@dataclass(frozen=True)
class _RunInputs:
    """The three input files of a run, each parsed exactly once (``encode``).

    They stay ``Encoded`` until the sovereignty checks have judged them: a file that is
    JSON but not an object is the verifier's refusal (SOV-INPUT-TYPE, exit 4), not a
    parse error. The record then admits the same parse (``verifiers.record.admit``).
    """

    work_unit: Encoded
    plan: Encoded
    manifest: Encoded

    @classmethod
    def read(cls, work_unit: Path, plan: Path, manifest: Path) -> _RunInputs:
        return cls(
            _encode(_read(work_unit, "WorkUnit"), work_unit),
            _encode(_read(plan, "EvaluatorPlan"), plan),
            _encode(_read(manifest, "ResultManifest"), manifest),
        )


def _judge(
    inputs: _RunInputs, candidate_root: Path, plan_path: Path, output: Path | None
) -> VerificationOutcome:
    from ledger.encoding.digest import sha256_digest
    from ledger.schema.validation import validate
    from verifiers.runner import evaluate

    return evaluate(
        inputs.work_unit.value,
        inputs.plan.value,
        inputs.manifest.value,
        candidate_root,
        plan_path,
        output,
        plan_digest=sha256_digest(inputs.plan.canonical),
        clock=_now,
        validate=validate,
    )


def _run_record(inputs: _RunInputs, outcome: VerificationOutcome, signer: Signer) -> RunRecord:
    from verifiers.model import EvaluatorPlan, ResultManifest, WorkUnit
    from verifiers.record import admit, run_record

    return run_record(
        work_unit=admit(WorkUnit.from_encoded(inputs.work_unit)),
        plan=admit(EvaluatorPlan.from_encoded(inputs.plan)),
        manifest=admit(ResultManifest.from_encoded(inputs.manifest)),
        outcome=outcome,
        signer=signer,
    )


def _run_info(
    outcome: VerificationOutcome,
    record: RunRecord,
    rows: list[dict[str, Any]],
    verdict: AttestationVerdict,
    output: Path | None,
) -> dict[str, Any]:
    """The run as ``run-verifier --json`` prints it (docs/VERIFIERS.md)."""
    from ledger.files import shown

    return {
        "status": outcome.status,
        "recommendation": outcome.recommendation,
        "exit_code": outcome.exit_code,
        "plan_schema_version": outcome.plan_schema_version,
        "plan_digest": outcome.plan_digest,
        "work_unit_digest": record.only("work-unit").digest,
        "result_manifest_digest": record.only("result-manifest").digest,
        "result_digest": outcome.result_digest,
        "attestation_digest": record.only("attestation").digest,
        "attestation": _verdict_json(verdict),
        "summary": outcome.summary.split("; "),
        "checks": [
            {"id": c["id"], "status": c["status"], "summary": c["summary"]}
            for c in outcome.result["checks"]
        ],
        "recorded": rows,
        "not_recorded": [u.as_json() for u in record.unrecorded],
        "sovereignty": outcome.sovereignty.as_json(),
        "output": None if output is None else shown(output),
    }


def _print_run(info: dict[str, Any]) -> None:
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
    from ledger.schema.validation import validate
    from verifiers.calibration import FIXTURE_DIR, Fixture, calibration_table, fixed_clock

    root = FIXTURE_DIR if fixture is None else fixture
    if record and key is None:
        raise InputError("calibrate --record, got no --key, expected the verifier key to sign")
    signer = _signer(key, passphrase_env) if record and key is not None else None
    table = calibration_table(root, validate=validate, clock=_now if record else fixed_clock)
    fx = Fixture.load(root)
    info: dict[str, Any] = {
        "fixture": str(root),
        "fixture_id": fx.index.get("id"),
        "rows": table.as_json(),
    }
    if signer is not None:
        info.update(_record_calibration(db, fx, table, signer, dry_run))
    if json_out:
        emit_json(info)
    else:
        _out(table.render())
        for row in info.get("calibration_records", []):
            _out(
                f"recorded v{row['plan_schema_version']} {row['candidate_name']}"
                f" ({row['candidate']}): {row['digest']} seq={row['seq']}"
            )
        if "recorded" in info:
            new = sum(1 for r in info["recorded"] if r["status"] == "new")
            _out(f"recorded {len(info['recorded'])} objects ({new} new) in one transaction")
    dry_run_note(dry_run and record)
    broken = [r for r in table.rows if r.matches_expectation is False]
    if broken:
        first = broken[0]
        raise CheckFailed(
            f"calibration expectation, got v{first.plan_version} {first.candidate} {first.status}"
            f" ({len(broken)} row(s) differ), expected {first.expected_status}"
        )


def _require_identity(store: Store, table: CalibrationTable, signer: Ed25519Signer) -> None:
    """Refuse (exit 4) unless an active identity of the signing key holds every
    (verifier id, adapter, adapter version) the table's results name."""
    from ledger.errors import IdentityError
    from ledger.trust.identity import trust_index

    index = trust_index(store)
    held = {
        (rec.verifier_id, rec.adapter, version)
        for rec in index.identities_for(signer.key_id)
        if index.status(rec) == "active"
        for version in rec.adapter_versions
    }
    needed: dict[tuple[str, str], set[str]] = {}
    for outcome in table.outcomes:
        verifier = outcome.result.get("verifier") or {}
        want = (
            str(verifier.get("id")),
            str(verifier.get("adapter")),
            str(verifier.get("adapter_version")),
        )
        if want not in held:
            needed.setdefault(want[:2], set()).add(want[2])
    if not needed:
        return
    (verifier_id, adapter), versions = sorted(needed.items())[0]
    flags = " ".join(f"--adapter-version {v}" for v in sorted(versions))
    raise IdentityError(
        f"calibrate --record, got key {signer.key_id} without a registered identity for"
        f" {verifier_id} {adapter} {', '.join(sorted(versions))}, expected one covering every"
        f" adapter version it signs for; run: provledger identity register --verifier-id"
        f" {verifier_id} --adapter {adapter} {flags} --public-key KEY.pub"
    )


def _record_calibration(
    db: DbLocation,
    fx: Fixture,
    table: CalibrationTable,
    signer: Ed25519Signer,
    dry_run: bool = False,
) -> dict[str, Any]:
    import json

    from ledger.store.backends import open_store
    from verifiers.record import CalibrationInputs, calibration_record
    from verifiers.runner import rfc3339

    inputs = CalibrationInputs.of(
        str(fx.index.get("id")),
        _read(fx.path("work_unit"), "calibration WorkUnit"),
        [_read(p, "calibration plan") for p in fx.plan_paths],
        [_read(fx.root / c["manifest"], "calibration ResultManifest") for c in fx.candidates],
    )
    with open_store(db, dry_run=dry_run) as store:
        _require_identity(store, table, signer)
        rec = calibration_record(table, inputs, signer, recorded_at=rfc3339(_now()))
        rows = _append(store, rec)
        verdicts = _check_attestations(
            store, [r["digest"] for r in rows if r["role"] == "attestation"]
        )
    records = []
    for item, row in zip(rec.items, rows, strict=True):
        if item.role != "calibration-record":
            continue
        value = json.loads(item.prepared.data)
        records.append(
            {
                "digest": row["digest"],
                "seq": row["seq"],
                **{
                    k: value[k]
                    for k in (
                        "plan_schema_version",
                        "plan_digest",
                        "candidate",
                        "candidate_name",
                        "status",
                        "recommendation",
                        "verdict",
                        "result_digest",
                    )
                },
            }
        )
    return {
        "calibration_records": records,
        "recorded": rows,
        "attestations_ok": all(v.ok for v in verdicts),
    }


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
    from ledger.errors import NotFound
    from ledger.store.backends import open_store
    from verifiers.behavioral import load_probe_plan, run_probes
    from verifiers.record import behavioral_record
    from verifiers.sandbox import find_sandbox

    if not source_tree.is_dir():
        raise NotFound(f"source tree, got {source_tree}, expected an existing directory")
    from ledger.bounded import PATCH_LIMIT

    patch_bytes = _read(patch, "patch", PATCH_LIMIT)
    plan_value = _encode(_read(probes, "probe plan"), probes).value
    plan = load_probe_plan(plan_value)
    if not unsandboxed:
        find_sandbox()  # refuse (exit 4) before the ledger is opened
    with open_store(db, dry_run=dry_run) as store:
        result_digest = (
            None
            if verification_result is None
            else _linked_result(store, verification_result, patch_bytes)
        )
        evidence = run_probes(
            source_tree,
            patch_bytes,
            plan,
            verification_result_digest=result_digest,
            unsandboxed=unsandboxed,
        )
        rec = behavioral_record(evidence, patch_bytes, plan, plan_value)
        rows = _append(store, rec)
    summary = evidence["summary"]
    info: dict[str, Any] = {
        "evidence_digest": rec.only("behavioral-evidence").digest,
        "candidate_digest": evidence["candidate_digest"],
        "probe_plan_digest": evidence["probe_plan_digest"],
        "verification_result_digest": result_digest,
        "patch_applied": evidence["patch_applied"],
        "apply_error": evidence["apply_error"],
        "probes": [
            {k: p[k] for k in ("id", "expect", "status", "exit_code", "expectation_met")}
            for p in evidence["probes"]
        ],
        "summary": summary,
        "sandbox": evidence["environment"]["sandbox"],
        "recorded": rows,
    }
    if json_out:
        emit_json(info)
    else:
        applied = (
            "applied" if evidence["patch_applied"] else f"NOT applied: {evidence['apply_error']}"
        )
        _out(f"patch           {evidence['candidate_digest']} {applied}")
        box = info["sandbox"]
        _out(
            f"sandbox         {box['tool']} {box['version']}"
            if box["confined"]
            else "sandbox         NONE: probes ran unconfined (--unsandboxed)"
        )
        for p in info["probes"]:
            mark = "ok  " if p["expectation_met"] else "FAIL"
            _out(f"{mark} {p['id']}: expect {p['expect']}, {p['status']} exit {p['exit_code']}")
        _out(
            f"summary         {summary['expectations_met']} of {summary['probe_count']}"
            " expectations met"
        )
        seq = next(r["seq"] for r in rows if r["role"] == "behavioral-evidence")
        _out(f"evidence        {info['evidence_digest']} seq={seq}")
    dry_run_note(dry_run)
    if not summary["all_expectations_met"]:
        raise ProblemsReported("behavioral expectations not met")


def _linked_result(store: Store, ref: str, patch: bytes) -> str:
    """The stored VerificationResult ``ref`` names, which must have observed ``patch``."""

    from ledger.encoding.digest import sha256_digest
    from ledger.errors import InputError
    from ledger.store.resolve import resolve
    from verifiers.errors import EvidenceMismatch

    obj = resolve(store, ref)
    if obj.kind != "verification-result":
        raise InputError(
            f"--verification-result {ref}, got kind {obj.kind}, expected verification-result"
        )
    patch_digest = sha256_digest(patch)
    value = obj.json()
    evidence = (value.get("evidence") if isinstance(value, dict) else None) or []
    observed = sorted(
        {e.get("digest") for e in evidence if e.get("type") == "artifact_hash"} - {None}
    )
    if patch_digest not in observed:
        raise EvidenceMismatch(
            f"behavioral evidence for patch {patch_digest} attached to VerificationResult"
            f" {obj.digest}, got a result that observed {observed or 'no candidate bytes'},"
            " expected the same candidate"
        )
    return obj.digest
