"""`provledger serve` in a real browser: headless Debian Chromium driven by selenium.

The installed ``.venv/bin/provledger serve`` runs on a free loopback port over the browse
database of the corpus + demo + toy lineage ledger (``browse_ledger``), kept in SQLite
and, for the auditor's walk, also in PostgreSQL (``serve --db postgresql://...``).
From the home page alone, by clicking, an auditor finds which cohorts are burned, why,
when the ledger learnt it, which outcomes are excluded, which successor replaced a
cohort and under which plan versions, and whether a result's chain is intact. Each page
is saved as a screenshot in the test's tmp dir (``PROVLEDGER_SCREENSHOTS=DIR`` copies
the SQLite walk's home, cohort and result pages there, for docs/BROWSE.md). Nothing
downloads a browser: the Debian ``chromium`` and ``chromium-driver`` packages are
required (CI installs them).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from browse_ledger import BURNED, TOY_TASK, TOY_V1, TOY_V2, BuiltLedger, build, serving
from typer.testing import CliRunner

from ledger.cli import app

pytest.importorskip("datasette", reason="install the test extra: pip install -e '.[test]'")
webdriver = pytest.importorskip("selenium.webdriver")

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
#: successor-five's stored result: present, but the cohort lists other bytes.
MISMATCHED = "sha256:05cde97b8ce33868c602f05db053e2156c716394a2d1fc2fc0b76c48558cc1fa"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1100",
)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltLedger:
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    return build(tmp_path_factory.mktemp("browser"), CORPUS)


@pytest.fixture(scope="module")
def server(built: BuiltLedger) -> Iterator[str]:
    with _serving(built) as base:
        yield base


@contextlib.contextmanager
def _serving(built: BuiltLedger) -> Iterator[str]:
    with serving(built.db, built.browse) as served:
        yield served.base


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), (
        "Debian chromium and chromium-driver are required (apt-get install chromium"
        " chromium-driver)"
    )
    from selenium.webdriver.chrome.service import Service

    os.environ["SE_OFFLINE"] = "true"  # selenium must never try to download a driver
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _open(browser: Any, url: str, shot: Path) -> str:
    from selenium.webdriver.common.by import By

    browser.get(url)
    browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 0
    text: str = browser.find_element(By.TAG_NAME, "body").text
    return text


def _burned_digest(built: BuiltLedger) -> str:
    with sqlite3.connect(built.browse) as c:
        (digest,) = c.execute(
            "SELECT digest FROM cohorts WHERE cohort_id = ? AND stage = 'burned'", (BURNED,)
        ).fetchone()
    return str(digest)


def test_cohort_list(server: str, browser: Any, tmp_path: Path) -> None:
    text = _open(browser, server + "/browse/cohorts", tmp_path / "cohorts.png")
    assert "Benchmark cohorts" in text
    assert BURNED in text and "burned" in text
    assert "IDKMesh Phase B2 first-five repository benchmark" in text


def test_burned_cohort_why_and_when(
    server: str, browser: Any, built: BuiltLedger, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By

    text = _open(browser, server + "/browse/burned_cohorts", tmp_path / "burned.png")
    assert "Which cohorts are burned, why, and when?" in text
    assert "Frozen evaluator plans encoded semantic fragments" in text
    digest = _burned_digest(built)
    # Follow the cohort digest link to its object page.
    browser.find_element(By.CSS_SELECTOR, f'a[href="/-/object/{digest}"]').click()
    browser.save_screenshot(str(tmp_path / "burned-object.png"))
    page = browser.find_element(By.TAG_NAME, "body").text
    assert f"benchmark-cohort: {BURNED}" in page
    assert '"stage": "burned"' in page


def test_excluded_outcomes(server: str, browser: Any, tmp_path: Path) -> None:
    query = urllib.parse.urlencode({"cohort": BURNED})
    text = _open(browser, f"{server}/browse/excluded_outcomes?{query}", tmp_path / "excl.png")
    assert "Which outcomes were excluded?" in text
    for n in ("001-cohort-path-boundary", "002-frozen-definition-digest-test"):
        assert f"benchmark/phase-b2/{n}" in text
    assert "5 rows" in text
    assert "exact added-line semantics" in text


def test_result_object_page_who_signed(
    server: str, browser: Any, built: BuiltLedger, tmp_path: Path
) -> None:
    text = _open(browser, f"{server}/-/object/{built.repair_digest}", tmp_path / "result.png")
    assert "Provenance chain: intact" in text
    assert "idkmesh-local-verifier" in text
    assert built.verifier_key_id in text
    assert "retired at seq" in text
    assert "verified: entry" in text
    assert '"status": "passed"' in text


def test_search_task_title(server: str, browser: Any, tmp_path: Path) -> None:
    query = urllib.parse.urlencode({"_search": "cohort path boundary"})
    text = _open(browser, f"{server}/browse/tasks?{query}", tmp_path / "search.png")
    assert "Cohort path boundary" in text
    assert "benchmark/phase-b2/001-cohort-path-boundary" in text


# --- the auditor's walk, from the home page alone ------------------------------------


@dataclass(frozen=True)
class Site:
    backend: str
    built: BuiltLedger
    base: str


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Site]:
    """The ledger served from SQLite, and the same history kept in PostgreSQL."""
    if request.param == "sqlite":
        yield Site("sqlite", request.getfixturevalue("built"), request.getfixturevalue("server"))
        return
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS}")
    url = request.getfixturevalue("pg_cluster").createdb()
    built = build(tmp_path_factory.mktemp("browser-pg"), CORPUS, url)
    with _serving(built) as base:
        yield Site("postgresql", built, base)


def _shot(browser: Any, path: Path, most: int = 2600) -> None:
    """A screenshot of the page down to ``most`` pixels (the window grown to the page's
    height, then restored), so a person can read it."""
    height = int(browser.execute_script("return document.documentElement.scrollHeight"))
    browser.set_window_size(1400, min(max(height, 600), most))
    browser.save_screenshot(str(path))
    browser.set_window_size(1400, 1100)
    assert path.stat().st_size > 10_000, path


def _keep(site: Site, shot: Path) -> None:
    """Copy a screenshot of the SQLite walk to $PROVLEDGER_SCREENSHOTS (docs/images)."""
    target = os.environ.get("PROVLEDGER_SCREENSHOTS")
    if target and site.backend == "sqlite":
        shutil.copyfile(shot, Path(target) / shot.name)


def _body(browser: Any) -> str:
    from selenium.webdriver.common.by import By

    text: str = browser.find_element(By.TAG_NAME, "body").text
    return text


def _click(browser: Any, text: str) -> None:
    """Follow the link whose text is ``text`` (exactly), as a person would."""
    from selenium.webdriver.common.by import By

    browser.find_element(By.LINK_TEXT, text).click()


def test_auditor_answers_from_the_home_page(site: Site, browser: Any, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    browser.get(site.base + "/")
    _shot(browser, tmp_path / "browse-home.png")
    _keep(site, tmp_path / "browse-home.png")
    rows = {
        r.get_attribute("data-cohort"): r
        for r in browser.find_elements(By.CSS_SELECTOR, "tr[data-cohort]")
    }
    assert len(rows) == 7
    # Which cohorts are burned.
    burned = {c for c, r in rows.items() if r.get_attribute("data-stage") == "burned"}
    assert burned == {BURNED, TOY_V1}
    # Why, and when the ledger learnt it (log position, time, covering checkpoint).
    first_five = rows[BURNED].text
    assert "Frozen evaluator plans encoded semantic fragments" in first_five
    assert "upstream recorded no date; 5 outcome(s) excluded" in first_five
    assert re.search(r"log entry \d+\n\S+Z; in checkpoint \d+", first_five), first_five
    # Which successor replaced it, and under which plan versions.
    toy = rows[TOY_V1].text
    assert "toy outcome seen early" in toy
    assert re.search(
        r"example/toy-v2 \(frozen\): bound at entry \d+, plan version 0\.4 \(4 tasks, 2"
        r" calibration records\)",
        toy,
    ), toy
    assert "upstream claim only, not bound" in first_five
    # The audit's verdict on each cohort.
    assert rows[BURNED].get_attribute("data-audit") == "ok"
    assert rows["benchmark/phase-b2-successor-five"].get_attribute("data-audit") == "defects"
    # Pre-registration, from log positions: the outcome toy-v2 listed after its binding,
    # and none for the cohort whose one stored result is other bytes than it lists.
    assert "1 pre-registered" in rows[TOY_V2].text
    assert "5 not judged" in rows["benchmark/phase-b2-successor-five"].text
    assert "pre-registered" not in rows["benchmark/phase-b2-successor-five"].text

    # One click: the burned cohort, its excluded outcomes and tasks never to reuse.
    _click(browser, TOY_V1)
    _shot(browser, tmp_path / "browse-cohort.png")
    _keep(site, tmp_path / "browse-cohort.png")
    page = _body(browser)
    assert f"Cohort {TOY_V1}" in page
    assert "Excluded outcomes (5)" in page and "example/toy/001-negative-operand" in page
    assert "Tasks never to be reused as held-out evidence (1)" in page
    assert "record, stage frozen" in page and "record, stage burned" in page
    assert "successor example/toy-v2 bound" in page
    assert page.count("v0.4") >= 4 and "v0.4 decoy → reject_candidate" in page

    # Its successor, one click on: the outcome it lists was pre-registered, and that
    # result's chain is intact.
    _click(browser, TOY_V2)
    _shot(browser, tmp_path / "browse-successor.png")
    _keep(site, tmp_path / "browse-successor.png")
    page = _body(browser)
    assert f"Cohort {TOY_V2}" in page and f"bound as successor of {TOY_V1}" in page
    assert "Pre-registration 1 pre-registered" in page
    (cell,) = browser.find_elements(By.CSS_SELECTOR, "td.prereg")
    assert cell.get_attribute("data-prereg") == "pre_registered"
    assert cell.text.startswith("pre-registered\n")
    _click(browser, "open result")
    page = _body(browser)
    assert "Provenance chain: intact" in page
    assert f"Pre-registration: pre-registered as {TOY_TASK} / attempt-001: " in page

    # One more: a result the cohort lists, and whether its chain is intact.
    browser.get(site.base + "/")
    _click(browser, "benchmark/phase-b2-successor-five")
    _click(browser, "open result")
    _shot(browser, tmp_path / "browse-result.png", 1700)
    _keep(site, tmp_path / "browse-result.png")
    page = _body(browser)
    assert "Provenance chain: BROKEN" in page
    assert "outcome: mismatched" in page
    assert "The result states: passed (accept_candidate), its own claim, which the checks" in page
    assert "Evidence strength: passed (accept_candidate), v0.4 calibrated" in page

    # A result produced here: its chain is intact (checked live, on this backend).
    browser.get(site.base + "/")
    links = browser.find_elements(By.CSS_SELECTOR, "table.results a")
    target = [a for a in links if a.get_attribute("href").endswith(site.built.repair_digest)]
    assert target, "the demo's repair result is listed on the home page"
    target[0].click()
    _shot(browser, tmp_path / "result-intact.png")
    page = _body(browser)
    assert "Provenance chain: intact" in page
    assert "checked now, on the ledger" in page
    # The same verdicts as the command, on this backend, for both results.
    for digest in (site.built.repair_digest, MISMATCHED):
        with urllib.request.urlopen(f"{site.base}/-/provenance/{digest}.json") as reply:
            served = json.loads(reply.read())
        command = CliRunner().invoke(
            app, ["provenance", digest, "--db", str(site.built.db), "--json"]
        )
        assert served == json.loads(command.stdout), site.backend
