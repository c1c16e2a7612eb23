"""Exception hierarchy of the cohorts package.

``CohortError`` is the package root. Rule refusals mix in ``RuleViolation`` (exit 4),
bad cohort documents mix in ``InputError`` (exit 3) and failed audits mix in
``CheckFailed`` (exit 1), so the CLI's one exception-to-exit-code mapping covers them.
``CohortError`` itself defines no ``exit_code``: the mixin's code wins by MRO.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ledger.errors import CheckFailed, InputError, LedgerError, RuleViolation, UsageError

if TYPE_CHECKING:
    from cohorts.findings import CohortFinding


class CohortError(LedgerError):
    """Root of every cohorts error."""


class CohortInputError(CohortError, InputError):
    """A cohort-related document is malformed or names an unknown stage (exit 3)."""


class CohortUsageError(CohortError, UsageError):
    """A cohort command given a combination of arguments it cannot run (exit 2)."""

    exit_code = 2


class DefinitionError(CohortInputError):
    """A field the definition projection commits to is missing or has the wrong type."""


class LifecycleError(CohortError, RuleViolation):
    """A stage transition or a frozen-definition change is refused (exit 4)."""

    exit_code = 4


class GateError(CohortError, RuleViolation):
    """A freeze, burn or successor gate failed; ``failures`` holds every failed item (exit 4)."""

    exit_code = 4

    def __init__(self, gate: str, failures: Sequence[CohortFinding]) -> None:
        self.gate = gate
        self.failures: tuple[CohortFinding, ...] = tuple(failures)
        shown = "; ".join(f"{f.code}{_where(f)}" for f in self.failures[:5])
        more = f"; and {len(self.failures) - 5} more" if len(self.failures) > 5 else ""
        super().__init__(
            f"{gate} gate refused, got {len(self.failures)} failed item(s) ({shown}{more}),"
            " expected every gate item to pass"
        )

    def to_json(self) -> dict[str, object]:
        """What ``cohort freeze|burn|bind --json`` prints for the refusal."""
        return {"ok": False, "gate": self.gate, "failures": [f.to_json() for f in self.failures]}


class AuditFailed(CohortError, CheckFailed):
    """An audit found at least one error-severity finding (exit 1)."""

    exit_code = 1


def _where(finding: CohortFinding) -> str:
    parts = [p for p in (finding.task, finding.attempt) if p]
    return f" [{' / '.join(parts)}]" if parts else ""
