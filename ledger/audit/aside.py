"""The whole-file reads of an audit, run beside its pass.

SQLite's integrity check and the orphan and duplicate scans read the whole file and
need nothing from the pass. Given a second reader of the pass's snapshot
(``AuditSource.second_reader``), ``Aside`` runs them in a thread while the pass runs
(the database releases the GIL while a statement runs), so they use the core the pass
leaves idle instead of running after it.

What the audit reports does not change: each result is taken where the audit used to
compute it, and a read that raised raises there, in the same order. The thread runs
them in the order the audit takes them and stops at the first that raises, as the
audit would have stopped there.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ledger.store.base import SnapshotReader, StorageFinding

__all__ = ["Aside"]

#: A job's result, of that job's own type (findings, ids...): one thread hands them all
#: over, and each typed method below (``integrity_findings``...) names its own.
JobResult = Any


class Aside:
    """Runs ``integrity_findings`` (when ``whole``), ``orphan_objects(start)`` and
    ``duplicate_objects(start, limit)`` of ``reader`` in a thread; the methods of the
    same names wait for and give their result (or raise what the read raised)."""

    def __init__(self, reader: SnapshotReader, whole: bool, start: int, limit: int) -> None:
        self._reader = reader
        self._start, self._limit = start, limit
        self._jobs: list[tuple[str, Callable[[], JobResult]]] = [
            ("integrity", reader.integrity_findings if whole else list),
            ("orphans", lambda: reader.orphan_objects(start)),
            ("duplicates", lambda: reader.duplicate_objects(start, limit)),
        ]
        self._results: dict[str, tuple[bool, JobResult]] = {}
        self._done = {name: threading.Event() for name, _job in self._jobs}
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="audit-aside", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        _yield_the_cpu()
        for name, job in self._jobs:
            if self._stopping:
                break
            try:
                self._results[name] = (True, job())
            except BaseException as exc:  # raised where the audit takes this result
                self._results[name] = (False, exc)
                self._done[name].set()
                break
            self._done[name].set()
        for event in self._done.values():  # a later job never runs: nothing to wait for
            event.set()

    def _take(self, name: str) -> JobResult:
        self._done[name].wait()
        ok, value = self._results[name]  # present: the jobs before it did not raise
        if not ok:
            raise value
        return value

    def integrity_findings(self) -> list[StorageFinding]:
        found: list[StorageFinding] = self._take("integrity")
        return found

    def orphan_objects(self, start: int = 0) -> list[tuple[object, object]]:
        assert start == self._start
        rows: list[tuple[object, object]] = self._take("orphans")
        return rows

    def duplicate_objects(self, start: int = 0, limit: int = 100) -> list[tuple[object, object]]:
        assert (start, limit) == (self._start, self._limit)
        rows: list[tuple[object, object]] = self._take("duplicates")
        return rows

    def integrity_raised(self) -> BaseException | None:
        """What the integrity read raised (waiting for it), or None."""
        self._done["integrity"].wait()
        ok, value = self._results.get("integrity", (True, None))
        return None if ok else value

    def stop(self) -> None:
        """End the thread: interrupt the read under way, run no other; wait for it."""
        self._stopping = True
        # Again until it ends: an interrupt between two statements interrupts nothing.
        while self._thread.is_alive():
            self._reader.interrupt()
            self._thread.join(0.05)


# The niceness the reads run at: they are off the audit's critical path (the pass takes
# seconds longer), so they take the CPU the pass and its workers leave idle.
NICE = 10


def _yield_the_cpu() -> None:
    """Lower the calling thread's priority by ``NICE`` (Linux: a thread id is a valid
    target of ``setpriority``; elsewhere it would name a process, so nothing is done)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, os.getpriority(os.PRIO_PROCESS, tid) + NICE)
    except OSError:  # not permitted here: the reads run at the audit's priority
        pass
