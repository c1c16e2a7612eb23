"""Rows of the browse database for one ledger object, read in log order.

``Projector.rows(obj)`` turns one stored object into rows of the tables declared in
``tables``. It only looks at objects *before* ``obj`` in the log (the log prefix), so
projecting a ledger in one go or in several incremental runs gives the same rows.
Cross-object facts that arrive later (a burn notice for an already stored cohort) are
``Update``s applied to rows written earlier, again in log order.

Nothing here writes: ``build`` owns the browse database.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from cohorts.browse.names import GOVERNED_TABLES
from cohorts.browse.tables import TABLES
from cohorts.definition import definition_digests
from ledger.errors import LedgerError
from ledger.recent import FirstSeen
from ledger.store.aliases import by_legacy_digest
from ledger.store.base import LedgerReader, StoredObject
from ledger.trust.dsse import pae, payload_type_for
from ledger.trust.identity import authority_key
from ledger.trust.judgement import SignatureMemo
from ledger.trust.keys import key_id, public_key_from_raw, verify
from ledger.trust.standing import Standing
from verifiers.model import (
    CohortView,
    Document,
    EvaluatorPlan,
    ResultManifest,
    VerificationResult,
    WorkUnit,
)
from verifiers.model.json import JsonObject, as_int, as_list, as_str, at, maps

if TYPE_CHECKING:
    from cohorts.timeline import Timeline
    from ledger.encoding.values import JSONObject

Row = dict[str, Any]  # a sqlite3 row by column name: the driver's values, untyped

AUTHORITY = "authority"
RECENT = 4096  # objects the projector keeps to pair attestations with their subjects
D = TypeVar("D", bound=Document)


@dataclass(frozen=True)
class Update:
    """Set ``values`` on rows of ``table`` whose ``match_column`` equals ``match_value``
    and whose ``seq`` is below ``before_seq``."""

    table: str
    match_column: str
    match_value: str
    before_seq: int
    values: Row


@dataclass
class Projection:
    """Rows per table plus updates, from one object; ``tuples`` are rows already in
    their table's column order (``COLUMNS``)."""

    rows: dict[str, list[Row]] = field(default_factory=dict)
    updates: list[Update] = field(default_factory=list)
    tuples: list[tuple[str, tuple[object, ...]]] = field(default_factory=list)

    def add(self, table: str, row: Row) -> None:
        self.rows.setdefault(table, []).append(row)


# objects.text holds at most this many characters: every served value and every page of
# the objects table must stay within the served-SQL bounds (cohorts.browse.web.BOUNDS).
TEXT_LIMIT = 256 * 1024


def pretty_text(obj: StoredObject) -> str | None:
    """Canonical JSON pretty-printed (member order and every token's spelling kept: only
    whitespace is added); a blob as UTF-8 text or None.

    Longer than ``TEXT_LIMIT`` characters: the first ``TEXT_LIMIT``, then a line saying so.
    """
    if obj.kind == "blob":
        try:
            text = obj.data.decode("utf-8")
        except UnicodeDecodeError:
            return None
    else:
        try:
            # Re-indents the bytes as they are (in C), without parsing them into Python values.
            text = msgspec.json.format(obj.data, indent=2).decode("utf-8")
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            text = obj.data.decode("utf-8", errors="replace")
    if len(text) <= TEXT_LIMIT:
        return text
    return (
        text[:TEXT_LIMIT] + f"\n[cut at {TEXT_LIMIT} of {len(text)} characters;"
        f" `provledger show --raw {obj.digest}` prints the whole object]"
    )


_LEADING_NUMBER = re.compile(r"^(task-)?\d+-")


def task_title(task_id: str) -> str:
    """A readable title from a task id: last path segment, number dropped, dashes spaced.

    ``benchmark/phase-b2/001-cohort-path-boundary`` -> ``Cohort path boundary``.
    """
    slug = _LEADING_NUMBER.sub("", task_id.rsplit("/", 1)[-1])
    words = slug.replace("_", " ").replace("-", " ").strip()
    return words[:1].upper() + words[1:] if words else task_id


