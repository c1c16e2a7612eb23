"""The page of one stored object, ``/-/object/<digest>``; for a VerificationResult, the
result page with its provenance chain checked live.

The page re-checks what it can from the browse database alone: the leaf hash is
recomputed from the entry, the inclusion proof is rebuilt from the projected tree nodes
and verified against the newest checkpoint's root, and the checkpoint's signature is
verified with the log key the ledger records. An auditor who holds the log key out of
band still runs ``provledger verify --log-key``: this page checks the projection's
internal consistency, not the trust anchor.

For a VerificationResult the page also runs ``cohorts.provenance.provenance`` live, the
engine of ``provledger provenance``, on the ledger ``serve`` was given (opened read-only
per request, refused when its origin is not the projection's): the verdicts are the
command's, against the ledger as it is now. Nothing in the browse database is taken as
a verdict.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from datasette.utils.asgi import Response
from markupsafe import escape

from cohorts.browse.names import DATABASE, GOVERNED_TABLES
from cohorts.provenance import OUTCOME_MEANING
from cohorts.timeline import STATUS_TEXT
from ledger.errors import LedgerError
from ledger.log import merkle
from ledger.log.leaf import entry_record
from ledger.log.note import open_checkpoint
from ledger.store.location import DbLocation

if TYPE_CHECKING:
    # Datasette ships no types: these name what the hooks are given (untyped to mypy).
    from datasette.app import Datasette
    from datasette.utils.asgi import Request


@dataclass(frozen=True)
class ProofView:
    """What the object page says about inclusion (all hex, ready to show)."""

    ok: bool
    message: str
    tree_size: int | None = None
    root: str | None = None
    leaf_hash: str | None = None
    path: tuple[str, ...] = ()
    note: str | None = None


class _Nodes:
    """``merkle.NodeReader`` over the projected ``tree_nodes`` table."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def node(self, level: int, index: int) -> bytes:
        row = self.conn.execute(
            "SELECT hash FROM tree_nodes WHERE level = ? AND idx = ?", (level, index)
        ).fetchone()
        if row is None:
            raise merkle.ProofRequestError(f"tree node missing at level {level} index {index}")
        return bytes.fromhex(str(row[0]))


def inclusion(conn: sqlite3.Connection, digest: str) -> ProofView:
    """Prove inclusion of ``digest`` under the newest checkpoint covering it."""
    entry = conn.execute(
        "SELECT seq, kind, appended_at FROM objects WHERE digest = ?", (digest,)
    ).fetchone()
    if entry is None:
        return ProofView(False, "object not in this projection")
    seq, kind, appended_at = int(entry[0]), str(entry[1]), str(entry[2])
    cp = conn.execute(
        "SELECT size, root, note FROM checkpoints WHERE size > ? ORDER BY size DESC LIMIT 1",
        (seq,),
    ).fetchone()
    if cp is None:
        return ProofView(False, "no checkpoint covers this entry yet (run provledger checkpoint)")
    size, root_hex, note = int(cp[0]), str(cp[1]), str(cp[2])
    info = dict(conn.execute("SELECT key, value FROM ledger_info").fetchall())
    leaf = merkle.leaf_hash(entry_record(seq, kind, digest, appended_at))
    try:
        nodes = _Nodes(conn)
        if nodes.node(0, seq) != leaf:
            return ProofView(False, "leaf hash differs from the projected tree", size, root_hex)
        path = merkle.inclusion_proof(seq, size, nodes)
        merkle.verify_inclusion(seq, size, leaf, path, bytes.fromhex(root_hex))
    except (LedgerError, ValueError) as exc:
        return ProofView(False, f"inclusion proof failed: {exc}", size, root_hex, leaf.hex())
    signed = "checkpoint signature not checked (no log key recorded)"
    vkey = info.get("log_verifier_key")
    if vkey:
        try:
            cpt = open_checkpoint(note.encode("utf-8"), str(vkey))
            same = cpt.size == size and cpt.root_hash == bytes.fromhex(root_hex)
            signed = (
                "checkpoint signature verified with the ledger's log key"
                if same
                else "checkpoint note names another tree head"
            )
            if not same:
                return ProofView(False, signed, size, root_hex, leaf.hex())
        except LedgerError as exc:
            return ProofView(False, f"checkpoint signature: {exc}", size, root_hex, leaf.hex())
    return ProofView(
        True,
        f"entry {seq} is included in the tree of size {size}; {signed}",
        size,
        root_hex,
        leaf.hex(),
        tuple(h.hex() for h in path),
        note,
    )


