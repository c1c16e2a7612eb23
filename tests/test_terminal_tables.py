"""Terminal tables never hide an id or a digest (``ledger.cli.tables``).

At any width from 80 columns up, every cell of ``cohort list``, ``cohort audit --all`` and
``log`` is read back whole from what a terminal shows (folded cells joined again); piped,
every row is one line. On the real corpus (``import idkmesh``) and on synthetic long ids.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import app, tables
from ledger.cli.tables import TableWriter, cell_text, cell_width

WIDTHS = (80, 100, 120, 160, 240)
DIGEST = "sha256:" + "0123456789abcdef" * 4


def parse(text: str, headers: Sequence[str]) -> list[list[str]]:
    """The rows a person reads off a terminal table (or list of records), folded cells
    joined again. Cells are compared with their blanks removed: prose wraps at spaces."""
    lines = text.splitlines()
    if not lines:
        return []
    if lines[0].startswith("┏"):
        return _parse_table(lines)
    return _parse_records(lines, max(cell_width(h) for h in headers) + 2)


def _parse_table(lines: list[str]) -> list[list[str]]:
    rows: list[list[str]] = []
    current: list[list[str]] | None = None
    folds = any(line.startswith("├") for line in lines)
    for line in lines:
        if line.startswith("│"):
            cells = [c[1:-1] if len(c) > 1 else c for c in line[1:-1].split("│")]
            if current is None or not folds:
                current = [[] for _ in cells]
                rows.append(current)  # type: ignore[arg-type]
            for piece, cell in zip(current, cells, strict=True):
                piece.append(cell.strip())
        elif line.startswith(("├", "└")):
            current = None
    return [["".join(pieces).replace(" ", "") for pieces in row] for row in rows]  # type: ignore[misc]


def _parse_records(lines: list[str], label_width: int) -> list[list[str]]:
    rows: list[list[str]] = []
    record: list[list[str]] = []
    for line in lines:
        if not line.strip():
            if record:
                rows.append(["".join(v) for v in record])
            record = []
            continue
        label, value = line[:label_width], line[label_width:]
        if label.strip():
            record.append([value.strip().replace(" ", "")])
        else:
            record[-1].append(value.strip().replace(" ", ""))
    if record:
        rows.append(["".join(v) for v in record])
    return rows


def _render(
    headers: Sequence[str], rows: list[list[str]], width: int | None, streamed: bool = False
) -> str:
    """What ``table`` (one chunk) or a streamed table (chunks of 2 rows) writes."""
    out = io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    try:
        writer = TableWriter(headers, width, streamed=streamed)
        for start in range(0, len(rows), 2 if streamed else max(1, len(rows))):
            writer.write(rows[start : start + 2] if streamed else rows)
        writer.close()
    finally:
        sys.stdout = saved
    return out.getvalue()


def _squeezed(rows: list[list[str]]) -> list[list[str]]:
    return [[cell.replace(" ", "") for cell in row] for row in rows]


LONG_ROWS = [
    ["benchmark/phase-b2-first-five-v2", "frozen", DIGEST, "5", "attested by the authority key"],
    ["benchmark/phase-b2-first-five-v3", "frozen", DIGEST[::-1], "5", "not attested"],
    ["x" * 150 + "/v2", "burned", DIGEST, "12345", "record attested " * 8],
    ["x" * 150 + "/v3", "scaffold", "-", "0", ""],
    ["日本語のコホート/" * 6, "frozen", DIGEST, "7", "ok"],
]
HEADERS = ["id", "stage", "definition digest", "tasks", "attested"]


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("width", WIDTHS)
def test_synthetic_long_ids_are_whole_at_every_width(width: int, streamed: bool) -> None:
    text = _render(HEADERS, LONG_ROWS, width, streamed)
    assert "…" not in text
    assert all(cell_width(line) <= width for line in text.splitlines()), text
    assert parse(text, HEADERS) == _squeezed(LONG_ROWS), text
    # Two ids that differ only at their end never read the same.
    shown = [row[0] for row in parse(text, HEADERS)]
    assert len(set(shown)) == len(shown)


def test_piped_rows_are_one_line_each() -> None:
    text = _render(HEADERS, LONG_ROWS, None)
    lines = text.splitlines()
    assert len(lines) == 1 + len(LONG_ROWS)
    for line, row in zip(lines[1:], LONG_ROWS, strict=True):
        for cell in row:
            assert cell.rstrip() in line
    # Columns line up with the header (the last column is not padded).
    assert lines[1].index(DIGEST) == lines[0].index("definition digest")


def test_an_empty_table_is_its_header() -> None:
    assert _render(HEADERS, [], None).splitlines() == ["  ".join(HEADERS)]
    terminal = _render(HEADERS, [], 80)
    assert "definition digest" in terminal and parse(terminal, HEADERS) == []


def test_escapes_are_readable() -> None:
    assert cell_text("a\nb\x1b[2J\u202ec\ud800") == "a\\x0ab\\x1b[2J\\u202ec\\ud800"
    assert cell_text("日本 ok") == "日本 ok"


@given(st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_a_cell_never_spans_lines_or_reaches_the_terminal_as_control(value: str) -> None:
    shown = cell_text(value)
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp") for c in shown)
    piped = _render(["a", "b"], [[value, "end"]], None)
    assert len(piped.splitlines()) == 2
    on_terminal = _render(["a", "b"], [[value, "end"]], 80)
    assert "\x1b" not in on_terminal


# -- through the CLI, on the real corpus -------------------------------------------------


@pytest.fixture(scope="module")
def real_ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    from conftest import CORPUS

    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS} (it lives in ../shared, outside the repo)")
    db = tmp_path_factory.mktemp("tables") / "ledger.db"
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
    done = runner.invoke(app, ["import", "idkmesh", str(CORPUS), "--db", str(db)])
    assert done.exit_code == 0, done.output
    yield db


def _cli(args: list[str], db: Path, width: int | None, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(tables, "terminal_width", lambda: width)
    result = CliRunner().invoke(app, [*args, "--db", str(db)])
    assert result.exit_code in (0, 1), result.output
    return result.stdout


def _json(args: list[str], db: Path) -> list[dict[str, object]]:
    result = CliRunner().invoke(app, [*args, "--db", str(db), "--json"])
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


LIST = ["id", "stage", "definition digest", "tasks", "attested"]
AUDIT = ["cohort", "stage", "tasks", "outcomes", "excluded", "defects", "missing", "warnings"]
LOG = ["seq", "kind", "digest", "appended at", "id"]


@pytest.mark.parametrize("width", WIDTHS)
def test_cohort_tables_show_every_id_and_digest(
    real_ledger: Path, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    listed = _json(["cohort", "list"], real_ledger)
    assert len({row["cohort_id"] for row in listed}) == len(listed) > 1
    rows = parse(_cli(["cohort", "list"], real_ledger, width, monkeypatch), LIST)
    assert [r[0] for r in rows] == [row["cohort_id"] for row in listed]
    assert [r[2] for r in rows] == [row["definition_digest"] or "-" for row in listed]
    audited = parse(_cli(["cohort", "audit", "--all"], real_ledger, width, monkeypatch), AUDIT)
    assert [r[0] for r in audited] == [row["cohort_id"] for row in listed]


@pytest.mark.parametrize("width", [80, 120])
def test_log_shows_every_digest_and_id(
    real_ledger: Path, width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    entries = _json(["log"], real_ledger)
    rows = parse(_cli(["log"], real_ledger, width, monkeypatch), LOG)
    assert [r[2] for r in rows] == [e["digest"] for e in entries]
    assert [r[0] for r in rows] == [str(e["seq"]) for e in entries]
    ids = {r[4] for r in rows}
    assert "benchmark/phase-b2-first-five" in {i.split("@")[0] for i in ids}


def test_piped_cohort_list_is_one_line_per_cohort(real_ledger: Path) -> None:
    listed = _json(["cohort", "list"], real_ledger)
    lines = CliRunner().invoke(app, ["cohort", "list", "--db", str(real_ledger)]).stdout
    body = lines.splitlines()[1:]
    assert len(body) == len(listed)
    for line, row in zip(body, listed, strict=True):
        assert line.split()[0] == row["cohort_id"]
        assert str(row["definition_digest"] or "-") in line.split()


@pytest.mark.parametrize("width", [2, 8, 20, 40, 60])  # 2: one wide character
def test_narrow_terminals_cut_nothing(width: int) -> None:
    """Below 80 columns too: records, values below their labels when the side is too
    narrow; every cell is there, read line after line."""
    text = _render(HEADERS, LONG_ROWS, width)
    assert "…" not in text
    assert all(cell_width(line) <= width for line in text.splitlines()), text
    squeezed = "".join(text.split())
    for row in LONG_ROWS:
        for cell in row:
            assert "".join(cell.split()) in squeezed, (width, cell)


# -- the installed provledger on a real terminal (a pseudo-terminal of a given size) -------

EXE = Path(sys.executable).parent / "provledger"
SGR = re.compile(r"\x1b\[[0-9;]*m")


def _on_a_terminal(args: list[str], db: Path, width: int) -> str:
    """What the installed ``provledger`` writes to a terminal ``width`` columns wide (the
    pseudo-terminal's size, as a terminal emulator sets it), colours removed."""
    import fcntl
    import struct
    import termios

    leader, follower = os.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    with subprocess.Popen(
        [str(EXE), *args, "--db", str(db)], stdout=follower, stderr=subprocess.PIPE, env=env
    ) as proc:
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # EIO: the program ended and closed the terminal
                break
            if not chunk:
                break
            out += chunk
        stderr = proc.stderr.read() if proc.stderr else b""
    os.close(leader)
    assert proc.returncode in (0, 1), stderr
    assert stderr == b""
    return SGR.sub("", out.decode("utf-8").replace("\r\n", "\n"))


@pytest.mark.skipif(not EXE.exists(), reason="provledger is not installed in this venv")
@pytest.mark.parametrize("width", [80, 120])
def test_installed_cli_on_a_terminal_shows_every_id(real_ledger: Path, width: int) -> None:
    listed = _json(["cohort", "list"], real_ledger)
    shown = _on_a_terminal(["cohort", "list"], real_ledger, width)
    assert "…" not in shown
    assert all(cell_width(line) <= width for line in shown.splitlines()), shown
    rows = parse(shown, LIST)
    assert [r[0] for r in rows] == [row["cohort_id"] for row in listed]
    assert [r[2] for r in rows] == [row["definition_digest"] or "-" for row in listed]
    audited = parse(_on_a_terminal(["cohort", "audit", "--all"], real_ledger, width), AUDIT)
    assert [r[0] for r in audited] == [row["cohort_id"] for row in listed]
