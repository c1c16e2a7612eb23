"""Evaluator Sovereignty: the checks made before and after evaluating, fail closed.

``check_pre_evaluation`` runs every rule below in this order and raises the first
violation as ``SovereigntyError`` (exit 4) with a stable code; nothing of the
candidate is read before it returns. Codes:

- ``SOV-INPUT-TYPE``            WorkUnit, plan and ResultManifest are JSON objects
- ``SOV-INPUT-CANONICAL``       each has an RFC 8785 form (I-JSON: e.g. no integer beyond
                                +-(2**53-1)); the result's observations repeat plan values
- ``SOV-PLAN-VERSION``          the plan's schema_version has a registered verifier
- ``SOV-SCHEMA-WORK-UNIT`` / ``SOV-SCHEMA-RESULT-MANIFEST`` / ``SOV-SCHEMA-PLAN``
                                each document is valid against its schema
- ``SOV-PLAN-BACKEND``          the plan's version-specific members are usable
- ``SOV-PLAN-VERIFIER``         plan verifier id/type/adapter/version are the registry's
- ``SOV-PLAN-EXECUTION-MODE``   execution_mode is metadata_only
- ``SOV-PLAN-POLICY``           the three policy flags are all true
- ``SOV-BINDING-WORK-UNIT-ID`` / ``SOV-BINDING-WORK-UNIT-VERSION``
- ``SOV-BINDING-DIGEST``        binding digest equals the WorkUnit's RFC 8785 digest or
                                its legacy (upstream) digest; the scheme is recorded
- ``SOV-BINDING-SOURCE-REVISION``   equals the WorkUnit's provenance.source_revision
                                    (when the WorkUnit declares one)
- ``SOV-MANIFEST-SOURCE-REVISION``  equals the ResultManifest's provenance.source_revision
- ``SOV-MANIFEST-WORK-UNIT-ID`` / ``-VERSION`` / ``-DIGEST``  the ResultManifest is
                                about this WorkUnit (digest under either scheme)
- ``SOV-REQUIRED-VALIDATORS``   plan required_validator_ids == the WorkUnit's required
                                validators (missing and extra reported)
- ``SOV-BACKEND-VALIDATORS``    the routed verifier implements exactly those
- ``SOV-MANIFEST-VALIDATORS``   verification_request.expected_validator_ids covers them
- ``SOV-VERIFIER-IS-WORKER``    plan verifier.id differs from the ResultManifest worker.id
- ``SOV-CANDIDATE-ROOT``        the candidate root is an existing directory
- ``SOV-PLAN-INSIDE-CANDIDATE-ROOT`` / ``SOV-OUTPUT-INSIDE-CANDIDATE-ROOT``
                                plan file and output location resolve (symlinks
                                followed) outside the candidate root
- ``SOV-PLAN-DIGEST``           the given plan digest is the plan's RFC 8785 or legacy
                                digest

``check_post_evaluation`` codes: ``SOV-POST-VERIFIER`` (the identity that ran is the
plan's), ``SOV-POST-REQUIRED-CHECKS`` (the result's required checks are exactly the
plan's required_validator_ids), ``SOV-POST-CONFIG-DIGEST`` (verifier_config_digest is
the plan digest) and ``SOV-POST-SCHEMA`` (the result is a valid VerificationResult).
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ledger.encoding.canonical import canonicalize
from ledger.encoding.digest import canonical_digest, is_digest, legacy_digest
from ledger.errors import KindError, LedgerError, SchemaError
from verifiers.errors import SovereigntyError
from verifiers.model.json import at, is_int, str_list
from verifiers.registry import spec_for, supported_versions
from verifiers.spec import Config, VerifierSpec

Scheme = Literal["rfc8785", "legacy"]
POLICY_FLAGS = (
    "require_plan_outside_candidate_root",
    "require_output_outside_candidate_root",
    "require_verifier_distinct_from_worker",
)


class Validate(Protocol):
    """Schema validation: return on success; on a violation raise ``SchemaError``, or
    ``KindError`` when no schema exists for the kind and version (both ``InputError``,
    as ``ledger.schema.validation.validate`` does). Any other exception is a bug in the
    validator and propagates as one: it is never turned into a sovereignty refusal."""

    def __call__(self, kind: str, version: str, obj: object, /) -> None: ...


@dataclass(frozen=True)
class DigestMatch:
    """Which digest scheme(s) of a document produced an expected digest."""

    digest: str
    scheme: Scheme
    schemes: tuple[Scheme, ...]

    def as_json(self) -> dict[str, object]:
        return {"digest": self.digest, "scheme": self.scheme, "schemes": list(self.schemes)}


@dataclass(frozen=True)
class SovereigntyReport:
    """Everything the pre-evaluation checks established; the input to evaluation."""

    spec: VerifierSpec
    config: Config
    candidate_root: Path
    required_validators: tuple[str, ...]
    work_unit_binding: DigestMatch
    manifest_work_unit: DigestMatch
    plan_digest: DigestMatch
    checked: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        return {
            "plan_schema_version": self.spec.plan_schema_version,
            "required_validators": list(self.required_validators),
            "work_unit_binding": self.work_unit_binding.as_json(),
            "manifest_work_unit": self.manifest_work_unit.as_json(),
            "plan_digest": self.plan_digest.as_json(),
            "checked": list(self.checked),
        }


def _digests(obj: object) -> dict[Scheme, str]:
    out: dict[Scheme, str] = {}
    # A value outside I-JSON simply has no digest under that scheme.
    with contextlib.suppress(LedgerError, TypeError, ValueError):
        out["rfc8785"] = canonical_digest(obj)
    with contextlib.suppress(TypeError, ValueError):
        out["legacy"] = legacy_digest(obj)
    return out


def match_digest(obj: object, expected: object, code: str, what: str) -> DigestMatch:
    """``expected`` must be the RFC 8785 or the legacy digest of ``obj``."""
    digests = _digests(obj)
    schemes = tuple(s for s, d in digests.items() if d == expected)
    if not isinstance(expected, str) or not schemes:
        shown = " or ".join(f"{d} ({s})" for s, d in digests.items()) or "a computable digest"
        raise SovereigntyError(code, what, expected, shown)
    return DigestMatch(expected, schemes[0], schemes)


def _validate(validate: Validate, code: str, kind: str, obj: Mapping[str, object]) -> None:
    version = obj.get("schema_version")
    try:
        validate(kind, version if isinstance(version, str) else "", obj)
    except (SchemaError, KindError) as exc:  # the documented complaints, nothing else
        raise SovereigntyError(
            code, f"{kind} fails its schema", f"{type(exc).__name__}: {exc}", "a valid document"
        ) from exc


def _equal(code: str, what: str, got: object, expected: object) -> None:
    if got != expected or type(got) is not type(expected):
        raise SovereigntyError(code, what, got, expected)


def required_validators(work_unit: Mapping[str, object]) -> tuple[str, ...]:
    """Ids of the WorkUnit's validators marked ``required: true``, in document order."""
    validators = work_unit.get("validators")
    if not isinstance(validators, list):
        raise SovereigntyError(
            "SOV-SCHEMA-WORK-UNIT", "WorkUnit validators", validators, "a list of validators"
        )
    ids = []
    for item in validators:
        if at(item, "required") is True:
            vid = at(item, "id")
            if not isinstance(vid, str):
                raise SovereigntyError(
                    "SOV-SCHEMA-WORK-UNIT", "WorkUnit validator id", vid, "a string"
                )
            ids.append(vid)
    return tuple(ids)


