"""Runaway SQL against a real ``provledger serve`` process is refused or bounded.

A web visitor may run any read-only SQL. Datasette's time limit is checked from SQLite's
progress handler, between virtual-machine steps, so a single long C call
(``randomblob(999999999)`` ran 4-20 s) escaped it; rows of big values, wide rows and
sorts spilling to /tmp could take the host's memory or disk. Each query below is answered
with an error naming the bound it hit, the server keeps serving (canned queries included),
and its peak memory stays bounded. No assertion is about time.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browse_ledger import Served, serving
from typer.testing import CliRunner

from cohorts.browse.project import TEXT_LIMIT
from cohorts.browse.web import BOUNDS
from ledger.cli import app

pytest.importorskip("datasette")

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "examples" / "cohorts" / "toy"
EXE = Path(sys.executable).parent / "provledger"
BIG = b"big blob line\n" * 40_000  # 560,000 bytes: its text is cut in the projection


def run(runner: CliRunner, *args: str) -> str:
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output)
    return result.stdout


def _ledger(tmp: Path) -> tuple[Path, Path]:
    """A toy cohort frozen then burned, a big blob, a checkpoint; indexed."""
    runner = CliRunner()
    db, browse = tmp / "ledger.db", tmp / "ledger.browse.db"
    d = str(db)
    run(runner, "init", "--db", d)
    files = sorted(str(p) for p in (TOY / "work-units").glob("*.json"))
    files += sorted(str(p) for p in (TOY / "evaluators").glob("*.json"))
    run(runner, "append", "--db", d, *files)
    v1 = json.loads((TOY / "cohort-v1.json").read_text())
    v1["stage"] = "frozen"
    (tmp / "v1.json").write_text(json.dumps(v1))
    run(runner, "cohort", "freeze", str(tmp / "v1.json"), "--db", d)
    task = v1["tasks"][0]["id"]
    run(runner, "cohort", "burn", v1["id"], "--db", d, "--reason", "seen", "--observed-task", task)
    (tmp / "big.txt").write_bytes(BIG)
    run(runner, "append", "--db", d, "--kind", "blob", str(tmp / "big.txt"))
    run(runner, "checkpoint", "--db", d)
    run(runner, "index", "--db", d, "--out", str(browse))
    return db, browse


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    db, browse = _ledger(tmp_path_factory.mktemp("serve-bounds"))
    with serving(db, browse) as served:
        yield served


def _get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=120) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _sql(base: str, sql: str) -> tuple[int, Any]:
    return _get(f"{base}/browse.json?" + urllib.parse.urlencode({"sql": sql, "_shape": "array"}))


def _peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


FOREVER = "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)"
RUNAWAY = {
    # One C call of a gigabyte: refused at once by the length limit.
    "SELECT randomblob(999999999)": "string or blob too big",
    f"{FOREVER.replace('n + 1', 'n || n')} SELECT length(n) FROM r": "string or blob too big",
    # Endless virtual-machine steps: the time limit.
    f"{FOREVER} SELECT count(*) FROM r": "SQL query took too long",
    f"{FOREVER} SELECT n FROM r ORDER BY random()": "SQL query took too long",
    # Many rows of big values: the result budget.
    f"{FOREVER} SELECT zeroblob(30000000) FROM r": "result too large",
    # One row wider than all of SQLite's memory in the server.
    "SELECT " + ", ".join(["zeroblob(30000000)"] * 12): "out of memory",
}


def test_runaway_queries_are_refused_and_the_server_keeps_serving(
    server: Served,
) -> None:
    base, pid = server.base, server.proc.pid
    for sql, message in RUNAWAY.items():
        status, body = _sql(base, sql)
        assert status == 400, (sql, status, body)
        assert message in body["error"], (sql, body)
    # printf gives up past the length limit: NULL, not a gigabyte.
    status, body = _sql(base, "SELECT length(printf('%.*c', 999999999, 'x')) AS n")
    assert (status, body) == (200, [{"n": None}])
    # Still serving: plain queries, the canned queries, object pages.
    status, rows = _sql(base, "SELECT kind, count(*) AS n FROM objects GROUP BY kind")
    assert status == 200 and {r["kind"] for r in rows} >= {"blob", "benchmark-cohort"}
    status, burned = _get(f"{base}/browse/burned_cohorts.json?_shape=array")
    assert status == 200 and [r["cohort_id"] for r in burned] == ["example/toy-v1"]
    status, excluded = _get(f"{base}/browse/excluded_outcomes.json?_shape=array&cohort=")
    assert status == 200 and excluded
    status, big = _sql(base, "SELECT text FROM objects WHERE kind = 'blob' AND size > 500000")
    assert status == 200 and len(big) == 1
    assert big[0]["text"].startswith(f"{BIG[:TEXT_LIMIT].decode()}\n[cut at {TEXT_LIMIT} of")
    # A table page of every object (each value within the bounds) still renders.
    status, page = _get(f"{base}/browse/objects.json?_shape=array&_size=1000")
    assert status == 200 and len(page) == sum(r["n"] for r in rows)
    # Bounded memory: the 1 GB blob, the 30 MB x 12 row and the endless rows never lived.
    # Refusals are answered without a traceback on the server's output (Datasette prints
    # each with its locals, some 190 KB, which blocks the server on an unread pipe).
    assert server.stdout.read_bytes() == b""
    assert server.stderr.read_bytes().count(b"\n") <= len(RUNAWAY) + 1
    peak = _peak_rss(pid)
    print(f"serve peak RSS {peak >> 20} MiB")
    assert peak < BOUNDS.heap_bytes + 3 * BOUNDS.result_bytes + (256 << 20)
