"""EvaluatorPlan v0.2: deterministic-patch-verifier 0.1.1, exact added-line rule.

Rule: every ``backend.required_added_text`` value equals one complete added line of
a validated hunk (whole-line, case-sensitive equality; no trimming, no regex).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from verifiers.diff import ParsedDiff
from verifiers.patch_common import (
    PATCH_VALIDATORS,
    PatchBackend,
    PatchRule,
    RuleResult,
    match_records,
    missing_findings,
    parse_backend,
    required_strings,
    run_patch,
)
from verifiers.report import VerifierReport
from verifiers.spec import EvaluationInput, VerifierSpec

SEMANTIC_MODE = "added_line_exact"


@dataclass(frozen=True)
class Config:
    backend: PatchBackend
    required_added_text: tuple[str, ...]


def parse_config(plan: Mapping[str, object]) -> Config:
    return Config(parse_backend(plan), required_strings(plan, "required_added_text"))


def exact_line_rule(required: tuple[str, ...]) -> PatchRule:
    """The v0.2 rule as a function of the parsed patch (None: did not parse)."""

    def rule(parsed: ParsedDiff | None) -> RuleResult:
        lines = parsed.added_lines if parsed is not None else ()
        records = match_records(lines, required, lambda value, text: value == text)
        matched = sum(1 for r in records if r["matched"])
        summary = f"matched exact added lines: {matched} of {len(required)}"
        if parsed is None:
            summary += " (patch did not parse)"
        return RuleResult(
            passed=parsed is not None and matched == len(required),
            summary=summary,
            detail={
                "required_added_text": list(required),
                "exact_line_matches": records,
                "missing_added_text": [r["required"] for r in records if not r["matched"]],
            },
            metrics={
                "required_added_text_count": len(required),
                "matched_added_text_count": matched,
            },
            findings=missing_findings(records, "exact added line"),
        )

    return rule


def run(inp: EvaluationInput) -> VerifierReport:
    config: Config = inp.config
    rule = exact_line_rule(config.required_added_text)
    return run_patch(inp, config.backend, rule, semantic_mode=SEMANTIC_MODE)


SPEC = VerifierSpec(
    plan_schema_version="0.2",
    adapter="deterministic-patch-verifier",
    adapter_version="0.1.1",
    implemented_validators=PATCH_VALIDATORS,
    semantic_mode=SEMANTIC_MODE,
    description="each required_added_text equals one complete added line",
    parse_config=parse_config,
    run=run,
    result_suffix="patch-verification",
)
