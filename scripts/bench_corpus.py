"""The benchmark's synthetic corpus: seeded, reproducible IDKMesh-shaped documents.

Per task one WorkUnit (~3 KB), one EvaluatorPlan (~1.3 KB) and three attempts, each a
ResultManifest (~2 KB) and a VerificationResult (3-13 KB), plus one attestation
(~0.5 KB) over the WorkUnit when a signer is given. References chain for real: plans
bind their WorkUnit's digest, results their manifest's and WorkUnit's.

``corpus(n, seed, signer)`` yields the documents; ``write_corpus`` writes them as JSON
Lines. Used by ``scripts/bench.py`` and imported by tests (``pythonpath`` in
pyproject.toml puts ``scripts/`` on the test path).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ledger.encoding.canonical import canonicalize
from ledger.store.prepared import prepare_value
from ledger.trust.attestation import attest_prepared

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
