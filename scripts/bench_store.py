"""Store-only import curve: the SQLite write path alone, per 100k-object slice.

Synthetic prepared objects (random bytes of the benchmark corpus's size mix, random
digests, one reference each, a legacy digest on most) go straight to
``SQLiteStore.append_many`` in batches of the CLI default, with the import's page
cache. No parsing, validation or worker processes: what is left is the cost of the
ledger's tables and indexes as the ledger grows, which is what the file layout decides.

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
from pathlib import Path
from typing import Any

import ledger
from ledger.store.bulk import DEFAULT_BATCH

try:  # where the import's page cache size lives differs between checkouts
    from ledger.store.sqlite import BULK_CACHE_KIB
except ImportError:  # pragma: no cover - older checkouts
    from ledger.store.bulk import BULK_CACHE_KIB  # type: ignore[attr-defined,no-redef]
from ledger.store.prepared import Prepared
from ledger.store.sqlite import create_store

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


def run(n: int, batch: int, slice_size: int, seed: int, workdir: Path) -> dict[str, Any]:
    db = workdir / "store.db"
    for suffix in ("", "-wal", "-shm"):
        Path(str(db) + suffix).unlink(missing_ok=True)
    store = create_store(db)
    conn = store.connection
    conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    slices: list[dict[str, Any]] = []
    total = 0.0
    data_bytes = 0
    for first in range(0, n, slice_size):
        objs = _objects(min(slice_size, n - first), seed + first)
        data_bytes += sum(len(o.data) for o in objs)
        cpu0, t0 = time.process_time(), time.perf_counter()
        for start in range(0, len(objs), batch):
            store.append_many(objs[start : start + batch])
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
        total += wall
        slices.append(
            {
                "first": first,
                "objects": len(objs),
                "wall_s": round(wall, 3),
                "cpu_s": round(cpu, 3),
                "rate": round(len(objs) / wall),
            }
        )
        print(f"{first + len(objs):>9} objects: {len(objs) / wall:>8,.0f}/s", file=sys.stderr)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    store.close()
    return {
        "package": os.path.dirname(ledger.__file__),
        "objects": n,
        "batch": batch,
        "total_s": round(total, 3),
        "rate": round(n / total),
        "last_over_first": round(slices[-1]["rate"] / slices[0]["rate"], 3),
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
