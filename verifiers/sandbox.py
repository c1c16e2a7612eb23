"""Confinement for behavioral probes: bubblewrap (``bwrap``), configured here, in one place.

Every probe of ``behavioral run`` runs inside a fresh bubblewrap sandbox:

- namespaces: new user, PID, network, IPC, UTS and (when available) cgroup namespaces; the
  network namespace has only its own loopback, so nothing on the host is reachable;
- identity: uid/gid 65534 inside, every capability dropped, ``no_new_privs`` (bwrap sets
  it), a new session (no terminal injection); when the ledger runs as root, bwrap itself is
  started as uid/gid 65534, so the probe's processes are not root on the host either
  (``RLIMIT_NPROC`` is not enforced for host root, so without this a fork bomb would be
  unbounded);
- filesystem: ``/usr`` (and the ``/bin``, ``/lib*`` links) and a short list of ``/etc``
  files read-only; a fresh ``/proc`` and minimal ``/dev``; private, size-limited tmpfs
  at ``/tmp``, ``/dev/shm`` and ``/sandbox``, which holds the patched copy
  (``/sandbox/tree``), the plan's outside files (``/sandbox/outside``, read only) and an
  empty ``/sandbox/home``; everything else (bwrap's root, ``/dev``) is remounted
  read-only, so those three are the only writable places. Files enter the sandbox as
  open descriptors (``--file``/``--ro-bind-data``), so no host directory is bound at
  all: the ledger's directory, key files and the user's home are simply not there;
- resource limits, set by ``prlimit`` inside the sandbox just before the probe runs: CPU
  seconds, address space, processes, file size, open files, no core files;
- the timeout is enforced from outside: the whole process group of ``bwrap`` is killed,
  and ``--die-with-parent`` plus the PID namespace take every process of the probe with
  it. A probe's last process exiting also ends the namespace, so nothing outlives it.

``Sandbox.settings()`` is what the evidence records (tool, version and each setting); it
holds no host paths.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers.errors import SandboxUnavailable

INSTALL_HINT = "apt-get install bubblewrap"
BWRAP_ENV = "PROVLEDGER_BWRAP"
PRLIMIT = "/usr/bin/prlimit"
SANDBOX_UID = 65534
SANDBOX_ROOT = "/sandbox"
TREE = f"{SANDBOX_ROOT}/tree"
OUTSIDE = f"{SANDBOX_ROOT}/outside"
HOME = f"{SANDBOX_ROOT}/home"
PATH = "/usr/local/bin:/usr/bin:/bin"
# /etc entries a program needs to start (dynamic loader, locale, user names); nothing else.
ETC_FILES = (
    "/etc/alternatives",
    "/etc/group",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
)
NAMESPACES = ("user", "pid", "net", "ipc", "uts", "cgroup")


@dataclass(frozen=True)
class Limits:
    """Per-probe resource limits (setrlimit values; sizes in bytes). ``total_memory_bytes``
    and ``processes`` also bound the probe as a whole when a cgroup is available."""

    cpu_seconds: int
    address_space_bytes: int = 1 << 30
    processes: int = 32
    total_memory_bytes: int = 1 << 30
    file_size_bytes: int = 64 << 20
    open_files: int = 256
    sandbox_tmpfs_bytes: int = 256 << 20
    tmp_tmpfs_bytes: int = 64 << 20

    @classmethod
    def for_timeout(cls, timeout_seconds: float) -> Limits:
        """CPU time is the wall-clock timeout, rounded up: a probe cannot use more."""
        return cls(cpu_seconds=max(1, math.ceil(timeout_seconds)))

    def prlimit_args(self) -> list[str]:
        return [
            f"--cpu={self.cpu_seconds}",
            f"--as={self.address_space_bytes}",
            f"--nproc={self.processes}",
            f"--fsize={self.file_size_bytes}",
            f"--nofile={self.open_files}",
            "--core=0",
        ]

    def as_json(self) -> dict[str, int]:
        return {
            "cpu_seconds": self.cpu_seconds,
            "address_space_bytes": self.address_space_bytes,
            "processes": self.processes,
            "file_size_bytes": self.file_size_bytes,
            "open_files": self.open_files,
            "core_file_bytes": 0,
            "total_memory_bytes": self.total_memory_bytes,
            "sandbox_tmpfs_bytes": self.sandbox_tmpfs_bytes,
            "tmp_tmpfs_bytes": self.tmp_tmpfs_bytes,
        }


@dataclass(frozen=True)
class SandboxFile:
    """One file placed in the sandbox: an open descriptor and its path inside."""

    fd: int
    dest: str
    mode: int
    read_only: bool


def sandbox_python(python: str | None) -> str:
    """An interpreter the sandbox can see: ``python`` (or this one) if it lives under
    ``/usr``, else the system interpreter of the same version, else ``/usr/bin/python3``."""
    wanted = os.path.realpath(python or sys.executable)
    if wanted.startswith("/usr/") and os.access(wanted, os.X_OK):
        return wanted
    version = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (version, "/usr/bin/python3"):
        if os.access(candidate, os.X_OK):
            return candidate
    raise SandboxUnavailable(
        f"no Python interpreter visible inside the sandbox, got {wanted},"
        f" expected one under /usr (install python3: apt-get install python3)"
    )


CGROUP_ROOT = Path("/sys/fs/cgroup")
_CGROUP_SLACK = 8  # bwrap, its init, env and prlimit run before the probe's own processes


@dataclass(frozen=True)
class ProbeCgroup:
    """A fresh cgroup (v1 ``memory`` + ``pids``) for one probe: a total memory limit for
    all its processes together (rlimits are per process) and a process limit that holds
    whatever the uid. Created only when the hierarchy is writable (as root, usually)."""

    directories: tuple[Path, ...]
    memory_bytes: int
    pids: int

    @classmethod
    def create(cls, limits: Limits, root: Path = CGROUP_ROOT) -> ProbeCgroup | None:
        memory, pids = root / "memory", root / "pids"
        if not (memory / "cgroup.procs").is_file() or not (pids / "cgroup.procs").is_file():
            return None
        name = f"provledger-probe-{os.getpid()}-{os.urandom(4).hex()}"
        made: list[Path] = []
        try:
            for base in (memory, pids):
                (base / name).mkdir()
                made.append(base / name)
            group = cls(tuple(made), limits.total_memory_bytes, limits.processes + _CGROUP_SLACK)
            (memory / name / "memory.limit_in_bytes").write_text(str(group.memory_bytes))
            swap = memory / name / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(group.memory_bytes))
            (pids / name / "pids.max").write_text(str(group.pids))
        except OSError:
            for directory in made:
                with contextlib.suppress(OSError):
                    directory.rmdir()
            return None
        return group

    def enter(self) -> None:
        """Move the calling process in (run in the child before it drops privileges)."""
        for directory in self.directories:
            (directory / "cgroup.procs").write_text(str(os.getpid()))

    def kill_and_remove(self, attempts: int = 200) -> None:
        """SIGKILL every process left in the cgroup, then remove it (bounded retries)."""
        for _ in range(attempts):
            alive: set[int] = set()
            for directory in self.directories:
                with contextlib.suppress(OSError, ValueError):
                    alive |= {int(x) for x in (directory / "cgroup.procs").read_text().split()}
            for pid in alive:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            removed = True
            for directory in self.directories:
                try:
                    directory.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    removed = False
            if removed:
                return
            time.sleep(0.01)

    def as_json(self) -> dict[str, object]:
        return {"version": 1, "memory_bytes": self.memory_bytes, "pids": self.pids}


def _bwrap_path() -> str:
    return os.environ.get(BWRAP_ENV) or shutil.which("bwrap") or "/usr/bin/bwrap"


@dataclass(frozen=True)
class Sandbox:
    """A bubblewrap binary that was checked to work on this machine."""

    bwrap: str
    version: str
    drop_to_uid: int | None  # uid/gid bwrap runs as (when the ledger runs as root)

    def settings(self, limits: Limits, python: str, cgroup: bool) -> dict[str, object]:
        """The evidence's record of the sandbox: tool, version and every setting."""
        return {
            "confined": True,
            "tool": "bubblewrap",
            "version": self.version,
            "namespaces": list(NAMESPACES),
            "network": "new namespace, loopback only",
            "uid": SANDBOX_UID,
            "gid": SANDBOX_UID,
            "host_uid": "the caller (not root)" if self.drop_to_uid is None else self.drop_to_uid,
            "capabilities": [],
            "no_new_privileges": True,
            "new_session": True,
            "die_with_parent": True,
            "filesystem": {
                "read_only": ["/usr", *ETC_FILES],
                "writable": [SANDBOX_ROOT, "/tmp", "/dev/shm"],
                "tmpfs": [SANDBOX_ROOT, "/tmp", "/dev/shm"],
                "read_only_root": True,
                "outside_files": OUTSIDE + " (read-only)",
                "home": HOME,
                "host_directories_bound": False,
            },
            "limits": limits.as_json(),
            "cgroup": (
                {
                    "version": 1,
                    "memory_bytes": limits.total_memory_bytes,
                    "pids": limits.processes + _CGROUP_SLACK,
                }
                if cgroup
                else None
            ),
            "timeout": "enforced from outside: the sandbox's process group is killed",
            "python": python,
        }

    def command(
        self,
        argv: Sequence[str],
        *,
        limits: Limits,
        directories: Sequence[str],
        files: Sequence[SandboxFile],
    ) -> list[str]:
        """The bwrap command line running ``argv`` (already in sandbox paths) in ``TREE``."""
        cmd = [
            self.bwrap,
            "--unshare-user",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_UID),
            "--unshare-pid",
            "--unshare-net",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--cap-drop",
            "ALL",
            "--clearenv",
            "--setenv",
            "PATH",
            PATH,
            "--setenv",
            "HOME",
            HOME,
            "--ro-bind",
            "/usr",
            "/usr",
        ]
        for link in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            target = Path("/") / link
            if target.is_symlink():
                cmd += ["--symlink", os.readlink(target), f"/{link}"]
            elif target.is_dir():
                cmd += ["--ro-bind", f"/{link}", f"/{link}"]
        for etc in ETC_FILES:
            cmd += ["--ro-bind-try", etc, etc]
        cmd += ["--proc", "/proc", "--dev", "/dev"]
        cmd += ["--size", str(limits.tmp_tmpfs_bytes), "--tmpfs", "/dev/shm"]
        cmd += ["--size", str(limits.tmp_tmpfs_bytes), "--tmpfs", "/tmp"]
        cmd += ["--size", str(limits.sandbox_tmpfs_bytes), "--tmpfs", SANDBOX_ROOT]
        for directory in (TREE, OUTSIDE, HOME, *directories):
            cmd += ["--dir", directory]
        for f in files:
            option = "--ro-bind-data" if f.read_only else "--file"
            cmd += ["--perms", f"{f.mode:04o}", option, str(f.fd), f.dest]
        # bwrap's own root and /dev are unbounded tmpfs: read-only once everything is
        # mounted, so /sandbox, /tmp and /dev/shm (all size-limited) are the only
        # writable places.
        cmd += ["--remount-ro", "/dev", "--remount-ro", "/"]
        # bwrap sets PWD after --chdir; env -i leaves exactly PATH and HOME.
        env = ["/usr/bin/env", "-i", f"PATH={PATH}", f"HOME={HOME}"]
        cmd += ["--chdir", TREE, "--", *env, PRLIMIT, *limits.prlimit_args(), "--", *argv]
        return cmd

    def popen_kwargs(self, cgroup: ProbeCgroup | None = None) -> dict[str, Any]:  # Popen's kwargs
        """How to start bwrap: inside the probe's cgroup (entered while still privileged),
        then as an unprivileged uid when the ledger runs as root."""
        uid = self.drop_to_uid
        if cgroup is None and uid is None:
            return {}

        def prepare_child() -> None:  # runs in the forked child, before exec
            if cgroup is not None:
                cgroup.enter()
            if uid is not None:
                os.setgroups([])
                os.setresgid(uid, uid, uid)
                os.setresuid(uid, uid, uid)

        return {"preexec_fn": prepare_child}


