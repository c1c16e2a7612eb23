"""The IDKMesh protocol objects as frozen, typed values that carry their bytes.

One class per protocol object: ``WorkUnit``, ``EvaluatorPlan``, ``ResultManifest``,
``VerificationResult`` and ``Cohort`` (with its ``Task`` and ``Attempt`` entries). A
document is parsed once (``parse(raw)`` from bytes, or ``of(value)`` from a value
already strictly parsed) and then read through typed members.

Invariants:

- ``canonical`` is the RFC 8785 bytes of ``value`` and ``digest`` is
  ``sha256:<hex>`` of exactly those bytes; ``legacy_digest`` is upstream IDKMesh's digest
  of the value *as first parsed* (``parse`` and ``of`` compute it; callers that hold a
  stored document pass the one computed at import, see ``cohorts.lookup``).
- Parsing is tolerant of schema-invalid documents, because upstream records sometimes
  are (the importer quarantines them and audits still report on them). Only bytes that
  are not strict JSON raise (``ledger.errors.ParseError``, exit 3), and a JSON value
  that is not an object raises ``ledger.errors.KindError`` ("kind-invalid", exit 3).
  A member that is missing or has the wrong type reads as None (or an empty tuple);
  whether a document is schema-valid is the schema validator's verdict, not the
  model's, so every finding keeps the code and message it has always had.
- Members that checks compare or print *as recorded* (ids, versions, digests, whose
  drift messages show the recorded value whatever its type) are kept raw and typed
  ``object``; members that are only ever used as strings are ``str | None``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, ClassVar, Self

from ledger.encoding.canonical import Encoded, canonicalize, encode
from ledger.encoding.digest import legacy_digest, sha256_digest
from ledger.errors import KindError
from verifiers.model.json import JsonObject, as_int, as_list, as_map, as_str, at, maps, str_set

if TYPE_CHECKING:
    from ledger.store.base import StoredObject


@dataclass(frozen=True)
class Ref:
    """A reference member (``{"id", "version", "digest"}``), each value as recorded."""

    id: object = None
    version: object = None
    digest: object = None

    @classmethod
    def read(cls, value: object) -> Ref:
        member = as_map(value)
        return cls(member.get("id"), member.get("version"), member.get("digest"))

    @property
    def key(self) -> tuple[object, object]:
        """(id, version): what names a WorkUnit across cohorts."""
        return (self.id, self.version)


@dataclass(frozen=True)
class EvaluatorRef:
    """A cohort task's ``evaluator`` member: which plan judges it, each value as recorded."""

    plan_id: object = None
    plan_digest: object = None
    backend: object = None
    visibility: str | None = None

    @classmethod
    def read(cls, value: object) -> EvaluatorRef:
        member = as_map(value)
        return cls(
            member.get("plan_id"),
            member.get("plan_digest"),
            member.get("backend"),
            as_str(member.get("visibility")),
        )


@dataclass(frozen=True)
class Document:
    """A protocol document: its value, its canonical bytes and both digests.

    Build one with ``parse`` or ``of``, which derive bytes and digests. The plain
    constructor is for a reader that already holds a stored row whose bytes the store
    checked against its digest (``cohorts.lookup.StoredDoc.model``).
    """

    kind: ClassVar[str] = ""

    value: JsonObject = field(repr=False, compare=False)
    canonical: bytes = field(repr=False)
    digest: str
    legacy_digest: str
    #: The one parse this document came from (``parse``), kept so that admission to the
    #: ledger (``ledger.store.prepared.prepare_encoded``) does not parse it again.
    source: Encoded | None = field(default=None, repr=False, compare=False)

    @classmethod
    def parse(cls, raw: bytes) -> Self:
        """Strict parse of ``raw`` (one pass: value, RFC 8785 bytes, legacy bytes)."""
        return cls.from_encoded(encode(raw))

    @classmethod
    def from_encoded(cls, encoded: Encoded) -> Self:
        """The document of bytes already parsed by ``ledger.encoding.canonical.encode``."""
        value = _require_object(cls.kind, encoded.value)
        digest = sha256_digest(encoded.canonical)
        legacy = digest if encoded.legacy == encoded.canonical else sha256_digest(encoded.legacy)
        return cls(value, encoded.canonical, digest, legacy, encoded)

    @classmethod
    def of(cls, value: object, *, legacy: str | None = None) -> Self:
        """A document of a value already strictly parsed (canonicalized here, once)."""
        obj = _require_object(cls.kind, value)
        data = canonicalize(obj)
        return cls(obj, data, sha256_digest(data), legacy or legacy_digest(obj))

    @classmethod
    def stored(cls, obj: StoredObject, value: JsonObject) -> Self:
        """The document of a stored row whose JSON ``value`` the caller already parsed
        from ``obj.data``: the plain constructor, no second parse (the store checked the
        bytes against the digest). A row without a legacy digest is named by its own."""
        return cls(value, obj.data, obj.digest, obj.legacy_digest or obj.digest)

    def at(self, *keys: str | int) -> object:
        """The member at ``keys`` as recorded, None when a step is missing."""
        return at(self.value, *keys)

    def is_true(self, *keys: str | int) -> bool:
        """The member at ``keys`` is exactly ``true`` (a flag; missing is not set)."""
        return at(self.value, *keys) is True

    @property
    def id(self) -> object:
        return self.value.get("id")

    @property
    def digests(self) -> frozenset[str]:
        """Both digests that name this document (RFC 8785 and upstream legacy)."""
        return frozenset((self.digest, self.legacy_digest))


