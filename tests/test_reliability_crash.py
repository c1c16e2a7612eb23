"""Crash safety: SIGKILL a bulk writer at random moments; the ledger stays a verifiable prefix.

Two writers are killed, each in fresh copies of one initialised ledger:

* ``provledger import jsonl FILE`` (the real console script): valid lines are appended
  in batches, each batch one transaction;
* a store-level writer (``append_many`` in small batches, a signed checkpoint every few
  batches), which exercises the same transactions without the CLI around them.

After every kill: the audit is clean (``provledger verify`` itself on every fourth run,
the same ``ledger.audit.full.audit`` in-process on the others, to keep CI time down), the
entries present are exactly a prefix of the input in input order, no helper process (the
import's worker pool) outlives the killed writer, and running the writer again completes
with every input present exactly once, in input order. ``provledger append`` of many
files is also killed: it is one transaction, so none or all of its files are present.

Kill moments are seeded: half the runs wait until a random number of entries is
committed (so the kill lands between or inside batches), half wait a random time from
spawn (so some land during start-up). Knobs: ``PROVLEDGER_CRASH_SEED``,
``PROVLEDGER_CRASH_RUNS``; ``PROVLEDGER_LONG=1`` runs the long variant.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rfc8785

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"
PROVLEDGER = ROOT / ".venv" / "bin" / "provledger"
PYTHON = ROOT / ".venv" / "bin" / "python"

LONG = os.environ.get("PROVLEDGER_LONG") == "1"
SEED = int(os.environ.get("PROVLEDGER_CRASH_SEED", "20240508"))
RUNS = int(os.environ.get("PROVLEDGER_CRASH_RUNS", "100" if LONG else "20"))
IMPORT_LINES = 600 if LONG else 96
STORE_RUNS = 40 if LONG else 6
STORE_LINES = 600 if LONG else 120
STORE_BATCH = 8
# Small batches make many transactions per run, so kills land between and inside them.
IMPORT_BATCH = 8

TEMPLATES = (
    "examples/work-units/phase0-smoke.work-unit.json",
    "examples/results/phase0-smoke.result-manifest.json",
    "verification/fixtures/patch-smoke-evaluator-plan-v0.2.json",
    "examples/results/phase0-smoke.verification-result.json",
)

CHILD_ENV = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
CHILD_ENV.pop("PROVLEDGER_DB", None)

# The store-level writer: appends JSONL lines in batches, checkpointing every 3 batches.
STORE_WRITER = """
import sys
from pathlib import Path
from ledger.trust.keys import load_private_key
from ledger.log.checkpoints import make_checkpoint
from ledger.store.prepared import prepare_json
from ledger.store.sqlite import open_store

db, src, batch, key = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
lines = [line for line in src.read_bytes().splitlines() if line.strip()]
log_key = load_private_key(key)
with open_store(db) as store:
    for n, start in enumerate(range(0, len(lines), batch)):
        store.append_many([prepare_json(line) for line in lines[start : start + batch]])
        if n % 3 == 2:
            make_checkpoint(store, log_key)
    make_checkpoint(store, log_key)
