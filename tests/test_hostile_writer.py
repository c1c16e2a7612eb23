"""A hostile writer with write access but no keys cannot undo a burn, and verify says so.

Each attack writes rows past admission, as a file editor with write access to the
SQLite file would (``hostile_writer.sqlite_insert``: plain ``sqlite3``, the rows the
store itself would write, tree and totals kept consistent, no batch record), or reaches
a ledger through ``provledger copy`` of such a file. For each: what admission refuses
has no standing anywhere (``cohort audit``, ``cohort list``, the gates of ``cohort
freeze|burn``) before anyone runs ``verify``, and ``verify`` replays admission and names
the entry, the rule and the remedy (exit 1). The same attacks by a PostgreSQL writer
login are in ``tests/test_pg_hostile_writer.py``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hostile_writer import sqlite_insert
from typer.testing import CliRunner, Result

from cohorts.definition import definition_digests
from ledger.cli import app
from ledger.store.prepared import prepare_value
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer

TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
V1 = "example/toy-v1"


class Led:
    def __init__(self, runner: CliRunner, db: Path) -> None:
        self.runner, self.db = runner, db

    def run(self, *args: str, code: int = 0) -> Result:
        result = self.runner.invoke(app, [*args, "--db", str(self.db)])
        assert result.exit_code == code, (args, result.exit_code, result.output)
        return result

    def json(self, *args: str, code: int = 0) -> Any:
        return json.loads(self.run(*args, "--json", code=code).stdout)

    def authority(self) -> Ed25519Signer:
        return Ed25519Signer.from_file(self.db.with_name(self.db.name + ".authority.key"))


def _v1(stage: str, **changes: Any) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / "cohort-v1.json").read_text())
    value.update(stage=stage, **changes)
    return value


@pytest.fixture
def burned(ledger_path: Path, runner: CliRunner, tmp_path: Path) -> Led:
    """The toy lineage's first cohort frozen and burned by the authority, through the CLI."""
    led = Led(runner, ledger_path)
    files = sorted((TOY / "work-units").glob("*.json")) + sorted(
        (TOY / "evaluators").glob("*.json")
    )
    led.run("append", *map(str, files))
    frozen = tmp_path / "v1.json"
    frozen.write_text(json.dumps(_v1("frozen")))
    led.run("cohort", "freeze", str(frozen))
    led.run("cohort", "burn", V1, "--reason", "seen")
    assert led.json("verify")["ok"] is True
    return led


def _stage(led: Led) -> str:
    stage: str = led.json("cohort", "audit", V1)["stage"]
    return stage


def _findings(led: Led) -> list[dict[str, Any]]:
    report = led.json("verify", code=1)
    assert report["ok"] is False
    findings: list[dict[str, Any]] = report["findings"]
    return findings


