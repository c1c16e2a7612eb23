"""Reading worker-controlled files from a candidate root without trusting them.

Invariants:
- a locator is a relative POSIX path without empty, ``.`` or ``..`` components;
- the file's real path lies inside the real candidate root (symlinks that escape are
  refused) and the file itself is a regular file, not a symlink, FIFO or device;
- nothing is executed or imported; files are only opened for reading (``O_NOFOLLOW``,
  ``O_NONBLOCK`` so a swapped-in FIFO cannot block);
- the digest always covers every byte; the bytes are kept only up to ``max_bytes``.
Problems become an observation with a ``status``, never an exception.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

ReadStatus = Literal[
    "read", "too_large", "missing", "unsafe_locator", "symlink", "not_regular", "unreadable"
]
_CHUNK = 1 << 16


@dataclass(frozen=True)
class FileObservation:
    """What the verifier saw at one locator. ``data`` is None unless fully kept."""

    locator: str
    status: ReadStatus
    detail: str
    size: int | None = None
    digest: str | None = None
    data: bytes | None = None

    @property
    def observed(self) -> bool:
        """True when every byte was hashed (``read`` or ``too_large``)."""
        return self.status in ("read", "too_large")

    def as_json(self) -> dict[str, Any]:
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


def _inside(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def read_in_root(root: Path, locator: str, *, max_bytes: int) -> FileObservation:
    """Observe ``root/locator`` under the module invariants."""
    problem = locator_problem(locator)
    if problem is not None:
        return FileObservation(locator, "unsafe_locator", problem)
    real_root = Path(os.path.realpath(root))
    path = real_root.joinpath(*locator.split("/"))
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return FileObservation(locator, "missing", "no such file in the candidate root")
    except OSError as exc:
        return FileObservation(locator, "unreadable", f"lstat failed: {exc.strerror}")
    if stat.S_ISLNK(info.st_mode):
        return FileObservation(locator, "symlink", "the file is a symlink")
    if not _inside(Path(os.path.realpath(path)), real_root):
        return FileObservation(locator, "symlink", "a directory symlink leads outside the root")
    if not stat.S_ISREG(info.st_mode):
        return FileObservation(locator, "not_regular", "not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return FileObservation(locator, "unreadable", f"open failed: {exc.strerror}")
    hasher = hashlib.sha256()
    kept = bytearray()
    size = 0
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return FileObservation(locator, "not_regular", "not a regular file when opened")
        while chunk := os.read(fd, _CHUNK):
            hasher.update(chunk)
            size += len(chunk)
            if size <= max_bytes:
                kept += chunk
    except OSError as exc:
        return FileObservation(locator, "unreadable", f"read failed: {exc.strerror}")
    finally:
        os.close(fd)
    digest = "sha256:" + hasher.hexdigest()
    if size > max_bytes:
        return FileObservation(
            locator, "too_large", f"{size} bytes, limit {max_bytes}", size, digest, None
        )
    return FileObservation(locator, "read", "regular file read", size, digest, bytes(kept))


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
