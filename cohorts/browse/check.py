"""``verify --browse FILE``: does a browse database match the ledger?

The check re-derives the projection from the ledger into a temporary file with the same
code as ``provledger index`` and compares every declared table row by row (a row
missing, a row extra, or one column different is a finding). Nothing in FILE is
trusted: a projection built from an older log position is reported as stale.
"""

from __future__ import annotations

import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cohorts.browse.build import build_index
from cohorts.browse.tables import TABLES
from ledger.errors import NotFound
from ledger.store.base import LedgerReader

MAX_SHOWN = 20


@dataclass(frozen=True)
class BrowseFinding:
    code: str
    table: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "table": self.table, "message": self.message}


def _rows(conn: sqlite3.Connection, table: str, pk: tuple[str, ...]) -> dict[Any, dict[str, Any]]:
    order = ", ".join(f"[{c}]" for c in pk)
    cur = conn.execute(f"SELECT * FROM [{table}] ORDER BY {order}")
    names = [d[0] for d in cur.description]
    return {
        tuple(row[names.index(c)] for c in pk): dict(zip(names, row, strict=True)) for row in cur
    }


def _readonly(path: Path) -> sqlite3.Connection:
    import urllib.parse

    uri = "file:" + urllib.parse.quote(str(path.absolute())) + "?mode=ro"
    return sqlite3.connect(uri, uri=True)


def check_browse(store: LedgerReader, file: Path) -> list[BrowseFinding]:
    """Every difference between ``file`` and a fresh projection of ``store``."""
    if not file.is_file():
        raise NotFound(f"browse database not found, got {file}, expected a file from `index`")
    findings: list[BrowseFinding] = []
    with tempfile.TemporaryDirectory(prefix="provledger-browse-") as tmp:
        fresh = Path(tmp) / "expected.db"
        build_index(store, fresh, full=True)
        given, expected = _readonly(file), _readonly(fresh)
        try:
            have = {r[0] for r in given.execute("SELECT name FROM sqlite_master")}
            for table in TABLES:
                if table.name not in have:
                    findings.append(
                        BrowseFinding("browse.table.missing", table.name, "table missing")
                    )
                    continue
                findings.extend(_compare(table.name, table.pk, given, expected))
        except sqlite3.DatabaseError as exc:
            findings.append(
                BrowseFinding("browse.unreadable", "", f"got '{exc}', expected a browse database")
            )
        finally:
            given.close()
            expected.close()
    return findings


def _compare(
    name: str, pk: tuple[str, ...], given: sqlite3.Connection, expected: sqlite3.Connection
) -> list[BrowseFinding]:
    out: list[BrowseFinding] = []
    got, want = _rows(given, name, pk), _rows(expected, name, pk)
    for key in sorted(want.keys() - got.keys(), key=repr)[:MAX_SHOWN]:
        out.append(BrowseFinding("browse.row.missing", name, f"row {_key(key)} missing"))
    for key in sorted(got.keys() - want.keys(), key=repr)[:MAX_SHOWN]:
        out.append(BrowseFinding("browse.row.extra", name, f"row {_key(key)} not in the ledger"))
    shown = 0
    for key in sorted(got.keys() & want.keys(), key=repr):
        for column, value in want[key].items():
            if got[key].get(column) != value and shown < MAX_SHOWN:
                shown += 1
                out.append(
                    BrowseFinding(
                        "browse.value",
                        name,
                        f"row {_key(key)} column {column}, got {_short(got[key].get(column))},"
                        f" expected {_short(value)}",
                    )
                )
    return out


def _key(key: tuple[Any, ...]) -> str:
    return "/".join(str(k) for k in key)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
