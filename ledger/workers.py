"""The process pool behind ``import jsonl`` and ``verify``: ``multiprocessing.Pool``
with three changes, each for a measured or observed failure of the stock one.

- The worker-handler thread does not watch the result pipe. The stock handler waits on
  it too, so it spins while a large result is being read (~10 us of the importer's CPU
  per object). It only needs to wake when a worker exits (worker sentinels, still
  watched) or the pool changes state: the sentinels of ``multiprocessing.pool.ThreadPool``.
  Workers still exit when the parent dies (their task pipe closes), and ``terminate``
  still ends them.
- ``terminate`` does not hang when it kills a worker that is sending a result. The
  worker then dies holding the result queue's write lock, and the stock task thread,
  on its way out, waits for that lock for ever to put its final sentinel (seen as
  Ctrl-C hanging ``import jsonl`` in about 1 run of 17). The pool's sentinels (``None``)
  wait for the lock at most ``SENTINEL_WAIT_S`` here and are skipped after that: by then
  the result thread has had the parent's own sentinel, put while every worker was
  alive and the lock could only be held briefly.
- Workers never see Ctrl-C. SIGINT reaches the whole process group; a worker must
  ignore it (the parent handles it and ends the pool), but a worker that gets it
  between its fork and its first line of code dies with a traceback (seen under load in
  ``test_ctrl_c_ends_a_pooled_verify``). The parent therefore blocks SIGINT while it
  forks, so each worker is born with it blocked, ignores it, then unblocks it: a signal
  that arrived in between is discarded in the worker and delivered in the parent.
- The task and result pipes are widened to ``PIPE_BYTES`` (Linux ``F_SETPIPE_SZ``): a
  ~1.3 MB result then arrives in two reads instead of ~20, and the parent's result
  thread needs the GIL back after each read while the main thread is busy.
"""

from __future__ import annotations

import contextlib
import multiprocessing.pool
import multiprocessing.queues
import os
import signal
from collections.abc import Callable
from multiprocessing.reduction import ForkingPickler
from typing import Any

try:
    import fcntl
except ImportError:  # not on POSIX
    fcntl = None  # type: ignore[assignment]

PIPE_BYTES = 1 << 20
SENTINEL_WAIT_S = 1.0


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity on Linux), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


class ResultQueue(multiprocessing.queues.SimpleQueue[Any]):  # any task's pickled result
    """The pool's result queue: a sentinel gives up on a lock a killed worker holds."""

    def put(self, obj: Any) -> None:  # (as above)
        if obj is not None or self._wlock is None:  # type: ignore[attr-defined]
            super().put(obj)  # results (workers never put None)
            return
        data = ForkingPickler.dumps(None)
        if not self._wlock.acquire(timeout=SENTINEL_WAIT_S):  # type: ignore[attr-defined]
            return  # held by a worker killed while sending (module docstring)
        try:
            self._writer.send_bytes(data)  # type: ignore[attr-defined]
        finally:
            self._wlock.release()  # type: ignore[attr-defined]


def _start_worker(initializer: Callable[..., object] | None, *args: object) -> None:
    """A worker's first step: ignore SIGINT (blocked since the fork), then unblock it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if initializer is not None:
        initializer(*args)


class Pool(multiprocessing.pool.Pool):
    """``multiprocessing.Pool`` with the changes in the module docstring."""

    def __init__(
        self,
        processes: int | None = None,
        initializer: Callable[..., object] | None = None,
        initargs: tuple[Any, ...] = (),  # multiprocessing.Pool's own signature
        **kwargs: Any,  # (as above)
    ) -> None:
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            super().__init__(processes, _start_worker, (initializer, *initargs), **kwargs)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def _setup_queues(self) -> None:
        super()._setup_queues()  # type: ignore[misc]
        self._outqueue._reader.close()  # type: ignore[has-type]
        self._outqueue._writer.close()  # type: ignore[has-type]
        self._outqueue = ResultQueue(ctx=self._ctx)  # type: ignore[attr-defined]
        self._quick_get = self._outqueue._reader.recv  # type: ignore[attr-defined]
        setpipe = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
        if setpipe is None:
            return
        for end in (self._inqueue._writer, self._outqueue._reader):  # type: ignore[attr-defined]
            with contextlib.suppress(OSError):  # refused: the default buffer is kept
                fcntl.fcntl(end.fileno(), setpipe, PIPE_BYTES)

    def _get_sentinels(self) -> list[Any]:  # multiprocessing's private hook, untyped
        return [self._change_notifier._reader]  # type: ignore[attr-defined]
