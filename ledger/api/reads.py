"""What the generic API's reads return: one object, log entries, the ledger's figures.

Frozen values whose ``to_json()`` is the matching command's ``--json`` (``show``, ``log``,
``stats``). Kept apart from ``ledger.api.results`` so a command that reads one object
builds only these classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject, JSONValue


@dataclass(frozen=True)
class LedgerObject:
    """One stored object with its entry (``show --json``); ``data`` is the exact stored
    bytes (``show --raw``), ``value`` their JSON value (None for a blob).

    ``notes`` are what the package's plug-ins say about an object of this kind (for a
    VerificationResult: what its verdict can mean); listed only when there are some.
    """

    digest: str
    seq: int
    kind: str
    schema_version: str | None
    object_id: str | None
    object_version: int | None
    legacy_digest: str | None
    appended_at: str
    data: bytes = field(repr=False)
    value: JSONValue = field(repr=False)
    notes: tuple[str, ...] = ()

    @property
    def size(self) -> int:
        return len(self.data)

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "digest": self.digest,
            "seq": self.seq,
            "kind": self.kind,
            "schema_version": self.schema_version,
            "object_id": self.object_id,
            "object_version": self.object_version,
            "legacy_digest": self.legacy_digest,
            "appended_at": self.appended_at,
            "size": self.size,
            "object": self.value,
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


@dataclass(frozen=True)
class LogEntry:
    """One log entry (``log --json``). ``object_id``/``object_version`` are read only when
    asked for (``Ledger.log(ids=True)``: the terminal table shows them) and are not part
    of the JSON: ``show`` has every index field."""

    seq: int
    digest: str
    kind: str
    appended_at: str
    object_id: str | None = None
    object_version: int | None = None

    def to_json(self) -> JSONObject:
        return {
            "seq": self.seq,
            "digest": self.digest,
            "kind": self.kind,
            "appended_at": self.appended_at,
        }


@dataclass(frozen=True)
class Stats:
    """Figures of one snapshot of the ledger (``stats --json``)."""

    db: str
    entries: int
    by_kind: dict[str, int]
    object_bytes: int
    file_bytes: int | None  # the file's size, or the server's size of the database
    origin: str | None
    latest_checkpoint_size: int | None

    def to_json(self) -> JSONObject:
        by_kind: JSONObject = dict(self.by_kind)
        return {
            "db": self.db,
            "entries": self.entries,
            "by_kind": by_kind,
            "object_bytes": self.object_bytes,
            "file_bytes": self.file_bytes,
            "origin": self.origin,
            "latest_checkpoint_size": self.latest_checkpoint_size,
        }
