"""provledger's Python API, cohort part: freeze, burn, bind, audit, provenance, import,
draft a successor, and the auditors' browse database (index it, serve it).

::

    from ledger.api import open_ledger
    from cohorts.api import audit, freeze, provenance

    with open_ledger("ledger.db") as book:
        written = freeze(book, cohort)          # the frozen cohort + the authority's attestation
        report = audit(book, cohort["id"])      # report.ok, report.to_json()
        chain = provenance(book, result_digest) # chain.ok, chain.outcome

Each function is the ``provledger cohort ...`` / ``provenance`` / ``import idkmesh``
command of the same name, with the same gates and admission; ``to_json()`` of what it
returns is the command's ``--json``. Writes are signed by the ledger's authority key: by
default the key file ``init`` wrote beside the ledger (``ledger.api.default_authority_key``),
or the ``Signer`` given as ``authority``. A refused write raises ``GateError`` (exit 4,
``failures`` lists every failed gate item) or ``AdmissionRefused`` and writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cohorts.audited import CohortAudit
from ledger.api.ledger import Ledger

if TYPE_CHECKING:
    from collections.abc import Callable

    from datasette.app import Datasette

    from cohorts.audit import CohortAuditReport
    from cohorts.browse.build import IndexReport
    from cohorts.findings import CohortFinding
    from cohorts.importer import ImportReport
    from cohorts.provenance import ProvenanceReport
    from cohorts.service import CohortRow, Written
    from cohorts.successor_draft import Draft
    from ledger.api.ledger import Where
    from ledger.encoding.values import JSONObject
    from ledger.log.cosignature import WitnessKey
    from ledger.store.location import DbLocation
    from ledger.trust.keys import Signer

__all__ = [
    "CohortAudit",
    "CohortAuditReport",
    "CohortDigests",
    "CohortRow",
    "CohortSummary",
    "CohortWrite",
    "Draft",
    "ImportReport",
    "IndexReport",
    "ProvenanceReport",
    "SuccessorDraft",
    "WrittenObject",
    "audit",
    "audit_all",
    "bind",
    "browse_app",
    "build_index",
    "burn",
    "default_browse_file",
    "definition_digest",
    "draft_successor",
    "freeze",
    "import_idkmesh",
    "list_cohorts",
    "provenance",
    "record_outcome",
    "serve_browse",
]

def __getattr__(name: str) -> object:
    """Result classes other modules define, imported when first named (PEP 562): the
    browse projection loads sqlite-utils, which a command that freezes a cohort never
    needs."""
    if name == "CohortAuditReport":
        from cohorts.audit import CohortAuditReport

        return CohortAuditReport
    if name == "CohortRow":
        from cohorts.service import CohortRow

        return CohortRow
    if name == "Draft":
        from cohorts.successor_draft import Draft

        return Draft
    if name == "ImportReport":
        from cohorts.importer import ImportReport

        return ImportReport
    if name == "IndexReport":
        from cohorts.browse.build import IndexReport

        return IndexReport
    if name == "ProvenanceReport":
        from cohorts.provenance import ProvenanceReport

        return ProvenanceReport
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: A cohort document: a JSON file, its bytes, or its JSON value.
CohortDocument = Path | bytes | Mapping[str, object]


@dataclass(frozen=True)
class WrittenObject:
    """One object a cohort operation appended (``new``) or found already present."""

    kind: str
    digest: str
    new: bool

    def to_json(self) -> JSONObject:
        return {"kind": self.kind, "digest": self.digest, "new": self.new}


@dataclass(frozen=True)
class CohortWrite:
    """What ``freeze``, ``burn`` or ``bind`` appended in its one transaction, and the
    gate's findings (warnings and passed items) (``cohort freeze|burn|bind --json``).
    On a ledger opened with ``dry_run``: what would have been appended."""

    objects: tuple[WrittenObject, ...]
    findings: tuple[CohortFinding, ...]
    dry_run: bool

    @property
    def ok(self) -> bool:
        return True  # a refused operation raises instead

    def of_kind(self, kind: str) -> WrittenObject:
        """The one object of ``kind`` (e.g. the ``cohort-binding``)."""
        return next(o for o in self.objects if o.kind == kind)

    def to_json(self) -> dict[str, object]:
        return {
            "ok": True,
            "dry_run": self.dry_run,
            "objects": [o.to_json() for o in self.objects],
            "findings": [f.to_json() for f in self.findings],
        }


@dataclass(frozen=True)
class CohortSummary:
    """One row of ``cohort audit --all``: the cohort as listed, and its audit's counts."""

    row: CohortRow
    ok: bool
    defects: int
    missing: int
    warnings: int
    outcomes: int
    excluded: int

    def to_json(self) -> dict[str, object]:
        return {
            **self.row.to_json(),
            "ok": self.ok,
            "defects": self.defects,
            "missing": self.missing,
            "warnings": self.warnings,
            "outcomes": self.outcomes,
            "excluded": self.excluded,
        }


