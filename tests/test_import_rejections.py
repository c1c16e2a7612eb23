"""``import jsonl`` keeps memory bounded however many lines it rejects.

The attack: a file of millions of bad lines. Every rejection used to be kept with its
reason, in the workers' block results and in the summary: 3M ``{}`` lines reached 1.3 GiB.
Now every rejection is counted and only the first ``MAX_REJECTIONS`` are kept.

The 3M-line run uses a document limit of one byte, so every line is rejected before it
is parsed (about 2.5 us a line instead of 8): the rejections travel the same path as
those of ``{}`` lines under the default limit (block result, then summary), and the run
takes seconds (in the importing process: ``--workers 1``). Kept whole, those rejections
reach about 840 MiB; counted, the importer's peak stays near its 80 MiB baseline.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.bulk import MAX_REJECTIONS

# VmHWM: this process's own peak (getrusage's ru_maxrss would carry the peak of the
# pytest process it was forked from across exec).
SCRIPT = """
import dataclasses, json, sys
from pathlib import Path
from ledger.encoding.canonical import DEFAULT_LIMITS
from ledger.store.bulk import import_jsonl
from ledger.store.sqlite import open_store

db, source = Path(sys.argv[1]), Path(sys.argv[2])
limits = dataclasses.replace(DEFAULT_LIMITS, max_bytes=1)
with open_store(db) as store, source.open("rb") as lines:
    summary = import_jsonl(store, lines, workers=1, limits=limits)
status = Path("/proc/self/status").read_text().split("VmHWM:")[1]
print(json.dumps({"count": summary.rejected_count, "kept": len(summary.rejected),
                  "first": summary.rejected[0].line, "last": summary.rejected[-1].line,
                  "peak_kib": int(status.split()[0])}))
"""


def _import(tmp: Path, ledger: Path, lines: int) -> dict[str, Any]:
    source = tmp / f"{lines}.jsonl"
    source.write_bytes(b"{}\n" * lines)
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ledger), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    result: dict[str, Any] = json.loads(run.stdout)
    return result


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_three_million_rejected_lines_in_bounded_memory(tmp_path: Path, ledger_path: Path) -> None:
    big = _import(tmp_path, ledger_path, 3_000_000)
    assert (big["count"], big["kept"]) == (3_000_000, MAX_REJECTIONS)
    assert (big["first"], big["last"]) == (1, MAX_REJECTIONS)  # the first ones, in order
    assert big["peak_kib"] < 160 * 1024, big


def test_the_cli_lists_the_first_rejections_and_counts_the_rest(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_bytes(b'{"not": "a kind"}\n' * (MAX_REJECTIONS + 500))
    args = ["import", "jsonl", str(source), "--db", str(ledger_path), "--workers", "1"]
    text = runner.invoke(app, args)
    assert text.exit_code == 3
    errors = text.stderr.splitlines()
    assert len(errors) == MAX_REJECTIONS + 1
    assert errors[0].startswith("error: line 1: cannot tell the document's kind")
    assert errors[-1] == (
        f"error: 500 more line(s) rejected, not listed (only the first {MAX_REJECTIONS} are)"
    )
    assert f"{MAX_REJECTIONS + 500} rejected" in text.stdout
    shown = runner.invoke(app, [*args, "--json"])
    summary = json.loads(shown.stdout)
    assert summary["rejected"] == MAX_REJECTIONS + 500
    assert len(summary["rejections"]) == MAX_REJECTIONS and summary["ok"] is False
