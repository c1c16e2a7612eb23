"""Concurrent writers, a checkpointer and readers on one ledger file.

Two scenarios, each with at least four appending processes at once:

* CLI: real ``provledger`` processes — writers (``append``, new and duplicate objects,
  JSON documents and blobs), one ``checkpoint`` loop, readers (``log``, ``stats``,
  ``proof inclusion``, ``proof consistency``). Every command must exit 0 with an empty
  stderr: no "database is locked" or any other error reaches a user.
* Store hammer: writer processes calling ``append_many`` in a tight loop (far more lock
  contention than CLI start-up allows), a ``make_checkpoint`` loop and a proof reader.

Afterwards: sequence numbers contiguous from 0, every object exactly once, every reported
sequence number the final one, every checkpoint consistent with every later one (proofs
checked with ``ledger.log.merkle.verify_consistency`` against the roots of signed notes), and
``verify`` clean. ``PROVLEDGER_LONG=1`` multiplies the rounds.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import rfc8785

from ledger.log import merkle
from ledger.log.merkle import leaf_hash, verify_consistency, verify_inclusion
from ledger.log.note import open_checkpoint

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"
PROVLEDGER = ROOT / ".venv" / "bin" / "provledger"
PYTHON = ROOT / ".venv" / "bin" / "python"
WORK_UNIT = "examples/work-units/phase0-smoke.work-unit.json"

LONG = os.environ.get("PROVLEDGER_LONG") == "1"
CLI_WRITERS = 4
CLI_ROUNDS = 12 if LONG else 4
CLI_CHECKPOINTS = 16 if LONG else 5
CLI_READERS = 2
CLI_READER_ROUNDS = 10 if LONG else 2
HAMMER_WRITERS = 4
HAMMER_TXNS = 400 if LONG else 60

CHILD_ENV = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
CHILD_ENV.pop("PROVLEDGER_DB", None)


@pytest.fixture
def ledger(tmp_path: Path) -> tuple[Path, str]:
    """A fresh ledger and its log verifier key."""
    if not PROVLEDGER.exists():
        pytest.skip(f"console script absent: {PROVLEDGER} (run scripts/test.sh to make .venv)")
    from ledger.cli.core import authority_key_path, log_key_path
    from ledger.create import initialise

    db = tmp_path / "ledger.db"
    info = initialise(db, None, log_key_path(db), authority_key_path(db))
    return db, str(info["log_verifier_key"])


def _digest_of_json(doc: Any) -> str:
    return "sha256:" + hashlib.sha256(rfc8785.dumps(doc)).hexdigest()


def _cli(db: Path, *args: str) -> Any:
    """Run one command; it must succeed silently on stderr. Returns parsed --json output."""
    result = subprocess.run(
        [str(PROVLEDGER), *args, "--db", str(db), "--json"],
        capture_output=True,
        env=CHILD_ENV,
        check=False,
    )
    assert result.returncode == 0 and result.stderr == b"", (
        args,
        result.returncode,
        result.stderr.decode(errors="replace"),
    )
    return json.loads(result.stdout)


def _entries(db: Path) -> list[tuple[int, str]]:
    from ledger.store.sqlite import open_store

    with open_store(db, readonly=True) as store:
        return [(e.seq, e.digest) for e in store.entries()]


def _checkpoint_records(db: Path) -> set[str]:
    """Digests of the checkpoint records the store logged (one per covered checkpoint)."""
    from ledger.store.sqlite import open_store

    with open_store(db, readonly=True) as store:
        return {e.digest for e in store.entries(kind="checkpoint")}


def _check_log_shape(entries: list[tuple[int, str]]) -> None:
    assert [seq for seq, _ in entries] == list(range(len(entries))), "sequence not contiguous"
    digests = [d for _, d in entries]
    assert len(set(digests)) == len(digests), "an object appears twice"


def _check_inclusion_json(proof: dict[str, Any], vkey: str) -> None:
    leaf = proof["leaf"].encode("utf-8")
    assert leaf_hash(leaf).hex() == proof["leaf_hash"]
    root = bytes.fromhex(proof["root"])
    verify_inclusion(
        proof["index"],
        proof["tree_size"],
        leaf_hash(leaf),
        [bytes.fromhex(h) for h in proof["proof"]],
        root,
    )
    if proof["checkpoint"] is not None:
        signed = open_checkpoint(proof["checkpoint"].encode("utf-8"), vkey)
        assert (signed.size, signed.root_hash) == (proof["tree_size"], root)


def _check_consistency_json(
    proof: dict[str, Any], old: tuple[int, bytes], new: tuple[int, bytes]
) -> None:
    """Verify a CLI consistency proof against trusted (size, root) pairs, not its own."""
    assert (proof["old_size"], proof["new_size"]) == (old[0], new[0])
    verify_consistency(old[0], new[0], old[1], new[1], [bytes.fromhex(h) for h in proof["proof"]])


def _run_all(jobs: list[Callable[[], Any]]) -> list[Any]:
    """Run jobs on threads released together; re-raise the first failure."""
    barrier = threading.Barrier(len(jobs))

    def start(job: Callable[[], Any]) -> Any:
        barrier.wait()
        return job()

    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = [pool.submit(start, job) for job in jobs]
        return [f.result() for f in futures]


def test_cli_writers_checkpointer_and_readers(ledger: tuple[Path, str], tmp_path: Path) -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS} (it lives in ../shared, outside the repo)")
    db, vkey = ledger
    template = json.loads((CORPUS / WORK_UNIT).read_bytes())
    expected: set[str] = set()

    def doc_file(name: str) -> str:
        doc = dict(template)
        doc["id"] = f"{template['id']}/conc-{name}"
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        expected.add(_digest_of_json(doc))
        return str(path)

    def blob_file(name: str) -> str:
        data = f"blob {name}\n".encode() * 3
        path = tmp_path / f"{name}.bin"
        path.write_bytes(data)
        expected.add("sha256:" + hashlib.sha256(data).hexdigest())
        return str(path)

    seed = [doc_file(f"seed-{i}") for i in range(3)]
    seeded = _cli(db, "append", *seed)
    seed_digest = seeded[0]["digest"]
    # A checkpoint before the writers start, so at least two sizes get signed.
    first_checkpoint = _cli(db, "checkpoint")

    shared_docs = [doc_file(f"shared-{r}") for r in range(CLI_ROUNDS + 1)]
    shared_blobs = [blob_file(f"shared-{r}") for r in range(CLI_ROUNDS)]

    def writer(w: int) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for r in range(CLI_ROUNDS):
            if (r + w) % 2 == 0:
                files = [doc_file(f"w{w}-r{r}"), shared_docs[r], shared_docs[r + 1], seed[0]]
                rows += _cli(db, "append", *files)
            else:
                rows += _cli(
                    db, "append", "--kind", "blob", blob_file(f"w{w}-r{r}"), shared_blobs[r]
                )
        return rows

    def checkpointer() -> list[dict[str, Any]]:
        return [_cli(db, "checkpoint") for _ in range(CLI_CHECKPOINTS)]

    def reader() -> int:
        seen = 0
        for _ in range(CLI_READER_ROUNDS):
            log = _cli(db, "log")
            entries = [(e["seq"], e["digest"]) for e in log]
            _check_log_shape(entries)
            assert len(entries) >= seen, "the log shrank"
            seen = len(entries)
            stats = _cli(db, "stats")
            assert stats["entries"] >= seen
            _check_inclusion_json(_cli(db, "proof", "inclusion", seed_digest), vkey)
            consistency = _cli(db, "proof", "consistency", "1")
            assert consistency["old_size"] == 1
            verify_consistency(
                1,
                consistency["new_size"],
                bytes.fromhex(consistency["old_root"]),
                bytes.fromhex(consistency["new_root"]),
                [bytes.fromhex(h) for h in consistency["proof"]],
            )
        return seen

    jobs: list[Callable[[], Any]] = [functools.partial(writer, w) for w in range(CLI_WRITERS)]
    jobs.append(checkpointer)
    jobs += [reader] * CLI_READERS
    results = _run_all(jobs)

    final = _entries(db)
    _check_log_shape(final)
    records = _checkpoint_records(db)
    seq_of = {digest: seq for seq, digest in final if digest not in records}
    assert set(seq_of) == expected, "objects lost or unexpected objects present"
    for rows in [seeded, *results[:CLI_WRITERS]]:
        for row in rows:
            assert seq_of[row["digest"]] == row["seq"], row
    statuses = [row["status"] for rows in results[:CLI_WRITERS] for row in rows]
    assert "present" in statuses and "new" in statuses, "duplicates and new objects must mix"

    last_checkpoint = _cli(db, "checkpoint")
    signed_heads = [first_checkpoint, *results[CLI_WRITERS], last_checkpoint]
    checkpoints = sorted({(c["size"], c["root"], c["note"]) for c in signed_heads})
    trusted = []
    for size, root, note in checkpoints:
        signed = open_checkpoint(note.encode("utf-8"), vkey)
        assert (signed.size, signed.root_hash.hex()) == (size, root)
        trusted.append((size, signed.root_hash))
    assert len(trusted) >= 2, "the checkpointer must have seen the log grow"
    pairs = [*itertools.pairwise(trusted), (trusted[0], trusted[-1])]
    for old, new in pairs:
        proof = _cli(db, "proof", "consistency", str(old[0]), str(new[0]))
        _check_consistency_json(proof, old, new)
    _check_all_checkpoints_consistent(db, vkey)

    report = _cli(db, "verify")
    assert report["ok"] is True and report["entries"] == len(expected) + len(records)


def _check_all_checkpoints_consistent(db: Path, vkey: str) -> int:
    """Every stored checkpoint is consistent with every later one (signed roots)."""
    from ledger.log.checkpoints import prove_consistency
    from ledger.store.sqlite import open_store

    with open_store(db, readonly=True) as store:
        trusted = []
        for row in store.checkpoints():
            signed = open_checkpoint(row.note, vkey)
            assert signed.size == row.size
            trusted.append((signed.size, signed.root_hash))
        for old, new in itertools.combinations(trusted, 2):
            if old[0] == 0:
                # The empty tree is a prefix of every tree; proofs start at size 1
                # (docs/LOG.md), so check the signed empty root instead.
                assert old[1] == merkle.EMPTY_ROOT
                continue
            proof = prove_consistency(store, old[0], new[0])
            verify_consistency(old[0], new[0], old[1], new[1], proof.hashes)
    return len(trusted)


HAMMER_WRITER = """
import json, sys, time
from pathlib import Path
from ledger.store.prepared import prepare_blob
from ledger.store.sqlite import open_store

