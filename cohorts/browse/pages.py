"""The auditor's pages of ``provledger serve``: home, cohort, result, and pasted addresses.

- ``/`` (home): every cohort with its stage, audit status, burn (reason, date, the log
  position and checkpoint at which the ledger learnt it), successors and the plan
  versions bound to them; a box for any address; the newest results.
- ``/-/cohort/<id>``: the cohort's lifecycle from the log, its burn, excluded outcomes,
  tasks never to be reused, successors (upstream's claims and the ledger's bindings
  told apart, with bound plan versions and calibration records), the outcomes it lists
  (each a link to its result) and the audit findings with each code's meaning.
- ``/-/object/<ref>``: any object; a VerificationResult's page runs its provenance checks
  live (``objectpage.live_provenance``: the engine of ``provledger provenance``), and
  ``/-/provenance/<digest>.json`` is that report as ``provenance --json`` prints it.
- ``/-/find?ref=``: the home page's box; like ``/-/object/<ref>``.

The home and cohort pages run the canned queries (``queries``) on the browse database:
what they show is what ``/browse/<query>`` shows to someone who prefers SQL. The verdicts
come from the engines (the projected audit reports, the live provenance check); nothing
here judges. Every value reaches HTML through Jinja's autoescaping or ``link_digests``
(escape first), and every URL built from data quotes its path segments.
"""

from __future__ import annotations

import asyncio
import json
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from datasette.utils.asgi import Response

from cohorts.browse.addresses import Address, cohort_url, known_cohort, locate, object_url
from cohorts.browse.names import DATABASE
from cohorts.browse.objectpage import live_provenance, object_page
from cohorts.browse.queries import CANNED_QUERIES
from cohorts.timeline import STATUS_TEXT
from verifiers.model.json import as_map, maps

if TYPE_CHECKING:
    # Datasette ships no types: these name what the hooks are given (untyped to mypy).
    from datasette.app import Datasette
    from datasette.database import Database
    from datasette.utils.asgi import Request

    from ledger.encoding.values import JSONObject

#: One row of the browse database as Datasette returns it: SQLite's values.
Row = dict[str, "str | int | float | bytes | None"]

#: Newest results the home page lists (all of them: the results table).
RECENT_RESULTS = 10


async def _query(db: Database, name: str, **params: object) -> list[Row]:
    """The rows of canned query ``name`` (parameters by name)."""
    rows = await db.execute(CANNED_QUERIES[name]["sql"], params)
    return [dict(r) for r in rows]


def _ledger_facts(info: Mapping[str, str]) -> dict[str, object]:
    last = info.get("last_seq")
    return {
        "origin": info.get("origin", ""),
        "size": None if last is None else int(last) + 1,
    }


async def _info(db: Database) -> dict[str, str]:
    rows = await db.execute("SELECT key, value FROM ledger_info")
    return {str(r[0]): str(r[1]) for r in rows}


def _group(rows: Sequence[Row], key: str) -> dict[str, list[Row]]:
    out: dict[str, list[Row]] = {}
    for row in rows:
        out.setdefault(str(row[key]), []).append(row)
    return out


def report_of(text: object) -> JSONObject:
    """A stored audit report (``cohort_audits.report``); {} when it is not a JSON object."""
    try:
        value = json.loads(str(text))
    except (ValueError, RecursionError):
        return {}
    report: JSONObject = value if isinstance(value, dict) else {}  # json's value, checked
    return report


def _counts(row: Row) -> bool:
    """Whether a cohort_overview row's audited record counts (its standing)."""
    return row.get("standing") in (None, "counts")


async def home_page(datasette: Datasette, request: Request) -> Response:
    db = datasette.get_database(DATABASE)
    overview = await _query(db, "cohort_overview")
    successors = _group(await _query(db, "cohort_successors", cohort=""), "predecessor_id")
    checkpoint = (await db.execute("SELECT max(size) FROM checkpoints")).first()
    results = [
        dict(r)
        for r in await db.execute(
            "SELECT digest, result_id, status, recommendation, verifier_id, seq FROM results"
            f" ORDER BY rowid DESC LIMIT {RECENT_RESULTS}"
        )
    ]
    context = {
        "title": datasette.metadata("title") or "provledger ledger",
        "cohorts": overview,
        "successors": successors,
        "ledger": _ledger_facts(await _info(db)),
        "checkpoint": None if checkpoint is None else checkpoint[0],
        "results": results,
        "result_count": (await db.execute("SELECT count(*) FROM results")).first()[0],
        # Burned by the authority: a cohort stored only as unattested history is not.
        "burned": [c for c in overview if c["stage"] == "burned" and _counts(c)],
        "prereg_text": STATUS_TEXT,
    }
    html = await datasette.render_template("provledger_home.html", context, request=request)
    return Response.html(html)


def _outcomes(report: Mapping[str, object]) -> list[dict[str, object]]:
    """One row per listed attempt, from the audit report (its resolutions, strength and
    pre-registration judgement)."""
    judged = {(p.get("task"), p.get("attempt")): p for p in maps(report.get("preregistration"))}
    rows: list[dict[str, object]] = []
    for task in maps(report.get("tasks")):
        for attempt in maps(task.get("attempts")):
            vr = as_map(attempt.get("verification_result"))
            stored = as_map(vr.get("stored_digests")).get("jcs") if vr.get("present") else None
            strength = as_map(attempt.get("evidence_strength"))
            prereg = as_map(judged.get((task.get("task"), attempt.get("attempt"))))
            rows.append(
                {
                    "task": task.get("task"),
                    "attempt": attempt.get("attempt"),
                    "outcome": attempt.get("outcome"),
                    "status": attempt.get("status"),
                    "recommendation": attempt.get("recommendation"),
                    "strength": strength.get("label"),
                    "recorded": vr.get("recorded_digest"),
                    "stored": stored,
                    "scheme": vr.get("scheme"),
                    "prereg": prereg.get("status"),
                    "prereg_reason": prereg.get("reason"),
                }
            )
    return rows