class Projector:
    """Projects objects of one ledger, in log order. Keeps the keys seen so far."""

    def __init__(self, reader: LedgerReader, memo: SignatureMemo | None = None) -> None:
        self.reader = reader
        authority = authority_key(reader)
        self.authority_key_id = None if authority is None else key_id(authority)
        self._authority = authority
        # Ed25519 verdicts computed ahead by the object checks' workers; it answers only
        # for exactly the key, message and signature asked, else verifies here.
        self._memo = memo
        self._authority_bytes: bytes | None = None
        # Which records count: the one computation (ledger.trust.standing), judged as of
        # each record's position, so incremental and full builds agree.
        self._standing = Standing(reader)
        # key id -> (verifier id, raw public key) of identities already projected.
        self._identities: dict[str, tuple[str, bytes]] = {}
        self._appended_at = ""  # log time of the object being projected
        self._timeline: Timeline | None = None  # made on the first cohort object
        # Objects projected last (already checked): an attestation's subject is usually
        # among them, so pairing it costs no second read (and re-derivation) of its row.
        self._recent: FirstSeen[str, StoredObject] = FirstSeen(RECENT)

    def remember_identity(self, obj: StoredObject) -> None:
        """Learn the key of an identity object (also for objects projected in earlier runs)."""
        value = _load(obj)
        raw_text = as_str(at(value, "public_key", "raw"))
        verifier = as_str(at(value, "verifier_id"))
        if raw_text is None or verifier is None:
            return
        try:
            raw = base64.b64decode(raw_text, validate=True)
            kid = key_id(raw)
        except (binascii.Error, ValueError, LedgerError):
            return
        self._identities.setdefault(kid, (verifier, raw))

    def _get(self, digest: str) -> StoredObject | None:
        return self._recent.get(digest) or self.reader.get(digest)

    def rows(
        self, obj: StoredObject, appended_at: str, built: Prebuilt | None = None
    ) -> Projection:
        """``obj``'s rows; ``built``: ``prebuild(obj, ...)`` computed already (in the
        process that checked the object), else computed here."""
        out = Projection()
        self._recent.add(obj.digest, obj)
        text, pure, attested = prebuild(obj, None) if built is None else built
        out.tuples.append(
            (
                "objects",
                (
                    obj.digest,
                    obj.seq,
                    obj.kind,
                    obj.object_id,
                    obj.object_version,
                    obj.schema_version,
                    appended_at,
                    len(obj.data),
                    obj.legacy_digest if obj.legacy_digest not in (None, obj.digest) else None,
                    text,
                ),
            )
        )
        if pure is not None:
            out.tuples.append(pure)
            return out
        if attested is not None:
            self._attest(obj, attested, out)
            return out
        handler = _HANDLERS.get(obj.kind)
        if handler is not None:
            value = _load(obj)
            if value is None:
                return out
            self._appended_at = appended_at
            handler(self, obj, value, out)
        return out

    def standing_text(self, obj: StoredObject) -> str:
        """A governed record's standing before its authority attestation is projected
        (that attestation's row updates it to "counts"); any other record's standing."""
        # Judged at its own position only: the attestation that may establish it later
        # is judged when that attestation's row is projected (``_counted``).
        refusal = self._standing.refusal(obj, obj.seq + 1)
        if refusal is not None:
            return f"refused by admission: {refusal.rule}"
        if self._standing.policy.governed(obj, self.reader) is not None:
            return UNATTESTED
        return COUNTS

    # -- kinds -----------------------------------------------------------------------
    def _cohort(self, obj: StoredObject, value: Mapping[str, object], out: Projection) -> None:
        cohort = CohortView.of(value)
        cohort_id = as_str(cohort.id)
        jcs: str | None
        legacy: str | None
        try:
            digests = definition_digests(value)
            jcs, legacy = digests.jcs, digests.legacy
        except LedgerError:
            jcs = legacy = None
        tasks = cohort.tasks
        out.add(
            "cohorts",
            {
                "digest": obj.digest,
                "seq": obj.seq,
                "standing": (standing := self.standing_text(obj)),
                "counts_from": obj.seq if standing == COUNTS else None,
                "cohort_id": cohort_id,
                "title": cohort.title,
                "description": cohort.description,
                "stage": as_str(cohort.stage),
                "definition_digest": cohort.recorded_definition_digest,
                "definition_digest_jcs": jcs,
                "definition_digest_legacy": legacy,
                "task_count": cohort.task_count,
                "minimum_final_tasks": as_int(cohort.minimum_final_tasks),
                "burned_at": None,
                "burn_recorded_at": None,
                "burn_reason": None,
                "burn_notice_digest": None,
            },
        )
        self._preregistration(obj, value, out)
        for task in tasks:  # stored cohorts are schema-valid: every task is an object
            task_id = as_str(task.id) or ""
            wu_digest = as_str(task.work_unit.digest)
            out.add(
                "tasks",
                {
                    "cohort_digest": obj.digest,
                    "cohort_id": cohort_id,
                    "position": task.index,
                    "task_id": task_id,
                    "title": task_title(task_id),
                    "family": as_str(task.family),
                    "difficulty": as_str(task.difficulty),
                    "split": as_str(task.split),
                    "status": as_str(task.evidence_status),
                    "exclusion_reason": task.exclusion_reason,
                    "work_unit_id": as_str(task.work_unit.id),
                    "work_unit_digest": wu_digest,
                    "plan_id": as_str(task.evaluator.plan_id),
                    "plan_digest": as_str(task.evaluator.plan_digest),
                    "objective": self._objective(wu_digest, obj.seq),
                },
            )

    def _preregistration(
        self, obj: StoredObject, value: Mapping[str, object], out: Projection
    ) -> None:
        """One row per listed outcome, judged from the log before this cohort object
        (``cohorts.timeline``; the horizon makes a later build give the same row)."""
        from cohorts.lookup import VERIFICATION_RESULT, resolve
        from cohorts.timeline import Timeline

        if self._timeline is None:
            self._timeline = Timeline(self.reader)
        timeline = self._timeline
        # The log before this object, and the object itself: a listing that is the
        # cohort's own first fixed record tells whether the ledger fixed the cohort.
        timeline.horizon = obj.seq + 1
        cohort = CohortView.of(value)
        for task in cohort.tasks:
            for attempt in task.attempts:
                ref = attempt.verification_result
                judged = timeline.judge(
                    value,
                    task.label,
                    attempt.label,
                    resolve(timeline.standing.raw, VERIFICATION_RESULT, ref.id, ref.digest),
                )
                seqs = {p.role: p.seq for p in judged.records if p.in_time}
                calibrations = [
                    str(p.seq) for p in judged.records if p.role == "calibration record" and p.seq
                ]
                out.add(
                    "preregistration",
                    {
                        "cohort_digest": obj.digest,
                        "cohort_id": as_str(cohort.id),
                        "task_position": task.index,
                        "attempt_position": attempt.index,
                        "task_id": task.label,
                        "attempt_id": attempt.label,
                        "result_digest": as_str(ref.digest),
                        "status": judged.status,
                        "reason": judged.reason,
                        "result_seq": None if judged.result is None else judged.result.seq,
                        "freeze_seq": seqs.get("cohort frozen"),
                        "plan_seq": seqs.get("plan"),
                        "binding_seq": seqs.get("binding"),
                        "calibration_seqs": ", ".join(calibrations) or None,
                        "checkpoint_size": None
                        if judged.checkpoint is None
                        else judged.checkpoint.size,
                    },
                )

    def _objective(self, digest: str | None, before: int) -> str | None:
        if digest is None:
            return None
        found = self._get(digest)
        if found is None:
            legacy = by_legacy_digest(self.reader, digest)
            found = legacy[0][0] if legacy else None
        if found is None or found.seq >= before or found.kind != "work-unit":
            return None
        value = _load(found)
        return None if value is None else _model(WorkUnit, found, value).objective

    def _burn_notice(self, obj: StoredObject, value: Mapping[str, object], out: Projection) -> None:
        cohort_id = as_str(value.get("cohort_id")) or ""
        excluded = maps(value.get("excluded_outcomes"))
        latest = [
            o for o in self.reader.by_id(cohort_id, kind="benchmark-cohort") if o.seq < obj.seq
        ]
        reason = as_str(value.get("reason"))
        issued_at = as_str(value.get("issued_at"))
        out.add(
            "burn_notices",
            {
                "digest": obj.digest,
                "seq": obj.seq,
                "standing": self.standing_text(obj),
                "cohort_id": cohort_id,
                "cohort_digest": latest[-1].digest if latest else None,
                "reason": reason,
                "issued_at": issued_at,
                "recorded_at": self._appended_at,
                "definition_digest_jcs": as_str(at(value, "definition_digest", "jcs")),
                "definition_digest_legacy": as_str(at(value, "definition_digest", "legacy")),
                "excluded_count": len(excluded),
            },
        )
        for item in excluded:
            out.add(
                "excluded_outcomes",
                {
                    "burn_notice_digest": obj.digest,
                    "cohort_id": cohort_id,
                    "task_id": as_str(item.get("task")) or "",
                    "reason": as_str(item.get("reason")),
                },
            )
        for item in maps(value.get("never_again_held_out")):
            out.add(
                "observed_tasks",
                {
                    "burn_notice_digest": obj.digest,
                    "cohort_id": cohort_id,
                    "task_id": as_str(item.get("task")) or "",
                    "reason": as_str(item.get("reason")),
                },
            )
        # The cohort shows the burn once the notice counts (``_counted``).

    def _binding(self, obj: StoredObject, value: Mapping[str, object], out: Projection) -> None:
        carried = [
            f"{as_str(m.get('task'))} <- {as_str(m.get('predecessor_task'))}"
            for m in maps(value.get("carried_over"))
        ]
        out.add(
            "bindings",
            {
                "digest": obj.digest,
                "seq": obj.seq,
                "standing": self.standing_text(obj),
                "successor_id": as_str(value.get("successor_id")),
                "successor_definition_digest": _digest_text(
                    value.get("successor_definition_digest")
                ),
                "predecessor_id": as_str(value.get("predecessor_id")),
                "predecessor_definition_digest": _digest_text(
                    value.get("predecessor_definition_digest")
                ),
                "burn_notice_digest": as_str(value.get("burn_notice_digest")),
                "carried_over": "; ".join(carried),
            },
        )
        successor = as_str(value.get("successor_id"))
        plans = maps(value.get("evaluator_plans"))
        for position, plan in enumerate(plans):
            out.add(
                "binding_items",
                {
                    "binding_digest": obj.digest,
                    "position": position,
                    "successor_id": successor,
                    "what": "plan",
                    "task_id": as_str(plan.get("task")),
                    "plan_id": as_str(plan.get("plan_id")),
                    "plan_version": as_str(plan.get("plan_version")),
                    "digest": as_str(plan.get("plan_digest")),
                },
            )
        for offset, digest in enumerate(as_list(value.get("calibrations"))):
            out.add(
                "binding_items",
                {
                    "binding_digest": obj.digest,
                    "position": len(plans) + offset,
                    "successor_id": successor,
                    "what": "calibration",
                    "task_id": None,
                    "plan_id": None,
                    "plan_version": None,
                    "digest": as_str(digest),
                },
            )





    def _identity(self, obj: StoredObject, value: Mapping[str, object], out: Projection) -> None:
        self.remember_identity(obj)
        versions = [v for v in as_list(value.get("adapter_versions")) if isinstance(v, str)]
        out.add(
            "identities",
            {
                "digest": obj.digest,
                "seq": obj.seq,
                "verifier_id": as_str(value.get("verifier_id")),
                "adapter": as_str(value.get("adapter")),
                "adapter_versions": ", ".join(versions),
                "key_id": as_str(at(value, "public_key", "key_id")),
            },
        )



    def _attestation(self, obj: StoredObject, value: Mapping[str, object], out: Projection) -> None:
        self._attest(obj, attestation_fields(value), out)

    def _attest(self, obj: StoredObject, fields: AttestationFields, out: Projection) -> None:
        """The attestation's row from what its document says (``attestation_fields``)."""
        subject_digest, subject_kind, kid, payload_type, sig_text = fields
        signer, valid = self._signer(
            kid, subject_digest, subject_kind, payload_type, sig_text, obj.seq
        )
        out.add(
            "attestations",
            {
                "digest": obj.digest,
                "seq": obj.seq,
                "subject_digest": subject_digest,
                "subject_kind": subject_kind,
                "key_id": kid,
                "signer": signer,
                "signature_valid": int(valid),
            },
        )
        if signer == AUTHORITY and subject_digest is not None:
            self._counted(obj, subject_digest, out)

    def _counted(self, att: StoredObject, subject_digest: str, out: Projection) -> None:
        """A governed record counts from its authority attestation on: its row says so,
        and a burn notice's burn shows on the cohorts it burned."""
        subject = self._get(subject_digest)
        table = None if subject is None else GOVERNED_TABLES.get(subject.kind)
        if subject is None or table is None:
            return
        if not self._standing.has_standing(subject, att.seq + 1):
            if self._standing.established(subject) == att.seq:
                # Refused where this attestation would establish it (a state rule).
                refusal = self._standing.refusal(subject, att.seq + 1)
                if refusal is not None:
                    text = f"refused by admission: {refusal.rule}"
                    out.updates.append(
                        Update(table, "digest", subject.digest, att.seq, {"standing": text})
                    )
            return
        # It counts from this attestation on, not from its own seq.
        values: Row = {"standing": COUNTS}
        if table == "cohorts":
            values["counts_from"] = att.seq
        out.updates.append(Update(table, "digest", subject.digest, att.seq, values))
        notice = _load(subject) if subject.kind == "burn-notice" else None
        if notice is None:
            return
        recorded = next(iter(self.reader.entries(subject.seq, 1)), None)
        out.updates.append(
            Update(
                "cohorts",
                "cohort_id",
                as_str(notice.get("cohort_id")) or "",
                subject.seq,
                {
                    "burned_at": as_str(notice.get("issued_at")),
                    "burn_recorded_at": None if recorded is None else recorded.appended_at,
                    "burn_reason": as_str(notice.get("reason")),
                    "burn_notice_digest": subject.digest,
                },
            )
        )

    def _signer(
        self,
        kid: str | None,
        subject_digest: str | None,
        subject_kind: str | None,
        payload_type: str | None,
        sig_text: str | None,
        seq: int,
    ) -> tuple[str | None, bool]:
        """Who holds ``kid`` (the authority, or a registered verifier) and whether the
        signature over the stored subject bytes verifies with that key."""
        if kid is None or subject_digest is None:
            return None, False
        public: Any  # a key object of either signer, narrowed by the branch that sets it
        raw: bytes | None = None
        if kid == self.authority_key_id and self._authority is not None:
            signer, public = AUTHORITY, self._authority
        elif kid in self._identities:
            signer, raw = self._identities[kid]
            try:
                public = public_key_from_raw(raw)
            except LedgerError:
                return signer, False
        else:
            return None, False
        subject = self._get(subject_digest)
        if (
            subject is None
            or subject.seq >= seq
            or subject.kind != subject_kind
            or payload_type != payload_type_for(subject.kind)
        ):
            return signer, False
        try:
            sig = base64.b64decode(sig_text or "", validate=True)
        except (binascii.Error, ValueError):
            return signer, False
        message = pae(payload_type, subject.data)
        if self._memo is None:
            return signer, verify(public, message, sig)
        if raw is None:
            raw = self._authority_raw()
        return signer, self._memo.verify(raw, message, sig)

    def _authority_raw(self) -> bytes:
        if self._authority_bytes is None:
            assert self._authority is not None
            self._authority_bytes = self._authority.public_bytes_raw()
        return self._authority_bytes


