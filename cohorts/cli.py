"""``provledger cohort ...``, ``provledger provenance`` and ``provledger import idkmesh``.

Mounted lazily by the composition root's command table (``ledger.cli.COMMANDS``); the
cohort logic is imported inside the commands, so loading one command stays light.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ledger.cli.common import (
    DEFAULT_DB,
    DbOption,
    DryRunOption,
    JsonOption,
    console,
    dry_run_note,
    emit_json,
    new_app,
    plain_lines,
    read_input,
    table,
)
from ledger.errors import ProblemsReported, RejectionsReported

if TYPE_CHECKING:
    from rich.tree import Tree

    from cohorts.api import CohortWrite
    from cohorts.burn import TaskReason
    from cohorts.errors import GateError
    from cohorts.findings import CohortFinding
    from cohorts.provenance import Check
    from ledger.api import Ledger
    from ledger.encoding.values import JSONObject
    from ledger.store.location import DbLocation
    from ledger.trust.keys import Signer

cohort_app = new_app("Benchmark cohorts: definition digests, freeze, burn, bind, audit.")

ReplayOption = Annotated[
    bool,
    typer.Option(
        "--replay",
        help="Re-run the verifier each result names on the stored inputs; compare the bytes.",
    ),
]
TrustedWitnesses = Annotated[
    list[str] | None,
    typer.Option(
        "--witness-key",
        help="Trusted witness verifier key (repeatable): its cosignatures on the checkpoints"
        " shown are verified.",
    ),
]
AuthorityKey = Annotated[
    Path | None,
    typer.Option("--authority-key", help="Authority private key (default <db>.authority.key)."),
]


def _parse(name: str) -> JSONObject:
    from cohorts.errors import CohortInputError
    from ledger.encoding.canonical import parse_strict

    value = parse_strict(read_input(name))
    if not isinstance(value, dict):
        raise CohortInputError(f"{name}: not a JSON object, got {type(value).__name__}")
    return value


def _signer(db: DbLocation, given: Path | None) -> Signer:
    from ledger.cli.core import authority_key_path
    from ledger.trust.keys import Ed25519Signer

    return Ed25519Signer.from_file(authority_key_path(db, given))


def _print_findings(findings: list[CohortFinding] | tuple[CohortFinding, ...]) -> None:
    for f in findings:
        where = " / ".join(p for p in (f.task, f.attempt) if p)
        typer.echo(f"{f.severity:7} {f.code}{f' [{where}]' if where else ''}: {f.message}")


def _append_gated(
    db: DbLocation, action: Callable[[Ledger], CohortWrite], json_out: bool, dry_run: bool = False
) -> None:
    """Run one gated append (a ``cohorts.api`` write) on the open ledger and report it (a
    refusal exits 4)."""
    from cohorts.errors import GateError
    from ledger.api import open_ledger

    with open_ledger(db, dry_run=dry_run) as book:
        try:
            done = action(book)
        except GateError as exc:
            _gate_refusal(exc, json_out)
            return
    if json_out:
        emit_json(done.to_json())
    else:
        verb = "would append" if dry_run else "appended"
        for obj in done.objects:
            typer.echo(f"{verb if obj.new else 'present '} {obj.kind} {obj.digest}")
        for f in done.findings:
            if f.severity == "warning":
                _print_findings([f])
    dry_run_note(dry_run)


def _gate_refusal(exc: GateError, json_out: bool) -> None:
    """Print every failed gate item, then re-raise (exit 4)."""
    if json_out:
        emit_json({"ok": False, "gate": exc.gate, "failures": [f.to_json() for f in exc.failures]})
    else:
        _print_findings(exc.failures)
    raise exc


@cohort_app.command("digest")
def digest_cmd(
    file: Annotated[str, typer.Argument(help="BenchmarkCohort JSON file; - reads stdin.")],
    json_out: JsonOption = False,
) -> None:
    """Print the definition digest under both schemes (upstream legacy and RFC 8785)."""
    from cohorts.api import definition_digest

    digests = definition_digest(_parse(file))
    if json_out:
        emit_json(digests.to_json())
        return
    typer.echo(f"legacy {digests.legacy}")
    typer.echo(f"jcs    {digests.jcs}")


@cohort_app.command("freeze")
def freeze_cmd(
    file: Annotated[str, typer.Argument(help="BenchmarkCohort JSON file; - reads stdin.")],
    authority_key: AuthorityKey = None,
    db: DbOption = DEFAULT_DB,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Append the cohort as frozen, attested by the authority key, when the freeze gate
    holds; else list every failure (exit 4).
    """
    from cohorts.api import freeze

    cohort = _parse(file)
    signer = _signer(db, authority_key)
    _append_gated(db, lambda book: freeze(book, cohort, authority=signer), json_out, dry_run)


