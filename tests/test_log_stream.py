"""``provledger log`` streams: the first rows are written before later ones are read, the
work done follows what is printed (``--limit``, ``--since``, a reader that stops
reading), and a closed pipe ends the command quietly with exit 0.

Counts, not timings (speed targets live in ``scripts/bench.py``): how many entries the
command read and how many ids it looked up, against the ledger's size.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from generated_ledger import generated_ledger
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import app, common, core
from ledger.store.sqlite import SQLiteStore

EXE = Path(sys.executable).parent / "provledger"
ENTRIES = 3000


@pytest.fixture(scope="module")
def big_ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger of ``ENTRIES`` generated objects (the benchmark's corpus)."""
    return Path(generated_ledger(tmp_path_factory.mktemp("logstream"), ENTRIES, 7))


class Counted:
    """Counts the entries ``log`` reads and the ids it looks up (class-wide patches)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entries = 0
        self.ids = 0
        entries, ids_of = SQLiteStore.entries, SQLiteStore.ids_of
        counter = self

        def counted_entries(self: SQLiteStore, *args: Any, **kwargs: Any) -> Iterator[Any]:
            for entry in entries(self, *args, **kwargs):
                counter.entries += 1
                yield entry

        def counted_ids(self: SQLiteStore, digests: Any) -> Any:
            counter.ids += len(digests)
            return ids_of(self, digests)

        monkeypatch.setattr(SQLiteStore, "entries", counted_entries)
        monkeypatch.setattr(SQLiteStore, "ids_of", counted_ids)


def _run_into_pipe(args: list[str], lines: int) -> tuple[list[str], int | None]:
    """Run the CLI in process with stdout a real pipe whose reader stops after ``lines``
    lines and closes its end; the lines read and the exit code."""
    read_fd, write_fd = os.pipe()
    got: list[str] = []

    def reader() -> None:
        with os.fdopen(read_fd, "r", encoding="utf-8") as stream:
            for line in stream:
                got.append(line)
                if len(got) == lines:
                    break

    thread = threading.Thread(target=reader)
    thread.start()
    saved_fd = os.dup(1)
    saved = sys.stdout
    os.dup2(write_fd, 1)
    os.close(write_fd)
    sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), encoding="utf-8")
    code: int | None = None
    try:
        app(args, prog_name="provledger")
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else 1
    finally:
        with contextlib.suppress(BrokenPipeError):
            sys.stdout.flush()
        sys.stdout = saved
        os.dup2(saved_fd, 1)
        os.close(saved_fd)
        thread.join()
    return got, code


@pytest.mark.parametrize("json_out", [False, True])
def test_a_reader_that_stops_bounds_the_work(
    big_ledger: Path, monkeypatch: pytest.MonkeyPatch, json_out: bool
) -> None:
    monkeypatch.setattr(core, "LOG_FIRST_CHUNK", 20)
    monkeypatch.setattr(core, "LOG_CHUNK", 100)
    monkeypatch.setattr(common, "JSON_FIRST_ROWS", 20)
    monkeypatch.setattr(common, "JSON_BATCH_ROWS", 100)
    counted = Counted(monkeypatch)
    args = ["log", "--db", str(big_ledger), *(["--json"] if json_out else [])]
    lines, code = _run_into_pipe(args, 3)
    assert len(lines) == 3 and code == 0
    # The pipe holds up to 64 KiB the reader never takes: a few more chunks, never all.
    assert counted.entries < ENTRIES / 3, counted.entries
    assert counted.ids < ENTRIES / 3


def test_limit_and_since_bound_the_work(big_ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counted = Counted(monkeypatch)
    result = CliRunner().invoke(app, ["log", "--db", str(big_ledger), "--since", "2990"])
    assert result.exit_code == 0
    assert len(result.stdout.splitlines()) == 1 + 10
    assert counted.entries == 10 and counted.ids == 10
    counted.entries = counted.ids = 0
    result = CliRunner().invoke(app, ["log", "--db", str(big_ledger), "--limit", "7", "--json"])
    assert [row["seq"] for row in json.loads(result.stdout)] == list(range(7))
    assert counted.entries == 7 and counted.ids == 0  # --json shows no ids: none looked up


def test_the_first_rows_are_out_before_later_ones_are_read(
    big_ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = {"n": 0}
    ids_of = SQLiteStore.ids_of

    def second_call_fails(self: SQLiteStore, digests: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("stop here")
        return ids_of(self, digests)

    monkeypatch.setattr(SQLiteStore, "ids_of", second_call_fails)
    result = CliRunner().invoke(app, ["log", "--db", str(big_ledger)])
    assert result.exit_code == 70
    rows = result.stdout.splitlines()[1:]
    assert len(rows) == core.LOG_FIRST_CHUNK
    assert [int(r.split()[0]) for r in rows] == list(range(core.LOG_FIRST_CHUNK))


@pytest.mark.skipif(not EXE.exists(), reason="provledger is not installed in this venv")
@pytest.mark.parametrize(
    "args", [["log"], ["log", "--json"], ["log", "--kind", "work-unit"], ["stats"]]
)
def test_a_closed_pipe_ends_quietly_with_exit_0(big_ledger: Path, args: list[str]) -> None:
    proc = subprocess.Popen(
        [str(EXE), *args, "--db", str(big_ledger)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does once it has its line
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert first and err == b""


def _plain_rows() -> st.SearchStrategy[list[dict[str, Any]]]:
    value = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.text(),
        st.floats(allow_nan=False, allow_infinity=False),
        st.lists(st.integers(), max_size=2),
        st.dictionaries(st.text(max_size=3), st.text(max_size=3), max_size=2),
    )
    return st.lists(st.dictionaries(st.text(max_size=8), value, max_size=5), max_size=5)


@given(_plain_rows())
@settings(max_examples=300, deadline=None)
def test_streamed_json_is_byte_for_byte_emit_json(rows: list[dict[str, Any]]) -> None:
    saved = sys.stdout
    try:
        sys.stdout = io.StringIO()
        common.emit_json(rows)
        whole = sys.stdout.getvalue()
        sys.stdout = io.StringIO()
        common.emit_json_rows(iter(rows))
        streamed = sys.stdout.getvalue()
    finally:
        sys.stdout = saved
    assert streamed == whole


def test_postgres_log_streams_through_a_server_side_cursor(pg_url: str, tmp_path: Path) -> None:
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    runner = CliRunner()
    generated_ledger(tmp_path, 300, 5, url=pg_url)
    rows = json.loads(runner.invoke(app, ["log", "--db", pg_url, "--json"]).stdout)
    assert [r["seq"] for r in rows] == list(range(300))
    window = ["--since", "290", "--limit", "5"]
    some = json.loads(runner.invoke(app, ["log", "--db", pg_url, "--json", *window]).stdout)
    assert some == rows[290:295]
    human = runner.invoke(app, ["log", "--db", pg_url, "--kind", "work-unit"]).stdout
    assert len(human.splitlines()) == 1 + sum(r["kind"] == "work-unit" for r in rows)
    with open_store(parse_location(pg_url), readonly=True) as store:
        first = store.entries()
        second = store.entries(since=10)  # two cursors open at once
        assert [next(first).seq, next(second).seq, next(first).seq] == [0, 10, 1]
        first.close()
        second.close()  # a reader that stopped: its cursor's connection is closed
        assert store._idle()  # type: ignore[attr-defined]  # the store's own is untouched
        assert store.size() == 300
        assert [e.seq for e in store.entries(since=295)] == list(range(295, 300))
