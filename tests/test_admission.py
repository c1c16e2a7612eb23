"""Admission: every attack of the authority issue, refused on every write path.

Each refusal is checked the same way: exit code 4, exactly one ``error: ...`` line on
stderr naming what is missing, and the ledger unchanged (entry count and latest root
before and after, ``ledger_state.state``). The upstream cohort under attack is the
burned ``benchmark/phase-b2-first-five`` of the reference corpus, imported signed.
"""

from __future__ import annotations

import base64
import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from ledger_state import append_unchecked, state
from typer.testing import CliRunner, Result

from cohorts.definition import definition_digests
from ledger.cli import app
from ledger.store.prepared import prepare_value
from ledger.store.sqlite import open_store
from ledger.trust.attestation import attest_prepared
from ledger.trust.keys import Ed25519Signer

FIRST_FIVE = "benchmark/phase-b2-first-five"
FIRST_FIVE_FILE = "benchmarks/phase-b2-first-five/cohort.json"
SMOKE_VR = "examples/results/phase0-smoke.verification-result.json"
SMOKE_RM = "examples/results/phase0-smoke.result-manifest.json"


class Led:
    """A ledger driven through the CLI; ``refused`` is the one refusal check."""

    def __init__(self, runner: CliRunner, db: Path) -> None:
        self.runner, self.db, self.dir = runner, db, db.parent

    def run(self, *args: str, code: int = 0) -> Result:
        db = [] if args[:2] == ("key", "generate") else ["--db", str(self.db)]
        result = self.runner.invoke(app, [*args, *db])
        assert result.exit_code == code, (args, result.exit_code, result.output)
        return result

    def refused(self, *args: str, says: tuple[str, ...] = ()) -> str:
        before = state(self.db)
        result = self.run(*args, code=4)
        err = result.stderr
        assert err.startswith("error: ") and err.count("\n") == 1, err
        for text in says:
            assert text in err, (text, err)
        assert state(self.db) == before
        return err

    def write(self, value: Any, name: str) -> str:
        path = self.dir / name
        path.write_text(json.dumps(value))
        return str(path)

    @property
    def authority_key(self) -> Path:
        return self.db.with_name(self.db.name + ".authority.key")

    def authority(self) -> Ed25519Signer:
        return Ed25519Signer.from_file(self.authority_key)


@pytest.fixture
def led(ledger_path: Path, runner: CliRunner) -> Led:
    return Led(runner, ledger_path)


@pytest.fixture
def upstream(led: Led, corpus: Path) -> Led:
    """The corpus imported with the authority key (first-five burned, notice attested)."""
    led.run("import", "idkmesh", str(corpus))
    audit = json.loads(led.run("cohort", "audit", FIRST_FIVE, "--json").stdout)
    assert audit["stage"] == "burned" and audit["ok"] is True
    return led