#: What an attestation's row reads from its document: its subject's digest and kind,
#: and the key id and signature text of its one signature (None unless exactly one),
#: and its payload type.
AttestationFields = tuple[str | None, str | None, str | None, str | None, str | None]


def attestation_fields(value: Mapping[str, object]) -> AttestationFields:
    """(subject digest, subject kind, key id, payload type, signature text)."""
    sigs = maps(value.get("signatures"))
    one = sigs[0] if len(sigs) == 1 else None
    return (
        as_str(at(value, "subject", "digest")),
        as_str(at(value, "subject", "kind")),
        None if one is None else as_str(one.get("keyid")),
        as_str(value.get("payloadType")),
        None if one is None else as_str(one.get("sig")),
    )


def _load(obj: StoredObject) -> Mapping[str, object] | None:
    """The object's JSON value (``StoredObject.json()``), or None when not an object."""
    value = obj.json()
    return value if isinstance(value, Mapping) else None


def _digest_text(value: object) -> str | None:
    """A digest member that is either a string or ``{"jcs": ..., "legacy": ...}``."""
    if isinstance(value, str):
        return value
    jcs = as_str(at(value, "jcs"))
    legacy = as_str(at(value, "legacy"))
    if jcs and legacy and jcs != legacy:
        return f"{jcs} (legacy {legacy})"
    return jcs or legacy


