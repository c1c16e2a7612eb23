"""Re-judgement through the installed CLI: reproduced, differs, cannot replay; a lying
registered verifier caught; a bundle re-judged offline with no database.

The ledgers are built in-process from the toy lineage (``toy_lineage``); every replay
asserted here runs in the installed ``provledger`` (``provenance --replay``, ``cohort
audit --replay``, ``bundle verify --replay``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from toy_lineage import EXE, PLAIN, RUN, TASK, TOY, Toy, plain_cohort

from verifiers.replay import CLOCK_MEMBERS, MemoryInputs, differing_paths, replay


def decoy_run(toy: Toy) -> tuple[str, dict[str, Any]]:
    """Judge a decoy of task 002 (adds the assertion, keeps the old one): rejected."""
    root = toy.work / "decoy"
    shutil.copytree(RUN / "candidate", root)
    patch = (root / "candidate.patch").read_text("utf-8")
    decoy = patch.replace(
        "-    assert divide(1, 0) is None\n", "     assert divide(1, 0) is None\n"
    )
    decoy = decoy.replace("@@ -1,5 +1,8 @@", "@@ -1,5 +1,9 @@")
    (root / "candidate.patch").write_bytes(decoy.encode())
    manifest = json.loads((RUN / "result-manifest.json").read_text("utf-8"))
    manifest["id"] = manifest["id"].replace("attempt-1", "attempt-2")
    manifest["attempt"] = 2
    import hashlib

    manifest["produced_artifacts"][0]["digest"] = (
        "sha256:" + hashlib.sha256(decoy.encode()).hexdigest()
    )
    path = toy.write("decoy-manifest.json", manifest)
    info = toy.cli_json(
        "run-verifier", "--work-unit", str(TOY / "work-units" / "002-division-test.json"),
        "--plan", str(TOY / "evaluators" / "002-division-test-v0.4.json"),
        "--manifest", str(path), "--candidate-root", str(root), "--key", str(toy.key),
        code=1,
    )  # fmt: skip
    assert info["recommendation"] == "reject_candidate"
    digest = str(info["result_digest"])
    return digest, dict(toy.cli_json("show", digest)["object"])


def forge_accept(toy: Toy, result: dict[str, Any]) -> str:
    """The rejected result turned into a false accept, appended and signed with the
    registered verifier's own key: a valid signature over a wrong verdict."""
    lie = json.loads(json.dumps(result))
    lie["status"] = "passed"
    lie["decision_support"]["recommendation"] = "accept_candidate"
    for check in lie["checks"]:
        check["status"] = "passed"
    out = toy.cli_json("append", str(toy.write("lie.json", lie)))
    digest = str(out[0]["digest"])
    toy.cli("sign", digest, "--key", str(toy.key))
    return digest


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One toy ledger: the repair listed by a cohort (pre-registered), a decoy's honest
    rejection, and a forged accept of the decoy signed by the registered key."""
    work = tmp_path_factory.mktemp("replay")
    toy = Toy(work).base()
    toy.freeze(plain_cohort())
    repair, _ = toy.run()
    toy.cli("cohort", "record-outcome", PLAIN, "--task", TASK, "--result", repair,
            "--signature", "solo-baseline-v1")  # fmt: skip
    honest, rejected = decoy_run(toy)
    lie = forge_accept(toy, rejected)
    toy.cli("checkpoint")
    return {"toy": toy, "repair": repair, "honest": honest, "lie": lie}


def test_replay_reproduces_a_stored_result(ledger: dict[str, Any]) -> None:
    toy: Toy = ledger["toy"]
    report = toy.exe_json("provenance", ledger["repair"], "--replay")
    assert report["ok"] is True
    assert report["replay"]["status"] == "reproduced"
    assert report["replay"]["recomputed_digest"] == ledger["repair"]
    assert report["replay"]["uncompared"] == []
    honest = toy.exe_json("provenance", ledger["honest"], "--replay")
    assert honest["replay"]["status"] == "reproduced"  # a rejection reproduces too
    text = toy.exe("provenance", ledger["repair"], "--replay")
    assert "passed replay: reproduced" in text
    audit = toy.exe_json("cohort", "audit", PLAIN, "--replay")
    assert [r["status"] for r in audit["replay"]] == ["reproduced"]
    assert audit["ok"] is True
    # Without --replay nothing is re-run (and the JSON says so).
    assert toy.exe_json("cohort", "audit", PLAIN)["replay"] is None


def test_a_lying_registered_verifier_is_caught(ledger: dict[str, Any]) -> None:
    toy: Toy = ledger["toy"]
    report = toy.exe_json("provenance", ledger["lie"], "--replay", code=1)
    checks = {c["name"]: c for c in report["checks"]}
    # The signature is valid and by the registered verifier: who said it is not in doubt.
    assert checks["attestation"]["status"] == "passed"
    assert report["replay"]["status"] == "differs"
    differing = set(report["replay"]["differing"])
    assert {"status", "decision_support.recommendation"} <= differing
    assert "checks[1].status" in differing
    assert report["replay"]["recomputed_digest"] == ledger["honest"]
    text = toy.exe("provenance", ledger["lie"], "--replay", code=1)
    assert "FAILED replay: DIFFERS" in text and "decision_support.recommendation" in text
    # Without --replay the lie passes every other check of its chain.
    assert toy.exe_json("provenance", ledger["lie"])["ok"] is True


def test_a_cohort_counting_the_lie_fails_its_replay(tmp_path: Path) -> None:
    toy = Toy(tmp_path).base()
    toy.freeze(plain_cohort())
    honest, rejected = decoy_run(toy)
    lie = forge_accept(toy, rejected)
    toy.cli("cohort", "record-outcome", PLAIN, "--task", TASK, "--result", lie,
            "--signature", "solo-baseline-v1")  # fmt: skip
    assert toy.exe_json("cohort", "audit", PLAIN)["ok"] is True  # the lie looks fine
    report = toy.exe_json("cohort", "audit", PLAIN, "--replay", code=1)
    assert [f["code"] for f in report["findings"]] == ["attempt.replay.differs"]
    assert report["replay"][0]["recomputed_digest"] == honest
    text = toy.exe("cohort", "audit", PLAIN, "--replay", code=1)
    assert "attempt.replay.differs" in text and "DIFFERS" in text


def test_cannot_replay_names_what_the_ledger_lacks(tmp_path: Path) -> None:
    """A result appended with its documents but without the worker's files."""
    toy = Toy(tmp_path).base()
    repair, result = toy.run()
    bare = Toy(tmp_path / "bare")
    bare.work.mkdir()
    bare.base()
    manifest = toy.cli_json("show", "--raw", result["provenance"]["result_manifest_digest"])
    bare.cli("append", str(bare.write("m.json", manifest)))
    bare.cli("append", str(bare.write("r.json", json.loads(toy.cli("show", "--raw", repair)))))
    bare.cli("checkpoint")
    report = bare.exe_json("provenance", repair, "--replay", code=1)
    replayed = report["replay"]
    assert replayed["status"] == "cannot_replay"
    patch = result["evidence"][1]["digest"]
    assert [m.split()[0] for m in replayed["missing"]] == ["candidate", "log", "log"]
    assert any(patch in m and "candidate.patch" in m for m in replayed["missing"])
    assert "the ledger lacks 3 input(s)" in replayed["reason"]


