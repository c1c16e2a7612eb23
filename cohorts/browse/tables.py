"""The browse database's tables, columns, full-text indexes and views, in one place.

Each table is declared once here with a title, a description and one sentence per
column; ``build`` creates the tables from these declarations and ``web`` turns the
same text into Datasette metadata, so the two cannot drift apart.

Invariants:
- Every table that projects ledger objects has a ``digest`` column (or a column named
  ``*_digest`` pointing at the object it came from), holding ``sha256:`` + 64 hex digits.
- Primary keys are stable across rebuilds, so an incremental build and a full build
  of the same ledger give the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    type: type
    description: str


@dataclass(frozen=True)
class Table:
    name: str
    title: str
    description: str
    columns: tuple[Column, ...]
    pk: tuple[str, ...]
    foreign_keys: tuple[tuple[str, str, str], ...] = ()
    fts: tuple[str, ...] = ()
    sort: str | None = None

    def column_types(self) -> dict[str, type]:
        return {c.name: c.type for c in self.columns}


@dataclass(frozen=True)
class View:
    name: str
    title: str
    description: str
    sql: str


def _c(name: str, kind: type, description: str) -> Column:
    return Column(name, kind, description)


DIGEST = _c("digest", str, "Ledger digest of the object this row came from (sha256 of its bytes).")
STANDING = _c(
    "standing",
    str,
    "Whether this record counts (the ledger's one computation of standing): 'counts';"
    " 'unattested history' (a frozen or burned cohort, burn notice or binding kept without"
    " an attestation by the ledger's authority key: never authority-issued); or 'refused by"
    " admission: RULE' (written past admission; provledger verify reports it).",
)
SEQ = _c("seq", int, "Position of the object in the ledger's log (0 = first entry).")

TABLES: tuple[Table, ...] = (
    Table(
        "objects",
        "Ledger objects",
        "Every object in the ledger, in log order, with its canonical JSON pretty-printed.",
        (
            DIGEST,
            SEQ,
            _c("kind", str, "Object kind (work-unit, evaluator-plan, burn-notice, blob, ...)."),
            _c("object_id", str, "The object's own id, when its kind has one."),
            _c("object_version", int, "The object's own version number, when it has one."),
            _c("schema_version", str, "Schema version the object was validated against."),
            _c("appended_at", str, "When the object was appended (UTC)."),
            _c("size", int, "Size of the stored bytes."),
            _c("legacy_digest", str, "Upstream IDKMesh digest (sorted-keys JSON), if it differs."),
            _c("text", str, "Pretty-printed canonical JSON; for a blob its bytes as UTF-8 text."),
        ),
        ("digest",),
        sort="seq",
    ),
    Table(
        "cohorts",
        "Benchmark cohorts",
        "Every stored BenchmarkCohort object (each stage is its own object), with its burn by"
        " a burn notice that counts; see standing.",
        (
            DIGEST,
            SEQ,
            STANDING,
            _c(
                "counts_from",
                int,
                "Log position from which this object counts: its own seq, or for a frozen or"
                " burned one the authority's attestation of it (empty while it does not count).",
            ),
            _c("cohort_id", str, "Cohort id."),
            _c("title", str, "Cohort title."),
            _c("stage", str, "Stage of this object: scaffold, collecting, frozen or burned."),
            _c("burned_at", str, "Burn date the notice records (empty when upstream gave none)."),
            _c("burn_recorded_at", str, "When the ledger recorded the burn notice."),
            _c("burn_reason", str, "Why the cohort burned (from its burn notice)."),
            _c("task_count", int, "Number of tasks."),
            _c("minimum_final_tasks", int, "Tasks the cohort needs to be final."),
            _c("burn_notice_digest", str, "Digest of the burn notice."),
            _c("definition_digest", str, "Definition digest recorded in the cohort."),
            _c("definition_digest_jcs", str, "Definition digest recomputed (RFC 8785 scheme)."),
            _c("definition_digest_legacy", str, "Definition digest recomputed (upstream scheme)."),
            _c("description", str, "Cohort description."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        fts=("cohort_id", "title", "description", "burn_reason"),
        sort="seq",
    ),
    Table(
        "tasks",
        "Cohort tasks",
        "One row per task of each stored cohort object.",
        (
            _c("cohort_id", str, "Cohort id."),
            _c("task_id", str, "Task id."),
            _c("title", str, "Readable title made from the task id."),
            _c("status", str, "Evidence status recorded for the task (e.g. excluded)."),
            _c("exclusion_reason", str, "Why the task's outcome is excluded, if it is."),
            _c("family", str, "Task family (bug_fix, refactor, ...)."),
            _c("difficulty", str, "Declared difficulty."),
            _c("split", str, "Split (pilot, train, development, held_out)."),
            _c("objective", str, "Objective of the WorkUnit, when that WorkUnit is stored."),
            _c("work_unit_id", str, "WorkUnit id the task points at."),
            _c("work_unit_digest", str, "WorkUnit digest the task records."),
            _c("plan_id", str, "EvaluatorPlan id the task points at."),
            _c("plan_digest", str, "EvaluatorPlan digest the task records."),
            _c("cohort_digest", str, "Digest of the cohort object the task belongs to."),
            _c("position", int, "Position of the task in the cohort (0 = first)."),
        ),
        ("cohort_digest", "position"),
        foreign_keys=(("cohort_digest", "cohorts", "digest"),),
        fts=("task_id", "title", "objective", "exclusion_reason"),
    ),
    Table(
        "preregistration",
        "Pre-registration of outcomes",
        "One row per outcome a cohort object lists, judged from log positions when that"
        " object was recorded: pre-registered when the cohort's frozen record, the plan the"
        " result was judged under and, for a successor, its binding and calibration records"
        " all had standing before the result's entry. A log proves order, not wall-clock"
        " time.",
        (
            _c("cohort_digest", str, "Digest of the cohort object that lists the outcome."),
            _c("cohort_id", str, "Cohort id."),
            _c("task_position", int, "Position of the task in the cohort (0 = first)."),
            _c("attempt_position", int, "Position of the attempt in the task (0 = first)."),
            _c("task_id", str, "Task id."),
            _c("attempt_id", str, "Attempt id."),
            _c("result_digest", str, "The VerificationResult digest the cohort lists."),
            _c(
                "status",
                str,
                "pre_registered, not_pre_registered (does not count), order_not_attested"
                " (imported history: the ledger did not see the order) or not_judged.",
            ),
            _c("reason", str, "Why, in one sentence."),
            _c("result_seq", int, "Log position of the stored result."),
            _c("freeze_seq", int, "Log position of the cohort's first frozen record."),
            _c("plan_seq", int, "Log position of the plan the result names."),
            _c("binding_seq", int, "Log position of the successor's binding (successors only)."),
            _c("calibration_seqs", str, "Log positions of the calibration records it cites."),
            _c(
                "checkpoint_size",
                int,
                "Size of the first signed checkpoint covering the freeze but not the result.",
            ),
        ),
        ("cohort_digest", "task_position", "attempt_position"),
        foreign_keys=(("cohort_digest", "cohorts", "digest"),),
    ),
    Table(
        "burn_notices",
        "Burn notices",
        "Burn notices recorded in the ledger, and why the cohort burned. Only those whose"
        " standing is 'counts' were issued by the ledger's authority.",
        (
            DIGEST,
            SEQ,
            STANDING,
            _c("cohort_id", str, "Burned cohort id."),
            _c("cohort_digest", str, "The newest cohort object with that id when the notice came."),
            _c("reason", str, "Why the cohort burned."),
            _c("issued_at", str, "Burn date the notice records (empty when upstream gave none)."),
            _c("recorded_at", str, "When the ledger recorded the notice (its log entry)."),
            _c("definition_digest_jcs", str, "Definition digest of the burned cohort (RFC 8785)."),
            _c("definition_digest_legacy", str, "Definition digest (upstream scheme)."),
            _c("excluded_count", int, "Number of excluded outcomes."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        fts=("cohort_id", "reason"),
        sort="seq",
    ),
    Table(
        "excluded_outcomes",
        "Excluded outcomes",
        "Task outcomes a burn notice excludes from results, with the reason for each.",
        (
            _c("cohort_id", str, "Cohort id."),
            _c("task_id", str, "Excluded task."),
            _c("reason", str, "Why the outcome is excluded."),
            _c("burn_notice_digest", str, "Digest of the burn notice that excludes the outcome."),
        ),
        ("burn_notice_digest", "task_id"),
        foreign_keys=(("burn_notice_digest", "burn_notices", "digest"),),
        fts=("task_id", "reason"),
    ),
    Table(
        "observed_tasks",
        "Tasks never held out again",
        "Tasks whose outcome was seen before the burn: never usable as held-out again.",
        (
            _c("cohort_id", str, "Cohort id."),
            _c("task_id", str, "Observed task."),
            _c("reason", str, "What was observed."),
            _c("burn_notice_digest", str, "Digest of the burn notice."),
        ),
        ("burn_notice_digest", "task_id"),
        foreign_keys=(("burn_notice_digest", "burn_notices", "digest"),),
    ),
    Table(
        "bindings",
        "Cohort bindings",
        "Bindings of successor cohorts to a burned predecessor. Only those whose standing is"
        " 'counts' were made by the ledger's authority after the successor gate passed.",
        (
            DIGEST,
            SEQ,
            STANDING,
            _c("successor_id", str, "Successor cohort id."),
            _c("successor_definition_digest", str, "Successor definition digest."),
            _c("predecessor_id", str, "Burned predecessor cohort id."),
            _c("predecessor_definition_digest", str, "Predecessor definition digest."),
            _c("burn_notice_digest", str, "Burn notice of the predecessor."),
            _c("carried_over", str, "Successor tasks continuing predecessor tasks."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        sort="seq",
    ),
    Table(
        "binding_items",
        "What each binding bound",
        "One row per EvaluatorPlan a cohort binding names for a carried-over task (the plan id"
        " and semantics version the binder chose), and one per calibration record it cites.",
        (
            _c("binding_digest", str, "Digest of the cohort binding."),
            _c("position", int, "Position in the binding (plans first, then calibrations)."),
            _c("successor_id", str, "Successor cohort id the binding names."),
            _c("what", str, "'plan' or 'calibration'."),
            _c("task_id", str, "Carried-over task the plan is bound to (plans only)."),
            _c("plan_id", str, "EvaluatorPlan id (plans only)."),
            _c("plan_version", str, "Plan semantics version, e.g. 0.4 (plans only)."),
            _c("digest", str, "The plan's digest, or the calibration record's."),
        ),
        ("binding_digest", "position"),
        foreign_keys=(("binding_digest", "bindings", "digest"),),
    ),
    Table(
        "work_units",
        "WorkUnits",
        "Stored WorkUnits: what a worker was asked to do.",
        (
            DIGEST,
            SEQ,
            _c("work_unit_id", str, "WorkUnit id."),
            _c("version", int, "WorkUnit version."),
            _c("work_kind", str, "Kind of work (coding, testing, ...)."),
            _c("objective", str, "Objective."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        fts=("work_unit_id", "objective"),
        sort="seq",
    ),
    Table(
        "plans",
        "EvaluatorPlans",
        "Stored EvaluatorPlans: how a verifier judges work on a WorkUnit.",
        (
            DIGEST,
            SEQ,
            _c("plan_id", str, "Plan id."),
            _c("schema_version", str, "Plan schema version."),
            _c("backend", str, "Verifier backend type (`backend.type`); none in v0.1 plans."),
            _c("visibility", str, "Plan visibility."),
            _c("work_unit_id", str, "WorkUnit the plan is bound to."),
            _c("work_unit_digest", str, "Digest of the WorkUnit the plan is bound to."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        sort="seq",
    ),
    Table(
        "manifests",
        "ResultManifests",
        "Stored ResultManifests: what a worker reported producing.",
        (
            DIGEST,
            SEQ,
            _c("manifest_id", str, "ResultManifest id."),
            _c("status", str, "Worker-reported status."),
            _c("worker_id", str, "Worker id."),
            _c("work_unit_id", str, "WorkUnit id."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        sort="seq",
    ),
    Table(
        "results",
        "Verification results",
        "Stored VerificationResults: a verifier's verdict on one ResultManifest.",
        (
            DIGEST,
            SEQ,
            _c("result_id", str, "VerificationResult id."),
            _c("status", str, "Verdict: passed, failed, ..."),
            _c("recommendation", str, "Recommendation (accept_candidate, reject_candidate, ...)."),
            _c("rationale", str, "Why, in the verifier's words."),
            _c("verifier_id", str, "Verifier id the result names."),
            _c("verifier_adapter", str, "Verifier adapter."),
            _c("verifier_adapter_version", str, "Verifier adapter version."),
            _c("work_unit_id", str, "WorkUnit id."),
            _c("work_unit_digest", str, "WorkUnit digest from the result's provenance."),
            _c("result_manifest_digest", str, "ResultManifest digest from its provenance."),
            _c("plan_digest", str, "EvaluatorPlan (verifier config) digest from its provenance."),
            _c("finished_at", str, "When verification finished."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        fts=("result_id", "rationale"),
        sort="seq",
    ),
    Table(
        "quarantined",
        "Quarantined documents",
        "Documents an import recorded as they were but could not admit (e.g. schema-invalid"
        " upstream files): their bytes are a blob, the problems are listed.",
        (
            DIGEST,
            SEQ,
            _c("path", str, "Where the document was found in the imported repository."),
            _c("claimed_kind", str, "Kind the document's structure names, if any."),
            _c("object_id", str, "The id the document carries, if any."),
            _c("problems", str, "Why it was not admitted (one per line)."),
            _c("blob_digest", str, "Digest of the document's exact bytes (a blob)."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        fts=("path", "problems"),
        sort="seq",
    ),
    Table(
        "attestations",
        "Attestations",
        "Detached DSSE signatures over ledger objects, checked when indexed.",
        (
            DIGEST,
            SEQ,
            _c("subject_digest", str, "Digest of the signed object."),
            _c("subject_kind", str, "Kind of the signed object."),
            _c("key_id", str, "Key id (hex SHA-256 of the raw Ed25519 key) that signed."),
            _c("signer", str, "'authority', the verifier id registered for the key, or empty."),
            _c("signature_valid", int, "1 when the signature verifies with that key, else 0."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        sort="seq",
    ),
    Table(
        "identities",
        "Verifier identities",
        "Verifier keys registered in the ledger (which verifier id and adapter they speak for).",
        (
            DIGEST,
            SEQ,
            _c("verifier_id", str, "Verifier id."),
            _c("adapter", str, "Adapter."),
            _c("adapter_versions", str, "Adapter versions the key covers, comma separated."),
            _c("key_id", str, "Key id of the registered public key."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        sort="seq",
    ),
    Table(
        "revocations",
        "Key revocations",
        "Revoked verifier keys: retired or compromised.",
        (
            DIGEST,
            SEQ,
            _c("key_id", str, "Revoked key id."),
            _c("reason", str, "retired or compromised."),
            _c("note", str, "Note given with the revocation."),
        ),
        ("digest",),
        foreign_keys=(("digest", "objects", "digest"),),
        fts=("note",),
        sort="seq",
    ),
    Table(
        "checkpoints",
        "Checkpoints",
        "Signed tree heads (C2SP checkpoints) of the ledger's log.",
        (
            _c("size", int, "Tree size: entries covered."),
            _c("root", str, "Merkle root (hex)."),
            _c("created_at", str, "When the checkpoint was signed."),
            _c("note", str, "The signed note, as text."),
        ),
        ("size",),
        sort="size",
    ),
    Table(
        "tree_nodes",
        "Merkle tree nodes",
        "Hashes (hex) of every complete subtree of the log; object pages prove inclusion"
        " from them.",
        (
            _c("level", int, "Level (0 = leaves)."),
            _c("idx", int, "Index within the level."),
            _c("hash", str, "Node hash (hex)."),
        ),
        ("level", "idx"),
    ),
    # Judged over the whole log up to the projection's last entry (``judged``), not per
    # object: replaced whole by each index run that projects new entries.
    Table(
        "cohort_audits",
        "Cohort audits",
        "One row per cohort id: `provledger cohort audit ID --json` run on the ledger up to"
        " this projection's last entry (report), with its counts. status: ok, defects"
        " (evidence present but wrong) or missing (evidence the ledger does not hold).",
        (
            _c("cohort_id", str, "Cohort id."),
            _c("stage", str, "Stage of the audited record (its newest with standing)."),
            _c("status", str, "ok, defects or missing (defects win when there are both)."),
            _c("defects", int, "Error findings about evidence present but wrong."),
            _c("missing", int, "Error findings about evidence the ledger does not hold."),
            _c("warnings", int, "Warning findings (look, not refused)."),
            _c("outcomes", int, "Outcomes (attempts) the cohort lists."),
            _c("excluded", int, "Outcomes excluded by the burn."),
            _c("attested", str, "Attestation state of the record (and of its burn notice)."),
            _c("record_digest", str, "Digest of the newest stored record of the cohort."),
            _c("judged_size", int, "Log size the audit read (entries 0 .. size-1)."),
            _c("report", str, "The audit as `provledger cohort audit ID --json` prints it."),
        ),
        ("cohort_id",),
    ),
    Table(
        "audit_findings",
        "Audit findings",
        "Every finding of every cohort audit, with its code and what the code means.",
        (
            _c("cohort_id", str, "Audited cohort id."),
            _c("position", int, "Order in the audit (defects, missing, then warnings)."),
            _c("category", str, "defect, missing or warning."),
            _c("code", str, "Stable finding code."),
            _c("meaning", str, "What the code is about (cohorts.meanings)."),
            _c("task_id", str, "Task the finding is about, if any."),
            _c("attempt_id", str, "Attempt the finding is about, if any."),
            _c("message", str, "What was found: what, got X, expected Y."),
        ),
        ("cohort_id", "position"),
        foreign_keys=(("cohort_id", "cohort_audits", "cohort_id"),),
        fts=("code", "message"),
    ),
    Table(
        "successor_links",
        "Successors",
        "Cohorts that succeed another, as the predecessor's audit finds them: claimed by"
        " upstream (the successor's extensions name the predecessor's definition) and/or"
        " bound by the ledger (a cohort binding). Bound plan versions: binding_items.",
        (
            _c("predecessor_id", str, "The cohort succeeded."),
            _c("successor_id", str, "The successor cohort."),
            _c("successor_stage", str, "Stage of the successor."),
            _c("claimed_in", str, "Where upstream's records claim it (empty: nowhere)."),
            _c("binding_digest", str, "The ledger's newest binding of the pair (empty: unbound)."),
            _c("bindings", int, "Number of bindings of the pair."),
        ),
        ("predecessor_id", "successor_id"),
    ),
    Table(
        "ledger_info",
        "About this ledger",
        "Origin, keys and the last log position this projection has seen.",
        (
            _c("key", str, "Name."),
            _c("value", str, "Value."),
        ),
        ("key",),
    ),
)


def _chain_part(role: str, digest: str, join: str = "", where: str = "") -> str:
    return (
        f"SELECT r.digest AS result_digest, r.result_id, '{role}' AS role, {digest} AS digest,"
        f" o.digest AS stored_digest, o.kind AS kind, o.object_id AS object_id, o.seq AS seq"
        f" FROM results r {join}"
        f" LEFT JOIN objects o ON o.digest = {digest} OR o.legacy_digest = {digest}"
        + (f" WHERE {where}" if where else "")
    )


_COHORTS_OF_WORK_UNIT = (
    "JOIN (SELECT DISTINCT cohort_digest, work_unit_digest FROM tasks) t"
    " ON t.work_unit_digest = r.work_unit_digest"
    " JOIN cohorts c ON c.digest = t.cohort_digest"
)

_CHAIN_SQL = " UNION ALL ".join(
    (
        _chain_part("1 result", "r.digest"),
        _chain_part("2 result manifest", "r.result_manifest_digest"),
        _chain_part("3 work unit", "r.work_unit_digest"),
        _chain_part("4 evaluator plan", "r.plan_digest"),
        _chain_part(
            "5 attestation", "a.digest", "JOIN attestations a ON a.subject_digest = r.digest"
        ),
        _chain_part(
            "6 signer identity",
            "i.digest",
            "JOIN attestations a ON a.subject_digest = r.digest"
            " JOIN identities i ON i.key_id = a.key_id",
        ),
        _chain_part(
            "7 key revocation",
            "v.digest",
            "JOIN attestations a ON a.subject_digest = r.digest"
            " JOIN revocations v ON v.key_id = a.key_id",
        ),
        _chain_part(
            "8 cohort",
            "c.digest",
            _COHORTS_OF_WORK_UNIT,
        ),
        _chain_part(
            "9 burn notice",
            "c.burn_notice_digest",
            _COHORTS_OF_WORK_UNIT,
            "c.burn_notice_digest IS NOT NULL",
        ),
    )
)

VIEWS: tuple[View, ...] = (
    View(
        "latest_cohorts",
        "Cohorts, newest object per id that counts",
        "The current state of each cohort: its object that gained standing last.",
        "SELECT c.* FROM cohorts c WHERE c.counts_from = (SELECT max(counts_from) FROM cohorts c2"
        " WHERE c2.cohort_id = c.cohort_id AND c2.standing = 'counts')",
    ),
    View(
        "result_signatures",
        "Who signed each result",
        "Each result's attestations: signing key, the identity registered for it, whether the"
        " signature verified, and any revocation of the key with its log position.",
        "SELECT r.digest AS result_digest, r.result_id, r.status, r.verifier_id,"
        " a.digest AS attestation_digest, a.seq AS signed_at_seq, a.key_id, a.signer,"
        " a.signature_valid, v.reason AS revoked_reason, v.seq AS revoked_at_seq,"
        " v.digest AS revocation_digest,"
        " CASE WHEN v.seq IS NULL THEN 0 ELSE 1 END AS key_revoked,"
        " CASE WHEN v.seq > a.seq THEN 1 ELSE 0 END AS revoked_after_signing"
        " FROM results r JOIN attestations a ON a.subject_digest = r.digest"
        " LEFT JOIN revocations v ON v.key_id = a.key_id",
    ),
    View(
        "result_chain",
        "Provenance chain of each result",
        "Every object a result's provenance rests on: the result, its ResultManifest,"
        " WorkUnit and EvaluatorPlan (digest: as the result records it; stored_digest: the"
        " ledger object that digest names under either scheme, empty when none), its"
        " attestations, the identities registered for the signing keys, revocations of those"
        " keys, and the cohorts whose tasks name the WorkUnit with their burn notices. Whether"
        " each link holds is not judged here: the result's page runs the provenance checks.",
        _CHAIN_SQL,
    ),
)
