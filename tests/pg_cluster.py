"""A throwaway PostgreSQL cluster for tests: initdb + pg_ctl on a Unix socket in a tmp dir.

The server binaries are found through ``PROVLEDGER_PG_BIN``, ``pg_config --bindir``, the
Debian layout ``/usr/lib/postgresql/<major>/bin`` or ``PATH``. Without them the tests
skip with the install command, except under ``CI=true``, where they fail: CI must run
them. initdb refuses to run as root, so as root the cluster runs as the ``postgres``
user when it exists, else as a system user created for the purpose (root only).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

INSTALL = (
    "apt-get install postgresql (Debian) or brew install postgresql,"
    " and pip install -e '.[postgres]'"
)
SERVICE_USER = "provledger-pg"


def _bin_dir() -> Path | None:
    given = os.environ.get("PROVLEDGER_PG_BIN")
    candidates = [given] if given else []
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    which = shutil.which("initdb")
    if which:
        candidates.append(str(Path(which).parent))
    for c in candidates:
        if c and (Path(c) / "initdb").is_file() and (Path(c) / "pg_ctl").is_file():
            return Path(c)
    return None


def unavailable(reason: str) -> None:
    """Skip (locally) or fail (CI=true) because PostgreSQL cannot be used."""
    message = f"PostgreSQL tests need a server: {reason}; install: {INSTALL}"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def _service_user() -> str | None:
    """The user the server runs as: None (this user) unless we are root."""
    if os.geteuid() != 0:
        return None
    import pwd

    for name in ("postgres", SERVICE_USER):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SERVICE_USER],
        check=True,
    )
    return SERVICE_USER


@dataclass
class Cluster:
    """One running cluster; ``url(db)`` is a URL provledger accepts."""

    bin_dir: Path
    base: Path
    user: str | None
    port: int = 5432

    @property
    def data(self) -> Path:
        return self.base / "data"

    def _run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = list(args)
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, check=check, cwd=self.base)

    def init(self) -> None:
        if self.user is not None:
            shutil.chown(self.base, self.user)
        self._run(
            str(self.bin_dir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "-E",
            "UTF8",
            "--no-sync",
        )

    def start(self) -> None:
        options = (
            f"-k {self.base} -c listen_addresses='' -p {self.port} -c fsync=off"
            " -c max_connections=60"
        )
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.base / "server.log"),
            "-w",
            "start",
        )

    def stop(self) -> None:
        self._run(
            str(self.bin_dir / "pg_ctl"),
            "-D",
            str(self.data),
            "-m",
            "immediate",
            "stop",
            check=False,
        )

    def postmaster_pid(self) -> int:
        return int((self.data / "postmaster.pid").read_text().split()[0])

    def kill(self) -> None:
        """SIGKILL the postmaster (and, as the OS would on a crash, its backends)."""
        pid = self.postmaster_pid()
        children = subprocess.run(
            ["pgrep", "-P", str(pid)], capture_output=True, text=True
        ).stdout.split()
        os.kill(pid, signal.SIGKILL)
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(child), signal.SIGKILL)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)

    def url(self, db: str, user: str = "postgres") -> str:
        return f"postgresql://{user}@/{db}?host={self.base}&port={self.port}"

    def createdb(self, name: str | None = None) -> str:
        """A new empty database; returns its URL."""
        name = name or "t_" + uuid.uuid4().hex[:12]
        self.sql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def sql(self, statement: str, db: str = "postgres") -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(self.url(db), autocommit=True) as conn:
            cur = conn.execute(statement)
            return list(cur.fetchall()) if cur.description else []


def start_cluster(port: int = 5432) -> Cluster:
    """initdb and start a cluster in a new tmp dir (short path: socket names are short)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        unavailable("the psycopg module is missing")
    bin_dir = _bin_dir()
    if bin_dir is None:
        unavailable("no initdb/pg_ctl found")
        raise AssertionError  # unreachable: unavailable() raises
    base = Path(tempfile.mkdtemp(prefix="plpg", dir="/tmp"))
    cluster = Cluster(bin_dir, base, _service_user(), port)
    cluster.init()
    cluster.start()
    return cluster


def remove(cluster: Cluster) -> None:
    cluster.stop()
    shutil.rmtree(cluster.base, ignore_errors=True)