def _task_reasons(items: list[str]) -> list[TaskReason]:
    from cohorts.burn import TaskReason
    from cohorts.errors import CohortInputError

    out = []
    for item in items:
        task, sep, reason = item.partition("=")
        if not sep or not task or not reason:
            raise CohortInputError(f"--exclude, got {item!r}, expected TASK=REASON")
        out.append(TaskReason(task, reason))
    return out


@cohort_app.command("burn")
def burn_cmd(
    cohort_id: Annotated[str, typer.Argument(metavar="ID", help="Cohort id in the ledger.")],
    reason: Annotated[str, typer.Option("--reason", help="Why the cohort burned.")],
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="TASK=REASON excluded outcome (default: excluded tasks)."),
    ] = None,
    observed: Annotated[
        list[str] | None,
        typer.Option("--observed-task", help="Task whose outcome was seen: never held out again."),
    ] = None,
    successor: Annotated[
        list[str] | None,
        typer.Option(
            "--successor", help="Successor reference (digest or unique prefix, issue, URI)."
        ),
    ] = None,
    authority_key: AuthorityKey = None,
    db: DbOption = DEFAULT_DB,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Burn a frozen cohort: the burned cohort and its burn notice, each attested by the
    authority key, in one transaction.
    """
    from cohorts.api import burn

    excluded = _task_reasons(exclude) if exclude else None
    signer = _signer(db, authority_key)
    _append_gated(
        db,
        lambda book: burn(
            book,
            cohort_id,
            reason=reason,
            authority=signer,
            excluded=None if excluded is None else [(t.task, t.reason) for t in excluded],
            observed=observed or (),
            successors=successor or (),
        ),
        json_out,
        dry_run,
    )


@cohort_app.command("bind")
def bind_cmd(
    successor: Annotated[
        str,
        typer.Argument(
            metavar="SUCCESSOR",
            help="Successor cohort: its JSON file, or its id in the ledger (frozen, attested).",
        ),
    ],
    predecessor: Annotated[str, typer.Option("--predecessor", help="Burned predecessor id.")],
    plan: Annotated[
        list[str] | None,
        typer.Option(
            "--plan",
            metavar="TASK=PLAN_ID@VERSION",
            help="The EvaluatorPlan (id, semantics version) a carried-over task binds; one"
            " per carried-over task.",
        ),
    ] = None,
    calibration: Annotated[
        list[str] | None,
        typer.Option(
            "--calibration",
            metavar="DIGEST",
            help="A calibration-record (from `calibrate --record`) justifying a plan version:"
            " its digest or a unique prefix of it.",
        ),
    ] = None,
    authority_key: AuthorityKey = None,
    db: DbOption = DEFAULT_DB,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Append a cohort-binding, attested by the authority key, when every successor gate
    item holds; else list every unmet item with the command that meets it (exit 4).
    """
    from pathlib import Path as _Path

    from cohorts.api import bind

    is_file = successor == "-" or _Path(successor).is_file()
    target: str | JSONObject = _parse(successor) if is_file else successor
    signer = _signer(db, authority_key)
    _append_gated(
        db,
        lambda book: bind(
            book,
            target,
            predecessor=predecessor,
            plans=plan or (),
            calibrations=calibration or (),
            authority=signer,
        ),
        json_out,
        dry_run,
    )