def _first_five(corpus: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((corpus / FIRST_FIVE_FILE).read_text())
    return value


def _attestation_file(led: Led, value: dict[str, Any], name: str, signer: Any = None) -> str:
    """A detached authority attestation (the ``attestation`` object) over ``value``."""
    att = attest_prepared(prepare_value(value), signer or led.authority())
    return led.write(json.loads(att.data), name)


# --- hand-written governed records ----------------------------------------------------


def _fake_binding(corpus: Path) -> dict[str, Any]:
    digests = definition_digests(_first_five(corpus)).to_json()
    return {
        "provledger_kind": "cohort-binding",
        "schema_version": "0.1",
        "successor_id": "made/up-successor",
        "successor_definition_digest": digests,
        "predecessor_id": FIRST_FIVE,
        "predecessor_definition_digest": digests,
        "burn_notice_digest": "sha256:" + "1" * 64,
        "carried_over": [],
        "gate": [{"code": "gate.predecessor.stage"}],
    }


def test_hand_written_binding_refused_on_every_path(upstream: Led, corpus: Path) -> None:
    led = upstream
    binding = _fake_binding(corpus)
    path = led.write(binding, "binding.json")
    says = ("cohort-binding", "authority-governed", "provledger cohort bind")
    led.refused("append", path, says=says)
    jsonl = led.dir / "binding.jsonl"
    jsonl.write_text(json.dumps(binding) + "\n")
    led.refused("import", "jsonl", str(jsonl), says=says)
    # With a signature by a key that is not the authority: still refused.
    stranger = led.dir / "stranger.key"
    led.run("key", "generate", str(stranger))
    forged = _attestation_file(led, binding, "att.json", Ed25519Signer.from_file(stranger))
    led.refused("append", path, forged, says=("cohort-binding", "got an attestation by key"))
    # A folder holding it: never imported from there, whatever the mode.
    folder = led.dir / "tree" / "benchmarks" / "x"
    folder.mkdir(parents=True)
    (folder / "binding.json").write_text(json.dumps(binding))
    for extra in ((), ("--unsigned",)):
        before = state(led.db)
        out = led.run("import", "idkmesh", str(led.dir / "tree"), *extra, code=3).stdout
        assert "cohort-binding is not upstream history" in out
        assert state(led.db) == before
    audit = json.loads(led.run("cohort", "audit", FIRST_FIVE, "--json").stdout)
    assert audit["relations"]["bindings"] == []
    assert "made/up-successor" not in audit["relations"]["successors"]


@pytest.mark.parametrize("edit", ["walk-back", "retitle", "retitle-frozen"])
def test_burned_upstream_cohort_cannot_change(upstream: Led, corpus: Path, edit: str) -> None:
    led = upstream
    cohort = _first_five(corpus)
    if edit == "walk-back":
        cohort["stage"] = "frozen"
        why = "burned -> frozen"
    elif edit == "retitle":
        cohort["title"] = cohort["title"] + " (edited)"
        why = "frozen definition"
    else:
        cohort["stage"], cohort["title"] = "frozen", "another title"
        why = "burned -> frozen"
    path = led.write(cohort, "edited.json")
    # Without a signature: authority-governed. With the authority's own signature in the
    # same transaction: still not a legal successor of the stored burned cohort.
    led.refused("append", path, says=("authority-governed",))
    signed = _attestation_file(led, cohort, "att.json")
    led.refused("append", path, signed, says=("not a legal successor", why))
    jsonl = led.dir / "edited.jsonl"
    jsonl.write_text(json.dumps(cohort) + "\n" + Path(signed).read_text() + "\n")
    led.refused("import", "jsonl", str(jsonl), says=(why,))
    led.refused("cohort", "freeze", path)
    # Even as unsigned history: the stored lifecycle stays a legal path.
    tree = led.dir / "tree" / "benchmarks" / "phase-b2-first-five"
    tree.mkdir(parents=True)
    (tree / "cohort.json").write_text(json.dumps(cohort))
    before = state(led.db)
    out = led.run("import", "idkmesh", str(led.dir / "tree"), "--unsigned", code=3).stdout
    assert out.startswith("invalid") and "benchmarks/phase-b2-first-five/cohort.json" in out
    assert state(led.db) == before


def test_unattested_burn_notice_is_refused_and_never_counted(
    led: Led, corpus: Path, tmp_path: Path
) -> None:
    # Upstream history imported unsigned: recorded, without standing.
    led.run("import", "idkmesh", str(corpus), "--unsigned")
    audit = json.loads(led.run("cohort", "audit", FIRST_FIVE, "--json").stdout)
    codes = {f["code"] for f in audit["findings"]}
    assert "cohort.unattested" in codes and "relation.unattested" in codes
    assert audit["relations"]["burn_notices"] == []  # the unattested notice is not counted
    # A hand-written notice for it: refused.
    notice = json.loads(led.run("show", "--json", _notice_digest(led)).stdout)["object"]
    notice["reason"] = "a different story"
    led.refused(
        "append", led.write(notice, "n.json"), says=("burn-notice", "provledger cohort burn")
    )


def _notice_digest(led: Led) -> str:
    rows = json.loads(led.run("log", "--kind", "burn-notice", "--json").stdout)
    digest: str = rows[0]["digest"]
    return digest


def test_bind_counts_only_an_attested_burn_notice(led: Led, tmp_path: Path) -> None:
    toy = _toy_up_to_v2(led, burn=False)
    led.run("cohort", "freeze", str(TOY / "cohort-v1.json"))
    # Its burn recorded only as unattested history (written past admission).
    burned = _toy_v1("burned")
    from cohorts.burn import burn_facts_from_extensions

    facts = burn_facts_from_extensions(burned)
    assert facts is not None
    notice = facts.to_notice(issued_at="2026-01-01T00:00:00Z")
    append_unchecked(led.db, [prepare_value(burned), prepare_value(notice)])
    err = led.run(
        "cohort", "bind", str(toy / "cohort-v2.json"), "--predecessor", "example/toy-v1", code=4
    ).output
    assert "gate.burn_notice" in err and "unattested history" in err and "provledger sign" in err


def test_cohort_failing_its_freeze_gate_is_never_bound(led: Led, tmp_path: Path) -> None:
    toy = _toy_up_to_v2(led, burn=True, freeze_v2=False)
    v2 = json.loads((toy / "cohort-v2.json").read_text())
    del v2["tasks"][0]  # fewer tasks than minimum_final_tasks: fails the freeze gate
    v2["definition_digest"] = definition_digests(v2).legacy
    path = led.write(v2, "v2-short.json")
    led.refused("append", path, says=("authority-governed", "provledger cohort freeze"))
    led.run("cohort", "freeze", path, code=4)
    # Even stored with the authority's signature (past admission, e.g. by an older
    # version), the gate re-runs the freeze gate on the stored successor.
    prepared = prepare_value(v2)
    append_unchecked(led.db, [prepared, attest_prepared(prepared, led.authority())])
    out = led.run("cohort", "bind", path, "--predecessor", "example/toy-v1", code=4).output
    assert "gate.successor.freeze" in out and "cohort.minimum_tasks" in out


# --- attestations ---------------------------------------------------------------------


def _signed_smoke(led: Led, corpus: Path) -> tuple[str, dict[str, Any]]:
    led.run("append", str(corpus / SMOKE_RM), str(corpus / SMOKE_VR))
    subject = json.loads(led.run("append", "--json", str(corpus / SMOKE_VR)).stdout)[0]["digest"]
    key = led.dir / "v.key"
    led.run("key", "generate", str(key))
    led.run(
        "identity", "register", "--verifier-id", "phase0-independent-verifier",
        "--adapter", "phase0-schema-verifier", "--adapter-version", "0.1",
        "--public-key", f"{key}.pub",
    )  # fmt: skip
    att = json.loads(led.run("sign", subject, "--key", str(key), "--json").stdout)["attestation"]
    envelope = json.loads(led.run("attestation", "export", att).stdout)
    return subject, envelope


@pytest.mark.parametrize("change", ["payloadType", "garbage-sig", "unknown-type"])
def test_attestation_import_cannot_poison_a_subject(led: Led, corpus: Path, change: str) -> None:
    subject, envelope = _signed_smoke(led, corpus)
    chain = led.runner.invoke(app, ["provenance", subject, "--json", "--db", str(led.db)])
    if change == "payloadType":
        envelope["payloadType"] = "application/vnd.provledger.result-manifest+json"
        says: tuple[str, ...] = ("payload-type-mismatch",)
    elif change == "garbage-sig":
        envelope["signatures"][0]["sig"] = base64.b64encode(b"\0" * 64).decode()
        says = ("bad-signature",)
    else:
        envelope["payloadType"] = "application/x-not-defined"
        says = ("payload-type-mismatch",)
    led.refused("attestation", "import", led.write(envelope, "bad.json"), says=says)
    led.run("attestation", "check", subject)
    again = led.runner.invoke(app, ["provenance", subject, "--json", "--db", str(led.db)])
    assert (again.exit_code, again.stdout) == (chain.exit_code, chain.stdout)
    led.run("verify")


def test_sign_by_unregistered_or_revoked_key_is_refused(led: Led, corpus: Path) -> None:
    subject, _ = _signed_smoke(led, corpus)
    other = led.dir / "other.key"
    led.run("key", "generate", str(other))
    led.refused("sign", subject, "--key", str(other), says=("unregistered-key",))
    kid = json.loads(led.run("identity", "list", "--json").stdout)[0]["key_id"]
    led.run("identity", "revoke", kid, "--reason", "compromised")
    manifest = json.loads(led.run("append", "--json", str(corpus / SMOKE_RM)).stdout)[0]["digest"]
    led.refused("sign", manifest, "--key", str(led.dir / "v.key"), says=("revoked-compromised",))


def test_calibrate_record_without_matching_identity(led: Led) -> None:
    key = led.dir / "v.key"
    led.run("key", "generate", str(key))
    led.run(
        "identity", "register", "--verifier-id", "idkmesh-local-verifier",
        "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.3.0",
        "--public-key", f"{key}.pub",
    )  # fmt: skip
    err = led.refused("calibrate", "--record", "--key", str(key))
    assert (
        "provledger identity register --verifier-id idkmesh-local-verifier --adapter"
        " deterministic-patch-verifier --adapter-version 0.1.1 --adapter-version 0.2.0"
        " --public-key KEY.pub"
    ) in err


# --- dry run --------------------------------------------------------------------------


def test_dry_run_writes_nothing_and_exits_as_it_would(led: Led, corpus: Path) -> None:
    before = state(led.db)
    out = led.run("import", "idkmesh", str(corpus), "--dry-run", "--json").stdout
    assert json.loads(out)["counts"]["imported"] > 30
    assert state(led.db) == before
    toy = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
    files = [str(p) for p in sorted((toy / "work-units").glob("*.json"))]
    rows = json.loads(led.run("append", "--dry-run", "--json", *files).stdout)
    assert [r["status"] for r in rows] == ["new"] * len(files)
    assert state(led.db) == before
    led.run("append", *files)
    after = state(led.db)
    led.refused("append", "--dry-run", led.write(_toy_v1("frozen"), "v1.json"))
    led.run("cohort", "freeze", str(toy / "cohort-v1.json"), "--dry-run", code=4)  # no plans
    assert state(led.db) == after


# --- the toy lineage, signed, through the CLI -------------------------------------------

TOY = Path(__file__).resolve().parents[1] / "examples" / "cohorts" / "toy"
CARRIED = ("002-division-test", "003-modulo-command", "004-token-refactor", "005-usage-doc")
PLANS = [
    arg
    for slug in CARRIED
    for arg in ("--plan", f"example/toy/{slug}=example/toy-v2/{slug}/evaluator@0.4")
]
OBSERVED = "example/toy/001-negative-operand"


def _toy_v1(stage: str) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / "cohort-v1.json").read_text())
    value["stage"] = stage
    return value


