"""The digests the README tour and the ``--help`` examples name exist, and those commands run.

A ledger holds the IDKMesh reference corpus (``import idkmesh``) and the demo
(``browse_ledger``: the demo of scripts/demo.sh, a toy lineage, calibration records). Every
``sha256:`` prefix in ``ledger.cli.examples`` and in the README's tour must name exactly
one object of it, and every example and tour line that names one runs there with exit 0
(in a copy, from a folder holding ``verifier.key``, a key registered for the corpus's
verifier, and the ledger's key files, as after the demo).
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from browse_ledger import BuiltLedger, corpus_ledger
from typer.testing import CliRunner

from ledger.cli import app
from ledger.cli.examples import EXAMPLES
from ledger.store.resolve import resolve
from ledger.store.sqlite import open_store

ROOT = Path(__file__).resolve().parents[1]
DIGEST = re.compile(r"sha256:[0-9a-f]+")


def tour_lines() -> list[str]:
    """The commands of the README's "A short tour" code block."""
    text = (ROOT / "README.md").read_text("utf-8")
    block = text.split("## A short tour", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.startswith("provledger ")]


#: Examples whose other inputs are not in the corpus or the demo: their digests are still
#: checked to exist, they are not run.
NOT_RUN = {
    "--help of behavioral run": "needs the candidate's source tree, patch and probe plan",
}


#: Exit codes other than 0 that the command documents for what it finds on this ledger:
#: every VerificationResult of the corpus has artifacts upstream never published, so its
#: chain fails a link (reported, exit 1), which is what `provenance` is for.
EXIT = {"provenance": 1}


def _naming_digests() -> list[tuple[str, str]]:
    """(where, command) of every example and tour line that names a digest, in order;
    ``bundle verify`` follows the export that writes its bundle."""
    found = [(f"--help of {path}", text) for path, text in EXAMPLES.items()]
    found += [("README tour", line) for line in tour_lines()]
    return [(w, c) for w, c in found if DIGEST.search(c) or "result.bundle.json" in c]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> BuiltLedger:
    return corpus_ledger(tmp_path_factory, "examples")


def test_there_are_examples_naming_digests() -> None:
    wheres = {w for w, _ in _naming_digests()}
    assert "README tour" in wheres and len(wheres) >= 8


def test_every_digest_named_exists_once(built: BuiltLedger) -> None:
    with open_store(built.db, readonly=True) as store:
        for where, command in _naming_digests():
            for prefix in DIGEST.findall(command):
                assert resolve(store, prefix).digest.startswith(prefix), (where, command)


def test_every_command_naming_a_digest_runs(
    built: BuiltLedger, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ledger.db", "ledger.db-wal", "ledger.db.log.key", "ledger.db.log.key.pub"):
        if (built.db.parent / name).exists():
            shutil.copy(built.db.parent / name, tmp_path / name)
    # The calibration verifier's key: registered for the corpus results' adapter versions.
    shutil.copy(built.db.parent / "calibration.key", tmp_path / "verifier.key")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PROVLEDGER_DB", str(tmp_path / "ledger.db"))
    runner = CliRunner()
    ran = 0
    for where, command in _naming_digests():
        if where in NOT_RUN:
            continue
        argv = shlex.split(command.split("#", 1)[0])
        assert argv[0] == "provledger"
        result = runner.invoke(app, argv[1:])
        assert result.exit_code == EXIT.get(argv[1], 0), (where, command, result.output)
        assert "error:" not in result.stderr, (where, command, result.stderr)
        ran += 1
    assert ran >= 10