@cohort_app.command("draft-successor")
def draft_successor_cmd(
    burned_id: Annotated[
        str, typer.Argument(metavar="BURNED_ID", help="The burned cohort's id in the ledger.")
    ],
    out: Annotated[
        Path, typer.Option("-o", "--out", help="Folder to write cohort.json and evaluators/ to.")
    ],
    successor_id: Annotated[str, typer.Option("--id", help="The successor cohort's id.")],
    plan_version: Annotated[
        str, typer.Option("--plan-version", help="EvaluatorPlan version of the new plans.")
    ] = "0.4",
    removed: Annotated[
        list[str] | None,
        typer.Option(
            "--removed",
            metavar="TASK=SUBSTRING",
            help="A removed-line substring a task's v0.4 plan requires (repeatable).",
        ),
    ] = None,
    drop: Annotated[
        list[str] | None, typer.Option("--drop", metavar="TASK", help="Leave a task out.")
    ] = None,
    drop_banned: Annotated[
        bool, typer.Option("--drop-banned", help="Leave out every task the burn bans.")
    ] = False,
    title: Annotated[str | None, typer.Option("--title", help="The successor's title.")] = None,
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Draft a successor of a burned cohort: files to review before `cohort freeze`.

    Carries every task over (same id, WorkUnit, source) with a plan drafted at
    --plan-version from its burned plan (checks kept; v0.2 exact lines become
    substrings; v0.4 needs --removed per task); a task the burn bans from held-out use
    is never held_out (pilot). Writes OUT/cohort.json (stage collecting) and
    OUT/evaluators/*.json; the ledger is only read. Then: append the plans, `cohort
    freeze OUT/cohort.json`, calibrate, `cohort bind` with the printed --plan options.
    """
    from cohorts.api import draft_successor
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        drafted = draft_successor(
            book,
            burned_id,
            successor_id=successor_id,
            out=out,
            plan_version=plan_version,
            title=title,
            removed=removed or (),
            drop=drop or (),
            drop_banned=drop_banned,
        )
    if json_out:
        emit_json(drafted.to_json())
        return
    draft = drafted.draft
    carried = [t for t in draft.tasks if t.carried]
    lines = [
        f"wrote {out}: cohort.json (stage collecting, {len(carried)} task(s)), evaluators/"
        f" ({len(draft.plans)} plan(s) v{plan_version}): review them before freezing",
        f"successor {draft.cohort['id']} of {burned_id}"
        f" (definition {draft.predecessor_digest or 'not recorded'})",
    ]
    lines += [f"  {t.task}: {t.note}" for t in draft.tasks]
    lines.append("then bind with:")
    lines += [f"  --plan {t.task}={t.plan_id}@{t.plan_version}" for t in carried]
    lines.append(f"definition digest once frozen {draft.definition_digest}")
    plain_lines(lines)


@cohort_app.command("record-outcome")
def record_outcome_cmd(
    cohort_id: Annotated[str, typer.Argument(metavar="ID", help="Frozen cohort id in the ledger.")],
    task: Annotated[str, typer.Option("--task", help="The task the outcome belongs to.")],
    result: Annotated[
        str,
        typer.Option(
            "--result", metavar="REF", help="The stored VerificationResult (digest, prefix or id)."
        ),
    ],
    attempt: Annotated[
        str | None,
        typer.Option("--attempt", help="Attempt id (default attempt-NNN, the next number)."),
    ] = None,
    signature: Annotated[
        str | None,
        typer.Option(
            "--signature",
            help="Structural signature of the attempt (default: the task's only declared one).",
        ),
    ] = None,
    authority_key: AuthorityKey = None,
    db: DbOption = DEFAULT_DB,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """List a stored VerificationResult as an outcome of a frozen cohort's task: the
    cohort is appended again with the attempt (same definition), attested by the
    authority key. An outcome recorded before the cohort froze, before its plan or (for
    a successor) before its binding is not pre-registered: refused (exit 4).
    """
    from cohorts.api import record_outcome

    signer = _signer(db, authority_key)
    _append_gated(
        db,
        lambda book: record_outcome(
            book,
            cohort_id,
            task=task,
            result=result,
            authority=signer,
            attempt_id=attempt,
            signature=signature,
        ),
        json_out,
        dry_run,
    )


@cohort_app.command("audit")
def audit_cmd(
    cohort_id: Annotated[
        str | None, typer.Argument(metavar="ID", help="Cohort id in the ledger.")
    ] = None,
    all_cohorts: Annotated[
        bool, typer.Option("--all", help="Summarise every stored cohort in one table.")
    ] = False,
    replay: ReplayOption = False,
    witness_key: TrustedWitnesses = None,
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Audit a stored cohort: burn facts, successors, evidence strength, then every defect.

    Every listed outcome is judged pre-registered or not from log positions; the
    checkpoints shown carry their witness cosignatures, verified under each given
    --witness-key (the others are shown as stored). With
    --replay, each stored result is also re-judged from the stored inputs (a replay
    that differs is a defect; inputs the ledger lacks are missing evidence).
    Defects (evidence present but wrong) come first, then missing evidence, then
    warnings, each grouped and counted. Exit 1 when any defect or missing evidence is
    found, 0 otherwise.
    """
    from cohorts.api import audit
    from cohorts.errors import CohortUsageError
    from ledger.api import open_ledger
    from ledger.cli.witnesscmds import read_key_text

    if all_cohorts == (cohort_id is not None):
        raise CohortUsageError(
            "cohort audit, got "
            + ("both ID and --all" if all_cohorts else "neither ID nor --all")
            + ", expected a cohort id (see `provledger cohort list`) or --all"
        )
    if all_cohorts:
        _audit_all(db, json_out, replay)
        return
    assert cohort_id is not None
    witnesses = [read_key_text(k) for k in witness_key or []]
    with open_ledger(db, readonly=True) as book:
        audited = audit(book, cohort_id, replay=replay, witness_keys=witnesses)
    if json_out:
        emit_json(audited.to_json())
    else:
        plain_lines(audited.lines())
    if not audited.ok:
        raise ProblemsReported(f"cohort {cohort_id} audit failed")


#: Keys a command's JSON still carries under an earlier release's name, beside the name
#: that now means the same thing in every command: old -> new (docs/COHORTS.md).
DEPRECATED_KEYS = {
    "cohort audit": {
        "definition_digest": "definition_digests",
        "attestations": "attestation_states",
    },
    "cohort list": {"id": "cohort_id", "tasks": "task_count"},
    "cohort audit --all": {"id": "cohort_id", "tasks": "task_count"},
    "cohort digest": {"id": "cohort_id"},
    "bundle export": {"cosignatures": "cosignature_count"},
    "bundle verify": {"cosignatures": "cosignature_count"},
}


def _audit_all(db: DbLocation, json_out: bool, replay: bool = False) -> None:
    from cohorts.api import audit_all
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        rows = [summary.to_json() for summary in audit_all(book, replay=replay)]
    if json_out:
        emit_json(rows)
    else:
        table(
            [
                "cohort",
                "stage",
                "tasks",
                "outcomes",
                "excluded",
                "defects",
                "missing",
                "warnings",
                "result",
            ],
            [
                [
                    str(r["cohort_id"]),
                    str(r["stage"]),
                    str(r["task_count"]),
                    str(r["outcomes"]),
                    str(r["excluded"]),
                    str(r["defects"]),
                    str(r["missing"]),
                    str(r["warnings"]),
                    "ok" if r["ok"] else "FAILED",
                ]
                for r in rows
            ],
        )
    if any(not r["ok"] for r in rows):
        raise ProblemsReported("a cohort audit failed")


@cohort_app.command("list")
def list_cmd(db: DbOption = DEFAULT_DB, json_out: JsonOption = False) -> None:
    """List stored cohorts: id, stage, definition digest, tasks, attestation state."""
    from cohorts.api import list_cohorts
    from ledger.api import open_ledger

    with open_ledger(db, readonly=True) as book:
        rows = list_cohorts(book)
    if json_out:
        emit_json([r.to_json() for r in rows])
        return
    table(
        ["id", "stage", "definition digest", "tasks", "attested", "standing"],
        [
            [
                r.cohort_id,
                str(r.stage),
                r.definition_digest or "-",
                str(r.tasks),
                r.attested,
                r.standing,
            ]
            for r in rows
        ],
    )


def _tree(parent: Tree, check: Check) -> None:
    from rich.markup import escape
    from rich.text import Text

    mark = "[green]passed[/]" if check.ok else "[red]FAILED[/]"
    node = parent.add(Text.from_markup(f"{mark} {escape(check.name)}: {escape(check.reason)}"))
    for child in check.children:
        _tree(node, child)


def provenance_cmd(
    ref: Annotated[
        str,
        typer.Argument(
            metavar="REF",
            help="VerificationResult digest (either scheme), unique digest prefix, id or"
            " id@version.",
        ),
    ],
    replay: ReplayOption = False,
    witness_key: TrustedWitnesses = None,
    db: DbOption = DEFAULT_DB,
    json_out: JsonOption = False,
) -> None:
    """Verify one VerificationResult's whole chain and say what its verdict can mean.

    A pre-registration's checkpoint carries its witness cosignatures, verified under
    each given --witness-key (one that does not verify fails the check).

    With --replay, also re-run the verifier version the result names on the inputs the
    ledger stores and compare the recomputed bytes with the stored ones: reproduced,
    differs (naming the members) or cannot replay (naming what the ledger lacks).
    Exit 0 when every check passed, 1 when the chain fails (a replay that does not
    reproduce included), 3 when REF is malformed, not found, or not a VerificationResult.
    """
    from rich.text import Text
    from rich.tree import Tree

    from cohorts.api import provenance
    from ledger.api import open_ledger
    from ledger.cli.witnesscmds import read_key_text

    witnesses = [read_key_text(k) for k in witness_key or []]
    with open_ledger(db, readonly=True) as book:
        report = provenance(book, ref, replay=replay, witness_keys=witnesses)
    if json_out:
        emit_json({**report.to_json(), "ref": ref})
    else:
        status = "passed" if report.ok else "FAILED"
        tree = Tree(Text(f"provenance of {report.digest}: {status}"))
        for check in report.checks:
            _tree(tree, check)
        console().print(tree)
        if report.outcome is not None:
            typer.echo(f"outcome: {report.outcome} ({report.outcome_meaning})")
    if not report.ok:
        raise ProblemsReported("provenance chain failed")


def import_idkmesh_cmd(
    path: Annotated[
        Path,
        typer.Argument(
            metavar="FOLDER", help="IDKMesh repository root, or any cohort/record folder in one."
        ),
    ],
    db: DbOption = DEFAULT_DB,
    authority_key: AuthorityKey = None,
    unsigned: Annotated[
        bool,
        typer.Option(
            "--unsigned",
            help="Record frozen/burned cohorts and burn notices without the authority's"
            " attestation: kept as unattested history, never counted by gates or audits.",
        ),
    ] = False,
    dry_run: DryRunOption = False,
    json_out: JsonOption = False,
) -> None:
    """Record an IDKMesh tree as it is: every record, at any stage, with a summary per cohort.

    Documents that fail their schema are kept quarantined (bytes + a record of the
    problems) so `cohort audit` can name the defect. Frozen and burned cohorts and burn
    notices are attested by the authority key (default <db>.authority.key) unless
    --unsigned (then kept as unattested history, without standing). Burn notices keep
    upstream's burn date. Idempotent. Exit 0 when every file was recorded, 3 when one was
    refused.
    """
    from cohorts.api import import_idkmesh
    from ledger.api import open_ledger

    with open_ledger(db, dry_run=dry_run) as book:
        signer = None if unsigned else _signer(db, authority_key)
        report = import_idkmesh(book, path, authority=signer, unsigned=unsigned)
    if json_out:
        emit_json(report.to_json())
    else:
        for item in report.items:
            if item.status in ("quarantined", "invalid"):
                typer.echo(f"{item.status:11} {item.path}: {item.reason}")
        for group in report.groups():
            typer.echo(group.line())
        counts = report.counts()
        typer.echo(
            f"imported {counts['imported']}, already present {counts['present']},"
            f" quarantined {counts['quarantined']}, refused {counts['invalid']}"
        )
    dry_run_note(dry_run)
    if report.counts()["invalid"]:
        raise RejectionsReported(f"{report.counts()['invalid']} item(s) invalid")
