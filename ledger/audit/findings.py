"""What an audit reports: one ``LedgerFinding`` per problem, with a stable code and a location."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LedgerFinding:
    """One problem. ``code`` is stable (for a replayed admission rule: the rule);
    ``seq``/``digest``/``checkpoint`` locate it; ``remedy``, when there is one, is the
    command that does properly what the entry tried."""

    code: str
    message: str
    seq: int | None = None
    digest: str | None = None
    checkpoint: int | None = None
    remedy: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "code": self.code,
            "message": self.message,
            "seq": self.seq,
            "digest": self.digest,
            "checkpoint": self.checkpoint,
            "remedy": self.remedy,
        }
