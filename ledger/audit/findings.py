"""What an audit reports: one ``LedgerFinding`` per problem, with a stable code and a location."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class LedgerFinding:
    """One problem. ``code`` is stable; ``seq``/``digest``/``checkpoint`` locate it."""

    code: str
    message: str
    seq: int | None = None
    digest: str | None = None
    checkpoint: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "seq": self.seq,
            "digest": self.digest,
            "checkpoint": self.checkpoint,
        }
