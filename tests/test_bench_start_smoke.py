"""scripts/bench_start.py runs end to end on a tiny ledger and reports every case.

One round, no warm-up: ~60 short CLI runs (about 15 s on the idle 2-core machine). No
timing is asserted, only the shape and sense of the results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import bench_start

from ledger.cli import COMMANDS

ROOT = Path(__file__).resolve().parents[1]


def test_command_paths_cover_the_table_and_the_sub_apps() -> None:
    paths = list(bench_start.command_paths())
    assert [p[0] for p in paths if len(p) == 1] == list(COMMANDS)
    assert ("proof", "inclusion") in paths and ("import", "jsonl") in paths
    assert ("cohort", "burn") in paths
    assert len(set(paths)) == len(paths)


def test_bench_start_smoke(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench_start.py"),
            "--objects",
            "30",
            "--rounds",
            "1",
            "--no-warmup",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["ledger_entries"] == 30
    assert result["limits"] == {"first": 1.2, "help": 1.5, "read": 2.0}
    rows = {r["name"]: r for r in result["results"]}
    kinds = [r["kind"] for r in result["results"]]
    assert kinds[:2] == ["floor", "reference"]
    assert rows[result["results"][0]["name"]]["ratio"] == 1.0
    assert "typer.Typer" in result["floor"] and '"--db"' in result["floor"]
    assert rows["--help"]["limit"] == rows["show DIGEST"]["limit"] == 1.2
    help_rows = [r for r in result["results"] if r["kind"] == "help"]
    assert len(help_rows) == 1 + len(list(bench_start.command_paths()))
    assert {"show DIGEST", "show DIGEST --json", "proof inclusion DIGEST", "stats"} <= set(rows)
    for row in result["results"]:
        assert row["exit_codes"] == [0], row  # every case ran to success
        assert len(row["samples_ms"]) == 1 and row["samples_ms"][0] > 0
        assert row["ratio"] > 0
        assert row["ok"] == (row["limit"] is None or row["ratio"] <= row["limit"])
    assert result["ok"] == all(r["ok"] for r in result["results"])
