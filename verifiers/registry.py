"""Routing a plan to the verifier of its own ``schema_version``.

A plan is only ever judged by the rule of its own version; no plan is reinterpreted
under a newer meaning. Adding a version = one module exposing ``SPEC`` plus one entry
in ``_SPECS``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from verifiers import v0_1_json, v0_2_exact_line, v0_3_added_substring, v0_4_transition
from verifiers.spec import VerifierSpec

_SPECS = (
    v0_1_json.SPEC,
    v0_2_exact_line.SPEC,
    v0_3_added_substring.SPEC,
    v0_4_transition.SPEC,
)

REGISTRY: Mapping[str, VerifierSpec] = MappingProxyType(
    {spec.plan_schema_version: spec for spec in _SPECS}
)


def supported_versions() -> tuple[str, ...]:
    return tuple(REGISTRY)


def spec_for(schema_version: object) -> VerifierSpec | None:
    """The spec for a plan ``schema_version`` or None when unsupported."""
    return REGISTRY.get(schema_version) if isinstance(schema_version, str) else None
