"""Many writers on one PostgreSQL ledger, and the server killed under a writer.

Concurrency: 8 ``provledger import jsonl`` processes import overlapping files at once.
Afterwards every distinct document is stored exactly once, the sequence is contiguous
from 0, ``verify`` is clean and the root equals an RFC 9162 tree rebuilt here from the
entry rows (not from the stored nodes).

Faults: the postmaster is SIGKILLed mid-import. The client prints one ``error:`` line and
exits 3; after a restart the ledger holds an exact prefix of the input and a re-run
completes it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from ledger.log.leaf import entry_record

ROOT = Path(__file__).resolve().parents[1]
PROVLEDGER = ROOT / ".venv" / "bin" / "provledger"
sys.path.insert(0, str(ROOT / "scripts"))
WRITERS = 8
ENV = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
ENV.pop("PROVLEDGER_DB", None)


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 9162 section 2.1.1 Merkle Tree Hash, straight from the definition."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return hashlib.sha256(b"\x01" + _mth(leaves[:k]) + _mth(leaves[k:])).digest()


def _rows(url: str) -> list[tuple[int, str, str, str]]:
    import psycopg

    with psycopg.connect(url) as conn:
        return [
            (int(s), d, k, a)
            for s, d, k, a in conn.execute(
                "SELECT seq, digest, kind, appended_at FROM entries ORDER BY seq"
            )
        ]


def _lines(n: int, path: Path) -> list[str]:
    from bench_corpus import write_corpus

    write_corpus(path, n, seed=11)
    return path.read_text("utf-8").splitlines()


def _digest(line: str) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(json.loads(line))).hexdigest()


def _init(url: str, tmp_path: Path) -> None:
    subprocess.run(
        [
            str(PROVLEDGER),
            "init",
            "--db",
            url,
            "--log-key",
            str(tmp_path / "log.key"),
            "--authority-key",
            str(tmp_path / "auth.key"),
        ],
        env=ENV,
        check=True,
        capture_output=True,
    )


@pytest.fixture(autouse=True)
def _console_script() -> None:
    if not PROVLEDGER.exists():
        pytest.skip(f"console script absent: {PROVLEDGER}")


def test_eight_writers_with_overlapping_files(pg_url: str, tmp_path: Path) -> None:
    lines = _lines(450, tmp_path / "all.jsonl")
    rng = random.Random(3)
    files = []
    for w in range(WRITERS):
        # Each writer: a window of the corpus overlapping its neighbours, shuffled.
        start = w * 40
        chosen = lines[start : start + 130] + rng.sample(lines, 30)
        rng.shuffle(chosen)
        path = tmp_path / f"w{w}.jsonl"
        path.write_text("\n".join(chosen) + "\n", "utf-8")
        files.append((path, chosen))
    expected = {_digest(line) for _, chosen in files for line in chosen}
    _init(pg_url, tmp_path)
    procs = [
        subprocess.Popen(
            [
                str(PROVLEDGER),
                "import",
                "jsonl",
                str(path),
                "--db",
                pg_url,
                "--batch",
                "10",
                "--workers",
                "1",
                "--json",
            ],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for path, _ in files
    ]
    outs = [p.communicate() for p in procs]
    for proc, (out, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err.decode()
        assert err == b""
        assert json.loads(out)["ok"] is True
    rows = _rows(pg_url)
    assert [r[0] for r in rows] == list(range(len(rows)))
    assert len(rows) == len(expected)
    assert {r[1] for r in rows} == expected
    summaries = [json.loads(out) for out, _ in outs]
    assert sum(s["new"] for s in summaries) == len(expected)
    verified = subprocess.run(
        [str(PROVLEDGER), "verify", "--db", pg_url, "--json"],
        env=ENV,
        capture_output=True,
        text=True,
    )
    assert verified.returncode == 0, verified.stdout
    rebuilt = _mth([entry_record(s, k, d, a) for s, d, k, a in rows])
    assert json.loads(verified.stdout)["root"] == rebuilt.hex()


@pytest.fixture
def own_cluster() -> Iterator[Any]:
    """A cluster this test may kill (not the session's)."""
    from pg_cluster import remove, start_cluster

    cluster = start_cluster(port=5433)
    yield cluster
    remove(cluster)


def test_postmaster_killed_mid_import(own_cluster: Any, tmp_path: Path) -> None:
    url = own_cluster.createdb()
    lines = _lines(2400, tmp_path / "all.jsonl")
    digests = [_digest(line) for line in lines]
    _init(url, tmp_path)
    cmd = [str(PROVLEDGER), "import", "jsonl", str(tmp_path / "all.jsonl"), "--db", url]
    cmd += ["--batch", "40", "--workers", "1"]
    proc = subprocess.Popen(cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    while proc.poll() is None and len(_rows(url)) < 200:
        time.sleep(0.01)
    assert proc.poll() is None, "the import finished before the server could be killed"
    own_cluster.kill()
    _, err = proc.communicate()
    text = err.decode()
    assert proc.returncode == 3, text
    assert text.count("\n") == 1 and text.startswith("error: "), text
    assert "connection" in text and "Traceback" not in text
    own_cluster.start()
    stored = [r[1] for r in _rows(url)]
    assert 200 <= len(stored) < len(digests)
    assert stored == digests[: len(stored)]
    rerun = subprocess.run(cmd, env=ENV, capture_output=True, text=True)
    assert rerun.returncode == 0, rerun.stderr
    assert [r[1] for r in _rows(url)] == digests
    verified = subprocess.run(
        [str(PROVLEDGER), "verify", "--db", url], env=ENV, capture_output=True, text=True
    )
    assert verified.returncode == 0, verified.stdout