def _require_object(kind: str, value: object) -> JsonObject:
    if not isinstance(value, Mapping):
        raise KindError(
            f"{kind or 'document'} is not a JSON object, got {type(value).__name__},"
            " expected an object"
        )
    return value


class _BoundToWorkUnit(Document):
    """Manifest and result each name their WorkUnit by id, version and digest."""

    @property
    def work_unit_id(self) -> object:
        return self.value.get("work_unit_id")

    @property
    def work_unit_version(self) -> object:
        return self.value.get("work_unit_version")

    @property
    def work_unit(self) -> tuple[object, object]:
        """(work_unit_id, work_unit_version) as recorded."""
        return (self.work_unit_id, self.work_unit_version)

    @property
    def attempt(self) -> object:
        return self.value.get("attempt")

    @property
    def status(self) -> str | None:
        return as_str(self.value.get("status"))

    @property
    def work_unit_digest(self) -> object:
        return self.at("provenance", "work_unit_digest")

    @property
    def source_revision(self) -> object:
        return self.at("provenance", "source_revision")

    @property
    def resources(self) -> JsonObject:
        return as_map(self.value.get("resources"))


@dataclass(frozen=True)
class WorkUnit(Document):
    """An IDKMesh WorkUnit: the task a worker was given."""

    kind: ClassVar[str] = "work-unit"

    @property
    def version(self) -> object:
        return self.value.get("version")

    @property
    def schema_version(self) -> str | None:
        return as_str(self.value.get("schema_version"))

    @property
    def source_revision(self) -> object:
        return self.at("provenance", "source_revision")

    @property
    def work_kind(self) -> str | None:
        """The WorkUnit's own ``kind`` member (``kind`` names the document class)."""
        return as_str(self.value.get("kind"))

    @property
    def minimum_independent_verifiers(self) -> int | None:
        return as_int(self.at("verification_policy", "minimum_independent_verifiers"))

    @property
    def objective(self) -> str | None:
        """What the worker is asked to do, as text (None when not a string)."""
        return as_str(self.value.get("objective"))

    @property
    def required_evidence_types(self) -> frozenset[str]:
        """The ``type`` of every ``evidence_requirements`` entry marked ``required: true``."""
        return frozenset(
            kind
            for e in maps(self.value.get("evidence_requirements"))
            if e.get("required") is True and isinstance(kind := e.get("type"), str)
        )


@dataclass(frozen=True)
class EvaluatorPlan(Document):
    """An IDKMesh EvaluatorPlan: how a verifier judges a candidate."""

    kind: ClassVar[str] = "evaluator-plan"

    @property
    def schema_version(self) -> str | None:
        return as_str(self.value.get("schema_version"))

    @property
    def verifier(self) -> tuple[object, object, object]:
        """(id, adapter, adapter_version) of the planned verifier, as recorded."""
        return _verifier(self)

    @property
    def verifier_member(self) -> JsonObject:
        """The whole ``verifier`` member (empty when it is not an object)."""
        return as_map(self.value.get("verifier"))

    @property
    def binding(self) -> JsonObject:
        """What the plan is bound to (WorkUnit id, version, digest; source revision)."""
        return as_map(self.value.get("binding"))

    @property
    def bound_work_unit(self) -> Ref:
        """``binding.work_unit_id``, ``work_unit_version``, ``work_unit_digest`` as recorded."""
        binding = self.binding
        return Ref(
            binding.get("work_unit_id"),
            binding.get("work_unit_version"),
            binding.get("work_unit_digest"),
        )

    @property
    def bound_source_revision(self) -> object:
        return self.binding.get("source_revision")

    @property
    def backend(self) -> object:
        """``backend`` as recorded (an object naming its ``type`` in the schema)."""
        return self.value.get("backend")

    @property
    def backend_type(self) -> object:
        """``backend.type`` as recorded (``unified_diff``, ...): which verifier backend."""
        return self.at("backend", "type")

    @property
    def visibility(self) -> str | None:
        return as_str(self.value.get("visibility"))

    @property
    def candidate_artifact_id(self) -> object:
        """Which of the manifest's ``produced_artifacts`` is the candidate, as recorded."""
        return self.value.get("candidate_artifact_id")

    @property
    def required_validator_ids(self) -> tuple[object, ...]:
        return tuple(as_list(self.value.get("required_validator_ids")))

    @property
    def required_log_types(self) -> frozenset[str]:
        return str_set(self.at("backend", "required_log_types"))


