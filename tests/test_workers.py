"""The process pool behind ``import jsonl`` and ``verify`` (``ledger.workers.Pool``)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# Run in a child interpreter: ``os.register_at_fork`` cannot be undone. The hook runs in
# each forked worker before any of its own code, which is exactly the window in which a
# Ctrl-C used to kill a worker with a traceback (the signal was only ignored later, in
# the pool's initializer).
_PROBE = textwrap.dedent(
    """
    import json, multiprocessing, os, signal
    from ledger.workers import Pool

    r, w = os.pipe()

    def at_birth():
        blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        os.write(w, b"B" if blocked else b"-")

    os.register_at_fork(after_in_child=at_birth)

    def state(_):
        blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
        ignored = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        return (blocked, ignored)

    fork = multiprocessing.get_context("fork")
    with Pool(2, int, ("7",), context=fork) as pool:  # initializer and args still run
        states = pool.map(state, range(4))
    parent_blocked = signal.SIGINT in signal.pthread_sigmask(signal.SIG_BLOCK, [])
    os.close(w)
    births = os.read(r, 64).decode()
    print(json.dumps({"births": births, "states": sorted(set(states)), "parent": parent_blocked}))
    """
)


def test_workers_are_born_deaf_to_ctrl_c_and_the_parent_is_not() -> None:
    """Every worker has SIGINT blocked from its fork on, runs with it ignored and
    unblocked, and the parent's signal mask is restored once the pool has started."""
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    assert seen["births"] == "BB"  # both workers had SIGINT blocked from their fork on
    assert seen["states"] == [[False, True]]  # then ignored, and unblocked, in every task
    assert seen["parent"] is False
