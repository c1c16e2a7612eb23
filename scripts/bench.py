#!/usr/bin/env python3
"""provledger benchmark: import, verify, proofs, size and start-up on a synthetic corpus.

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
       [--quick] [--seed 7] [--workdir DIR] [--keep] [--no-peers]
"""

from __future__ import annotations

import argparse
import hashlib
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

VENV_BIN = ROOT / ".venv" / "bin"
PROVLEDGER = str(VENV_BIN / "provledger")
SQLITE_UTILS = str(VENV_BIN / "sqlite-utils")
GROUP = 9  # objects per task: WU, EP, 3 x (RM, VR), attestation

# -- corpus ----------------------------------------------------------------------------

_WORD_TEXT = (
    "ledger verifier candidate patch evidence manifest digest boundary cohort frozen"
    " baseline worker attempt review schema scope transition semantic provenance log"
    " artifact integrity independent deterministic bounded source revision policy"
    " sandbox network budget validator checkpoint merkle inclusion consistency signer"
    " identity authority revocation burn successor definition negative category finding"
    " regression security correctness maintainability metadata runner adapter backend"
    " substring removed added hunk diff path allowed forbidden requirement capability"
    " resource memory disk gpu accelerator tokens seconds minutes spend fallback quorum"
    " strategy threshold acceptance rule observed declared coverage required optional"
    " canonical legacy float integer string object array member name escape unicode"
    " the a of to and in for with on by from must may only never every each one both"
)
_WORDS = tuple(_WORD_TEXT.split())
_PATHS = ("tools", "ledger", "schemas", "verification", "benchmarks", "docs", "tests", "src")
_EXTS = (".py", ".json", ".md", ".toml")


def _sentence(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randint(low, high))]
    return (" ".join(words)).capitalize() + "."


def _hex(rng: random.Random, n: int = 64) -> str:
    return f"{rng.getrandbits(4 * n):0{n}x}"


def _sha(rng: random.Random) -> str:
    return "sha256:" + _hex(rng)


def _path(rng: random.Random) -> str:
    parts = [rng.choice(_PATHS)] + [rng.choice(_WORDS) for _ in range(rng.randint(0, 2))]
    return "/".join(parts) + rng.choice(_EXTS)


def _paths(rng: random.Random, low: int, high: int) -> list[str]:
    return sorted({_path(rng) for _ in range(rng.randint(low, high))})


def _time(rng: random.Random, base: float) -> str:
    t = time.gmtime(base)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{rng.randint(0, 999999):06d}Z"


def _digest(value: Any) -> str:
    from ledger.encoding._fast import canonicalize

    return "sha256:" + hashlib.sha256(canonicalize(value)).hexdigest()


