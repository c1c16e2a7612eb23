"""Value objects a semantic verifier hands to the runner.

Invariants: an ``Evidence`` with ``body`` has ``digest == sha256(body)`` and ``body``
is RFC 8785 canonical JSON; evidence without ``body`` hashes external bytes (the
candidate artifact, the ResultManifest). Everything here is plain data: building a
report never touches the filesystem.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from ledger.encoding.canonical import canonicalize
from ledger.encoding.digest import sha256_digest

CheckStatus = Literal["passed", "failed"]


@dataclass(frozen=True)
class Evidence:
    """One VerificationResult evidence item, with the inline observation bytes if any."""

    id: str
    type: str
    locator: str
    digest: str
    description: str
    media_type: str = "application/json"
    body: bytes | None = None

    @classmethod
    def inline(
        cls, evidence_id: str, evidence_type: str, description: str, value: object
    ) -> Evidence:
        """Evidence whose digest covers the canonical bytes of ``value``."""
        body = canonicalize(value)
        return cls(
            id=evidence_id,
            type=evidence_type,
            locator=f"inline://{evidence_id}",
            digest=sha256_digest(body),
            description=description,
            body=body,
        )

    def as_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "type": self.type,
            "locator": self.locator,
            "digest": self.digest,
            "media_type": self.media_type,
            "description": self.description,
        }


@dataclass(frozen=True)
class ResultFinding:
    """One VerificationResult finding (severity and category use upstream's enums)."""

    severity: str
    category: str
    summary: str
    path: str | None = None
    line: int | None = None

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "severity": self.severity,
            "category": self.category,
            "summary": self.summary,
        }
        if self.path is not None:
            out["path"] = self.path
        if self.line is not None and self.line >= 1:
            out["line"] = self.line
        return out


@dataclass(frozen=True)
class Check:
    """The outcome for one required validator id."""

    id: str
    status: CheckStatus
    summary: str
    evidence_ids: tuple[str, ...]
    diagnostics: str | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"


@dataclass(frozen=True)
class InputArtifact:
    """A worker file the verifier read: for the ledger to keep as a blob.

    ``data`` is None when the bytes were not kept (the digest still covers them all).
    """

    role: Literal["candidate", "log"]
    name: str
    locator: str
    digest: str
    size: int
    data: bytes | None
    media_type: str


@dataclass(frozen=True)
class VerifierReport:
    """What one semantic verifier observed; the runner turns it into a VerificationResult."""

    checks: tuple[Check, ...]
    evidence: tuple[Evidence, ...]
    findings: tuple[ResultFinding, ...]
    metrics: Mapping[str, int]
    inputs: tuple[InputArtifact, ...]
    summary: str
    extensions: Mapping[str, object] = field(default_factory=dict)