@dataclass(frozen=True)
class LiveProvenance:
    """Provenance checks of one result, run on the ledger when the page was asked for."""

    ran: bool
    message: str
    ok: bool = False
    outcome: str | None = None
    checks: tuple[dict[str, object], ...] = ()
    #: The report as ``provledger provenance --json`` prints it (None: not run).
    report: dict[str, object] | None = None


def live_provenance(
    ledger: DbLocation | Path | None, origin: str | None, digest: str
) -> LiveProvenance:
    """Run the provenance checks of ``digest`` on ``ledger`` (read-only)."""
    from cohorts.provenance import Check, provenance
    from ledger.store.backends import open_store

    if ledger is None:
        return LiveProvenance(False, "start provledger serve with --db LEDGER to run the checks")
    try:
        with open_store(ledger, readonly=True) as store:
            if store.get_meta("origin") != origin:
                return LiveProvenance(False, "the ledger given to serve is not this projection's")
            report = provenance(store, digest)
    except LedgerError as exc:
        return LiveProvenance(False, f"cannot read the ledger: {exc}")
    rows: list[dict[str, object]] = []

    def walk(check: Check, depth: int) -> None:
        rows.append(
            {
                "depth": depth,
                "name": check.name,
                "status": "passed" if check.ok else "failed",
                "reason": check.reason,
                "subject": check.subject,
            }
        )
        for child in check.children:
            walk(child, depth + 1)

    for check in report.checks:
        walk(check, 0)
    return LiveProvenance(
        True,
        "checked now, on the ledger",
        report.ok,
        report.outcome,
        tuple(rows),
        report.to_json(),
    )


def _dicts(rows: Iterable[Mapping[str, object]]) -> list[dict[str, object]]:
    return [dict(r) for r in rows]


async def object_page(datasette: Datasette, request: Request, digest: str) -> Response:
    """The page of the object stored under ``digest`` (``pages`` resolved the address)."""
    db = datasette.get_database(DATABASE)
    found = (await db.execute("SELECT * FROM objects WHERE digest = ?", [digest])).first()
    if found is None:
        return Response.html(
            f"<h1>Not found</h1><p>No object {escape(digest)} in this ledger.</p>", status=404
        )
    obj = dict(found)
    attestations = _dicts(
        await db.execute(
            "SELECT a.*, v.reason AS revoked_reason, v.seq AS revoked_at_seq"
            " FROM attestations a LEFT JOIN revocations v ON v.key_id = a.key_id"
            " WHERE a.subject_digest = ? ORDER BY a.seq",
            [digest],
        )
    )
    attests = _dicts(await db.execute("SELECT * FROM attestations WHERE digest = ?", [digest]))
    live = None
    if obj["kind"] == "verification-result":
        origin = (await db.execute("SELECT value FROM ledger_info WHERE key = 'origin'")).first()
        ledger = getattr(datasette, "provledger_ledger", None)
        live = await asyncio.to_thread(
            live_provenance, ledger, None if origin is None else str(origin[0]), digest
        )
    proof = await db.execute_fn(lambda conn: inclusion(conn, digest))
    result = (await db.execute("SELECT * FROM results WHERE digest = ?", [digest])).first()
    cohort = (await db.execute("SELECT cohort_id FROM cohorts WHERE digest = ?", [digest])).first()
    # A governed record's standing, as projected (the one computation): whether it counts.
    governed = GOVERNED_TABLES.get(str(obj["kind"]))
    standing = None
    if governed is not None:
        sql = f"SELECT standing FROM {governed} WHERE digest = ?"  # a fixed table name
        standing = (await db.execute(sql, [digest])).first()
    context = {
        "obj": obj,
        "attestations": attestations,
        "attests": attests[0] if attests else None,
        "live": live,
        "outcome_meaning": OUTCOME_MEANING.get(live.outcome or "") if live else None,
        "preregistration": ((live.report or {}).get("preregistration") or []) if live else [],
        "prereg_text": STATUS_TEXT,
        "result": None if result is None else dict(result),
        "cohort_id": None if cohort is None else cohort[0],
        "proof": proof,
        "standing": None if standing is None else standing[0],
    }
    html = await datasette.render_template("provledger_object.html", context, request=request)
    return Response.html(html)
