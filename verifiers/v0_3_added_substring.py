"""EvaluatorPlan v0.3: deterministic-patch-verifier 0.2.0, added-line substring rule.

Rule (``added_line_substring_all``): every ``backend.required_added_substrings`` value
is a contiguous, case-sensitive substring of at least one single added line of a
validated hunk. Matching never spans lines and is not a regex.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from verifiers.diff import ChangedLine, ParsedDiff
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
from verifiers.report import Evidence, VerifierReport
from verifiers.spec import EvaluationInput, VerifierSpec

SEMANTIC_MODE = "added_line_substring_all"


@dataclass(frozen=True)
class Config:
    backend: PatchBackend
    required_added_substrings: tuple[str, ...]


def parse_config(plan: Mapping[str, object]) -> Config:
    return Config(parse_backend(plan), required_strings(plan, "required_added_substrings"))


def substring_observation(
    lines: tuple[ChangedLine, ...],
    required: tuple[str, ...],
    *,
    side: str,
    mode: str,
    evidence_id: str,
    description: str,
) -> tuple[int, list[dict[str, object]], Evidence]:
    """Match each required substring against single lines of one side of the diff."""
    records = match_records(lines, required, lambda value, text: value in text)
    matched = sum(1 for r in records if r["matched"])
    summary = f"matched {side} substrings: {matched} of {len(required)}"
    body = {
        "semantic_mode": mode,
        f"required_{side}_substrings": list(required),
        "matches": records,
        "matched_count": matched,
        "required_count": len(required),
        "missing_substrings": [r["required"] for r in records if not r["matched"]],
        "summary": summary,
    }
    return matched, records, Evidence.inline(evidence_id, "test_output", description, body)


def added_substring_rule(required: tuple[str, ...]) -> PatchRule:
    """The v0.3 rule as a function of the parsed patch (None: did not parse)."""

    def rule(parsed: ParsedDiff | None) -> RuleResult:
        lines = parsed.added_lines if parsed is not None else ()
        matched, records, evidence = substring_observation(
            lines,
            required,
            side="added",
            mode=SEMANTIC_MODE,
            evidence_id="added-substring-semantic-observation",
            description="Case-sensitive substring matching within single added lines (v0.3).",
        )
        summary = f"matched added substrings: {matched} of {len(required)}"
        return RuleResult(
            passed=parsed is not None and matched == len(required),
            summary=summary if parsed is not None else summary + " (patch did not parse)",
            evidence=(evidence,),
            metrics={"required_substring_count": len(required), "matched_substring_count": matched},
            findings=missing_findings(records, "added-line substring"),
        )

    return rule


def run(inp: EvaluationInput) -> VerifierReport:
    config: Config = inp.config
    return run_patch(
        inp,
        config.backend,
        added_substring_rule(config.required_added_substrings),
        semantic_mode=SEMANTIC_MODE,
    )


SPEC = VerifierSpec(
    plan_schema_version="0.3",
    adapter="deterministic-patch-verifier",
    adapter_version="0.2.0",
    implemented_validators=PATCH_VALIDATORS,
    semantic_mode=SEMANTIC_MODE,
    description="each required_added_substrings value is a substring of one added line",
    parse_config=parse_config,
    run=run,
    result_suffix="patch-verification",
)
