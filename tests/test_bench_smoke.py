"""scripts/bench.py runs end to end on 10,000 objects and writes well-formed JSON.

--quick keeps it to ~15 s on the idle 2-core machine (100 proof queries, 3 --help runs;
about a minute when other test suites share the cores). No timing is asserted, only the
shape and sense of the results.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
N = 10_000


def test_bench_quick_run(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "scripts" / "bench.py"),
            "--sizes",
            str(N),
            "--quick",
            "--out",
            str(out),
            "--workdir",
            str(tmp_path / "work"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert {"machine", "runs", "help_cold_start", "command", "seed"} <= set(result)
    assert result["machine"]["cpus"] >= 1
    (run,) = result["runs"]
    assert run["objects"] == N
    assert sum(run["by_kind"].values()) == N
    assert set(run["by_kind"]) == {
        "work-unit",
        "evaluator-plan",
        "result-manifest",
        "verification-result",
        "attestation",
    }
    imp = run["import"]
    assert (imp["new"], imp["rejected"]) == (N, 0)
    assert imp["objects_per_s"] > 0 and imp["canonical_mb_per_s"] > 0
    assert run["import_rerun"]["present"] == N
    assert run["verify"]["exit"] == 0 and run["verify"]["findings"] == 0
    assert run["verify"]["entries_per_s"] > 0
    # The floor: every required step timed, on every object, the signatures on every
    # attestation; their sum is the floor, and the ceiling follows from it.
    for job in ("verify", "import", "index"):
        floor = run["floor"][job]
        assert floor["objects"] == N
        assert floor["attestations"] == run["by_kind"]["attestation"]
        steps = floor["us_per_object"]
        assert len(steps) >= 4 and all(us > 0 for us in steps.values())
        assert floor["floor_us"] == pytest.approx(sum(steps.values()))
    verify = run["floor"]["verify"]
    assert verify["ceiling_per_s"] == pytest.approx(verify["cores"] * 1e6 / verify["floor_us"])
    assert verify["hinted"] > 0  # the legacy digests step timed something
    # verify re-judges every entry by the admission policy: the floor counts that too.
    assert verify["us_per_object"]["admission replay (signatures: the Ed25519 step)"] > 0
    # The comparisons with stored side values are timed and reported apart, never in the
    # floor: a separate total and ceiling.
    side = verify["stored_side_us"]
    assert len(side) == 4 and all(us > 0 for us in side.values())
    assert not set(side) & set(verify["us_per_object"])
    assert verify["floor_with_stored_side_us"] == pytest.approx(
        verify["floor_us"] + sum(side.values())
    )
    # The import's floor: the checks plus SQLite's own writes of the rows, measured
    # store-only over as many objects; that part is serial, so the ceiling is the lower
    # of the CPU bound and one object per store wall time.
    imp_floor, store = run["floor"]["import"], run["store_only"]
    assert store["objects"] == N and store["sqlite_cpu_us"] > 0
    assert imp_floor["store_cpu_us"] == store["sqlite_cpu_us"]
    assert imp_floor["checks_us"] + imp_floor["store_cpu_us"] == pytest.approx(
        imp_floor["floor_us"]
    )
    cpu_bound = imp_floor["cores"] * 1e6 / imp_floor["floor_us"]
    serial = 1e6 / max(store["sqlite_wall_us"], store["sqlite_cpu_us"])
    assert imp_floor["ceiling_per_s"] == pytest.approx(min(cpu_bound, serial))
    assert imp_floor["bound"] == ("serial store" if serial < cpu_bound else "cpu")
    # The index's floor: the re-derivation of every row from the bytes, and its own
    # SQLite writes of them, which are serial (one writer per browse file): its ceiling
    # is the lower of the CPU bound and one entry per write time, reported with the
    # index row (measured in the same run).
    index_floor = run["floor"]["index"]
    index_steps = index_floor["us_per_object"]
    assert index_floor["write_us"] == index_steps["SQLite writes of the browse rows (serial)"]
    assert 0 < index_floor["write_indexes_us"] < index_floor["write_us"]
    assert index_floor["hinted"] > 0
    cpu_bound = index_floor["cores"] * 1e6 / index_floor["floor_us"]
    serial = 1e6 / index_floor["write_us"]
    assert index_floor["ceiling_per_s"] == pytest.approx(min(cpu_bound, serial))
    assert index_floor["bound"] == ("serial writes" if serial < cpu_bound else "cpu")
    # What it leaves out, so the bound stays a bound, is measured beside it.
    assert len(index_floor["not_counted_us"]) == 2
    assert all(us > 0 for us in index_floor["not_counted_us"].values())
    index_row = run["reads"]["index"]
    assert index_row["ceiling_per_s"] == index_floor["ceiling_per_s"]
    assert index_row["rate_over_ceiling"] == pytest.approx(
        index_row["entries_per_s"] / index_floor["ceiling_per_s"]
    )
    assert run["goals"]["index_rate_over_ceiling"]["measured"] == index_row["rate_over_ceiling"]
    assert "index ceiling (bound) vs measured" in proc.stdout
    assert "index rate / its ceiling" in proc.stdout
    # Every goal of the performance issue, measured against its limit in the same run.
    goals = run["goals"]
    assert goals["import_time_over_git"]["measured"] == run["peers"]["provledger_over_git"]
    assert goals["import_time_over_git"]["met"] == (
        goals["import_time_over_git"]["measured"] <= 0.83
    )
    assert goals["verify_rate_over_ceiling"]["measured"] == pytest.approx(
        run["verify"]["entries_per_s"] / verify["ceiling_per_s"]
    )
    assert goals["import_last_slice_over_first"]["measured"] is None  # one slice
    assert "import ceiling (bound) vs measured" in proc.stdout
    assert "goal verify_rate_over_ceiling" in proc.stdout
    since = run["verify_since_head"]
    assert (since["exit"], since["findings"]) == (0, 0)
    # Nothing was appended after the head checkpoint (its record is logged by the next
    # append): the incremental audit checks no entry, only the tree at the checkpoint.
    assert since["entries_checked"] == 0
    size = run["size"]
    assert size["db_bytes"] > size["canonical_bytes"] > 0
    assert size["db_over_canonical"] > 1
    for name in ("inclusion", "consistency"):
        stats = run["proofs"][name]
        assert 0 < stats["p50_ms"] <= stats["p99_ms"] <= stats["max_ms"]
    assert run["proofs"]["queries"] == 100
    provenance = run["proofs"]["provenance"]
    assert "status" in provenance
    if provenance["status"] == "ok":
        assert 0 < provenance["cpu_p50_ms"] <= provenance["cpu_p99_ms"]
    for peer in run.get("peers", {}).values():
        assert not isinstance(peer, dict) or peer["objects_per_s"] > 0
    assert result["help_cold_start"]["median_ms"] > 0
    # Web page latency through a served ledger (with the reference corpus's cohorts).
    web = run["web"]
    if "skipped" not in web:
        assert web["entries"] > N and web["cohorts"] >= 5 and web["results"] > 0
        for page in ("home", "cohort", "result"):
            assert web[page]["requests"] == 50
            assert 0 < web[page]["p50_ms"] <= web[page]["p99_ms"] <= web[page]["max_ms"]
        assert "web result page p50/p99 ms" in proc.stdout
    # The read commands: log | head, log --json in full, index from scratch and again.
    reads = run["reads"]
    head = reads["log_head"]
    assert 0 < head["first_entry_s_min"] <= head["first_entry_s_median"]
    assert head["first_entry_s_median"] <= head["first_entry_s_max"]
    assert reads["log_json"]["bytes"] > 100 * N and reads["log_json"]["entries_per_s"] > 0
    assert reads["index"]["entries_per_s"] > 0 and reads["index"]["browse_bytes"] > 0
    assert reads["index"]["nothing_new_wall_s"] > 0
    assert "log | head first entry s" in proc.stdout and "index (full) entries/s" in proc.stdout
    # The printed table names every measured row.
    assert "import objects/s" in proc.stdout and "verify entries/s" in proc.stdout
    assert "verify floor CPU us/entry (checks alone)" in proc.stdout
    # The import curve: one slice here (the default slice is 100,000 objects).
    (only,) = imp["slices"]
    assert only["upto"] == N and only["objects_per_s"] > 0
    # CPU of the whole process tree (CLI and workers): per object, and per slice.
    assert imp["cpu_us_per_object"] > 0 and only["cpu_us_per_object"] > 0
    assert only["cpu_us_per_object"] == imp["cpu_us_per_object"]
    assert run["verify"]["cpu_us_per_entry"] > 0
    # Start-up CPU of every measured command, against the interpreter floor.
    start = run["start_up"]
    assert {"floor", "--help", "verify --help", "show", "proof inclusion", "stats"} <= set(start)
    assert all(v["cpu_median_ms"] > 0 and v["over_floor"] > 0 for v in start.values())
    assert start["floor"]["over_floor"] == 1
