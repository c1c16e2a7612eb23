"""What ``show`` says about a VerificationResult: what its verdict can mean.

The ``verification-result`` entry point of the ``provledger.notes`` group (pyproject.toml):
the generic ``ledger.api.Ledger.get`` asks the plug-in registered for an object's kind,
so a Python caller and ``provledger show`` get the same notes with no set-up call.
"""

from __future__ import annotations

from cohorts.store_lookup import StoreLookup
from cohorts.strength import BEHAVIORAL, strength_of, verdict_line
from ledger.store.base import LedgerReader, StoredObject
from verifiers.model import EvaluatorPlan, VerificationResult


def verification_notes(reader: LedgerReader, obj: StoredObject) -> list[str]:
    """The verdict's evidence strength, and the behavioral evidence linked to the result."""
    if obj.kind != "verification-result":
        return []
    lookup = StoreLookup(reader)
    stored = lookup.doc(obj)
    if stored is None:
        return []
    result = stored.model(VerificationResult)
    plan_digest = result.verifier_config_digest
    plan = lookup.by_digest(plan_digest) if isinstance(plan_digest, str) else None
    strength = strength_of(None if plan is None else plan.model(EvaluatorPlan), result)
    lines = ["verdict " + verdict_line(result, strength)]
    for source, _rel in reader.refs_to(obj.digest, "verification-result"):
        linked = reader.get(source)
        if linked is not None and linked.kind == "behavioral-evidence":
            lines.append(f"{BEHAVIORAL}: {source}")
    return lines
