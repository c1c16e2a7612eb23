"""Provenance of one VerificationResult: every link of its chain, checked against bytes.

``provenance_of(store, ref)`` resolves a digest (either scheme), unique prefix or
id[@version] to a stored VerificationResult (else NotFound / InputError, exit 3; a
digest some cohort lists but the ledger lacks is explained). ``provenance(store,
digest)`` walks result -> ResultManifest -> WorkUnit and EvaluatorPlan (bindings
replayed; a reference that names nothing is "missing", one whose id is stored under
other bytes is "present but different", both digests shown), the artifacts and evidence
blobs (present, SHA-256 of the stored bytes), the attestations
(``ledger.trust.judgement``), cohort membership (which cohort lists the attempt, under
which digest, and what that means) and burn status, the evidence strength of the
verdict (``cohorts.strength``) with any behavioral evidence linked, and inclusion of
every chain object under the newest signed checkpoint (note verified with the ledger's
log key, proof verified against its root). Total: a broken link is a failed check,
never an exception. JSON shape::

    {"digest": str, "ok": bool,
     "outcome": "counted"|"excluded"|"mismatched"|"unlisted"|null,
     "checks": [{"name": str, "status": "passed"|"failed", "reason": str,
                 "subject": str|null, "children": [...same shape...]}],
     "preregistration": [one judgement per cohort listing this result
                         (``cohorts.timeline.Preregistration.to_json``)]}
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from cohorts.lookup import (
    BEHAVIORAL_EVIDENCE,
    StoredDoc,
    behavioral_confinement,
    other_bytes,
    resolve,
)
from cohorts.standing import StandingLookup
from cohorts.store_lookup import StoreLookup
from cohorts.timeline import STATUS_TEXT, Preregistration, Timeline
from cohorts.validation import schema_validator
from ledger.encoding.digest import sha256_digest
from ledger.errors import LedgerError
from ledger.log.cosignature import WitnessKey
from ledger.store.base import LedgerReader
from verifiers.model import Cohort, EvaluatorPlan, ResultManifest, VerificationResult, WorkUnit
from verifiers.model.json import as_map, as_str, shown

if TYPE_CHECKING:
    from verifiers.replay import Replay

Status = Literal["passed", "failed"]


@dataclass(frozen=True)
class Check:
    """One named check; a parent fails when any child fails."""

    name: str
    status: Status
    reason: str
    subject: str | None = None
    children: tuple[Check, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return self.status == "passed" and all(c.ok for c in self.children)

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.name,
            "status": "passed" if self.ok else "failed",
            "reason": self.reason,
            "subject": self.subject,
            "children": [c.to_json() for c in self.children],
        }


@dataclass(frozen=True)
class ProvenanceReport:
    digest: str
    checks: tuple[Check, ...]
    outcome: str | None
    preregistration: tuple[Preregistration, ...] = ()
    replay: Replay | None = None

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def outcome_meaning(self) -> str:
        """What ``outcome`` means, in one sentence (``OUTCOME_MEANING``)."""
        return OUTCOME_MEANING.get(self.outcome or "", "")

    def to_json(self) -> dict[str, object]:
        return {
            "digest": self.digest,
            "ok": self.ok,
            "outcome": self.outcome,
            "checks": [c.to_json() for c in self.checks],
            "preregistration": [p.to_json() for p in self.preregistration],
            "replay": None if self.replay is None else self.replay.to_json(),
        }


#: What each ``ProvenanceReport.outcome`` means, in one sentence (``provenance`` prints it).
OUTCOME_MEANING = {
    "counted": "a stored cohort lists this result and counts its outcome",
    "excluded": "a stored cohort lists this result but excludes its outcome (burned or excluded)",
    "mismatched": "a stored cohort lists this attempt under another digest: not this result",
    "unlisted": "no stored cohort lists this result: it counts toward no benchmark outcome",
}


def _c(name: str, ok: bool, passed: str, failed: str, subject: str | None = None) -> Check:
    return Check(name, "passed" if ok else "failed", passed if ok else failed, subject)


def _group(name: str, children: list[Check], subject: str | None = None) -> Check:
    bad = [c.name for c in children if not c.ok]
    reason = "all passed" if not bad else f"failed: {', '.join(bad)}"
    return Check(name, "passed", reason, subject, tuple(children))


class _Chain:
    def __init__(self, reader: LedgerReader, witness_keys: Sequence[WitnessKey] = ()) -> None:
        self.reader = reader
        self.witness_keys = witness_keys
        self.lookup = StoreLookup(reader)
        self.members: list[str] = []  # ledger digests of chain objects, for inclusion
        self.preregistration: list[Preregistration] = []

    @functools.cached_property
    def timeline(self) -> Timeline:
        """Made only when a cohort lists the result (it reads markers and checkpoints)."""
        return Timeline(self.reader, witness_keys=self.witness_keys)

    def object_checks(
        self, what: str, kind: str, digest: object, object_id: object = None, version: object = None
    ) -> tuple[StoredDoc | None, list[Check]]:
        """Resolve ``digest`` (either scheme) to a stored ``kind``; re-hash its bytes.

        When nothing is stored under ``digest``, a stored ``kind`` with the recorded id
        makes the failure "present but different" (both digests shown), else "missing".
        """
        if not isinstance(digest, str):
            return None, [Check("present", "failed", f"{what} digest not recorded")]
        doc = self.lookup.by_digest(digest)
        if doc is None or doc.kind != kind:
            other = (
                self.lookup.find(kind, object_id, version if isinstance(version, int) else None)
                if isinstance(object_id, str)
                else None
            )
            if other is not None:
                reason = (
                    f"{what} present but different: the result records {digest}, the stored"
                    f" {what} {object_id} has legacy {other.legacy_digest} and JCS"
                    f" {other.jcs_digest}, expected one of them to equal the recorded digest"
                )
                return None, [Check("present", "failed", reason, other.jcs_digest)]
            got = "nothing" if doc is None else f"a {doc.kind}"
            named = f" or id {object_id}" if isinstance(object_id, str) else ""
            return None, [
                Check(
                    "present",
                    "failed",
                    f"{what} missing: not in the ledger, got {got} for {digest}{named},"
                    f" expected the {what} stored",
                    digest,
                )
            ]
        obj = self.reader.get(doc.jcs_digest)
        checks = [
            Check("present", "passed", f"{what} stored as {doc.jcs_digest}", doc.jcs_digest),
            _c(
                "bytes",
                obj is not None and sha256_digest(raw_bytes(obj.data)) == doc.jcs_digest,
                "stored bytes hash to the digest",
                f"stored bytes do not hash to {doc.jcs_digest}",
            ),
        ]
        problems = schema_validator(kind, doc.value)
        checks.append(
            _c("schema", not problems, f"valid {kind}", f"schema: {'; '.join(problems[:3])}")
        )
        self.members.append(doc.jcs_digest)
        return doc, checks


def raw_bytes(data: object) -> bytes:
    """Stored bytes; a tampered row may come back as TEXT, which must still be judged."""
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    return str(data).encode("utf-8")


def _eq(name: str, got: object, expected: object, what: str) -> Check:
    return _c(
        name,
        got == expected,
        f"{what} matches",
        f"{what}, got {shown(got)}, expected {shown(expected)}",
    )


def _names(doc: StoredDoc | None, digest: object) -> bool:
    return doc is not None and doc.scheme_for(digest) is not None


def _blobs(chain: _Chain, refs: list[tuple[str, object]]) -> Check:
    children: list[Check] = []
    for label, digest in refs:
        obj = chain.reader.get(digest) if isinstance(digest, str) else None
        if obj is None and isinstance(digest, str):
            # Evidence may name a protocol object by upstream's legacy digest.
            doc = chain.lookup.by_digest(digest)
            if doc is not None:
                children.append(
                    Check(
                        label,
                        "passed",
                        f"present as {doc.kind} {doc.jcs_digest} (legacy digest {digest})",
                        digest,
                    )
                )
                chain.members.append(doc.jcs_digest)
                continue
        if obj is None:
            children.append(
                Check(
                    label,
                    "failed",
                    f"missing: not in the ledger, got nothing for {digest}, expected the bytes"
                    " stored (import or append them)",
                )
            )
            continue
        assert isinstance(digest, str)  # a row was read by it
        ok = sha256_digest(raw_bytes(obj.data)) == digest
        children.append(
            _c(label, ok, "present, sha256 matches", f"bytes hash differs from {digest}", digest)
        )
        chain.members.append(obj.digest)
    if not children:
        return Check("artifacts", "passed", "no artifacts or evidence named")
    return _group("artifacts", children)


def _attestations(chain: _Chain, digest: str, result: VerificationResult) -> Check:
    from ledger.trust.judgement import check_subject_attestations, subject_verdict

    try:
        verdicts = check_subject_attestations(chain.reader, digest, chain.reader.policy)
    except LedgerError as exc:
        return Check("attestation", "failed", f"attestations unreadable: {exc}")
    ok, reason = subject_verdict(verdicts)
    children = [
        _c(
            f"attestation {v.attestation_digest}",
            v.ok,
            f"valid, signer {v.signer} key {v.key_id}",
            "; ".join(f"{f.code}: {f.message}" for f in v.failures),
            v.attestation_digest,
        )
        for v in verdicts
    ]
    for v in verdicts:
        if v.attestation_digest:
            chain.members.append(v.attestation_digest)
    verifier = as_str(result.verifier[0])
    by_verifier = [v for v in verdicts if v.ok and v.signer == "verifier"]
    children.append(
        _c(
            "verifier identity",
            any(v.verifier_id == verifier for v in by_verifier),
            f"attested by registered verifier {verifier}",
            f"no valid attestation by the registered verifier, got"
            f" {[v.verifier_id for v in verdicts]}, expected {verifier}",
        )
    )
    return Check("attestation", "passed" if ok else "failed", reason, digest, tuple(children))


def _behavioral(chain: _Chain, digest: str) -> Check | None:
    """Behavioral evidence attached to the result, each shown confined or UNCONFINED.

    It never changes the metadata verdict, so unconfined evidence is a visible note,
    not a failed link; None when the result has no behavioral evidence."""
    children = []
    for source, _rel in chain.reader.refs_to(digest, "verification-result"):
        doc = chain.lookup.by_digest(source)
        if doc is None or doc.kind != BEHAVIORAL_EVIDENCE:
            continue
        why = behavioral_confinement(doc.value)
        box = as_map(as_map(doc.value.get("environment")).get("sandbox"))
        # The verdict word leads, so a narrow rendering still shows it.
        name = "confined" if why is None else "UNCONFINED"
        how = f"{box.get('tool')} {box.get('version')}" if why is None else why
        children.append(Check(name, "passed", f"{how}, evidence {doc.jcs_digest}", doc.jcs_digest))
    if not children:
        return None
    unconfined = sum(1 for c in children if c.name == "UNCONFINED")
    reason = (
        f"{len(children)} confined"
        if not unconfined
        else f"UNCONFINED: {unconfined} of {len(children)} ran without a sandbox"
    )
    return Check("behavioral evidence", "passed", reason, digest, tuple(children))


def _cohorts(chain: _Chain, result: StoredDoc) -> tuple[Check, str]:
    """Which stored cohorts list this result, under which digest, and what that means.

    Listed by digest: the outcome counts (or is excluded: burned cohort, excluded task).
    Listed only by id, under another digest: the cohort names other bytes, so this
    stored result is not the evidence it counts (a failed check). Not listed: the
    result counts toward no benchmark outcome (passed, said plainly).
    """
    hits: list[Check] = []
    outcome = "unlisted"
    latest: dict[str, StoredDoc] = {}
    # Only cohorts with standing list an attempt (unattested history counts nothing);
    # any burn notice, attested or not, still marks a cohort's outcomes excluded.
    for doc in StandingLookup(chain.reader).of_kind("benchmark-cohort"):
        cid = as_str(doc.value.get("id"))
        if cid:
            latest[cid] = doc
    burned_ids = {as_str(n.value.get("cohort_id")) for n in chain.lookup.of_kind("burn-notice")}
    for cid, doc in sorted(latest.items()):
        cohort = doc.model(Cohort)
        for task in cohort.tasks:
            for attempt in task.attempts:
                ref = attempt.verification_result
                recorded = ref.digest
                where = (
                    f"cohort {cid} (stage {cohort.stage}) lists task"
                    f" {task.id} attempt {attempt.id}"
                    f" (indexed outcome {attempt.outcome}) under {recorded}"
                )
                if _names(result, recorded):
                    judged = chain.timeline.judge(
                        doc.value,
                        task.label,
                        attempt.label,
                        resolve(chain.lookup, "verification-result", ref.id, recorded),
                    )
                    chain.preregistration.append(judged)
                    burned = cohort.stage == "burned" or cid in burned_ids
                    excluded = burned or task.evidence_status == "excluded"
                    outcome = "excluded" if excluded else "counted"
                    meaning = (
                        "the cohort is burned: this outcome is excluded from claims"
                        if burned
                        else "the task is excluded: this outcome is not counted"
                        if excluded
                        else "this outcome counts for the cohort"
                    )
                    scheme = result.scheme_for(recorded)
                    hits.append(
                        Check(
                            f"cohort {cid}",
                            "passed",
                            f"{where}, which is this result ({scheme} digest): {meaning}",
                            cid,
                            (_preregistration_check(judged),),
                        )
                    )
                elif ref.id == result.object_id and result.object_id is not None:
                    if outcome == "unlisted":
                        outcome = "mismatched"
                    hits.append(
                        Check(
                            f"cohort {cid}",
                            "failed",
                            f"{where}: {other_bytes(recorded, result)}",
                            cid,
                        )
                    )
    if not hits:
        return (
            Check(
                "cohorts",
                "passed",
                "no stored cohort lists this result (by digest or by id): it counts toward"
                " no benchmark outcome",
            ),
            outcome,
        )
    return _group("cohorts", hits), outcome


def _preregistration_check(judged: Preregistration) -> Check:
    """The pre-registration judgement as a check: only "not pre-registered" fails (order
    not attested is a statement, not a failure)."""
    status: Status = "failed" if judged.status == "not_pre_registered" else "passed"
    children = []
    for position in (judged.result, *judged.records):
        if position is None:
            continue
        ok = position.seq is not None and position.in_time
        children.append(
            Check(position.role, "passed" if ok else "failed", position.phrase(), position.digest)
        )
    if judged.checkpoint is not None:
        # A cosignature by a trusted witness that does not verify is a forged line.
        forged = any(c.verified is False for c in judged.checkpoint.cosignatures)
        children.append(
            Check("checkpoint", "failed" if forged else "passed", judged.checkpoint.line())
        )
    return Check(
        "pre-registration",
        status,
        f"{STATUS_TEXT[judged.status]}: {judged.reason}",
        None,
        tuple(children),
    )


def _strength(chain: _Chain, result: StoredDoc, plan: StoredDoc | None) -> Check:
    """What the verdict can mean (from the plan version) and any behavioral evidence."""
    from cohorts.strength import BEHAVIORAL, strength_of, verdict_line

    verdict = result.model(VerificationResult)
    strength = strength_of(None if plan is None else plan.model(EvaluatorPlan), verdict)
    children: list[Check] = []
    for source, _rel in chain.reader.refs_to(result.jcs_digest, "verification-result"):
        obj = chain.reader.get(source)
        if obj is None or obj.kind != "behavioral-evidence":
            continue
        doc = chain.lookup.doc(obj)
        summary = as_map(doc.value.get("summary")) if doc is not None else {}
        children.append(
            Check(
                f"behavioral evidence {source}",
                "passed",
                f"{BEHAVIORAL}: {shown(dict(summary), 200)}",
                source,
            )
        )
    linked = (
        f"; {len(children)} behavioral record(s) linked"
        if children
        else ("; no behavioral evidence recorded for this result")
    )
    return Check(
        "evidence strength",
        "passed",
        verdict_line(verdict, strength) + linked,
        strength.plan_version,
        tuple(children),
    )


def _inclusion(chain: _Chain) -> Check:
    from ledger.log import merkle
    from ledger.log.checkpoints import latest_checkpoint, prove_inclusion, verifier_key_of
    from ledger.log.note import open_checkpoint

    members = list(dict.fromkeys(chain.members))
    if not members:
        return Check("log inclusion", "failed", "no chain object to prove")
    needed = max(o.seq for o in (chain.reader.get(d) for d in members) if o is not None) + 1
    row = latest_checkpoint(chain.reader, needed)
    if row is None:
        return Check(
            "log inclusion",
            "failed",
            f"no signed checkpoint covers the chain, got none of size >= {needed},"
            " expected `provledger checkpoint` after the last append",
        )
    try:
        cp = open_checkpoint(row.note, verifier_key_of(chain.reader))
    except LedgerError as exc:
        return Check("log inclusion", "failed", f"checkpoint note does not verify: {exc}")
    children: list[Check] = []
    for digest in members:
        try:
            proof = prove_inclusion(chain.reader, digest, cp.size)
            merkle.verify_inclusion(
                proof.entry.seq, cp.size, merkle.leaf_hash(proof.leaf), proof.hashes, cp.root_hash
            )
            if proof.entry.digest != digest:
                raise LedgerError(f"entry names {proof.entry.digest}")
            children.append(Check(digest, "passed", f"leaf {proof.entry.seq} of {cp.size}"))
        except LedgerError as exc:
            children.append(Check(digest, "failed", f"inclusion does not verify: {exc}"))
    check = _group("log inclusion", children)
    return Check(
        check.name,
        check.status,
        f"checkpoint size {cp.size} signed by the log key; {check.reason}",
        None,
        check.children,
    )


def _listed_under(reader: LedgerReader, digest: str) -> str:
    """Where stored cohorts list ``digest`` as a VerificationResult, and what holds its id."""
    lookup = StoreLookup(reader)
    for record in lookup.of_kind("benchmark-cohort"):
        cohort = record.model(Cohort)
        for task in cohort.tasks:
            for attempt in task.attempts:
                ref = attempt.verification_result
                if ref.digest != digest:
                    continue
                text = (
                    f"; cohort {cohort.id} lists it for task {task.id}"
                    f" attempt {attempt.id} (id {ref.id})"
                )
                object_id = ref.id
                stored = (
                    lookup.find("verification-result", object_id)
                    if isinstance(object_id, str)
                    else None
                )
                if stored is not None:
                    text += (
                        f", and a result with that id is stored but different (legacy"
                        f" {stored.legacy_digest}, JCS {stored.jcs_digest}): run"
                        f" `provledger provenance {object_id}`"
                    )
                return text
    return ""


def provenance_of(
    store: LedgerReader,
    ref: str,
    *,
    replay: bool = False,
    witness_keys: Sequence[WitnessKey] = (),
) -> ProvenanceReport:
    """Provenance of the VerificationResult ``ref`` names: a digest (either scheme), a
    unique digest prefix, an id or id@version. Not found / malformed / not a
    VerificationResult raise (exit 3); a failed chain is a report with ``ok`` False."""
    from ledger.errors import InputError, NotFound
    from ledger.store.resolve import resolve_stored

    try:
        obj = resolve_stored(store, ref)
    except NotFound as exc:
        raise NotFound(f"{exc}{_listed_under(store, ref)}") from None
    if obj.kind != "verification-result":
        raise InputError(
            f"provenance needs a VerificationResult, got a {obj.kind} ({obj.digest}) for"
            f" {ref}, expected the digest, prefix or id of a verification-result"
        )
    return provenance(store, obj.digest, replay=replay, witness_keys=witness_keys)


def provenance(
    store: LedgerReader,
    digest: str,
    *,
    replay: bool = False,
    witness_keys: Sequence[WitnessKey] = (),
) -> ProvenanceReport:
    """Check the whole chain of the VerificationResult ``digest`` (either scheme);
    cosignatures by ``witness_keys`` on a pre-registration's checkpoint are verified."""
    chain = _Chain(store, witness_keys)
    stored, result_checks = chain.object_checks("VerificationResult", "verification-result", digest)
    checks = [_group("verification result", result_checks, digest)]
    if stored is None:
        return ProvenanceReport(digest, tuple(checks), None)
    result = stored.model(VerificationResult)
    manifest, m_check = _manifest_link(chain, result)
    wu, w_check = _work_unit_link(chain, result, manifest)
    plan, p_check = _plan_link(chain, result, wu)
    checks += [m_check, w_check, p_check]
    checks.append(_blobs(chain, _artifact_refs(result, manifest)))
    checks.append(_attestations(chain, stored.jcs_digest, result))
    behavioral = _behavioral(chain, stored.jcs_digest)
    if behavioral is not None:
        checks.append(behavioral)
    cohort_check, outcome = _cohorts(chain, stored)
    checks.append(cohort_check)
    checks.append(_strength(chain, stored, plan))
    checks.append(_inclusion(chain))
    rejudged = None
    if replay:
        from cohorts.rejudge import replay_stored

        rejudged = replay_stored(store, stored.jcs_digest)
        if rejudged is not None:
            checks.append(_replay_check(rejudged))
    return ProvenanceReport(digest, tuple(checks), outcome, tuple(chain.preregistration), rejudged)


