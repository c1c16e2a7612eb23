"""Judgements over the whole log, projected for the auditor's pages: cohort audits.

Most browse rows depend on one object and the log before it (``project``). An audit
does not: whether a cohort's evidence is present, which cohorts succeed it and whether
the ledger bound them are facts about the whole log. ``judge(store, size)`` runs the
audit engine itself, ``cohorts.service.audit`` (what ``provledger cohort audit ID
--json`` prints), on every cohort id ``cohorts.service.cohort_rows`` lists, and turns
each report into rows of ``cohort_audits`` (the report itself, as JSON text, plus its
counts), ``audit_findings`` (each finding with its code's meaning,
``cohorts.meanings``) and ``successor_links``.

Invariants:
- The rows are a function of the ledger up to ``size`` only, so an incremental build
  and a full build of the same ledger give the same rows, and ``verify --browse``
  re-derives them. ``build`` replaces the three tables whole on every run that
  projects new entries (they are judged at the projection's last entry, and say so in
  ``judged_size``). A writer appending while ``index`` runs can make the audit read
  entries past ``size``; the next run judges again.
- Nothing here decides anything: the audit engine does. The pages show these rows;
  no SQL re-derives a verdict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cohorts.audit import CohortAuditReport, category
from cohorts.meanings import meaning
from ledger.errors import LedgerError
from ledger.store.base import LedgerReader

if TYPE_CHECKING:
    from cohorts.service import CohortRow

Row = dict[str, object]  # one row to write into the browse database

#: The tables this module fills, in the order they are written.
JUDGED_TABLES = ("cohort_audits", "audit_findings", "successor_links")


def audit_json(
    store: LedgerReader, cohort_id: str
) -> tuple[CohortAuditReport, dict[str, object]]:
    """The audit of ``cohort_id`` and its JSON exactly as ``cohort audit ID --json``
    (``cohorts.api.CohortAudit``)."""
    from cohorts.audited import CohortAudit

    audited = CohortAudit.of(store, cohort_id)
    return audited.report, audited.to_json()


def status(counts: Mapping[str, int]) -> str:
    """``ok``, ``defects`` or ``missing``: the worse of what the audit found."""
    if counts["defect"]:
        return "defects"
    if counts["missing"]:
        return "missing"
    return "ok"


def _unreadable(listed: CohortRow, size: int, exc: LedgerError) -> Row:
    return {
        "cohort_id": listed.cohort_id,
        "stage": listed.stage,
        "status": "unreadable",
        "defects": 0,
        "missing": 0,
        "warnings": 0,
        "outcomes": 0,
        "excluded": 0,
        "attested": listed.attested,
        "record_digest": listed.record_digest,
        "judged_size": size,
        "report": json.dumps({"error": str(exc)}),
    }


def judge(store: LedgerReader, size: int) -> dict[str, list[Row]]:
    """Rows of the judged tables for the ledger up to ``size`` entries."""
    from cohorts.service import cohort_rows

    out: dict[str, list[Row]] = {name: [] for name in JUDGED_TABLES}
    for listed in cohort_rows(store):
        try:
            report, shown = audit_json(store, listed.cohort_id)
        except LedgerError as exc:
            # The audit is total over documents; a store that fails to read is said so.
            out["cohort_audits"].append(_unreadable(listed, size, exc))
            continue
        counts = report.counts()
        out["cohort_audits"].append(
            {
                "cohort_id": listed.cohort_id,
                "stage": report.stage if report.stage is not None else listed.stage,
                "status": status(counts),
                "defects": counts["defect"],
                "missing": counts["missing"],
                "warnings": counts["warning"],
                "outcomes": sum(len(t.attempts) for t in report.tasks),
                "excluded": len(report.excluded_outcomes),
                "attested": listed.attested,
                "record_digest": listed.record_digest,
                "judged_size": size,
                "report": json.dumps(shown, sort_keys=True, ensure_ascii=False),
            }
        )
        for position, finding in enumerate(report.findings):
            out["audit_findings"].append(
                {
                    "cohort_id": listed.cohort_id,
                    "position": position,
                    "category": category(finding),
                    "code": finding.code,
                    "meaning": meaning(finding.code),
                    "task_id": finding.task,
                    "attempt_id": finding.attempt,
                    "message": finding.message,
                }
            )
        for link in report.successor_links:
            out["successor_links"].append(
                {
                    "predecessor_id": listed.cohort_id,
                    "successor_id": link.cohort_id,
                    "successor_stage": link.stage,
                    "claimed_in": "; ".join(link.claimed_in),
                    "binding_digest": link.bindings[-1] if link.bindings else None,
                    "bindings": len(link.bindings),
                }
            )
    return out