def work_unit(rng: random.Random, task: int, cohort: str, revision: str) -> dict[str, Any]:
    """A WorkUnit v0.2 (~3 KB canonical)."""
    allowed = _paths(rng, 1, 3)
    return {
        "budget": {
            "compute_units": rng.randint(1, 4),
            "human_minutes": rng.choice([10, 20, 30, 45]),
            "paid_fallback_allowed": False,
            "project_spend_usd_max": 0,
            "tokens": rng.choice([20000, 50000, 100000]),
            "wall_seconds": rng.choice([300, 600, 900, 1800]),
        },
        "constraints": {
            "allowed_paths": allowed,
            "forbidden_paths": [".github/**", "schemas/**", "benchmarks/**", "verification/**"],
            "policies": [
                "candidate-only",
                "independent-verification-required",
                "zero-project-spend",
                "benchmark-definition-immutable",
            ],
        },
        "context": {
            "max_context_bytes": 200000,
            "references": _paths(rng, 2, 4),
            "summary": _sentence(rng, 30, 60),
        },
        "dependencies": [],
        "evidence_requirements": [
            {"required": True, "type": "artifact_hash"},
            {"required": True, "type": "review"},
        ],
        "extensions": {
            "org.idkmesh.benchmark": {
                "cohort": cohort,
                "fresh_after_burn": rng.random() < 0.5,
                "task_family": rng.choice(["bug_fix", "refactor", "test", "feature"]),
            }
        },
        "failure_semantics": {"max_attempts": 3, "on_failure": "stop", "retryable": False},
        "id": f"benchmark/{cohort}/{task:07d}-{rng.choice(_WORDS)}-{rng.choice(_WORDS)}",
        "inputs": [
            {
                "id": "source-repository",
                "locator": "https://example.org/idkmesh/source.git",
                "type": "git_ref",
            }
        ],
        "kind": rng.choice(["coding", "testing", "review"]),
        "objective": _sentence(rng, 35, 70),
        "outputs": [
            {
                "description": _sentence(rng, 8, 16),
                "id": "candidate-patch",
                "media_type": "text/x-diff",
                "type": "patch",
            }
        ],
        "permissions": {
            "filesystem_write": allowed,
            "network": "none",
            "network_allowlist": [],
            "process_execution": True,
            "secrets": [],
        },
        "provenance": {
            "created_by": "bench-generator",
            "creator_type": "system",
            "source": _sentence(rng, 4, 8),
            "source_revision": revision,
        },
        "requirements": {
            "capabilities": ["git", "python"],
            "resources": {
                "accelerator_capabilities": [],
                "cpu_cores_min": rng.choice([0.5, 1, 2]),
                "disk_mb_min": 32,
                "gpu": "none",
                "memory_mb_min": rng.choice([128, 256, 512]),
            },
        },
        "schema_version": "0.2",
        "security": {
            "data_classification": "public",
            "minimum_worker_trust": "untrusted",
            "notes": _sentence(rng, 8, 16),
            "risk_class": rng.choice(["low", "medium"]),
            "sandbox_required": True,
        },
        "uncertainty": [],
        "validators": [
            {
                "description": "Worker output must validate as ResultManifest v0.1.",
                "id": "result-manifest-schema",
                "required": True,
                "type": "schema",
            },
            {
                "description": _sentence(rng, 10, 18),
                "id": "independent-review",
                "required": True,
                "type": "review",
            },
        ],
        "verification_policy": {
            "acceptance_rule": _sentence(rng, 10, 18),
            "independent_from_worker": True,
            "minimum_independent_verifiers": 1,
            "strategy": "all_required",
        },
        "version": 1,
    }


def evaluator_plan(rng: random.Random, wu: dict[str, Any], wu_digest: str) -> dict[str, Any]:
    """An EvaluatorPlan v0.4 bound to ``wu`` (~1.3 KB canonical)."""
    return {
        "backend": {
            "max_candidate_bytes": 200000,
            "max_log_bytes": 262144,
            "require_nonempty_patch": True,
            "required_added_substrings": [_sentence(rng, 3, 7) for _ in range(rng.randint(1, 3))],
            "required_log_types": ["stdout", "stderr"],
            "required_removed_substrings": [_sentence(rng, 3, 7)],
            "type": "unified_diff",
            "verify_log_digests": True,
        },
        "binding": {
            "source_revision": wu["provenance"]["source_revision"],
            "work_unit_digest": wu_digest,
            "work_unit_id": wu["id"],
            "work_unit_version": wu["version"],
        },
        "candidate_artifact_id": "candidate-patch",
        "execution_mode": "metadata_only",
        "extensions": {
            "org.idkmesh.benchmark": {
                "cohort": wu["extensions"]["org.idkmesh.benchmark"]["cohort"],
                "evidence_strength": "structural_transition_only",
                "task_id": wu["id"],
            }
        },
        "id": wu["id"] + "/evaluator-v0.4",
        "policy": {
            "require_output_outside_candidate_root": True,
            "require_plan_outside_candidate_root": True,
            "require_verifier_distinct_from_worker": True,
        },
        "required_validator_ids": ["result-manifest-schema", "independent-review"],
        "schema_version": "0.4",
        "verifier": {
            "adapter": "deterministic-patch-verifier",
            "adapter_version": "0.3.0",
            "id": "idkmesh-local-verifier",
            "type": "system",
        },
        "visibility": rng.choice(["public", "hidden"]),
    }


def _environment(rng: random.Random, tools: dict[str, str]) -> dict[str, Any]:
    return {
        "platform": "Linux-6.17.0-1022-azure-x86_64-with-glibc2.39",
        "python": rng.choice(["3.11.9", "3.12.14"]),
        "tool_versions": tools,
    }