def _replay_check(rejudged: Replay) -> Check:
    """The re-judgement as a check: only "reproduced" passes."""
    children = [Check(f"differs {p}", "failed", "stored and recomputed differ") for p in
                rejudged.differing]  # fmt: skip
    children += [Check(f"missing {m}", "failed", "not in the ledger") for m in rejudged.missing]
    return Check(
        "replay",
        "passed" if rejudged.ok else "failed",
        rejudged.line(),
        rejudged.recomputed_digest,
        tuple(children),
    )


def _manifest_link(
    chain: _Chain, result: VerificationResult
) -> tuple[ResultManifest | None, Check]:
    """The ResultManifest the result names: stored, and agreeing on id, WorkUnit, attempt."""
    stored, checks = chain.object_checks(
        "ResultManifest",
        "result-manifest",
        result.result_manifest_digest,
        result.result_manifest_id,
    )
    manifest = None if stored is None else stored.model(ResultManifest)
    if manifest is not None:
        checks += [
            _eq("id", manifest.id, result.result_manifest_id, "manifest id"),
            _eq("work unit", manifest.work_unit_id, result.work_unit_id, "manifest WorkUnit id"),
            _eq("attempt", manifest.attempt, result.attempt, "attempt number"),
        ]
    return manifest, _group("result manifest", checks)


