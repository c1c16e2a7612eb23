"""Human text of a cohort audit: what a person acts on, in the order they act on it.

Pure: report (plus the attestation state of the notices and bindings it names) in,
lines out. Order: identity; for a burned cohort when and why (upstream's facts), the
excluded outcomes, the tasks never to reuse as held-out evidence; successors and
whether each binding is attested; outcomes by evidence strength; then findings grouped
by category (defects: wrong evidence; missing: not in the ledger; warnings), each group
counted and its codes counted, each line saying what was expected and what was found.
Lines are never shortened; the CLI prints them without markup or wrapping.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from cohorts.audit import CohortAuditReport, category
from cohorts.findings import CohortFinding

GROUPS = (
    ("defect", "defects (evidence present but wrong)"),
    ("missing", "missing evidence (not in the ledger, so not checked)"),
    ("warning", "warnings (look, not refused)"),
)


def _finding_line(f: CohortFinding) -> str:
    where = " / ".join(p for p in (f.task, f.attempt) if p)
    return f"  {f.code}{f' [{where}]' if where else ''}: {f.message}"


def _reference(ref: Mapping[str, object]) -> str:
    text = f"{ref.get('rel')} {ref.get('type')} {ref.get('ref')}"
    if ref.get("repository"):
        text += f" ({ref.get('repository')})"
    if ref.get("digest"):
        text += f" {ref.get('digest')}"
    return text


def audit_lines(
    report: CohortAuditReport,
    attested: Mapping[str, str],
    behavioral: Mapping[str, Sequence[str]] | None = None,
) -> list[str]:
    lines: list[str] = []
    counts = report.counts()
    digests = report.definition_digest
    lines.append(f"cohort {report.cohort_id}")
    unsure = ""
    if report.standing != "counts":
        unsure = f" ({report.standing}: does not count, never the authority's)"
    lines.append(f"stage {report.stage}{unsure}, {len(report.tasks)} task(s)")
    if report.recorded_definition_digest is not None or digests is not None:
        scheme = (
            digests.scheme_for(report.recorded_definition_digest)
            if digests and report.recorded_definition_digest
            else None
        )
        lines.append(
            f"definition digest recorded {report.recorded_definition_digest or 'none'}"
            + (f" (reproduces under {scheme})" if scheme else "")
        )
        if digests is not None:
            lines.append(f"  recomputed legacy {digests.legacy}")
            lines.append(f"  recomputed jcs    {digests.jcs}")
    burn = report.burn
    if burn is not None:
        lines.append("")
        lines.append(f"burned (from the {burn.source})")
        lines.append(f"  date: {burn.issued_at or 'not recorded upstream'}")
        lines.append(f"  reason: {burn.reason or 'not recorded'}")
        if burn.notice_digest is not None:
            lines.append(
                f"  burn notice {burn.notice_digest}:"
                f" {attested.get(burn.notice_digest, 'not attested')}"
            )
            if report.burn_recorded is not None:
                head, *rest = report.burn_recorded.lines()
                lines.append(f"  ledger learnt it: {head}")
                lines += [f"    {line}" for line in rest]
        for ref in burn.references:
            lines.append(f"  {_reference(ref)}")
        lines.append(f"excluded outcomes ({len(report.excluded_outcomes)}):")
        for item in report.excluded_outcomes:
            lines.append(f"  {item.task}: {item.reason}")
        lines.append(f"never reuse as held-out evidence ({len(burn.never_again_held_out)}):")
        for item in burn.never_again_held_out:
            lines.append(f"  {item.task}: {item.reason}")
    if report.successor_links or report.relations.predecessors:
        lines.append("")
    for pred_digest, pred_id in report.relations.predecessors:
        lines.append(f"predecessor {pred_id or 'not in the ledger'} (definition {pred_digest})")
    for bound in report.bound:
        lines.append(
            f"bound to {bound.predecessor_id} by binding {bound.digest}:"
            f" {attested.get(bound.digest, 'not attested')}"
        )
        lines += bound.lines()
    if report.successor_links:
        lines.append(f"successors ({len(report.successor_links)}):")
        for link in report.successor_links:
            how = ", ".join(link.claimed_in) if link.claimed_in else "no claim in extensions"
            lines.append(f"  {link.cohort_id} ({link.stage}): claims this cohort in {how}")
            if not link.bindings:
                lines.append("    binding: none recorded (not bound by the ledger)")
            for b in link.bindings:
                lines.append(f"    binding {b}: {attested.get(b, 'not attested')}")
    strength = report.strength_counts()
    if strength:
        lines.append("")
        lines.append("outcomes by evidence strength:")
        for row in strength:
            lines.append(
                f"  {row['count']} x {row['strength']}: verdict {row['status']},"
                f" indexed outcome {row['outcome']}"
            )
        lines.append(
            "  (patch-verifier verdicts are text-matching proxies, never proof of runtime"
            " correctness; behavioral evidence is a separate channel)"
        )
        linked = behavioral or {}
        for task in report.tasks:
            for attempt in task.attempts:
                doc = attempt.verification_result.doc
                for evidence in linked.get(doc.jcs_digest, []) if doc is not None else []:
                    lines.append(
                        f"  behavioral evidence for {task.task} / {attempt.attempt}: {evidence}"
                    )
    lines += preregistration_lines(report)
    if report.replay is not None:
        lines.append("")
        lines.append(f"replay (re-judged from stored inputs): {len(report.replay)} outcome(s)")
        for r in report.replay:
            lines.append(f"  {r.task} / {r.attempt}: {r.replay.line()}")
    lines += findings_lines(report.findings)
    lines.append("")
    lines.append(
        f"result: {counts['defect']} defect(s), {counts['missing']} missing, "
        f"{counts['warning']} warning(s) -> {'ok' if report.ok else 'FAILED'}"
    )
    return lines


def findings_lines(findings: Sequence[CohortFinding]) -> list[str]:
    lines: list[str] = []
    for key, title in GROUPS:
        group = [f for f in findings if category(f) == key]
        if not group:
            continue
        by_code = Counter(f.code for f in group)
        summary = ", ".join(f"{code} x{n}" for code, n in sorted(by_code.items()))
        lines.append("")
        lines.append(f"{title}: {len(group)} ({summary})")
        lines += [_finding_line(f) for f in group]
    return lines


def preregistration_lines(report: CohortAuditReport) -> list[str]:
    """Each listed outcome judged from log positions (``cohorts.timeline``)."""
    if not report.preregistration:
        return []
    counts = report.preregistration_counts()
    lines = [
        "",
        "pre-registration (from log positions: a log proves order, not wall-clock time):",
        f"  {counts['pre_registered']} pre-registered, {counts['not_pre_registered']} not"
        f" pre-registered (not counted), {counts['order_not_attested']} order not attested,"
        f" {counts['not_judged']} not judged",
    ]
    for judged in report.preregistration:
        lines += [f"  {line}" for line in judged.lines()]
    return lines