def find_sandbox() -> Sandbox:
    """The working sandbox, or ``SandboxUnavailable`` (exit 4) naming the install command.

    "Working" is tested, not assumed: a trivial command must run under the exact
    settings the probes get (namespaces, uid drop, limits).
    """
    bwrap = _bwrap_path()
    if not (os.path.isfile(bwrap) and os.access(bwrap, os.X_OK)):
        raise SandboxUnavailable(
            f"no sandbox for behavioral probes, got no bubblewrap at {bwrap},"
            f" expected a working bwrap ({INSTALL_HINT}), or pass --unsandboxed"
        )
    if not os.access(PRLIMIT, os.X_OK):
        raise SandboxUnavailable(
            f"no prlimit for probe resource limits, got none at {PRLIMIT},"
            " expected util-linux (apt-get install util-linux), or pass --unsandboxed"
        )
    try:
        out = subprocess.run(
            [bwrap, "--version"], capture_output=True, timeout=30, check=False
        ).stdout.decode("utf-8", "replace")
    except OSError as exc:
        raise SandboxUnavailable(
            f"no sandbox for behavioral probes, got {exc.strerror} running {bwrap},"
            f" expected a working bwrap ({INSTALL_HINT}), or pass --unsandboxed"
        ) from None
    version = out.strip().removeprefix("bubblewrap").strip() or "unknown"
    sandbox = Sandbox(bwrap, version, SANDBOX_UID if os.geteuid() == 0 else None)
    cmd = sandbox.command(["/bin/true"], limits=Limits(cpu_seconds=5), directories=(), files=())
    try:
        probe = subprocess.run(
            cmd,
            capture_output=True,
            timeout=60,
            check=False,
            stdin=subprocess.DEVNULL,
            **sandbox.popen_kwargs(),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxUnavailable(
            f"sandbox self-test, got {type(exc).__name__}: {exc},"
            f" expected a working bwrap ({INSTALL_HINT}), or pass --unsandboxed"
        ) from None
    if probe.returncode != 0:
        reason = " ".join(probe.stderr.decode("utf-8", "replace").split())[:200]
        raise SandboxUnavailable(
            f"sandbox self-test failed, got exit {probe.returncode} ({reason or 'no message'}),"
            f" expected a working bwrap ({INSTALL_HINT}), or pass --unsandboxed"
        )
    return sandbox


UNCONFINED: dict[str, object] = {"confined": False, "reason": "--unsandboxed"}


def cgroup_available(limits: Limits) -> bool:
    """Whether a probe cgroup can be made here (tried once, then removed)."""
    group = ProbeCgroup.create(limits)
    if group is None:
        return False
    group.kill_and_remove()
    return True