def result_manifest(
    rng: random.Random, wu: dict[str, Any], wu_digest: str, attempt: int, start: float
) -> dict[str, Any]:
    """A ResultManifest v0.1 (~2 KB canonical; floats in resources, as upstream)."""
    worker = rng.choice(["baseline-worker", "agent-worker-a", "agent-worker-b"])
    return {
        "attempt": attempt,
        "extensions": {
            "org.idkmesh.authority": {
                "automatic_candidate_selection": False,
                "canonical_state_write": False,
                "git_push": False,
                "merge": False,
            }
        },
        "finished_at": _time(rng, start + 1),
        "id": f"{wu['id']}/{worker}/attempt-{attempt:03d}",
        "logs": [
            {"digest": _sha(rng), "locator": "stdout.txt", "type": "stdout"},
            {"digest": _sha(rng), "locator": "stderr.txt", "type": "stderr"},
        ],
        "metrics": {"changed_path_count": rng.randint(1, 4), "score": rng.random()},
        "produced_artifacts": [
            {
                "description": _sentence(rng, 5, 10),
                "digest": _sha(rng),
                "id": "candidate-patch",
                "locator": "candidate.patch",
                "media_type": "text/x-diff",
                "type": "patch",
            }
        ],
        "provenance": {
            "environment": _environment(rng, {"git": "git version 2.55.0", worker: "0.1"}),
            "source_revision": wu["provenance"]["source_revision"],
            "work_unit_digest": wu_digest,
            "worker_config_digest": _sha(rng),
        },
        "resources": {
            "compute_units": 0.0,
            "human_minutes": 0.0,
            "tokens": rng.randint(0, 50000),
            "wall_seconds": rng.uniform(0.1, 900.0),
        },
        "schema_version": "0.1",
        "self_report": {
            "claims": [_sentence(rng, 8, 16) for _ in range(rng.randint(1, 3))],
            "summary": _sentence(rng, 8, 16),
        },
        "started_at": _time(rng, start),
        "status": rng.choice(["succeeded", "succeeded", "succeeded", "failed"]),
        "verification_request": {
            "evidence_artifact_ids": ["candidate-patch"],
            "expected_validator_ids": ["independent-review", "result-manifest-schema"],
            "notes": _sentence(rng, 6, 12),
        },
        "work_unit_id": wu["id"],
        "work_unit_version": wu["version"],
        "worker": {
            "adapter": "bounded-source-transform",
            "adapter_version": "0.1",
            "id": worker,
            "type": rng.choice(["system", "agent"]),
        },
    }