def test_walk_back_written_with_sqlite3_has_no_standing_and_verify_flags_it(
    burned: Led, tmp_path: Path
) -> None:
    (seq,) = sqlite_insert(burned.db, [prepare_value(_v1("collecting"))])
    # No standing anywhere, before anyone runs verify.
    assert _stage(burned) == "burned"
    audit = burned.json("cohort", "audit", V1)
    assert any(f["code"] == "cohort.refused" for f in audit["findings"])
    [row] = [r for r in burned.json("cohort", "list") if r["id"] == V1]
    assert (row["stage"], row["standing"]) == ("burned", "counts")
    # The authority's freeze of another definition under the burned id stays refused.
    other = tmp_path / "other.json"
    value = _v1("frozen", title="another definition")
    value["definition_digest"] = definition_digests(value).legacy
    other.write_text(json.dumps(value))
    out = burned.run("cohort", "freeze", str(other), code=4).stderr
    assert "not a legal successor" in out
    # verify replays admission: the entry, the rule and the remedy.
    [finding] = _findings(burned)
    assert (finding["seq"], finding["code"]) == (seq, "cohort-lifecycle")
    assert "burned -> collecting" in finding["message"] and finding["remedy"]
    text = burned.run("verify", code=1).stdout
    assert f"FAIL cohort-lifecycle seq {seq}" in text and "(use: a new cohort id" in text
    # The installed command, in its own process, says the same.
    import subprocess
    import sys

    exe = Path(sys.executable).parent / "provledger"
    proc = subprocess.run(
        [str(exe), "verify", "--db", str(burned.db)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and f"FAIL cohort-lifecycle seq {seq}" in proc.stdout


def test_governed_record_written_with_sqlite3_never_counts(burned: Led) -> None:
    # A second burn notice and a re-frozen definition, unsigned: governed, no attestation.
    notice = json.loads((TOY / "burn-notice.json").read_text())
    notice["reason"] = "a different story"
    refrozen = _v1("burned", title="edited after the burn")
    refrozen["definition_digest"] = definition_digests(refrozen).legacy
    seqs = sqlite_insert(burned.db, [prepare_value(notice), prepare_value(refrozen)])
    audit = burned.json("cohort", "audit", V1)
    assert audit["stage"] == "burned" and len(audit["relations"]["burn_notices"]) == 1
    found = {(f["seq"], f["code"]) for f in _findings(burned)}
    assert (seqs[0], "authority-governed") in found and (seqs[1], "authority-governed") in found
    assert (seqs[1], "cohort-lifecycle") in found  # and no legal successor either


def test_later_unsigned_manifest_does_not_invalidate_an_earlier_attestation(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    """A keyless writer appends, after a verifier attested a result, a ResultManifest
    with the same id naming the verifier as its worker: the attestation stays valid."""
    import random

    import bench_corpus

    led = Led(runner, ledger_path)
    rng = random.Random(3)
    wu = bench_corpus.work_unit(rng, 1, "late", "b" * 40)
    rm = bench_corpus.result_manifest(rng, wu, bench_corpus._digest(wu), 1, 1.79e9)
    vr = bench_corpus.verification_result(
        rng, wu, bench_corpus._digest(wu), rm, "sha256:" + "e" * 64, "sha256:" + "f" * 64, 1.79e9
    )
    vr["provenance"]["result_manifest_digest"] = "sha256:" + "e" * 64  # not stored: by id
    key = tmp_path / "verifier.key"
    runner.invoke(app, ["key", "generate", str(key)])
    led.run(
        "identity", "register", "--verifier-id", "idkmesh-local-verifier",
        "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.3.0",
        "--public-key", f"{key}.pub",
    )  # fmt: skip
    for value in (wu, rm, vr):
        path = tmp_path / "doc.json"
        path.write_text(json.dumps(value))
        led.run("append", str(path))
    subject = prepare_value(vr).digest
    led.run("sign", subject, "--key", str(key))
    assert led.json("attestation", "check", subject)["ok"] is True
    # The late manifest: same id, its worker is the verifier. Appended without keys.
    late = copy.deepcopy(rm)
    late["worker"]["id"] = "idkmesh-local-verifier"
    late["self_report"]["summary"] = "appended after the attestation"
    path = tmp_path / "late.json"
    path.write_text(json.dumps(late))
    led.run("append", str(path))
    assert led.json("attestation", "check", subject)["ok"] is True
    assert led.json("verify")["ok"] is True


def test_copy_of_a_tampered_file_carries_no_standing_and_verify_flags_it(
    burned: Led, tmp_path: Path
) -> None:
    (seq,) = sqlite_insert(burned.db, [prepare_value(_v1("collecting"))])
    dst = tmp_path / "copy.db"
    copied = burned.runner.invoke(app, ["copy", str(burned.db), str(dst), "--json"])
    assert copied.exit_code == 0, copied.output
    led = Led(burned.runner, dst)
    assert _stage(led) == "burned"
    [finding] = _findings(led)
    assert (finding["seq"], finding["code"]) == (seq, "cohort-lifecycle")


def test_forged_authority_attestation_written_with_sqlite3_is_flagged(burned: Led) -> None:
    # The walk-back with an attestation by a key the writer made: no standing either.
    back = prepare_value(_v1("collecting"))
    forged = attest_prepared(back, Ed25519Signer(Ed25519PrivateKey.generate()))
    seqs = sqlite_insert(burned.db, [back, forged])
    assert _stage(burned) == "burned"
    found = {(f["seq"], f["code"]) for f in _findings(burned)}
    assert {(seqs[0], "cohort-lifecycle"), (seqs[1], "unregistered-key")} <= found


def test_browse_database_counts_only_what_has_standing(burned: Led, tmp_path: Path) -> None:
    import sqlite3

    (seq,) = sqlite_insert(burned.db, [prepare_value(_v1("collecting"))])
    # Unsigned history of another cohort: burned upstream, its notice never signed.
    notice = json.loads((TOY / "burn-notice.json").read_text())
    notice["cohort_id"] = "example/history-only"
    history = _v1("burned", id="example/history-only")
    history["definition_digest"] = definition_digests(history).legacy
    from ledger.store.backends import open_store

    with open_store(burned.db) as store:
        store.append_many([prepare_value(history), prepare_value(notice)], history=True)
    out = tmp_path / "browse.db"
    burned.run("index", "--out", str(out))
    conn = sqlite3.connect(out)
    rows = dict(conn.execute("SELECT seq, standing FROM cohorts"))
    assert rows[seq] == "refused by admission: cohort-lifecycle"
    latest = dict(conn.execute("SELECT cohort_id, stage FROM latest_cohorts"))
    assert latest[V1] == "burned" and "example/history-only" not in latest
    notices = dict(conn.execute("SELECT cohort_id, standing FROM burn_notices"))
    assert notices == {V1: "counts", "example/history-only": "unattested history"}
    burned_at = dict(
        conn.execute("SELECT cohort_id, burn_notice_digest FROM cohorts WHERE stage = 'burned'")
    )
    assert burned_at["example/history-only"] is None  # never shown as authority-issued
    assert burned_at[V1] is not None
    from cohorts.browse.queries import CANNED_QUERIES

    burns = CANNED_QUERIES["burned_cohorts"]["sql"]
    standing = {row[0]: row[2] for row in conn.execute(burns)}
    assert standing == {V1: "counts", "example/history-only": "unattested history"}
    timeline = CANNED_QUERIES["cohort_timeline"]["sql"]
    events = [row[2] for row in conn.execute(timeline, {"cohort": V1})]
    assert "record, stage collecting (refused by admission: cohort-lifecycle)" in events


def test_legacy_digest_alias_never_hides_the_upstream_document(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    """A manifest first appended with ``0`` for upstream's ``0.0`` (same canonical bytes,
    another upstream digest) does not hide the real upstream file: appending the file
    logs an alias, and its upstream digest finds it, in its own spelling."""
    import random

    import bench_corpus

    from ledger.encoding.digest import legacy_digest

    led = Led(runner, ledger_path)
    rng = random.Random(5)
    wu = bench_corpus.work_unit(rng, 1, "alias", "c" * 40)
    rm = bench_corpus.result_manifest(rng, wu, bench_corpus._digest(wu), 1, 1.79e9)
    assert rm["resources"]["compute_units"] == 0.0  # upstream writes the double
    ints = copy.deepcopy(rm)
    ints["resources"]["compute_units"] = ints["resources"]["human_minutes"] = 0
    upstream, squatted = legacy_digest(rm), legacy_digest(ints)
    assert upstream != squatted and prepare_value(rm).digest == prepare_value(ints).digest
    for name, value in (("ints.json", ints), ("upstream.json", rm)):
        (tmp_path / name).write_text(json.dumps(value))
    led.run("append", str(tmp_path / "ints.json"))
    rows = led.json("append", str(tmp_path / "upstream.json"))
    assert rows[0]["status"] == "present"
    assert [e["kind"] for e in led.json("log")][-1] == "legacy-alias"
    # Both upstream digests find the one stored object.
    for digest in (upstream, squatted):
        assert led.json("show", digest)["digest"] == prepare_value(rm).digest
    # The audit's view: the document the record names, in the spelling it names.
    from cohorts.store_lookup import StoreLookup
    from ledger.store.backends import open_store

    with open_store(ledger_path, readonly=True) as store:
        doc = StoreLookup(store).by_digest(upstream)
        assert doc is not None and doc.legacy_digest == upstream
        assert doc.value["resources"]["compute_units"] == 0.0
    assert led.json("verify")["ok"] is True
    # An alias written by hand that does not hold is never followed, and verify says so.
    from ledger.store.aliases import alias_record

    with open_store(ledger_path, readonly=True) as store:
        stored = store.get(prepare_value(rm).digest)
        assert stored is not None
        bogus = alias_record(stored, "sha256:" + "9" * 64, None)
    (seq,) = sqlite_insert(ledger_path, [bogus])
    led.run("show", "sha256:" + "9" * 64, code=3)
    [finding] = _findings(led)
    assert (finding["seq"], finding["code"]) == (seq, "alias-invalid")


def test_incremental_verify_replays_new_entries_against_the_state_before_them(
    burned: Led, tmp_path: Path
) -> None:
    """``verify --since-checkpoint`` judges only what came after the checkpoint, but
    against everything before it: the walk-back is refused by the burn it never saw."""
    checkpoint = burned.run("checkpoint").stdout
    note = tmp_path / "seen.checkpoint"
    note.write_text(checkpoint)
    honest = _v1("scaffold", id="example/another")
    (tmp_path / "another.json").write_text(json.dumps(honest))
    burned.run("append", str(tmp_path / "another.json"))  # logs the checkpoint's record
    (seq,) = sqlite_insert(burned.db, [prepare_value(_v1("collecting"))])
    report = burned.json("verify", "--since-checkpoint", str(note), code=1)
    assert report["since_checkpoint"] is not None
    [finding] = report["findings"]
    assert (finding["seq"], finding["code"]) == (seq, "cohort-lifecycle")


def test_unsigned_history_is_never_the_authority_and_never_blocks_it(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    """Upstream history imported ``--unsigned`` (a burned cohort under the toy's id, with
    another definition and its burn notice) is shown as unattested history in the
    terminal and on the web, never as burned by the authority, and does not stop the
    authority freezing and burning the real cohort."""
    led = Led(runner, ledger_path)
    files = sorted((TOY / "work-units").glob("*.json")) + sorted(
        (TOY / "evaluators").glob("*.json")
    )
    led.run("append", *map(str, files))
    history = _v1("burned", title="upstream's own definition")
    history["definition_digest"] = definition_digests(history).legacy
    folder = tmp_path / "upstream"
    folder.mkdir()
    (folder / "cohort.json").write_text(json.dumps(history))
    (folder / "BURN_NOTICE.md").write_text("# Burn notice\n\nBurned upstream.\n")
    led.run("import", "idkmesh", str(folder), "--unsigned")
    # The terminal: the stage line says whose word it is not.
    text = led.run("cohort", "audit", V1).stdout
    assert "stage burned (unattested history: does not count, never the authority's)" in text
    assert led.json("cohort", "audit", V1)["standing"] == "unattested history"
    # The web: the home page does not count it as burned, both pages say why.
    pytest.importorskip("datasette")
    import asyncio
    import html
    import re

    from cohorts.browse.web import make_app

    browse = tmp_path / "browse.db"
    led.run("index", "--out", str(browse))
    app_ = make_app(browse, ledger=ledger_path)
    asyncio.run(app_.invoke_startup())

    def page(path: str) -> str:
        reply = asyncio.run(app_.client.get(path))
        assert reply.status_code == 200, path
        return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", reply.text)))

    home = page("/")
    assert "unattested history: does not count, never the authority's" in home
    assert "Cohorts (1)" in home and "1 burned" not in home
    cohort = page("/-/cohort/example%2Ftoy-v1")
    assert "Stage burned (unattested history: does not count" in cohort
    # The authority freezes and burns the real cohort regardless.
    frozen = tmp_path / "v1.json"
    frozen.write_text(json.dumps(_v1("frozen")))
    led.run("cohort", "freeze", str(frozen))
    led.run("cohort", "burn", V1, "--reason", "seen")
    audit = led.json("cohort", "audit", V1)
    assert (audit["stage"], audit["standing"]) == ("burned", "counts")
    assert audit["burn"]["reason"] == "seen"
    assert led.json("verify")["ok"] is True


def test_squatted_upstream_spelling_adds_no_finding_to_the_successor_audit(
    runner: CliRunner, tmp_path: Path
) -> None:
    """The real successor-five cohort: its first result, appended first with ``0`` for
    upstream's ``0.0`` (same canonical bytes, another upstream digest), then the
    cohort's folder imported: the audit is the one of a ledger that never saw the
    squatted spelling: the same findings (before aliases it gained a false one, as the
    real result was unreachable by its upstream digest)."""
    import re

    corpus = Path(__file__).resolve().parents[2] / "shared" / "reference" / "idkmesh"
    folder = corpus / "benchmarks" / "phase-b2-successor-five"
    if not folder.is_dir():
        pytest.skip(f"reference corpus absent: {folder} (see docs/COHORTS.md)")
    attempt = folder / "evidence" / "task-001" / "attempt-001"
    squatted = []
    for name in ("result-manifest.json", "verification-result.json"):
        text = re.sub(r": (\d+)\.0([,\s}])", r": \1\2", (attempt / name).read_text())
        assert text != (attempt / name).read_text()
        squatted.append(tmp_path / f"squatted-{name}")
        squatted[-1].write_text(text)
    audits = []
    for name, first in (("clean.db", []), ("squatted.db", squatted)):
        led = Led(runner, tmp_path / name)
        led.run("init")
        if first:
            led.run("append", *map(str, first))
        led.run("import", "idkmesh", str(folder))
        audit = led.json("cohort", "audit", "benchmark/phase-b2-successor-five", code=1)
        found = sorted((f["code"], f["task"] or "", f["attempt"] or "") for f in audit["findings"])
        audits.append((audit["counts"], found))
        assert led.json("verify")["ok"] is True
    assert audits[0] == audits[1]
    upstream = json.loads((attempt / "verification-result.json").read_text())
    from ledger.encoding.digest import legacy_digest

    # Its upstream digest finds it, in its upstream spelling, for show and provenance.
    shown = led.json("show", legacy_digest(upstream))
    assert shown["legacy_digest"] == legacy_digest(upstream)
    report = led.json("provenance", legacy_digest(upstream), code=1)  # upstream's own faults
    assert report["digest"] == shown["digest"]


def test_batch_records_written_by_hand_excuse_nothing(burned: Led) -> None:
    """The same-batch rule is replayed from the batch records in the log: a record written
    by hand that calls a binding's batch upstream history (bindings never are), or that
    overlaps the batch before it, is a finding, and the binding has no standing."""
    from ledger.log.batch_record import batch_record
    from ledger.store.backends import open_store

    binding = prepare_value(json.loads((TOY / "cohort-binding.json").read_text()))
    with open_store(burned.db, readonly=True) as store:
        first = store.size()
    seqs = sqlite_insert(burned.db, [binding, batch_record(first, history=True)])
    (overlap,) = sqlite_insert(burned.db, [batch_record(0, history=False)])
    found = {(f["seq"], f["code"]) for f in _findings(burned)}
    assert (seqs[0], "authority-governed") in found
    assert (overlap, "batch-record-invalid") in found
    audit = burned.json("cohort", "audit", V1)
    assert audit["relations"]["bindings"] == []
