"""Evaluate one candidate under one EvaluatorPlan and build its VerificationResult.

``evaluate`` is pure apart from reading the candidate root: it runs the sovereignty
pre-checks (nothing of the candidate is read if they fail), routes the plan to the
verifier of its own ``schema_version``, builds a VerificationResult v0.1 and runs the
post-checks. It never writes files, never executes or imports candidate content, and
calls ``clock`` exactly twice (start, finish). Same inputs, same candidate bytes and
same clock readings give byte-identical ``result_bytes`` (RFC 8785); the result
carries no host-specific environment fields for that reason.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ledger.encoding.canonical import canonicalize
from ledger.encoding.digest import sha256_digest
from verifiers.errors import VerifierError
from verifiers.model import EvaluatorPlan, ResultManifest, VerificationResult, WorkUnit
from verifiers.model.json import at

if TYPE_CHECKING:
    from ledger.encoding.values import JSONObject
from verifiers.releases import CURRENT, RELEASE_KEY, TOOL_NAME, Release, release
from verifiers.report import Evidence, InputArtifact, VerifierReport
from verifiers.sovereignty import (
    SovereigntyReport,
    Validate,
    check_post_evaluation,
    check_pre_evaluation,
)
from verifiers.spec import EvaluationInput

Clock = Callable[[], datetime]
_ID_RE = re.compile(r"[a-z0-9][a-z0-9._/-]{2,127}\Z")
_CHECK_TYPES = frozenset(
    {"test", "review", "schema", "lint", "security", "formal", "reproduction", "policy", "other"}
)
_DEFAULT_CHECK_TYPES = {
    "result-manifest-schema": "schema",
    "independent-review": "review",
    "artifact-digest": "reproduction",
    "candidate-scope": "review",
    "independent-acceptance": "test",
}
BEHAVIORAL_CLAIM_KEY = "org.idkmesh.local_verifier.behavioral_correctness_claim"


@dataclass(frozen=True)
class VerificationOutcome:
    """A finished evaluation. ``result_bytes`` (RFC 8785) is the record.

    ``evidence`` lists every evidence item; those with ``body`` are inline observations
    whose digest is ``sha256(body)``. ``inputs`` are the worker files read (candidate,
    logs) with their digests, for the ledger to keep as blobs.
    """

    result_bytes: bytes
    result_digest: str
    status: Literal["passed", "failed"]
    recommendation: Literal["accept_candidate", "reject_candidate"]
    plan_schema_version: str
    plan_digest: str
    summary: str
    sovereignty: SovereigntyReport
    evidence: tuple[Evidence, ...]
    inputs: tuple[InputArtifact, ...]

    @property
    def result(self) -> JSONObject:
        """A fresh parse of ``result_bytes`` (mutating it never changes the record)."""
        value: JSONObject = json.loads(self.result_bytes)  # built here: an object
        return value

    @property
    def document(self) -> VerificationResult:
        """The result as the protocol model's typed document (parsed from its bytes)."""
        return VerificationResult.parse(self.result_bytes)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def exit_code(self) -> int:
        """0 when the candidate passed, 1 otherwise (upstream's ``verify`` convention)."""
        return 0 if self.passed else 1

    @property
    def observations(self) -> tuple[tuple[str, bytes], ...]:
        """(digest, canonical bytes) of each inline observation."""
        return tuple((e.digest, e.body) for e in self.evidence if e.body is not None)


