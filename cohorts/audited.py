"""A stored cohort audited, with what the audit reads beside the report: the one value
``cohort audit ID --json`` prints and the browse projection stores (``cohorts.api``
re-exports it; kept here so the projection, which ``cohorts.api`` builds, need not import
the API back)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cohorts.audit import CohortAuditReport
    from ledger.log.cosignature import WitnessKey
    from ledger.store.base import LedgerReader


@dataclass(frozen=True)
class CohortAudit:
    """A stored cohort audited (``cohort audit ID --json``): the report, the attestation
    state of every burn notice and binding it names, and the behavioral evidence linked
    to each VerificationResult it lists. ``ok`` iff no defect and no missing evidence."""

    report: CohortAuditReport
    attestations: Mapping[str, str]
    behavioral: Mapping[str, Sequence[str]]

    @classmethod
    def of(
        cls,
        reader: LedgerReader,
        cohort_id: str,
        *,
        replay: bool = False,
        witness_keys: Sequence[WitnessKey] = (),
    ) -> CohortAudit:
        """The audit of ``cohort_id`` on any reader of a ledger (the one way it is built:
        ``cohort audit`` and the browse projection's stored audits alike); ``replay`` and
        ``witness_keys`` as ``cohorts.api.audit``."""
        from cohorts import service

        report = service.audit_stored_cohort(reader, cohort_id, witness_keys=witness_keys)
        if replay:
            report = service.with_replay(reader, report)
        return cls(
            report,
            service.audit_attestations(reader, report),
            service.audit_behavioral(reader, report),
        )

    @property
    def ok(self) -> bool:
        return self.report.ok

    def lines(self) -> list[str]:
        """The audit as a person reads it (``cohort audit`` without ``--json``)."""
        from cohorts.audit_view import audit_lines

        return audit_lines(self.report, self.attestations, self.behavioral)

    def to_json(self) -> dict[str, object]:
        from cohorts.service import audit_report_json

        return audit_report_json(
            self.report,
            dict(self.attestations),
            {k: list(v) for k, v in self.behavioral.items()},
        )
