"""Keys and verifier identities through the CLI: generate, register, list, show, revoke."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from ledger_state import append_unchecked, state
from typer.testing import CliRunner, Result

from ledger.cli import app
from ledger.store.prepared import prepare_value
from ledger.store.sqlite import open_store
from ledger.trust.attestation import attest
from ledger.trust.keys import (
    Ed25519Signer,
    key_id,
    load_private_key,
    load_public_key,
    public_key_raw,
)

VERIFIER = ("phase0-independent-verifier", "phase0-schema-verifier", "0.1")


def _run(runner: CliRunner, *args: str, code: int = 0) -> Result:
    result = runner.invoke(app, list(args))
    assert result.exit_code == code, (args, result.exit_code, result.output)
    if code not in (0, 1, 2):
        assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1
    return result


def _json(runner: CliRunner, *args: str) -> Any:
    return json.loads(_run(runner, *args, "--json").stdout)


def _key(runner: CliRunner, path: Path) -> str:
    kid: str = _run(runner, "key", "generate", str(path)).stdout.strip()
    return kid


def _register(
    runner: CliRunner, db: Path, key: Path, verifier: tuple[str, ...] = VERIFIER, code: int = 0
) -> Any:
    vid, adapter, *versions = verifier
    args = ["identity", "register", "--db", str(db), "--verifier-id", vid, "--adapter", adapter]
    for version in versions:
        args += ["--adapter-version", version]
    result = _run(runner, *args, "--public-key", f"{key}.pub", "--json", code=code)
    return json.loads(result.stdout) if code == 0 else None


def _size(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM entries").fetchone()[0])


def _authority(db: Path) -> Path:
    return db.with_name(db.name + ".authority.key")


# --- key generate --------------------------------------------------------------------


def test_key_generate(tmp_path: Path, runner: CliRunner) -> None:
    path = tmp_path / "v.key"
    kid = _key(runner, path)
    public = load_public_key(Path(f"{path}.pub"))
    assert kid == hashlib.sha256(public_key_raw(public)).hexdigest() == key_id(public)
    assert path.stat().st_mode & 0o777 == 0o600
    assert Path(f"{path}.pub").stat().st_mode & 0o777 == 0o644
    assert path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    # Never overwritten.
    before = path.read_bytes()
    _run(runner, "key", "generate", str(path), code=3)
    assert path.read_bytes() == before
    info = _json(runner, "key", "generate", str(tmp_path / "w.key"))
    assert info["public_key"] == str(tmp_path / "w.key.pub") and len(info["key_id"]) == 64


def test_key_generate_with_passphrase(
    tmp_path: Path, runner: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KEY_PASS", "s3cret")
    monkeypatch.setenv("EMPTY_PASS", "")
    monkeypatch.delenv("UNSET_PASS", raising=False)
    path = tmp_path / "v.key"
    kid = _run(runner, "key", "generate", str(path), "--passphrase-env", "KEY_PASS").stdout.strip()
    assert path.read_bytes().startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
    assert key_id(load_private_key(path, b"s3cret").public_key()) == kid
    for var in ("UNSET_PASS", "EMPTY_PASS"):
        result = _run(
            runner, "key", "generate", str(tmp_path / f"{var}.key"), "--passphrase-env", var,
            code=3,
        )  # fmt: skip
        assert var in result.stderr
        assert not (tmp_path / f"{var}.key").exists()


# --- register ------------------------------------------------------------------------


def test_register_appends_identity_and_authority_attestation_together(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    kid = _key(runner, tmp_path / "v.key")
    info = _register(runner, ledger_path, tmp_path / "v.key", (*VERIFIER, "0.2", "0.1"))
    assert info["key_id"] == kid and info["status"] == "new"
    entries = _json(runner, "log", "--db", str(ledger_path))
    assert [(e["seq"], e["kind"]) for e in entries] == [
        (0, "verifier-identity"),
        (1, "attestation"),
        (2, "batch"),  # the store's record of the batch (it added a governed record)
    ]
    assert [e["digest"] for e in entries[:2]] == [info["identity"], info["attestation"]]
    identity = _json(runner, "show", "--db", str(ledger_path), info["identity"])["object"]
    assert identity == {
        "provledger_kind": "verifier-identity",
        "schema_version": "0.1",
        "verifier_id": VERIFIER[0],
        "adapter": VERIFIER[1],
        "adapter_versions": ["0.1", "0.2"],
        "public_key": {
            "algorithm": "ed25519",
            "raw": identity["public_key"]["raw"],
            "key_id": kid,
        },
    }
    raw = base64.b64decode(identity["public_key"]["raw"])
    assert hashlib.sha256(raw).hexdigest() == kid
    authority_id = key_id(load_private_key(_authority(ledger_path)).public_key())
    att = _json(runner, "show", "--db", str(ledger_path), info["attestation"])["object"]
    assert att["subject"] == {"digest": info["identity"], "kind": "verifier-identity"}
    assert att["signatures"][0]["keyid"] == authority_id
    [row] = _json(runner, "identity", "list", "--db", str(ledger_path))
    assert row["status"] == "active" and row["authorized_at"] == 1 and row["key_id"] == kid
    # Registering the same binding again appends nothing.
    again = _register(runner, ledger_path, tmp_path / "v.key", (*VERIFIER, "0.1", "0.2"))
    assert again["status"] == "present" and _size(ledger_path) == 3  # nothing new, no record
    _run(runner, "verify", "--db", str(ledger_path))


def test_register_refusals_leave_the_ledger_unchanged(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    _key(runner, tmp_path / "v.key")
    _key(runner, tmp_path / "rogue.key")
    db = str(ledger_path)
    base = ["identity", "register", "--db", db, "--verifier-id", VERIFIER[0]]
    base += ["--adapter", VERIFIER[1], "--adapter-version", VERIFIER[2]]
    # Not the ledger's authority key.
    result = _run(
        runner, *base, "--public-key", str(tmp_path / "v.key.pub"),
        "--authority-key", str(tmp_path / "rogue.key"), code=4,
    )  # fmt: skip
    assert "authority key" in result.stderr
    # The authority and log keys cannot be verifier keys.
    for name in ("authority", "log"):
        pub = ledger_path.with_name(f"{ledger_path.name}.{name}.key.pub")
        _run(runner, *base, "--public-key", str(pub), code=4)
    assert _size(ledger_path) == 0
    # One verifier id per key.
    _register(runner, ledger_path, tmp_path / "v.key")
    result = _register(runner, ledger_path, tmp_path / "v.key", ("other", "a", "1"), code=4)
    assert _size(ledger_path) == 3  # identity, attestation, batch record
    # Bad input.
    _run(runner, *base[:-2], "--public-key", str(tmp_path / "v.key.pub"), code=2)
    _run(runner, *base, "--public-key", str(tmp_path / "v.key"), code=3)  # a private key
    _run(runner, *base, "--public-key", str(tmp_path / "none.pub"), code=3)


def test_authority_key_file_rules(ledger_path: Path, runner: CliRunner, tmp_path: Path) -> None:
    _key(runner, tmp_path / "v.key")
    authority = _authority(ledger_path)
    authority.chmod(0o644)
    _register(runner, ledger_path, tmp_path / "v.key", code=3)  # group/others can read it
    authority.chmod(0o600)
    # An unencrypted key given a passphrase is refused too.
    vid, adapter, version = VERIFIER
    result = runner.invoke(
        app,
        ["identity", "register", "--db", str(ledger_path), "--verifier-id", vid,
         "--adapter", adapter, "--adapter-version", version,
         "--public-key", str(tmp_path / "v.key.pub"), "--passphrase-env", "HOME"],
    )  # fmt: skip
    assert result.exit_code == 3 and "not encrypted" in result.stderr
    assert _size(ledger_path) == 0


def test_private_keys_never_enter_the_database(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    _key(runner, tmp_path / "v.key")
    info = _register(runner, ledger_path, tmp_path / "v.key")
    _run(
        runner,
        "identity",
        "revoke",
        info["key_id"],
        "--reason",
        "retired",
        "--db",
        str(ledger_path),
    )
    secrets = []
    for path in (tmp_path / "v.key", _authority(ledger_path)):
        private = load_private_key(path)
        secrets.append(
            private.private_bytes(
                serialization.Encoding.Raw,
                serialization.PrivateFormat.Raw,
                serialization.NoEncryption(),
            )
        )
        secrets.append(path.read_bytes())
    blob = b"".join(
        p.read_bytes() for p in tmp_path.glob("ledger.db*") if not p.name.endswith("key")
    )
    assert len(blob) > 0
    for secret in secrets:
        assert secret not in blob and base64.b64encode(secret) not in blob
    assert b"PRIVATE KEY" not in blob


# --- list / show ---------------------------------------------------------------------


def test_list_and_show(ledger_path: Path, runner: CliRunner, tmp_path: Path) -> None:
    db = str(ledger_path)
    k1, k2 = _key(runner, tmp_path / "a.key"), _key(runner, tmp_path / "b.key")
    first = _register(runner, ledger_path, tmp_path / "a.key")
    _register(runner, ledger_path, tmp_path / "b.key", ("other-verifier", "x", "1"))
    assert len(_json(runner, "identity", "list", "--db", db)) == 2
    only = _json(runner, "identity", "list", "--db", db, "--verifier-id", "other-verifier")
    assert [r["key_id"] for r in only] == [k2]
    for ref in (k1, VERIFIER[0], first["identity"]):
        shown = _json(runner, "identity", "show", ref, "--db", db)
        assert [i["key_id"] for i in shown["identities"]] == [k1]
    human = _run(runner, "identity", "show", k1, "--db", db).stdout
    assert VERIFIER[0] in human and "active" in human
    assert "other-verifier" in _run(runner, "identity", "list", "--db", db).stdout
    _run(runner, "identity", "show", "nobody", "--db", db, code=3)


# --- revoke --------------------------------------------------------------------------


def test_revoke_rules(ledger_path: Path, runner: CliRunner, tmp_path: Path) -> None:
    db = str(ledger_path)
    kid = _key(runner, tmp_path / "v.key")
    _register(runner, ledger_path, tmp_path / "v.key")

    def revoke(key: str, reason: str, code: int = 0) -> Result:
        return _run(runner, "identity", "revoke", key, "--reason", reason, "--db", db, code=code)

    revoke("0" * 64, "retired", code=3)  # no identity uses it
    revoke("not-a-key-id", "retired", code=3)
    revoke(kid, "stolen", code=2)
    authority_id = key_id(load_private_key(_authority(ledger_path)).public_key())
    assert "authority" in revoke(authority_id, "compromised", code=4).stderr
    size = _size(ledger_path)
    out = revoke(kid, "retired").stdout
    assert "retired" in out and _size(ledger_path) == size + 3  # with the batch record
    revoke(kid, "retired", code=4)
    revoke(kid, "compromised")  # escalation is allowed
    revoke(kid, "retired", code=4)
    revoke(kid, "compromised", code=4)
    shown = _json(runner, "identity", "show", kid, "--db", db)
    assert [r["reason"] for r in shown["revocations"]] == ["retired", "compromised"]
    assert shown["identities"][0]["status"] == "compromised"
    revocation = _json(runner, "show", shown["revocations"][0]["digest"], "--db", db)["object"]
    assert revocation == {
        "provledger_kind": "revocation",
        "schema_version": "0.1",
        "key_id": kid,
        "reason": "retired",
    }
    _run(runner, "verify", "--db", db)  # revocations are not problems by themselves


# --- governance objects without the authority ----------------------------------------


def _identity_doc(public: Path, verifier_id: str = VERIFIER[0]) -> dict[str, Any]:
    raw = public_key_raw(load_public_key(public))
    return {
        "provledger_kind": "verifier-identity",
        "schema_version": "0.1",
        "verifier_id": verifier_id,
        "adapter": VERIFIER[1],
        "adapter_versions": [VERIFIER[2]],
        "public_key": {
            "algorithm": "ed25519",
            "raw": base64.b64encode(raw).decode(),
            "key_id": key_id(raw),
        },
    }


def _append_doc(runner: CliRunner, db: Path, doc: Any, name: str, code: int = 0) -> str:
    path = db.parent / name
    path.write_text(json.dumps(doc))
    result = _run(runner, "append", "--db", str(db), "--json", str(path), code=code)
    return str(json.loads(result.stdout)[0]["digest"]) if code == 0 else ""


def _append_unattested(runner: CliRunner, db: Path, doc: Any, name: str) -> str:
    """``append`` refuses a governed record without the authority's attestation (exit 4,
    ledger unchanged); it is then stored past admission, as a ledger written before
    admission existed may hold it, to check that it never counts."""
    before = state(db)
    path = db.parent / name
    path.write_text(json.dumps(doc))
    refused = _run(runner, "append", "--db", str(db), str(path), code=4)
    assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1
    assert "authority-governed" in refused.stderr
    assert state(db) == before
    return append_unchecked(db, [prepare_value(doc)])[0]


def test_identity_without_authority_attestation(
    ledger_path: Path, runner: CliRunner, tmp_path: Path, corpus: Path
) -> None:
    db = str(ledger_path)
    _key(runner, tmp_path / "v.key")
    _append_unattested(runner, ledger_path, _identity_doc(tmp_path / "v.key.pub"), "id.json")
    [row] = _json(runner, "identity", "list", "--db", db)
    assert row["status"] == "unauthorized" and row["authorized_at"] is None
    report = json.loads(_run(runner, "verify", "--db", db, "--json", code=1).stdout)
    assert [f["code"] for f in report["findings"]] == ["identity-not-authorized"]
    subject = _append_doc(
        runner, ledger_path,
        json.loads((corpus / "examples/results/phase0-smoke.verification-result.json").read_text()),
        "vr.json",
    )  # fmt: skip
    refused = _run(runner, "sign", subject, "--key", str(tmp_path / "v.key"), "--db", db, code=4)
    assert "identity-not-authorized" in refused.stderr
    with open_store(ledger_path, readonly=True) as store:
        signed = attest(store, subject, Ed25519Signer.from_file(tmp_path / "v.key"))
    append_unchecked(ledger_path, [signed])
    check = json.loads(
        _run(runner, "attestation", "check", subject, "--db", db, "--json", code=1).stdout
    )
    assert [f["code"] for f in check["attestations"][0]["failures"]] == ["identity-not-authorized"]


def test_identity_with_wrong_declared_key_id(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    _key(runner, tmp_path / "v.key")
    doc = _identity_doc(tmp_path / "v.key.pub")
    doc["public_key"]["key_id"] = "f" * 64
    _append_unattested(runner, ledger_path, doc, "id.json")
    [row] = _json(runner, "identity", "list", "--db", str(ledger_path))
    assert row["status"] == "invalid-key"
    report = json.loads(_run(runner, "verify", "--db", str(ledger_path), "--json", code=1).stdout)
    assert {f["code"] for f in report["findings"]} == {
        "identity-key-mismatch",
        "identity-not-authorized",
    }


def test_revocation_without_authority_is_not_in_force(
    ledger_path: Path, runner: CliRunner, tmp_path: Path
) -> None:
    db = str(ledger_path)
    kid = _key(runner, tmp_path / "v.key")
    _register(runner, ledger_path, tmp_path / "v.key")
    doc = {"provledger_kind": "revocation", "schema_version": "0.1", "key_id": kid}
    _append_doc(runner, ledger_path, {**doc, "reason": "lost"}, "bad.json", code=3)  # schema
    _append_unattested(runner, ledger_path, {**doc, "reason": "compromised"}, "rev.json")
    [row] = _json(runner, "identity", "list", "--db", db)
    assert row["status"] == "active"
    report = json.loads(_run(runner, "verify", "--db", db, "--json", code=1).stdout)
    assert [f["code"] for f in report["findings"]] == ["revocation-not-authorized"]


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("adapter_versions",), []),
        (("adapter_versions",), ["0.1", "0.1"]),
        (("public_key", "algorithm"), "rsa"),
        (("public_key", "raw"), "AAAA"),
        (("verifier_id",), ""),
    ],
)
def test_identity_schema(
    ledger_path: Path, runner: CliRunner, tmp_path: Path, path: tuple[str, ...], value: Any
) -> None:
    _key(runner, tmp_path / "v.key")
    doc = _identity_doc(tmp_path / "v.key.pub")
    target = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    _append_doc(runner, ledger_path, doc, "id.json", code=3)