COUNTS = "counts"
UNATTESTED = "unattested history"

_HANDLERS = {
    "benchmark-cohort": Projector._cohort,
    "burn-notice": Projector._burn_notice,
    "cohort-binding": Projector._binding,
    "verifier-identity": Projector._identity,
    "attestation": Projector._attestation,
}


#: The columns of a row built from the object alone, read from the document the check
#: parsed (``digest`` and ``seq`` are the object's own): column -> value.
Columns = Callable[[StoredObject, JsonObject], Mapping[str, object]]


def _model(cls: type[D], obj: StoredObject, value: JsonObject) -> D:
    """``obj`` as the protocol model's ``cls``, from the value its check parsed (no second
    parse: the check verified these bytes against the digest)."""
    return cls.stored(obj, value)


def _work_unit(obj: StoredObject, value: JsonObject) -> Mapping[str, object]:
    unit = _model(WorkUnit, obj, value)
    return {
        "work_unit_id": as_str(unit.id),
        "version": as_int(unit.version),
        "work_kind": unit.work_kind,
        "objective": unit.objective,
    }


def _plan(obj: StoredObject, value: JsonObject) -> Mapping[str, object]:
    plan = _model(EvaluatorPlan, obj, value)
    bound = plan.bound_work_unit
    return {
        "plan_id": as_str(plan.id),
        "schema_version": plan.schema_version,
        "backend": as_str(plan.backend_type),
        "visibility": plan.visibility,
        "work_unit_id": as_str(bound.id),
        "work_unit_digest": as_str(bound.digest),
    }