def _toy_up_to_v2(led: Led, *, burn: bool, freeze_v2: bool = True) -> Path:
    files = [str(p) for p in sorted((TOY / "work-units").glob("*.json"))]
    files += [str(p) for p in sorted((TOY / "evaluators").glob("*.json"))]
    led.run("append", *files)
    if burn:
        led.run("cohort", "freeze", str(TOY / "cohort-v1.json"))
        led.run("cohort", "burn", "example/toy-v1", "--reason", "seen", "--observed-task", OBSERVED)
    if freeze_v2:
        led.run("cohort", "freeze", str(TOY / "cohort-v2.json"))
    return TOY


def _calibrations(led: Led) -> list[str]:
    key = led.dir / "verifier.key"
    led.run("key", "generate", str(key))
    led.run(
        "identity", "register", "--verifier-id", "idkmesh-local-verifier",
        "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.1.1",
        "--adapter-version", "0.2.0", "--adapter-version", "0.3.0",
        "--public-key", f"{key}.pub",
    )  # fmt: skip
    out = json.loads(led.run("calibrate", "--record", "--key", str(key), "--json").stdout)
    return [
        arg
        for row in out["calibration_records"]
        if row["plan_schema_version"] == "0.4"
        for arg in ("--calibration", row["digest"])
    ]


