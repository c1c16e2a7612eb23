"""Addresses people paste into a browse URL, resolved to the one page that shows them.

``/-/object/<ref>`` and ``/-/find?ref=<ref>`` accept what ``provledger show`` accepts
(``ledger.store.resolve``, the same rules read from the browse database's ``objects``
table): a digest of either scheme, a unique digest prefix, an id or ``id@version``;
and, because the cohort pages link them, a cohort's definition digest and a cohort id
(quarantined cohorts included). ``locate`` answers with the page to redirect to, or
why there is none (the 404 page shows the reason and any candidates).

Invariants: ``locate`` is total: any string (hostile, malformed, huge) gives an
``Address``, never an exception; a page URL it builds quotes every path segment.
"""

from __future__ import annotations

import re
import sqlite3
import urllib.parse
from dataclasses import dataclass

from markupsafe import Markup, escape

from ledger.encoding.digest import is_digest
from ledger.errors import LedgerError
from ledger.store.resolve import resolve

OBJECT_PATH = "/-/object/"
COHORT_PATH = "/-/cohort/"
#: Longer references are refused at once (no id or digest is this long).
MAX_REF = 512
SHOWN = 5


def object_url(digest: str) -> str:
    return OBJECT_PATH + urllib.parse.quote(digest, safe=":")


def cohort_url(cohort_id: str) -> str:
    return COHORT_PATH + urllib.parse.quote(cohort_id, safe="/")


_DIGEST_IN_TEXT = re.compile(r"sha256:[0-9a-f]{64}")


def link_digests(text: str | None) -> Markup:
    """``text`` escaped, with every ``sha256:<hex>`` in it a link to its object page.

    Safe: the text is escaped first, and a digest match is only ``sha256:`` and hex."""
    escaped = str(escape(text or ""))
    return Markup(
        _DIGEST_IN_TEXT.sub(
            lambda m: f'<a class="digest" href="{object_url(m.group(0))}">{m.group(0)}</a>',
            escaped,
        )
    )


@dataclass(frozen=True)
class Row:
    """One row of the browse ``objects`` table, as resolving needs it."""

    digest: str
    kind: str
    object_id: str | None


@dataclass(frozen=True)
class Address:
    """Where ``ref`` leads: ``url`` (None: nowhere) and, when nowhere, ``reason``."""

    ref: str
    url: str | None
    reason: str = ""
    candidates: tuple[Row, ...] = ()


class BrowseObjects:
    """``ledger.store.resolve.ObjectIndex`` over the browse database's ``objects``."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def _rows(self, where: str, args: tuple[object, ...]) -> list[Row]:
        cur = self.conn.execute(
            f"SELECT digest, kind, object_id FROM objects WHERE {where} ORDER BY seq", args
        )
        return [Row(str(d), str(k), None if i is None else str(i)) for d, k, i in cur]

    def get(self, digest: str) -> Row | None:
        found = self._rows("digest = ?", (digest,))
        return found[0] if found else None

    def by_legacy(self, legacy: str) -> list[Row]:
        return self._rows("legacy_digest = ?", (legacy,))

    def by_digest_prefix(self, prefix: str, limit: int = 2) -> list[str]:
        if not prefix.startswith("sha256:"):
            return []
        # Digests are ASCII hex: every string with the prefix sorts below prefix + "g".
        cur = self.conn.execute(
            "SELECT digest FROM objects WHERE digest >= ? AND digest < ?"
            " UNION SELECT digest FROM objects WHERE legacy_digest >= ? AND legacy_digest < ?"
            " ORDER BY 1 LIMIT ?",
            (prefix, prefix + "g", prefix, prefix + "g", limit),
        )
        return [str(r[0]) for r in cur]

    def by_id(self, object_id: str, version: int | None = None) -> list[Row]:
        if version is None:
            return self._rows("object_id = ?", (object_id,))
        if version > 2**63 - 1:
            return []
        return self._rows("object_id = ? AND object_version = ?", (object_id, version))


def _cohort_by_definition(conn: sqlite3.Connection, digest: str) -> str | None:
    row = conn.execute(
        "SELECT cohort_id FROM cohorts WHERE ? IN (definition_digest, definition_digest_jcs,"
        " definition_digest_legacy) AND cohort_id IS NOT NULL ORDER BY seq DESC LIMIT 1",
        (digest,),
    ).fetchone()
    return None if row is None else str(row[0])


def known_cohort(conn: sqlite3.Connection, cohort_id: str) -> bool:
    """Whether the projection has a cohort page for ``cohort_id``."""
    return (
        conn.execute(
            "SELECT 1 FROM cohort_audits WHERE cohort_id = ?"
            " UNION ALL SELECT 1 FROM cohorts WHERE cohort_id = ? LIMIT 1",
            (cohort_id, cohort_id),
        ).fetchone()
        is not None
    )


def page_of(row: Row) -> str:
    """The page of one stored object (every object has one; results show provenance)."""
    return object_url(row.digest)


def locate(conn: sqlite3.Connection, ref: str) -> Address:
    """The page ``ref`` names, or why none (total: never raises)."""
    if not ref:
        return Address(ref, None, "no address given")
    if len(ref) > MAX_REF:
        return Address(
            ref[:80] + "...",
            None,
            f"address too long, got {len(ref)} characters, expected at most {MAX_REF}",
        )
    if is_digest(ref):
        cohort = None if BrowseObjects(conn).get(ref) else _cohort_by_definition(conn, ref)
        if cohort is not None:
            return Address(ref, cohort_url(cohort))
    elif not ref.startswith("sha256:") and known_cohort(conn, ref):
        return Address(ref, cohort_url(ref))
    objects = BrowseObjects(conn)
    try:
        row = resolve(objects, ref)
    except LedgerError as exc:
        candidates: tuple[Row, ...] = ()
        if "ambiguous" in str(exc):
            prefix = ref if ref.startswith("sha256:") else "sha256:" + ref
            found = objects.by_digest_prefix(prefix, SHOWN)
            candidates = tuple(r for d in found if (r := objects.get(d)) is not None)
        return Address(ref, None, str(exc), candidates)
    return Address(ref, page_of(row))
