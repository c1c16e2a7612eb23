"""Reads under a candidate root cannot escape, even while the worker swaps paths.

A second process flips a directory (and, separately, the file itself) between a real
entry inside the root and a symlink to a directory outside it, as fast as it can, while
this process reads the same locator a bounded number of times. Every read must return
the inside bytes or a named refusal; none may return the outside bytes, none may raise.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger.confined import read_in_root

READS = 20_000
INSIDE, OUTSIDE = b"inside the root\n", b"SECRET outside the root\n"


def _flip_directory(root: str, outside: str, stop: multiprocessing.synchronize.Event) -> None:
    entry, parked = os.path.join(root, "logs"), os.path.join(root, "logs.real")
    while not stop.is_set():
        os.rename(entry, parked)
        os.symlink(outside, entry)
        os.unlink(entry)
        os.rename(parked, entry)


def _flip_file(root: str, outside: str, stop: multiprocessing.synchronize.Event) -> None:
    entry, parked = os.path.join(root, "logs", "out.txt"), os.path.join(root, "out.real")
    while not stop.is_set():
        os.rename(entry, parked)
        os.symlink(os.path.join(outside, "out.txt"), entry)
        os.unlink(entry)
        os.rename(parked, entry)


@pytest.mark.parametrize("flipper", [_flip_directory, _flip_file])
def test_flipping_symlinks_never_lets_a_read_escape(
    tmp_path: Path, flipper: Callable[..., None]
) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "logs").mkdir(parents=True)
    outside.mkdir()
    (root / "logs" / "out.txt").write_bytes(INSIDE)
    (outside / "out.txt").write_bytes(OUTSIDE)
    ctx = multiprocessing.get_context("fork")
    stop = ctx.Event()
    worker = ctx.Process(target=flipper, args=(str(root), str(outside), stop), daemon=True)
    worker.start()
    statuses: dict[str, int] = {}
    escaped = 0
    try:
        for _ in range(READS):
            obs = read_in_root(root, "logs/out.txt", max_bytes=1 << 10)
            statuses[obs.status] = statuses.get(obs.status, 0) + 1
            if obs.data == OUTSIDE or (obs.data is not None and obs.data != INSIDE):
                escaped += 1
    finally:
        stop.set()
        worker.join(30)
    assert worker.exitcode == 0, "the flipper crashed: the race did not run"
    assert escaped == 0, statuses
    # Named refusals only ("not_regular": a path part was briefly not a directory).
    assert set(statuses) <= {"read", "missing", "symlink", "not_regular"}, statuses
    # The race really happened: both clean reads and refusals were observed.
    assert statuses.get("read", 0) > 0 and statuses.get("read", 0) < READS, statuses