def test_toy_lineage_freeze_burn_bind_audit_clean(led: Led) -> None:
    _toy_up_to_v2(led, burn=True)
    cal = _calibrations(led)
    bind = ["cohort", "bind", "example/toy-v2", "--predecessor", "example/toy-v1", *PLANS, *cal]
    out = json.loads(led.run(*bind, "--json").stdout)
    [binding] = [o["digest"] for o in out["objects"] if o["kind"] == "cohort-binding"]
    stored = json.loads(led.run("show", binding, "--json").stdout)["object"]
    assert [p["plan_version"] for p in stored["evaluator_plans"]] == ["0.4"] * 4
    assert len(stored["calibrations"]) == 2
    for cohort in ("example/toy-v1", "example/toy-v2"):
        audit = json.loads(led.run("cohort", "audit", cohort, "--json").stdout)
        assert audit["ok"] is True and audit["findings"] == [], audit["findings"]
    assert json.loads(led.run("verify", "--json").stdout)["ok"] is True
    led.run("attestation", "check", binding)


def test_v03_plan_cannot_be_bound(led: Led) -> None:
    """A successor that needs v0.3 cannot be bound: v0.3 accepts the decoy."""
    _toy_up_to_v2(led, burn=True, freeze_v2=False)
    v2 = json.loads((TOY / "cohort-v2.json").read_text())
    v03 = json.loads((TOY / "evaluators" / "002-division-test-v0.3.json").read_text())
    from ledger.encoding.digest import legacy_digest

    v2["tasks"][1]["evaluator"]["plan_digest"] = legacy_digest(v03)
    v2["definition_digest"] = definition_digests(v2).legacy
    path = led.write(v2, "v2-v03.json")
    led.run("cohort", "freeze", path)
    cal = _calibrations(led)
    v03_cal = [
        arg
        for row in json.loads(led.run("log", "--kind", "calibration-record", "--json").stdout)
        for arg in ("--calibration", row["digest"])
    ]
    plans = [
        p.replace("002-division-test/evaluator@0.4", "002-division-test/evaluator@0.3")
        for p in PLANS
    ]
    out = led.run(
        "cohort", "bind", path, "--predecessor", "example/toy-v1", *plans, *cal, *v03_cal,
        "--json", code=4,
    ).stdout  # fmt: skip
    failures = json.loads(out)["failures"]
    [item] = [f for f in failures if f["code"] == "gate.carry_over.calibration"]
    assert "v0.3 accepts the decoy" in item["message"] and "0.4" in item["message"]


