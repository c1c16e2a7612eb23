"""Running the per-object check over the audit's rows, optionally in worker processes.

``with_object_checks`` yields ``(row, check_object result)`` in row order, with a
bounded window of chunks in flight; below ``POOL_THRESHOLD`` entries it runs in process.
"""

from __future__ import annotations

import multiprocessing
import os
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from ledger.audit.object_check import CheckResult, check_object
from ledger.store.base import RawLogRow, RawObjectRow, unchecked_object

# Below this many entries a worker pool costs more than it saves.
POOL_THRESHOLD = 20_000
_CHUNK = 256  # rows per task sent to a worker


def _check_rows(rows: list[RawObjectRow]) -> list[CheckResult | None]:
    out: list[CheckResult | None] = []
    for row in rows:
        try:
            out.append(check_object(unchecked_object(row)))
        except Exception:
            out.append(None)  # the audit recomputes (and reports) this row itself
    return out


def default_workers(entries: int) -> int:
    """Worker processes for an audit of ``entries``: 1 (in process) below the threshold."""
    if entries < POOL_THRESHOLD:
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(2, cpus))


def with_object_checks(
    rows: Iterable[RawLogRow], workers: int = 1
) -> Iterator[tuple[RawLogRow, CheckResult | None]]:
    """Yield ``(row, check)`` in row order; ``check`` is None when the row has no object.

    None may also mean "not computed here": the caller then runs ``check_object`` itself.
    """

    def chunks() -> Iterator[list[RawLogRow]]:
        batch: list[RawLogRow] = []
        for row in rows:
            batch.append(row)
            if len(batch) == _CHUNK:
                yield batch
                batch = []
        if batch:
            yield batch

    def pick(batch: list[RawLogRow]) -> list[RawObjectRow]:
        return [row.object for row in batch if row.object is not None]

    def merge(
        batch: list[RawLogRow], results: list[CheckResult | None]
    ) -> Iterator[tuple[RawLogRow, CheckResult | None]]:
        it = iter(results)
        for row in batch:
            yield row, (next(it) if row.object is not None else None)

    if workers <= 1:
        for batch in chunks():
            yield from merge(batch, _check_rows(pick(batch)))
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    window: deque[tuple[list[RawLogRow], Any]] = deque()
    with context.Pool(workers) as pool:
        for batch in chunks():
            task = pool.apply_async(_check_rows, (pick(batch),))
            window.append((batch, task))
            if len(window) > 2 * workers:
                done, result = window.popleft()
                yield from merge(done, result.get())
        while window:
            done, result = window.popleft()
            yield from merge(done, result.get())
