#!/usr/bin/env python3
"""Web page latency of ``provledger serve``: the home, cohort and result pages.

``web_latency(db, work)`` takes a benchmark ledger (the synthetic corpus of
``bench_corpus``, already imported), adds the reference IDKMesh corpus (its cohorts:
burned, frozen, scaffold, with successors claimed and a listed result), signs a
checkpoint, runs ``provledger index``, starts the installed ``provledger serve`` on a
free loopback port and times HTTP GETs through one kept-alive connection, as a browser
would send them: the home page, every cohort's page in turn, and the pages of sampled
VerificationResults (each runs the provenance checks live on the ledger). Latency is
the wall time from sending a request to reading its whole body; p50 and p99 per page
kind. The target is p99 <= 200 ms per page (docs/PERFORMANCE.md).

Standalone: ``.venv/bin/python scripts/bench_web.py --sizes 10000,100000`` (builds each
ledger from the synthetic corpus first). ``scripts/bench.py`` calls ``web_latency`` for
each size it runs. Without the reference corpus (``../shared/reference/idkmesh``) or
Datasette, it reports why and measures nothing.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PROVLEDGER = str(ROOT / ".venv" / "bin" / "provledger")
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"
REQUESTS = 200  # per page kind


def _cli(*args: str) -> str:
    done = subprocess.run(
        [PROVLEDGER, *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PROVLEDGER_NO_PROGRESS": "1"},
    )
    if done.returncode not in (0, 1):
        raise RuntimeError(f"provledger {args[0]} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class _Server:
    """``provledger serve`` on a free port, and one kept-alive connection to it."""

    def __init__(self, db: Path, browse: Path) -> None:
        self.port = _free_port()
        self.log = browse.with_suffix(".serve.log")
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [PROVLEDGER, "serve", "--db", str(db), "--browse", str(browse),
                 "--port", str(self.port)],
                stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        for _ in range(300):  # bounded readiness poll
            if self.proc.poll() is not None:
                raise RuntimeError(f"serve exited: {self.log.read_text()[-2000:]}")
            try:
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
                if self.get("/-/versions.json")[0] == 200:
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("serve never answered")

    def get(self, path: str) -> tuple[int, float]:
        start = time.perf_counter()
        self.conn.request("GET", path)
        reply = self.conn.getresponse()
        reply.read()
        return reply.status, time.perf_counter() - start

    def close(self) -> None:
        self.conn.close()
        self.proc.terminate()
        self.proc.wait()


def web_latency(db: Path, work: Path, requests: int = REQUESTS, seed: int = 7) -> dict[str, Any]:
    """Page latency p50/p99 (ms) for home, cohort and result pages of ``db``."""
    if not CORPUS.is_dir():
        return {"skipped": f"reference corpus absent: {CORPUS}"}
    try:
        import datasette  # noqa: F401
    except ImportError:
        return {"skipped": "Datasette is not installed (pip install -e '.[web]')"}
    _cli("import", "idkmesh", str(CORPUS), "--db", str(db))
    _cli("checkpoint", "--db", str(db))
    browse = work / "web.browse.db"
    start = time.perf_counter()
    _cli("index", "--db", str(db), "--out", str(browse), "--full")
    index_s = time.perf_counter() - start
    with sqlite3.connect(browse) as conn:
        (last,) = conn.execute("SELECT value FROM ledger_info WHERE key = 'last_seq'").fetchone()
        size = int(last)
        cohorts = [str(r[0]) for r in conn.execute("SELECT cohort_id FROM cohort_audits")]
        results = [str(r[0]) for r in conn.execute("SELECT digest FROM results")]
    rng = random.Random(seed)
    sample = [rng.choice(results) for _ in range(requests)]
    pages = {
        "home": ["/"] * requests,
        "cohort": [
            "/-/cohort/" + urllib.parse.quote(cohorts[i % len(cohorts)], safe="/")
            for i in range(requests)
        ],
        "result": ["/-/object/" + d for d in sample],
    }
    from bench import _pcts  # the benchmark's one percentile rule

    server = _Server(db, browse)
    out: dict[str, Any] = {
        "entries": size + 1,
        "cohorts": len(cohorts),
        "results": len(results),
        "index_full_s": index_s,
    }
    try:
        for kind, paths in pages.items():
            server.get(paths[0])  # first request of a kind: one-off imports and caches
            times = []
            for path in paths:
                status, took = server.get(path)
                if status != 200:
                    raise RuntimeError(f"GET {path} answered {status}")
                times.append(took)
            out[kind] = {"requests": len(times), **_pcts(times)}
    finally:
        server.close()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000", help="comma-separated object counts")
    parser.add_argument("--requests", type=int, default=REQUESTS, help="per page kind")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=None, help="write the JSON results here")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from bench_corpus import write_corpus

    results = []
    with tempfile.TemporaryDirectory(prefix="provledger-bench-web-") as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            work = Path(tmp) / f"n{n}"
            work.mkdir()
            db = work / "ledger.db"
            _cli("init", "--db", str(db))
            write_corpus(work / "corpus.jsonl", n, args.seed, None)
            _cli("import", "jsonl", str(work / "corpus.jsonl"), "--db", str(db))
            run = {"objects": n, **web_latency(db, work, args.requests, args.seed)}
            results.append(run)
            print(json.dumps(run), flush=True)
    if args.out is not None:
        args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
