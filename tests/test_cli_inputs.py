"""What the CLI reads, read one way everywhere:

- a usage error (unknown command or option, bad or missing value) is one ``error:``
  line on stderr with the command's usage, exit 2, like every other error;
- a unique digest prefix names its object wherever a digest is read;
- ``--log-key`` takes the log's PEM public key file ``init`` writes as well as the
  verifier key string ``init`` prints.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ledger.cli import app

ROOT = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).parent / "provledger"
WORK_UNIT = ROOT / "verifiers" / "fixtures" / "calibration" / "work-unit.json"

USAGE_ERRORS = [
    (["nosuch"], "provledger: no such command 'nosuch'"),
    (["verfy"], "Did you mean 'verify'?"),
    (["log", "--bogus"], "provledger log: no such option: --bogus"),
    (["log", "--limit", "x"], "provledger log: invalid value for '--limit'"),
    (["log", "--limit", "0"], "provledger log: invalid value for '--limit'"),
    (["show"], "provledger show: missing argument 'REF'"),
    (["cohort", "audit", "--bogus"], "provledger cohort audit: no such option: --bogus"),
    (["proof", "inclusion"], "provledger proof inclusion: missing argument"),
    (["--db"], "option '--db' requires an argument"),
]


@pytest.mark.parametrize(("argv", "said"), USAGE_ERRORS)
def test_usage_errors_are_one_error_line(argv: list[str], said: str) -> None:
    result = CliRunner().invoke(app, argv, prog_name="provledger")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert said in result.stderr
    if argv != ["--db"]:  # click names no command for an option missing its value
        assert "(usage: provledger" in result.stderr and "-h for help)" in result.stderr


@pytest.mark.skipif(not EXE.exists(), reason="provledger is not installed in this venv")
def test_installed_cli_usage_error_is_one_line() -> None:
    done = subprocess.run([str(EXE), "log", "--limit", "x"], capture_output=True, text=True)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("error: provledger log: invalid value for '--limit'")
    assert done.stderr.count("\n") == 1
    # A group without its subcommand still shows the group's help (exit 2, as before).
    group = subprocess.run([str(EXE), "proof"], capture_output=True, text=True)
    assert group.returncode == 2 and "inclusion" in group.stdout


@pytest.fixture
def signed(ledger_path: Path, runner: CliRunner, tmp_path: Path) -> dict[str, str]:
    """A ledger with a WorkUnit, a registered verifier that signed it, and a checkpoint."""
    db = str(ledger_path)
    appended = json.loads(
        runner.invoke(app, ["append", str(WORK_UNIT), "--db", db, "--json"]).stdout
    )
    key = tmp_path / "verifier.key"
    assert runner.invoke(app, ["key", "generate", str(key)]).exit_code == 0
    reg = runner.invoke(
        app,
        [
            "identity", "register", "--db", db, "--verifier-id", "idkmesh-local-verifier",
            "--adapter", "deterministic-patch-verifier", "--adapter-version", "0.3.0",
            "--public-key", f"{key}.pub", "--json",
        ],
    )  # fmt: skip
    assert reg.exit_code == 0, reg.output
    subject = appended[0]["digest"]
    sign = runner.invoke(app, ["sign", subject, "--key", str(key), "--db", db, "--json"])
    assert sign.exit_code == 0, sign.output
    assert runner.invoke(app, ["checkpoint", "--db", db]).exit_code == 0
    return {
        "db": db,
        "subject": subject,
        "attestation": json.loads(sign.stdout)["attestation"],
        "identity": json.loads(reg.stdout)["identity"],
    }


def _json(runner: CliRunner, *args: str) -> dict[str, object]:
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, (args, result.output)
    value: dict[str, object] = json.loads(result.stdout)
    return value


def test_prefixes_name_their_object_everywhere(signed: dict[str, str], runner: CliRunner) -> None:
    db = signed["db"]
    attestation = signed["attestation"]
    full = runner.invoke(app, ["attestation", "export", attestation, "--db", db])
    short = runner.invoke(app, ["attestation", "export", attestation[:15], "--db", db])
    assert short.exit_code == 0 and short.stdout == full.stdout != ""
    identity = signed["identity"]
    shown = _json(runner, "identity", "show", identity[:15], "--db", db)
    assert [i["digest"] for i in shown["identities"]] == [identity]  # type: ignore[attr-defined]
    for args in (["show"], ["proof", "inclusion"], ["attestation", "check"]):
        by_prefix = _json(runner, *args, signed["subject"][:13], "--db", db)
        assert by_prefix == _json(runner, *args, signed["subject"], "--db", db)
    ambiguous = runner.invoke(app, ["attestation", "export", "sha256:", "--db", db])
    assert ambiguous.exit_code == 3


def test_log_key_takes_the_pem_file_init_writes(signed: dict[str, str], runner: CliRunner) -> None:
    db = signed["db"]
    pem = f"{db}.log.key.pub"
    assert Path(pem).read_text().startswith("-----BEGIN PUBLIC KEY-----")
    by_pem = _json(runner, "verify", "--db", db, "--log-key", pem)
    string = runner.invoke(app, ["verify", "--db", db, "--json"])
    assert by_pem["ok"] is True and by_pem == json.loads(string.stdout)
    # Another key's PEM file: the checkpoint's signature does not verify (exit 1).
    other = runner.invoke(app, ["verify", "--db", db, "--log-key", f"{db}.authority.key.pub"])
    assert other.exit_code == 1 and "checkpoint-signature" in other.stdout
    bundle = Path(db).with_name("b.json")
    exported = runner.invoke(
        app, ["bundle", "export", signed["subject"], "-o", str(bundle), "--db", db]
    )
    assert exported.exit_code == 0, exported.output
    verified = _json(runner, "bundle", "verify", str(bundle), "--log-key", pem)
    assert verified["ok"] is True
    refused = runner.invoke(
        app, ["bundle", "verify", str(bundle), "--log-key", f"{db}.authority.key.pub"]
    )
    assert refused.exit_code == 1 and refused.stderr.startswith("error: bundle part checkpoint")
    # Nothing to name the key with (the bundle is unreadable): said in one line, exit 3.
    bundle.write_text("not a bundle")
    nameless = runner.invoke(app, ["bundle", "verify", str(bundle), "--log-key", pem])
    assert nameless.exit_code == 3 and "no log origin" in nameless.stderr


def test_a_witness_takes_the_pem_file_init_writes(
    signed: dict[str, str], runner: CliRunner, tmp_path: Path
) -> None:
    """``witness init --log-key`` and ``witness add-log`` take ``<db>.log.key.pub``: the
    key is named by the origin of the ledger beside it, and is the ledger's verifier key."""
    from ledger.store.sqlite import open_store

    db = signed["db"]
    with open_store(Path(db), readonly=True) as store:
        origin, vkey = store.get_meta("origin"), store.get_meta("log_verifier_key")
    state = tmp_path / "w1.json"
    made = _json(runner, "witness", "init", "w.example/w1", "--state", str(state),
                 "--log-key", f"{db}.log.key.pub")  # fmt: skip
    assert made["logs"] == [origin]
    assert json.loads(state.read_text())["logs"][origin]["log_key"] == vkey
    other = tmp_path / "w2.json"
    assert (
        runner.invoke(app, ["witness", "init", "w.example/w2", "--state", str(other)]).exit_code
        == 0
    )
    added = runner.invoke(app, ["witness", "add-log", f"{db}.log.key.pub", "--state", str(other)])
    assert added.exit_code == 0 and added.stdout == f"witnessing log {origin}\n"
    assert json.loads(other.read_text())["logs"][origin]["log_key"] == vkey
    # A PEM file beside no ledger names no log: one error line, exit 3.
    loose = tmp_path / "loose.log.key.pub"
    loose.write_bytes(Path(f"{db}.log.key.pub").read_bytes())
    refused = runner.invoke(app, ["witness", "add-log", str(loose), "--state", str(other)])
    assert refused.exit_code == 3
    assert refused.stderr.startswith("error: verifier key") and refused.stderr.count("\n") == 1
