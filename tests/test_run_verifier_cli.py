"""``provledger run-verifier`` end to end on real SQLite ledgers (verifiers/fixtures/calibration).

Exit codes follow the calibration story; a run records WorkUnit, plan, manifest,
candidate and log blobs, observations, the VerificationResult and its attestation in
one transaction (digests recomputed here from the files); sovereignty refusals exit 4
and leave the ledger byte-for-byte unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from ledger_state import state
from typer.testing import CliRunner, Result

from ledger.cli import app
from ledger.schema.validation import validate
from ledger.store.sqlite import open_store
from ledger.trust.attestation import attestations_of, parse_attestation
from ledger.trust.judgement import check_subject_attestations, subject_verdict
from verifiers.calibration import FIXTURE_DIR, calibration_table

ROOT = Path(__file__).resolve().parents[1]
VERIFIER_ID = "idkmesh-local-verifier"
ADAPTER = "deterministic-patch-verifier"
ADAPTER_VERSIONS = ("0.1.1", "0.2.0", "0.3.0")
# (plan version, candidate) -> exit code: the calibration story of docs/VERIFIERS.md.
STORY = {
    ("0.2", "repair"): 1,
    ("0.2", "decoy"): 0,
    ("0.3", "repair"): 0,
    ("0.3", "decoy"): 0,
    ("0.4", "repair"): 0,
    ("0.4", "decoy"): 1,
}


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def jcs_digest(path: Path) -> str:
    return sha(rfc8785.dumps(json.loads(path.read_bytes())))


@dataclass
class Env:
    runner: CliRunner
    db: Path
    key: Path
    tmp: Path

    def run(self, *args: str, code: int = 0, db: bool = True) -> Result:
        result = self.runner.invoke(app, [*args, *(["--db", str(self.db)] if db else [])])
        assert result.exit_code == code, (args, result.exit_code, result.stdout, result.stderr)
        return result


def plan_file(version: str) -> Path:
    return FIXTURE_DIR / "plans" / f"evaluator-plan-v{version}.json"


def run_args(
    env: Env,
    *,
    version: str = "0.4",
    candidate: str = "repair",
    plan: Path | None = None,
    manifest: Path | None = None,
    work_unit: Path | None = None,
    root: Path | None = None,
) -> list[str]:
    return [
        "run-verifier",
        "--work-unit",
        str(work_unit or FIXTURE_DIR / "work-unit.json"),
        "--plan",
        str(plan or plan_file(version)),
        "--manifest",
        str(manifest or FIXTURE_DIR / "manifests" / f"{candidate}.result-manifest.json"),
        "--candidate-root",
        str(root or FIXTURE_DIR / "candidates" / candidate),
        "--key",
        str(env.key),
    ]


def register_verifier(env: Env, key: Path) -> None:
    args = ["identity", "register", "--verifier-id", VERIFIER_ID, "--adapter", ADAPTER]
    for version in ADAPTER_VERSIONS:
        args += ["--adapter-version", version]
    env.run(*args, "--public-key", f"{key}.pub")


@pytest.fixture
def env(tmp_path: Path, runner: CliRunner, ledger_path: Path) -> Env:
    """A fresh ledger with a registered verifier key."""
    e = Env(runner, ledger_path, tmp_path / "verifier.key", tmp_path)
    e.run("key", "generate", str(e.key), db=False)
    register_verifier(e, e.key)
    return e


def snapshot(db: Path) -> tuple[Any, ...]:
    """Everything a refusal must leave untouched."""
    with sqlite3.connect(db) as conn:
        return tuple(
            tuple(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall())
            for table in ("entries", "objects", "refs", "tree_nodes", "checkpoints", "meta")
        )


# --- the calibration story -----------------------------------------------------------


@pytest.mark.parametrize(("version", "candidate"), sorted(STORY))
def test_exit_codes_follow_the_calibration_story_and_the_run_is_recorded(
    env: Env, version: str, candidate: str
) -> None:
    code = STORY[(version, candidate)]
    info = json.loads(
        env.run(*run_args(env, version=version, candidate=candidate), "--json", code=code).stdout
    )
    assert info["exit_code"] == code
    assert info["status"] == ("passed" if code == 0 else "failed")
    assert info["recommendation"] == ("accept_candidate" if code == 0 else "reject_candidate")
    assert info["plan_schema_version"] == version

    wu_file = FIXTURE_DIR / "work-unit.json"
    plan = plan_file(version)
    manifest = FIXTURE_DIR / "manifests" / f"{candidate}.result-manifest.json"
    root = FIXTURE_DIR / "candidates" / candidate
    assert info["plan_digest"] == jcs_digest(plan)
    assert info["work_unit_digest"] == jcs_digest(wu_file)
    assert info["result_manifest_digest"] == jcs_digest(manifest)

    with open_store(env.db, readonly=True) as store:
        # Each input recorded as its exact canonical (documents) or raw (blobs) bytes.
        expected = {
            jcs_digest(wu_file): ("work-unit", rfc8785.dumps(json.loads(wu_file.read_bytes()))),
            jcs_digest(plan): ("evaluator-plan", rfc8785.dumps(json.loads(plan.read_bytes()))),
            jcs_digest(manifest): (
                "result-manifest",
                rfc8785.dumps(json.loads(manifest.read_bytes())),
            ),
        }
        for name in ("candidate.patch", "stdout.txt", "stderr.txt"):
            data = (root / name).read_bytes()
            expected[sha(data)] = ("blob", data)
        for digest, (kind, data) in expected.items():
            obj = store.get(digest)
            assert obj is not None, (kind, digest)
            assert (obj.kind, obj.data) == (kind, data)
            assert sha(obj.data) == digest

        result = store.get(info["result_digest"])
        assert result is not None and result.kind == "verification-result"
        assert sha(result.data) == info["result_digest"]
        value = json.loads(result.data)
        assert value["status"] == info["status"]
        assert value["provenance"]["verifier_config_digest"] == info["plan_digest"]
        assert value["provenance"]["result_manifest_digest"] == info["result_manifest_digest"]
        assert value["provenance"]["work_unit_digest"] == info["work_unit_digest"]
        # Every inline observation is stored under the digest the result cites.
        for ev in value["evidence"]:
            if ev["locator"].startswith("inline://"):
                body = store.get(ev["digest"])
                assert body is not None and sha(body.data) == ev["digest"]

        (att,) = attestations_of(store, info["result_digest"])
        assert att.digest == info["attestation_digest"] and att.seq > result.seq
        detached = parse_attestation(att.data)
        assert detached.subject_digest == info["result_digest"]
        assert detached.signature.keyid == info["attestation"]["key_id"]
        verdicts = check_subject_attestations(store, info["result_digest"], store.policy)
        assert subject_verdict(verdicts)[0], [v.to_json() for v in verdicts]
        assert verdicts[0].verifier_id == VERIFIER_ID

        # One transaction: the run's entries are contiguous and end with the attestation.
        seqs = sorted(r["seq"] for r in info["recorded"] if r["status"] == "new")
        assert seqs == list(range(seqs[0], store.size()))
    recorded = {r["digest"] for r in info["recorded"]}
    assert set(expected) | {info["result_digest"], info["attestation_digest"]} <= recorded
    assert info["not_recorded"] == []
    env.run("checkpoint")
    env.run("verify")


def test_result_matches_the_pure_calibration_table(env: Env) -> None:
    table = calibration_table(validate=validate)
    for (version, candidate), code in STORY.items():
        out = json.loads(
            env.run(
                *run_args(env, version=version, candidate=candidate), "--json", code=code
            ).stdout
        )
        row = table.row(version, candidate)
        assert out["summary"] == row.summary.split("; ")
        assert out["status"] == row.status


def test_human_output_and_output_file(env: Env) -> None:
    out_file = env.tmp / "result.json"
    result = env.run(*run_args(env), "--output", str(out_file))
    text = result.stdout
    assert "status          passed" in text
    assert "recommendation  accept_candidate" in text
    assert "matched removed substrings: 1 of 1" in text
    data = out_file.read_bytes()
    digest = sha(data)
    assert f"result          {digest}" in text
    with open_store(env.db, readonly=True) as store:
        stored = store.get(digest)
        assert stored is not None and stored.data == data
        (att,) = attestations_of(store, digest)
    assert f"attestation     {att.digest}" in text and " valid" in text
    assert result.stderr == ""

    failed = env.run(*run_args(env, candidate="decoy"), code=1).stdout
    assert "status          failed" in failed
    assert "matched removed substrings: 0 of 1" in failed


def test_json_shape(env: Env) -> None:
    info = json.loads(env.run(*run_args(env), "--json").stdout)
    assert set(info) == {
        "status",
        "recommendation",
        "exit_code",
        "plan_schema_version",
        "plan_digest",
        "work_unit_digest",
        "result_manifest_digest",
        "result_digest",
        "attestation_digest",
        "attestation",
        "summary",
        "checks",
        "recorded",
        "not_recorded",
        "sovereignty",
        "output",
    }
    assert set(info["attestation"]) == {"digest", "key_id", "verifier_id", "ok", "failures"}
    assert info["attestation"]["ok"] is True
    assert [c["id"] for c in info["checks"]] == ["result-manifest-schema", "independent-review"]
    roles = [r["role"] for r in info["recorded"]]
    assert roles[:3] == ["work-unit", "evaluator-plan", "result-manifest"]
    assert roles[-2:] == ["verification-result", "attestation"]
    assert roles.count("candidate") == 1 and roles.count("log") == 2
    with open_store(env.db, readonly=True) as store:
        stored = store.get(info["result_digest"])
        assert stored is not None
        evidence = json.loads(stored.data)["evidence"]
    inline = {e["id"]: e["digest"] for e in evidence if e["locator"].startswith("inline://")}
    # The canonical-manifest observation IS the manifest's bytes: stored once, as the manifest.
    assert inline.pop("result-manifest-canonical") == info["result_manifest_digest"]
    observations = [r for r in info["recorded"] if r["role"] == "observation"]
    assert {r["name"]: r["digest"] for r in observations} == inline
    assert all(r["kind"] == "blob" for r in observations) and len(observations) == 6
    for row in info["recorded"]:
        assert set(row) == {"role", "name", "kind", "digest", "seq", "status"}
        assert row["status"] == "new"
    assert info["sovereignty"]["plan_digest"]["digest"] == info["plan_digest"]
    assert "SOV-OUTPUT-INSIDE-CANDIDATE-ROOT" in info["sovereignty"]["checked"]

    # The same run again: only the result (new timestamps) and its attestation are new.
    again = json.loads(env.run(*run_args(env), "--json").stdout)
    fresh = [r["role"] for r in again["recorded"] if r["status"] == "new"]
    assert fresh == ["verification-result", "attestation"]


def test_unregistered_key_is_refused_and_nothing_is_recorded(env: Env) -> None:
    other = env.tmp / "other.key"
    env.run("key", "generate", str(other), db=False)
    args = run_args(env)
    args[args.index("--key") + 1] = str(other)
    before = state(env.db)
    result = env.run(*args, "--json", code=4)
    assert result.stdout == ""
    assert result.stderr.startswith("error: attestation ") and result.stderr.count("\n") == 1
    assert "unregistered-key" in result.stderr and "provledger identity register" in result.stderr
    assert state(env.db) == before
    env.run("verify")


def test_oversized_log_is_not_read_past_the_limit(env: Env) -> None:
    plan = json.loads(plan_file("0.4").read_bytes())
    plan["backend"]["max_log_bytes"] = 10  # stdout.txt is larger
    plan_path = env.tmp / "small-logs.plan.json"
    plan_path.write_text(json.dumps(plan))
    info = json.loads(env.run(*run_args(env, plan=plan_path), "--json", code=1).stdout)
    stdout = (FIXTURE_DIR / "candidates" / "repair" / "stdout.txt").read_bytes()
    assert info["not_recorded"] == []
    with open_store(env.db, readonly=True) as store:
        assert store.get(sha(stdout)) is None
        result = store.get(info["result_digest"])
        assert result is not None
        observations = [
            store.get(e["digest"])
            for e in json.loads(result.data)["evidence"]
            if e["id"] == "log-integrity-observation"
        ]
    (obs,) = observations
    assert obs is not None
    (log,) = [x for x in json.loads(obs.data)["logs"] if x["type"] == "stdout"]
    assert (log["status"], log["bytes"], log["observed_digest"]) == (
        "too_large",
        len(stdout),
        None,
    )
    assert log["detail"] == f"{len(stdout)} bytes, limit 10"
    env.run("verify")


def test_bad_inputs_exit_3_and_record_nothing(env: Env) -> None:
    before = snapshot(env.db)
    result = env.run(*run_args(env, manifest=env.tmp / "absent.json"), code=3)
    assert result.stderr.startswith("error: ResultManifest file not found")
    broken = env.tmp / "broken.plan.json"
    broken.write_bytes(b'{"schema_version": "0.4", "id": 1, "id": 2}')
    result = env.run(*run_args(env, plan=broken), code=3)
    assert result.stderr.startswith(f"error: {broken}: ")
    result = env.run(*run_args(env), "--output", str(env.tmp), code=3)
    assert result.stderr.startswith("error: --output, got ")
    for result in (
        env.run(*run_args(env), "--output", str(env.tmp / "no-dir" / "r.json"), code=3),
        env.run(*run_args(env, root=env.tmp / "no-such-root"), code=4),
    ):
        assert result.stderr.count("\n") == 1
    assert snapshot(env.db) == before


def test_a_number_beyond_i_json_is_bad_input_in_the_cli(env: Env) -> None:
    """The CLI refuses such a file while reading it (exit 3), before the verifier's own
    refusal (SOV-INPUT-CANONICAL, test_a_document_beyond_i_json_is_a_sovereignty_refusal)."""
    before = snapshot(env.db)
    plan = json.loads(plan_file("0.4").read_bytes())
    plan["extensions"]["org.test.big"] = 2**60 + 1
    big = env.tmp / "big.plan.json"
    big.write_text(json.dumps(plan))
    result = env.run(*run_args(env, plan=big), code=3)
    assert result.stderr.startswith(f"error: {big}: ") and result.stderr.count("\n") == 1
    assert "1152921504606846977" in result.stderr
    assert snapshot(env.db) == before


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full on this system")
def test_unwritable_output_records_nothing(env: Env) -> None:
    # The result file is written inside the append transaction, before COMMIT: a full
    # device refuses the write, and the run is not recorded.
    before = snapshot(env.db)
    result = env.run(*run_args(env), "--output", "/dev/full", code=3)
    assert result.stderr.startswith("error: --output /dev/full cannot be written")
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert snapshot(env.db) == before
    ok = env.run(*run_args(env), "--output", str(env.tmp / "result.json"))
    assert (env.tmp / "result.json").is_file() and "recorded" in ok.stdout


def test_passphrase_protected_key(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VERIFIER_PASS", "correct horse")
    locked = env.tmp / "locked.key"
    env.run("key", "generate", str(locked), "--passphrase-env", "VERIFIER_PASS", db=False)
    register_verifier(env, locked)
    args = run_args(env)
    args[args.index("--key") + 1] = str(locked)
    before = snapshot(env.db)
    env.run(*args, code=3)  # no passphrase given: the key cannot be read
    monkeypatch.setenv("WRONG_PASS", "wrong")
    env.run(*args, "--passphrase-env", "WRONG_PASS", code=3)
    assert snapshot(env.db) == before
    info = json.loads(env.run(*args, "--passphrase-env", "VERIFIER_PASS", "--json").stdout)
    assert info["attestation"]["ok"] is True


# --- sovereignty refusals ------------------------------------------------------------


def _copy_candidate(tmp: Path) -> Path:
    root = tmp / "candidate"
    shutil.copytree(FIXTURE_DIR / "candidates" / "repair", root)
    return root


def _refusal_args(env: Env, case: str) -> tuple[list[str], Path | None]:
    """Arguments for one violation; also the output path that must stay unwritten."""
    tmp = env.tmp
    if case == "SOV-BINDING-DIGEST":
        plan = json.loads(plan_file("0.4").read_bytes())
        plan["binding"]["work_unit_digest"] = "sha256:" + "0" * 64
        path = tmp / "other-binding.plan.json"
        path.write_text(json.dumps(plan))
        return run_args(env, plan=path), None
    if case == "SOV-VERIFIER-IS-WORKER":
        manifest = json.loads(
            (FIXTURE_DIR / "manifests" / "repair.result-manifest.json").read_bytes()
        )
        manifest["worker"]["id"] = VERIFIER_ID
        path = tmp / "self.result-manifest.json"
        path.write_text(json.dumps(manifest))
        return run_args(env, manifest=path), None
    if case == "SOV-PLAN-INSIDE-CANDIDATE-ROOT":
        root = _copy_candidate(tmp)
        inside = root / "plan.json"
        shutil.copyfile(plan_file("0.4"), inside)
        return run_args(env, plan=inside, root=root), None
    if case == "SOV-OUTPUT-INSIDE-CANDIDATE-ROOT":
        root = _copy_candidate(tmp)
        link = tmp / "result-link.json"
        os.symlink(root / "verification-result.json", link)
        return [*run_args(env, root=root), "--output", str(link)], root / "verification-result.json"
    if case == "SOV-SCHEMA-PLAN":
        plan = json.loads(plan_file("0.4").read_bytes())
        plan["execution_mode"] = 7
        path = tmp / "bad-schema.plan.json"
        path.write_text(json.dumps(plan))
        return run_args(env, plan=path), None
    raise AssertionError(case)


@pytest.mark.parametrize(
    "case",
    [
        "SOV-BINDING-DIGEST",
        "SOV-VERIFIER-IS-WORKER",
        "SOV-PLAN-INSIDE-CANDIDATE-ROOT",
        "SOV-OUTPUT-INSIDE-CANDIDATE-ROOT",
        "SOV-SCHEMA-PLAN",
    ],
)
def test_sovereignty_refusal_exits_4_and_records_nothing(env: Env, case: str) -> None:
    args, unwritten = _refusal_args(env, case)
    before = snapshot(env.db)
    for extra in ([], ["--json"]):
        result = env.run(*args, *extra, code=4)
        assert result.stderr.startswith(f"error: {case}: ")
        assert result.stderr.count("\n") == 1
        assert result.stdout == ""
    assert snapshot(env.db) == before
    if unwritten is not None:
        assert not unwritten.exists()
    env.run("verify")


# --- the documented command sequence, through the installed console script ----------


def test_documented_sequence_from_a_fresh_ledger(tmp_path: Path) -> None:
    exe = ROOT / ".venv" / "bin" / "provledger"
    if not exe.exists():
        pytest.skip(f"console script not installed at {exe}")
    fx = FIXTURE_DIR
    environ = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}

    def sh(*args: str, code: int = 0) -> str:
        proc = subprocess.run(
            [str(exe), *args],
            cwd=tmp_path,
            env=environ,
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == code, (args, proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout

    sh("init", "--db", "ledger.db")
    key_id = sh("key", "generate", "verifier.key").strip()
    sh(
        "identity",
        "register",
        "--db",
        "ledger.db",
        "--verifier-id",
        VERIFIER_ID,
        "--adapter",
        ADAPTER,
        "--adapter-version",
        "0.3.0",
        "--public-key",
        "verifier.key.pub",
    )
    out = sh(
        "run-verifier",
        "--db",
        "ledger.db",
        "--work-unit",
        str(fx / "work-unit.json"),
        "--plan",
        str(fx / "plans" / "evaluator-plan-v0.4.json"),
        "--manifest",
        str(fx / "manifests" / "repair.result-manifest.json"),
        "--candidate-root",
        str(fx / "candidates" / "repair"),
        "--key",
        "verifier.key",
        "--output",
        "result.json",
    )
    assert f"key {key_id} valid" in out
    digest = sha((tmp_path / "result.json").read_bytes())
    sh("checkpoint", "--db", "ledger.db")
    assert "clean" in sh("verify", "--db", "ledger.db")
    check = json.loads(sh("attestation", "check", digest, "--db", "ledger.db", "--json"))
    assert check["ok"] is True


def test_a_crashing_validator_is_an_internal_error_not_a_refusal(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bug in a validator exits 70 with one line; it never looks like SOV-* (exit 4)."""
    import ledger.schema.validation as validation

    def broken(kind: str, version: str, obj: Any) -> None:
        raise KeyError("validator bug")

    monkeypatch.setattr(validation, "validate", broken)
    before = snapshot(env.db)
    result = env.run(*run_args(env), code=70)
    assert result.stderr.startswith("error: internal error, got KeyError: 'validator bug'")
    assert result.stderr.count("\n") == 1 and "SOV-" not in result.stderr
    assert "Traceback" not in result.output
    assert snapshot(env.db) == before
    monkeypatch.setenv("PROVLEDGER_DEBUG", "1")
    debug = env.runner.invoke(app, [*run_args(env), "--db", str(env.db)])
    assert isinstance(debug.exception, KeyError)  # re-raised: the traceback is shown


