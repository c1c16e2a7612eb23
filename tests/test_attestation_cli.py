"""Attestations end to end through the CLI on real SQLite ledgers (corpus subjects).

Each scenario signs an upstream VerificationResult and checks both ``attestation check``
and ``verify``: the valid case exits 0, every failure exits 1 naming its reason.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import rfc8785
from ledger_state import append_unchecked, state
from securesystemslib.dsse import Envelope as SslibEnvelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import SSlibKey  # type: ignore[attr-defined]
from typer.testing import CliRunner, Result

from ledger.cli import app
from ledger.store.prepared import prepare_value
from ledger.store.sqlite import open_store
from ledger.trust.attestation import attest
from ledger.trust.dsse import parse_envelope, payload_type_for, verify_envelope
from ledger.trust.intoto import INTOTO_PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE
from ledger.trust.keys import Ed25519Signer, load_public_key

SMOKE_VR = "examples/results/phase0-smoke.verification-result.json"
SMOKE_RM = "examples/results/phase0-smoke.result-manifest.json"
B2 = "benchmarks/phase-b2-successor-five/evidence/task-001/attempt-001"
B2_VR = f"{B2}/verification-result.json"
B2_RM = f"{B2}/result-manifest.json"
PLAN = "verification/fixtures/patch-transition-evaluator-plan-v0.4.json"

SMOKE_VERIFIER = ("phase0-independent-verifier", "phase0-schema-verifier", "0.1")
B2_VERIFIER = ("idkmesh-local-verifier", "deterministic-patch-verifier", "0.3.0")


class Ledger:
    """A tmp ledger driven only through the CLI."""

    def __init__(self, runner: CliRunner, db: Path) -> None:
        self.runner = runner
        self.db = db
        self.dir = db.parent
        self._keys = 0

    def run(self, *args: str, code: int = 0) -> Result:
        result = self.runner.invoke(app, [*args, "--db", str(self.db)])
        assert result.exit_code == code, (args, result.exit_code, result.output)
        return result

    def json(self, *args: str, code: int = 0) -> Any:
        out = self.run(*args, "--json", code=code).stdout
        # Refusals (exit 3/4) print only the one-line error on stderr.
        return json.loads(out) if out or code in (0, 1) else None

    def append(self, path: Path) -> str:
        digest: str = self.json("append", str(path))[0]["digest"]
        return digest

    def append_value(self, value: Any, name: str) -> str:
        path = self.dir / name
        path.write_bytes(json.dumps(value).encode())
        return self.append(path)

    def new_key(self) -> tuple[Path, str]:
        self._keys += 1
        path = self.dir / f"k{self._keys}.key"
        result = self.runner.invoke(app, ["key", "generate", str(path)])
        assert result.exit_code == 0, result.output
        return path, result.stdout.strip()

    def register(
        self, key: Path, verifier: tuple[str, str, str], *extra_versions: str, code: int = 0
    ) -> Any:
        vid, adapter, version = verifier
        args = ["identity", "register", "--verifier-id", vid, "--adapter", adapter]
        for v in (version, *extra_versions):
            args += ["--adapter-version", v]
        return self.json(*args, "--public-key", f"{key}.pub", code=code)

    def sign(self, digest: str, key: Path) -> Any:
        return self.json("sign", digest, "--key", str(key))

    def refused(self, *args: str, reason: str) -> None:
        """Refused by admission: exit 4, one line naming ``reason``, nothing written."""
        before = state(self.db)
        result = self.run(*args, code=4)
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
        assert reason in result.stderr, result.stderr
        assert state(self.db) == before

    def sign_invalid(self, digest: str, key: Path, reason: str) -> None:
        """``sign`` refuses an attestation that would not verify. It is then stored past
        admission, as a ledger written before admission existed may hold it, so the
        judgement of stored attestations (``attestation check``, ``verify``) is tested."""
        self.refused("sign", digest, "--key", str(key), reason=reason)
        with open_store(self.db, readonly=True) as store:
            prepared = attest(store, digest, Ed25519Signer.from_file(key))
        append_unchecked(self.db, [prepared])

    def check(self, digest: str, code: int) -> Any:
        return self.json("attestation", "check", digest, code=code)

    def verify_codes(self, code: int) -> list[str]:
        report = self.json("verify", code=code)
        return [f["code"] for f in report["findings"]]


@pytest.fixture
def led(ledger_path: Path, runner: CliRunner, corpus: Path) -> Ledger:
    return Ledger(runner, ledger_path)


def _smoke(led: Ledger, corpus: Path) -> str:
    led.append(corpus / SMOKE_RM)
    return led.append(corpus / SMOKE_VR)


def _codes(report: Any) -> set[str]:
    return {f["code"] for a in report["attestations"] for f in a["failures"]}


def _assert_fails(led: Ledger, subject: str, code: str) -> None:
    report = led.check(subject, code=1)
    assert report["ok"] is False
    assert code in _codes(report), report
    assert code in led.verify_codes(code=1)
    # The human form names the reason on stderr too.
    result = led.run("attestation", "check", subject, code=1)
    assert code in result.stderr and result.stderr.startswith("error: ")


# --- the valid path ------------------------------------------------------------------


@pytest.mark.parametrize("which", ["smoke", "b2"])
def test_registered_key_verifies(led: Ledger, corpus: Path, which: str) -> None:
    if which == "smoke":
        subject, verifier = _smoke(led, corpus), SMOKE_VERIFIER
    else:
        led.append(corpus / B2_RM)
        subject, verifier = led.append(corpus / B2_VR), B2_VERIFIER
    key, kid = led.new_key()
    led.register(key, verifier)
    signed = led.sign(subject, key)
    assert signed["status"] == "new" and signed["ok"] is True and signed["key_id"] == kid
    report = led.check(subject, code=0)
    assert report["ok"] is True
    [verdict] = report["attestations"]
    assert verdict["verifier_id"] == verifier[0] and verdict["signer"] == "verifier"
    assert verdict["failures"] == []
    assert led.verify_codes(code=0) == []
    human = led.run("attestation", "check", subject)
    assert "OK" in human.stdout and human.stderr == ""


def test_sign_is_idempotent_and_warns_only_when_invalid(led: Ledger, corpus: Path) -> None:
    subject = _smoke(led, corpus)
    key, _ = led.new_key()
    led.register(key, SMOKE_VERIFIER)
    first = led.run("sign", subject, "--key", str(key))
    assert first.stderr == "" and " new" in first.stdout
    again = led.json("sign", subject, "--key", str(key))
    assert again["status"] == "present"  # Ed25519 is deterministic: same bytes, one entry


def test_no_attestation_fails(led: Ledger, corpus: Path) -> None:
    subject = _smoke(led, corpus)
    report = led.check(subject, code=1)
    assert report["attestations"] == [] and report["reason"].startswith("no-attestation")


def test_unknown_subject_is_not_found(led: Ledger) -> None:
    led.run("attestation", "check", "sha256:" + "ab" * 32, code=3)
    key, _ = led.new_key()
    led.run("sign", "sha256:" + "ab" * 32, "--key", str(key), code=3)


# --- named failures ------------------------------------------------------------------


def test_unregistered_key(led: Ledger, corpus: Path) -> None:
    subject = _smoke(led, corpus)
    key, kid = led.new_key()
    led.sign_invalid(subject, key, f"unregistered-key: no verifier identity with key {kid}")
    _assert_fails(led, subject, "unregistered-key")


def test_registration_after_signing_does_not_count(led: Ledger, corpus: Path) -> None:
    subject = _smoke(led, corpus)
    key, _ = led.new_key()
    led.sign_invalid(subject, key, "unregistered-key")
    led.register(key, SMOKE_VERIFIER)
    _assert_fails(led, subject, "unregistered-key")


def test_key_of_another_verifier_id(led: Ledger, corpus: Path) -> None:
    subject = _smoke(led, corpus)
    key, _ = led.new_key()
    led.register(key, ("someone-else", SMOKE_VERIFIER[1], SMOKE_VERIFIER[2]))
    led.sign_invalid(subject, key, "wrong-verifier-id")
    _assert_fails(led, subject, "wrong-verifier-id")
    assert _codes(led.check(subject, code=1)) == {"wrong-verifier-id"}


@pytest.mark.parametrize(
    "registered",
    [
        (SMOKE_VERIFIER[0], SMOKE_VERIFIER[1], "0.2"),
        (SMOKE_VERIFIER[0], "another-adapter", SMOKE_VERIFIER[2]),
    ],
    ids=["version", "adapter"],
)
def test_key_for_another_adapter_version(
    led: Ledger, corpus: Path, registered: tuple[str, str, str]
) -> None:
    subject = _smoke(led, corpus)
    key, _ = led.new_key()
    led.register(key, registered)
    led.sign_invalid(subject, key, "wrong-adapter-version")
    _assert_fails(led, subject, "wrong-adapter-version")
    assert _codes(led.check(subject, code=1)) == {"wrong-adapter-version"}


def test_several_adapter_versions(led: Ledger, corpus: Path) -> None:
    led.append(corpus / B2_RM)
    subject = led.append(corpus / B2_VR)
    key, _ = led.new_key()
    led.register(key, (B2_VERIFIER[0], B2_VERIFIER[1], "0.1.1"), "0.2.0", B2_VERIFIER[2])
    led.sign(subject, key)
    led.check(subject, code=0)


def test_retired_key_invalid_after_revocation_only(led: Ledger, corpus: Path) -> None:
    before = _smoke(led, corpus)
    led.append(corpus / B2_RM)
    after = led.append(corpus / B2_VR)
    key, kid = led.new_key()
    led.register(key, SMOKE_VERIFIER)
    led.sign(before, key)
    led.json("identity", "revoke", kid, "--reason", "retired")
    led.check(before, code=0)  # signed while the key was in force
    # A new identity with the same key for the b2 verifier is refused (revoked key) ...
    led.register(key, B2_VERIFIER, code=4)
    # ... and a signature appended after the retirement is invalid.
    led.sign_invalid(after, key, "revoked-retired")
    report = led.check(after, code=1)
    assert "revoked-retired" in _codes(report)
    assert "revoked-retired" in led.verify_codes(code=1)


def test_compromised_key_invalid_everywhere(led: Ledger, corpus: Path) -> None:
    subject = _smoke(led, corpus)
    key, kid = led.new_key()
    led.register(key, SMOKE_VERIFIER)
    led.sign(subject, key)
    led.check(subject, code=0)
    led.json("identity", "revoke", kid, "--reason", "compromised", "--note", "leaked in CI")
    _assert_fails(led, subject, "revoked-compromised")
    [row] = led.json("identity", "list")
    assert row["status"] == "compromised"


def test_rotation_keeps_old_signatures_valid(led: Ledger, corpus: Path) -> None:
    old_subject = _smoke(led, corpus)
    old_key, old_kid = led.new_key()
    led.register(old_key, SMOKE_VERIFIER)
    led.sign(old_subject, old_key)
    new_key, new_kid = led.new_key()
    led.register(new_key, SMOKE_VERIFIER)
    led.json("identity", "revoke", old_kid, "--reason", "retired")
    led.append(corpus / B2_RM)
    b2 = led.append(corpus / B2_VR)
    new_b2, _ = led.new_key()
    led.register(new_b2, B2_VERIFIER)
    led.sign(b2, new_b2)
    led.sign(old_subject, new_key)  # co-signature by the rotated key
    report = led.check(old_subject, code=0)
    assert {a["key_id"] for a in report["attestations"]} == {old_kid, new_kid}
    shown = led.json("identity", "show", SMOKE_VERIFIER[0])
    assert [i["status"] for i in shown["identities"]] == ["retired", "active"]
    assert [r["reason"] for r in shown["revocations"]] == ["retired"]
    assert led.verify_codes(code=0) == []


def test_self_verification(led: Ledger, corpus: Path) -> None:
    led.append(corpus / SMOKE_RM)
    manifest = json.loads((corpus / SMOKE_RM).read_text())
    result = json.loads((corpus / SMOKE_VR).read_text())
    worker = manifest["worker"]["id"]
    result["verifier"]["id"] = worker
    result["independence"]["worker_id_observed"] = "not-the-worker"  # only the manifest says so
    subject = led.append_value(result, "self.json")
    key, _ = led.new_key()
    led.register(key, (worker, SMOKE_VERIFIER[1], SMOKE_VERIFIER[2]))
    led.sign_invalid(subject, key, "self-verification")
    _assert_fails(led, subject, "self-verification")
    report = led.check(subject, code=1)
    assert _codes(report) == {"self-verification"}
    assert "ResultManifest" in report["attestations"][0]["failures"][0]["message"]


def test_self_verification_by_manifest_id(led: Ledger, corpus: Path) -> None:
    led.append(corpus / B2_RM)
    manifest = json.loads((corpus / B2_RM).read_text())
    result = json.loads((corpus / B2_VR).read_text())
    worker = manifest["worker"]["id"]
    result["verifier"]["id"] = worker
    result["independence"]["worker_id_observed"] = "not-the-worker"
    result["provenance"]["result_manifest_digest"] = "sha256:" + "0" * 64  # only the id resolves
    subject = led.append_value(result, "self.json")
    key, _ = led.new_key()
    led.register(key, (worker, B2_VERIFIER[1], B2_VERIFIER[2]))
    led.sign_invalid(subject, key, "self-verification")
    assert _codes(led.check(subject, code=1)) == {"self-verification"}


def test_evaluator_plan_subject(led: Ledger, corpus: Path) -> None:
    plan = led.append(corpus / PLAN)
    good, _ = led.new_key()
    led.register(good, B2_VERIFIER)
    led.sign(plan, good)
    led.check(plan, code=0)
    older, _ = led.new_key()
    led.register(older, (B2_VERIFIER[0], B2_VERIFIER[1], "0.2.0"))
    led.sign_invalid(plan, older, "wrong-adapter-version")
    assert _codes(led.check(plan, code=1)) == {"wrong-adapter-version"}


def test_authority_key_cannot_sign_a_verification_result(led: Ledger, corpus: Path) -> None:
    subject = _smoke(led, corpus)
    authority = led.db.with_name(led.db.name + ".authority.key")
    led.sign_invalid(subject, authority, "unregistered-key")
    report = led.check(subject, code=1)
    assert _codes(report) == {"unregistered-key"}
    assert "authority" in report["attestations"][0]["failures"][0]["message"]


def test_identity_attestations_are_checked(led: Ledger, corpus: Path) -> None:
    key, _ = led.new_key()
    reg = led.register(key, SMOKE_VERIFIER)
    report = led.check(reg["identity"], code=0)
    assert report["attestations"][0]["signer"] == "authority"
    led.sign_invalid(reg["identity"], key, "not-authority-key")  # not its own identity
    assert _codes(led.check(reg["identity"], code=1)) == {"not-authority-key"}


# --- tampering -----------------------------------------------------------------------


def _signed(led: Ledger, corpus: Path) -> tuple[str, str, Path]:
    subject = _smoke(led, corpus)
    key, _ = led.new_key()
    led.register(key, SMOKE_VERIFIER)
    return subject, led.sign(subject, key)["attestation"], key


def _flip_sig(sig: str) -> str:
    raw = bytearray(base64.b64decode(sig))
    raw[5] ^= 0x40
    return base64.b64encode(bytes(raw)).decode()


def test_export_is_the_standard_envelope_byte_exact(led: Ledger, corpus: Path) -> None:
    subject, att, key = _signed(led, corpus)
    exported = led.run("attestation", "export", att).stdout_bytes
    assert exported.endswith(b"\n")
    body = exported[:-1]
    assert rfc8785.dumps(json.loads(body)) == body
    envelope = parse_envelope(json.loads(body))
    raw = led.run("show", subject, "--raw").stdout_bytes
    assert envelope.payload == raw
    assert "sha256:" + hashlib.sha256(raw).hexdigest() == subject
    assert envelope.payload_type == payload_type_for("verification-result")
    public = load_public_key(Path(f"{key}.pub"))
    kid = envelope.signatures[0].keyid
    assert verify_envelope(envelope, {kid: public}) == [kid]
    out = led.dir / "att.json"
    led.run("attestation", "export", att, "-o", str(out))
    assert out.read_bytes() == body
    # securesystemslib (an independent DSSE implementation) accepts it too.
    sslib = SslibEnvelope.from_dict(json.loads(body))
    assert list(sslib.verify([SSlibKey.from_crypto(public, keyid=kid)], 1)) == [kid]
    # The ledger stores the envelope detached: the payload is not repeated.
    stored = json.loads(led.run("show", att, "--raw").stdout_bytes)
    assert "payload" not in stored and stored["subject"]["digest"] == subject


@pytest.mark.parametrize(
    ("field", "code"),
    [
        ("payload", "subject-missing"),
        ("payloadType", "payload-type-mismatch"),
        ("sig", "bad-signature"),
    ],
)
def test_tampered_exported_envelope(led: Ledger, corpus: Path, field: str, code: str) -> None:
    _subject, att, _ = _signed(led, corpus)
    envelope = json.loads(led.run("attestation", "export", att).stdout)
    led.json("attestation", "verify-envelope", _write(led, envelope, "good.json"), code=0)
    if field == "payload":
        payload = base64.b64decode(envelope["payload"]).replace(b'"passed"', b'"failed"', 1)
        envelope["payload"] = base64.b64encode(payload).decode()
    elif field == "payloadType":
        envelope["payloadType"] = payload_type_for("result-manifest")
    else:
        envelope["signatures"][0]["sig"] = _flip_sig(envelope["signatures"][0]["sig"])
    report = led.json("attestation", "verify-envelope", _write(led, envelope, "bad.json"), code=1)
    assert code in _codes(report)
    if field != "payloadType":
        # payloadType is covered by the signature, so changing it breaks that too.
        return
    assert "bad-signature" in _codes(report)


def _write(led: Ledger, value: Any, name: str) -> str:
    path = led.dir / name
    path.write_text(json.dumps(value))
    return str(path)


@pytest.mark.parametrize(
    ("field", "codes"),
    [
        ("payloadType", {"payload-type-mismatch", "bad-signature"}),
        ("sig", {"bad-signature"}),
        # Re-pointed at another result: other bytes, and another verifier named in them.
        ("subject", {"bad-signature", "wrong-verifier-id", "wrong-adapter-version"}),
        ("missing-subject", {"subject-missing"}),
        ("subject-kind", {"subject-kind-mismatch"}),
    ],
)
def test_tampered_stored_attestation(
    led: Ledger, corpus: Path, field: str, codes: set[str]
) -> None:
    subject, att, _ = _signed(led, corpus)
    other = led.append(corpus / B2_VR)
    forged = json.loads(led.run("show", att, "--raw").stdout_bytes)
    target = subject
    if field == "payloadType":
        forged["payloadType"] = "application/vnd.provledger.verification-result+JSON"
    elif field == "sig":
        forged["signatures"][0]["sig"] = _flip_sig(forged["signatures"][0]["sig"])
    elif field == "subject":
        forged["subject"]["digest"] = target = other  # the payload is now other bytes
    elif field == "missing-subject":
        forged["subject"]["digest"] = target = "sha256:" + "0" * 64
    else:
        forged["subject"]["kind"] = "result-manifest"
    # Admission refuses the forged attestation on every write path ...
    led.refused("append", _write(led, forged, "forged.json"), reason="attestation")
    # ... and one already stored (written past admission) is judged invalid.
    append_unchecked(led.db, [prepare_value(forged, "attestation")])
    report = led.check(target, code=1)
    bad = [a for a in report["attestations"] if not a["ok"]]
    assert len(bad) == 1 and {f["code"] for f in bad[0]["failures"]} == codes
    assert codes <= set(led.verify_codes(code=1))


def test_import_stores_an_external_envelope(led: Ledger, corpus: Path) -> None:
    subject, att, _ = _signed(led, corpus)
    envelope = json.loads(led.run("attestation", "export", att).stdout)
    rows = led.json("attestation", "import", _write(led, envelope, "env.json"))
    assert rows[0]["attestation"] == att and rows[0]["status"] == "present"
    envelope["signatures"][0]["sig"] = _flip_sig(envelope["signatures"][0]["sig"])
    led.refused("attestation", "import", _write(led, envelope, "bad.json"), reason="bad-signature")
    led.check(subject, code=0)  # the subject is not poisoned
    envelope["payload"] = base64.b64encode(b"{}").decode()
    led.run("attestation", "import", _write(led, envelope, "nowhere.json"), code=3)


# --- in-toto -------------------------------------------------------------------------


def test_intoto_export_verifies_under_securesystemslib(led: Ledger, corpus: Path) -> None:
    subject = _smoke(led, corpus)
    key, kid = led.new_key()
    out = led.dir / "statement.dsse.json"
    led.run("export", "intoto", subject, "--key", str(key), "-o", str(out))
    envelope = json.loads(out.read_bytes())
    assert envelope["payloadType"] == INTOTO_PAYLOAD_TYPE
    public = load_public_key(Path(f"{key}.pub"))
    sslib_key = SSlibKey.from_crypto(public, keyid=kid)
    sslib = SslibEnvelope.from_dict(copy.deepcopy(envelope))
    assert list(sslib.verify([sslib_key], 1)) == [kid]
    stmt = json.loads(sslib.payload)
    assert stmt["_type"] == STATEMENT_TYPE and stmt["predicateType"] == PREDICATE_TYPE
    [subj] = stmt["subject"]
    assert "sha256:" + subj["digest"]["sha256"] == subject
    assert subj["name"] == json.loads((corpus / SMOKE_VR).read_text())["id"]
    assert stmt["predicate"]["kind"] == "verification-result"
    assert stmt["predicate"]["ledger"]["seq"] == 1
    # stdout form: the same bytes plus a newline.
    printed = led.run("export", "intoto", subject, "--key", str(key)).stdout_bytes
    assert printed == out.read_bytes() + b"\n"
    tampered = copy.deepcopy(envelope)
    tampered["signatures"][0]["sig"] = _flip_sig(tampered["signatures"][0]["sig"])
    with pytest.raises(VerificationError):
        SslibEnvelope.from_dict(tampered).verify([sslib_key], 1)


# --- a real process ------------------------------------------------------------------


def test_subprocess_end_to_end(tmp_path: Path, corpus: Path) -> None:
    exe = Path(sys.executable).parent / "provledger"
    if not exe.exists():
        exe = Path(__file__).resolve().parents[1] / ".venv" / "bin" / "provledger"
    if not exe.exists():
        pytest.skip(f"console script absent: {exe} (install the package into .venv)")
    db = tmp_path / "ledger.db"
    env = {**os.environ, "PROVLEDGER_DB": str(db), "VERIFIER_PASS": "correct horse"}

    def run(*args: str, code: int = 0) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [str(exe), *args], env=env, capture_output=True, text=True, check=False
        )
        assert proc.returncode == code, (args, proc.stdout, proc.stderr)
        return proc

    run("init")
    key = tmp_path / "verifier.key"
    kid = run("key", "generate", str(key), "--passphrase-env", "VERIFIER_PASS").stdout.strip()
    assert key.read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
    assert key.stat().st_mode & 0o777 == 0o600
    appended = json.loads(
        run("append", "--json", str(corpus / SMOKE_RM), str(corpus / SMOKE_VR)).stdout
    )
    subject = appended[1]["digest"]
    vid, adapter, version = SMOKE_VERIFIER
    run("identity", "register", "--verifier-id", vid, "--adapter", adapter,
        "--adapter-version", version, "--public-key", f"{key}.pub")  # fmt: skip
    run("sign", subject, "--key", str(key), "--passphrase-env", "VERIFIER_PASS")
    assert json.loads(run("attestation", "check", "--json", subject).stdout)["ok"] is True
    verified = json.loads(run("verify", "--json").stdout)
    assert verified["ok"] is True and verified["entries"] == 6  # register: 3, with its batch record
    assert kid in run("identity", "list", "--json").stdout
    # The private key never entered the database.
    blob = db.read_bytes() + b"".join(
        p.read_bytes() for p in tmp_path.glob("ledger.db-*") if p.is_file()
    )
    assert b"PRIVATE KEY" not in blob


def test_attestation_tampered_inside_the_database(led: Ledger, corpus: Path) -> None:
    subject, att, _ = _signed(led, corpus)
    stored = json.loads(led.run("show", att, "--raw").stdout_bytes)
    stored["signatures"][0]["sig"] = _flip_sig(stored["signatures"][0]["sig"])
    with sqlite3.connect(led.db) as conn:  # an attacker with the file, not the CLI
        conn.execute("DROP TRIGGER objects_no_update")
        conn.execute("UPDATE objects SET data = ? WHERE digest = ?", (rfc8785.dumps(stored), att))
    codes = led.verify_codes(code=1)
    assert "digest-mismatch" in codes and "bad-signature" in codes
    # Reading the attestation back is refused: its bytes no longer hash to its digest.
    result = led.runner.invoke(app, ["attestation", "check", subject, "--db", str(led.db)])
    assert result.exit_code == 1
    assert "disagrees with its bytes" in result.stderr and att in result.stderr