def verification_result(
    rng: random.Random,
    wu: dict[str, Any],
    wu_digest: str,
    rm: dict[str, Any],
    rm_digest: str,
    plan_digest: str,
    start: float,
) -> dict[str, Any]:
    """A VerificationResult v0.1 (3-13 KB: the diagnostics string carries the bulk)."""
    passed = rm["status"] == "succeeded" and rng.random() < 0.8
    observed = [_sentence(rng, 4, 12) for _ in range(rng.choice([2, 6, 12, 24, 48, 80]))]
    diagnostics = json.dumps(
        {
            "artifact": {"bytes": rng.randint(100, 20000), "observed_digest": _sha(rng)},
            "scope": {"changed_paths": _paths(rng, 1, 4), "violations": []},
            "semantic": {"observed_added_lines": observed, "missing_added_text": []},
        },
        sort_keys=True,
        separators=(",", ":"),
    )
    n_evidence = rng.randint(3, 7)
    evidence = [
        {
            "description": _sentence(rng, 8, 16),
            "digest": _sha(rng),
            "id": f"observation-{k}",
            "locator": f"inline://observation-{k}",
            "media_type": "application/json",
            "type": rng.choice(["trace", "static_analysis", "test_output", "artifact_hash"]),
        }
        for k in range(n_evidence)
    ]
    findings = (
        []
        if passed
        else [
            {
                "category": rng.choice(["correctness", "scope", "regression", "security"]),
                "line": rng.randint(1, 400),
                "path": _path(rng),
                "severity": rng.choice(["low", "medium", "high"]),
                "summary": _sentence(rng, 8, 20),
            }
            for _ in range(rng.randint(1, 3))
        ]
    )
    return {
        "attempt": rm["attempt"],
        "checks": [
            {
                "evidence_ids": ["observation-0"],
                "id": "result-manifest-schema",
                "required": True,
                "status": "passed",
                "summary": _sentence(rng, 8, 14),
                "type": "schema",
            },
            {
                "diagnostics": diagnostics,
                "evidence_ids": [e["id"] for e in evidence],
                "id": "independent-review",
                "required": True,
                "status": "passed" if passed else "failed",
                "summary": _sentence(rng, 15, 30),
                "type": "review",
            },
        ],
        "decision_support": {
            "confidence": 1.0 if passed else round(rng.random(), 3),
            "rationale": _sentence(rng, 12, 24),
            "recommendation": "accept_candidate" if passed else "reject_candidate",
        },
        "evidence": evidence,
        "extensions": {
            "org.idkmesh.evaluator_plan.digest": plan_digest,
            "org.idkmesh.evaluator_plan.id": wu["id"] + "/evaluator-v0.4",
            "org.idkmesh.local_verifier.backend": "unified_diff",
        },
        "findings": findings,
        "finished_at": _time(rng, start + 3),
        "id": rm["id"] + "/patch-verification",
        "independence": {
            "correlation_notes": _sentence(rng, 15, 30),
            "independent_from_worker": True,
            "shared_model_family": False,
            "shared_runtime": False,
            "worker_id_observed": rm["worker"]["id"],
        },
        "metrics": {
            "candidate_bytes": rng.randint(100, 20000),
            "required_checks_failed": 0 if passed else 1,
            "required_checks_passed": 2 if passed else 1,
        },
        "provenance": {
            "environment": _environment(
                rng, {"deterministic-patch-verifier": "0.3.0", "idkmesh-local-verifier": "0.1"}
            ),
            "result_manifest_digest": rm_digest,
            "source_revision": wu["provenance"]["source_revision"],
            "verifier_config_digest": plan_digest,
            "work_unit_digest": wu_digest,
        },
        "resources": {"compute_units": 0.0, "human_minutes": 0.0, "wall_seconds": rng.random()},
        "result_manifest_id": rm["id"],
        "schema_version": "0.1",
        "started_at": _time(rng, start + 2),
        "status": "passed" if passed else "failed",
        "verifier": {
            "adapter": "deterministic-patch-verifier",
            "adapter_version": "0.3.0",
            "id": "idkmesh-local-verifier",
            "type": "system",
        },
        "work_unit_id": wu["id"],
        "work_unit_version": wu["version"],
    }


def corpus(n: int, seed: int, signer: Any = None) -> Iterator[dict[str, Any]]:
    """``n`` documents in a realistic order; attestations only when ``signer`` is given."""
    rng = random.Random(seed)
    produced = 0
    task = 0
    base = 1_790_000_000.0  # 2026-09
    while produced < n:
        cohort = f"bench-{seed}-c{task // 50:05d}"
        revision = _hex(rng, 40)
        wu = work_unit(rng, task, cohort, revision)
        wu_digest = _digest(wu)
        group: list[dict[str, Any]] = [wu]
        plan = evaluator_plan(rng, wu, wu_digest)
        plan_digest = _digest(plan)
        group.append(plan)
        for attempt in range(1, 4):
            start = base + task * 600 + attempt * 60
            rm = result_manifest(rng, wu, wu_digest, attempt, start)
            group.append(rm)
            group.append(
                verification_result(rng, wu, wu_digest, rm, _digest(rm), plan_digest, start)
            )
        if signer is not None:
            group.append(_attestation(wu, signer))
        for doc in group:
            if produced == n:
                return
            yield doc
            produced += 1
        task += 1


def _attestation(wu: dict[str, Any], signer: Any) -> dict[str, Any]:
    from ledger.store.prepared import prepare_value
    from ledger.trust.attestation import attest_prepared

    value: dict[str, Any] = json.loads(attest_prepared(prepare_value(wu), signer).data)
    return value


def write_corpus(path: Path, n: int, seed: int, signer: Any = None) -> dict[str, int]:
    """Write the corpus as JSON Lines (insertion key order, default separators)."""
    counts: dict[str, int] = {}
    with path.open("w", encoding="utf-8") as out:
        for doc in corpus(n, seed, signer):
            kind = doc.get("provledger_kind") or _kind_of(doc)
            counts[kind] = counts.get(kind, 0) + 1
            out.write(json.dumps(doc, ensure_ascii=False))
            out.write("\n")
    return counts


