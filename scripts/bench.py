#!/usr/bin/env python3
"""provledger benchmark: import, verify, proofs, size, start-up and web page latency on a
synthetic corpus.

The corpus is generated from this file's own templates (seeded, reproducible), shaped
like real IDKMesh evidence: per task one WorkUnit (~3 KB), one EvaluatorPlan (~1.3 KB)
and three attempts, each a ResultManifest (~2 KB) and a VerificationResult (3-13 KB),
plus one attestation (~0.5 KB) over the WorkUnit, signed with the ledger's authority
key (so signatures, unlike every other byte, differ between runs). References chain
for real: plans bind their WorkUnit's digest, results their manifest's and WorkUnit's.

Each size runs in a fresh directory: the same JSONL is imported by the provledger CLI
(a subprocess of .venv/bin/provledger), by ``sqlite-utils insert --nl`` into a plain
table, and (as canonical blobs) by ``git fast-import`` into a bare repository.

Usage: .venv/bin/python scripts/bench.py [--sizes 10000,100000] [--out bench.json]
       [--quick] [--seed 7] [--workdir DIR] [--keep] [--no-peers] [--no-store-floor]
       [--no-web] [--no-reads] [--corpus-cache DIR]
       [--postgres ADMIN_URL [--writer-counts 1,4,8]] [--reads-on LEDGER]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VENV_BIN = ROOT / ".venv" / "bin"
PROVLEDGER = str(VENV_BIN / "provledger")
SQLITE_UTILS = str(VENV_BIN / "sqlite-utils")
PROVENANCE_SAMPLES = 300  # VerificationResults whose provenance is timed
FLOOR_SAMPLE = 20_000  # objects whose required checks are timed alone (bench_floor)
# The synthetic corpus (templates, seeded) lives in bench_corpus.py beside this file.
from bench_corpus import write_corpus  # noqa: E402
from bench_start import FLOOR_CODE, child_env  # noqa: E402
from bench_web import REQUESTS, web_latency  # noqa: E402

# -- measuring ---------------------------------------------------------------------------


class TreeMemory:
    """Samples the summed PSS of a process and its descendants (peak, in bytes)."""

    def __init__(self, pid: int, interval: float = 0.05) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_pss = 0
        self.peak_rss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> TreeMemory:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def cpu_seconds(self) -> float:
        """User + system CPU so far of the live tree and the children it has reaped."""
        ticks = 0
        for pid in self._tree():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            # Fields after the command name (which may hold spaces): utime is the 14th
            # field of the line, stime, cutime and cstime follow.
            rest = stat[stat.rindex(")") + 2 :].split()
            ticks += sum(int(v) for v in rest[11:15])
        return ticks / os.sysconf("SC_CLK_TCK")

    def _tree(self) -> list[int]:
        pids, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            try:
                for task in Path(f"/proc/{pid}/task").iterdir():
                    todo.extend(int(c) for c in (task / "children").read_text().split())
            except OSError:
                pass
        return pids

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            pss = rss = 0
            for pid in self._tree():
                try:
                    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                        if line.startswith("Pss:"):
                            pss += int(line.split()[1]) * 1024
                        elif line.startswith("Rss:"):
                            rss += int(line.split()[1]) * 1024
                except OSError:
                    pass
            self.peak_pss = max(self.peak_pss, pss)
            self.peak_rss = max(self.peak_rss, rss)


def run(
    cmd: list[str],
    *,
    stdin: Any = None,
    cwd: Path | None = None,
    check: bool = True,
    watch: Callable[[TreeMemory], None] | None = None,
) -> dict[str, Any]:
    """Run a command; wall time, CPU, exit code, peak RSS (largest process) and tree PSS.

    ``watch`` is given the process tree's sampler once the command has started.
    """
    timer = ["/usr/bin/time", "-f", "%M"] if Path("/usr/bin/time").exists() else []
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        proc = subprocess.Popen(
            timer + cmd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=cwd,
            env={**os.environ, "PROVLEDGER_NO_PROGRESS": "1"},
        )
        with TreeMemory(proc.pid) as mem:
            if watch is not None:
                watch(mem)
            out, _ = proc.communicate()
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        err.seek(0)
        err_text = err.read().decode("utf-8", "replace")
    max_rss = None
    if timer:
        lines = err_text.strip().splitlines()
        if lines and lines[-1].isdigit():
            max_rss = int(lines[-1]) * 1024
            err_text = "\n".join(lines[:-1])
    if check and proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} exited {proc.returncode}: {err_text[-2000:]}")
    return {
        "wall_s": wall,
        "cpu_s": cpu,
        "exit": proc.returncode,
        "stdout": out,
        "stderr": err_text,
        "max_rss_bytes": max_rss,
        "tree_pss_bytes": mem.peak_pss,
    }


class LedgerGrowth:
    """Samples a ledger's size while an import runs: when each ``slice`` boundary passed.

    Reads ``max(seq)`` through a read-only connection (a WAL reader never blocks the
    writer) every ``interval`` seconds, so one end-to-end import gives the rate per
    slice, i.e. whether the cost per object grows with the ledger.
    """

    def __init__(self, db: Path, total: int, slice_size: int, interval: float = 0.2) -> None:
        self.db, self.total, self.slice_size, self.interval = db, total, slice_size, interval
        # (entries, seconds since start, CPU seconds of the import's process tree or None)
        self.marks: list[tuple[int, float, float | None]] = []
        self.tree: TreeMemory | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> LedgerGrowth:
        self._start = time.perf_counter()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def attach(self, tree: TreeMemory) -> None:
        """Sample this process tree's CPU at each slice boundary too."""
        self.tree = tree

    def _cpu(self) -> float | None:
        return None if self.tree is None else self.tree.cpu_seconds()

    def _run(self) -> None:
        import sqlite3

        conn = sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=5)
        base: int | None = None
        next_mark = self.slice_size
        while not self._stop.wait(self.interval):
            try:
                (top,) = conn.execute("SELECT coalesce(max(seq) + 1, 0) FROM entries").fetchone()
            except sqlite3.Error:
                continue
            if base is None:
                base = top if top < self.slice_size else 0
            done = top - base
            if done >= next_mark:
                cpu = self._cpu()
            while done >= next_mark and next_mark <= self.total:
                self.marks.append((next_mark, time.perf_counter() - self._start, cpu))
                next_mark += self.slice_size
        conn.close()

    def slices(self, wall: float, cpu: float | None = None) -> list[dict[str, Any]]:
        """Rate per slice, and CPU per object when sampled (the figure other jobs on the
        machine disturb least); the last slice ends with the import, at ``wall``/``cpu``."""
        out: list[dict[str, Any]] = []
        prev_n, prev_t = 0, 0.0
        prev_c: float | None = 0.0
        marks = [m for m in self.marks if m[0] < self.total] + [(self.total, wall, cpu)]
        for n, t, c in marks:
            if t > prev_t and n > prev_n:
                row: dict[str, Any] = {"upto": n, "objects_per_s": (n - prev_n) / (t - prev_t)}
                if c is not None and prev_c is not None:
                    row["cpu_us_per_object"] = (c - prev_c) / (n - prev_n) * 1e6
                out.append(row)
            prev_n, prev_t, prev_c = n, t, c
        return out


