"""A COPY cut short by a dying server prints one error line, not two.

psycopg logs a second error ("error ignored terminating <Copy>") while the first one
propagates; ``tests/test_pg_writers.py::test_postmaster_killed_mid_import`` saw it as a
second stderr line about one run in seven. The store drops exactly that record, and
only while its own COPY runs."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("psycopg", reason="the PostgreSQL extra is not installed")

from ledger.store.postgres import quiet_second_copy_error


def _emit() -> None:
    log = logging.getLogger("psycopg")
    log.warning("error ignored terminating %r: %s", "<psycopg.Copy>", "server closed")
    log.warning("a warning of another kind")


def test_the_second_error_of_a_copy_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="psycopg"), quiet_second_copy_error():
        _emit()
    assert [r.getMessage() for r in caplog.records] == ["a warning of another kind"]


def test_outside_the_stores_copy_psycopg_logs_as_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="psycopg"):
        _emit()
    assert len(caplog.records) == 2
