"""Shared fixtures: the reference corpus, fresh ledgers, and a CLI runner."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"
VECTORS = Path(__file__).resolve().parent / "vectors"

os.environ.setdefault("PROVLEDGER_NO_PROGRESS", "1")


@pytest.fixture
def corpus() -> Path:
    """The upstream IDKMesh reference corpus, or skip with the reason."""
    if not CORPUS.is_dir():
        pytest.skip(f"reference corpus absent: {CORPUS} (it lives in ../shared, outside the repo)")
    return CORPUS


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


@pytest.fixture
def ledger_path(tmp_path: Path, runner: CliRunner) -> Iterator[Path]:
    """A freshly initialised ledger file (keys next to it)."""
    from ledger.cli import app

    db = tmp_path / "ledger.db"
    result = runner.invoke(app, ["init", "--db", str(db)])
    assert result.exit_code == 0, result.output
    yield db


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[Any]:
    """A throwaway PostgreSQL cluster for the session (skips, or fails under CI=true)."""
    from pg_cluster import remove, start_cluster

    cluster = start_cluster()
    yield cluster
    remove(cluster)


@pytest.fixture
def pg_url(pg_cluster: Any) -> str:
    """The URL of a new, empty database in the session cluster."""
    url: str = pg_cluster.createdb()
    return url