def _kind_of(doc: dict[str, Any]) -> str:
    if "objective" in doc:
        return "work-unit"
    if "binding" in doc:
        return "evaluator-plan"
    if "checks" in doc:
        return "verification-result"
    return "result-manifest"


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
    cmd: list[str], *, stdin: Any = None, cwd: Path | None = None, check: bool = True
) -> dict[str, Any]:
    """Run a command; wall time, exit code, peak RSS (largest process) and tree PSS."""
    timer = ["/usr/bin/time", "-f", "%M"] if Path("/usr/bin/time").exists() else []
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            timer + cmd,
            stdin=stdin,
            stdout=subprocess.PIPE,
            stderr=err,
            cwd=cwd,
            env={**os.environ, "PROVLEDGER_NO_PROGRESS": "1"},
        )
        with TreeMemory(proc.pid) as mem:
            out, _ = proc.communicate()
        wall = time.perf_counter() - start
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
        "exit": proc.returncode,
        "stdout": out,
        "stderr": err_text,
        "max_rss_bytes": max_rss,
        "tree_pss_bytes": mem.peak_pss,
    }


def _pcts(samples: list[float]) -> dict[str, float]:
    samples = sorted(samples)

    def at(q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))] * 1000

    return {"p50_ms": at(0.50), "p99_ms": at(0.99), "max_ms": samples[-1] * 1000}


def _verify_core(db: Path) -> dict[str, Any]:
    """Only digest, canonical-form and tree checks, in this one process (no schema,
    index columns, references, signatures): the part of ``verify`` every entry needs."""
    import hmac
    import sqlite3

    from ledger.audit.full import CompactRange
    from ledger.audit.object_check import NodeReader
    from ledger.encoding._fast import parse_encode
    from ledger.log import merkle
    from ledger.log.leaf import entry_record

    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    nodes = NodeReader(conn)
    frontier = CompactRange()
    bad = 0
    start = time.perf_counter()
    cpu = time.process_time()
    rows = conn.execute(
        "SELECT e.seq, e.kind, e.digest, e.appended_at, o.data FROM entries e"
        " JOIN objects o ON o.seq = e.seq ORDER BY e.seq"
    )
    for seq, kind, digest, appended_at, data in rows:
        if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
            bad += 1
        if kind != "blob" and parse_encode(data).canonical != data:
            bad += 1
        leaf = merkle.leaf_hash(entry_record(seq, kind, digest, appended_at))
        for level, idx, value in frontier.append(leaf):
            row = nodes.get(level, idx)
            if row is None or not hmac.compare_digest(row[0], value):
                bad += 1
    wall = time.perf_counter() - start
    conn.close()
    return {
        "entries": frontier.size,
        "problems": bad,
        "wall_s": wall,
        "cpu_s": time.process_time() - cpu,
        "entries_per_s": frontier.size / wall if wall else None,
    }


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
    vr = [d for d in digests if (o := store.get(d)) is not None and o.kind == "verification-result"]
    if not vr:
        return {"status": "n/a: no verification result sampled"}
    times = []
    try:
        for digest in vr:
            t = time.perf_counter()
            fn(store, digest)
            times.append(time.perf_counter() - t)
    except Exception as exc:  # the signature is not ours to know: report, do not crash
        return {"status": f"n/a: {fn.__name__}(store, digest) raised {type(exc).__name__}: {exc}"}
    return {"status": "ok", "function": f"cohorts.provenance.{fn.__name__}", **_pcts(times)}


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
        peers["sqlite_utils_insert"] = {"wall_s": su["wall_s"], "objects_per_s": n / su["wall_s"]}
        peers["provledger_over_sqlite_utils"] = ours_s / su["wall_s"]
    if shutil.which("git"):
        stream = work / "git.stream"
        _git_stream(db, stream)
        repo = work / "peer.git"
        subprocess.run(["git", "init", "--bare", "--quiet", str(repo)], check=True)
        with stream.open("rb") as fh:
            git = run(["git", "--git-dir", str(repo), "fast-import", "--quiet"], stdin=fh)
        stream.unlink()
        peers["git_fast_import"] = {"wall_s": git["wall_s"], "objects_per_s": n / git["wall_s"]}
        peers["provledger_over_git"] = ours_s / git["wall_s"]
    return peers


