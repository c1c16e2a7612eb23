"""The auditor's pages in process: home, cohort, result and pasted addresses.

Each page's verdicts are compared with the command line's on the same ledger (corpus +
demo + toy lineage, ``browse_ledger``): the cohort audits the index stored are exactly
``provledger cohort audit ID --json``, a result page's checks and its JSON are exactly
``provledger provenance DIGEST --json``. Addresses resolve as ``provledger show``
resolves them. A hostile cohort id renders as text.
"""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
from browse_ledger import BURNED, TOY_TASK, TOY_V1, TOY_V2, BuiltLedger, build
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import app

pytest.importorskip("datasette")

from cohorts.browse.web import make_app

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"
#: successor-five's stored result: present, but the cohort lists other bytes (FAILED).
MISMATCHED = "sha256:05cde97b8ce33868c602f05db053e2156c716394a2d1fc2fc0b76c48558cc1fa"
MISMATCHED_LEGACY = "sha256:c2b1ee6d5f7d12de7f618933dbe9a4d6f6a98628b0503ccfb8d3d669b9826753"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltLedger:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    return build(tmp_path_factory.mktemp("pages"), CORPUS)


class Client:
    """One app on the built ledger; ``get`` returns (status, text, location)."""

    def __init__(self, browse: Path, ledger: Path | None) -> None:
        self.ds = make_app(browse, ledger=ledger)
        asyncio.run(self.ds.invoke_startup())

    def get(self, path: str) -> tuple[int, str, str | None]:
        async def fetch() -> Any:
            return await self.ds.client.get(path)

        reply = asyncio.run(fetch())
        return reply.status_code, reply.text, reply.headers.get("location")


@pytest.fixture(scope="module")
def client(built: BuiltLedger) -> Client:
    return Client(built.browse, built.db)


def _cli_json(args: list[str], code: int | None = None) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"])
    if code is not None:
        assert result.exit_code == code, result.output
    return json.loads(result.stdout)


def _text(html: str) -> str:
    """The page's text, roughly as a reader sees it (tags out, entities decoded)."""
    import html as html_module

    body = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    return re.sub(r"\s+", " ", html_module.unescape(re.sub(r"<[^>]+>", " ", body)))


# --- home ----------------------------------------------------------------------------


def test_home_lists_every_cohort_as_the_audit_does(built: BuiltLedger, client: Client) -> None:
    status, html, _ = client.get("/")
    assert status == 200
    rows = dict(
        re.findall(r'<tr data-cohort="([^"]+)" data-stage="[^"]*" data-audit="([^"]+)">', html)
    )
    audited = _cli_json(["cohort", "audit", "--all", "--db", str(built.db)], 1)
    expected = {}
    for row in audited:
        cohort_id = row.get("cohort_id", row.get("id"))
        expected[cohort_id] = "defects" if row["defects"] else "missing" if row["missing"] else "ok"
        assert row["ok"] == (expected[cohort_id] == "ok")
    assert rows == expected
    assert rows[BURNED] == "ok" and rows["benchmark/phase-b2-successor-five"] == "defects"
    assert rows["benchmark/phase-b2-first-five-v2"] == "missing"


def test_home_answers_burned_why_when_and_successor(built: BuiltLedger, client: Client) -> None:
    _, html, _ = client.get("/")
    text = _text(html)
    assert "Cohorts (7): 2 burned" in text
    row = html.split(f'data-cohort="{BURNED}"')[1].split("</tr>")[0]
    assert 'data-stage="burned"' in html.split(f'data-cohort="{BURNED}"')[1][:40]
    row_text = _text(row)
    assert "Frozen evaluator plans encoded semantic fragments" in row_text
    assert "upstream recorded no date" in row_text and "5 outcome(s) excluded" in row_text
    with sqlite3.connect(built.browse) as c:
        seq, recorded = c.execute(
            "SELECT seq, recorded_at FROM burn_notices WHERE cohort_id = ?", (BURNED,)
        ).fetchone()
        (covering,) = c.execute(
            "SELECT min(size) FROM checkpoints WHERE size > ?", (seq,)
        ).fetchone()
    assert f"log entry {seq} {recorded}; in checkpoint {covering}" in row_text
    for successor in ("first-five-v2", "first-five-v3", "successor-five"):
        assert f"benchmark/phase-b2-{successor} (frozen): upstream claim only, not bound" in (
            row_text
        )
    toy = _text(html.split(f'data-cohort="{TOY_V1}"')[1].split("</tr>")[0])
    assert "toy outcome seen early" in toy
    assert re.search(
        r"example/toy-v2 \(frozen\): bound at entry \d+ , plan version 0\.4 \(4 tasks, 2"
        r" calibration records\)",
        toy,
    ), toy