@dataclass(frozen=True)
class CohortDigests:
    """A cohort's definition digest under both schemes (``cohort digest --json``):
    upstream's ``legacy`` and RFC 8785 ``jcs``; ``recorded`` is the one the document
    records, ``recorded_scheme`` which scheme it matches (None: neither)."""

    id: object
    legacy: str
    jcs: str
    recorded: str | None
    recorded_scheme: str | None

    def to_json(self) -> dict[str, object]:
        return {
            "cohort_id": self.id,
            "id": self.id,  # deprecated: cohort_id (cohorts.cli.DEPRECATED_KEYS)
            "legacy": self.legacy,
            "jcs": self.jcs,
            "recorded": self.recorded,
            "recorded_scheme": self.recorded_scheme,
        }


# --- reading documents -------------------------------------------------------------------


def cohort_value(document: CohortDocument) -> JSONObject:
    """The JSON object of a cohort document, parsed strictly (exit 3 when it is not one)."""
    from cohorts.errors import CohortInputError
    from ledger.api.ledger import document_bytes
    from ledger.bounded import DOCUMENT_LIMIT, read_bounded
    from ledger.encoding.canonical import parse_strict
    from ledger.errors import NotFound

    if isinstance(document, Path):
        if not document.is_file():
            raise NotFound(f"input file not found, got {document}, expected a readable file")
        raw, name = read_bounded(document, DOCUMENT_LIMIT, "document"), str(document)
    elif isinstance(document, bytes):
        raw, name = document, "cohort"
    else:
        raw, name = document_bytes(document), "cohort"
    value = parse_strict(raw)
    if not isinstance(value, dict):
        raise CohortInputError(f"{name}: not a JSON object, got {type(value).__name__}")
    return value


def _write(ledger: Ledger, done: Written) -> CohortWrite:
    return CohortWrite(
        tuple(WrittenObject(k, d, n) for k, d, n in done.objects),
        done.findings,
        ledger.dry_run,
    )


def _pairs(
    items: Mapping[str, str] | Sequence[tuple[str, str]],
) -> Sequence[tuple[str, str]]:
    return list(items.items()) if isinstance(items, Mapping) else items


def _authority(ledger: Ledger, authority: Signer | None) -> Signer:
    return authority if authority is not None else ledger.authority()


# --- writes ------------------------------------------------------------------------------


def freeze(
    ledger: Ledger, cohort: CohortDocument, *, authority: Signer | None = None
) -> CohortWrite:
    """Append the cohort as frozen, attested by the authority, when the freeze gate holds
    (every task's WorkUnit and plan stored and matching, the definition digest, sizes)
    and the ledger's lifecycle rule admits it; else ``GateError`` with every failure."""
    from cohorts.service import freeze_cohort

    value = cohort_value(cohort)
    return _write(ledger, freeze_cohort(ledger.store, value, _authority(ledger, authority)))


def burn(
    ledger: Ledger,
    cohort_id: str,
    *,
    reason: str,
    excluded: Mapping[str, str] | Sequence[tuple[str, str]] | None = None,
    observed: Sequence[str] = (),
    successors: Sequence[str] = (),
    authority: Signer | None = None,
    issued_at: str | None = None,
) -> CohortWrite:
    """Burn a frozen cohort: the burned cohort document and its burn notice, each attested
    by the authority, in one transaction. ``excluded``: task id -> why its outcome is
    excluded (default: the tasks the cohort excludes); ``observed``: tasks whose outcome
    was seen (never held out again); ``successors``: references (digest, issue, URI).
    A second burn is refused (``LifecycleError``, exit 4)."""
    from cohorts.burn import TaskReason
    from cohorts.service import burn_cohort
    from ledger.store.resolve import full_digest

    done = burn_cohort(
        ledger.store,
        cohort_id,
        reason=reason,
        signer=_authority(ledger, authority),
        excluded=None if excluded is None else [TaskReason(t, r) for t, r in _pairs(excluded)],
        observed=observed,
        # A unique digest prefix names its object; the notice records the full digest.
        successors=[full_digest(ledger.store, s) for s in successors],
        issued_at=issued_at,
    )
    return _write(ledger, done)


