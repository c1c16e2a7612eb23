"""``verify --browse FILE``: does a browse database match the ledger?

The check re-derives the projection from the ledger into a temporary file with the same
code as ``provledger index`` and compares FILE with it whole. Nothing in FILE is trusted:

- its schema: every object of ``sqlite_master`` (tables, views, indexes, triggers, the
  full-text tables and their shadow tables) must exist with exactly the definition
  ``index`` gives it, and nothing else may exist: a view redefined to show a burned
  cohort as frozen, or a trigger added, is a finding;
- every declared table, row by row (a row missing, a row extra, or one column
  different is a finding); a projection built from an older log position is stale;
- every full-text index, token by token (``fts5vocab``, ``instance``): an index edited
  to hide a row from search is a finding, however its segments are laid out.
"""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cohorts.browse.build import build_index
from cohorts.browse.tables import TABLES
from ledger.errors import NotFound
from ledger.store.base import AuditSource, SQLValue

MAX_SHOWN = 20


@dataclass(frozen=True)
class BrowseFinding:
    code: str
    table: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "table": self.table, "message": self.message}


def _rows(
    conn: sqlite3.Connection, table: str, pk: tuple[str, ...]
) -> dict[SQLValue, dict[str, SQLValue]]:
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


def check_browse(store: AuditSource, file: Path) -> list[BrowseFinding]:
    """Every difference between ``file`` and a fresh projection of ``store``."""
    if not file.is_file():
        raise NotFound(f"browse database not found, got {file}, expected a file from `index`")
    findings: list[BrowseFinding] = []
    with tempfile.TemporaryDirectory(prefix="provledger-browse-") as tmp:
        fresh = Path(tmp) / "expected.db"
        build_index(store, fresh, full=True)
        given, expected = _readonly(file), _readonly(fresh)
        try:
            schema_findings, altered = _compare_schema(given, expected)
            findings.extend(schema_findings)
            for table in TABLES:
                if ("table", table.name) in altered:
                    continue  # missing or not a table: its rows cannot be read as such
                findings.extend(_compare(table.name, table.pk, given, expected))
                fts = f"{table.name}_fts"
                if table.fts and not any(name.startswith(fts) for _, name in altered):
                    findings.extend(_compare_fts(table.name, fts, given, expected))
        except sqlite3.DatabaseError as exc:
            findings.append(
                BrowseFinding("browse.unreadable", "", f"got '{exc}', expected a browse database")
            )
        finally:
            given.close()
            expected.close()
    return findings


Schema = dict[tuple[str, str], tuple[str, str | None]]


def _schema(conn: sqlite3.Connection) -> Schema:
    """(type, name) -> (table it belongs to, its SQL) for every object of the file."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master")
    return {(kind, name): (table, sql) for kind, name, table, sql in rows}


def _compare_schema(
    given: sqlite3.Connection, expected: sqlite3.Connection
) -> tuple[list[BrowseFinding], set[tuple[str, str]]]:
    """Findings for every schema object missing, extra or defined otherwise; their keys."""
    got, want = _schema(given), _schema(expected)
    out: list[BrowseFinding] = []
    for kind, name in sorted(want.keys() - got.keys()):
        code = "browse.table.missing" if kind == "table" else "browse.schema.missing"
        out.append(BrowseFinding(code, name, f"{kind} missing"))
    for kind, name in sorted(got.keys() - want.keys()):
        out.append(
            BrowseFinding(
                "browse.schema.extra", name, f"{kind} {name} is not one `provledger index` makes"
            )
        )
    changed = sorted(k for k in got.keys() & want.keys() if got[k] != want[k])
    for kind, name in changed:
        out.append(
            BrowseFinding(
                "browse.schema.altered",
                name,
                f"{kind} {name}, got the definition {_short(got[kind, name][1])},"
                f" expected {_short(want[kind, name][1])}",
            )
        )
    return out, (want.keys() - got.keys()) | set(changed)


def _compare_fts(
    table: str, fts: str, given: sqlite3.Connection, expected: sqlite3.Connection
) -> list[BrowseFinding]:
    """The first difference between two full-text indexes, token by token."""
    vocab = f"provledger_vocab_{fts}"
    # Index order (term, row, column, offset): equal indexes iterate equally.
    query = f"SELECT term, doc, col, offset FROM temp.[{vocab}]"
    for conn in (given, expected):
        # In the connection's own temp schema: FILE stays read-only.
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.[{vocab}]"
            f" USING fts5vocab(main, '{fts}', 'instance')"
        )
    pairs = itertools.zip_longest(given.execute(query), expected.execute(query))
    for got, want in pairs:
        if got != want:
            return [
                BrowseFinding(
                    "browse.fts",
                    table,
                    f"full-text index {fts} (term, row, column, offset), got {_short(got)},"
                    f" expected {_short(want)}",
                )
            ]
    return []


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


def _key(key: tuple[SQLValue, ...]) -> str:
    return "/".join(str(k) for k in key)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
