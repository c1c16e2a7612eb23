"""Confined reads: files read from inside a root directory without trusting the tree.

The one way to read a tree someone else controls: a worker's candidate root (the
verifiers) and a folder given to ``import idkmesh``. Whoever controls the tree may swap
any entry for a symlink, FIFO or device at any moment, also while we read.

Invariants:
- a locator is a relative POSIX path without empty, ``.`` or ``..`` components;
- the path is walked one component at a time from an open descriptor of the root:
  every intermediate component is opened with ``O_DIRECTORY | O_NOFOLLOW`` relative to
  its parent's descriptor and the last with ``O_NOFOLLOW | O_NONBLOCK``, so a symlink
  anywhere on the path is refused *at the moment it is opened*: swapping a directory for
  a symlink while we read cannot lead outside the root (no realpath-then-open race);
- the file itself is a regular file (checked on the open descriptor), not a symlink,
  FIFO or device; nothing is executed or imported;
- reads are bounded: a file larger than ``max_bytes`` (by ``fstat`` before reading, or
  while streaming if it grows) is ``too_large`` with its size and no digest, and at most
  ``max_bytes + 1`` bytes are ever read; a ``read`` observation's digest covers every byte.
Problems become an observation with a ``status``, never an exception. The ``detail``
texts are recorded in verifier evidence, so they keep their wording ("candidate root").
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

ReadStatus = Literal[
    "read", "too_large", "missing", "unsafe_locator", "symlink", "not_regular", "unreadable"
]
_CHUNK = 1 << 16


@dataclass(frozen=True)
class FileObservation:
    """What the verifier saw at one locator. ``data`` and ``digest`` are set only for
    ``read``; ``size`` also for ``too_large`` (the size that exceeded the limit)."""

    locator: str
    status: ReadStatus
    detail: str
    size: int | None = None
    digest: str | None = None
    data: bytes | None = None

    @property
    def observed(self) -> bool:
        """True when every byte was read and hashed (status ``read``)."""
        return self.status == "read"

    def as_json(self) -> dict[str, object]:
        return {
            "locator": self.locator,
            "status": self.status,
            "detail": self.detail,
            "bytes": self.size,
            "observed_digest": self.digest,
        }


def locator_problem(locator: str) -> str | None:
    """Why a locator is unsafe, or None."""
    if not locator:
        return "empty locator"
    if locator.startswith("/") or "\\" in locator or "\x00" in locator:
        return "absolute path, backslash or NUL in locator"
    if any(part in ("", ".", "..") for part in locator.split("/")):
        return "empty, '.' or '..' component in locator"
    return None


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _refusal(locator: str, step: str, exc: OSError, dir_fd: int, name: str) -> FileObservation:
    """Name why opening ``name`` (relative to ``dir_fd``) failed."""
    if exc.errno == errno.ENOENT:
        return FileObservation(locator, "missing", f"no such {step} in the candidate root")
    if exc.errno == errno.ELOOP:  # O_NOFOLLOW met a symlink
        detail = "the file is a symlink" if step == "file" else f"directory {name!r} is a symlink"
        return FileObservation(locator, "symlink", detail)
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        # Never followed, wherever it points: the walk cannot leave the root.
        detail = "the file is a symlink" if step == "file" else f"directory {name!r} is a symlink"
        return FileObservation(locator, "symlink", detail)
    if exc.errno in (errno.ENOTDIR, errno.ELOOP):
        return FileObservation(locator, "not_regular", f"{name!r} is not a directory")
    return FileObservation(locator, "unreadable", f"open {step} failed: {exc.strerror}")


def read_in_root(root: Path, locator: str, *, max_bytes: int) -> FileObservation:
    """Observe ``root/locator`` under the module invariants."""
    problem = locator_problem(locator)
    if problem is not None:
        return FileObservation(locator, "unsafe_locator", problem)
    parts = locator.split("/")
    try:
        current = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return FileObservation(locator, "unreadable", f"candidate root: {exc.strerror}")
    try:
        for part in parts[:-1]:
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=current)
            except OSError as exc:
                return _refusal(locator, "directory", exc, current, part)
            os.close(current)
            current = child
        try:
            fd = os.open(parts[-1], _FILE_FLAGS, dir_fd=current)
        except OSError as exc:
            return _refusal(locator, "file", exc, current, parts[-1])
    finally:
        os.close(current)
    try:
        return _read_bounded(locator, fd, max_bytes)
    finally:
        os.close(fd)


def _read_bounded(locator: str, fd: int, max_bytes: int) -> FileObservation:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return FileObservation(locator, "not_regular", "not a regular file")
        if info.st_size > max_bytes:
            return FileObservation(
                locator, "too_large", f"{info.st_size} bytes, limit {max_bytes}", info.st_size
            )
        hasher = hashlib.sha256()
        kept = bytearray()
        while len(kept) <= max_bytes and (chunk := os.read(fd, min(_CHUNK, max_bytes + 1))):
            kept += chunk
        if len(kept) > max_bytes:  # the file grew while we read it
            return FileObservation(
                locator, "too_large", f"more than {max_bytes} bytes, limit {max_bytes}", len(kept)
            )
    except OSError as exc:
        return FileObservation(locator, "unreadable", f"read failed: {exc.strerror}")
    hasher.update(kept)
    digest = "sha256:" + hasher.hexdigest()
    return FileObservation(locator, "read", "regular file read", len(kept), digest, bytes(kept))


@dataclass(frozen=True)
class TreeListing:
    """Regular files (sorted POSIX paths) and entries that are not plain files."""

    files: tuple[str, ...]
    problems: tuple[str, ...]


def list_tree(root: Path) -> TreeListing:
    """Every entry under ``root`` without following symlinks."""
    files: list[str] = []
    problems: list[str] = []
    real_root = Path(os.path.realpath(root))
    stack = [real_root]
    while stack:
        current = stack.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError as exc:
            rel_dir = current.relative_to(real_root).as_posix()
            problems.append(f"unreadable directory {rel_dir}: {exc.strerror}")
            continue
        for entry in entries:
            rel = Path(entry.path).relative_to(real_root).as_posix()
            if entry.is_symlink():
                problems.append(f"symlink {rel}")
            elif entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                files.append(rel)
            else:
                problems.append(f"not a regular file {rel}")
    return TreeListing(tuple(sorted(files)), tuple(sorted(problems)))