def _cpu_of(cmd: list[str], repeats: int, env: dict[str, str] | None = None) -> dict[str, float]:
    """Median and min CPU (user + system, children) of running ``cmd``, in ms."""
    samples = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False, env=env
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append((after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000)
    return {"median_ms": statistics.median(samples), "min_ms": min(samples)}


def start_up(db: Path | None, digest: str | None, repeats: int) -> dict[str, Any]:
    """CLI start-up CPU against the floor ``python -c 'import typer, rich.console'``.

    Every command is run ``repeats`` times, interleaved with the floor, so a change in
    machine load moves both; the ratio of medians is the figure. As in
    ``scripts/bench_start.py`` (its environment), the commands run from their bytecode
    caches, as an installed CLI does: a first round, which writes them, is discarded.
    """
    env = child_env()
    python = str(VENV_BIN / "python")
    cmds: dict[str, list[str]] = {
        "floor": [python, "-c", FLOOR_CODE],
        "--help": [PROVLEDGER, "--help"],
        "verify --help": [PROVLEDGER, "verify", "--help"],
        "import jsonl --help": [PROVLEDGER, "import", "jsonl", "--help"],
    }
    if db is not None and digest is not None:
        cmds["show"] = [PROVLEDGER, "show", digest, "--db", str(db), "--json"]
        cmds["proof inclusion"] = [PROVLEDGER, "proof", "inclusion", digest, "--db", str(db)]
        cmds["stats"] = [PROVLEDGER, "stats", "--db", str(db), "--json"]
    for cmd in cmds.values():
        _cpu_of(cmd, 1, env)  # writes the bytecode caches; not counted
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(repeats):
        for name, cmd in cmds.items():
            samples[name].append(_cpu_of(cmd, 1, env)["median_ms"])
    floor = statistics.median(samples["floor"])
    return {
        name: {
            "cpu_median_ms": statistics.median(values),
            "cpu_min_ms": min(values),
            "over_floor": statistics.median(values) / floor if floor else None,
        }
        for name, values in samples.items()
    }


def _pcts(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)

    def at(q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))] * 1000

    return {"p50_ms": at(0.50), "p99_ms": at(0.99), "max_ms": samples[-1] * 1000}


def _proofs(db: Path, queries: int, seed: int) -> dict[str, Any]:
    from ledger.log.checkpoints import prove_consistency, prove_inclusion
    from ledger.store.sqlite import open_store

    rng = random.Random(seed)
    out: dict[str, Any] = {}
    with open_store(db, readonly=True) as store:
        size = store.size()
        seqs = [rng.randrange(size) for _ in range(queries)]
        digests = [store.get_by_seq(s).digest for s in seqs]  # type: ignore[union-attr]
        times = []
        for digest in digests:
            t = time.perf_counter()
            prove_inclusion(store, digest)
            times.append(time.perf_counter() - t)
        out["inclusion"] = _pcts(times)
        times = []
        for _ in range(queries):
            old = rng.randint(1, size)
            t = time.perf_counter()
            prove_consistency(store, old)
            times.append(time.perf_counter() - t)
        out["consistency"] = _pcts(times)
        out["provenance"] = _provenance(store, digests, rng)
        out["sample_digest"] = digests[0]
    return out


