"""The unified-diff verification pipeline shared by plan versions 0.2-0.4.

Every patch plan version runs the same structural, provenance, scope, log and status
observations; only the semantic rule differs, and each version module supplies its
own. ``independent-review`` passes exactly when every observation passes;
``result-manifest-schema`` passes because the ResultManifest was schema-checked and
bound to the WorkUnit before evaluation (otherwise there is no evaluation at all).
Candidate code is never executed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ledger.encoding.canonical import canonicalize
from verifiers.checks import (
    SubCheck,
    artifact_digest_check,
    logs_check,
    read_artifact,
    scope_check,
    size_check,
    worker_status_check,
)
from verifiers.diff import ChangedLine, DiffReading, ParsedDiff, parse_patch
from verifiers.errors import DiffError, SovereigntyError
from verifiers.fields import require_int, require_str, require_str_list
from verifiers.model.json import as_list, at
from verifiers.report import Check, Evidence, InputArtifact, ResultFinding, VerifierReport
from verifiers.spec import EvaluationInput

PATCH_VALIDATORS = frozenset({"result-manifest-schema", "independent-review"})
LOG_TYPES = frozenset({"stdout", "stderr", "trace", "tool_calls", "other"})
_BACKEND = "SOV-PLAN-BACKEND"


@dataclass(frozen=True)
class PatchBackend:
    """The backend members every unified-diff plan version shares."""

    candidate_artifact_id: str
    max_candidate_bytes: int
    max_log_bytes: int
    required_log_types: tuple[str, ...]


def parse_backend(plan: Mapping[str, object]) -> PatchBackend:
    """Read the shared backend members; a malformed backend is refused, not guessed."""
    if at(plan, "backend", "type") != "unified_diff":
        raise SovereigntyError(
            _BACKEND, "plan backend type", at(plan, "backend", "type"), "unified_diff"
        )
    for flag in ("require_nonempty_patch", "verify_log_digests"):
        if at(plan, "backend", flag) is not True:
            value = at(plan, "backend", flag)
            raise SovereigntyError(_BACKEND, f"plan backend.{flag}", value, True)
    log_types = require_str_list(plan, _BACKEND, "backend", "required_log_types", non_empty=True)
    unknown = sorted(set(log_types) - LOG_TYPES)
    if unknown or len(set(log_types)) != len(log_types):
        raise SovereigntyError(
            _BACKEND, "plan backend.required_log_types", log_types, f"unique of {sorted(LOG_TYPES)}"
        )
    return PatchBackend(
        candidate_artifact_id=require_str(plan, _BACKEND, "candidate_artifact_id"),
        max_candidate_bytes=require_int(
            plan, _BACKEND, "backend", "max_candidate_bytes", minimum=1
        ),
        max_log_bytes=require_int(plan, _BACKEND, "backend", "max_log_bytes", minimum=1),
        required_log_types=tuple(log_types),
    )


def required_strings(plan: Mapping[str, object], member: str) -> tuple[str, ...]:
    """A rule list from the backend: non-empty, unique, non-empty strings."""
    values = require_str_list(plan, _BACKEND, "backend", member, non_empty=True)
    if len(set(values)) != len(values) or any(not v for v in values):
        raise SovereigntyError(
            _BACKEND, f"plan backend.{member}", values, "unique non-empty strings"
        )
    return tuple(values)


@dataclass(frozen=True)
class RuleResult:
    """A semantic rule's verdict. ``detail`` joins the patch-semantic observation;
    ``evidence`` are extra inline observations the rule owns."""

    passed: bool
    summary: str
    detail: Mapping[str, object] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    metrics: Mapping[str, int] = field(default_factory=dict)
    findings: tuple[ResultFinding, ...] = ()


PatchRule = Callable[[ParsedDiff | None], RuleResult]


def line_ref(line: ChangedLine) -> dict[str, object]:
    """Where a changed line sits: file, line number on its side, text, patch line."""
    return {
        "file": line.path,
        "line": line.number,
        "text": line.text,
        "patch_line": line.patch_line,
    }


def match_records(
    lines: Sequence[ChangedLine], required: Sequence[str], matches: Callable[[str, str], bool]
) -> list[dict[str, object]]:
    """For each required value: matched or not, occurrence count and the first match."""
    records = []
    for value in required:
        hits = [line for line in lines if matches(value, line.text)]
        records.append(
            {
                "required": value,
                "matched": bool(hits),
                "occurrences": len(hits),
                "first_match": line_ref(hits[0]) if hits else None,
            }
        )
    return records


def missing_findings(
    records: Sequence[Mapping[str, object]], what: str
) -> tuple[ResultFinding, ...]:
    """One finding per unmatched required value; ``what`` names the rule."""
    return tuple(
        ResultFinding("high", "correctness", f"Required {what} not found: {r['required']!r}.")
        for r in records
        if not r["matched"]
    )


def _structure(
    art_data: bytes | None, reason: str, reading: DiffReading
) -> tuple[ParsedDiff | None, SubCheck]:
    if art_data is None:
        return None, SubCheck(
            "structure",
            False,
            f"patch not parsed: {reason}",
            {"valid": False, "error": {"reason": reason}},
            (ResultFinding("high", "correctness", f"Candidate patch not parsed: {reason}."),),
        )
    try:
        parsed = parse_patch(art_data, reading)
    except DiffError as exc:
        error = {
            "rule": exc.rule,
            "patch_line": exc.patch_line,
            "found": exc.found,
            "expected": exc.expected,
            "message": str(exc),
        }
        return None, SubCheck(
            "structure",
            False,
            str(exc),
            {"valid": False, "error": error},
            (ResultFinding("high", "correctness", f"Candidate patch is not a valid diff: {exc}."),),
        )
    files = [
        {
            "old_path": f.old_path,
            "new_path": f.new_path,
            "hunks": len(f.hunks),
            "added": len(f.added),
            "removed": len(f.removed),
        }
        for f in parsed.files
    ]
    summary = f"valid unified diff: {len(parsed.files)} file section(s)"
    return parsed, SubCheck("structure", True, summary, {"valid": True, "files": files})


def _nonempty(size: int | None, parsed: ParsedDiff | None) -> SubCheck:
    changed = len(parsed.added_lines) + len(parsed.removed_lines) if parsed is not None else 0
    passed = bool(size) and changed > 0
    summary = f"{changed} added or removed line(s)" + ("" if passed else ", expected at least 1")
    findings = (
        () if passed else (ResultFinding("high", "correctness", "Candidate patch is empty."),)
    )
    return SubCheck("non-empty", passed, summary, {"changed_lines": changed}, findings)


def run_patch(
    inp: EvaluationInput, backend: PatchBackend, rule: PatchRule, *, semantic_mode: str
) -> VerifierReport:
    """Observe the candidate patch and judge it with ``rule``."""
    root = inp.candidate_root
    art = read_artifact(
        inp.manifest, backend.candidate_artifact_id, root, max_bytes=backend.max_candidate_bytes
    )
    digest_sc = artifact_digest_check(art)
    size_sc = size_check(art, backend.max_candidate_bytes)
    reason = art.problem or (
        f"{art.file.status}: {art.file.detail}" if art.file is not None else "no artifact"
    )
    parsed, structure_sc = _structure(art.data, reason, inp.release.diff)
    nonempty_sc = _nonempty(art.file.size if art.file is not None else None, parsed)
    scope_sc = scope_check(parsed.changed_paths if parsed is not None else None, inp.work_unit)
    logs_sc, log_inputs = logs_check(
        inp.manifest,
        root,
        max_log_bytes=backend.max_log_bytes,
        required_types=backend.required_log_types,
    )
    status_sc = worker_status_check(inp.manifest)
    outcome = rule(parsed)
    semantic_sc = SubCheck("semantic", outcome.passed, outcome.summary, {}, outcome.findings)
    subchecks = (
        digest_sc,
        size_sc,
        structure_sc,
        nonempty_sc,
        scope_sc,
        logs_sc,
        status_sc,
        semantic_sc,
    )
    review_passed = all(sc.passed for sc in subchecks)

    if art.file is not None and art.file.observed and art.file.digest is not None:
        patch_hash = Evidence(
            "candidate-patch-hash",
            "artifact_hash",
            art.locator,
            art.file.digest,
            "SHA-256 observed directly from the candidate patch bytes.",
            media_type="text/x-diff",
        )
    else:
        patch_hash = Evidence.inline(
            "candidate-patch-hash",
            "trace",
            f"Candidate patch bytes were not observed ({reason}).",
            art.as_json(),
        )
    observed_added = [line_ref(x) for x in parsed.added_lines] if parsed else []
    observed_removed = [line_ref(x) for x in parsed.removed_lines] if parsed else []
    semantic_body = {
        "artifact": {**art.as_json(), **size_sc.observation, **digest_sc.observation},
        "structure": structure_sc.observation,
        "non_empty": nonempty_sc.observation,
        "semantic_mode": semantic_mode,
        "rule_passed": outcome.passed,
        "rule_summary": outcome.summary,
        "observed_added_lines": observed_added,
        "observed_removed_lines": observed_removed,
        **outcome.detail,
    }
    evidence = (
        Evidence(
            "result-manifest-canonical",
            "attestation",
            "inline://result-manifest-canonical",
            inp.manifest_digest,
            "Digest of the schema-valid ResultManifest bound to the WorkUnit before evaluation.",
        ),
        patch_hash,
        Evidence.inline(
            "log-integrity-observation",
            "trace",
            "Required log coverage and independently recomputed log digests and sizes.",
            logs_sc.observation,
        ),
        Evidence.inline(
            "patch-scope-observation",
            "static_analysis",
            "Changed paths of the parsed diff against the WorkUnit's scope patterns.",
            scope_sc.observation,
        ),
        Evidence.inline(
            "patch-semantic-observation",
            "test_output",
            f"Structure and semantic rule over validated hunks only: {outcome.summary}.",
            semantic_body,
        ),
        Evidence.inline(
            "worker-status-observation",
            "trace",
            "Worker execution status as reported in the ResultManifest.",
            status_sc.observation,
        ),
        *outcome.evidence,
    )
    diagnostics = canonicalize(
        {sc.name: {"passed": sc.passed, "summary": sc.summary} for sc in subchecks}
    ).decode("utf-8")
    failed = [sc.name for sc in subchecks if not sc.passed]
    review = Check(
        "independent-review",
        "passed" if review_passed else "failed",
        "Metadata-only patch review passed: artifact digest, size, diff structure, non-empty,"
        f" scope, logs, worker status and {semantic_mode}."
        if review_passed
        else f"Metadata-only patch review failed: {', '.join(failed)}.",
        tuple(e.id for e in evidence[1:]),
        diagnostics,
    )
    manifest_check = Check(
        "result-manifest-schema",
        "passed",
        "Worker ResultManifest is schema-valid and bound to the exact WorkUnit.",
        ("result-manifest-canonical",),
    )
    metrics = {
        "candidate_bytes": art.file.size if art.file is not None and art.file.size else 0,
        "changed_path_count": len(parsed.changed_paths) if parsed is not None else 0,
        "log_count": len(as_list(logs_sc.observation["logs"])),
        "added_line_count": len(observed_added),
        "removed_line_count": len(observed_removed),
        **outcome.metrics,
    }
    inputs: list[InputArtifact] = []
    candidate_input = art.as_input()
    if candidate_input is not None:
        inputs.append(candidate_input)
    inputs.extend(log_inputs)
    findings = tuple(f for sc in subchecks for f in sc.findings)
    return VerifierReport(
        checks=(manifest_check, review),
        evidence=evidence,
        findings=findings,
        metrics=metrics,
        inputs=tuple(inputs),
        summary=outcome.summary,
        extensions={
            "org.idkmesh.local_verifier.backend": "unified_diff",
            "org.idkmesh.local_verifier.semantic_match_mode": semantic_mode,
        },
    )
