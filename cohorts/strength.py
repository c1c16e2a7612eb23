"""Evidence strength: what a verdict can and cannot mean, from its EvaluatorPlan version.

Upstream is explicit (VERIFIER_FACTS, ADR-0009): a plan is always judged by the rule of
its own schema version, and every patch-verifier rule is line-local text matching over
the candidate patch; candidate code is never executed. So a pass is a proxy of the
stated strength, never proof of runtime correctness. Behavioral evidence (running
probes against the patched tree) is a separate, stronger channel and is linked when
the ledger records it for the same result.

Labels are stable strings (reports and tests compare them).
"""

from __future__ import annotations

from dataclasses import dataclass

from verifiers.model import EvaluatorPlan, VerificationResult
from verifiers.model.json import as_str

#: plan schema_version -> (label, what a pass means).
PLAN_STRENGTH: dict[str, tuple[str, str]] = {
    "0.1": (
        "v0.1 metadata check",
        "JSON candidate checked for allowed files, size and required members; not behavior",
    ),
    "0.2": (
        "v0.2 lexical proxy",
        "each required text equals one complete added line; a lexical proxy, not proof of"
        " correctness",
    ),
    "0.3": (
        "v0.3 explicit lexical marker",
        "each required substring appears in one added line; an explicit lexical marker, not"
        " proof of correctness",
    ),
    "0.4": (
        "v0.4 calibrated transformation proxy",
        "required substrings added AND required substrings removed; a calibrated"
        " patch-transformation proxy, not proof of runtime correctness",
    ),
}
#: Patch-verifier adapter_version -> the plan version whose rule it implements.
ADAPTER_TO_PLAN = {"0.1": "0.1", "0.1.1": "0.2", "0.2.0": "0.3", "0.3.0": "0.4"}
UNKNOWN = "unknown strength"
BEHAVIORAL = "behavioral evidence (separate, stronger channel)"


@dataclass(frozen=True)
class Strength:
    """The strength of one verdict. ``plan_version`` None when it cannot be told."""

    plan_version: str | None
    label: str
    meaning: str
    source: str  # "plan" (the plan's schema_version) or "verifier" (its adapter_version)

    def to_json(self) -> dict[str, object]:
        return {
            "plan_version": self.plan_version,
            "label": self.label,
            "meaning": self.meaning,
            "source": self.source,
        }


def strength_of(plan: EvaluatorPlan | None, result: VerificationResult | None = None) -> Strength:
    """Strength from the plan's schema version, else from the verifier's adapter version."""
    version = plan.schema_version if plan is not None else None
    source = "plan"
    if version not in PLAN_STRENGTH and result is not None:
        adapter = as_str(result.verifier[2])
        version = ADAPTER_TO_PLAN.get(adapter or "")
        source = "verifier"
    if version is None or version not in PLAN_STRENGTH:
        return Strength(None, UNKNOWN, "plan version unknown: read the verdict as unqualified", "")
    label, meaning = PLAN_STRENGTH[version]
    return Strength(version, label, meaning, source)


def verdict_line(result: VerificationResult, strength: Strength) -> str:
    """``passed (accept_candidate) under v0.4 ...: meaning`` - never more than it is."""
    status = result.status or "?"
    recommendation = as_str(result.recommendation) or "?"
    return f"{status} ({recommendation}), {strength.label}: {strength.meaning}"