def _set_diff(code: str, what: str, got: list[str], expected: set[str]) -> None:
    dupes = sorted(v for v, n in Counter(got).items() if n > 1)
    missing = sorted(expected - set(got))
    extra = sorted(set(got) - expected)
    if missing or extra or dupes:
        raise SovereigntyError(
            code,
            f"{what} (missing {missing}, extra {extra}, duplicated {dupes})",
            sorted(got),
            sorted(expected),
        )


def _real(path: Path | str) -> Path:
    return Path(os.path.realpath(path))


def _outside(code: str, what: str, path: Path | None, root: Path) -> None:
    if path is None:
        return
    real = _real(path)
    if real == root or real.is_relative_to(root):
        raise SovereigntyError(
            code, f"{what} is inside the candidate root", str(real), f"outside {root}"
        )


def check_pre_evaluation(
    work_unit: object,
    plan: object,
    manifest: object,
    *,
    candidate_root: Path,
    plan_path: Path | None,
    output_path: Path | None,
    plan_digest: str,
    validate: Validate,
) -> SovereigntyReport:
    """Run every pre-evaluation rule (module docstring); raise the first violation.

    ``plan_path``/``output_path`` None mean "not on the filesystem" (e.g. read from or
    written to the ledger) and cannot be inside the candidate root. The rules run in a
    fixed order; ``checked`` lists the code of each rule that held, in that order.
    """
    checked: list[str] = []
    wu = _object("WorkUnit", work_unit)
    pl = _object("plan", plan)
    rm = _object("ResultManifest", manifest)
    checked.append("SOV-INPUT-TYPE")
    for name, doc in (("WorkUnit", wu), ("plan", pl), ("ResultManifest", rm)):
        _canonical(name, doc)
    checked.append("SOV-INPUT-CANONICAL")
    spec, config = _check_plan(pl, wu, rm, validate, checked)
    binding, wu_version, revision = _check_binding(pl, wu, checked)
    manifest_wu = _check_manifest_binding(rm, wu, wu_version, revision, checked)
    plan_required = _check_validators(spec, pl, wu, rm, checked)
    _check_worker(pl, rm, checked)
    root = _check_paths(candidate_root, plan_path, output_path, checked)
    if not isinstance(plan_digest, str) or not is_digest(plan_digest):
        raise SovereigntyError(
            "SOV-PLAN-DIGEST", "plan digest", plan_digest, "sha256:<64 lowercase hex>"
        )
    plan_match = match_digest(pl, plan_digest, "SOV-PLAN-DIGEST", "given plan digest")
    checked.append("SOV-PLAN-DIGEST")
    return SovereigntyReport(
        spec=spec,
        config=config,
        candidate_root=root,
        required_validators=tuple(plan_required),
        work_unit_binding=binding,
        manifest_work_unit=manifest_wu,
        plan_digest=plan_match,
        checked=tuple(checked),
    )


