"""The kind registry: what object kinds the ledger stores and how to recognise them.

Adding a kind = one schema file ``schemas/<kind>-v<version>.schema.json`` plus one
``KindSpec`` entry in ``KINDS``.

Detection rule (when ``--kind`` is not given), applied to a JSON object:
1. ``provledger_kind`` present: that ledger-native kind (must be registered).
2. Otherwise exactly one upstream rule must match, by required member names:
   evaluator-plan ``binding`` + ``required_validator_ids``; work-unit ``objective`` +
   ``validators``; verification-result ``result_manifest_id`` + ``checks``;
   result-manifest ``produced_artifacts`` + ``worker``; benchmark-cohort ``tasks`` +
   ``minimum_final_tasks``. No match is "unknown", two or more is "ambiguous".
The schema version is the document's ``schema_version`` and must be registered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ledger.errors import KindError

BLOB = "blob"

RefExtractor = Callable[[Mapping[str, Any]], list[tuple[str, str]]]


def _no_refs(_obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    return []


def _get(obj: Mapping[str, Any], *path: str) -> Any:
    cur: Any = obj
    for part in path:
        if not isinstance(cur, Mapping) or part not in cur:
            return None
        cur = cur[part]
    return cur


def _refs_at(*specs: tuple[str, tuple[str, ...]]) -> RefExtractor:
    """Build an extractor of (relation, digest) pairs from fixed member paths."""

    def extract(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for rel, path in specs:
            value = _get(obj, *path)
            if isinstance(value, str) and value.startswith("sha256:"):
                out.append((rel, value))
        return out

    return extract


def _verification_refs(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    refs = _refs_at(
        ("verifier-config", ("provenance", "verifier_config_digest")),
        ("result-manifest", ("provenance", "result_manifest_digest")),
        ("work-unit", ("provenance", "work_unit_digest")),
    )(obj)
    return refs


@dataclass(frozen=True)
class KindSpec:
    """One registered kind. ``native`` kinds carry ``provledger_kind``."""

    name: str
    versions: tuple[str, ...]
    native: bool = False
    detect_keys: tuple[str, ...] = ()
    id_field: str | None = "id"
    version_field: str | None = "version"
    refs: RefExtractor = field(default=_no_refs)

    def object_id(self, obj: Mapping[str, Any]) -> str | None:
        value = obj.get(self.id_field) if self.id_field else None
        return value if isinstance(value, str) else None

    def object_version(self, obj: Mapping[str, Any]) -> int | None:
        value = obj.get(self.version_field) if self.version_field else None
        return value if isinstance(value, int) and not isinstance(value, bool) else None


KINDS: dict[str, KindSpec] = {
    spec.name: spec
    for spec in (
        KindSpec("work-unit", ("0.1", "0.2"), detect_keys=("objective", "validators")),
        KindSpec(
            "evaluator-plan",
            ("0.1", "0.2", "0.3", "0.4"),
            detect_keys=("binding", "required_validator_ids"),
            refs=_refs_at(("binds-work-unit", ("binding", "work_unit_digest"))),
        ),
        KindSpec("result-manifest", ("0.1",), detect_keys=("produced_artifacts", "worker")),
        KindSpec(
            "verification-result",
            ("0.1",),
            detect_keys=("result_manifest_id", "checks"),
            refs=_verification_refs,
        ),
        KindSpec("benchmark-cohort", ("0.1",), detect_keys=("tasks", "minimum_final_tasks")),
        # Ledger-native kinds.
        KindSpec(
            "attestation",
            ("0.1",),
            native=True,
            id_field=None,
            version_field=None,
            refs=_refs_at(("subject", ("subject", "digest"))),
        ),
        KindSpec(
            "verifier-identity",
            ("0.1",),
            native=True,
            id_field="verifier_id",
            version_field=None,
        ),
        KindSpec("revocation", ("0.1",), native=True, id_field="key_id", version_field=None),
        KindSpec(
            "burn-notice",
            ("0.1",),
            native=True,
            id_field="cohort_id",
            version_field=None,
        ),
        KindSpec(
            "cohort-binding",
            ("0.1",),
            native=True,
            id_field="successor_id",
            version_field=None,
        ),
        KindSpec(
            "behavioral-evidence",
            ("0.1",),
            native=True,
            id_field=None,
            version_field=None,
            refs=_refs_at(
                ("candidate", ("candidate_digest",)),
                ("verification-result", ("verification_result_digest",)),
            ),
        ),
        # Written by the store only: a signed checkpoint, logged at seq == its size.
        KindSpec("checkpoint", ("0.1",), native=True, id_field=None, version_field=None),
        KindSpec(
            "quarantine",
            ("0.1",),
            native=True,
            id_field="object_id",
            version_field="object_version",
            refs=_refs_at(("quarantined-bytes", ("blob_digest",))),
        ),
        KindSpec(
            "calibration-record",
            ("0.1",),
            native=True,
            id_field=None,
            version_field=None,
            refs=_refs_at(("plan", ("plan_digest",))),
        ),
    )
}

UPSTREAM_KINDS = tuple(name for name, spec in KINDS.items() if not spec.native)


def get_kind(name: str) -> KindSpec:
    """The registered spec for ``name``; unknown names raise ``KindError``."""
    try:
        return KINDS[name]
    except KeyError:
        known = ", ".join(sorted([*KINDS, BLOB]))
        raise KindError(f"unknown kind, got {name!r}, expected one of: {known}") from None


def detect_kind(obj: Any) -> KindSpec:
    """Apply the detection rule in the module docstring."""
    if not isinstance(obj, dict):
        raise KindError(
            f"document is not a JSON object, got {type(obj).__name__}, expected an object"
        )
    native = obj.get("provledger_kind")
    if native is not None:
        if not isinstance(native, str) or native not in KINDS or not KINDS[native].native:
            raise KindError(
                f"unknown ledger-native kind at $.provledger_kind, got {native!r},"
                f" expected one of: {', '.join(n for n, s in KINDS.items() if s.native)}"
            )
        return KINDS[native]
    matches = [
        spec
        for spec in KINDS.values()
        if not spec.native and all(key in obj for key in spec.detect_keys)
    ]
    if not matches:
        raise KindError(
            "cannot tell the document's kind, got no matching structure,"
            " expected one of the documented shapes (or pass --kind)"
        )
    if len(matches) > 1:
        names = ", ".join(spec.name for spec in matches)
        raise KindError(f"ambiguous document, got structure of {names}, expected exactly one kind")
    return matches[0]


def schema_version_of(spec: KindSpec, obj: Mapping[str, Any]) -> str:
    """The document's registered schema version, else ``KindError``."""
    version = obj.get("schema_version")
    if not isinstance(version, str) or version not in spec.versions:
        raise KindError(
            f"unsupported {spec.name} schema version at $.schema_version, got {version!r},"
            f" expected one of {', '.join(spec.versions)}"
        )
    return version
