"""The Datasette app of `provledger serve`, in process: object pages, links, read-only."""

from __future__ import annotations

import asyncio
import hashlib
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from browse_ledger import BURNED, BuiltLedger, build

pytest.importorskip("datasette")

from cohorts.browse.web import CANNED_QUERIES, DATABASE, make_app

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltLedger:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    return build(tmp_path_factory.mktemp("browseweb"), CORPUS)


def _get(browse: Path, path: str, ledger: Path | None = None) -> Any:
    ds = make_app(browse, ledger=ledger)

    async def fetch() -> Any:
        await ds.invoke_startup()
        return await ds.client.get(path)

    return asyncio.run(fetch())


def test_result_object_page(built: BuiltLedger) -> None:
    page = _get(built.browse, f"/-/object/{built.repair_digest}", built.db)
    assert page.status_code == 200
    text = page.text
    assert 'Provenance chain: <span class="prov-ok">intact' in text
    assert "idkmesh-local-verifier" in text
    assert built.verifier_key_id in text
    assert "retired at seq" in text and "(after signing)" in text
    with sqlite3.connect(built.browse) as c:
        (newest,) = c.execute("SELECT max(size) FROM checkpoints").fetchone()
    assert f"is included in the tree of size {newest}" in text
    assert "checkpoint signature verified with the ledger&#39;s log key" in text
    assert "&#34;status&#34;: &#34;passed&#34;" in text  # pretty JSON, escaped by Jinja
    assert "checked now, on the ledger" in text
    # Digests inside the JSON and the check reasons link to their objects.
    with sqlite3.connect(built.browse) as c:
        (manifest,) = c.execute(
            "SELECT result_manifest_digest FROM results WHERE digest = ?", (built.repair_digest,)
        ).fetchone()
    assert (
        f'&#34;result_manifest_digest&#34;: &#34;<a class="digest" href="/-/object/{manifest}">'
        in text
    )
    assert f'ResultManifest stored as <a class="digest" href="/-/object/{manifest}">' in text
    assert 'data-check="log inclusion" data-status="passed"' in text


def test_result_page_without_ledger_says_so(built: BuiltLedger) -> None:
    text = _get(built.browse, f"/-/object/{built.repair_digest}").text
    assert "Provenance chain: not checked" in text
    assert "--db LEDGER" in text


def test_result_page_refuses_another_ledger(built: BuiltLedger, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ledger.cli import app

    other = tmp_path / "other.db"
    assert CliRunner().invoke(app, ["init", "--db", str(other)]).exit_code == 0
    text = _get(built.browse, f"/-/object/{built.repair_digest}", other).text
    assert "not this projection&#39;s" in text


def test_burned_cohort_object_page_shows_json(built: BuiltLedger) -> None:
    with sqlite3.connect(built.browse) as c:
        (digest,) = c.execute(
            "SELECT digest FROM cohorts WHERE cohort_id = ? AND stage = 'burned'", (BURNED,)
        ).fetchone()
    page = _get(built.browse, f"/-/object/{digest}")
    assert page.status_code == 200
    assert "&#34;stage&#34;: &#34;burned&#34;" in page.text
    # import idkmesh attests every frozen or burned cohort it records with the authority key.
    assert "Attestations (1)" in page.text


def test_tampered_tree_node_fails_the_proof(built: BuiltLedger, tmp_path: Path) -> None:
    bad = tmp_path / "bad.db"
    shutil.copyfile(built.browse, bad)
    with sqlite3.connect(bad) as c:
        seq = c.execute(
            "SELECT seq FROM objects WHERE digest = ?", (built.repair_digest,)
        ).fetchone()[0]
        # The sibling leaf of the result: part of its audit path.
        c.execute(
            "UPDATE tree_nodes SET hash = ? WHERE level = 0 AND idx = ?", ("00" * 32, seq ^ 1)
        )
    page = _get(bad, f"/-/object/{built.repair_digest}")
    assert "not verified" in page.text
    assert "inclusion proof failed" in page.text


def test_digests_render_as_links(built: BuiltLedger) -> None:
    page = _get(built.browse, "/browse/results")
    assert f'<a class="digest" href="/-/object/{built.repair_digest}">' in page.text


def test_unknown_object_is_404(built: BuiltLedger) -> None:
    page = _get(built.browse, "/-/object/sha256:" + "0" * 64)
    assert page.status_code == 404


def test_read_only(built: BuiltLedger) -> None:
    before = hashlib.sha256(built.browse.read_bytes()).hexdigest()
    ds = make_app(built.browse)
    assert [n for n in ds.databases if n != "_internal"] == [DATABASE]
    # Read-only with locking (index may update the file in place): no write gets through.
    conn = ds.databases[DATABASE].connect()
    with pytest.raises(sqlite3.OperationalError, match="readonly"):
        conn.execute("CREATE TABLE x (y)")
    conn.close()
    assert not any(q.get("write") for q in CANNED_QUERIES.values())
    for path in ("/browse/tasks?_search=boundary", "/browse/burned_cohorts", "/browse"):
        assert _get(built.browse, path).status_code == 200
    assert hashlib.sha256(built.browse.read_bytes()).hexdigest() == before


def test_link_digests_escapes_first() -> None:
    from cohorts.browse.addresses import link_digests

    digest = "sha256:" + "ab" * 32
    html = str(link_digests(f'<script>alert("{digest}")</script> sha256:{"0" * 63}'))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert f'<a class="digest" href="/-/object/{digest}">{digest}</a>' in html
    assert html.count("<a ") == 1  # 63 hex digits is not a digest