def test_cannot_replay_a_verifier_version_this_build_lacks(tmp_path: Path) -> None:
    toy = Toy(tmp_path).base()
    _, result = toy.run()
    other = json.loads(json.dumps(result))
    other["verifier"]["adapter_version"] = "9.9.9"
    out = toy.cli_json("append", str(toy.write("other.json", other)))
    toy.cli("checkpoint")
    report = toy.exe_json("provenance", out[0]["digest"], "--replay", code=1)
    assert report["replay"]["status"] == "cannot_replay"
    assert "9.9.9" in report["replay"]["reason"] and report["replay"]["missing"] == []


def _relabelled(result: dict[str, Any], release: str | None) -> dict[str, Any]:
    """``result`` naming verifier release ``release`` (None: naming none, as upstream's)."""
    from verifiers.releases import RELEASE_KEY, TOOL_NAME

    out = json.loads(json.dumps(result))
    tools = out["provenance"]["environment"]["tool_versions"]
    if release is None:
        del out["extensions"][RELEASE_KEY]
        del tools[TOOL_NAME]
    else:
        out["extensions"][RELEASE_KEY] = release
        tools[TOOL_NAME] = release
    return out


def test_replay_judges_with_the_release_the_result_names(tmp_path: Path) -> None:
    """A result recorded by release 0.1.0 re-derives its own bytes (the re-run uses the
    release it names, not the current one); a release this build lacks, or none named
    (upstream's verifier), cannot replay and says which."""
    from verifiers.releases import CURRENT

    toy = Toy(tmp_path).base()
    current, result = toy.run()
    assert result["extensions"]["org.provledger.verifier.package_version"] == CURRENT.version
    assert CURRENT.version != "0.1.0"
    digests = {}
    for release in ("0.1.0", "0.0.9", None):
        path = toy.write(f"release-{release}.json", _relabelled(result, release))
        digests[release] = str(toy.cli_json("append", str(path))[0]["digest"])
    toy.cli("checkpoint")
    older = toy.exe_json("provenance", digests["0.1.0"], "--replay", code=1)["replay"]  # unsigned
    assert older["status"] == "reproduced", older
    assert older["recomputed_digest"] == digests["0.1.0"] != current
    unknown = toy.exe_json("provenance", digests["0.0.9"], "--replay", code=1)["replay"]
    assert unknown["status"] == "cannot_replay"
    assert "SOV-VERIFIER-RELEASE" in unknown["reason"] and "got 0.0.9" in unknown["reason"]
    none = toy.exe_json("provenance", digests[None], "--replay", code=1)["replay"]
    assert none["status"] == "cannot_replay" and "got None" in none["reason"]