def test_home_links_one_click_to_each_cohort(built: BuiltLedger, client: Client) -> None:
    _, html, _ = client.get("/")
    links = re.findall(r'<a class="cohort" href="([^"]+)">', html)
    assert len(links) == 7
    for link in links:
        status, page, _ = client.get(link)
        assert status == 200, link
        assert "Lifecycle, from the log" in page


# --- cohort --------------------------------------------------------------------------


def test_stored_audit_is_the_commands(built: BuiltLedger) -> None:
    """cohort_audits.report is `cohort audit ID --json`, for every cohort."""
    with sqlite3.connect(built.browse) as c:
        stored = dict(c.execute("SELECT cohort_id, report FROM cohort_audits").fetchall())
    assert len(stored) == 7
    for cohort_id, report in stored.items():
        assert json.loads(report) == _cli_json(
            ["cohort", "audit", cohort_id, "--db", str(built.db)]
        ), cohort_id


def test_burned_cohort_page(client: Client) -> None:
    status, html, _ = client.get("/-/cohort/" + BURNED)
    assert status == 200
    text = _text(html)
    assert "Date upstream recorded none (the ledger does not invent one)" in text
    for n in ("001-cohort-path-boundary", "002-frozen-definition-digest-test"):
        assert f"benchmark/phase-b2/{n}" in text
    assert "Excluded outcomes (5)" in text
    assert "Tasks never to be reused as held-out evidence (1)" in text
    assert "its solution is known, pull request #153" in text
    assert "Successors (3)" in text
    assert text.count("not bound by the ledger") == 3
    assert "record, stage burned" in text and "burn notice" in text
    # Findings carry their code and its meaning.
    assert "relation.successors.multiple" in text
    assert "more than one cohort claims to succeed this one" in text


def test_successor_page_names_plans_and_calibrations(client: Client) -> None:
    _, html, _ = client.get("/-/cohort/" + TOY_V1)
    text = _text(html)
    assert "claims this cohort in extensions" in text
    assert re.search(r"bound at log entry \d+ \(checkpoint \d+\)", text)
    assert text.count("v0.4") >= 4
    assert "calibration record" in text and "v0.4 decoy → reject_candidate" in text
    assert "v0.4 straightforward → accept_candidate" in text
    _, html2, _ = client.get("/-/cohort/" + TOY_V2)
    text2 = _text(html2)
    assert "Succeeds" in text2 and TOY_V1 in text2
    assert re.search(r"bound as successor of example/toy-v1", text2)


def test_cohort_page_lists_outcomes_and_defects(client: Client) -> None:
    _, html, _ = client.get("/-/cohort/benchmark/phase-b2-successor-five")
    text = _text(html)
    assert "Outcomes listed (5)" in text
    assert "stored under another digest than the cohort lists" in text
    assert f'href="/-/object/{MISMATCHED}"' in html
    assert "attempt.verification_result.digest" in text
    assert "the VerificationResult stored under its id does not hash to the digest" in text
    assert "defect" in text and "missing" in text


