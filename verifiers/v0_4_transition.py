"""EvaluatorPlan v0.4: deterministic-patch-verifier 0.3.0, added-and-removed rule.

Rule (``added_and_removed_line_substring_all``): the v0.3 rule over
``backend.required_added_substrings`` AND every ``backend.required_removed_substrings``
value is a contiguous, case-sensitive substring of at least one single removed line
(``removed_line_substring_all``). An inert addition that leaves the unsafe code in
place therefore fails: nothing was removed.
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
    missing_findings,
    parse_backend,
    required_strings,
    run_patch,
)
from verifiers.report import VerifierReport
from verifiers.spec import EvaluationInput, VerifierSpec
from verifiers.v0_3_added_substring import added_substring_rule, substring_observation

SEMANTIC_MODE = "added_and_removed_line_substring_all"
REMOVED_MODE = "removed_line_substring_all"


@dataclass(frozen=True)
class Config:
    backend: PatchBackend
    required_added_substrings: tuple[str, ...]
    required_removed_substrings: tuple[str, ...]


def parse_config(plan: Mapping[str, object]) -> Config:
    return Config(
        parse_backend(plan),
        required_strings(plan, "required_added_substrings"),
        required_strings(plan, "required_removed_substrings"),
    )


def transition_rule(added: tuple[str, ...], removed: tuple[str, ...]) -> PatchRule:
    """The v0.4 rule as a function of the parsed patch (None: did not parse)."""
    added_rule = added_substring_rule(added)

    def rule(parsed: ParsedDiff | None) -> RuleResult:
        first = added_rule(parsed)
        lines = parsed.removed_lines if parsed is not None else ()
        matched, records, evidence = substring_observation(
            lines,
            removed,
            side="removed",
            mode=REMOVED_MODE,
            evidence_id="removed-substring-semantic-observation",
            description="Case-sensitive substring matching within single removed lines (v0.4).",
        )
        summary = f"{first.summary}; matched removed substrings: {matched} of {len(removed)}"
        return RuleResult(
            passed=first.passed and parsed is not None and matched == len(removed),
            summary=summary,
            detail={"semantic_transition_mode": SEMANTIC_MODE},
            evidence=(*first.evidence, evidence),
            metrics={
                **first.metrics,
                "required_removed_substring_count": len(removed),
                "matched_removed_substring_count": matched,
            },
            findings=(*first.findings, *missing_findings(records, "removed-line substring")),
        )

    return rule


def run(inp: EvaluationInput) -> VerifierReport:
    config: Config = inp.config
    rule = transition_rule(config.required_added_substrings, config.required_removed_substrings)
    return run_patch(inp, config.backend, rule, semantic_mode=SEMANTIC_MODE)


SPEC = VerifierSpec(
    plan_schema_version="0.4",
    adapter="deterministic-patch-verifier",
    adapter_version="0.3.0",
    implemented_validators=PATCH_VALIDATORS,
    semantic_mode=SEMANTIC_MODE,
    description="v0.3 rule and each required_removed_substrings value in one removed line",
    parse_config=parse_config,
    run=run,
    result_suffix="patch-verification",
)