def _meta(toy: Toy, key: str) -> str:
    import sqlite3

    with sqlite3.connect(toy.db) as conn:
        (value,) = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
    return str(value)


def _offline(work: Path, *args: str, code: int) -> str:
    """The installed provledger in a folder holding no ledger, with no PROVLEDGER_DB."""
    env = {k: v for k, v in os.environ.items() if k != "PROVLEDGER_DB"}
    done = subprocess.run(
        [str(EXE), *args], cwd=work, env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == code, (args, done.stdout[-2000:], done.stderr)
    assert not (work / "ledger.db").exists()
    return done.stdout


def test_a_bundle_is_replayed_offline(ledger: dict[str, Any], tmp_path: Path) -> None:
    toy: Toy = ledger["toy"]
    key = _meta(toy, "log_verifier_key")
    offline = tmp_path / "offline"
    offline.mkdir()
    for name in ("repair", "lie"):
        toy.cli("bundle", "export", ledger[name], "-o", str(offline / f"{name}.bundle"),
                "--with-inputs")  # fmt: skip
    toy.cli("bundle", "export", ledger["repair"], "-o", str(offline / "plain.bundle"))
    good = json.loads(
        _offline(
            offline,
            "bundle",
            "verify",
            "repair.bundle",
            "--log-key",
            key,
            "--replay",
            "--json",
            code=0,
        )
    )
    assert good["replay"]["status"] == "reproduced"
    assert [i["kind"] for i in good["inputs"]] == [
        "work-unit", "evaluator-plan", "result-manifest", "blob", "blob", "blob",
    ]  # fmt: skip
    lie = json.loads(
        _offline(
            offline,
            "bundle",
            "verify",
            "lie.bundle",
            "--log-key",
            key,
            "--replay",
            "--json",
            code=1,
        )
    )
    assert lie["replay"]["status"] == "differs"
    assert "decision_support.recommendation" in lie["replay"]["differing"]
    plain = _offline(offline, "bundle", "verify", "plain.bundle", "--log-key", key, "--replay",
                     code=1)  # fmt: skip
    assert "cannot_replay: the bundle lacks 3 input(s)" in plain
    # Without --replay the plain bundle verifies as before.
    _offline(offline, "bundle", "verify", "plain.bundle", "--log-key", key, code=0)


def test_a_changed_carried_input_fails_the_bundle(ledger: dict[str, Any], tmp_path: Path) -> None:
    """The inputs are proven like the subject: a changed byte is named (input[i])."""
    toy: Toy = ledger["toy"]
    key = _meta(toy, "log_verifier_key")
    path = tmp_path / "r.bundle"
    toy.cli("bundle", "export", ledger["repair"], "-o", str(path), "--with-inputs")
    value = json.loads(path.read_bytes())
    patch = value["inputs"][3]
    data = bytearray(base64.b64decode(patch["data"]))
    data[-2] ^= 1
    patch["data"] = base64.b64encode(bytes(data)).decode()
    from ledger.encoding.canonical import canonicalize

    path.write_bytes(canonicalize(value) + b"\n")
    out = _offline(tmp_path, "bundle", "verify", "r.bundle", "--log-key", key, "--replay",
                   "--json", code=1)  # fmt: skip
    assert json.loads(out)["part"] == "input[3]"


def test_differing_paths_name_leaves() -> None:
    a = {"status": "passed", "checks": [{"status": "passed"}, {"id": 1}], "x": 1}
    b = {"status": "failed", "checks": [{"status": "failed"}, {"id": 1}], "y": 1}
    assert differing_paths(a, b) == ["checks[0].status", "status", "x", "y"]
    assert differing_paths([1], [1, 2]) == ["(document)"]
    assert differing_paths(1, 1.0) == ["(document)"]  # an int is not a float in JSON here
    assert differing_paths(a, a) == []


def test_unreadable_clock_readings_are_left_out_and_said(ledger: dict[str, Any]) -> None:
    """A result whose stored times cannot be read back is compared without the three
    clock members, and the report says which (no silent leniency)."""
    toy: Toy = ledger["toy"]
    from cohorts.rejudge import StoreInputs
    from ledger.encoding.canonical import canonicalize
    from ledger.schema.validation import validate
    from ledger.store.sqlite import open_store

    with open_store(toy.db, readonly=True) as store:
        obj = store.get(ledger["repair"])
        assert obj is not None
        value = json.loads(obj.data)
        value["started_at"] = "not a time"
        result = replay(canonicalize(value), StoreInputs(store), validate)
    # Everything but the clock members is compared, and agrees; the report says which
    # members were left out.
    assert result.status == "reproduced"
    assert result.uncompared == CLOCK_MEMBERS
    assert "not compared" in result.reason
    value["status"] = "failed"
    with open_store(toy.db, readonly=True) as store:
        changed = replay(canonicalize(value), StoreInputs(store), validate)
    assert changed.status == "differs" and changed.differing == ("status",)


def test_memory_inputs_find_documents_by_either_digest() -> None:
    from ledger.encoding.canonical import canonicalize
    from ledger.encoding.digest import legacy_digest, sha256_digest

    value = {"b": 1, "a": "\u00e9"}
    raw = canonicalize(value)
    inputs = MemoryInputs([("work-unit", raw), ("blob", b"x")])
    assert inputs.find(sha256_digest(raw)) == inputs.find(legacy_digest(value))
    assert inputs.find(sha256_digest(b"x")) is not None
    assert inputs.find("sha256:" + "0" * 64) is None


def test_upstream_results_name_exactly_what_is_missing(corpus: Path, tmp_path: Path) -> None:
    """On the real corpus no stored result can be re-judged, and each replay names the
    inputs the corpus does not hold, by role, locator and digest."""
    toy = Toy(tmp_path)
    toy.cli("init")
    toy.cli("import", "idkmesh", str(corpus))
    toy.cli("checkpoint")
    found: dict[str, list[str]] = {}
    for entry in toy.cli_json("log", "--kind", "verification-result"):
        report = toy.exe_json("provenance", entry["digest"], "--replay", code=1)
        assert report["replay"]["status"] == "cannot_replay"
        found[entry["digest"]] = report["replay"]["missing"]
    successor_five = "sha256:05cde97b8ce33868c602f05db053e2156c716394a2d1fc2fc0b76c48558cc1fa"
    assert found[successor_five] == [
        "candidate candidate-patch (candidate.patch)"
        " sha256:d20c895d09e2f9521d8c1451cae29f9f859479f2f3401d81ba8b839ec87769eb",
        "log stdout (stdout.txt)"
        " sha256:445436e0da35f30d64d60b250208c49422bc280ec795253df8e3684d59f2282c",
        "log stderr (stderr.txt)"
        " sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    ]
    plan = "evaluator plan sha256:" + "6" * 64
    assert len(found) == 3
    assert all(plan in missing for digest, missing in found.items() if digest != successor_five)


def test_hostile_locators_never_leave_the_replay_root(tmp_path: Path) -> None:
    """Locators that escape, or that a file system cannot hold together, are not
    written; the replay still ends in a report (the verifier sees them missing)."""
    from ledger.encoding.canonical import canonicalize
    from ledger.encoding.digest import sha256_digest
    from ledger.schema.validation import validate

    toy = Toy(tmp_path).base()
    digest, result = toy.run()
    from cohorts.rejudge import StoreInputs
    from ledger.store.sqlite import open_store

    with open_store(toy.db, readonly=True) as store:
        inputs = StoreInputs(store)
        manifest_digest = result["provenance"]["result_manifest_digest"]
        found = inputs.find(manifest_digest)
        assert found is not None
        manifest = json.loads(found.data)
        patch = manifest["produced_artifacts"][0]
        manifest["produced_artifacts"] += [
            {**patch, "id": "escape", "locator": "../../outside.patch"},
            {**patch, "id": "clash", "locator": "candidate.patch/inner"},
            {**patch, "id": "long", "locator": "x" * 5000},
        ]
        changed = canonicalize(manifest)
        lied = json.loads(json.dumps(result))
        lied["provenance"]["result_manifest_digest"] = sha256_digest(changed)

        class Hostile:
            where = "the test"

            def find(self, wanted: str) -> Any:
                if wanted == sha256_digest(changed):
                    from verifiers.replay import Input

                    return Input("result-manifest", changed, manifest)
                return inputs.find(wanted)

        report = replay(canonicalize(lied), Hostile(), validate)
    assert report.status == "differs"  # the manifest changed, so the verdict's bytes do
    import tempfile

    assert not (Path(tempfile.gettempdir()) / "outside.patch").exists()
    assert digest != report.recomputed_digest
