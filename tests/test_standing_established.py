"""A record counts from where it is established, never back in time.

``cohort freeze`` of bytes already stored as unattested history (``import idkmesh
--unsigned``) appends only the authority's attestation. The history copy then counts
from that attestation's seq, after the scaffold written in between, so the lifecycle
that counts reads scaffold -> frozen; before, it counted from its own seq and the
lifecycle read frozen -> scaffold (found by ``test_admission_lifecycle``). Admission,
``verify``'s replay, ``cohort list`` and ``cohort audit`` all read the one computation
(``ledger.trust.standing``). A hostile writer who stores an authority attestation past
admission that would establish an illegal successor gives it no standing, and
``verify`` names the attestation.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostile_writer import sqlite_insert
from typer.testing import CliRunner

from cohorts.definition import definition_digests
from ledger.cli import app
from ledger.store.prepared import prepare_value
from ledger.store.sqlite import open_store
from ledger.trust.admission import AdmissionRefused
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer
from ledger.trust.standing import Standing

TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
V1 = "example/toy-v1"


def _v1(stage: str, **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / "cohort-v1.json").read_text())
    value.update(stage=stage, **changes)
    return value


def _run(runner: CliRunner, db: Path, *args: str, code: int = 0) -> str:
    result = runner.invoke(app, [*args, "--db", str(db)])
    assert result.exit_code == code, (args, result.exit_code, result.output)
    return result.stdout


def _json(runner: CliRunner, db: Path, *args: str, code: int = 0) -> Any:
    return json.loads(_run(runner, db, *args, "--json", code=code))


def _history_then_scaffold(
    runner: CliRunner, db: Path, tmp_path: Path, frozen: dict[str, Any]
) -> None:
    files = sorted((TOY / "work-units").glob("*.json")) + sorted(
        (TOY / "evaluators").glob("*.json")
    )
    _run(runner, db, "append", *map(str, files))
    folder = tmp_path / "upstream"
    folder.mkdir()
    (folder / "cohort.json").write_text(json.dumps(frozen))
    _run(runner, db, "import", "idkmesh", str(folder), "--unsigned")
    scaffold = tmp_path / "scaffold.json"
    scaffold.write_text(json.dumps(_v1("scaffold")))
    _run(runner, db, "append", str(scaffold))


def _authority(db: Path) -> Ed25519Signer:
    return Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))


def _history_then_another_freeze(
    runner: CliRunner, db: Path, tmp_path: Path
) -> tuple[dict[str, Any], dict[str, Any]]:
    """History A (frozen, unattested), a scaffold, then the authority freezes definition
    B: (A, B)."""
    history = _v1("frozen")
    _history_then_scaffold(runner, db, tmp_path, history)
    other = _v1("frozen", title="another definition")
    other["definition_digest"] = definition_digests(other).legacy
    path_b = tmp_path / "b.json"
    path_b.write_text(json.dumps(other))
    _run(runner, db, "cohort", "freeze", str(path_b))
    return history, other


def _positions(db: Path) -> list[tuple[str, int, int | None]]:
    """(stage, seq, since) of every stored document of the cohort, in seq order."""
    with open_store(db) as store:
        standing = Standing(store)
        return [
            (o.json()["stage"], o.seq, standing.since(o))
            for o in store.by_id(V1, kind="benchmark-cohort")
        ]


def test_freeze_of_history_bytes_counts_from_the_attestation(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    frozen = _v1("frozen")
    _history_then_scaffold(runner, ledger_path, tmp_path, frozen)
    assert [row["stage"] for row in _json(runner, ledger_path, "cohort", "list")] == ["scaffold"]
    path = tmp_path / "v1.json"
    path.write_text(json.dumps(frozen))
    _run(runner, ledger_path, "cohort", "freeze", str(path))
    (stage_h, seq_h, since_h), (stage_s, seq_s, since_s) = _positions(ledger_path)
    assert (stage_h, stage_s) == ("frozen", "scaffold")
    assert seq_h < seq_s  # stored first ...
    assert since_s == seq_s and since_h is not None and since_h > seq_s  # ... counts last
    with open_store(ledger_path) as store:
        attestation = store.get_by_seq(since_h)
        assert attestation is not None and attestation.kind == "attestation"
        # Before the attestation the scaffold is the newest that counts; from it, frozen.
        standing = Standing(store)
        history = store.get_by_seq(seq_h)
        assert history is not None
        assert not standing.has_standing(history, since_h)
        assert standing.has_standing(history, since_h + 1)
    [row] = _json(runner, ledger_path, "cohort", "list")
    assert (row["stage"], row["standing"]) == ("frozen", "counts")
    installed = subprocess.run(
        [
            str(Path(sys.executable).parent / "provledger"),
            "cohort",
            "list",
            "--json",
            "--db",
            str(ledger_path),
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [r["stage"] for r in json.loads(installed.stdout)] == ["frozen"]
    audit = _json(runner, ledger_path, "cohort", "audit", V1)
    assert (audit["stage"], audit["standing"]) == ("frozen", "counts")
    report = _json(runner, ledger_path, "verify")
    assert report["ok"] is True, report["findings"]
    # The browse projection: the frozen object counts from the attestation, and is latest.
    browse = tmp_path / "browse.db"
    _run(runner, ledger_path, "index", "--out", str(browse))
    with sqlite3.connect(browse) as conn:
        rows = conn.execute(
            "SELECT stage, seq, counts_from FROM cohorts WHERE cohort_id = ? ORDER BY seq", (V1,)
        ).fetchall()
        assert rows == [("frozen", seq_h, since_h), ("scaffold", seq_s, seq_s)]
        latest = conn.execute("SELECT stage FROM latest_cohorts WHERE cohort_id = ?", (V1,))
        assert latest.fetchall() == [("frozen",)]
    # The lifecycle goes on from frozen: a burn is its legal successor.
    _run(runner, ledger_path, "cohort", "burn", V1, "--reason", "seen")
    assert _json(runner, ledger_path, "cohort", "audit", V1)["stage"] == "burned"
    assert _json(runner, ledger_path, "verify")["ok"] is True


def test_freeze_of_history_bytes_after_another_definition_is_refused(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    """History A frozen; the authority freezes definition B; freezing A's bytes now would
    establish A after B (a frozen definition changing): refused, nothing written."""
    history, other = _history_then_another_freeze(runner, ledger_path, tmp_path)
    path_a = tmp_path / "a.json"
    path_a.write_text(json.dumps(history))
    _run(runner, ledger_path, "cohort", "freeze", str(path_a), code=4)
    # Any write path: the attestation alone (the bytes are stored) is judged the same.
    authority = _authority(ledger_path)
    signed = [prepare_value(history), attest_prepared(prepare_value(history), authority)]
    with open_store(ledger_path) as store:
        size = store.size()
        with pytest.raises(AdmissionRefused, match="legal successor"):
            store.append_many(signed)
        assert store.size() == size
    [row] = _json(runner, ledger_path, "cohort", "list")
    assert row["record_digest"] == prepare_value(other).digest
    assert _json(runner, ledger_path, "verify")["ok"] is True


def test_hostile_attestation_establishing_an_illegal_successor_has_no_standing(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    """The same attestation written past admission (raw SQL; the authority's signature
    obtained elsewhere): the history copy never counts, the cohort stays at B, and
    ``verify`` names the attestation and the rule."""
    history, other = _history_then_another_freeze(runner, ledger_path, tmp_path)
    authority = _authority(ledger_path)
    attestation = attest_prepared(prepare_value(history), authority)
    (seq,) = sqlite_insert(ledger_path, [attestation])
    [row] = _json(runner, ledger_path, "cohort", "list")
    assert (row["record_digest"], row["standing"]) == (prepare_value(other).digest, "counts")
    audit = _json(runner, ledger_path, "cohort", "audit", V1)
    assert (audit["stage"], audit["standing"]) == ("frozen", "counts")
    browse = tmp_path / "browse.db"
    _run(runner, ledger_path, "index", "--out", str(browse))
    with sqlite3.connect(browse) as conn:
        latest = conn.execute("SELECT digest FROM latest_cohorts WHERE cohort_id = ?", (V1,))
        assert latest.fetchall() == [(prepare_value(other).digest,)]
        [(text,)] = conn.execute(
            "SELECT standing FROM cohorts WHERE digest = ?", (prepare_value(history).digest,)
        )
        assert text == "refused by admission: cohort-lifecycle"
    report = _json(runner, ledger_path, "verify", code=1)
    codes = {(f["seq"], f["code"]) for f in report["findings"]}
    assert (seq, "cohort-lifecycle") in codes, report["findings"]