_Doc = Mapping[str, object]


def _object(name: str, value: object) -> _Doc:
    """SOV-INPUT-TYPE: an input is a JSON object."""
    if not isinstance(value, Mapping):
        raise SovereigntyError("SOV-INPUT-TYPE", name, type(value).__name__, "a JSON object")
    return value


def _canonical(name: str, value: _Doc) -> None:
    """SOV-INPUT-CANONICAL: an input has RFC 8785 bytes (the protocol model, the digests
    and the result's observations are all built from them)."""
    try:
        canonicalize(value)
    except RecursionError:
        raise SovereigntyError(
            "SOV-INPUT-CANONICAL",
            f"{name} has no RFC 8785 form",
            "nesting deeper than the interpreter's recursion limit",
            "a document of ordinary depth",
        ) from None
    except (LedgerError, TypeError, ValueError) as exc:
        why = re.search(r"got (.*), expected", str(exc))
        raise SovereigntyError(
            "SOV-INPUT-CANONICAL",
            f"{name} has no RFC 8785 form",
            why.group(1) if why else str(exc),
            "I-JSON values (integers within +-(2**53-1), finite numbers, Unicode text)",
        ) from None


def _check_plan(
    plan: _Doc, work_unit: _Doc, manifest: _Doc, validate: Validate, checked: list[str]
) -> tuple[VerifierSpec, Config]:
    """A supported plan version; all three documents schema-valid; the plan's backend
    config, verifier identity, execution mode and policy flags what the spec requires."""
    spec = spec_for(plan.get("schema_version"))
    if spec is None:
        raise SovereigntyError(
            "SOV-PLAN-VERSION",
            "unsupported EvaluatorPlan schema_version",
            plan.get("schema_version"),
            f"one of {', '.join(supported_versions())}",
        )
    checked.append("SOV-PLAN-VERSION")
    _validate(validate, "SOV-SCHEMA-WORK-UNIT", "work-unit", work_unit)
    checked.append("SOV-SCHEMA-WORK-UNIT")
    _validate(validate, "SOV-SCHEMA-RESULT-MANIFEST", "result-manifest", manifest)
    checked.append("SOV-SCHEMA-RESULT-MANIFEST")
    _validate(validate, "SOV-SCHEMA-PLAN", "evaluator-plan", plan)
    checked.append("SOV-SCHEMA-PLAN")
    config = spec.parse_config(plan)
    checked.append("SOV-PLAN-BACKEND")
    expected_verifier = {
        "id": spec.verifier_id,
        "type": spec.verifier_type,
        "adapter": spec.adapter,
        "adapter_version": spec.adapter_version,
    }
    got_verifier = {k: at(plan, "verifier", k) for k in expected_verifier}
    _equal("SOV-PLAN-VERIFIER", "plan verifier identity", got_verifier, expected_verifier)
    checked.append("SOV-PLAN-VERIFIER")
    _equal(
        "SOV-PLAN-EXECUTION-MODE",
        "plan execution_mode",
        plan.get("execution_mode"),
        "metadata_only",
    )
    checked.append("SOV-PLAN-EXECUTION-MODE")
    flags = {k: at(plan, "policy", k) for k in POLICY_FLAGS}
    _equal("SOV-PLAN-POLICY", "plan policy flags", flags, dict.fromkeys(POLICY_FLAGS, True))
    checked.append("SOV-PLAN-POLICY")
    return spec, config