def bind(
    ledger: Ledger,
    successor: str | CohortDocument,
    *,
    predecessor: str,
    plans: Mapping[str, str] | Sequence[str] = {},
    calibrations: Sequence[str] = (),
    authority: Signer | None = None,
) -> CohortWrite:
    """Append a cohort-binding of ``successor`` (its id in the ledger, or its document)
    to the burned ``predecessor``, attested by the authority, when every successor gate
    item holds. ``plans``: carried-over task id -> ``PLAN_ID@VERSION`` of the plan it
    binds (one per carried-over task; or ``TASK=PLAN_ID@VERSION`` texts, as ``--plan``
    takes them); ``calibrations``: digests (or unique prefixes) of calibration records
    justifying a plan version. ``GateError`` lists every unmet item with its remedy."""
    from cohorts.service import bind_cohort, plan_choice
    from ledger.store.resolve import full_digest

    texts = [f"{t}={p}" for t, p in plans.items()] if isinstance(plans, Mapping) else plans
    choices = [plan_choice(text) for text in texts]
    target: str | JSONObject = (
        successor if isinstance(successor, str) else cohort_value(successor)
    )
    done = bind_cohort(
        ledger.store,
        target,
        predecessor,
        _authority(ledger, authority),
        plans=choices,
        # A unique prefix names its record; the binding records the full digest.
        calibrations=[full_digest(ledger.store, c) for c in calibrations],
    )
    return _write(ledger, done)


def record_outcome(
    ledger: Ledger,
    cohort_id: str,
    *,
    task: str,
    result: str,
    attempt_id: str | None = None,
    signature: str | None = None,
    authority: Signer | None = None,
) -> CohortWrite:
    """Append the frozen cohort again, listing the stored VerificationResult ``result``
    (digest, prefix or id) as an attempt of ``task``, attested by the authority
    (``cohort record-outcome``). Refused (exit 4) when the outcome is not
    pre-registered: the cohort, its plan and binding must have had standing first."""
    from cohorts.service import record_outcome as record

    done = record(
        ledger.store,
        cohort_id,
        task=task,
        result=result,
        signer=_authority(ledger, authority),
        attempt_id=attempt_id,
        signature=signature,
    )
    return _write(ledger, done)


def import_idkmesh(
    ledger: Ledger,
    folder: str | os.PathLike[str],
    *,
    authority: Signer | None = None,
    unsigned: bool = False,
) -> ImportReport:
    """Record an IDKMesh tree as it is (``import idkmesh``): every record at any stage,
    schema-invalid ones quarantined. Frozen and burned cohorts and burn notices are
    attested by the authority, unless ``unsigned`` (then kept as unattested history,
    without standing). Idempotent. ``ImportReport.counts()["invalid"]`` counts refusals."""
    from cohorts.importer import import_idkmesh as run_import

    signer = None if unsigned else _authority(ledger, authority)
    return run_import(ledger.store, Path(folder), signer)


# --- reads -------------------------------------------------------------------------------


def audit(
    ledger: Ledger, cohort_id: str, *, replay: bool = False, witness_keys: Sequence[str] = ()
) -> CohortAudit:
    """Audit the stored cohort ``cohort_id`` (its newest document with standing) against
    the ledger: burn facts, successors, evidence strength, then every defect, missing
    item and warning. ``replay``: also re-judge every stored result from the stored
    inputs (one that differs is a defect, inputs the ledger lacks are missing evidence).
    ``witness_keys``: witness verifier keys whose cosignatures on the checkpoints shown
    are verified. ``NotFound`` (exit 3) when the ledger has no such cohort."""
    return CohortAudit.of(
        ledger.store, cohort_id, replay=replay, witness_keys=_witness_keys(witness_keys)
    )


