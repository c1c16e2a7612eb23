"""Where a ledger lives: a file (``SQLitePath``) or a PostgreSQL database (``PostgresURL``).

Every command takes ``--db`` (or ``PROVLEDGER_DB``); ``parse_location`` turns its value
into one of the two: a value starting with ``postgresql://`` or ``postgres://`` names a
database on a server, anything else a file. Code that needs a file asks for a
``SQLitePath`` (``isinstance``), never a filesystem property of something that may be a
URL. Both kinds give what commands derive from a ledger's place:

- ``name``: the file name, or the database's name made safe as a file name;
- ``sibling(name)``: a file next to the ledger (key files ``<name>.log.key`` and
  ``<name>.authority.key``, the browse database): beside the file, or in the current
  directory for a database;
- ``shown``: printable text (a file name's undecodable bytes escaped; a URL without its
  password); ``arg``: the ``--db`` value that names the same ledger again.
"""

from __future__ import annotations

import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

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


def _safe_name(name: str) -> str:
    # The name becomes the stem of default key file names in the current directory.
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in name).lstrip(".")
    return cleaned or "postgres"


class DbLocation:
    """Where a ledger lives: exactly one of ``SQLitePath`` and ``PostgresURL`` (a base
    class, not a ``Union``: typer refuses unions as parameter types)."""

    __slots__ = ()

    @property
    def name(self) -> str:
        raise NotImplementedError

    def sibling(self, name: str) -> Path:
        raise NotImplementedError

    @property
    def shown(self) -> str:
        raise NotImplementedError

    @property
    def arg(self) -> str:
        raise NotImplementedError


@dataclass(frozen=True)
class SQLitePath(DbLocation):
    """A ledger in one SQLite file."""

    path: Path

    @property
    def name(self) -> str:
        return self.path.name

    def sibling(self, name: str) -> Path:
        """The file ``name`` in the ledger file's directory."""
        return self.path.with_name(name)

    @property
    def shown(self) -> str:
        from ledger.files import shown  # not at start-up: --db is parsed by every command

        return shown(self.path)

    @property
    def arg(self) -> str:
        return str(self.path)

    def __str__(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class PostgresURL(DbLocation):
    """A ledger in a PostgreSQL database; ``url`` is the connection URL (maybe holding a
    password: ``str()`` and ``repr()`` show it redacted)."""

    url: str = field(repr=False)

    @property
    def name(self) -> str:
        return _safe_name(database_name(self.url))

    def sibling(self, name: str) -> Path:
        """The file ``name`` in the current directory (a server has no directory)."""
        return Path(name)

    @property
    def shown(self) -> str:
        return redact(self.url)

    @property
    def arg(self) -> str:
        return self.url

    def __str__(self) -> str:
        return redact(self.url)

    def __repr__(self) -> str:
        return f"PostgresURL({redact(self.url)!r})"


def parse_location(value: str | Path | DbLocation) -> DbLocation:
    """A ``--db`` value as a location: a ``PostgresURL`` for a URL, else a ``SQLitePath``
    (a ``Path`` is a file; a location is returned as it is)."""
    if isinstance(value, DbLocation):
        return value
    if isinstance(value, Path):
        return SQLitePath(value)
    return PostgresURL(value) if is_url(value) else SQLitePath(Path(value))
