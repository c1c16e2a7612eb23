"""Resolving a user's reference to one stored object.

Accepted: a digest (ledger or legacy scheme), a unique digest prefix (``sha256:`` plus
at least 4 hex digits, or at least 8 bare hex digits), an id, or ``id@version``. A
prefix that names several objects is refused (``InputError``, exit 3) with the
candidates; unknown references are ``NotFound`` (exit 3).

The rules read four lookups (``ObjectIndex``): a ledger is one, and so is the browse
database's ``objects`` table (``cohorts.browse.addresses``), so a reference pasted into
a browse page means what it means to the command line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from ledger.encoding.digest import is_digest
from ledger.errors import InputError, NotFound
from ledger.store.aliases import by_legacy_digest
from ledger.store.base import LedgerReader, StoredObject

PREFIX = re.compile(r"sha256:[0-9a-f]{4,63}\Z")
BARE_HEX = re.compile(r"[0-9a-f]{8,64}\Z")
SHOWN = 5

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


class ObjectIndex(Protocol[T_co]):
    """What resolving reads: objects by ledger digest, by legacy digest (oldest first),
    digests by prefix of either scheme (in digest order), and objects by id (oldest
    first)."""

    def get(self, digest: str) -> T_co | None: ...
    def by_legacy(self, legacy: str) -> Sequence[T_co]: ...
    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]: ...
    def by_id(self, object_id: str, version: int | None = None) -> Sequence[T_co]: ...


def resolve_prefix(store: ObjectIndex[T], prefix: str) -> T | None:
    """The one object whose digest (either scheme) starts with ``prefix``; None if none."""
    found = store.by_digest_prefix(prefix, SHOWN + 1)
    if len(found) > 1:
        more = "" if len(found) <= SHOWN else ", ..."
        raise InputError(
            f"ambiguous digest prefix, got {prefix} matching {', '.join(found[:SHOWN])}{more},"
            " expected a longer prefix that names one object"
        )
    return store.get(found[0]) if found else None


def resolve(store: ObjectIndex[T], ref: str) -> T:
    """The object ``ref`` names; for an id, its newest entry. Unknown refs are NotFound."""
    if ref.startswith("sha256:"):
        if is_digest(ref):
            found = store.get(ref)
            if found is not None:
                return found
            legacy = store.by_legacy(ref)
            if legacy:
                return legacy[-1]
            raise NotFound(f"object not found, got {ref}, expected a digest in the ledger")
        if not PREFIX.match(ref):
            raise InputError(
                f"malformed digest, got {ref!r}, expected sha256:<64 lowercase hex> or a"
                " unique prefix of at least 4 hex digits"
            )
        by_prefix = resolve_prefix(store, ref)
        if by_prefix is None:
            raise NotFound(f"object not found, got no digest starting {ref}, expected one")
        return by_prefix
    object_id, _, version_text = ref.partition("@")
    version: int | None = None
    if version_text:
        if not (version_text.isascii() and version_text.isdigit()):
            raise InputError(f"malformed reference version, got {version_text!r}, expected digits")
        version = int(version_text)
    matches = store.by_id(object_id, version)
    if matches:
        return matches[-1]
    if not version_text and BARE_HEX.match(ref):
        by_prefix = resolve_prefix(store, "sha256:" + ref)
        if by_prefix is not None:
            return by_prefix
    raise NotFound(
        f"object not found, got {ref}, expected a digest, a unique digest prefix, an id or"
        " id@version in the ledger"
    )


def resolve_stored(store: LedgerReader, ref: str) -> StoredObject:
    """``resolve`` over a ledger, where a legacy digest also finds an object stored in
    another upstream spelling, through an alias that holds (``ledger.store.aliases``),
    and gives it in that spelling (its ``legacy_digest`` is the one asked for)."""
    return resolve(_WithAliases(store), ref)


class _WithAliases:
    """A ledger as an ``ObjectIndex`` whose legacy lookups follow aliases."""

    def __init__(self, store: LedgerReader) -> None:
        self._store = store

    def get(self, digest: str) -> StoredObject | None:
        return self._store.get(digest)

    def by_legacy(self, legacy: str) -> list[StoredObject]:
        # In the spelling asked for: the legacy digest and hints of the alias that holds
        # (the stored bytes are the same; the row keeps its first spelling's).
        return [
            replace(obj, legacy_digest=legacy, legacy_hints=hints)
            for obj, hints in by_legacy_digest(self._store, legacy)
        ]

    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        return self._store.by_digest_prefix(prefix, limit)

    def by_id(self, object_id: str, version: int | None = None) -> list[StoredObject]:
        return self._store.by_id(object_id, version)


def full_digest(store: ObjectIndex[StoredObject], ref: str) -> str:
    """``ref`` with a digest prefix (``sha256:`` + 4 to 63 hex digits) spelled out as the
    one ledger digest it names; anything else as given, for the caller's own checks to
    judge (a full digest that is not stored stays a finding of theirs, not NotFound).
    An ambiguous prefix is refused (``InputError``)."""
    if not PREFIX.match(ref):
        return ref
    found = resolve_prefix(store, ref)
    return ref if found is None else found.digest
