"""Bounded reads: the one way a command reads a file the user named.

Invariants:
- the size of a regular file is checked on the open descriptor (``fstat``) before a
  single byte is read, so an oversized file costs one system call;
- at most ``limit + 1`` bytes are ever read, so a file that grows while it is read, a
  pipe or a device is cut off while streaming, and memory stays bounded by the limit;
- over the limit is ``DocumentTooLargeError`` (exit 3), one line naming what was read,
  the size and the limit; a missing file is ``NotFound`` (exit 3); a directory or an
  unreadable file is ``InputError`` (exit 3). Nothing else escapes.

Limits in one place (bytes): documents (WorkUnit, plan, manifest, cohort, probe plan,
checkpoint, envelope, import file) ``DOCUMENT_LIMIT``; candidate patches
``PATCH_LIMIT``; key files ``KEY_LIMIT``. Bundles use ``ledger.log.bundle``'s limit.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

from ledger.encoding.canonical import DEFAULT_MAX_BYTES
from ledger.errors import DocumentTooLargeError, InputError, NotFound

DOCUMENT_LIMIT = DEFAULT_MAX_BYTES
PATCH_LIMIT = DEFAULT_MAX_BYTES
KEY_LIMIT = 64 * 1024
_CHUNK = 1 << 20


def too_large(what: str, name: str | Path, got: str, limit: int) -> DocumentTooLargeError:
    return DocumentTooLargeError(
        f"{what} too large, got {got} in {name}, expected at most {limit} bytes"
    )


def read_stream(stream: BinaryIO, limit: int, what: str, name: str = "-") -> bytes:
    """At most ``limit`` bytes of ``stream``; more is ``DocumentTooLargeError``."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise too_large(what, name, f"more than {limit} bytes", limit)
    return data


def read_bounded(path: str | Path, limit: int, what: str) -> bytes:
    """The bytes of ``path`` if it holds at most ``limit`` bytes (module invariants)."""
    # O_NONBLOCK: a FIFO planted at the path cannot hang the open; it is refused below.
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise NotFound(f"{what} file not found, got {path}, expected a readable file") from None
    except OSError as exc:
        raise InputError(
            f"{what} file unreadable, got {exc.strerror} for {path}, expected a readable file"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "directory" if stat.S_ISDIR(info.st_mode) else "special file"
            raise InputError(f"{what} file, got a {kind} {path}, expected a regular file")
        if info.st_size > limit:
            raise too_large(what, path, f"{info.st_size} bytes", limit)
        chunks: list[bytes] = []
        total = 0
        while total <= limit:
            chunk = os.read(fd, min(_CHUNK, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    except OSError as exc:
        raise InputError(
            f"{what} file unreadable, got {exc.strerror} for {path}, expected a readable file"
        ) from None
    finally:
        os.close(fd)
    if total > limit:
        raise too_large(what, path, f"more than {limit} bytes", limit)
    return b"".join(chunks)