def _provenance(store: Any, digests: list[str], rng: random.Random) -> dict[str, Any]:
    """Provenance-chain latency if ``cohorts`` offers a provenance function, else n/a."""
    try:
        import importlib

        module = importlib.import_module("cohorts.provenance")
    except ImportError:
        return {"status": "n/a: cohorts.provenance does not exist"}
    names = ("provenance_chain", "provenance", "chain")
    fn = next((getattr(module, n) for n in names if hasattr(module, n)), None)
    if fn is None:
        return {"status": "n/a: no provenance function found in cohorts.provenance"}
    # At least PROVENANCE_SAMPLES results, whatever --quick says: with ~30 samples the
    # "p99" was the largest sample, i.e. the first call, which pays the process's one-off
    # imports and schema loading (that was the 61-88 ms "tail" of the 1M follow-up runs).
    size = store.size()
    vr = [d for d in digests if (o := store.get(d)) is not None and o.kind == "verification-result"]
    for _ in range(50 * PROVENANCE_SAMPLES):
        if len(vr) >= PROVENANCE_SAMPLES:
            break
        obj = store.get_by_seq(rng.randrange(size))
        if obj is not None and obj.kind == "verification-result":
            vr.append(obj.digest)
    if not vr:
        return {"status": "n/a: no verification result sampled"}
    times = []
    cpu = []  # CPU time of each call: what a wall-clock tail on a shared machine is not
    try:
        t = time.perf_counter()
        fn(store, vr[0])  # the first call, reported apart: one-off costs of the process
        first = time.perf_counter() - t
        for digest in vr:
            t = time.perf_counter()
            c = time.process_time()
            fn(store, digest)
            cpu.append(time.process_time() - c)
            times.append(time.perf_counter() - t)
    except Exception as exc:  # the signature is not ours to know: report, do not crash
        return {"status": f"n/a: {fn.__name__}(store, digest) raised {type(exc).__name__}: {exc}"}
    return {
        "status": "ok",
        "function": f"cohorts.provenance.{fn.__name__}",
        "samples": len(times),
        "first_call_ms": first * 1000,
        **_pcts(times),
        **{f"cpu_{name}": value for name, value in _pcts(cpu).items()},
    }