@dataclass(frozen=True)
class ResultManifest(_BoundToWorkUnit):
    """An IDKMesh ResultManifest: what a worker says it produced."""

    kind: ClassVar[str] = "result-manifest"

    @property
    def produced_artifacts(self) -> tuple[JsonObject, ...]:
        return tuple(maps(self.value.get("produced_artifacts")))

    @property
    def logs(self) -> tuple[JsonObject, ...]:
        return tuple(maps(self.value.get("logs")))

    @property
    def expected_validator_ids(self) -> frozenset[str]:
        return str_set(self.at("verification_request", "expected_validator_ids"))

    @property
    def recorded_worker_id(self) -> object:
        """``worker.id`` as recorded (a result's ``worker_id_observed`` copies it)."""
        return self.at("worker", "id")

    @property
    def worker_id(self) -> str | None:
        return as_str(self.recorded_worker_id)


@dataclass(frozen=True)
class VerificationResult(_BoundToWorkUnit):
    """An IDKMesh VerificationResult: a verifier's verdict on one ResultManifest."""

    kind: ClassVar[str] = "verification-result"

    @property
    def recommendation(self) -> object:
        """``decision_support.recommendation`` as recorded."""
        return self.at("decision_support", "recommendation")

    @property
    def rationale(self) -> str | None:
        return as_str(self.at("decision_support", "rationale"))

    @property
    def result_manifest_id(self) -> object:
        return self.value.get("result_manifest_id")

    @property
    def result_manifest_digest(self) -> object:
        return self.at("provenance", "result_manifest_digest")

    @property
    def verifier_config_digest(self) -> object:
        return self.at("provenance", "verifier_config_digest")

    @property
    def independent_from_worker(self) -> object:
        return self.at("independence", "independent_from_worker")

    @property
    def verifier(self) -> tuple[object, object, object]:
        """(id, adapter, adapter_version) of the verifier that ran, as recorded."""
        return _verifier(self)

    @property
    def verifier_member(self) -> JsonObject:
        """The whole ``verifier`` member (empty when it is not an object)."""
        return as_map(self.value.get("verifier"))

    @property
    def check_ids(self) -> tuple[object, ...]:
        """The ``id`` of every check the verifier reports, as recorded."""
        return tuple(c.get("id") for c in maps(self.value.get("checks")))

    @property
    def evidence(self) -> tuple[JsonObject, ...]:
        return tuple(maps(self.value.get("evidence")))

    @property
    def finding_categories(self) -> tuple[object, ...]:
        return tuple(f.get("category") for f in maps(self.value.get("findings")))

    @property
    def finished_at(self) -> str | None:
        """When the verifier finished, as text (None when not a string)."""
        return as_str(self.value.get("finished_at"))


def _verifier(doc: Document) -> tuple[object, object, object]:
    return (
        doc.at("verifier", "id"),
        doc.at("verifier", "adapter"),
        doc.at("verifier", "adapter_version"),
    )


@dataclass(frozen=True)
class Attempt:
    """One evidence attempt a cohort task lists (``evidence.attempts[index]``)."""

    index: int
    value: JsonObject = field(repr=False, compare=False)

    @property
    def attempt_id(self) -> str | None:
        return as_str(self.value.get("attempt_id"))

    @property
    def id(self) -> object:
        """``attempt_id`` as recorded (what messages print)."""
        return self.value.get("attempt_id")

    @property
    def label(self) -> str:
        """The attempt id, or its position when it has none."""
        return self.attempt_id or f"attempts[{self.index}]"

    @property
    def outcome(self) -> object:
        return self.value.get("outcome")

    @property
    def structural_signature(self) -> object:
        return self.value.get("structural_signature")

    @property
    def result_manifest(self) -> Ref:
        return Ref.read(self.value.get("result_manifest"))

    @property
    def verification_result(self) -> Ref:
        return Ref.read(self.value.get("verification_result"))