def _work_unit_link(
    chain: _Chain, result: VerificationResult, manifest: ResultManifest | None
) -> tuple[StoredDoc | None, Check]:
    """The WorkUnit the result names: stored, same id and version, the manifest's too."""
    wu, checks = chain.object_checks(
        "WorkUnit",
        "work-unit",
        result.work_unit_digest,
        result.work_unit_id,
        result.work_unit_version,
    )
    if wu is not None:
        work_unit = wu.model(WorkUnit)
        checks += [
            _eq("id", work_unit.id, result.work_unit_id, "WorkUnit id"),
            _eq("version", work_unit.version, result.work_unit_version, "WorkUnit version"),
        ]
        if manifest is not None:
            md = manifest.work_unit_digest
            checks.append(
                _c(
                    "manifest binding",
                    _names(wu, md),
                    "manifest names this WorkUnit",
                    f"manifest names WorkUnit {md}, expected {wu.legacy_digest}",
                )
            )
            checks.append(
                _eq(
                    "source revision",
                    result.source_revision,
                    manifest.source_revision,
                    "result vs manifest source revision",
                )
            )
    return wu, _group("work unit", checks)


def _plan_link(
    chain: _Chain, result: VerificationResult, wu: StoredDoc | None
) -> tuple[StoredDoc | None, Check]:
    """The EvaluatorPlan the result ran under: stored, bound to the same WorkUnit and
    source, naming the verifier that ran and the checks it reports."""
    stored, checks = chain.object_checks(
        "EvaluatorPlan", "evaluator-plan", result.verifier_config_digest
    )
    if stored is not None:
        plan = stored.model(EvaluatorPlan)
        bound = plan.bound_work_unit
        checks += [
            _eq(
                "binding.work_unit_id",
                bound.id,
                result.work_unit_id,
                "plan binding WorkUnit id",
            ),
            _eq(
                "binding.work_unit_version",
                bound.version,
                result.work_unit_version,
                "plan binding WorkUnit version",
            ),
            _c(
                "binding.work_unit_digest",
                _names(wu, bound.digest),
                "plan bound to this WorkUnit's digest",
                f"plan bound to {bound.digest}, expected the result's WorkUnit",
            ),
            _eq(
                "binding.source_revision",
                plan.bound_source_revision,
                result.source_revision,
                "plan binding source revision",
            ),
            _eq(
                "verifier",
                result.verifier_member,
                plan.verifier_member,
                "verifier that ran vs plan",
            ),
            _eq(
                "required checks",
                sorted(str(i) for i in result.check_ids),
                sorted(str(i) for i in plan.required_validator_ids),
                "result checks vs plan required validators",
            ),
        ]
    return stored, _group("evaluator plan", checks)


def _artifact_refs(
    result: VerificationResult, manifest: ResultManifest | None
) -> list[tuple[str, object]]:
    """(label, digest) of every artifact, log and evidence blob the chain names."""
    refs: list[tuple[str, object]] = []
    if manifest is not None:
        refs += [(f"artifact {a.get('id')}", a.get("digest")) for a in manifest.produced_artifacts]
        refs += [(f"log {log.get('type')}", log.get("digest")) for log in manifest.logs]
    refs += [(f"evidence {e.get('id')}", e.get("digest")) for e in result.evidence]
    return refs
