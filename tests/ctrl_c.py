"""Ctrl-C as a terminal delivers it: SIGINT to the whole process group of a CLI run.

Shared by the Ctrl-C tests of ``import jsonl`` and ``verify``.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Sequence


def _default_sigint() -> None:
    """In the child before exec: SIGINT back to its default disposition. A shell running
    the tests in the background (nohup, CI) ignores SIGINT, and the child would inherit
    that; a terminal's would not."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start(cmd: Sequence[str]) -> subprocess.Popen[bytes]:
    """``cmd`` in a new process group, stdout discarded, stderr captured."""
    return subprocess.Popen(
        list(cmd),
        start_new_session=True,
        preexec_fn=_default_sigint,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def interrupt(proc: subprocess.Popen[bytes]) -> bytes:
    """SIGINT to ``proc``'s group (unless it has ended), then its stderr once it exits.

    A process still running after 120 s is killed and ``TimeoutExpired`` raised: a hang
    guard, not a timing check.
    """
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
    try:
        _, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    return stderr