async def cohort_page(datasette: Datasette, request: Request) -> Response:
    cohort_id = urllib.parse.unquote(request.url_vars["ref"])
    db = datasette.get_database(DATABASE)
    known = await db.execute_fn(lambda conn: known_cohort(conn, cohort_id))
    if not known:
        address = await db.execute_fn(lambda conn: locate(conn, cohort_id))
        if address.url is not None and address.url != cohort_url(cohort_id):
            return Response.redirect(address.url)
        return await not_found(
            datasette,
            request,
            Address(cohort_id, None, f"no cohort with id {cohort_id} in this ledger"),
        )
    audits = [
        dict(r)
        for r in await db.execute("SELECT * FROM cohort_audits WHERE cohort_id = ?", [cohort_id])
    ]
    audit = audits[0] if audits else None
    report = report_of(audit["report"]) if audit else {}
    overview = [r for r in await _query(db, "cohort_overview") if r["cohort_id"] == cohort_id]
    successors = await _query(db, "cohort_successors", cohort=cohort_id)
    bound = {
        str(s["binding_digest"]): await _query(db, "bound_items", binding=s["binding_digest"])
        for s in successors
        if s["binding_digest"]
    }
    predecessors = [
        dict(r)
        for r in await db.execute(
            "SELECT s.*, g.seq AS bound_at_seq FROM successor_links s"
            " LEFT JOIN bindings g ON g.digest = s.binding_digest WHERE s.successor_id = ?"
            " ORDER BY s.predecessor_id",
            [cohort_id],
        )
    ]
    for p in predecessors:
        if p["binding_digest"]:
            bound[str(p["binding_digest"])] = await _query(
                db, "bound_items", binding=p["binding_digest"]
            )
    burn = report.get("burn")
    burn = burn if isinstance(burn, dict) else None
    context = {
        "cohort_id": cohort_id,
        "audit": audit,
        "report": report,
        "overview": overview[0] if overview else None,
        "timeline": await _query(db, "cohort_timeline", cohort=cohort_id),
        "findings": await _query(db, "cohort_findings", cohort=cohort_id),
        "successors": successors,
        "predecessors": predecessors,
        "bound": bound,
        "burn": burn,
        "excluded": report.get("excluded_outcomes") or [],
        "never_again": as_map(burn).get("never_again_held_out") or [],
        "attestations": report.get("attestations") or {},
        "outcomes": _outcomes(report),
        # (status, count) in the timeline's order of statuses.
        "prereg_counts": [
            (status, as_map(report.get("preregistration_counts")).get(status) or 0)
            for status in STATUS_TEXT
        ],
        "prereg_text": STATUS_TEXT,
        "ledger": _ledger_facts(await _info(db)),
        "query_args": urllib.parse.urlencode({"cohort": cohort_id}),
    }
    html = await datasette.render_template("provledger_cohort.html", context, request=request)
    return Response.html(html)


async def not_found(datasette: Datasette, request: Request, address: Address) -> Response:
    """The 404 page: what was asked, why nothing matches, and any candidates."""
    context = {"address": address}
    html = await datasette.render_template("provledger_notfound.html", context, request=request)
    return Response.html(html, status=404)


async def _go(datasette: Datasette, request: Request, ref: str) -> Response:
    db = datasette.get_database(DATABASE)
    address = await db.execute_fn(lambda conn: locate(conn, ref))
    if address.url is None:
        return await not_found(datasette, request, address)
    if address.url == object_url(ref):
        return await object_page(datasette, request, ref)
    return Response.redirect(address.url)


async def object_address(datasette: Datasette, request: Request) -> Response:
    """``/-/object/<ref>``: the object's page, a redirect to the one page, or a 404."""
    return await _go(datasette, request, urllib.parse.unquote(request.url_vars["ref"]))


async def find_page(datasette: Datasette, request: Request) -> Response:
    """``/-/find?ref=``: the home page's address box."""
    return await _go(datasette, request, request.args.get("ref", "").strip())


async def provenance_json(datasette: Datasette, request: Request) -> Response:
    """``/-/provenance/<digest>.json``: ``provledger provenance DIGEST --json``, live."""
    digest = request.url_vars["digest"]
    db = datasette.get_database(DATABASE)
    found = (await db.execute("SELECT kind FROM objects WHERE digest = ?", [digest])).first()
    if found is None or found[0] != "verification-result":
        why = "not in this ledger" if found is None else f"a {found[0]}, not a VerificationResult"
        return Response.json({"ok": False, "error": f"{digest} is {why}"}, status=404)
    origin = (await db.execute("SELECT value FROM ledger_info WHERE key = 'origin'")).first()
    live = await asyncio.to_thread(
        live_provenance,
        getattr(datasette, "provledger_ledger", None),
        None if origin is None else str(origin[0]),
        digest,
    )
    if live.report is None:
        return Response.json({"ok": False, "error": live.message}, status=503)
    # As ``provledger provenance DIGEST --json`` prints it: the report and the ref asked.
    return Response.json({**live.report, "ref": digest})
