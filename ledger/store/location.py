"""Where a ledger lives: a file path, or a PostgreSQL connection URL.

Every command takes ``--db`` (or ``PROVLEDGER_DB``) as a path; a value starting with
``postgresql://`` or ``postgres://`` names a database on a server instead. A
``pathlib.Path`` would collapse the URL's ``//``, so the option's parser turns such a
value into a ``DatabaseURL``: a ``Path`` whose file name is the database name (key
files default to ``./<dbname>.log.key`` and ``./<dbname>.authority.key``) and which
keeps the whole URL in ``url``. ``str()`` of it is the URL without its password.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path, PosixPath

URL_SCHEMES = ("postgresql://", "postgres://")


def is_url(text: str) -> bool:
    """True when ``text`` is a PostgreSQL connection URL, not a file path."""
    return text.startswith(URL_SCHEMES)


def database_name(url: str) -> str:
    """The database a URL names (libpq's default, the user name, when it names none)."""
    parts = urllib.parse.urlsplit(url)
    name = urllib.parse.unquote(parts.path.lstrip("/"))
    if not name:
        query = urllib.parse.parse_qs(parts.query)
        name = (query.get("dbname") or query.get("user") or [parts.username or "postgres"])[0]
    return name


def redact(url: str) -> str:
    """The URL with any password replaced by ``***`` (for messages and output)."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host += f":{parts.port}"
    user = urllib.parse.quote(parts.username or "", safe="")
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class DatabaseURL(PosixPath):
    """A ``--db`` value naming a PostgreSQL database; ``url`` is the connection URL."""

    url: str

    def __new__(cls, url: str) -> DatabaseURL:
        self = super().__new__(cls, _safe_name(database_name(url)))
        self.url = url
        return self

    def __str__(self) -> str:
        return redact(self.url)

    # Paths derived from this one (``with_name``, ``parent``, ``/``) are plain file paths:
    # the key files next to the database name. Python 3.12+ calls ``with_segments``,
    # 3.11 ``_from_parsed_parts``.
    def with_segments(self, *segments: str | os.PathLike[str]) -> Path:
        return Path(*segments)

    @classmethod
    def _from_parsed_parts(cls, drv: str, root: str, parts: list[str]) -> Path:
        return Path(drv + root + "/".join(parts[1:] if root else parts))

    def __repr__(self) -> str:
        return f"DatabaseURL({redact(self.url)!r})"


def _safe_name(name: str) -> str:
    # The name becomes the stem of default key file names in the current directory.
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".")
    return cleaned or "postgres"


def db_location(value: str | Path) -> Path:
    """Parse a ``--db`` value: a ``DatabaseURL`` for a URL, else a plain ``Path``."""
    if isinstance(value, Path):
        return value
    return DatabaseURL(value) if is_url(value) else Path(value)