@dataclass(frozen=True)
class Task:
    """One task of a cohort (``tasks[index]``)."""

    index: int
    value: JsonObject = field(repr=False, compare=False)

    @classmethod
    def all_of(cls, cohort: object) -> tuple[Task, ...]:
        """The object entries of a cohort value's ``tasks`` (non-objects dropped), in order."""
        return tuple(cls(i, t) for i, t in enumerate(maps(at(cohort, "tasks"))))

    def at(self, *keys: str | int) -> object:
        return at(self.value, *keys)

    @property
    def label(self) -> str:
        """The task id, or ``?`` when it has none."""
        return as_str(self.id) or "?"

    @property
    def id(self) -> object:
        return self.value.get("id")

    @property
    def split(self) -> object:
        return self.value.get("split")

    @property
    def family(self) -> object:
        return self.value.get("family")

    @property
    def difficulty(self) -> object:
        return self.value.get("difficulty")

    @property
    def source_repository(self) -> object:
        return self.at("source", "repository")

    @property
    def work_unit(self) -> Ref:
        return Ref.read(self.value.get("work_unit"))

    @property
    def source_revision(self) -> object:
        return self.at("source", "revision")

    @property
    def evaluator(self) -> EvaluatorRef:
        return EvaluatorRef.read(self.value.get("evaluator"))

    @property
    def plan_digest(self) -> object:
        return self.at("evaluator", "plan_digest")

    @property
    def declared_signatures(self) -> frozenset[str]:
        return str_set(self.value.get("declared_structural_signatures"))

    @property
    def declared_signature_list(self) -> tuple[object, ...]:
        """``declared_structural_signatures`` in recorded order, each as recorded."""
        return tuple(as_list(self.value.get("declared_structural_signatures")))

    @property
    def required_metrics(self) -> frozenset[str]:
        return str_set(self.at("accounting", "required_metrics"))

    @property
    def evidence_status(self) -> object:
        """``evidence.status`` as recorded (``verified``, ``excluded``, ...)."""
        return self.at("evidence", "status")

    @property
    def exclusion_reason(self) -> str | None:
        return as_str(self.at("evidence", "exclusion_reason"))

    @cached_property
    def attempts(self) -> tuple[Attempt, ...]:
        return tuple(Attempt(i, a) for i, a in enumerate(maps(self.at("evidence", "attempts"))))


class CohortMembers:
    """The typed members of a cohort value, shared by ``Cohort`` (a document with its
    bytes) and ``CohortView`` (a value only: a draft being frozen, a gate's input)."""

    value: JsonObject

    @property
    def id(self) -> object:
        return self.value.get("id")

    @property
    def stage(self) -> object:
        return self.value.get("stage")

    @property
    def title(self) -> str | None:
        return as_str(self.value.get("title"))

    @property
    def description(self) -> str | None:
        return as_str(self.value.get("description"))

    @cached_property
    def tasks(self) -> tuple[Task, ...]:
        """The object entries of ``tasks`` (non-objects dropped), in order."""
        return Task.all_of(self.value)

    @property
    def extensions(self) -> JsonObject:
        return as_map(self.value.get("extensions"))

    def extension(self, namespace: str, name: str) -> object:
        """``extensions[namespace][name]`` as recorded, None when a step is missing."""
        return at(self.value, "extensions", namespace, name)

    @property
    def task_count(self) -> int:
        """How many entries ``tasks`` records (objects or not); 0 when it is no array."""
        tasks = self.value.get("tasks")
        return len(tasks) if isinstance(tasks, list) else 0

    @property
    def recorded_definition_digest(self) -> str | None:
        """The ``definition_digest`` the document records, if it records a string."""
        return as_str(self.value.get("definition_digest"))

    @property
    def minimum_final_tasks(self) -> object:
        return self.value.get("minimum_final_tasks")

    @property
    def required_families(self) -> tuple[object, ...]:
        return tuple(as_list(self.value.get("required_families")))


@dataclass(frozen=True)
class CohortView(CohortMembers):
    """A cohort's typed members over a value not (yet) stored; no bytes, no digests."""

    value: JsonObject = field(repr=False, compare=False)

    @classmethod
    def of(cls, value: object) -> CohortView:
        """The view of a cohort value; a value that is not an object reads as empty
        (a gate reports on it, never crashes)."""
        return cls(as_map(value))


@dataclass(frozen=True)
class Cohort(Document, CohortMembers):
    """An IDKMesh benchmark cohort: its tasks, stage and lineage extensions."""

    kind: ClassVar[str] = "benchmark-cohort"
