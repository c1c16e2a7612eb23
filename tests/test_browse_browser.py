"""`provledger serve` in a real browser: headless Debian Chromium driven by selenium.

The installed ``.venv/bin/provledger serve`` runs on a free loopback port over the browse
database of the corpus + demo ledger. Chromium opens the pages an auditor needs (cohort
list, the burned cohort, its excluded outcomes, a result's object page, full-text search
for a task title); the test asserts on the rendered text and saves a screenshot of each
page into its tmp dir. Nothing downloads a browser: the Debian ``chromium`` and
``chromium-driver`` packages are required (CI installs them).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from browse_ledger import BURNED, BuiltLedger, build

pytest.importorskip("datasette", reason="install the test extra: pip install -e '.[test]'")
webdriver = pytest.importorskip("selenium.webdriver")

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def server(built: BuiltLedger) -> Iterator[str]:
    exe = ROOT / ".venv" / "bin" / "provledger"
    assert exe.exists(), "the package must be installed in .venv (pip install -e '.[test]')"
    port = _free_port()
    proc = subprocess.Popen(
        [
            str(exe),
            "serve",
            "--db",
            str(built.db),
            "--browse",
            str(built.browse),
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        # Bounded readiness poll (not a timed assertion): up to 300 tries.
        for _ in range(300):
            if proc.poll() is not None:
                _, err = proc.communicate()
                pytest.fail(f"provledger serve exited {proc.returncode}: {err.decode()}")
            try:
                with urllib.request.urlopen(base + "/-/versions.json") as reply:
                    if reply.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.1)
        else:
            pytest.fail("provledger serve never answered")
        yield base
    finally:
        proc.terminate()
        proc.wait()


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
