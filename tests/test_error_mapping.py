"""Errors are grouped by fault and mapped to exit codes in one place.

Every error class carries its exit code and a stable finding code; commands signal a
failed, already-printed outcome by raising a ``Reported`` error, never by exiting with a
number; audits run every check unless one is switched off by name.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import cohorts
import ledger
import verifiers
from cohorts.audit import audit_cohort
from cohorts.errors import CohortInputError
from ledger.audit import full
from ledger.audit.findings import LedgerFinding
from ledger.audit.full import audit
from ledger.cli.common import new_app
from ledger.create import initialise
from ledger.errors import (
    CheckFailed,
    InputError,
    LedgerError,
    ProblemsReported,
    RejectionsReported,
    SchemaError,
)
from ledger.store.base import StoredObject
from ledger.store.sqlite import open_store

ROOT = Path(__file__).resolve().parents[1]


def _sources(package: str) -> list[Path]:
    """The package's Python modules (not the data under ``fixtures/``)."""
    return [p for p in sorted((ROOT / package).rglob("*.py")) if "fixtures" not in p.parts]


PACKAGES = (ledger, verifiers, cohorts)


def _all_error_classes() -> list[type[LedgerError]]:
    for package in PACKAGES:
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
    seen: list[type[LedgerError]] = []
    todo: list[type[LedgerError]] = [LedgerError]
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.append(cls)
            todo.extend(cls.__subclasses__())
    return seen


def test_every_error_class_carries_exit_and_finding_code() -> None:
    classes = _all_error_classes()
    assert len(classes) > 20
    for cls in classes:
        assert cls.exit_code in (1, 2, 3, 4), cls
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*", cls.finding_code), cls


def test_finding_codes_the_audit_reports_are_the_classes() -> None:
    # These codes are documented (docs/LOG.md); they must not drift with a rename.
    assert SchemaError.finding_code == "schema-invalid"
    from ledger.errors import CanonicalFormError, KindError, ParseError

    assert CanonicalFormError.finding_code == "not-canonical"
    assert KindError.finding_code == "kind-invalid"
    assert ParseError.finding_code == "parse-error"


#: The one place errors become exit codes: ``ProvGroup`` (its ``main`` maps click's usage
#: errors, parsed before any command runs, as ``invoke`` maps the commands' errors).
MAPPING_PLACE = ("ledger/cli/common.py", "ProvGroup")


def _exit_calls(path: Path) -> list[str]:
    tree = ast.parse(path.read_text("utf-8"))
    if str(path.relative_to(ROOT)) == MAPPING_PLACE[0]:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == MAPPING_PLACE[1]:
                node.body = []  # its exits are the mapping itself
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = ast.unparse(node.func)
            # ``typer.Exit()`` (code 0, e.g. after --version) picks no failure code.
            exits = ("typer.Exit", "sys.exit", "exit", "SystemExit", "click.exceptions.Exit")
            if name in exits and (node.args or node.keywords):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_command_exits_with_its_own_code() -> None:
    found = []
    for package in ("ledger", "verifiers", "cohorts"):
        for path in _sources(package):
            found += _exit_calls(path)
    assert found == []


def _class_name_lookups(path: Path) -> list[str]:
    """Decisions keyed on an exception's class name: ``{...}.get(type(e).__name__)``, ``==``."""

    def is_class_name(node: ast.AST) -> bool:
        return ast.unparse(node).startswith("type(") and ast.unparse(node).endswith(").__name__")

    found = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        keyed = (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and any(is_class_name(a) for a in node.args)
        )
        compared = isinstance(node, ast.Compare) and any(
            is_class_name(n) for n in (node.left, *node.comparators)
        )
        subscripted = isinstance(node, ast.Subscript) and is_class_name(node.slice)
        if keyed or compared or subscripted:
            found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}")
    return found


def test_no_module_maps_errors_by_class_name() -> None:
    found = []
    for package in ("ledger", "verifiers", "cohorts"):
        for path in _sources(package):
            found += _class_name_lookups(path)
    assert found == []


@pytest.mark.parametrize(
    ("error", "code"), [(ProblemsReported("x"), 1), (RejectionsReported("x"), 3)]
)
def test_reported_outcome_exits_with_its_code_and_adds_no_line(
    error: LedgerError, code: int
) -> None:
    app = new_app("t")

    @app.command()
    def report() -> None:
        print("the report")
        raise error

    @app.command()
    def other() -> None:
        raise CheckFailed("a check failed, got x, expected y")

    result = CliRunner().invoke(app, ["report"])
    assert result.exit_code == code
    assert result.stdout == "the report\n"
    assert result.stderr == ""
    result = CliRunner().invoke(app, ["other"])
    assert result.exit_code == 1
    assert result.stderr == "error: a check failed, got x, expected y\n"


def _ledger(tmp_path: Path) -> Path:
    db = tmp_path / "l.db"
    initialise(db, "errors.example/log", tmp_path / "log.key", tmp_path / "authority.key")
    return db


def test_audit_runs_object_checks_by_default_and_skips_only_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.store.prepared import prepare_blob

    db = _ledger(tmp_path)
    with open_store(db) as store:
        store.append_many([prepare_blob(b"one")])

    def flag(obj: StoredObject, _store: object) -> list[LedgerFinding]:
        return [LedgerFinding("flagged", "seen", obj.seq, obj.digest)]

    monkeypatch.setattr(full, "default_object_checks", lambda _policy: {"flag": flag})
    with open_store(db, readonly=True) as store:
        assert [f.code for f in audit(store).findings] == ["flagged"]
        assert audit(store, skip_checks=("flag",)).ok
        with pytest.raises(InputError, match="unknown audit check, got nope"):
            audit(store, skip_checks=("nope",))


def test_cohort_audit_skips_schema_only_by_name() -> None:
    from cohorts.lookup import MemoryLookup

    with pytest.raises(CohortInputError, match="unknown cohort audit check"):
        audit_cohort({}, MemoryLookup(), skip_checks=("schemas",))
    checked = {f.code for f in audit_cohort({"stage": "frozen"}, MemoryLookup()).findings}
    skipped = {
        f.code
        for f in audit_cohort({"stage": "frozen"}, MemoryLookup(), skip_checks=("schema",)).findings
    }
    assert "cohort.schema" in checked
    assert "cohort.schema" not in skipped
