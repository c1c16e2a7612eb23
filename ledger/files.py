"""Paths from the user: read only regular files, never hang, show any name safely.

Reading goes through ``ledger.bounded`` (one mechanism): a FIFO, a device or a
directory given where a file is expected is refused with one ``InputError`` (exit 3)
before anything blocks on it, and sizes are bounded.
Names that are not valid UTF-8 (bytes decoded by Python as lone surrogates) are shown
with backslash escapes, so printing an error about them cannot itself fail.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from ledger.bounded import read_bounded
from ledger.errors import InputError

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


def read_text_file(path: Path, what: str, max_bytes: int = DEFAULT_MAX_FILE_BYTES) -> str:
    """A regular file's UTF-8 text; other bytes are refused (``InputError``)."""
    data = read_bounded(path, max_bytes, what)
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