def audit_all(ledger: Ledger, *, replay: bool = False) -> list[CohortSummary]:
    """Every stored cohort audited, one summary each, sorted by id (``cohort audit --all``);
    ``replay`` as ``audit``."""
    from cohorts import service

    out = []
    for row in service.cohort_rows(ledger.store):
        report = service.audit_stored_cohort(ledger.store, row.cohort_id)
        if replay:
            report = service.with_replay(ledger.store, report)
        counts = report.counts()
        out.append(
            CohortSummary(
                row,
                report.ok,
                counts["defect"],
                counts["missing"],
                counts["warning"],
                sum(len(t.attempts) for t in report.tasks),
                len(report.excluded_outcomes),
            )
        )
    return out


def list_cohorts(ledger: Ledger) -> list[CohortRow]:
    """The newest record of every stored cohort, sorted by id (``cohort list``)."""
    from cohorts.service import cohort_rows

    return cohort_rows(ledger.store)


def provenance(
    ledger: Ledger, ref: str, *, replay: bool = False, witness_keys: Sequence[str] = ()
) -> ProvenanceReport:
    """Verify one VerificationResult's whole chain (``provenance``): its bytes and
    attestations, the WorkUnit, plan and ResultManifest it names, the worker's files, the
    cohorts that list it and the inclusion of each link in the log; ``outcome`` says
    whether a stored cohort counts it. ``replay``: also re-run the verifier version the
    result names on the stored inputs and compare the bytes. ``witness_keys``: witness
    verifier keys whose cosignatures on a pre-registration's checkpoint are verified.
    ``NotFound`` / ``InputError`` (exit 3) when ``ref`` names no VerificationResult."""
    from cohorts.provenance import provenance_of

    return provenance_of(
        ledger.store, ref, replay=replay, witness_keys=_witness_keys(witness_keys)
    )


def _witness_keys(texts: Sequence[str]) -> list[WitnessKey]:
    from ledger.log.cosignature import parse_witness_key

    return [parse_witness_key(text.strip()) for text in texts]


def definition_digest(cohort: CohortDocument) -> CohortDigests:
    """A cohort's definition digest under both schemes; no ledger needed."""
    from cohorts.definition import definition_digests, recorded_definition_digest

    value = cohort_value(cohort)
    digests = definition_digests(value)
    recorded = recorded_definition_digest(value)
    return CohortDigests(
        value.get("id"),
        digests.legacy,
        digests.jcs,
        recorded,
        digests.scheme_for(recorded) if recorded else None,
    )


# --- a successor draft ---------------------------------------------------------------------


@dataclass(frozen=True)
class SuccessorDraft:
    """A successor of a burned cohort drafted into ``out`` (``cohort draft-successor
    --json``): ``out/cohort.json`` (stage collecting) and one plan file per carried-over
    task (``draft.plans``' paths, relative to ``out``), to review before ``freeze``."""

    out: Path
    draft: Draft

    def to_json(self) -> dict[str, object]:
        return {"out": str(self.out), **self.draft.to_json()}


def draft_successor(
    ledger: Ledger,
    burned_id: str,
    *,
    successor_id: str,
    out: str | os.PathLike[str],
    plan_version: str = "0.4",
    title: str | None = None,
    removed: Mapping[str, Sequence[str]] | Sequence[str] = {},
    drop: Sequence[str] = (),
    drop_banned: bool = False,
) -> SuccessorDraft:
    """Draft a successor of the burned cohort ``burned_id`` and write it to ``out``.

    Every task is carried over (same id, WorkUnit, source) with a plan drafted at
    ``plan_version`` from its burned plan (checks kept; v0.2 exact lines become
    substrings; v0.4 needs ``removed``: task id -> removed-line substrings its plan
    requires, or ``TASK=SUBSTRING`` texts as ``--removed`` takes them); a task the burn
    bans from held-out use is never held out (pilot). ``drop``: tasks left out;
    ``drop_banned``: leave out every task the burn bans. The ledger is only read.
    ``LifecycleError`` (exit 4) when the cohort is not burned."""
    import json

    from cohorts.successor_draft import draft_successor as draft_of
    from ledger.files import write_output

    draft = draft_of(
        ledger.store,
        burned_id,
        successor_id,
        version=plan_version,
        title=title,
        removed=_removed(removed),
        drop=drop,
        drop_banned=drop_banned,
    )

    def pretty(value: object) -> bytes:
        return (json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True) + "\n").encode()

    folder = Path(out)
    for rel, plan in sorted(draft.plans.items()):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        write_output(folder / rel, pretty(plan), "--out")
    write_output(folder / "cohort.json", pretty(draft.cohort), "--out")
    return SuccessorDraft(folder, draft)


