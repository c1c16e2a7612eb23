"""The plug point between the runner and one versioned semantic verifier.

A ``VerifierSpec`` is everything the runner and the sovereignty checks need to know
about one EvaluatorPlan schema version: the verifier identity it must carry, the
validator ids it implements, how to read its plan-specific configuration (refusing a
malformed plan with ``SovereigntyError``) and the pure ``run`` function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verifiers.model import EvaluatorPlan, ResultManifest, WorkUnit
from verifiers.releases import Release
from verifiers.report import VerifierReport

VERIFIER_ID = "idkmesh-local-verifier"

#: A verifier release's parsed backend config: each release parses and reads its own
#: (``VerifierSpec.parse_config``), so its type is that release's, named here by role.
Config = Any


@dataclass(frozen=True)
class EvaluationInput:
    """Inputs that passed the pre-evaluation sovereignty checks, as the protocol model.

    ``candidate_root`` is resolved; ``config`` is what the spec's ``parse_config``
    returned for ``plan``; ``release`` is the release of the verifiers whose reading
    judges (``verifiers.releases``).
    """

    work_unit: WorkUnit
    plan: EvaluatorPlan
    manifest: ResultManifest
    manifest_digest: str
    candidate_root: Path
    config: Config
    release: Release


@dataclass(frozen=True)
class VerifierSpec:
    """One registry entry: the verifier that judges plans of ``plan_schema_version``."""

    plan_schema_version: str
    adapter: str
    adapter_version: str
    implemented_validators: frozenset[str]
    semantic_mode: str | None
    description: str
    parse_config: Callable[[Mapping[str, object]], Config]
    run: Callable[[EvaluationInput], VerifierReport]
    verifier_id: str = VERIFIER_ID
    verifier_type: str = "system"
    result_suffix: str = "verification"
