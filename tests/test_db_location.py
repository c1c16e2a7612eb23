"""``--db`` values: an explicit location, a file (``SQLitePath``) or a database
(``PostgresURL``, the URL intact: no ``//`` collapse); what commands derive from it."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.location import (
    PostgresURL,
    SQLitePath,
    database_name,
    parse_location,
    redact,
)


def test_url_is_kept_whole_and_keys_default_to_the_database_name() -> None:
    url = "postgresql://eve:s3cret@db.example.org:5433/evidence?sslmode=require"
    db = parse_location(url)
    assert isinstance(db, PostgresURL) and db.url == url and db.arg == url
    redacted = "postgresql://eve:***@db.example.org:5433/evidence?sslmode=require"
    assert str(db) == db.shown == redacted and "s3cret" not in repr(db)
    assert db.sibling(db.name + ".log.key") == Path("evidence.log.key")


def test_socket_urls_and_names() -> None:
    assert database_name("postgresql://u@/led?host=/run/postgresql") == "led"
    assert database_name("postgres:///x") == "x"
    assert database_name("postgresql://u@h") == "u"
    assert parse_location("postgresql:///../../etc").name == "_.._etc"
    assert redact("postgresql://u@h/d") == "postgresql://u@h/d"


def test_paths_stay_paths() -> None:
    for text in ("ledger.db", "./postgresql/x.db", "postgresql:x"):
        assert parse_location(text) == SQLitePath(Path(text))
    db = parse_location(Path("dir/l.db"))
    assert db == SQLitePath(Path("dir/l.db")) and parse_location(db) is db
    assert db.sibling(db.name + ".log.key") == Path("dir/l.db.log.key")
    assert (db.arg, db.shown) == ("dir/l.db", "dir/l.db")


@given(st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=30))
def test_any_database_name_gives_a_plain_relative_key_path(name: str) -> None:
    db = PostgresURL("postgresql://u@h/" + name.replace("/", "%2F").replace("?", "%3F"))
    key = db.sibling(db.name + ".log.key")
    assert not key.is_absolute() and len(key.parts) == 1 and not key.name.startswith(".")


def test_a_url_to_a_missing_server_is_one_error_line(tmp_path: Path) -> None:
    url = f"postgresql://u@/nodb?host={tmp_path}&port=1"
    result = CliRunner().invoke(app, ["log", "--db", url])
    assert result.exit_code == 3
    assert result.stderr.startswith("error: lost or refused connection to ledger postgresql://")
    assert result.stderr.count("\n") == 1


def test_without_postgresql_tests_skip_locally_and_fail_in_ci(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pg_cluster import unavailable

    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="apt-get install postgresql"):
        unavailable("no initdb/pg_ctl found")
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="apt-get install postgresql"):
        unavailable("no initdb/pg_ctl found")


def test_migrate_of_an_unreachable_server_is_one_line() -> None:
    # migrate also brings a PostgreSQL ledger of an earlier layout up to date
    # (tests/test_pg_hostile_writer.py); a server that is not there is one line, exit 3.
    result = CliRunner().invoke(app, ["migrate", "--db", "postgresql://u@/led?host=/nowhere"])
    assert result.exit_code == 3
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


def test_serve_gives_result_pages_a_database_and_a_file_only_when_there_is_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``PostgresURL`` is no file: serve hands it to the result pages' checks as it is
    (it once asked the URL ``is_file()`` and ran no check); a missing file is left out."""
    from cohorts.browse import web

    served: list[web.ServeOptions] = []
    monkeypatch.setattr(web, "serve", lambda options, started: served.append(options))
    browse = tmp_path / "ledger.browse.db"
    browse.write_bytes(b"")
    url = "postgresql://u@/led?host=/nowhere"
    for db in (url, str(tmp_path / "missing.db"), str(browse)):
        result = CliRunner().invoke(app, ["serve", "--db", db, "--browse", str(browse)])
        assert result.exit_code == 0, result.output
    assert [s.ledger for s in served] == [PostgresURL(url), None, SQLitePath(browse)]
