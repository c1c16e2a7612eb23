"""The canned queries of the browse database: the auditors' questions, as SQL.

Datasette shows each at ``/browse/<name>`` (a form with its parameters), and the
auditor's pages (``pages``) run the same SQL to build the home and cohort pages, so a
person who prefers SQL sees exactly the rows the pages show. Every query only reads;
none re-derives a verdict: audit status, findings and successors come from the audit
engine's own rows (``judged``), provenance is checked live on the result page.
"""

from __future__ import annotations

from typing import Any

#: The audit report as JSON, or NULL when the stored text is not JSON (a tampered file).
_REPORT = "(CASE WHEN json_valid(a.report) THEN a.report END)"
#: The first signed checkpoint that covers log position ``seq`` of table alias ``t``.
#: Pre-registration statuses the audit counts (``cohorts.timeline``).
PREREGISTRATION = ("pre_registered", "not_pre_registered", "order_not_attested", "not_judged")
_COVERED = "(SELECT min(k.size) FROM checkpoints k WHERE k.size > {seq})"
# A record's standing in a timeline event when it does not count (docs/BROWSE.md).
_STANDING = "(CASE WHEN {t}.standing = 'counts' THEN '' ELSE ' (' || {t}.standing || ')' END)"

CANNED_QUERIES: dict[str, dict[str, Any]] = {  # Datasette metadata.json: its own untyped schema
    "cohort_overview": {
        "title": "Every cohort: stage, audit status, burn and when the ledger learnt it",
        "description": (
            "One row per cohort id (the home page): its stage and whether the audited record"
            " counts (standing: 'counts', else 'unattested history' or 'refused by admission':"
            " never the authority's), the audit's status (ok,"
            " defects or missing) and counts, and for a burned cohort the reason, the date"
            " upstream recorded (empty: none), the log position and time at which the ledger"
            " recorded the burn notice, and the first signed checkpoint covering it."
        ),
        "sql": (
            "SELECT a.cohort_id, c.title, a.stage,"
            f" json_extract({_REPORT}, '$.standing') AS standing,"
            " a.status, a.defects, a.missing,"
            " a.warnings, a.outcomes, a.excluded,"
            f" json_extract({_REPORT}, '$.burn.reason') AS burn_reason,"
            f" json_extract({_REPORT}, '$.burn.issued_at') AS burn_date,"
            f" json_extract({_REPORT}, '$.burn.source') AS burn_source,"
            " b.digest AS burn_notice_digest, b.seq AS burn_seq,"
            " b.recorded_at AS burn_recorded_at,"
            f" {_COVERED.format(seq='b.seq')} AS burn_checkpoint,"
            " a.attested, a.record_digest, a.judged_size,"
            + ",".join(
                f" json_extract({_REPORT}, '$.preregistration_counts.{status}') AS {status}"
                for status in PREREGISTRATION
            )
            + " FROM cohort_audits a LEFT JOIN cohorts c ON c.digest = a.record_digest"
            f" LEFT JOIN burn_notices b ON b.digest = json_extract({_REPORT},"
            " '$.burn.notice_digest') ORDER BY a.cohort_id"
        ),
    },
    "cohort_successors": {
        "title": "Which cohorts succeed which, claimed or bound, under which plan versions?",
        "description": (
            "Successors of a cohort (leave cohort empty for all): upstream's claim (where the"
            " successor's records name the predecessor) told apart from the ledger's binding,"
            " the binding's log position, the plan versions it bound and how many"
            " calibration records it cites."
        ),
        "sql": (
            "SELECT s.predecessor_id, s.successor_id, s.successor_stage, s.claimed_in,"
            " s.binding_digest, s.bindings, g.seq AS bound_at_seq,"
            f" {_COVERED.format(seq='g.seq')} AS bound_checkpoint,"
            " (SELECT group_concat(DISTINCT i.plan_version) FROM binding_items i"
            "  WHERE i.binding_digest = s.binding_digest AND i.what = 'plan') AS plan_versions,"
            " (SELECT count(*) FROM binding_items i WHERE i.binding_digest = s.binding_digest"
            "  AND i.what = 'plan') AS bound_plans,"
            " (SELECT count(*) FROM binding_items i WHERE i.binding_digest = s.binding_digest"
            "  AND i.what = 'calibration') AS calibrations"
            " FROM successor_links s LEFT JOIN bindings g ON g.digest = s.binding_digest"
            " WHERE :cohort = '' OR s.predecessor_id = :cohort"
            " ORDER BY s.predecessor_id, s.successor_id"
        ),
        "params": ["cohort"],
    },
    "cohort_timeline": {
        "title": "A cohort's lifecycle, from the log",
        "description": (
            "Every log entry about one cohort, in log order: each stored record and its"
            " stage (scaffold, frozen, burned), burn notices, bindings naming it as"
            " predecessor or successor, and the attestations of those records, each with the"
            " first signed checkpoint covering it."
        ),
        "sql": (
            "SELECT t.seq, o.appended_at, t.event, t.digest, t.detail,"
            f" {_COVERED.format(seq='t.seq')} AS checkpoint FROM ("
            " SELECT c.seq, 'record, stage ' || coalesce(c.stage, '?') || {c} AS event,"
            "  c.digest, c.title AS detail FROM cohorts c WHERE c.cohort_id = :cohort"
            " UNION ALL SELECT b.seq, 'burn notice' || {b}, b.digest, b.reason"
            "  FROM burn_notices b WHERE b.cohort_id = :cohort"
            " UNION ALL SELECT g.seq, 'bound as successor of ' || coalesce(g.predecessor_id, '?')"
            "  || {g}, g.digest, g.carried_over FROM bindings g WHERE g.successor_id = :cohort"
            " UNION ALL SELECT g.seq, 'successor ' || coalesce(g.successor_id, '?') || ' bound'"
            "  || {g}, g.digest, g.carried_over FROM bindings g WHERE g.predecessor_id = :cohort"
            " UNION ALL SELECT a.seq, 'attestation of the ' || coalesce(a.subject_kind, '?')"
            "  || ' at seq ' || s.seq || ' by ' || coalesce(a.signer, 'an unregistered key')"
            "  || CASE WHEN a.signature_valid THEN '' ELSE ' (signature NOT valid)' END,"
            "  a.digest, a.key_id FROM attestations a JOIN ("
            "   SELECT digest, seq FROM cohorts WHERE cohort_id = :cohort"
            "   UNION ALL SELECT digest, seq FROM burn_notices WHERE cohort_id = :cohort"
            "   UNION ALL SELECT digest, seq FROM bindings"
            "    WHERE successor_id = :cohort OR predecessor_id = :cohort"
            "  ) s ON s.digest = a.subject_digest"
            ") t LEFT JOIN objects o ON o.digest = t.digest ORDER BY t.seq"
        ).format(c=_STANDING.format(t="c"), b=_STANDING.format(t="b"), g=_STANDING.format(t="g")),
        "params": ["cohort"],
    },
    "cohort_findings": {
        "title": "What did a cohort's audit find?",
        "description": (
            "Every finding of one cohort's audit (leave cohort empty for all) in the audit's"
            " order: category (defect, missing, warning), code, what the code means, the task"
            " and attempt, and the message."
        ),
        "sql": (
            "SELECT cohort_id, category, code, meaning, task_id, attempt_id, message"
            " FROM audit_findings WHERE :cohort = '' OR cohort_id = :cohort"
            " ORDER BY cohort_id, position"
        ),
        "params": ["cohort"],
    },
    "bound_items": {
        "title": "What a binding bound: plan versions and calibration records",
        "description": (
            "The EvaluatorPlans (id, semantics version, digest) a cohort binding names per"
            " carried-over task, and the calibration records it cites with what each says."
        ),
        "sql": (
            "SELECT i.binding_digest, i.what, i.task_id, i.plan_id, i.plan_version, i.digest,"
            " o.kind AS stored_kind, o.seq AS stored_seq,"
            " json_extract(CASE WHEN json_valid(o.text) THEN o.text END,"
            " '$.plan_schema_version') AS calibrated_version,"
            " json_extract(CASE WHEN json_valid(o.text) THEN o.text END, '$.candidate')"
            " AS candidate,"
            " json_extract(CASE WHEN json_valid(o.text) THEN o.text END, '$.recommendation')"
            " AS recommendation"
            " FROM binding_items i LEFT JOIN objects o ON o.digest = i.digest"
            " WHERE i.binding_digest = :binding ORDER BY i.position"
        ),
        "params": ["binding"],
    },
    "burned_cohorts": {
        "title": "Which cohorts are burned, why, and when?",
        "description": (
            "Every burn notice with the cohort it burned, the reason, the burn date it records"
            " (empty when upstream recorded none), when the ledger recorded it, and its"
            " standing: only a notice that counts was issued by the ledger's authority."
        ),
        "sql": (
            "SELECT b.cohort_id, c.title, b.standing, b.issued_at AS burned_at, b.recorded_at,"
            " b.reason,"
            " b.excluded_count AS excluded_outcomes, b.digest AS burn_notice_digest,"
            " b.cohort_digest FROM burn_notices b"
            " LEFT JOIN cohorts c ON c.digest = b.cohort_digest ORDER BY b.seq"
        ),
    },
    "excluded_outcomes": {
        "title": "Which outcomes were excluded?",
        "description": "Excluded task outcomes with the reason; leave cohort empty for all.",
        "sql": (
            "SELECT e.cohort_id, e.task_id, t.title, e.reason, e.burn_notice_digest,"
            " b.standing AS notice_standing"
            " FROM excluded_outcomes e"
            " LEFT JOIN burn_notices b ON b.digest = e.burn_notice_digest"
            " LEFT JOIN tasks t ON t.cohort_digest = b.cohort_digest AND t.task_id = e.task_id"
            " WHERE :cohort = '' OR e.cohort_id = :cohort ORDER BY e.cohort_id, e.task_id"
        ),
        "params": ["cohort"],
    },
    "results_signed_by": {
        "title": "Which results did verifier X sign, with which key, was it revoked later?",
        "description": (
            "Results whose attestation key belongs to the verifier (leave empty for all),"
            " with the signing key, whether the signature verified, and any later revocation."
        ),
        "sql": (
            "SELECT s.signer, s.result_id, s.status AS stated_status, s.result_digest, s.key_id,"
            " s.signature_valid, s.signed_at_seq, s.revoked_reason, s.revoked_at_seq,"
            " s.revoked_after_signing, s.attestation_digest FROM result_signatures s"
            " WHERE :verifier = '' OR s.signer = :verifier OR s.verifier_id = :verifier"
            " ORDER BY s.signed_at_seq"
        ),
        "params": ["verifier"],
    },
}