def test_pre_registration_on_home_cohort_and_result(built: BuiltLedger, client: Client) -> None:
    """Each outcome's pre-registration, as ``cohort audit --json`` judges it, on the home
    page (counts), the cohort page (per outcome, with the reason) and the result page."""
    _, home, _ = client.get("/")
    v2 = _text(home.split(f'data-cohort="{TOY_V2}"')[1].split("</tr>")[0])
    assert "1 pre-registered" in v2 and "NOT" not in v2
    corpus = _text(home.split('data-cohort="benchmark/phase-b2-successor-five"')[1])
    row = corpus.split("</tr>")[0]
    assert "5 not judged" in row and "order not attested" not in row
    audit = _cli_json(["cohort", "audit", TOY_V2, "--db", str(built.db)])
    (judged,) = audit["preregistration"]
    assert judged["status"] == "pre_registered"
    _, html, _ = client.get("/-/cohort/" + TOY_V2)
    assert re.findall(r'data-prereg="([^"]*)"', html) == ["pre_registered"]
    text = _text(html)
    assert "Pre-registration 1 pre-registered" in text
    assert judged["reason"] in text
    result = judged["result"]["digest"]
    _, page, _ = client.get(f"/-/object/{result}")
    line = _text(page).split("Pre-registration:")[1].split("Link")[0]
    assert f"pre-registered as {TOY_TASK} / {judged['attempt']}: {judged['reason']}" in line
    # Imported history under other bytes than listed: no judgement, never a claim.
    _, html, _ = client.get("/-/cohort/benchmark/phase-b2-successor-five")
    assert set(re.findall(r'data-prereg="([^"]*)"', html)) == {"not_judged"}
    # successor-five lists other bytes than these: provenance judges no listing of them.
    _, page, _ = client.get(f"/-/object/{MISMATCHED}")
    line = _text(page).split("Pre-registration:")[1].split("Link")[0]
    assert "not judged (no cohort lists these bytes)" in line


# --- result --------------------------------------------------------------------------


def test_audit_provenance_and_pages_agree_on_a_mismatched_listing(
    built: BuiltLedger, client: Client
) -> None:
    """successor-five lists attempt-001 under bytes the ledger lacks; the stored result
    with that id (imported history) is other bytes. ``cohort audit`` (which finds it by
    id), ``provenance`` and the cohort page give one verdict, in the same words:
    mismatched, not judged for pre-registration (not "order not attested")."""
    cohort = "benchmark/phase-b2-successor-five"
    audit = _cli_json(["cohort", "audit", cohort, "--db", str(built.db)], code=1)
    (judged,) = [p for p in audit["preregistration"] if p["result"] is not None]
    assert (judged["attempt"], judged["status"]) == ("attempt-001", "not_judged")
    assert judged["result"]["digest"] == MISMATCHED
    assert judged["reason"].startswith("mismatched: the cohort lists sha256:1f850bb3675c")
    assert MISMATCHED in judged["reason"] and MISMATCHED_LEGACY in judged["reason"]
    assert audit["preregistration_counts"]["order_not_attested"] == 0
    prov = _cli_json(["provenance", MISMATCHED, "--db", str(built.db)], code=1)
    assert prov["outcome"] == "mismatched" and prov["preregistration"] == []
    (listing,) = next(c for c in prov["checks"] if c["name"] == "cohorts")["children"]
    assert listing["status"] == "failed" and listing["reason"].endswith(": " + judged["reason"])
    _, html, _ = client.get("/-/cohort/" + cohort)
    assert re.sub(r"\s", "", judged["reason"]) in re.sub(r"\s", "", _text(html))  # digests: links