@pytest.mark.parametrize("step", ["freeze-v1", "burn", "freeze-v2", "register", "bind"])
@pytest.mark.parametrize("fault", ["wrong-key", "missing"])
def test_toy_lineage_with_one_signature_missing_or_wrong(led: Led, step: str, fault: str) -> None:
    wrong = led.dir / "wrong.key"
    led.run("key", "generate", str(wrong))
    key = ["--authority-key", str(wrong)] if fault == "wrong-key" else []
    files = [str(p) for p in sorted((TOY / "work-units").glob("*.json"))]
    files += [str(p) for p in sorted((TOY / "evaluators").glob("*.json"))]
    led.run("append", *files)

    def governed(args: list[str], record: dict[str, Any] | None) -> bool:
        """Run ``args`` correctly unless this is the faulty step; True if it was."""
        if step_now[0] != step:
            led.run(*args)
            return False
        if fault == "wrong-key":
            led.refused(*args, *key, says=("authority key",))
        else:
            assert record is not None
            led.refused("append", led.write(record, "unsigned.json"), says=("authority-governed",))
        return True

    step_now = ["freeze-v1"]
    frozen_v1 = _toy_v1("frozen")
    frozen_v1["definition_digest"] = definition_digests(frozen_v1).legacy
    if governed(["cohort", "freeze", str(TOY / "cohort-v1.json")], frozen_v1):
        return
    step_now[0] = "burn"
    burned = dict(frozen_v1, stage="burned")
    if governed(["cohort", "burn", "example/toy-v1", "--reason", "seen", "--observed-task",
                 OBSERVED], burned):  # fmt: skip
        return
    step_now[0] = "freeze-v2"
    if governed(["cohort", "freeze", str(TOY / "cohort-v2.json")], _load(TOY / "cohort-v2.json")):
        return
    step_now[0] = "register"
    vkey = led.dir / "verifier.key"
    led.run("key", "generate", str(vkey))
    register = [
        "identity", "register", "--verifier-id", "idkmesh-local-verifier",
        "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.1.1",
        "--adapter-version", "0.2.0", "--adapter-version", "0.3.0", "--public-key", f"{vkey}.pub",
    ]  # fmt: skip
    from ledger.trust.identity import identity_value
    from ledger.trust.keys import load_public_key

    identity = identity_value(
        "idkmesh-local-verifier", "deterministic-patch-verifier", ["0.1.1", "0.2.0", "0.3.0"],
        load_public_key(Path(f"{vkey}.pub")),
    )  # fmt: skip
    if governed(register, identity):
        return
    cal = json.loads(led.run("calibrate", "--record", "--key", str(vkey), "--json").stdout)
    digests = [
        arg
        for row in cal["calibration_records"]
        if row["plan_schema_version"] == "0.4"
        for arg in ("--calibration", row["digest"])
    ]
    step_now[0] = "bind"
    bind = ["cohort", "bind", "example/toy-v2", "--predecessor", "example/toy-v1", *PLANS, *digests]
    if fault == "wrong-key":
        led.refused(*bind, *key, says=("authority key",))
        return
    dry = json.loads(led.run(*bind, "--dry-run", "--json").stdout)
    [digest] = [o["digest"] for o in dry["objects"] if o["kind"] == "cohort-binding"]
    record = _binding_from_dry_run(led, bind)
    assert prepare_value(record).digest == digest
    led.refused("append", led.write(record, "unsigned.json"), says=("authority-governed",))