db, me, txns, go = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
out = []
with open_store(db) as store:
    while not go.exists():
        time.sleep(0.001)
    for t in range(txns):
        items = [prepare_blob(f"hammer {me} {t}".encode())]
        items.append(prepare_blob(f"shared {t % 17}".encode()))
        if t % 3 == 0:
            items.append(prepare_blob(f"shared {(t + 5) % 17}".encode()))
        for result in store.append_many(items):
            out.append([result.entry.digest, result.entry.seq, result.new])
json.dump(out, sys.stdout)
"""

HAMMER_CHECKPOINTER = """
import json, sys, time
from pathlib import Path
from ledger.trust.keys import load_private_key
from ledger.log.checkpoints import make_checkpoint
from ledger.store.sqlite import open_store

db, key, rounds, go = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), Path(sys.argv[4])
log_key = load_private_key(key)
sizes = []
with open_store(db) as store:
    while not go.exists():
        time.sleep(0.001)
    for _ in range(rounds):
        sizes.append(make_checkpoint(store, log_key).size)
json.dump(sizes, sys.stdout)
"""

HAMMER_READER = """
import json, sys, time
from pathlib import Path
from ledger.log import merkle
from ledger.log.checkpoints import entry_leaf, prove_inclusion
from ledger.store.sqlite import open_store

