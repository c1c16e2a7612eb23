"""Callers go through the Store protocol; rows cross modules by field name, not position."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from ledger.create import initialise
from ledger.store import base
from ledger.store.prepared import prepare_blob
from ledger.store.sqlite import SQLiteStore, open_store

ROOT = Path(__file__).resolve().parents[1]


def _sources(package: str) -> list[Path]:
    """The package's Python modules (not the data under ``fixtures/``)."""
    return [p for p in sorted((ROOT / package).rglob("*.py")) if "fixtures" not in p.parts]


PACKAGES = ("ledger", "verifiers", "cohorts")


def _protocol_members(proto: type) -> set[str]:
    names: set[str] = set()
    for klass in proto.__mro__:
        if klass in (object,) or not getattr(klass, "_is_protocol", False):
            continue
        names |= {n for n in vars(klass) if not n.startswith("_")}
        names |= set(getattr(klass, "__annotations__", {}))
    return names


@pytest.mark.parametrize("proto", [base.Store, base.AuditSource])
def test_sqlite_store_implements_the_protocols(proto: type) -> None:
    missing = sorted(n for n in _protocol_members(proto) if not hasattr(SQLiteStore, n))
    assert set(missing) <= {"location", "dry_run"}  # both are set per instance


def test_both_backends_share_one_base_and_override_only_its_hooks() -> None:
    """What SQLite and PostgreSQL share is written once (``SQLStore``): a backend that
    redefines one of its concrete steps has copied shared logic back."""
    from ledger.store.postgres import PostgresStore
    from ledger.store.sqlstore import SQLStore

    hooks = set(SQLStore.__abstractmethods__) | {"storage_bytes", "_ensure_cosignatures_table"}
    shared = (
        {
            name
            for name, value in vars(SQLStore).items()
            if callable(value) or isinstance(value, property)
        }
        - hooks
        - {"__init__"}
    )
    assert {"append_many", "_append_batch", "stats", "kind_totals", "checkpoint_at"} <= shared
    for backend in (SQLiteStore, PostgresStore):
        assert issubclass(backend, SQLStore)
        assert not (set(vars(backend)) & shared), backend.__name__
        assert not backend.__abstractmethods__, backend.__name__


def _positional_rows(path: Path) -> list[str]:
    """``StoredObject(*row)`` / ``Prepared(*fields)``: a row spread into a record by position."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("StoredObject", "Prepared", "Entry", "RawObjectRow")
            and any(isinstance(a, ast.Starred) for a in node.args)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def _backend_checks(path: Path) -> list[str]:
    """``isinstance(x, SQLiteStore)``: a caller choosing behavior by backend."""
    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) == "isinstance"
            and "SQLiteStore" in ast.unparse(node.args[1])
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_row_crosses_by_position_and_no_backend_check() -> None:
    found = []
    for package in PACKAGES:
        for path in _sources(package):
            found += _positional_rows(path) + _backend_checks(path)
    assert found == []


def test_raw_connection_is_used_only_inside_the_store() -> None:
    users = sorted(
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in _sources(package)
        if ".connection" in path.read_text("utf-8") and path.parent.name != "store"
    )
    assert users == []


def test_the_full_audit_runs_no_sql_of_its_own() -> None:
    """Every backend-specific check is an ``AuditSource`` method of the backend."""
    text = (ROOT / "ledger" / "audit" / "full.py").read_text("utf-8")
    for word in ("sqlite", "SELECT ", "PRAGMA", "psycopg", "pg_"):
        assert word not in text, word


def test_columns_are_the_dataclass_fields() -> None:
    fields = inspect.signature(base.StoredObject).parameters
    assert tuple(fields) == base.OBJECT_COLUMNS
    assert tuple(inspect.signature(base.RawObjectRow).parameters) == base.OBJECT_COLUMNS


def test_stats_and_log_rows_read_one_ledger(tmp_path: Path) -> None:
    db = tmp_path / "l.db"
    initialise(db, "store.example/log", tmp_path / "log.key", tmp_path / "authority.key")
    with open_store(db) as store:
        store.append_many([prepare_blob(b"a"), prepare_blob(b"bc")])
        stats = store.stats()
        rows = list(store.log_rows())
    assert (stats.size, stats.counts, stats.object_bytes) == (2, {"blob": 2}, 3)
    assert stats.origin == "store.example/log"
    assert [r.seq for r in rows] == [0, 1]
    assert rows[1].object is not None and rows[1].object.data == b"bc"
    assert base.unchecked_object(rows[1].object).digest == rows[1].digest