def _check_binding(
    plan: _Doc, work_unit: _Doc, checked: list[str]
) -> tuple[DigestMatch, int, object]:
    """The plan is bound to this WorkUnit (id, integer version, digest, source revision).
    Returns the digest match, the WorkUnit version and the plan's source revision."""
    _equal(
        "SOV-BINDING-WORK-UNIT-ID",
        "plan binding.work_unit_id",
        at(plan, "binding", "work_unit_id"),
        work_unit.get("id"),
    )
    checked.append("SOV-BINDING-WORK-UNIT-ID")
    wu_version = work_unit.get("version")
    if not isinstance(wu_version, int) or not is_int(wu_version):
        raise SovereigntyError("SOV-SCHEMA-WORK-UNIT", "WorkUnit version", wu_version, "an integer")
    _equal(
        "SOV-BINDING-WORK-UNIT-VERSION",
        "plan binding.work_unit_version",
        at(plan, "binding", "work_unit_version"),
        wu_version,
    )
    checked.append("SOV-BINDING-WORK-UNIT-VERSION")
    binding = match_digest(
        work_unit,
        at(plan, "binding", "work_unit_digest"),
        "SOV-BINDING-DIGEST",
        "plan binding.work_unit_digest",
    )
    checked.append("SOV-BINDING-DIGEST")
    revision = at(plan, "binding", "source_revision")
    provenance = work_unit.get("provenance")
    if isinstance(provenance, Mapping) and "source_revision" in provenance:
        _equal(
            "SOV-BINDING-SOURCE-REVISION",
            "plan binding.source_revision vs WorkUnit",
            revision,
            at(work_unit, "provenance", "source_revision"),
        )
    checked.append("SOV-BINDING-SOURCE-REVISION")
    return binding, wu_version, revision


def _check_manifest_binding(
    manifest: _Doc, work_unit: _Doc, wu_version: int, revision: object, checked: list[str]
) -> DigestMatch:
    """The ResultManifest names the plan's source revision and this WorkUnit."""
    _equal(
        "SOV-MANIFEST-SOURCE-REVISION",
        "ResultManifest provenance.source_revision vs plan binding",
        at(manifest, "provenance", "source_revision"),
        revision,
    )
    checked.append("SOV-MANIFEST-SOURCE-REVISION")
    _equal(
        "SOV-MANIFEST-WORK-UNIT-ID",
        "ResultManifest work_unit_id",
        manifest.get("work_unit_id"),
        work_unit.get("id"),
    )
    checked.append("SOV-MANIFEST-WORK-UNIT-ID")
    _equal(
        "SOV-MANIFEST-WORK-UNIT-VERSION",
        "ResultManifest work_unit_version",
        manifest.get("work_unit_version"),
        wu_version,
    )
    checked.append("SOV-MANIFEST-WORK-UNIT-VERSION")
    manifest_wu = match_digest(
        work_unit,
        at(manifest, "provenance", "work_unit_digest"),
        "SOV-MANIFEST-WORK-UNIT-DIGEST",
        "ResultManifest provenance.work_unit_digest",
    )
    checked.append("SOV-MANIFEST-WORK-UNIT-DIGEST")
    return manifest_wu