def _load(path: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(path.read_text())
    return value


def _binding_from_dry_run(led: Led, bind: list[str]) -> dict[str, Any]:
    """The binding the CLI would append, rebuilt by the service on the same ledger."""
    from cohorts.service import _bind_plan, plan_choice

    plans = [plan_choice(v) for k, v in itertools.pairwise(bind) if k == "--plan"]
    cals = [v for k, v in itertools.pairwise(bind) if k == "--calibration"]
    with open_store(led.db, readonly=True) as store:
        return copy.deepcopy(_bind_plan(store, "example/toy-v2", "example/toy-v1", plans, cals))


def test_toy_lineage_in_a_real_process(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    exe = Path(sys.executable).parent / "provledger"
    if not exe.exists():
        pytest.skip(f"console script absent: {exe} (install the package into .venv)")
    env = {**os.environ, "PROVLEDGER_DB": str(tmp_path / "ledger.db")}

    def run(*args: str, code: int = 0) -> str:
        proc = subprocess.run(
            [str(exe), *args], env=env, capture_output=True, text=True, check=False
        )
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        return proc.stdout

    run("init")
    run("append", *(str(p) for p in sorted((TOY / "work-units").glob("*.json"))),
        *(str(p) for p in sorted((TOY / "evaluators").glob("*.json"))))  # fmt: skip
    run("cohort", "freeze", str(TOY / "cohort-v1.json"))
    run("cohort", "burn", "example/toy-v1", "--reason", "seen", "--observed-task", OBSERVED)
    run("cohort", "freeze", str(TOY / "cohort-v2.json"))
    key = tmp_path / "verifier.key"
    run("key", "generate", str(key))
    run("identity", "register", "--verifier-id", "idkmesh-local-verifier",
        "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.1.1",
        "--adapter-version", "0.2.0", "--adapter-version", "0.3.0",
        "--public-key", f"{key}.pub")  # fmt: skip
    rows = json.loads(run("calibrate", "--record", "--key", str(key), "--json"))
    cal = [
        arg
        for row in rows["calibration_records"]
        if row["plan_schema_version"] == "0.4"
        for arg in ("--calibration", row["digest"])
    ]
    bind = ["cohort", "bind", "example/toy-v2", "--predecessor", "example/toy-v1"]
    refused = subprocess.run(
        [str(exe), *bind, *cal], env=env, capture_output=True, text=True, check=False
    )
    assert refused.returncode == 4 and "--plan example/toy/002-division-test=" in refused.stdout
    out = run(*bind, *PLANS, *cal)
    assert out.startswith("appended cohort-binding sha256:")
    assert "0 defect(s), 0 missing, 0 warning(s) -> ok" in run("cohort", "audit", "example/toy-v1")
    assert "0 defect(s), 0 missing, 0 warning(s) -> ok" in run("cohort", "audit", "example/toy-v2")
    assert run("verify").rstrip().endswith("clean")


def test_every_writing_command_has_a_dry_run(led: Led, corpus: Path) -> None:
    """Each command with --dry-run writes nothing and exits as it would; without it, it
    writes (so the dry run is what made the difference)."""
    key = led.dir / "v.key"
    led.run("key", "generate", str(key))
    led.run("append", str(corpus / SMOKE_RM))
    subject = json.loads(led.run("append", "--json", str(corpus / SMOKE_VR)).stdout)[0]["digest"]
    jsonl = led.dir / "wu.jsonl"
    wu = corpus / "examples/work-units/phase0-smoke.work-unit.json"
    jsonl.write_text(json.dumps(json.loads(wu.read_text())) + "\n")
    register = [
        "identity", "register", "--verifier-id", "phase0-independent-verifier",
        "--adapter", "phase0-schema-verifier", "--adapter-version", "0.1",
        "--public-key", f"{key}.pub",
    ]  # fmt: skip
    commands: list[list[str]] = [
        ["import", "jsonl", str(jsonl)],
        register,
        ["sign", subject, "--key", str(key)],
        ["checkpoint"],
    ]
    for args in commands:
        before = state(led.db)
        checkpoints = json.loads(led.run("stats", "--json").stdout)["latest_checkpoint_size"]
        result = led.run(*args, "--dry-run")
        assert result.stderr.endswith("dry run: nothing written\n"), (args, result.stderr)
        assert state(led.db) == before
        assert (
            json.loads(led.run("stats", "--json").stdout)["latest_checkpoint_size"] == checkpoints
        )
        led.run(*args)
        after = json.loads(led.run("stats", "--json").stdout)
        assert state(led.db) != before or after["latest_checkpoint_size"] != checkpoints, args
    revoke = [
        "identity",
        "revoke",
        json.loads(led.run("identity", "list", "--json").stdout)[0]["key_id"],
    ]
    before = state(led.db)
    led.run(*revoke, "--reason", "retired", "--dry-run")
    assert state(led.db) == before


def test_core_governed_kind_names_match_the_identity_module() -> None:
    from ledger.trust import admission, identity

    assert (admission._IDENTITY_KIND, admission._REVOCATION_KIND) == identity.GOVERNANCE_KINDS