def _manifest(obj: StoredObject, value: JsonObject) -> Mapping[str, object]:
    manifest = _model(ResultManifest, obj, value)
    return {
        "manifest_id": as_str(manifest.id),
        "status": manifest.status,
        "worker_id": manifest.worker_id,
        "work_unit_id": as_str(manifest.work_unit_id),
    }


def _result(obj: StoredObject, value: JsonObject) -> Mapping[str, object]:
    result = _model(VerificationResult, obj, value)
    verifier_id, adapter, adapter_version = result.verifier
    return {
        "result_id": as_str(result.id),
        "status": result.status,
        "recommendation": as_str(result.recommendation),
        "rationale": result.rationale,
        "verifier_id": as_str(verifier_id),
        "verifier_adapter": as_str(adapter),
        "verifier_adapter_version": as_str(adapter_version),
        "work_unit_id": as_str(result.work_unit_id),
        "work_unit_digest": as_str(result.work_unit_digest),
        "result_manifest_digest": as_str(result.result_manifest_digest),
        "plan_digest": as_str(result.verifier_config_digest),
        "finished_at": result.finished_at,
    }


def _revocation(obj: StoredObject, value: JsonObject) -> Mapping[str, object]:
    """A provledger record, not a protocol object: read by path."""
    return {
        "key_id": as_str(value.get("key_id")),
        "reason": as_str(value.get("reason")),
        "note": as_str(value.get("note")),
    }


