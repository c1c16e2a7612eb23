"""Deterministic IDKMesh verifiers.

``runner.evaluate`` judges one candidate under one EvaluatorPlan (routed by the plan's
schema_version through ``registry``) after the ``sovereignty`` pre-checks and returns a
VerificationOutcome; ``behavioral.run_probes`` is the separate execution channel.
See docs/VERIFIERS.md.
"""