def _check_validators(
    spec: VerifierSpec, plan: _Doc, work_unit: _Doc, manifest: _Doc, checked: list[str]
) -> list[str]:
    """Plan, WorkUnit, backend and manifest agree on the required validators."""
    required = required_validators(work_unit)
    plan_required = str_list(plan.get("required_validator_ids"))
    if plan_required is None:
        raise SovereigntyError(
            "SOV-REQUIRED-VALIDATORS",
            "plan required_validator_ids",
            plan.get("required_validator_ids"),
            "a list of strings",
        )
    _set_diff(
        "SOV-REQUIRED-VALIDATORS",
        "plan required_validator_ids vs WorkUnit",
        plan_required,
        set(required),
    )
    checked.append("SOV-REQUIRED-VALIDATORS")
    _set_diff(
        "SOV-BACKEND-VALIDATORS",
        f"validators implemented by {spec.adapter} {spec.adapter_version}",
        sorted(spec.implemented_validators),
        set(plan_required),
    )
    checked.append("SOV-BACKEND-VALIDATORS")
    requested = str_list(at(manifest, "verification_request", "expected_validator_ids")) or []
    uncovered = sorted(set(plan_required) - set(requested))
    if uncovered:
        raise SovereigntyError(
            "SOV-MANIFEST-VALIDATORS",
            f"ResultManifest expected_validator_ids misses {uncovered}",
            sorted(requested),
            f"a superset of {sorted(plan_required)}",
        )
    checked.append("SOV-MANIFEST-VALIDATORS")
    return plan_required


def _check_worker(plan: _Doc, manifest: _Doc, checked: list[str]) -> None:
    """The plan's verifier is not the worker that produced the candidate."""
    worker_id = at(manifest, "worker", "id")
    if at(plan, "verifier", "id") == worker_id:
        raise SovereigntyError(
            "SOV-VERIFIER-IS-WORKER",
            "plan verifier.id equals worker.id",
            worker_id,
            "a verifier distinct from the worker",
        )
    checked.append("SOV-VERIFIER-IS-WORKER")


def _check_paths(
    candidate_root: Path, plan_path: Path | None, output_path: Path | None, checked: list[str]
) -> Path:
    """The candidate root exists; neither the plan file nor the output is inside it."""
    root = _real(candidate_root)
    if not root.is_dir():
        raise SovereigntyError(
            "SOV-CANDIDATE-ROOT", "candidate root", str(candidate_root), "an existing directory"
        )
    checked.append("SOV-CANDIDATE-ROOT")
    _outside("SOV-PLAN-INSIDE-CANDIDATE-ROOT", "plan file", plan_path, root)
    checked.append("SOV-PLAN-INSIDE-CANDIDATE-ROOT")
    _outside("SOV-OUTPUT-INSIDE-CANDIDATE-ROOT", "output location", output_path, root)
    checked.append("SOV-OUTPUT-INSIDE-CANDIDATE-ROOT")
    return root


def check_post_evaluation(
    report: SovereigntyReport,
    plan: Mapping[str, object],
    result: Mapping[str, object],
    *,
    validate: Validate,
) -> None:
    """The result was produced by the plan's verifier, for exactly its required checks."""
    ran = {k: at(result, "verifier", k) for k in ("id", "type", "adapter", "adapter_version")}
    planned = {k: at(plan, "verifier", k) for k in ran}
    _equal("SOV-POST-VERIFIER", "verifier that ran vs plan verifier", ran, planned)
    checks = at(result, "checks")
    ids = [at(c, "id") for c in checks] if isinstance(checks, list) else []
    if not isinstance(checks, list) or any(at(c, "required") is not True for c in checks):
        raise SovereigntyError(
            "SOV-POST-REQUIRED-CHECKS", "result checks", checks, "required checks only"
        )
    _set_diff(
        "SOV-POST-REQUIRED-CHECKS",
        "result required checks vs plan",
        [i for i in ids if isinstance(i, str)],
        set(report.required_validators),
    )
    if len(ids) != len(report.required_validators):
        raise SovereigntyError(
            "SOV-POST-REQUIRED-CHECKS",
            "result check count",
            len(ids),
            len(report.required_validators),
        )
    _equal(
        "SOV-POST-CONFIG-DIGEST",
        "result verifier_config_digest",
        at(result, "provenance", "verifier_config_digest"),
        report.plan_digest.digest,
    )
    _validate(validate, "SOV-POST-SCHEMA", "verification-result", result)