def bench_size(n: int, args: argparse.Namespace, base: Path) -> dict[str, Any]:
    work = base / f"n{n}"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    db = work / "ledger.db"
    run([PROVLEDGER, "init", "--db", str(db), "--json"])
    signer = None
    if not args.no_attestations:
        from ledger.trust.keys import Ed25519Signer

        signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    jsonl = work / "corpus.jsonl"
    t = time.perf_counter()
    counts = write_corpus(jsonl, n, args.seed, signer)
    gen_s = time.perf_counter() - t
    res: dict[str, Any] = {
        "objects": n,
        "by_kind": counts,
        "jsonl_bytes": jsonl.stat().st_size,
        "generate_s": gen_s,
    }

    imp_cmd = [PROVLEDGER, "import", "jsonl", str(jsonl), "--db", str(db), "--json"]
    imp_cmd += ["--batch", str(args.batch)]
    if args.workers:
        imp_cmd += ["--workers", str(args.workers)]
    imp = run(imp_cmd)
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
    }
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

    run([PROVLEDGER, "checkpoint", "--db", str(db), "--json"])
    ver = run([PROVLEDGER, "verify", "--db", str(db), "--json"], check=False)
    report = json.loads(ver["stdout"]) if ver["stdout"] else {}
    res["verify"] = {
        "wall_s": ver["wall_s"],
        "entries_per_s": n / ver["wall_s"],
        "exit": ver["exit"],
        "findings": len(report.get("findings", [])),
        "max_rss_mb": (ver["max_rss_bytes"] or 0) / 2**20,
        "tree_pss_mb": ver["tree_pss_bytes"] / 2**20,
    }

    res["verify_core_in_process"] = _verify_core(db)
    proofs = _proofs(db, args.queries, args.seed)
    digest = proofs.pop("sample_digest")
    inc = run([PROVLEDGER, "proof", "inclusion", digest, "--db", str(db), "--json"])
    con = run([PROVLEDGER, "proof", "consistency", str(max(1, n // 2)), "--db", str(db), "--json"])
    proofs["cli_inclusion_wall_ms"] = inc["wall_s"] * 1000
    proofs["cli_consistency_wall_ms"] = con["wall_s"] * 1000
    proofs["queries"] = args.queries
    res["proofs"] = proofs
    if not args.keep:
        shutil.rmtree(work)
    return res


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


def _pg_settings(admin_url: str) -> dict[str, str]:
    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        return {k: str(conn.execute(f"SHOW {k}").fetchone()[0]) for k in PG_SETTINGS}


def _pg_database(admin_url: str, name: str) -> str:
    """Create (afresh) database ``name`` on the server; return its URL."""
    import urllib.parse

    import psycopg

    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urllib.parse.urlsplit(admin_url)
    return urllib.parse.urlunsplit(parts._replace(path="/" + name))


def _concurrent_import(db: str, shards: list[Path], batch: int) -> float:
    """Start one ``import jsonl`` per shard at once; wall seconds until all are done."""
    env = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
    cmd = [PROVLEDGER, "import", "jsonl", "--db", db, "--batch", str(batch), "--workers", "1"]
    start = time.perf_counter()
    procs = [
        subprocess.Popen(
            [*cmd, str(s)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
        )
        for s in shards
    ]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"import exited {proc.returncode}: {err.decode()[-2000:]}")
    return time.perf_counter() - start


def _proof_latency(db: str, queries: int, seed: int) -> dict[str, Any]:
    from ledger.log.checkpoints import prove_inclusion
    from ledger.store.backends import open_store
    from ledger.store.location import db_location

    rng = random.Random(seed)
    with open_store(db_location(db), readonly=True) as store:
        size = store.size()
        digests = [store.get_by_seq(rng.randrange(size)).digest for _ in range(queries)]  # type: ignore[union-attr]
        times = []
        for digest in digests:
            t = time.perf_counter()
            prove_inclusion(store, digest)
            times.append(time.perf_counter() - t)
    return _pcts(times)


def bench_writers(n: int, args: argparse.Namespace, base: Path) -> dict[str, Any]:
    """Import rate with 1, 4 and 8 concurrent writers on SQLite and on PostgreSQL.

    The corpus is split into ``w`` disjoint shards (task groups kept together), one
    ``import jsonl --workers 1`` process per shard, all started at once. On the
    8-writer ledgers: inclusion-proof latency (in process) and ``verify`` rate.
    """
    work = base / f"writers-n{n}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    jsonl = work / "corpus.jsonl"
    write_corpus(jsonl, n, args.seed)
    lines = jsonl.read_text("utf-8").splitlines(keepends=True)
    groups = [lines[i : i + GROUP] for i in range(0, len(lines), GROUP)]
    out: dict[str, Any] = {"objects": n, "batch": args.batch, "runs": []}
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
            keys = ["--log-key", str(work / f"{backend}-{w}.log.key")]
            keys += ["--authority-key", str(work / f"{backend}-{w}.auth.key")]
            run([PROVLEDGER, "init", "--db", db, *keys, "--json"])
            print(f"   {backend} writers={w}", file=sys.stderr, flush=True)
            wall = _concurrent_import(db, shards, args.batch)
            row: dict[str, Any] = {
                "backend": backend,
                "writers": w,
                "import_wall_s": wall,
                "objects_per_s": n / wall,
            }
            if w == counts[-1]:
                run([PROVLEDGER, "checkpoint", "--db", db, "--log-key", keys[1], "--json"])
                ver = run([PROVLEDGER, "verify", "--db", db, "--json"], check=False)
                row["verify_exit"] = ver["exit"]
                row["verify_entries_per_s"] = n / ver["wall_s"]
                row["inclusion_proof"] = _proof_latency(db, args.queries, args.seed)
            out["runs"].append(row)
    return out


def writers_table(result: dict[str, Any]) -> str:
    rows = [
        "| objects | backend | writers | import objects/s | verify entries/s | proof p50 / p99 ms |"
    ]
    rows.append("|---:|---|---:|---:|---:|---|")
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
    add("import canonical MB/s", lambda r: f"{r['import']['canonical_mb_per_s']:.1f}")
    add("import peak RSS MB (largest proc)", lambda r: f"{r['import']['max_rss_mb']:.0f}")
    add("import peak PSS MB (process tree)", lambda r: f"{r['import']['tree_pss_mb']:.0f}")
    add("re-import (all present) objects/s", lambda r: f"{r['import_rerun']['objects_per_s']:,.0f}")
    add("sqlite-utils insert objects/s", lambda r: _rate(r["peers"]["sqlite_utils_insert"]))
    add("git fast-import objects/s", lambda r: _rate(r["peers"]["git_fast_import"]))
    add("provledger / sqlite-utils (time)", lambda r: _ratio(r, "sqlite_utils"))
    add("provledger / git (time)", lambda r: _ratio(r, "git"))
    add("verify entries/s", lambda r: f"{r['verify']['entries_per_s']:,.0f}")
    add("verify findings", lambda r: str(r["verify"]["findings"]))
    add(
        "digest+canonical+tree checks/s (1 proc)",
        lambda r: f"{r['verify_core_in_process']['entries_per_s']:,.0f}",
    )
    add("verify peak RSS MB (largest proc)", lambda r: f"{r['verify']['max_rss_mb']:.0f}")
    add("verify peak PSS MB (process tree)", lambda r: f"{r['verify']['tree_pss_mb']:.0f}")
    add("inclusion proof p50/p99 ms", lambda r: _p50_99(r["proofs"]["inclusion"]))
    add("consistency proof p50/p99 ms", lambda r: _p50_99(r["proofs"]["consistency"]))
    add("provenance p50/p99 ms", lambda r: _p50_99(r["proofs"]["provenance"]))
    add("CLI proof inclusion wall ms", lambda r: f"{r['proofs']['cli_inclusion_wall_ms']:.0f}")
    add("CLI proof consistency wall ms", lambda r: f"{r['proofs']['cli_consistency_wall_ms']:.0f}")
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
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--workdir", type=Path, default=None, help="default: a temp directory")
    parser.add_argument("--keep", action="store_true", help="keep the ledgers and corpora")
    parser.add_argument("--no-peers", action="store_true", help="skip sqlite-utils and git")
    parser.add_argument("--no-attestations", action="store_true")
    parser.add_argument(
        "--postgres",
        metavar="ADMIN_URL",
        default=None,
        help="instead: SQLite vs PostgreSQL with concurrent writers; the server at ADMIN_URL"
        " gets one scratch database per run",
    )
    parser.add_argument("--writer-counts", default="1,4,8", help="with --postgres")
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
        result["postgres_settings"] = _pg_settings(args.postgres)
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


if __name__ == "__main__":
    raise SystemExit(main())
