"""A newer-version draft of a patch EvaluatorPlan: what a successor cohort binds.

A burned cohort's plans met a real outcome under their own version's rule; a successor
binds newer versions. ``upgraded_plan`` writes the draft of one plan at another patch
version (0.2, 0.3, 0.4: the ``unified_diff`` backend), keeping every check the old plan
has (sizes, log types, digest verification, validators, policy, visibility, the WorkUnit
binding) and translating only the semantic expectation:

- v0.2 ``required_added_text`` (each one whole added line) becomes v0.3/v0.4
  ``required_added_substrings`` (each a substring of one added line);
- v0.4 also needs ``required_removed_substrings``: a plan that has them keeps them,
  otherwise the caller names them (they are the evaluator's judgement about the task,
  never invented here) and a draft without them is refused.

The plan's ``verifier`` becomes the adapter and adapter version this build runs for
the target version (``verifiers.registry``); ``extensions`` are dropped (they describe
the old plan's place, not the new one's). A draft is a file for a person to review
before anything is frozen: it is not calibrated, not bound, and not checked against
the source revision.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

from ledger.errors import InputError
from verifiers.errors import VerifierError
from verifiers.model.documents import EvaluatorPlan
from verifiers.model.json import as_list, as_map, as_str
from verifiers.registry import spec_for

PATCH_VERSIONS = ("0.2", "0.3", "0.4")


class PlanUpgradeError(VerifierError, InputError):
    """A plan cannot be drafted at the requested version (exit 3)."""

    exit_code = 3


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def upgraded_plan(
    plan: Mapping[str, object], version: str, *, plan_id: str, removed: Sequence[str] = ()
) -> dict[str, object]:
    """The plan ``plan`` redrafted at patch version ``version`` under the id ``plan_id``
    (see the module docstring); ``PlanUpgradeError`` names why it cannot be."""
    old_version = as_str(plan.get("schema_version"))
    spec = spec_for(version)
    if spec is None or version not in PATCH_VERSIONS:
        raise PlanUpgradeError(
            f"plan version, got {version}, expected one of {list(PATCH_VERSIONS)}"
            " (patch plans this build can judge)"
        )
    backend = dict(as_map(plan.get("backend")))
    if old_version not in PATCH_VERSIONS or backend.get("type") != "unified_diff":
        raise PlanUpgradeError(
            f"plan {shown_id(plan)} version {old_version} ({backend.get('type')}), got a plan"
            " that is no patch plan, expected v0.2-v0.4 unified_diff (write its successor"
            " plan by hand)"
        )
    if _version_key(version) <= _version_key(old_version):
        raise PlanUpgradeError(
            f"plan {shown_id(plan)}, got version {version}, expected one newer than its"
            f" {old_version} (a successor binds newer plan versions)"
        )
    added = backend.pop("required_added_text", None)
    if added is not None:
        backend["required_added_substrings"] = [str(a) for a in as_list(added)]
    if version == "0.4":
        kept = [str(r) for r in as_list(backend.get("required_removed_substrings"))]
        chosen = list(dict.fromkeys([*kept, *removed]))
        if not chosen:
            raise PlanUpgradeError(
                f"plan {shown_id(plan)} at v0.4, got no required removed-line substring,"
                " expected at least one (name it: --removed TASK=SUBSTRING)"
            )
        backend["required_removed_substrings"] = chosen
    elif removed:
        raise PlanUpgradeError(
            f"removed-line substrings, got {list(removed)} for a v{version} plan, expected"
            " them only for v0.4"
        )
    else:
        backend.pop("required_removed_substrings", None)
    draft = {
        key: copy.deepcopy(value)
        for key, value in plan.items()
        if key not in ("extensions", "backend", "id", "schema_version", "verifier")
    }
    draft.update(
        id=plan_id,
        schema_version=version,
        backend=backend,
        verifier={
            **dict(EvaluatorPlan.of(plan).verifier_member),
            "id": spec.verifier_id,
            "adapter": spec.adapter,
            "adapter_version": spec.adapter_version,
        },
    )
    return draft


def shown_id(plan: Mapping[str, object]) -> str:
    return as_str(plan.get("id")) or "(no id)"