db, rounds, go = Path(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3])
checked = 0
while not go.exists():
    time.sleep(0.001)
# Run at least `rounds` rounds, and keep going (bounded) until one proof was checked:
# the writers may not have committed anything yet when the reader starts.
deadline = time.monotonic() + 120
i = 0
while (i < rounds or checked == 0) and time.monotonic() < deadline:
    i += 1
    with open_store(db, readonly=True) as store:
        entries = list(store.entries())
        assert [e.seq for e in entries] == list(range(len(entries)))
        if entries:
            e = entries[(i * 7919) % len(entries)]
            proof = prove_inclusion(store, e.digest)
            merkle.verify_inclusion(
                e.seq, proof.size, merkle.leaf_hash(entry_leaf(e)), proof.hashes, proof.root
            )
            checked += 1
json.dump(checked, sys.stdout)
"""


def test_store_hammer_many_writers(ledger: tuple[Path, str], tmp_path: Path) -> None:
    db, vkey = ledger
    go = tmp_path / "go"
    log_key = db.with_name(db.name + ".log.key")
    argvs = [
        [str(PYTHON), "-c", HAMMER_WRITER, str(db), str(w), str(HAMMER_TXNS), str(go)]
        for w in range(HAMMER_WRITERS)
    ]
    argvs.append([str(PYTHON), "-c", HAMMER_CHECKPOINTER, str(db), str(log_key), "40", str(go)])
    argvs.append([str(PYTHON), "-c", HAMMER_READER, str(db), "40", str(go)])
    procs = [
        subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=CHILD_ENV)
        for argv in argvs
    ]
    go.touch()
    outputs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0 and stderr == b"", stderr.decode(errors="replace")
        outputs.append(json.loads(stdout))

    final = _entries(db)
    _check_log_shape(final)
    records = _checkpoint_records(db)
    seq_of = {digest: seq for seq, digest in final if digest not in records}
    expected = {
        "sha256:" + hashlib.sha256(f"hammer {w} {t}".encode()).hexdigest()
        for w in range(HAMMER_WRITERS)
        for t in range(HAMMER_TXNS)
    } | {"sha256:" + hashlib.sha256(f"shared {k}".encode()).hexdigest() for k in range(17)}
    assert set(seq_of) == expected
    new_count = 0
    for rows in outputs[:HAMMER_WRITERS]:
        for digest, seq, new in rows:
            assert seq_of[digest] == seq
            new_count += bool(new)
    assert new_count == len(expected), "each object reported new exactly once"
    assert outputs[HAMMER_WRITERS + 1] > 0
    assert _check_all_checkpoints_consistent(db, vkey) >= 1
    from ledger.audit.full import audit
    from ledger.store.sqlite import open_store

    with open_store(db, readonly=True) as store:
        report = audit(store)
    assert report.ok, [f.to_json() for f in report.findings]
