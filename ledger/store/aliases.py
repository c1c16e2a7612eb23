"""Legacy-digest aliases: every upstream spelling of a stored object stays reachable.

One stored object (one canonical byte string, one ledger digest) can have several
upstream (legacy) digests: RFC 8785 writes ``0.0`` and ``0`` alike, upstream's digest
does not. The object row keeps the float hints of its first append, so a second
spelling appended later (the real upstream file after a copy with ``0`` for ``0.0``,
or the other way round) would answer to nothing: its upstream digest would hide it.

So when an append brings a stored object under another legacy digest, the store also
logs an alias, a ledger-native record it writes itself (kind ``legacy-alias``):

    {"legacy_digest":"sha256:...","legacy_hints":"<the spelling's hints, or null>",
     "provledger_kind":"legacy-alias","schema_version":"0.1",
     "subject":{"digest":"sha256:...","kind":"..."}}

Its id is the legacy digest, so a lookup by that digest finds it (``by_legacy_digest``).
An alias is used only when it holds: its subject was appended before it, and the
subject's bytes with those hints give exactly that legacy digest (``alias_target``);
``verify`` reports one that does not (``alias-invalid``). Like every entry it is
covered by the log's hashes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ledger.errors import InputError, LedgerError
from ledger.store.base import LedgerReader, StoredObject
from ledger.store.derived import derive

if TYPE_CHECKING:
    from ledger.store.prepared import Prepared

ALIAS_KIND = "legacy-alias"
RECORD_VERSION = "0.1"


def alias_record(subject: StoredObject, legacy: str, hints: str | None) -> Prepared:
    """The record saying ``subject`` also answers to ``legacy`` under ``hints``."""
    from ledger.store.prepared import prepare_value

    value: dict[str, object] = {
        "provledger_kind": ALIAS_KIND,
        "schema_version": RECORD_VERSION,
        "subject": {"digest": subject.digest, "kind": subject.kind},
        "legacy_digest": legacy,
        "legacy_hints": hints,
    }
    return prepare_value(value, ALIAS_KIND)


def alias_target(reader: LedgerReader, alias: StoredObject) -> tuple[StoredObject, str | None]:
    """The object an alias names and the hints it gives it; ``InputError`` when the alias
    does not hold (its subject is missing or later, or the hints give another digest)."""
    try:
        value = alias.json()
        digest, kind = value["subject"]["digest"], value["subject"]["kind"]
        legacy, hints = value["legacy_digest"], value["legacy_hints"]
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(f"legacy alias unreadable: {exc}") from None
    subject = reader.get(digest) if isinstance(digest, str) else None
    if subject is None or subject.seq >= alias.seq or subject.kind != kind:
        raise InputError(f"legacy alias names {digest}, got no such object stored before it")
    if hints is not None and not isinstance(hints, str):
        raise InputError("legacy alias hints, got no text, expected the hints or null")
    try:
        derived = derive(subject.kind, subject.data, hints).legacy_digest
    except LedgerError as exc:
        raise InputError(f"legacy alias hints do not apply: {exc}") from None
    if derived is None or derived != legacy:
        raise InputError(
            f"legacy alias of {digest}, got {legacy}, expected {derived} from its hints"
        )
    return subject, hints


def by_legacy_digest(reader: LedgerReader, legacy: str) -> list[tuple[StoredObject, str | None]]:
    """Every stored object that answers to ``legacy``, with the hints that make it: the
    object whose row has that legacy digest, then the objects of aliases that hold."""
    found = [(obj, obj.legacy_hints) for obj in reader.by_legacy(legacy)]
    for alias in reader.by_id(legacy, kind=ALIAS_KIND):
        try:
            subject, hints = alias_target(reader, alias)
        except InputError:
            continue  # verify reports it; a lookup never follows it
        if all(subject.digest != obj.digest for obj, _ in found):
            found.append((subject, hints))
    return found


def aliases_for(reader: LedgerReader, items: list[tuple[Prepared, StoredObject]]) -> list[Prepared]:
    """The alias records appending ``items`` needs: each (prepared, stored) pair whose
    stored object answers to another legacy digest than the prepared spelling."""
    out: list[Prepared] = []
    seen: set[str] = set()
    for prepared, stored in items:
        legacy = prepared.legacy_digest
        if legacy is None or legacy == stored.legacy_digest or legacy in seen:
            continue
        if any(obj.digest == stored.digest for obj, _ in by_legacy_digest(reader, legacy)):
            continue
        seen.add(legacy)
        out.append(alias_record(stored, legacy, prepared.legacy_hints))
    return out