def rfc3339(moment: datetime) -> str:
    """UTC timestamp with ``Z``; microseconds only when non-zero."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise VerifierError(
            f"clock reading without a time zone, got {moment.isoformat()},"
            " expected an aware datetime"
        )
    utc = moment.astimezone(UTC)
    spec = "microseconds" if utc.microsecond else "seconds"
    return utc.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def result_id(manifest_id: object, suffix: str, plan_digest: str) -> str:
    """``<manifest id>/<suffix>/<12 hex of the plan digest>``, hashed when too long.

    Including the plan digest keeps results of different plans on one candidate apart.
    """
    tag = plan_digest.removeprefix("sha256:")[:12]
    base = manifest_id if isinstance(manifest_id, str) else ""
    candidate = f"{base}/{suffix}/{tag}"
    if _ID_RE.match(candidate):
        return candidate
    return f"verification/{hashlib.sha256(base.encode('utf-8', 'replace')).hexdigest()[:40]}/{tag}"


def _check_type(work_unit: WorkUnit, validator_id: str) -> str:
    validators = work_unit.value.get("validators")
    for item in validators if isinstance(validators, list) else []:
        if at(item, "id") == validator_id:
            declared = at(item, "type")
            if isinstance(declared, str) and declared in _CHECK_TYPES:
                return declared
            return "other"
    return _DEFAULT_CHECK_TYPES.get(validator_id, "other")


def build_result(
    *,
    work_unit: WorkUnit,
    plan: EvaluatorPlan,
    manifest: ResultManifest,
    manifest_digest: str,
    manifest_digest_scheme: str,
    plan_digest: str,
    sovereignty: SovereigntyReport,
    report: VerifierReport,
    started: datetime,
    finished: datetime,
    judged_by: Release = CURRENT,
) -> dict[str, object]:
    """The VerificationResult v0.1 for a report (pure); it names ``judged_by``."""
    spec = sovereignty.spec
    by_id = {c.id: c for c in report.checks}
    checks: list[dict[str, object]] = []
    for vid in sovereignty.required_validators:
        check = by_id[vid]
        item: dict[str, object] = {
            "id": vid,
            "type": _check_type(work_unit, vid),
            "required": True,
            "status": check.status,
            "summary": check.summary,
            "evidence_ids": list(check.evidence_ids),
        }
        if check.diagnostics is not None:
            item["diagnostics"] = check.diagnostics
        checks.append(item)
    passed_count = sum(1 for c in checks if c["status"] == "passed")
    passed = passed_count == len(checks)
    wall = max(0.0, (finished - started).total_seconds())
    worker_id = manifest.recorded_worker_id
    metrics: dict[str, int] = {
        "required_checks_passed": passed_count,
        "required_checks_failed": len(checks) - passed_count,
        **report.metrics,
    }
    extensions: dict[str, object] = {
        "org.idkmesh.evaluator_plan.id": plan.id,
        "org.idkmesh.evaluator_plan.digest": plan_digest,
        "org.idkmesh.evaluator_plan.execution_mode": plan.value.get("execution_mode"),
        "org.idkmesh.evaluator_plan.visibility": plan.value.get("visibility"),
        "org.idkmesh.evaluator_plan.schema_version": spec.plan_schema_version,
        "org.idkmesh.local_verifier.policy_id": plan.id,
        BEHAVIORAL_CLAIM_KEY: False,
        **report.extensions,
        RELEASE_KEY: judged_by.version,
        "org.provledger.verifier.semantic_summary": report.summary,
        "org.provledger.verifier.digest_schemes": {
            "plan_binding_work_unit": sovereignty.work_unit_binding.scheme,
            "manifest_work_unit": sovereignty.manifest_work_unit.scheme,
            "plan": sovereignty.plan_digest.scheme,
            "result_manifest": manifest_digest_scheme,
        },
    }
    return {
        "schema_version": "0.1",
        "id": result_id(manifest.id, spec.result_suffix, plan_digest),
        "result_manifest_id": manifest.id,
        "work_unit_id": manifest.work_unit_id,
        "work_unit_version": manifest.work_unit_version,
        "attempt": manifest.attempt,
        "verifier": {
            "id": spec.verifier_id,
            "type": spec.verifier_type,
            "adapter": spec.adapter,
            "adapter_version": spec.adapter_version,
        },
        "independence": {
            "independent_from_worker": True,
            "worker_id_observed": worker_id,
            "shared_model_family": False,
            "shared_runtime": False,
            "correlation_notes": (
                "Plan and output are outside the candidate root; candidate code is never"
                " executed; the verifier id differs from the worker id."
            ),
        },
        "status": "passed" if passed else "failed",
        "started_at": rfc3339(started),
        "finished_at": rfc3339(finished),
        "checks": checks,
        "evidence": [e.as_json() for e in report.evidence],
        "findings": [f.as_json() for f in report.findings],
        "metrics": metrics,
        "resources": {"wall_seconds": wall, "compute_units": 0, "human_minutes": 0, "tokens": 0},
        "provenance": {
            "result_manifest_digest": manifest_digest,
            "work_unit_digest": sovereignty.work_unit_binding.digest,
            "source_revision": manifest.source_revision,
            "verifier_config_digest": plan_digest,
            "environment": {
                "tool_versions": {
                    spec.adapter: spec.adapter_version,
                    TOOL_NAME: judged_by.version,
                },
            },
        },
        "decision_support": {
            "recommendation": "accept_candidate" if passed else "reject_candidate",
            "confidence": 1,
            "rationale": (
                f"All required checks passed under EvaluatorPlan v{spec.plan_schema_version}"
                f" ({report.summary}). Decision support only, not merge authority."
                if passed
                else f"Required checks failed under EvaluatorPlan v{spec.plan_schema_version}"
                f" ({report.summary})."
            ),
        },
        "extensions": extensions,
    }


def evaluate(
    work_unit: object,
    plan: object,
    manifest: object,
    candidate_root: Path,
    plan_path: Path | None,
    output_path: Path | None,
    *,
    plan_digest: str,
    clock: Clock,
    validate: Validate,
    manifest_digest: str | None = None,
    release_version: str | None = None,
) -> VerificationOutcome:
    """Judge the candidate in ``candidate_root`` by ``plan`` (see the module docstring).

    ``release_version`` names the release of the verifiers whose reading judges
    (``verifiers.releases``; default the current one): re-running a recorded result
    passes the release it names (``releases.release_of(result).version``) and gets that
    release's verdict.

    ``plan_digest`` must be the plan's RFC 8785 or legacy digest; it becomes
    ``provenance.verifier_config_digest``. ``manifest_digest`` defaults to the
    ResultManifest's RFC 8785 digest. ``validate(kind, version, obj)`` is the schema
    check (e.g. ``ledger.schema.validation.validate``). Raises ``SovereigntyError`` when a
    rule refuses the evaluation, the one error type an unusable input raises (an unknown
    release is ``SOV-VERIFIER-RELEASE``); every candidate defect is a failed check instead.
    """
    judged_by = CURRENT if release_version is None else release(release_version)
    sovereignty = check_pre_evaluation(
        work_unit,
        plan,
        manifest,
        candidate_root=candidate_root,
        plan_path=plan_path,
        output_path=output_path,
        plan_digest=plan_digest,
        validate=validate,
    )
    # The sovereignty checks established that all three are JSON objects.
    wu, pl, rm = WorkUnit.of(work_unit), EvaluatorPlan.of(plan), ResultManifest.of(manifest)
    m_digest = manifest_digest if manifest_digest is not None else rm.digest
    started = clock()
    report = sovereignty.spec.run(
        EvaluationInput(
            work_unit=wu,
            plan=pl,
            manifest=rm,
            manifest_digest=m_digest,
            candidate_root=sovereignty.candidate_root,
            config=sovereignty.config,
            release=judged_by,
        )
    )
    finished = clock()
    result = build_result(
        work_unit=wu,
        plan=pl,
        manifest=rm,
        manifest_digest=m_digest,
        manifest_digest_scheme="rfc8785" if manifest_digest is None else "given",
        plan_digest=plan_digest,
        sovereignty=sovereignty,
        report=report,
        started=started,
        finished=finished,
        judged_by=judged_by,
    )
    check_post_evaluation(sovereignty, pl.value, result, validate=validate)
    body = canonicalize(result)
    passed = result["status"] == "passed"
    return VerificationOutcome(
        result_bytes=body,
        result_digest=sha256_digest(body),
        status="passed" if passed else "failed",
        recommendation="accept_candidate" if passed else "reject_candidate",
        plan_schema_version=sovereignty.spec.plan_schema_version,
        plan_digest=plan_digest,
        summary=report.summary,
        sovereignty=sovereignty,
        evidence=report.evidence,
        inputs=report.inputs,
    )