def test_each_input_file_is_parsed_once(env: Env, monkeypatch: pytest.MonkeyPatch) -> None:
    """run-verifier encodes each input file once and records that parse: its bytes never
    reach a second parser (``parse_strict``, ``prepare_json``)."""
    import ledger.encoding.canonical as canonical
    import ledger.store.prepared as prepared
    import verifiers.record as record

    files = [
        FIXTURE_DIR / "work-unit.json",
        plan_file("0.4"),
        FIXTURE_DIR / "manifests" / "repair.result-manifest.json",
    ]
    inputs = {p.read_bytes(): p.name for p in files}
    encoded: list[str] = []
    reparsed: list[str] = []
    real_encode, real_parse, real_prepare = (
        canonical.encode,
        canonical.parse_strict,
        prepared.prepare_json,
    )

    def encode(raw: bytes, *args: Any) -> Any:
        if raw in inputs:
            encoded.append(inputs[raw])
        return real_encode(raw, *args)

    def parse_strict(raw: bytes, *args: Any) -> Any:
        if raw in inputs:
            reparsed.append(f"parse_strict {inputs[raw]}")
        return real_parse(raw, *args)

    def prepare_json(raw: bytes, *args: Any) -> Any:
        if raw in inputs:
            reparsed.append(f"prepare_json {inputs[raw]}")
        return real_prepare(raw, *args)

    monkeypatch.setattr(canonical, "encode", encode)
    monkeypatch.setattr(canonical, "parse_strict", parse_strict)
    monkeypatch.setattr(record, "prepare_json", prepare_json)
    info = json.loads(env.run(*run_args(env), "--json").stdout)
    assert sorted(encoded) == sorted(p.name for p in files)
    assert reparsed == []
    recorded = {row["role"]: row["digest"] for row in info["recorded"]}
    assert recorded["work-unit"] == jcs_digest(files[0])
    assert recorded["evaluator-plan"] == jcs_digest(files[1])
    assert recorded["result-manifest"] == jcs_digest(files[2])
