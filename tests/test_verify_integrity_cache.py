"""``integrity_findings`` runs SQLite's integrity check with a page cache large enough
for the random-keyed indexes it compares with their tables, and changes nothing else:

- the check itself is ``PRAGMA integrity_check`` (not a cheaper one), run with the
  cache raised to ``INTEGRITY_CACHE_KIB`` and the connection's own cache restored after,
  also when the check raises; a connection whose cache is larger already keeps it;
- what it finds is what it found with the connection's own cache (an index pointed at
  another row, on a file edited byte by byte).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from test_verify_aside import _append, _index

from ledger.store import sqlite_audit


def _traced(conn: sqlite3.Connection) -> list[str]:
    statements: list[str] = []
    conn.set_trace_callback(statements.append)
    return statements


def _cache(conn: sqlite3.Connection) -> int:
    (value,) = conn.execute("PRAGMA cache_size").fetchone()
    return int(value)


def test_the_check_runs_with_the_larger_cache_and_restores_the_own(ledger_path: Path) -> None:
    conn = sqlite3.connect(ledger_path)
    conn.execute("PRAGMA cache_size = -2000")
    statements = _traced(conn)
    assert sqlite_audit.integrity_findings(conn) == []
    assert statements == [
        "PRAGMA cache_size",
        "PRAGMA page_size",
        f"PRAGMA cache_size = -{sqlite_audit.INTEGRITY_CACHE_KIB}",
        "PRAGMA integrity_check",
        "PRAGMA cache_size = -2000",
    ]
    assert _cache(conn) == -2000


@pytest.mark.parametrize("own", [-(2 * sqlite_audit.INTEGRITY_CACHE_KIB), 4096])
def test_a_larger_cache_is_kept(ledger_path: Path, own: int) -> None:
    """In KiB (negative) or in pages (positive: 4,096 pages of 32 KiB = 128 MiB)."""
    conn = sqlite3.connect(ledger_path)
    conn.execute(f"PRAGMA cache_size = {own}")
    statements = _traced(conn)
    assert sqlite_audit.integrity_findings(conn) == []
    assert not any("cache_size =" in s for s in statements)
    assert _cache(conn) == own


def test_the_own_cache_is_restored_when_the_check_raises(ledger_path: Path) -> None:
    conn = sqlite3.connect(ledger_path)
    conn.execute("PRAGMA cache_size = -3000")
    conn.set_progress_handler(lambda: 1, 1)  # every statement from here is interrupted
    with pytest.raises(sqlite3.OperationalError):
        sqlite_audit.integrity_findings(conn)
    conn.set_progress_handler(None, 1)
    assert _cache(conn) == -3000


def test_the_findings_are_those_of_the_own_cache(
    ledger_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _append(ledger_path, 90, 11)
    _index(ledger_path)
    conn = sqlite3.connect(ledger_path)
    raised = sqlite_audit.integrity_findings(conn)
    monkeypatch.setattr(sqlite_audit, "INTEGRITY_CACHE_KIB", 1)  # never raised: the own
    own = sqlite_audit.integrity_findings(conn)
    assert raised == own
    assert [f.code for f in raised][:3] == [
        "database-corrupt",
        "digest-index-mismatch",
        "digest-index-mismatch",
    ]
