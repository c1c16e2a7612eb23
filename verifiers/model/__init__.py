"""The IDKMesh protocol model shared by ``verifiers`` and ``cohorts``.

``documents``: WorkUnit, EvaluatorPlan, ResultManifest, VerificationResult and Cohort as
frozen, typed values that carry their canonical bytes and digests (parsed once).
``json``: the one set of total readers for JSON values that may be malformed.
The model imports only ``ledger`` (encoding, digests, errors); see docs/DESIGN.md.
"""

from verifiers.model.documents import (
    Attempt,
    Cohort,
    CohortMembers,
    CohortView,
    Document,
    EvaluatorPlan,
    EvaluatorRef,
    Ref,
    ResultManifest,
    Task,
    VerificationResult,
    WorkUnit,
)

__all__ = [
    "Attempt",
    "Cohort",
    "CohortMembers",
    "CohortView",
    "Document",
    "EvaluatorPlan",
    "EvaluatorRef",
    "Ref",
    "ResultManifest",
    "Task",
    "VerificationResult",
    "WorkUnit",
]
