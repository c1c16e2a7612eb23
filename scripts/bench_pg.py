"""SQLite against PostgreSQL with concurrent writers (``scripts/bench.py --postgres``).

For each size the synthetic corpus (``bench_corpus``) is split into ``w`` disjoint
shards (task groups kept together); one ``provledger import jsonl --workers 1``
process per shard, all started at once, on a fresh SQLite file and on a fresh
PostgreSQL database. On the ledgers of the largest writer count: a checkpoint, the
``verify`` rate (entries per second of a full audit, one process) and inclusion-proof
latency (in process, random leaves). The server's settings are recorded with the
results; the server itself is the operator's (``--postgres ADMIN_URL``: a role that may
create databases).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path
from typing import Any

from bench_corpus import GROUP, write_corpus

PG_SETTINGS = (
    "server_version",
    "shared_buffers",
    "synchronous_commit",
    "fsync",
    "wal_level",
    "max_wal_size",
    "work_mem",
    "max_connections",
)


def pg_settings(admin_url: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        return {k: str(conn.execute(f"SHOW {k}").fetchone()[0]) for k in PG_SETTINGS}  # type: ignore[index]


def _pg_database(admin_url: str, name: str) -> str:
    """Create (afresh) database ``name`` on the server; return its URL."""
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
        # Roles of an earlier run of the same name (init creates <db>_writer/_auditor).
        for role in (f"{name}_writer", f"{name}_auditor"):
            conn.execute(f'DROP ROLE IF EXISTS "{role}"')
    parts = urllib.parse.urlsplit(admin_url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def _concurrent_import(provledger: str, db: str, shards: list[Path], batch: int) -> float:
    """Start one ``import jsonl`` per shard at once; wall seconds until all are done."""
    env = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
    cmd = [provledger, "import", "jsonl", "--db", db, "--batch", str(batch), "--workers", "1"]
    start = time.perf_counter()
    procs = [
        subprocess.Popen([*cmd, str(s)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        for s in shards
    ]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"import exited {proc.returncode}: {err.decode()[-2000:]}")
    return time.perf_counter() - start


def _proof_latency(db: str, queries: int, seed: int) -> dict[str, float]:
    from bench import _pcts

    from ledger.log.checkpoints import prove_inclusion
    from ledger.store.backends import open_store
    from ledger.store.location import parse_location

    rng = random.Random(seed)
    times = []
    with open_store(parse_location(db), readonly=True) as store:
        size = store.size()
        for _ in range(queries):
            obj = store.get_by_seq(rng.randrange(size))
            assert obj is not None
            t = time.perf_counter()
            prove_inclusion(store, obj.digest)
            times.append(time.perf_counter() - t)
    return _pcts(times)


def bench_writers(n: int, args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """One size: every writer count on both backends (see the module docstring)."""
    from bench import PROVLEDGER, run

    work = base / f"writers-n{n}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    jsonl = work / "corpus.jsonl"
    write_corpus(jsonl, n, args.seed)
    lines = jsonl.read_text("utf-8").splitlines(keepends=True)
    groups = [lines[i : i + GROUP] for i in range(0, len(lines), GROUP)]
    out: dict[str, Any] = {"objects": len(lines), "batch": args.batch, "runs": []}
    counts = [int(c) for c in args.writer_counts.split(",")]
    for backend in ("sqlite", "postgres"):
        for w in counts:
            shards = []
            for i in range(w):
                path = work / f"shard-{w}-{i}.jsonl"
                path.write_text("".join(x for g in groups[i::w] for x in g), "utf-8")
                shards.append(path)
            if backend == "sqlite":
                db = str(work / f"ledger-{w}.db")
            else:
                db = _pg_database(args.postgres, f"provledger_bench_{n}_{w}")
            log_key = str(work / f"{backend}-{w}.log.key")
            keys = ["--log-key", log_key, "--authority-key", str(work / f"{backend}-{w}.auth.key")]
            run([PROVLEDGER, "init", "--db", db, *keys, "--json"])
            print(f"   {backend} writers={w}", file=sys.stderr, flush=True)
            wall = _concurrent_import(PROVLEDGER, db, shards, args.batch)
            row: dict[str, Any] = {
                "backend": backend,
                "writers": w,
                "import_wall_s": wall,
                "objects_per_s": len(lines) / wall,
            }
            if w == counts[-1]:
                run([PROVLEDGER, "checkpoint", "--db", db, "--log-key", log_key, "--json"])
                ver = run(
                    [PROVLEDGER, "verify", "--db", db, "--json", "--workers", "1"], check=False
                )
                row["verify_exit"] = ver["exit"]
                row["verify_wall_s"] = ver["wall_s"]
                row["verify_entries_per_s"] = len(lines) / ver["wall_s"]
                row["inclusion_proof"] = _proof_latency(db, args.queries, args.seed)
            out["runs"].append(row)
    return out


def writers_table(result: dict[str, Any]) -> str:
    rows = [
        "| objects | backend | writers | import objects/s | verify entries/s"
        " | proof p50 / p99 ms |",
        "|---:|---|---:|---:|---:|---|",
    ]
    for size in result["writers"]:
        for r in size["runs"]:
            proof = r.get("inclusion_proof")
            p = f"{proof['p50_ms']:.2f} / {proof['p99_ms']:.2f}" if proof else ""
            verify = f"{r['verify_entries_per_s']:,.0f}" if "verify_entries_per_s" in r else ""
            rows.append(
                f"| {size['objects']:,} | {r['backend']} | {r['writers']} |"
                f" {r['objects_per_s']:,.0f} | {verify} | {p} |"
            )
    return "\n".join(rows)