def _first_entry_line(db: Path) -> float:
    """Seconds from starting ``provledger log`` until its first entry line (the line
    after the header) reaches a reader, which then closes the pipe, as ``head`` does.
    The command must end quietly with exit 0."""
    env = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [PROVLEDGER, "log", "--db", str(db)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()  # the header
    line = proc.stdout.readline()
    took = time.perf_counter() - start
    proc.stdout.close()
    err = proc.stderr.read()
    code = proc.wait()
    if not line or code != 0 or err:
        raise RuntimeError(f"log | head: exit {code}, first line {line[:80]!r}, stderr {err!r}")
    return took


def _drain(cmd: list[str]) -> dict[str, Any]:
    """Run ``cmd`` with stdout a pipe read in full (and dropped): wall, CPU, bytes."""
    env = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    size = 0
    while chunk := proc.stdout.read(1 << 20):
        size += len(chunk)
    code = proc.wait()
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code != 0:
        raise RuntimeError(f"{cmd[:3]} exited {code}")
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return {"wall_s": wall, "cpu_s": cpu, "bytes": size}


def read_commands(db: Path, n: int, work: Path, repeats: int = 5) -> dict[str, Any]:
    """``log | head`` first-line latency, ``log --json`` piped in full, ``index`` from
    scratch and again with nothing new, on the ledger ``db`` of ``n`` entries."""
    out: dict[str, Any] = {}
    _first_entry_line(db)  # bytecode caches and the page cache, as for a user's second run
    firsts = [_first_entry_line(db) for _ in range(repeats)]
    out["log_head"] = {
        "first_entry_s_median": statistics.median(firsts),
        "first_entry_s_min": min(firsts),
        "first_entry_s_max": max(firsts),
        "runs": repeats,
    }
    full = _drain([PROVLEDGER, "log", "--db", str(db), "--json"])
    out["log_json"] = {
        **full,
        "entries_per_s": n / full["wall_s"],
        "cpu_us_per_entry": full["cpu_s"] / n * 1e6,
    }
    browse = work / "bench.browse.db"
    index = run([PROVLEDGER, "index", "--db", str(db), "--out", str(browse), "--full", "--json"])
    again = run([PROVLEDGER, "index", "--db", str(db), "--out", str(browse), "--json"])
    out["index"] = {
        "wall_s": index["wall_s"],
        "entries_per_s": n / index["wall_s"],
        "cpu_us_per_entry": index["cpu_s"] / n * 1e6,
        "max_rss_mb": (index["max_rss_bytes"] or 0) / 2**20,
        "browse_bytes": browse.stat().st_size,
        "nothing_new_wall_s": again["wall_s"],
    }
    browse.unlink()
    # What the steps ``index`` cannot skip cost alone (scripts/bench_floor.py), and the
    # rate they allow: the index row's ceiling.
    from bench_floor import index_floor

    floor = index_floor(db, min(n, FLOOR_SAMPLE))
    out["index"].update(
        floor_us=floor["floor_us"],
        ceiling_per_s=floor["ceiling_per_s"],
        bound=floor["bound"],
        rate_over_ceiling=out["index"]["entries_per_s"] / floor["ceiling_per_s"],
    )
    out["index_floor"] = floor
    return out


def _git_stream(db: Path, path: Path) -> None:
    """A git fast-import stream holding every stored canonical object as a blob."""
    import sqlite3

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    with path.open("wb") as out:
        for (data,) in conn.execute("SELECT data FROM objects ORDER BY seq"):
            out.write(b"blob\ndata %d\n" % len(data))
            out.write(data)
            out.write(b"\n")
    conn.close()


def _help_cold_start(repeats: int) -> dict[str, float]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([PROVLEDGER, "--help"], stdout=subprocess.DEVNULL, check=True)
        times.append(time.perf_counter() - t)
    return {"median_ms": statistics.median(times) * 1000, "min_ms": min(times) * 1000}


def _peers(n: int, jsonl: Path, db: Path, work: Path, ours_s: float) -> dict[str, Any]:
    """The same JSONL into sqlite-utils, the same canonical blobs into git fast-import."""
    peers: dict[str, Any] = {}
    if Path(SQLITE_UTILS).exists():
        su = run([SQLITE_UTILS, "insert", str(work / "peer.db"), "docs", str(jsonl), "--nl"])
        peers["sqlite_utils_insert"] = {
            "wall_s": su["wall_s"],
            "objects_per_s": n / su["wall_s"],
            "cpu_us_per_object": su["cpu_s"] / n * 1e6,
        }
        peers["provledger_over_sqlite_utils"] = ours_s / su["wall_s"]
    if shutil.which("git"):
        stream = work / "git.stream"
        _git_stream(db, stream)
        repo = work / "peer.git"
        subprocess.run(["git", "init", "--bare", "--quiet", str(repo)], check=True)
        with stream.open("rb") as fh:
            git = run(["git", "--git-dir", str(repo), "fast-import", "--quiet"], stdin=fh)
        stream.unlink()
        peers["git_fast_import"] = {
            "wall_s": git["wall_s"],
            "objects_per_s": n / git["wall_s"],
            "cpu_us_per_object": git["cpu_s"] / n * 1e6,
        }
        peers["provledger_over_git"] = ours_s / git["wall_s"]
    return peers


def _store_only(n: int, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """scripts/bench_store.py's store-only run over ``n`` objects, the import's batch."""
    from bench_store import run as store_run

    from ledger.store.bulk import DEFAULT_BATCH

    scratch = work / "store-only"
    scratch.mkdir()
    try:
        batch = args.batch or DEFAULT_BATCH
        return store_run(n, batch, min(args.slice, n), args.seed, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# The goals of the performance issue, measured in the same run so that the machine's
# speed cancels out: (key, what is measured, comparison, limit).
GOALS = (
    ("import_time_over_sqlite_utils", "provledger's import time / sqlite-utils'", "<=", 0.67),
    ("import_time_over_git", "provledger's import time / git fast-import's", "<=", 0.83),
    ("import_last_slice_over_first", "import rate, last slice / first", ">=", 0.9),
    ("verify_rate_over_ceiling", "verify rate / its floor's ceiling", ">=", 0.8),
)


def goals(res: dict[str, Any]) -> dict[str, Any]:
    """Each goal's measured value (None when not measured, e.g. ``--no-peers``) and
    whether it is met; plus the import rate over its floor's ceiling (no goal)."""
    peers = res.get("peers", {})
    floor = res.get("floor", {})
    measured: dict[str, float | None] = {
        "import_time_over_sqlite_utils": peers.get("provledger_over_sqlite_utils"),
        "import_time_over_git": peers.get("provledger_over_git"),
        "import_last_slice_over_first": res["import"].get("last_slice_over_first"),
        "verify_rate_over_ceiling": (
            res["verify"]["entries_per_s"] / floor["verify"]["ceiling_per_s"]
            if "verify" in floor
            else None
        ),
    }
    out: dict[str, Any] = {}
    for key, what, op, limit in GOALS:
        value = measured[key]
        met = None if value is None else (value <= limit if op == "<=" else value >= limit)
        out[key] = {"what": what, "measured": value, "goal": f"{op} {limit}", "met": met}
    if "import" in floor:
        out["import_rate_over_ceiling"] = {
            "what": "import rate / its floor's ceiling",
            "measured": res["import"]["objects_per_s"] / floor["import"]["ceiling_per_s"],
            "goal": None,
            "met": None,
        }
    if "index" in floor:
        out["index_rate_over_ceiling"] = {
            "what": "index rate / its floor's ceiling",
            "measured": res["reads"]["index"]["rate_over_ceiling"],
            "goal": None,
            "met": None,
        }
    return out


def _new_corpus(work: Path, n: int, args: argparse.Namespace) -> tuple[dict[str, int], float]:
    """``provledger init`` in ``work`` and the corpus signed with its authority key."""
    db = work / "ledger.db"
    run([PROVLEDGER, "init", "--db", str(db), "--json"])
    signer = None
    if not args.no_attestations:
        from ledger.trust.keys import Ed25519Signer

        signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    t = time.perf_counter()
    counts = write_corpus(work / "corpus.jsonl", n, args.seed, signer)
    return counts, time.perf_counter() - t


def _cached_corpus(
    cache: Path, n: int, args: argparse.Namespace, work: Path
) -> tuple[dict[str, int], float]:
    """``--corpus-cache``: a fresh ledger and its corpus made once per size, seed and
    attestation setting, then copied (the empty ledger and its keys) and linked (the
    JSONL, only read) into each run's directory. Runs then differ only in what they
    measure; the corpus is the same seeded documents, signed by the cached ledger's key.
    """
    entry = cache / f"n{n}-seed{args.seed}-{'plain' if args.no_attestations else 'signed'}"
    made = entry / "counts.json"
    gen_s = 0.0
    if not made.exists():
        if entry.exists():
            shutil.rmtree(entry)
        entry.mkdir(parents=True)
        counts, gen_s = _new_corpus(entry, n, args)
        made.write_text(json.dumps(counts))
    for item in entry.iterdir():
        if item.name == "corpus.jsonl":
            try:
                os.link(item, work / item.name)
            except OSError:  # another file system
                shutil.copy2(item, work / item.name)
        elif item.name.startswith("ledger.db"):
            shutil.copy2(item, work / item.name)
    return json.loads(made.read_text()), gen_s


def bench_size(n: int, args: argparse.Namespace, base: Path) -> dict[str, Any]:
    work = base / f"n{n}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    db = work / "ledger.db"
    jsonl = work / "corpus.jsonl"
    if args.corpus_cache is not None:
        counts, gen_s = _cached_corpus(args.corpus_cache, n, args, work)
    else:
        counts, gen_s = _new_corpus(work, n, args)
    res: dict[str, Any] = {
        "objects": n,
        "by_kind": counts,
        "jsonl_bytes": jsonl.stat().st_size,
        "generate_s": gen_s,
        "corpus_cached": args.corpus_cache is not None,
    }

    imp_cmd = [PROVLEDGER, "import", "jsonl", str(jsonl), "--db", str(db), "--json"]
    if args.batch is not None:  # else the CLI's default, what users get
        imp_cmd += ["--batch", str(args.batch)]
    if args.workers:
        imp_cmd += ["--workers", str(args.workers)]
    with LedgerGrowth(db, n, args.slice) as growth:
        imp = run(imp_cmd, watch=growth.attach)
    summary = json.loads(imp["stdout"])
    canonical = summary["canonical_bytes"]
    res["import"] = {
        "wall_s": imp["wall_s"],
        "objects_per_s": n / imp["wall_s"],
        "canonical_mb_per_s": canonical / imp["wall_s"] / 1e6,
        "new": summary["new"],
        "rejected": summary["rejected"],
        "max_rss_mb": (imp["max_rss_bytes"] or 0) / 2**20,
        "tree_pss_mb": imp["tree_pss_bytes"] / 2**20,
        "cpu_us_per_object": imp["cpu_s"] / n * 1e6,
        "slices": growth.slices(imp["wall_s"], imp["cpu_s"]),
    }
    slices = res["import"]["slices"]
    if len(slices) > 1:
        res["import"]["last_slice_over_first"] = (
            slices[-1]["objects_per_s"] / slices[0]["objects_per_s"]
        )
        cpus = [s.get("cpu_us_per_object") for s in slices]
        if cpus[0] and cpus[-1]:
            # The same criterion in CPU: first slice's cost per object over the last's.
            res["import"]["first_slice_cpu_over_last"] = cpus[0] / cpus[-1]
    rerun = run(imp_cmd)
    res["import_rerun"] = {
        "wall_s": rerun["wall_s"],
        "objects_per_s": n / rerun["wall_s"],
        "present": json.loads(rerun["stdout"])["present"],
    }
    db_bytes = sum(
        (work / name).stat().st_size
        for name in ("ledger.db", "ledger.db-wal")
        if (work / name).exists()
    )
    res["size"] = {
        "canonical_bytes": canonical,
        "db_bytes": db_bytes,
        "db_over_canonical": db_bytes / canonical if canonical else None,
        "db_bytes_per_object": db_bytes / n,
        "canonical_bytes_per_object": canonical / n,
    }

    if not args.no_peers:
        res["peers"] = _peers(n, jsonl, db, work, imp["wall_s"])

    head = run([PROVLEDGER, "checkpoint", "--db", str(db)])
    note = work / "head.checkpoint"
    note.write_bytes(head["stdout"])
    # The real audit, through the installed CLI: every check, shipped defaults.
    ver = run([PROVLEDGER, "verify", "--db", str(db), "--json"], check=False)
    report = json.loads(ver["stdout"]) if ver["stdout"] else {}
    res["verify"] = {
        "wall_s": ver["wall_s"],
        "entries_per_s": n / ver["wall_s"],
        "cpu_us_per_entry": ver["cpu_s"] / n * 1e6,
        "exit": ver["exit"],
        "findings": len(report.get("findings", [])),
        "max_rss_mb": (ver["max_rss_bytes"] or 0) / 2**20,
        "tree_pss_mb": ver["tree_pss_bytes"] / 2**20,
    }

    # What the required checks alone cost per object (scripts/bench_floor.py), next to
    # the commands' own CPU above: the gap is their bookkeeping and plumbing. The
    # import's floor adds SQLite's own writes of the rows, measured store-only on a
    # ledger grown to the same size with the same batch (scripts/bench_store.py).
    from bench_floor import import_floor, verify_floor

    store = None
    if not args.no_store_floor:
        store = _store_only(n, args, work)
        res["store_only"] = store
    sample = min(n, FLOOR_SAMPLE)
    res["floor"] = {
        "verify": verify_floor(db, sample),
        "import": import_floor(jsonl, db, sample, store),
    }

    # Incremental: from the checkpoint just verified (nothing appended since). Its cost
    # should not grow with the ledger.
    since = run(
        [PROVLEDGER, "verify", "--db", str(db), "--json", "--since-checkpoint", str(note)],
        check=False,
    )
    since_report = json.loads(since["stdout"]) if since["stdout"] else {}
    res["verify_since_head"] = {
        "wall_s": since["wall_s"],
        "exit": since["exit"],
        "entries_checked": since_report.get("entries", 0)
        - (since_report.get("since_checkpoint") or {}).get("size", 0),
        "findings": len(since_report.get("findings", [])),
    }
    if not args.no_reads:
        res["reads"] = read_commands(db, n, work, 3 if args.quick else 5)
        res["floor"]["index"] = res["reads"].pop("index_floor")
    res["goals"] = goals(res)
    proofs = _proofs(db, args.queries, args.seed)
    digest = proofs.pop("sample_digest")
    inc = run([PROVLEDGER, "proof", "inclusion", digest, "--db", str(db), "--json"])
    con = run([PROVLEDGER, "proof", "consistency", str(max(1, n // 2)), "--db", str(db), "--json"])
    proofs["cli_inclusion_wall_ms"] = inc["wall_s"] * 1000
    proofs["cli_consistency_wall_ms"] = con["wall_s"] * 1000
    proofs["queries"] = args.queries
    res["proofs"] = proofs
    res["start_up"] = start_up(db, digest, 3 if args.quick else 11)
    # Last: it adds the reference corpus's cohorts to this ledger, then serves it.
    try:
        if args.no_web:
            res["web"] = {"skipped": "--no-web"}
        else:
            res["web"] = web_latency(db, work, 50 if args.quick else REQUESTS, args.seed)
    except (RuntimeError, OSError) as exc:  # a failed server must not lose the run's rows
        res["web"] = {"error": str(exc)[-2000:]}
    if not args.keep:
        shutil.rmtree(work)
    return res


def machine() -> dict[str, Any]:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    sqlite_version = __import__("sqlite3").sqlite_version
    git = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "cpu": cpu,
        "cpus": os.cpu_count(),
        "memory_gb": round(mem / 2**30, 1),
        "python": platform.python_version(),
        "sqlite": sqlite_version,
        "git": git,
        "platform": platform.platform(),
        "load_avg_at_start": os.getloadavg(),
    }


def _rate(run: dict[str, Any]) -> str:
    return f"{run['objects_per_s']:,.0f}"


def _ratio(r: dict[str, Any], peer: str) -> str:
    return f"{r['peers'][f'provledger_over_{peer}']:.2f}x"


def _p50_99(stats: dict[str, Any]) -> str:
    if stats.get("status", "ok") != "ok":
        return "n/a"
    return f"{stats['p50_ms']:.3f} / {stats['p99_ms']:.3f}"


def table(result: dict[str, Any]) -> str:
    rows = [("metric", *[f"n={r['objects']}" for r in result["runs"]])]

    def add(name: str, fn: Any) -> None:
        cells = []
        for r in result["runs"]:
            try:
                cells.append(fn(r))
            except (KeyError, TypeError):
                cells.append("-")
        rows.append((name, *cells))

    add("import objects/s", lambda r: f"{r['import']['objects_per_s']:,.0f}")
    add(
        "import objects/s per slice",
        lambda r: " ".join(f"{s['objects_per_s'] / 1000:.1f}k" for s in r["import"]["slices"]),
    )
    add("import last slice / first", lambda r: f"{r['import']['last_slice_over_first']:.2f}")
    add("import CPU us/object (all processes)", lambda r: f"{r['import']['cpu_us_per_object']:.0f}")
    add(
        "import CPU us/object per slice",
        lambda r: " ".join(f"{s['cpu_us_per_object']:.0f}" for s in r["import"]["slices"]),
    )
    add(
        "import first slice CPU / last",
        lambda r: f"{r['import']['first_slice_cpu_over_last']:.2f}",
    )
    add("import canonical MB/s", lambda r: f"{r['import']['canonical_mb_per_s']:.1f}")
    add("import peak RSS MB (largest proc)", lambda r: f"{r['import']['max_rss_mb']:.0f}")
    add("import peak PSS MB (process tree)", lambda r: f"{r['import']['tree_pss_mb']:.0f}")
    add("re-import (all present) objects/s", lambda r: f"{r['import_rerun']['objects_per_s']:,.0f}")
    add("sqlite-utils insert objects/s", lambda r: _rate(r["peers"]["sqlite_utils_insert"]))
    add("git fast-import objects/s", lambda r: _rate(r["peers"]["git_fast_import"]))
    add("provledger / sqlite-utils (time)", lambda r: _ratio(r, "sqlite_utils"))
    add("provledger / git (time)", lambda r: _ratio(r, "git"))
    add("verify entries/s", lambda r: f"{r['verify']['entries_per_s']:,.0f}")
    add("verify CPU us/entry (all processes)", lambda r: f"{r['verify']['cpu_us_per_entry']:.0f}")
    add("verify findings", lambda r: str(r["verify"]["findings"]))
    for job, unit, what in (
        ("verify", "entry", "checks alone"),
        ("import", "object", "checks + serial store"),
    ):
        add(
            f"{job} floor CPU us/{unit} ({what})",
            lambda r, job=job: (
                f"{r['floor'][job]['floor_us']:.0f}"
                f" (ceiling {r['floor'][job]['ceiling_per_s']:,.0f}/s)"
            ),
        )
    add(
        "verify floor incl. stored side values (apart)",
        lambda r: (
            f"{r['floor']['verify']['floor_with_stored_side_us']:.0f}"
            f" (ceiling {r['floor']['verify']['ceiling_with_stored_side_per_s']:,.0f}/s)"
        ),
    )
    add(
        "import floor: checks + store CPU us/object",
        lambda r: (
            f"{r['floor']['import']['checks_us']:.0f} + {r['floor']['import']['store_cpu_us']:.0f}"
        ),
    )
    add(
        "store-only SQLite wall us/object (serial)",
        lambda r: (
            f"{r['floor']['import']['store_wall_us']:.0f}"
            f" (at most {r['floor']['import']['serial_ceiling_per_s']:,.0f}/s)"
        ),
    )
    add("store-only rate last slice / first", lambda r: f"{r['store_only']['last_over_first']:.2f}")
    add(
        "import ceiling (bound) vs measured",
        lambda r: (
            f"{r['floor']['import']['ceiling_per_s']:,.0f} ({r['floor']['import']['bound']})"
            f" vs {r['import']['objects_per_s']:,.0f}"
        ),
    )
    add(
        "verify ceiling vs measured",
        lambda r: (
            f"{r['floor']['verify']['ceiling_per_s']:,.0f} vs {r['verify']['entries_per_s']:,.0f}"
        ),
    )
    for key, *_ in GOALS:
        add(
            f"goal {key}",
            lambda r, key=key: (
                f"{r['goals'][key]['measured']:.2f} {r['goals'][key]['goal']}"
                f" {'met' if r['goals'][key]['met'] else 'MISSED'}"
            ),
        )
    add(
        "import rate / its ceiling",
        lambda r: f"{r['goals']['import_rate_over_ceiling']['measured']:.0%}",
    )
    add(
        "verify --since-checkpoint (head) s",
        lambda r: (
            f"{r['verify_since_head']['wall_s']:.2f}"
            f" ({r['verify_since_head']['entries_checked']} entries)"
        ),
    )
    add("verify peak RSS MB (largest proc)", lambda r: f"{r['verify']['max_rss_mb']:.0f}")
    add("verify peak PSS MB (process tree)", lambda r: f"{r['verify']['tree_pss_mb']:.0f}")
    head = "log | head first entry s"
    add(f"{head} (median)", lambda r: f"{r['reads']['log_head']['first_entry_s_median']:.2f}")
    add(f"{head} (max)", lambda r: f"{r['reads']['log_head']['first_entry_s_max']:.2f}")
    add("log --json piped entries/s", lambda r: f"{r['reads']['log_json']['entries_per_s']:,.0f}")
    add("log --json CPU us/entry", lambda r: f"{r['reads']['log_json']['cpu_us_per_entry']:.1f}")
    add("index (full) entries/s", lambda r: f"{r['reads']['index']['entries_per_s']:,.0f}")
    add("index (full) CPU us/entry", lambda r: f"{r['reads']['index']['cpu_us_per_entry']:.0f}")
    add(
        "index floor CPU us/entry (re-derivation + writes)",
        lambda r: (
            f"{r['floor']['index']['floor_us']:.0f}"
            f" (writes {r['floor']['index']['write_us']:.0f}, serial)"
        ),
    )
    add(
        "index ceiling (bound) vs measured",
        lambda r: (
            f"{r['floor']['index']['ceiling_per_s']:,.0f} ({r['floor']['index']['bound']})"
            f" vs {r['reads']['index']['entries_per_s']:,.0f}"
        ),
    )
    add("index rate / its ceiling", lambda r: f"{r['reads']['index']['rate_over_ceiling']:.0%}")
    add("index, nothing new s", lambda r: f"{r['reads']['index']['nothing_new_wall_s']:.2f}")
    add("inclusion proof p50/p99 ms", lambda r: _p50_99(r["proofs"]["inclusion"]))
    add("consistency proof p50/p99 ms", lambda r: _p50_99(r["proofs"]["consistency"]))
    add("provenance p50/p99 ms", lambda r: _p50_99(r["proofs"]["provenance"]))
    add(
        "provenance CPU p50/p99 ms",
        lambda r: (
            f"{r['proofs']['provenance']['cpu_p50_ms']:.3g}"
            f" / {r['proofs']['provenance']['cpu_p99_ms']:.3g}"
        ),
    )
    add(
        "provenance first call ms (one-off)",
        lambda r: f"{r['proofs']['provenance']['first_call_ms']:.0f}",
    )
    add("CLI proof inclusion wall ms", lambda r: f"{r['proofs']['cli_inclusion_wall_ms']:.0f}")
    add("CLI proof consistency wall ms", lambda r: f"{r['proofs']['cli_consistency_wall_ms']:.0f}")
    for name in ("--help", "verify --help", "show", "proof inclusion", "stats"):
        add(
            f"CPU {name} / floor",
            lambda r, name=name: (
                f"{r['start_up'][name]['over_floor']:.2f}x"
                f" ({r['start_up'][name]['cpu_median_ms']:.0f} ms)"
            ),
        )
    add(
        "CPU floor (import typer, rich.console)",
        lambda r: f"{r['start_up']['floor']['cpu_median_ms']:.0f} ms",
    )
    for page in ("home", "cohort", "result"):
        add(f"web {page} page p50/p99 ms", lambda r, page=page: _p50_99(r["web"][page]))
    add("db bytes / canonical bytes", lambda r: f"{r['size']['db_over_canonical']:.2f}")
    add("db bytes / object", lambda r: f"{r['size']['db_bytes_per_object']:,.0f}")
    add("canonical bytes / object", lambda r: f"{r['size']['canonical_bytes_per_object']:,.0f}")
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            str(c).ljust(w) if i == 0 else str(c).rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    help_ms = result["help_cold_start"]
    lines.append(
        f"provledger --help cold start: median {help_ms['median_ms']:.0f} ms,"
        f" min {help_ms['min_ms']:.0f} ms"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10000,100000", help="comma-separated object counts")
    parser.add_argument("--out", type=Path, default=None, help="write the JSON results here")
    parser.add_argument("--quick", action="store_true", help="100 proof queries, 3 --help runs")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--queries", type=int, default=None, help="proof queries (default 1000)")
    parser.add_argument(
        "--batch", type=int, default=None, help="import --batch (default: the CLI's own)"
    )
    parser.add_argument("--slice", type=int, default=100_000, help="import curve step")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temp directory")
    parser.add_argument("--keep", action="store_true", help="keep the ledgers and corpora")
    parser.add_argument("--no-peers", action="store_true", help="skip sqlite-utils and git")
    parser.add_argument(
        "--no-web", action="store_true", help="skip the web page latency (bench_web.py)"
    )
    parser.add_argument(
        "--no-reads", action="store_true", help="skip log and index (read_commands)"
    )
    parser.add_argument(
        "--corpus-cache",
        type=Path,
        default=None,
        help="make each size's empty ledger and corpus once here, copy them into each run",
    )
    parser.add_argument(
        "--no-store-floor",
        action="store_true",
        help="skip the store-only run (the import floor is then the checks alone)",
    )
    parser.add_argument("--no-attestations", action="store_true")
    parser.add_argument(
        "--postgres",
        metavar="ADMIN_URL",
        default=None,
        help="instead: SQLite vs PostgreSQL with 1/4/8 concurrent writers (scripts/bench_pg.py);"
        " the server at ADMIN_URL gets one scratch database per run",
    )
    parser.add_argument("--writer-counts", default="1,4,8", help="with --postgres")
    parser.add_argument(
        "--reads-on",
        metavar="LEDGER",
        type=Path,
        default=None,
        help="instead: only the read commands (log | head, log --json, index) on an"
        " existing ledger file",
    )
    args = parser.parse_args(argv)
    if args.queries is None:
        args.queries = 100 if args.quick else 1000
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    base = args.workdir or Path(tempfile.mkdtemp(prefix="provledger-bench-"))
    base.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {
        "tool": "scripts/bench.py",
        "command": " ".join(["python", "scripts/bench.py", *(argv or sys.argv[1:])]),
        "machine": machine(),
        "seed": args.seed,
        "batch": args.batch,
        "workers": args.workers,
        "attestations": not args.no_attestations,
        "runs": [],
    }
    if args.postgres:
        return _postgres(args, sizes, base, result)
    if args.reads_on is not None:
        return _reads_only(args, base, result)
    for n in sizes:
        print(f"== n={n}", file=sys.stderr, flush=True)
        result["runs"].append(bench_size(n, args, base))
        if args.out:
            args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    result["help_cold_start"] = _help_cold_start(3 if args.quick else 11)
    self_usage = resource.getrusage(resource.RUSAGE_SELF)
    result["bench_self_max_rss_mb"] = self_usage.ru_maxrss / 1024
    if args.out:
        args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    if args.workdir is None and not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    print(table(result))
    return 0


def _reads_only(args: argparse.Namespace, base: Path, result: dict[str, Any]) -> int:
    """``--reads-on LEDGER``: ``read_commands`` alone, on a ledger made earlier."""
    import sqlite3

    conn = sqlite3.connect(f"file:{args.reads_on}?mode=ro", uri=True)
    (n,) = conn.execute("SELECT count(*) FROM entries").fetchone()
    conn.close()
    reads = read_commands(args.reads_on, n, base, 3 if args.quick else 5)
    result["reads_on"] = {"ledger": str(args.reads_on), "entries": n, **reads}
    if args.out:
        args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    if args.workdir is None and not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result["reads_on"], indent=2, sort_keys=True))
    return 0


def _postgres(
    args: argparse.Namespace, sizes: list[int], base: Path, result: dict[str, Any]
) -> int:
    from bench_pg import bench_writers, pg_settings, writers_table

    result["postgres_settings"] = pg_settings(args.postgres)
    result["writers"] = []
    for n in sizes:
        print(f"== writers n={n}", file=sys.stderr, flush=True)
        result["writers"].append(bench_writers(n, args, base))
        if args.out:
            args.out.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    if args.workdir is None and not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(result["postgres_settings"], sort_keys=True))
    print(writers_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