def _removed(given: Mapping[str, Sequence[str]] | Sequence[str]) -> dict[str, list[str]]:
    if isinstance(given, Mapping):
        return {task: list(texts) for task, texts in given.items()}
    by_task: dict[str, list[str]] = {}
    for item in given:
        task, sep, text = item.partition("=")
        if not sep or not task or not text:
            from cohorts.errors import CohortInputError

            raise CohortInputError(f"--removed, got {item!r}, expected TASK=SUBSTRING")
        by_task.setdefault(task, []).append(text)
    return by_task


# --- the browse database -------------------------------------------------------------------


def default_browse_file(db: Where) -> Path:
    """Where ``build_index`` writes by default: ``ledger.db`` -> ``ledger.browse.db``
    beside it (a PostgreSQL database ``evidence`` -> ``./evidence.browse.db``)."""
    from cohorts.browse.build import default_out
    from ledger.api.ledger import ledger_location

    return default_out(ledger_location(db))


def build_index(
    ledger: Ledger, out: str | os.PathLike[str] | None = None, *, full: bool = False
) -> IndexReport:
    """Project the ledger into a browse database for auditors (``index``): SQLite tables
    of every object, entry, checkpoint, attestation, cohort, result and their judged
    standing, for Datasette. Incremental: only entries after the last one projected are
    read, unless ``full``. ``out``: default ``default_browse_file``. The ledger is only
    read; every object is checked as ``verify`` checks it before it is projected."""
    from cohorts.browse.build import build_index as build
    from cohorts.browse.build import default_out

    target = Path(out) if out is not None else default_out(ledger.location)
    return build(ledger.store, target, full=full)


def browse_app(
    browse: str | os.PathLike[str],
    *,
    ledger: Where | None = None,
    title: str | None = None,
) -> Datasette:
    """The Datasette app ``serve`` runs, on the browse database ``browse`` opened
    read-only with bounded SQL (docs/BROWSE.md), for a caller that mounts or tests it
    itself. ``ledger`` (opened read-only per request) lets result pages run provenance
    checks. Needs the optional web extra (``WebUnavailable``, exit 3, without it);
    ``NotFound`` (exit 3) when ``browse`` is not a file."""
    from cohorts.browse.web import make_app

    return make_app(_browse_file(Path(browse)), title, _served_ledger(ledger))


def serve_browse(
    browse: str | os.PathLike[str],
    *,
    ledger: Where | None = None,
    host: str = "127.0.0.1",
    port: int = 8001,
    title: str | None = None,
    started: Callable[[str], None] | None = None,
) -> None:
    """Serve ``browse_app(browse, ledger=ledger)`` read-only on ``host:port`` (port 0: a
    free one) until interrupted (``serve``). Whatever can refuse to start (no web extra,
    no browse file, the address: ``ServeError``) is raised, exit 3, before
    ``started(url)`` is called."""
    from cohorts.browse.web import ServeOptions, serve

    options = ServeOptions(_browse_file(Path(browse)), host, port, _served_ledger(ledger), title)
    serve(options, started=started or _ignore)


def _browse_file(path: Path) -> Path:
    from ledger.errors import NotFound

    if not path.is_file():
        raise NotFound(
            f"browse database not found, got {path}, expected one made by `provledger index`"
        )
    return path


def _served_ledger(ledger: Where | None) -> DbLocation | None:
    """The ledger result pages check: a server's always, a file only when there is one
    (without it, result pages say how to run the checks)."""
    from ledger.api.ledger import ledger_location
    from ledger.store.location import SQLitePath

    if ledger is None:
        return None
    where = ledger_location(ledger)
    return None if isinstance(where, SQLitePath) and not where.path.is_file() else where


def _ignore(_url: str) -> None:
    return None