"""


@dataclass(frozen=True)
class Workload:
    """A JSONL input file and the digests its lines must get, in order."""

    path: Path
    digests: tuple[str, ...]


@dataclass
class Outcome:
    """What one kill run saw, for the summary line and the anti-vacuity checks."""

    killed: bool
    committed: int


def _documents(count: int, tag: str) -> Iterator[dict[str, Any]]:
    """Distinct valid documents of four kinds: corpus templates with a varied ``id``."""
    templates = [json.loads((CORPUS / rel).read_bytes()) for rel in TEMPLATES]
    for i in range(count):
        doc = dict(templates[i % len(templates)])
        doc["id"] = f"{doc['id']}/{tag}-{i:06d}"
        yield doc


def _workload(directory: Path, count: int, tag: str) -> Workload:
    from ledger.store.prepared import prepare_value

    lines, digests = [], []
    for doc in _documents(count, tag):
        canonical = rfc8785.dumps(doc)
        digest = "sha256:" + hashlib.sha256(canonical).hexdigest()
        # The ledger must agree with an independent canonicalization (and accept the doc).
        assert prepare_value(doc).digest == digest
        # Non-canonical spelling on purpose: the writer must canonicalize.
        lines.append(json.dumps(doc, indent=None, ensure_ascii=True))
        digests.append(digest)
    path = directory / f"{tag}.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Workload(path, tuple(digests))


@pytest.fixture(scope="module")
def corpus_present() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS} (it lives in ../shared, outside the repo)")
    if not PROVLEDGER.exists():
        pytest.skip(f"console script absent: {PROVLEDGER} (run scripts/test.sh to make .venv)")


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory, corpus_present: None) -> Path:
    """One initialised ledger; each run copies its database file."""
    from ledger.cli.core import authority_key_path, log_key_path
    from ledger.create import initialise

    db = tmp_path_factory.mktemp("crash-template") / "ledger.db"
    initialise(db, None, log_key_path(db), authority_key_path(db))
    assert not Path(str(db) + "-wal").exists(), "template must be self-contained"
    return db


def _fresh_ledger(template: Path, directory: Path) -> Path:
    directory.mkdir()
    db = directory / "ledger.db"
    shutil.copyfile(template, db)
    return db


def _committed(db: Path, *, records: bool = True) -> list[tuple[int, str]]:
    """(seq, digest) of every committed entry, read like any other reader would.

    ``records=False`` leaves out the checkpoint records the store logs by itself.
    """
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
    where = "" if records else " WHERE kind != 'checkpoint'"
    try:
        return conn.execute(f"SELECT seq, digest FROM entries{where} ORDER BY seq").fetchall()
    finally:
        conn.close()


def _count(conn: sqlite3.Connection) -> int:
    try:
        (n,) = conn.execute("SELECT count(*) FROM entries").fetchone()
    except sqlite3.OperationalError:
        return -1  # a transient read failure only delays the kill
    return int(n)


def _kill_at_random_moment(
    argv: list[str], db: Path, total: int, rng: random.Random, horizon: float
) -> Outcome:
    """Spawn ``argv``, SIGKILL it at a seeded moment, and report whether it was killed."""
    by_progress = rng.random() < 0.5
    target = rng.randrange(0, max(1, total - 2 * IMPORT_BATCH))
    delay = rng.uniform(0.0, horizon)
    # A session of its own: helper processes (import workers) are found by group id.
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=CHILD_ENV,
        cwd=db.parent,
        start_new_session=True,
    )
    try:
        if by_progress:
            conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=60)
            try:
                while proc.poll() is None and _count(conn) < target:
                    time.sleep(0.001)
            finally:
                conn.close()
            time.sleep(rng.uniform(0.0, 0.002))
        else:
            deadline = time.monotonic() + delay
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.001)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    killed = proc.returncode == -signal.SIGKILL
    _no_orphans(proc.pid)
    # A writer that beat the kill must have finished cleanly.
    assert killed or (proc.returncode == 0 and stderr == b""), (proc.returncode, stderr)
    return Outcome(killed, len(_committed(db)))


def _no_orphans(group: int) -> None:
    """Helper processes of a killed writer must go away with it (bounded wait)."""
    deadline = time.monotonic() + 30
    while True:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return
        if time.monotonic() > deadline:
            os.killpg(group, signal.SIGKILL)  # only the session this test started
            pytest.fail("processes of a killed writer outlived it by 30 s")
        time.sleep(0.01)


def _check_prefix(db: Path, work: Workload, complete: bool) -> int:
    rows = _committed(db)
    assert [seq for seq, _ in rows] == list(range(len(rows))), "sequence numbers not contiguous"
    digests = [digest for _, digest in _committed(db, records=False)]
    assert digests == list(work.digests[: len(digests)]), "entries are not a prefix of the input"
    if complete:
        assert len(digests) == len(work.digests), "re-run did not complete the input"
    return len(digests)


def _cli_verify(db: Path) -> None:
    result = subprocess.run(
        [str(PROVLEDGER), "verify", "--db", str(db), "--json"],
        capture_output=True,
        env=CHILD_ENV,
        check=False,
    )
    assert result.returncode == 0, result.stdout.decode() + result.stderr.decode()
    assert result.stderr == b""
    assert json.loads(result.stdout)["ok"] is True


def _audit(db: Path) -> None:
    from ledger.audit.full import audit
    from ledger.store.sqlite import open_store

    with open_store(db, readonly=True) as store:
        report = audit(store)
    assert report.ok, [f.to_json() for f in report.findings]


def _import_available() -> tuple[bool, str | None]:
    """(does ``import jsonl`` exist, its batch-size option if any)."""
    if not PROVLEDGER.exists():
        return False, None
    result = subprocess.run(
        [str(PROVLEDGER), "import", "jsonl", "--help"],
        capture_output=True,
        env={**CHILD_ENV, "COLUMNS": "200"},
        check=False,
    )
    option = next((o for o in ("--batch-size", "--batch") if o.encode() in result.stdout), None)
    return result.returncode == 0, option


def _has_option(command: list[str], option: str) -> bool:
    result = subprocess.run(
        [str(PROVLEDGER), *command, "--help"],
        capture_output=True,
        env={**CHILD_ENV, "COLUMNS": "200"},
        check=False,
    )
    return option.encode() in result.stdout


def _summarise(label: str, outcomes: list[Outcome], total: int) -> None:
    killed = [o for o in outcomes if o.killed]
    partial = [o for o in killed if 0 < o.committed < total]
    sys.stderr.write(
        f"\n{label}: {len(outcomes)} runs, {len(killed)} killed mid-write"
        f" ({len(partial)} with a partial prefix), 0 lost, 0 duplicated\n"
    )
    # Not vacuous: the progress-triggered half always kills a running writer.
    assert len(killed) >= len(outcomes) // 4, "too few kills landed while the writer ran"
    assert partial, "no kill left a partial prefix; the scenario proved nothing"


def _run_kills(
    runs: int,
    rng: random.Random,
    make_db: Callable[[int], Path],
    argv_for: Callable[[Path], list[str]],
    work: Workload,
    verify: Callable[[Path], None],
    horizon: float,
) -> list[Outcome]:
    outcomes = []
    for run in range(runs):
        db = make_db(run)
        outcome = _kill_at_random_moment(argv_for(db), db, len(work.digests), rng, horizon)
        # The CLI audit on every 4th run, the same audit in-process on the others (CI time).
        (verify if run % 4 == 0 else _audit)(db)
        _check_prefix(db, work, complete=False)
        rerun = subprocess.run(argv_for(db), capture_output=True, env=CHILD_ENV, check=False)
        assert rerun.returncode == 0, rerun.stderr.decode()
        _check_prefix(db, work, complete=True)
        if run == runs - 1:
            _audit(db)
        outcomes.append(outcome)
        shutil.rmtree(db.parent)
    return outcomes


def test_sigkill_during_import_jsonl_leaves_a_committed_prefix(
    template: Path, tmp_path: Path
) -> None:
    available, batch_option = _import_available()
    workers = available and _has_option(["import", "jsonl"], "--workers")
    if not available:
        pytest.skip("command not yet available: provledger import jsonl")
    work = _workload(tmp_path, IMPORT_LINES, "crash-import")
    extra = [batch_option, str(IMPORT_BATCH)] if batch_option else []
    runs = iter(range(10**6))

    def argv_for(db: Path) -> list[str]:
        argv = [str(PROVLEDGER), "import", "jsonl", str(work.path), "--db", str(db), *extra]
        # Alternate the in-process path and the default worker pool (when there is one).
        return [*argv, "--workers", "1"] if next(runs) % 4 < 2 and workers else argv

    # One uninterrupted import calibrates the time horizon for the time-triggered kills.
    calibration = _fresh_ledger(template, tmp_path / "calibration")
    started = time.monotonic()
    full = subprocess.run(argv_for(calibration), capture_output=True, env=CHILD_ENV, check=False)
    horizon = time.monotonic() - started
    assert full.returncode == 0, full.stderr.decode()
    _check_prefix(calibration, work, complete=True)

    rng = random.Random(SEED)
    outcomes = _run_kills(
        RUNS,
        rng,
        lambda run: _fresh_ledger(template, tmp_path / f"run-{run:03d}"),
        argv_for,
        work,
        _cli_verify,
        horizon,
    )
    _summarise(f"import jsonl (seed {SEED})", outcomes, len(work.digests))


def test_sigkill_during_store_appends_and_checkpoints(template: Path, tmp_path: Path) -> None:
    work = _workload(tmp_path, STORE_LINES, "crash-store")
    log_key = template.with_name(template.name + ".log.key")

    def argv_for(db: Path) -> list[str]:
        return [
            str(PYTHON),
            "-c",
            STORE_WRITER,
            str(db),
            str(work.path),
            str(STORE_BATCH),
            str(log_key),
        ]

    calibration = _fresh_ledger(template, tmp_path / "calibration")
    started = time.monotonic()
    full = subprocess.run(argv_for(calibration), capture_output=True, env=CHILD_ENV, check=False)
    horizon = time.monotonic() - started
    assert full.returncode == 0, full.stderr.decode()
    _check_prefix(calibration, work, complete=True)
    _audit(calibration)

    rng = random.Random(SEED + 1)
    outcomes = _run_kills(
        STORE_RUNS,
        rng,
        lambda run: _fresh_ledger(template, tmp_path / f"run-{run:03d}"),
        argv_for,
        work,
        _audit,
        horizon,
    )
    _summarise(f"store append_many (seed {SEED + 1})", outcomes, len(work.digests))


def test_sigkill_during_multi_file_append_is_all_or_nothing(template: Path, tmp_path: Path) -> None:
    """``provledger append`` is one transaction: a kill leaves none or all of its files."""
    work = _workload(tmp_path, 24, "crash-append")
    files = []
    for i, line in enumerate(work.path.read_text().splitlines()):
        path = tmp_path / f"doc-{i:03d}.json"
        path.write_text(line)
        files.append(str(path))

    def argv_for(db: Path) -> list[str]:
        return [str(PROVLEDGER), "append", "--db", str(db), *files]

    rng = random.Random(SEED + 2)
    seen = set()
    for run in range(3 if not LONG else 20):
        db = _fresh_ledger(template, tmp_path / f"append-{run:03d}")
        _kill_at_random_moment(argv_for(db), db, len(files), rng, 0.8)
        committed = _check_prefix(db, work, complete=False)
        assert committed in (0, len(files)), f"a torn append: {committed} of {len(files)}"
        seen.add(committed)
        _audit(db)
        rerun = subprocess.run(argv_for(db), capture_output=True, env=CHILD_ENV, check=False)
        assert rerun.returncode == 0, rerun.stderr.decode()
        _check_prefix(db, work, complete=True)
        shutil.rmtree(db.parent)
