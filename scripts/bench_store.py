"""Store-only import curve: the SQLite write path alone, per 100k-object slice.

Synthetic prepared objects (random bytes of the benchmark corpus's size mix, random
digests, one reference each, a legacy digest on most) go straight to
``SQLiteStore.append_many`` in batches of the CLI default, with the import's page
cache. No parsing, validation or worker processes: what is left is the cost of the
ledger's tables and indexes as the ledger grows, which is what the file layout decides.
Besides each slice's whole ``append_many`` it reports SQLite's own share: the CPU and
wall time of inserting the planned rows and committing them (``sqlite_cpu_s``,
``sqlite_wall_s``), the serial cost no design of the writer can skip; ``scripts/bench.py``
adds it to the checks' floor (``scripts/bench_floor.py``).

    .venv/bin/python scripts/bench_store.py --objects 400000 --out store.json

Run it against another checkout's ``ledger`` package (e.g. the previous layout) with
``PYTHONPATH=OTHER_CHECKOUT``; the JSON records which package was measured.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ledger
from ledger.store.bulk import DEFAULT_BATCH

try:  # where the import's page cache size lives differs between checkouts
    from ledger.store.sqlite import BULK_CACHE_KIB
except ImportError:  # pragma: no cover - older checkouts
    from ledger.store.bulk import BULK_CACHE_KIB  # type: ignore[attr-defined,no-redef]
from ledger.store.prepared import Prepared
from ledger.store.sqlite import SQLiteStore, create_store

SIZES = (3400, 1300, 2200, 2200, 2200, 6500, 6500, 6500, 400)  # bytes, the corpus mix
KINDS = ("work_unit", "evaluator_plan") + ("result_manifest",) * 3 + ("verification_result",) * 3


def _objects(n: int, seed: int) -> list[Prepared]:
    rng = random.Random(seed)
    pool = rng.randbytes(1 << 16)
    out: list[Prepared] = []
    previous = "sha256:" + "0" * 64
    for i in range(n):
        size = SIZES[i % len(SIZES)]
        start = rng.randrange(len(pool) - size)
        data = i.to_bytes(8, "big") + pool[start : start + size]
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        kind = KINDS[i % len(KINDS)] if i % len(SIZES) < len(KINDS) else "blob"
        legacy = None if kind == "blob" else "sha256:" + hashlib.sha256(data[::-1]).hexdigest()
        out.append(
            Prepared(
                digest=digest,
                kind=kind,
                data=data,
                object_id=f"task-{i // len(SIZES):07d}" if kind == "work_unit" else None,
                object_version=1 if kind == "work_unit" else None,
                legacy_digest=legacy,
                refs=(("binds", previous),),
            )
        )
        previous = digest
    return out


class SQLiteShare:
    """CPU and wall seconds a store spends in SQLite's own writes of a batch: inserting
    its planned rows (``_insert_rows``) and the COMMIT that ends its transaction, on
    whichever thread runs it (``bulk_session`` commits on a thread of its own). CPU is
    each thread's own (``time.thread_time``), so time spent concurrently is not counted
    twice."""

    def __init__(self, store: SQLiteStore) -> None:
        self.cpu = self.wall = 0.0
        insert = store._insert_rows

        def timed_insert(rows: Any) -> None:
            cpu, wall = time.thread_time(), time.perf_counter()
            try:
                insert(rows)
            finally:
                self.cpu += time.thread_time() - cpu
                self.wall += time.perf_counter() - wall

        store._insert_rows = timed_insert  # type: ignore[method-assign]
        commit = getattr(store, "_commit_now", None)
        if commit is not None:

            def timed_commit() -> None:
                cpu, wall = time.thread_time(), time.perf_counter()
                try:
                    commit()
                finally:
                    self.cpu += time.thread_time() - cpu
                    self.wall += time.perf_counter() - wall

            store._commit_now = timed_commit  # type: ignore[method-assign]
            return
        write = store._write  # an earlier checkout: COMMIT where the write block ends

        @contextmanager
        def timed_write() -> Iterator[None]:
            with write():
                yield
                cpu, wall = time.thread_time(), time.perf_counter()
            self.cpu += time.thread_time() - cpu
            self.wall += time.perf_counter() - wall

        store._write = timed_write  # type: ignore[method-assign]


def _slices(
    store: SQLiteStore, share: SQLiteShare, n: int, batch: int, slice_size: int, seed: int
) -> list[dict[str, Any]]:
    slices: list[dict[str, Any]] = []
    for first in range(0, n, slice_size):
        objs = _objects(min(slice_size, n - first), seed + first)
        cpu0, t0 = time.process_time(), time.perf_counter()
        sqlite_cpu0, sqlite_wall0 = share.cpu, share.wall
        for start in range(0, len(objs), batch):
            store.append_many(objs[start : start + batch])
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        slices.append(
            {
                "first": first,
                "objects": len(objs),
                "wall_s": round(wall, 3),
                "cpu_s": round(cpu, 3),
                "sqlite_cpu_s": round(share.cpu - sqlite_cpu0, 3),
                "sqlite_wall_s": round(share.wall - sqlite_wall0, 3),
                "rate": round(len(objs) / wall),
                "data_bytes": sum(len(o.data) for o in objs),
            }
        )
        print(f"{first + len(objs):>9} objects: {len(objs) / wall:>8,.0f}/s", file=sys.stderr)
    return slices


def run(n: int, batch: int, slice_size: int, seed: int, workdir: Path) -> dict[str, Any]:
    db = workdir / "store.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    store = create_store(db)
    share = SQLiteShare(store)
    # The import's own session: its page cache and WAL settings, its final checkpoint.
    with store.bulk_session():
        slices = _slices(store, share, n, batch, slice_size, seed)
    store.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    store.close()
    total = sum(s["wall_s"] for s in slices)
    data_bytes = sum(s["data_bytes"] for s in slices)
    return {
        "package": os.path.dirname(ledger.__file__),
        "objects": n,
        "batch": batch,
        "cache_kib": BULK_CACHE_KIB,
        "total_s": round(total, 3),
        "rate": round(n / total),
        "last_over_first": round(slices[-1]["rate"] / slices[0]["rate"], 3),
        # SQLite's own writes (rows and commits) per object, over the whole run
        "sqlite_cpu_us": share.cpu / n * 1e6,
        "sqlite_wall_us": share.wall / n * 1e6,
        "slices": slices,
        "db_bytes": db.stat().st_size,
        "db_over_data": round(db.stat().st_size / data_bytes, 3),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "load_avg": os.getloadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=400_000)
    parser.add_argument("--batch", type=int, default=DEFAULT_BATCH)
    parser.add_argument("--slice", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        result = run(args.objects, args.batch, args.slice, args.seed, Path(tmp))
    text = json.dumps(result, indent=2)
    if args.out is not None:
        args.out.write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
