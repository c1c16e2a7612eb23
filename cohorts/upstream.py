"""Upstream IDKMesh conventions the cohort checks rely on (facts, not policy).

Learned from the reference corpus: where upstream keeps lineage and burn facts in
``extensions``, how verifier recommendations map to indexed outcomes, and how
EvaluatorPlan schema versions order.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from verifiers.model.json import as_map, as_str, maps

#: Namespace under ``extensions`` where upstream's Phase B2 cohorts keep lifecycle facts.
PHASE_B2_NAMESPACE = "org.idkmesh.phase_b2"

#: Extension members (in any namespace) by which a cohort names the definition digest of
#: the burned cohort it replaces. All three spellings occur in the corpus.
PREDECESSOR_DIGEST_KEYS = (
    "predecessor_burned_definition_digest",
    "supersedes_definition_digest",
    "burned_v1_definition_digest",
)

#: VerificationResult ``decision_support.recommendation`` -> cohort attempt ``outcome``.
RECOMMENDATION_TO_OUTCOME = {
    "accept_candidate": "support",
    "reject_candidate": "reject",
    "escalate": "escalate",
    "insufficient_evidence": "insufficient_evidence",
}

#: Non-scaffold cohorts must pin sources to a full commit id.
FULL_GIT_SHA = re.compile(r"[0-9a-f]{40}\Z")

_VERSION = re.compile(r"(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))*\Z")


def version_key(version: object) -> tuple[int, ...] | None:
    """Order key of a dotted numeric version ("0.10" > "0.4"); None if not one."""
    if not isinstance(version, str) or not _VERSION.match(version):
        return None
    return tuple(int(part) for part in version.split("."))


def predecessor_claims(cohort: Mapping[str, object]) -> list[tuple[str, str, str]]:
    """(namespace, member, digest) for every predecessor-digest claim in ``extensions``."""
    claims: list[tuple[str, str, str]] = []
    for namespace, members in sorted(as_map(cohort.get("extensions")).items()):
        for key in PREDECESSOR_DIGEST_KEYS:
            digest = as_str(as_map(members).get(key))
            if digest is not None:
                claims.append((namespace, key, digest))
    return claims


def required_validator_ids(work_unit: Mapping[str, object]) -> frozenset[str]:
    """Ids of the WorkUnit's validators marked ``required: true``."""
    ids = (
        as_str(v.get("id")) for v in maps(work_unit.get("validators")) if v.get("required") is True
    )
    return frozenset(i for i in ids if i is not None)
