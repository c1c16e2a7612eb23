"""A COPY cut short by a dying server prints one error line, not two.

psycopg logs a second error ("error ignored terminating <Copy>") while the first one
propagates; ``tests/test_pg_writers.py::test_postmaster_killed_mid_import`` saw it as a
second stderr line about one run in seven. The store drops exactly that record."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("psycopg", reason="the PostgreSQL extra is not installed")


def test_the_second_error_of_a_copy_is_dropped(caplog: pytest.LogCaptureFixture) -> None:
    import ledger.store.postgres  # noqa: F401  (installs the filter on import)

    log = logging.getLogger("psycopg")
    with caplog.at_level(logging.WARNING, logger="psycopg"):
        log.warning("error ignored terminating %r: %s", "<psycopg.Copy>", "server closed")
        log.warning("a warning of another kind")
    assert [r.getMessage() for r in caplog.records] == ["a warning of another kind"]


def test_without_the_filter_the_record_would_be_shown(caplog: pytest.LogCaptureFixture) -> None:
    from ledger.store.postgres import SECOND_ERROR_OF_A_COPY

    log = logging.getLogger("psycopg")
    log.removeFilter(SECOND_ERROR_OF_A_COPY)
    try:
        with caplog.at_level(logging.WARNING, logger="psycopg"):
            log.warning("error ignored terminating %r: %s", "<psycopg.Copy>", "x")
        assert len(caplog.records) == 1
    finally:
        log.addFilter(SECOND_ERROR_OF_A_COPY)
