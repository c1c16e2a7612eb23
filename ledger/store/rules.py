"""Checkpoint rules every backend applies, written once.

A store keeps at most one checkpoint per log size and never replaces one: a copied
checkpoint must name the current log size (``copied_checkpoint_is_new``), and the
head's checkpoint is the stored one when there is one, else a newly signed one that
must be for exactly the current size (``head_checkpoint``).
"""

from __future__ import annotations

from collections.abc import Callable

from ledger.errors import AppendOnlyError, RuleViolation
from ledger.store.base import CheckpointRow


def copied_checkpoint_is_new(row: CheckpointRow, existing: CheckpointRow | None, size: int) -> bool:
    """True when ``row`` is to be stored; False when that very row is already stored.

    Raises ``AppendOnlyError`` for another note at its size and ``RuleViolation`` when
    its size is not the log size ``size``.
    """
    if existing is not None:
        if existing != row:
            raise AppendOnlyError(
                f"checkpoint at size {row.size} exists, got another note, expected the source's"
            )
        return False
    if row.size != size:
        raise RuleViolation(f"copied checkpoint, got size {row.size}, expected the log size {size}")
    return True


def head_checkpoint(
    size: int, existing: CheckpointRow | None, sign: Callable[[int], CheckpointRow]
) -> CheckpointRow:
    """The stored checkpoint of the log size ``size``, or ``sign``'s row for it."""
    if existing is not None:
        return existing
    signed = sign(size)
    if signed.size != size:
        raise AppendOnlyError(f"checkpoint, got size {signed.size}, expected the log size {size}")
    return signed
