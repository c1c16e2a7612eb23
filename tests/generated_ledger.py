"""Shared test helper: a ledger holding the benchmark's generated corpus, through the CLI."""

from __future__ import annotations

from pathlib import Path

from bench_corpus import write_corpus
from typer.testing import CliRunner

from ledger.cli import app


def generated_ledger(work: Path, n: int, seed: int, url: str | None = None) -> Path | str:
    """``provledger init`` a ledger (``work/ledger.db``, or the postgresql:// ``url``),
    then ``import jsonl`` of ``n`` objects of the benchmark corpus
    (``scripts/bench_corpus.py``, seed ``seed``); the ledger's location."""
    db: Path | str = url if url is not None else work / "ledger.db"
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
    write_corpus(work / "corpus.jsonl", n, seed)
    done = runner.invoke(app, ["import", "jsonl", str(work / "corpus.jsonl"), "--db", str(db)])
    assert done.exit_code == 0, done.output
    return db
