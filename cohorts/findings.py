"""Findings: the one result shape of every cohort check (freeze, burn, bind, audit).

A finding names a check by a stable dotted ``code``; ``severity`` says how it came out:
``error`` (the check failed; gates refuse), ``warning`` (an auditor should look; does
not refuse) or ``info`` (the check passed and records what it matched, e.g. which digest
scheme). ``task``/``attempt`` locate it. ``scheme`` is set on digest checks that matched.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "info"]
DigestScheme = Literal["legacy", "jcs", "both"]

_SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}


@dataclass(frozen=True)
class CohortFinding:
    """One evaluated check. ``message`` is one line: what, got X, expected Y."""

    code: str
    severity: Severity
    message: str
    task: str | None = None
    attempt: str | None = None
    scheme: DigestScheme | None = None

    def to_json(self) -> dict[str, object]:
        """Stable JSON shape: every key always present."""
        return {
            "code": self.code,
            "severity": self.severity,
            "task": self.task,
            "attempt": self.attempt,
            "scheme": self.scheme,
            "message": self.message,
        }

    @property
    def key(self) -> tuple[str, str | None, str | None]:
        """(code, task, attempt): what tests and diffs compare on."""
        return (self.code, self.task, self.attempt)


def error(
    code: str, message: str, task: str | None = None, attempt: str | None = None
) -> CohortFinding:
    return CohortFinding(code, "error", message, task, attempt)


def warning(
    code: str, message: str, task: str | None = None, attempt: str | None = None
) -> CohortFinding:
    return CohortFinding(code, "warning", message, task, attempt)


def info(
    code: str,
    message: str,
    task: str | None = None,
    attempt: str | None = None,
    scheme: DigestScheme | None = None,
) -> CohortFinding:
    return CohortFinding(code, "info", message, task, attempt, scheme)


def errors(findings: Iterable[CohortFinding]) -> list[CohortFinding]:
    """The error-severity findings, in their original order."""
    return [f for f in findings if f.severity == "error"]


def problems(findings: Iterable[CohortFinding]) -> list[CohortFinding]:
    """Errors and warnings (drops info), in their original order."""
    return [f for f in findings if f.severity != "info"]


def sort_key(finding: CohortFinding) -> tuple[str, str, str, int, str, str]:
    """Deterministic report order: cohort-level first, then by task, attempt, code."""
    return (
        finding.task or "",
        finding.attempt or "",
        finding.code,
        _SEVERITY_ORDER[finding.severity],
        finding.message,
        finding.scheme or "",
    )


def scheme_text(scheme: DigestScheme) -> str:
    """Human wording of a matched scheme for messages."""
    return {
        "both": "legacy and JCS (identical)",
        "legacy": "legacy upstream serialization only",
        "jcs": "RFC 8785 (JCS) only",
    }[scheme]
