"""EvaluatorPlan v0.1: deterministic-json-verifier 0.1 over one JSON candidate.

Validators (exactly these): ``artifact-digest`` (observed sha256 equals the
ResultManifest's), ``candidate-scope`` (the candidate root holds exactly the plan's
``allowed_files``, all regular files, no symlinks) and ``independent-acceptance``
(the candidate is at most ``max_candidate_bytes``, strict JSON, and equal to
``required_json``: same members, same strings, numbers equal by value, booleans never
equal to numbers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ledger.confined import list_tree, locator_problem
from ledger.encoding.canonical import parse_strict
from ledger.errors import LedgerError
from verifiers.checks import artifact_digest_check, read_artifact
from verifiers.errors import SovereigntyError
from verifiers.fields import require_int, require_str, require_str_list
from verifiers.model.json import at
from verifiers.report import Check, Evidence, ResultFinding, VerifierReport
from verifiers.spec import EvaluationInput, VerifierSpec

VALIDATORS = frozenset({"artifact-digest", "candidate-scope", "independent-acceptance"})
_CODE = "SOV-PLAN-BACKEND"


@dataclass(frozen=True)
class Config:
    candidate_artifact_id: str
    allowed_files: tuple[str, ...]
    max_candidate_bytes: int
    required_json: Mapping[str, object]


def parse_config(plan: Mapping[str, object]) -> Config:
    allowed = require_str_list(plan, _CODE, "allowed_files", non_empty=True)
    bad = [name for name in allowed if locator_problem(name) is not None]
    if bad or len(set(allowed)) != len(allowed):
        raise SovereigntyError(_CODE, "plan allowed_files", allowed, "unique safe relative paths")
    required = at(plan, "required_json")
    if not isinstance(required, dict):
        raise SovereigntyError(_CODE, "plan required_json", type(required).__name__, "an object")
    return Config(
        candidate_artifact_id=require_str(plan, _CODE, "candidate_artifact_id"),
        allowed_files=tuple(sorted(allowed)),
        max_candidate_bytes=require_int(plan, _CODE, "max_candidate_bytes", minimum=1),
        required_json=required,
    )


def json_equal(a: object, b: object) -> bool:
    """JSON value equality: numbers by value, ``true`` never equals ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(json_equal, a, b))
    if isinstance(a, dict):
        return (
            isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
        )
    return type(a) is type(b) and a == b


def run(inp: EvaluationInput) -> VerifierReport:
    config: Config = inp.config
    art = read_artifact(
        inp.manifest,
        config.candidate_artifact_id,
        inp.candidate_root,
        max_bytes=config.max_candidate_bytes,
    )
    digest_sc = artifact_digest_check(art)

    listing = list_tree(inp.candidate_root)
    scope_passed = listing.files == config.allowed_files and not listing.problems
    scope_obs = {
        "allowed_files": list(config.allowed_files),
        "observed_files": list(listing.files),
        "problems": list(listing.problems),
    }

    parse_error: str | None = None
    observed: Any = None  # the artifact's decoded bytes, shown as they are
    f = art.file
    if art.problem is not None:
        parse_error = art.problem
    elif f is None or not f.observed:
        parse_error = f"candidate not read ({f.status}: {f.detail})" if f else "not read"
    elif f.data is None:
        parse_error = f"candidate is {f.size} bytes, exceeding {config.max_candidate_bytes}"
    else:
        try:
            observed = parse_strict(f.data)
        except LedgerError as exc:
            parse_error = str(exc)
    accepted = parse_error is None and json_equal(observed, config.required_json)
    acceptance_obs = {
        "expected": config.required_json,
        "observed": observed,
        "parse_error": parse_error,
        "equal": accepted,
    }

    if f is not None and f.observed and f.digest is not None:
        hash_evidence = Evidence(
            "candidate-artifact-hash",
            "artifact_hash",
            art.locator,
            f.digest,
            "SHA-256 observed directly from the candidate artifact bytes.",
        )
    else:
        hash_evidence = Evidence.inline(
            "candidate-artifact-hash",
            "trace",
            "Candidate artifact bytes were not observed.",
            art.as_json(),
        )
    evidence = (
        hash_evidence,
        Evidence.inline(
            "candidate-scope-observation",
            "trace",
            "Allowed and observed candidate file lists.",
            scope_obs,
        ),
        Evidence.inline(
            "acceptance-observation",
            "test_output",
            "Verifier-owned expected JSON and the observed candidate value.",
            acceptance_obs,
        ),
    )
    checks = (
        Check(
            "artifact-digest",
            "passed" if digest_sc.passed else "failed",
            digest_sc.summary,
            ("candidate-artifact-hash",),
        ),
        Check(
            "candidate-scope",
            "passed" if scope_passed else "failed",
            "candidate root holds exactly the allowed files"
            if scope_passed
            else f"candidate files {list(listing.files)} (problems {list(listing.problems)}),"
            f" expected exactly {list(config.allowed_files)}",
            ("candidate-scope-observation",),
        ),
        Check(
            "independent-acceptance",
            "passed" if accepted else "failed",
            "candidate JSON equals the verifier-owned expectation"
            if accepted
            else "candidate JSON does not equal the verifier-owned expectation",
            ("acceptance-observation",),
            parse_error or "",
        ),
    )
    findings: list[ResultFinding] = list(digest_sc.findings)
    if not scope_passed:
        findings.append(
            ResultFinding("high", "scope", "Candidate file set violates the plan's scope.")
        )
    if not accepted:
        findings.append(
            ResultFinding(
                "high",
                "correctness",
                "Candidate failed the verifier-owned JSON expectation.",
                art.locator or None,
            )
        )
    inputs = tuple(x for x in (art.as_input(),) if x is not None)
    return VerifierReport(
        checks=checks,
        evidence=evidence,
        findings=tuple(findings),
        metrics={"candidate_bytes": f.size if f is not None and f.size else 0},
        inputs=inputs,
        summary="accepted" if accepted else "candidate JSON not accepted",
    )


SPEC = VerifierSpec(
    plan_schema_version="0.1",
    adapter="deterministic-json-verifier",
    adapter_version="0.1",
    implemented_validators=VALIDATORS,
    semantic_mode=None,
    description="JSON candidate equals required_json within allowed_files and size",
    parse_config=parse_config,
    run=run,
    result_suffix="local-verification",
)