def _flat(checks: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for check in checks:
        out.append((check["name"], check["status"]))
        out += _flat(check["children"])
    return out


@pytest.mark.parametrize("which", ["repair", "mismatched"])
def test_result_page_is_the_provenance_command(
    built: BuiltLedger, client: Client, which: str
) -> None:
    digest = built.repair_digest if which == "repair" else MISMATCHED
    cli = _cli_json(["provenance", digest, "--db", str(built.db)])
    assert cli["ok"] is (which == "repair")
    status, body, _ = client.get(f"/-/provenance/{digest}.json")
    assert status == 200
    assert json.loads(body) == cli
    _, html, _ = client.get(f"/-/object/{digest}")
    shown = re.findall(r'data-check="([^"]*)" data-status="(passed|failed)"', html)
    import html as html_module

    assert [(html_module.unescape(n), s) for n, s in shown] == _flat(cli["checks"])
    verdict = "intact" if cli["ok"] else "BROKEN"
    assert "Provenance chain: <span" in html and verdict in _text(html).split("Link")[0]
    assert f"outcome: {cli['outcome']}" in _text(html)
    assert "Evidence strength:" in _text(html)


def test_results_table_shows_status_as_a_claim(client: Client) -> None:
    _, html, _ = client.get(f"/browse/results?digest={MISMATCHED}")
    cell = html.split('<td class="col-status')[1].split("</td>")[0]
    assert "states passed" in cell and "its claim" in cell
    assert f'href="/-/object/{MISMATCHED}"' in cell
    assert "check" in cell


def test_result_page_without_ledger_is_not_a_verdict(built: BuiltLedger) -> None:
    bare = Client(built.browse, None)
    _, html, _ = bare.get(f"/-/object/{MISMATCHED}")
    assert "Provenance chain: not checked" in html
    status, _, _ = bare.get(f"/-/provenance/{MISMATCHED}.json")
    assert status == 503


# --- addresses -----------------------------------------------------------------------


def _cohort_link(cohort_id: str) -> str:
    return "/-/cohort/" + urllib.parse.quote(cohort_id, safe="/")


def test_addresses_redirect_to_the_one_page(built: BuiltLedger, client: Client) -> None:
    canonical = f"/-/object/{MISMATCHED}"
    for ref in (
        MISMATCHED[:15],  # unique prefix
        MISMATCHED[7:20],  # bare hex prefix
        MISMATCHED_LEGACY,  # upstream's digest
        "benchmark/phase-b2-successor/001-negative-evidence-type-boundary/"
        "single-worker-baseline-v1/attempt-001/patch-verification",  # its id
    ):
        status, _, location = client.get("/-/object/" + urllib.parse.quote(ref, safe="/:"))
        assert (status, location) == (302, canonical), ref
        status, _, location = client.get("/-/find?" + urllib.parse.urlencode({"ref": ref}))
        assert (status, location) == (302, canonical), ref
    assert client.get(canonical)[0] == 200
    # A cohort id, and the definition digest the cohort page links, lead to the cohort.
    status, _, location = client.get("/-/object/" + BURNED)
    assert (status, location) == (302, _cohort_link(BURNED))
    with sqlite3.connect(built.browse) as c:
        (definition,) = c.execute(
            "SELECT definition_digest FROM cohorts WHERE cohort_id = ? AND stage = 'burned'",
            (BURNED,),
        ).fetchone()
    status, _, location = client.get("/-/object/" + definition)
    assert (status, location) == (302, _cohort_link(BURNED))


def test_ambiguous_and_unknown_addresses_say_why(client: Client) -> None:
    status, html, _ = client.get("/-/object/sha256:0")
    assert status == 404 and "malformed digest" in _text(html)
    status, html, _ = client.get("/-/object/sha256:" + "0" * 64)
    assert status == 404 and "object not found" in _text(html)
    status, html, _ = client.get("/-/object/no/such/id@3")
    assert status == 404 and "object not found, got no/such/id@3" in _text(html)
    status, html, _ = client.get("/-/cohort/no/such/cohort")
    assert status == 404 and "no cohort with id no/such/cohort" in _text(html)
    status, html, _ = client.get("/-/object/")
    assert status == 404 and "no address given" in _text(html)


# --- standing ------------------------------------------------------------------------


def test_unattested_burn_is_never_the_authoritys_on_the_web(tmp_path: Path) -> None:
    """The real corpus imported ``--unsigned``: its burn notice and burned cohort are
    unattested history. No page calls them the authority's: the home page counts no
    burned cohort, and the cohort page, the notice's own page and the burn tables and
    query say what the notice is."""
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    db = tmp_path / "ledger.db"
    runner = CliRunner()
    for args in (
        ["init", "--db", str(db)],
        ["import", "idkmesh", str(CORPUS), "--unsigned", "--db", str(db)],
        ["index", "--db", str(db)],
    ):
        assert runner.invoke(app, args).exit_code == 0, args
    site = Client(db.with_name("ledger.browse.db"), db)
    with sqlite3.connect(db.with_name("ledger.browse.db")) as c:
        (notice, standing) = c.execute(
            "SELECT digest, standing FROM burn_notices WHERE cohort_id = ?", (BURNED,)
        ).fetchone()
    assert standing == "unattested history"
    unattested = "unattested history: does not count, never the authority's"
    pages = {}
    for path in (
        "/",
        "/-/cohort/" + BURNED,
        f"/-/object/{notice}",
        "/browse/burn_notices",
        "/browse/burned_cohorts",
    ):
        status, html, _ = site.get(path)
        assert status == 200, path
        pages[path] = _text(html)
        # The standing column's own description says "never authority-issued".
        assert "authority-issued" not in pages[path].replace("never authority-issued", ""), path
    assert unattested in pages["/"].split(BURNED, 1)[1]
    assert "Cohorts (5) Cohort" in pages["/"]  # no ": N burned" after the count
    assert f"Stage burned ({unattested})" in pages["/-/cohort/" + BURNED]
    assert f"Standing {unattested}" in pages[f"/-/object/{notice}"]
    assert "Signed by nobody" in pages[f"/-/object/{notice}"]
    for table in ("/browse/burn_notices", "/browse/burned_cohorts"):
        assert "unattested history" in pages[table], table


def test_authority_burn_notice_counts(built: BuiltLedger, client: Client) -> None:
    """Imported with the authority key (the browse test ledger), the same notice counts."""
    with sqlite3.connect(built.browse) as c:
        (notice,) = c.execute(
            "SELECT digest FROM burn_notices WHERE cohort_id = ?", (BURNED,)
        ).fetchone()
    _, html, _ = client.get(f"/-/object/{notice}")
    assert 'data-standing="counts"' in html
    assert "Signed by authority (valid)" in _text(html)


# --- hostile -------------------------------------------------------------------------


def test_hostile_cohort_renders_as_text(tmp_path: Path) -> None:
    """A cohort whose id and title are HTML (quarantined: it fails its schema, but the
    home page lists it) is shown as text on every page, never run."""
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    hostile_id = '<script>alert("id")</script>/x'
    document = json.loads(
        (CORPUS / "benchmarks" / "phase-b2-successor-v2" / "cohort.json").read_text()
    )
    document.update(id=hostile_id, title="<img src=x onerror=alert(1)>")
    folder = tmp_path / "repo" / "benchmarks" / "evil"
    folder.mkdir(parents=True)
    (folder / "cohort.json").write_text(json.dumps(document))
    db = tmp_path / "ledger.db"
    runner = CliRunner()
    for args in (
        ["init", "--db", str(db)],
        ["import", "idkmesh", str(tmp_path / "repo"), "--db", str(db)],
        ["index", "--db", str(db)],
    ):
        assert runner.invoke(app, args).exit_code == 0, args
    page = Client(db.with_name("ledger.browse.db"), db)
    status, home, _ = page.get("/")
    assert status == 200
    assert "<script>alert" not in home and "<img src=x" not in home
    assert "&lt;script&gt;alert(&#34;id&#34;)&lt;/script&gt;/x" in home
    link = re.search(r'<a class="cohort" href="([^"]+)">', home)
    assert link is not None and "<" not in link.group(1)
    status, cohort, _ = page.get(link.group(1))
    assert status == 200
    assert "<script>alert" not in cohort and "&lt;script&gt;" in cohort
    status, missing, _ = page.get("/-/object/" + urllib.parse.quote("<script>x</script>"))
    assert status == 404 and "<script>x" not in missing and "&lt;script&gt;x" in missing


def test_every_audit_code_has_a_meaning() -> None:
    """Every finding code the audit's modules can emit (read from the source) means
    something; the families cover the codes built from names."""
    from cohorts.meanings import UNKNOWN, meaning

    sources = "".join(
        (ROOT / "cohorts" / f"{name}.py").read_text()
        for name in ("audit", "lifecycle", "burn", "task_checks", "service", "definition")
    )
    codes = set(re.findall(r'"((?:cohort|task|attempt|burn|relation)(?:\.[a-z_]+)+)"', sources))
    codes |= {
        f"attempt.{name}.{check}"
        for name in ("result_manifest", "verification_result")
        for check in ("missing", "digest", "id", "schema")
    }
    codes |= {
        f"attempt.{code}.{what}"
        for code in ("manifest", "verification")
        for what in ("work_unit", "work_unit_digest")
    }
    codes |= {
        f"task.{name}.{check}"
        for name in ("work_unit", "plan")
        for check in ("missing", "digest", "id", "schema")
    }
    assert len(codes) > 50
    unknown = sorted(c for c in codes if meaning(c) == UNKNOWN)
    assert unknown == []
    assert meaning("no.such.code") == UNKNOWN


def _objects_db(digests: list[str]) -> sqlite3.Connection:
    """An empty browse database holding only ``digests`` as objects."""
    import sqlite_utils

    from cohorts.browse.build import ensure_schema

    db = sqlite_utils.Database(memory=True)
    ensure_schema(db)
    for seq, digest in enumerate(digests):
        db.table("objects").insert(
            {"digest": digest, "seq": seq, "kind": "blob", "object_id": None, "text": "x"}
        )
    return db.conn


def test_an_ambiguous_prefix_names_its_candidates() -> None:
    from cohorts.browse.addresses import locate

    twins = ["sha256:abcd123456" + "0" * 54, "sha256:abcd123456" + "1" * 54]
    conn = _objects_db([*twins, "sha256:" + "9" * 64])
    found = locate(conn, "sha256:abcd")
    assert found.url is None and "ambiguous digest prefix" in found.reason
    assert [c.digest for c in found.candidates] == twins
    assert "ambiguous" in locate(conn, "abcd123456").reason  # bare hex: the same
    assert locate(conn, "sha256:abcd1234560").url == "/-/object/" + twins[0]
    assert locate(conn, "abcd1234561").url == "/-/object/" + twins[1]
    assert locate(conn, "99999999").url == "/-/object/sha256:" + "9" * 64


@given(ref=st.text(max_size=600))
@settings(max_examples=300, deadline=None)
def test_locate_is_total(ref: str) -> None:
    """Any string, hostile or huge, gives an address or a reason, never an exception."""
    from cohorts.browse.addresses import locate

    found = locate(_TOTAL_DB, ref)
    assert (found.url is None) == bool(found.reason)
    if found.url is not None:
        assert found.url.isascii() and "<" not in found.url


_TOTAL_DB = _objects_db(["sha256:" + "ab" * 32])


# --- no address gives a 500 ------------------------------------------------------------


def _asgi_status(client: Client, raw_path: bytes, query: bytes = b"") -> int:
    """The status the served app (``ds.app()``, what ``serve`` hands uvicorn, plugin
    wrappers included) answers for a GET of exactly these bytes."""
    app = client.ds.app()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": urllib.parse.unquote(raw_path.decode("latin-1")),
        "raw_path": raw_path,
        "root_path": "",
        "query_string": query,
        "headers": [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(app(scope, receive, send))
    return int(next(m["status"] for m in sent if m["type"] == "http.response.start"))


#: Paths a person pastes or a hostile visitor sends: traversal, escapes that decode to
#: nothing valid, slashes, HTML, SQL, NUL, huge, and Datasette's own parameters misused.
HOSTILE_PATHS: tuple[bytes, ...] = (
    b"/-/object/../../etc/passwd",
    b"/-/object/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    b"/-/object/%",
    b"/-/object/%ZZ",
    b"/-/object/%ff%fe",
    b"/-/object/%C3%28",
    b"/-/object/a/b/c",
    b"/-/object//",
    b"/-/object/sha256:",
    b"/-/object/sha256:" + b"g" * 64,
    b"/-/object/sha256:" + b"0" * 65,
    b"/-/object/SHA256:" + b"A" * 64,
    b"/-/object/x@",
    b"/-/object/x@-1",
    b"/-/object/x@99999999999999999999999999",
    b"/-/object/%3Cscript%3Ealert(1)%3C%2Fscript%3E",
    b"/-/object/'%20OR%201=1--",
    b"/-/object/" + b"a" * 5000,
    b"/-/object/" + b"%E2%80%AE" * 50,
    b"/-/cohort/",
    b"/-/cohort/%",
    b"/-/cohort/%ff",
    b"/-/cohort/../../",
    b"/-/cohort/" + b"x/" * 500,
    b"/-/provenance/sha256:" + b"0" * 64 + b".json",
    b"/-/provenance/nothing.json",
    b"/-/find",
    b"/browse/objects?_sort=no_such_column",
    b"/browse/objects?_sort_desc=%22",
    b"/browse/objects.json?_sort=nope",
    b"/browse/result_chain?_sort=nope",
    b"/browse/objects?_size=-1",
    b"/browse/objects?_size=max",
    b"/browse/objects?_size=99999999999999999999",
    b"/browse/objects?_next=%00garbage",
    b"/browse/objects?_next=zzz",
    b"/browse/objects?_facet=no_such_column",
    b"/browse/objects?_sort=seq&_sort_desc=seq",
    b"/browse/objects?_col=nope&_nocol=digest",
    b"/browse/objects?_through=notjson",
    b"/browse/objects?_through=%7B%22table%22:%22x%22,%22column%22:%22y%22,%22value%22:1%7D",
    b"/browse/objects?_facet_array=text",
    b"/browse/objects?_facet_date=text",
    b"/browse/objects?seq__arraycontains=1",
    b"/browse/objects?seq__date=x",
    b"/browse/objects?_json=text&_shape=objects",
    b"/browse/objects?_where=1)%20union%20select",
    b"/browse/objects?digest__gt=%ff",
    b"/browse/objects?_search=%22",
    b"/browse/tasks?_search=%22unbalanced",
    b"/browse/tasks?_search=*",
    b"/browse/objects.csv",
    b"/browse/objects.json?_shape=nonsense",
    b"/browse/objects.nope",
    b"/browse/objects/sha256:" + b"0" * 64,
    b"/browse/objects/%ff.json",
    b"/browse/no_such_table",
    b"/browse/objects/a/b",
    b"/browse/cohorts/benchmark/phase-b2-first",
    b"/browse/cohort_successors?cohort=%27",
    b"/browse/bound_items",
    b"/browse?sql=select%20*%20from%20sqlite_master",
    b"/browse?sql=select%20zeroblob(1000000000)",
    b"/browse?sql=attach%20database%20'x'%20as%20y",
    b"/browse?sql=%ff",
    b"/nodb",
    b"/-/nothing",
    b"//",
    b"/%2f%2f",
    b"/-/static/../../pyproject.toml",
    b"/provledger-static/../web.py",
    b"/-/object/\xff\xfe",
    b"/-/cohort/\xc3\xa9",
    b"/-/object/%00",
    b"/-/find?ref=%00",
)


# A bad _facet is refused (400) after Datasette made its facet coroutines; they are
# finalized unawaited when the refusal is answered (Datasette's own handler kept the
# traceback, and them, alive).
@pytest.mark.filterwarnings("ignore:coroutine .* was never awaited:RuntimeWarning")
def test_no_address_gives_a_500(built: BuiltLedger, client: Client) -> None:
    """A few hundred hostile and generated paths, through the served app: each is
    answered below 500 (a page, a redirect or a 4xx that says why)."""
    import random

    with sqlite3.connect(built.browse) as c:
        digests = [str(r[0]) for r in c.execute("SELECT digest FROM objects ORDER BY seq")]
        ids = [str(r[0]) for r in c.execute("SELECT cohort_id FROM cohort_audits")]
    rng = random.Random(29)
    pieces = [
        "sha256:", "%", "%2F", "/", "..", "@", "@0", "?", "#", "'", '"', "<", "%25", "%ff",
        "é", "\u202e", " ", "%20", ";", "\\", "*", "sha256:0", "%00",
    ]  # fmt: skip
    generated: list[bytes] = []
    for _ in range(300):
        base = rng.choice([*digests, *ids, "", "x"])
        cut = base[: rng.randrange(len(base) + 1)] if base else base
        ref = cut + "".join(rng.choice(pieces) for _ in range(rng.randrange(4)))
        route = rng.choice(["/-/object/", "/-/cohort/", "/-/find?ref=", "/browse/objects/"])
        encoded = urllib.parse.quote(ref, safe="/:@%?=")
        generated.append((route + encoded).encode())
    answered: dict[bytes, int] = {}
    raised: list[tuple[bytes, str]] = []  # an error out of the app is a 500 from uvicorn
    for wire in (*HOSTILE_PATHS, *generated):
        path, _, query = wire.partition(b"?")
        try:
            answered[wire] = _asgi_status(client, path, query)
        except Exception as exc:  # each is reported, then the test fails
            raised.append((wire, repr(exc)))
    assert raised == []
    served = [w for w, s in answered.items() if s >= 500]
    assert served == [], served
    assert len(answered) >= 300
    # The hostile ones are refused or not found, not served as something else.
    assert answered[b"/-/object/%00"] == 400
    assert answered[b"/-/object/\xff\xfe"] == 404
    assert answered[b"/-/object/" + b"a" * 5000] == 404
    assert answered[b"/browse/objects?_sort=no_such_column"] == 400
    assert answered[b"/browse/objects?_through=notjson"] == 400
