"""Resolving a user's reference (digest, legacy digest, id, id@version) to one object."""

from __future__ import annotations

from ledger.encoding.digest import is_digest
from ledger.errors import InputError, NotFound
from ledger.store.base import LedgerReader, StoredObject


def resolve(store: LedgerReader, ref: str) -> StoredObject:
    """The object ``ref`` names; for an id, its newest entry. Unknown refs are NotFound."""
    if ref.startswith("sha256:"):
        if not is_digest(ref):
            raise InputError(f"malformed digest, got {ref!r}, expected sha256:<64 lowercase hex>")
        found = store.get(ref)
        if found is not None:
            return found
        legacy = store.by_legacy(ref)
        if legacy:
            return legacy[-1]
        raise NotFound(f"object not found, got {ref}, expected a digest in the ledger")
    object_id, _, version_text = ref.partition("@")
    version: int | None = None
    if version_text:
        if not (version_text.isascii() and version_text.isdigit()):
            raise InputError(f"malformed reference version, got {version_text!r}, expected digits")
        version = int(version_text)
    matches = store.by_id(object_id, version)
    if not matches:
        raise NotFound(f"object not found, got {ref}, expected a digest or id in the ledger")
    return matches[-1]