def _quarantine(obj: StoredObject, value: JsonObject) -> Mapping[str, object]:
    """A provledger record, not a protocol object: read by path."""
    return {
        "path": as_str(value.get("path")),
        "claimed_kind": as_str(value.get("claimed_kind")),
        "object_id": as_str(value.get("object_id")),
        "problems": "\n".join(p for p in as_list(value.get("problems")) if isinstance(p, str)),
        "blob_digest": as_str(value.get("blob_digest")),
    }


#: Kinds whose rows depend on the object alone (built where the object is checked):
#: kind -> (table, its columns). The four protocol kinds are read through the typed
#: model (``verifiers.model``), so a malformed member reads as the model reads it (None).
_PURE: dict[str, tuple[str, Columns]] = {
    WorkUnit.kind: ("work_units", _work_unit),
    EvaluatorPlan.kind: ("plans", _plan),
    ResultManifest.kind: ("manifests", _manifest),
    VerificationResult.kind: ("results", _result),
    "revocation": ("revocations", _revocation),
    "quarantine": ("quarantined", _quarantine),
}


#: Each table's columns in order: the order of ``Projection.tuples`` rows.
COLUMNS = {t.name: tuple(c.name for c in t.columns) for t in TABLES}
#: What ``prebuild`` makes of one object: its ``objects.text``; its row of a kind
#: projected from the object alone (``_PURE``) as ``(table, values in column order)``;
#: for an attestation, what its row reads from its document (``attestation_fields``:
#: the row itself needs the log before it).
Prebuilt = tuple[str | None, tuple[str, tuple[object, ...]] | None, AttestationFields | None]
ATTESTATION = "attestation"


def prebuild(obj: StoredObject, value: JSONObject | None) -> Prebuilt:
    """The part of ``obj``'s rows that depends on its bytes alone (no other object, no
    log position): built where the object is checked (``ledger.audit.parallel.Derive``,
    in the checking workers), from the document the check parsed (``value``; None: parse
    it here), so the projecting process only adds what needs the log before it."""
    pure = _PURE.get(obj.kind)
    if pure is None and obj.kind != ATTESTATION:
        return pretty_text(obj), None, None
    loaded = value if value is not None else _load(obj)
    if loaded is None:
        return pretty_text(obj), None, None
    if pure is None:
        return pretty_text(obj), None, attestation_fields(loaded)
    table, columns = pure
    read = columns(obj, loaded)
    own = {"digest": obj.digest, "seq": obj.seq}
    row = tuple(own[name] if name in own else read[name] for name in COLUMNS[table])
    return pretty_text(obj), (table, row), None
