"""provledger's Python API, cohort part: freeze, burn, bind, audit, provenance, import.

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

from ledger.api.ledger import Ledger

if TYPE_CHECKING:
    from cohorts.audit import CohortAuditReport
    from cohorts.findings import CohortFinding
    from cohorts.importer import ImportReport
    from cohorts.provenance import ProvenanceReport
    from cohorts.service import CohortRow, Written
    from ledger.encoding.values import JSONObject
    from ledger.store.base import LedgerReader
    from ledger.trust.keys import Signer

__all__ = [
    "CohortAudit",
    "CohortDigests",
    "CohortSummary",
    "CohortWrite",
    "WrittenObject",
    "audit",
    "audit_all",
    "bind",
    "burn",
    "definition_digest",
    "freeze",
    "import_idkmesh",
    "list_cohorts",
    "provenance",
    "record_outcome",
]

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
class CohortAudit:
    """A stored cohort audited (``cohort audit ID --json``): the report, the attestation
    state of every burn notice and binding it names, and the behavioral evidence linked
    to each VerificationResult it lists. ``ok`` iff no defect and no missing evidence."""

    report: CohortAuditReport
    attestations: Mapping[str, str]
    behavioral: Mapping[str, Sequence[str]]

    @classmethod
    def of(cls, reader: LedgerReader, cohort_id: str) -> CohortAudit:
        """The audit of ``cohort_id`` on any reader of a ledger (the one way it is built:
        ``cohort audit`` and the browse projection's stored audits alike)."""
        from cohorts import service

        report = service.audit_stored_cohort(reader, cohort_id)
        return cls(
            report,
            service.audit_attestations(reader, report),
            service.audit_behavioral(reader, report),
        )

    @property
    def ok(self) -> bool:
        return self.report.ok

    def to_json(self) -> dict[str, object]:
        from cohorts.service import audit_report_json

        return audit_report_json(
            self.report,
            dict(self.attestations),
            {k: list(v) for k, v in self.behavioral.items()},
        )


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


def audit(ledger: Ledger, cohort_id: str) -> CohortAudit:
    """Audit the stored cohort ``cohort_id`` (its newest document with standing) against
    the ledger: burn facts, successors, evidence strength, then every defect, missing
    item and warning. ``NotFound`` (exit 3) when the ledger has no such cohort."""
    return CohortAudit.of(ledger.store, cohort_id)


def audit_all(ledger: Ledger) -> list[CohortSummary]:
    """Every stored cohort audited, one summary each, sorted by id (``cohort audit --all``)."""
    from cohorts import service

    out = []
    for row in service.cohort_rows(ledger.store):
        report = service.audit_stored_cohort(ledger.store, row.cohort_id)
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


def provenance(ledger: Ledger, ref: str) -> ProvenanceReport:
    """Verify one VerificationResult's whole chain (``provenance``): its bytes and
    attestations, the WorkUnit, plan and ResultManifest it names, the worker's files, the
    cohorts that list it and the inclusion of each link in the log; ``outcome`` says
    whether a stored cohort counts it. ``NotFound`` / ``InputError`` (exit 3) when ``ref``
    names no VerificationResult."""
    from cohorts.provenance import provenance_of

    return provenance_of(ledger.store, ref)


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
