"""Paths from the user: read only regular files, never hang, show any name safely.

A FIFO, a device or a directory given where a file is expected is refused with one
``InputError`` (exit 3) before anything blocks on it: files are opened with
``O_NONBLOCK`` and checked with ``fstat`` on the open descriptor (no stat/open race).
Names that are not valid UTF-8 (bytes decoded by Python as lone surrogates) are shown
with backslash escapes, so printing an error about them cannot itself fail.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ledger.errors import InputError, NotFound

DEFAULT_MAX_FILE_BYTES = 1 << 20


def shown(path: Path | str) -> str:
    """``path`` as printable text: undecodable bytes become ``\\xNN`` escapes."""
    return os.fspath(path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def safe_text(text: str) -> str:
    """Any text (maybe holding lone surrogates) as text that encodes to UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def file_kind(mode: int) -> str:
    """A word for what a non-regular file is."""
    for test, word in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return word
    return "not a regular file"


def require_regular(path: Path, what: str) -> None:
    """Refuse an existing ``path`` that is not a regular file (symlinks followed)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(
            f"{what} {shown(path)} cannot be examined, got {exc.strerror}, expected a file"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise InputError(
            f"{what} {shown(path)}, got {file_kind(info.st_mode)}, expected a regular file"
        )


def read_regular_file(path: Path, what: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; anything else is refused."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise NotFound(
            f"{what} {shown(path)} cannot be read, got no such file, expected a readable file"
        ) from None
    except OSError as exc:
        raise InputError(
            f"{what} {shown(path)} cannot be read, got {exc.strerror}, expected a readable file"
        ) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(
                f"{what} {shown(path)}, got {file_kind(info.st_mode)}, expected a regular file"
            )
        if info.st_size > max_bytes:
            raise InputError(
                f"{what} {shown(path)} is too large, got {info.st_size} bytes,"
                f" expected at most {max_bytes}"
            )
        chunks = []
        total = 0
        while chunk := os.read(fd, 65536):
            total += len(chunk)
            if total > max_bytes:
                raise InputError(
                    f"{what} {shown(path)} is too large, got more than {max_bytes} bytes,"
                    f" expected at most {max_bytes}"
                )
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(
            f"{what} {shown(path)} cannot be read, got {exc.strerror}, expected a readable file"
        ) from None
    finally:
        os.close(fd)


def read_text_file(path: Path, what: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> str:
    """A regular file's UTF-8 text; other bytes are refused (``InputError``)."""
    data = read_regular_file(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{what} {shown(path)}, got bytes that are not UTF-8 text (at offset {exc.start}),"
            " expected text"
        ) from None


def write_output(path: Path, data: bytes, what: str = "--output") -> None:
    """Write ``data`` to ``path`` completely (flushed), or raise ``InputError``.

    Called before the ledger commits anything that depends on it, so an unwritable
    output (a full disk, ``/dev/full``, a directory) leaves the ledger unchanged.
    """
    require_not_directory(path, what)
    try:
        with open(path, "wb") as handle:
            handle.write(data)
            handle.flush()
    except OSError as exc:
        raise InputError(
            f"{what} {shown(path)} cannot be written, got {exc.strerror or exc},"
            " expected a writable file"
        ) from None


def require_not_directory(path: Path, what: str) -> None:
    """An output path must not be a directory, and its directory must exist."""
    if path.is_dir():
        raise InputError(f"{what} {shown(path)}, got a directory, expected a file path")
    parent = path.parent
    if not parent.is_dir():
        raise InputError(
            f"{what} {shown(path)}, got no directory {shown(parent)}, expected an existing one"
        )
