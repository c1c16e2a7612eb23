"""``verify --witness-key``: the newest checkpoint must carry a quorum of cosignatures.

The newest stored checkpoint is the one thing a ledger file cannot vouch for by itself
(whoever can rewrite the file can re-sign it with the log key). Witness cosignatures are
the outside anchor: a witness cosigns only a tree consistent with everything it cosigned
before, so a quorum of valid cosignatures on the newest checkpoint means that tree is the
one the witnesses saw, not a fork or a truncated and re-grown log.

Findings (codes are stable): ``witness-no-checkpoint`` (nothing to check),
``witness-cosignature-invalid`` (a line by a trusted witness that does not verify over the
newest checkpoint), ``witness-quorum`` (fewer than ``quorum`` trusted witnesses cosigned).
"""

from __future__ import annotations

from dataclasses import dataclass

from ledger.audit.findings import LedgerFinding
from ledger.errors import LedgerError
from ledger.log.cosignature import WitnessKey, check_cosignatures
from ledger.log.note import parse_note
from ledger.store.base import LedgerReader


@dataclass(frozen=True)
class WitnessReport:
    """Findings plus what was checked, for ``--json``."""

    findings: tuple[LedgerFinding, ...]
    info: dict[str, object]


def check_witnesses(
    store: LedgerReader, keys: list[WitnessKey], quorum: int, now: int | None = None
) -> WitnessReport:
    """Count valid cosignatures by ``keys`` on the newest stored checkpoint."""
    rows = store.checkpoints()
    info: dict[str, object] = {
        "quorum": quorum,
        "witnesses": [k.vkey() for k in keys],
        "checkpoint": None,
        "unwitnessed_entries": store.size(),
    }
    if not rows:
        finding = LedgerFinding("witness-no-checkpoint", "no checkpoint to check cosignatures on")
        return WitnessReport((finding,), info)
    row = rows[-1]
    info["checkpoint"] = row.size
    info["unwitnessed_entries"] = store.size() - row.size
    lines = store.cosignatures(row.size)
    findings: list[LedgerFinding] = []
    try:
        body = parse_note(row.note).body
        signatures = parse_note(
            row.note + "".join(line + "\n" for line in lines).encode("utf-8")
        ).signatures
    except LedgerError as exc:
        finding = LedgerFinding(
            "witness-cosignature-invalid",
            f"checkpoint at size {row.size} with its cosignatures does not parse: {exc}",
            checkpoint=row.size,
        )
        return WitnessReport((finding,), info)
    result = check_cosignatures(body, signatures, keys, now)
    info.update(result.to_json())
    for label, error in result.invalid:
        findings.append(
            LedgerFinding(
                "witness-cosignature-invalid",
                f"checkpoint at size {row.size}: cosignature by {label}: {error}",
                checkpoint=row.size,
            )
        )
    if len(result.valid) < quorum:
        names = ", ".join(k.label for k, _ in result.valid) or "none"
        findings.append(
            LedgerFinding(
                "witness-quorum",
                f"checkpoint at size {row.size} has {len(result.valid)} valid cosignature(s)"
                f" by trusted witnesses ({names}), expected at least {quorum}",
                checkpoint=row.size,
            )
        )
    return WitnessReport(tuple(findings), info)
