"""The Python API (docs/API.md): its results are the CLI's ``--json``, its documents are
held to the byte rules, the package's plug-ins come from the distribution's own entry
points with no set-up call, and the generic core alone is an explicit choice.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import distribution
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from cohorts.api import audit_all, definition_digest, list_cohorts, provenance
from ledger import plugins
from ledger.api import (
    CORE_ONLY,
    Ledger,
    cosign_checkpoint,
    create_witness,
    generate_key,
    init_ledger,
    latest_cosigned,
    load_signer,
    migrate_ledger,
    open_ledger,
    prepare_document,
    verify_bundle,
    witness_state,
)
from ledger.cli import app
from ledger.errors import (
    InputError,
    IntegerRangeError,
    LoneSurrogateError,
    NotFound,
    RuleViolation,
)
from ledger.log.witness import WitnessError
from ledger.trust.admission import AdmissionRefused
from verifiers.api import FIXTURE_DIR, calibrate, run_verifier

ROOT = Path(__file__).resolve().parents[1]
TOY = ROOT / "examples" / "cohorts" / "toy"


# -- the package's plug-ins ---------------------------------------------------------------


GROUPS = (plugins.POLICY_GROUP, plugins.NOTES_GROUP, plugins.BROWSE_GROUP, plugins.REPLAY_GROUP)


@pytest.mark.parametrize("group", GROUPS)
def test_the_plugin_reader_agrees_with_importlib_metadata(group: str) -> None:
    """The light reader finds exactly the entry points importlib.metadata finds."""
    expected = sorted(
        (ep.name, ep.value) for ep in distribution("provledger").entry_points.select(group=group)
    )
    assert expected, group
    assert [(p.name, p.value) for p in plugins.plugins(group)] == expected


def test_every_plugin_loads() -> None:
    for group in GROUPS:
        for found in plugins.plugins(group):
            assert callable(found.load()), found


def test_the_entry_points_file_is_read_as_the_format_says() -> None:
    text = """
# a comment
[provledger.notes]
verification-result = cohorts.notes:verification_notes
  ; another comment
[other.group]
x=pkg.mod:Outer.inner
"""
    assert plugins.parse_entry_points(text) == (
        plugins.Plugin(
            "provledger.notes", "verification-result", "cohorts.notes:verification_notes"
        ),
        plugins.Plugin("other.group", "x", "pkg.mod:Outer.inner"),
    )
    assert plugins.Plugin("g", "n", "ledger.plugins:Plugin.load").load() is plugins.Plugin.load


def test_no_module_installs_anything() -> None:
    """The CLI has no install step left: it calls the same API every caller calls."""
    import ledger.cli
    import ledger.cli.common

    assert not hasattr(ledger.cli, "install_idkmesh")
    assert not hasattr(ledger.cli.common, "SHOW_NOTES")
    assert not hasattr(ledger.cli.common, "BROWSE_CHECK")
    assert not hasattr(ledger.cli.common, "REPLAY_INPUTS")
    assert not hasattr(ledger.cli.common, "REPLAY_CARRIED")
    assert set(plugins.plugins(plugins.REPLAY_GROUP)) == {
        plugins.Plugin(plugins.REPLAY_GROUP, "carried", "verifiers.replay:replay_carried"),
        plugins.Plugin(plugins.REPLAY_GROUP, "inputs", "cohorts.rejudge:replay_inputs"),
    }


# -- one ledger, built through the API, read through both ---------------------------------


@dataclass
class Built:
    db: Path
    log_key: str
    result: str
    work_unit: str
    cp_size: int
    cp_note: bytes


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    tmp = tmp_path_factory.mktemp("api")
    db = tmp / "ledger.db"
    created = init_ledger(db)
    generate_key(tmp / "verifier.key")
    verifier = load_signer(tmp / "verifier.key")
    with open_ledger(db) as book:
        book.register_identity(
            verifier_id="idkmesh-local-verifier",
            adapter="deterministic-patch-verifier",
            adapter_versions=["0.1.1", "0.2.0", "0.3.0"],
            public_key=tmp / "verifier.key.pub",
        )
        run = run_verifier(
            book,
            work_unit=FIXTURE_DIR / "work-unit.json",
            plan=FIXTURE_DIR / "plans" / "evaluator-plan-v0.4.json",
            manifest=FIXTURE_DIR / "manifests" / "repair.result-manifest.json",
            candidate_root=FIXTURE_DIR / "candidates" / "repair",
            signer=verifier,
        )
        work_unit = book.get(run.work_unit_digest).digest
        book.sign(work_unit, book.authority())
        cp = book.checkpoint()
    yield Built(
        db, created.log_verifier_key, run.result_digest, work_unit, cp.size, cp.note.encode()
    )


def _cli(*args: str, codes: tuple[int, ...] = (0,)) -> Any:
    result = CliRunner().invoke(app, [*args, "--json"])
    assert result.exit_code in codes, result.output
    return json.loads(result.stdout)


def _same(api: Any, cli: Any) -> None:
    # JSON round trip: the API's values (tuples) are the printed JSON's (arrays).
    assert json.loads(json.dumps(api)) == cli


def test_read_results_are_the_commands_json(built: Built) -> None:
    db = ("--db", str(built.db))
    with open_ledger(built.db, readonly=True) as book:
        _same(book.get(built.result).to_json(), _cli("show", built.result, *db))
        _same([e.to_json() for e in book.log()], _cli("log", *db))
        _same(
            [e.to_json() for e in book.log(kind="blob", since=3, limit=2)],
            _cli("log", "--kind", "blob", "--since", "3", "--limit", "2", *db),
        )
        _same(book.stats().to_json(), _cli("stats", *db))
        _same(
            book.inclusion_proof(built.result).to_json(),
            _cli("proof", "inclusion", built.result, *db),
        )
        _same(book.consistency_proof(2).to_json(), _cli("proof", "consistency", "2", *db))
        _same(
            book.check_attestations(built.work_unit).to_json(),
            _cli("attestation", "check", built.work_unit, *db),
        )
        _same(
            book.verify(log_key=built.log_key).to_json(),
            _cli("verify", *db, "--log-key", built.log_key),
        )
        chain = provenance(book, built.result).to_json()
        _same({**chain, "ref": built.result}, _cli("provenance", built.result, *db))
        _same([r.to_json() for r in list_cohorts(book)], _cli("cohort", "list", *db))
        _same([r.to_json() for r in audit_all(book)], _cli("cohort", "audit", "--all", *db))
    _same(
        definition_digest(TOY / "cohort-v2.json").to_json(),
        _cli("cohort", "digest", str(TOY / "cohort-v2.json")),
    )
    _same(calibrate().to_json(), _cli("calibrate"))


def test_write_results_are_the_commands_json(built: Built, tmp_path: Path) -> None:
    """On a dry run both say what would be written, without writing it."""
    db = ("--db", str(built.db))
    blob = tmp_path / "log.txt"
    blob.write_bytes(b"a build log\n")
    cli = _cli("append", "--kind", "blob", "--dry-run", str(blob), *db)
    with open_ledger(built.db, dry_run=True) as trial:
        api = trial.append_blob(blob.read_bytes())
    _same([{"file": str(blob), **api.to_json()}], cli)
    with open_ledger(built.db, readonly=True) as book:
        subject = next(book.log(kind="blob")).digest  # the authority may attest a blob
    cli = _cli(
        "sign",
        subject,
        "--key",
        str(built.db.parent / "ledger.db.authority.key"),
        "--dry-run",
        *db,
    )
    with open_ledger(built.db, dry_run=True) as trial:
        signed = trial.sign(subject, trial.authority())
    assert signed.to_json() == cli
    with open_ledger(built.db, readonly=True) as book:
        assert book.stats().entries == _cli("stats", *db)["entries"]  # nothing was kept


def test_identities_and_envelopes_are_the_commands_json(built: Built, tmp_path: Path) -> None:
    db = ("--db", str(built.db))
    with open_ledger(built.db, readonly=True) as book:
        listed = book.identities()
        _same([i.to_json() for i in listed], _cli("identity", "list", *db))
        key_id = listed[0].key_id
        _same(book.identity(key_id).to_json(), _cli("identity", "show", key_id, *db))
        prefix = listed[0].record.digest[:20]  # an identity's digest prefix
        assert book.identity(prefix).identities == (listed[0],)
        _same(book.identity(prefix).to_json(), _cli("identity", "show", prefix, *db))
        [verdict] = book.check_attestations(built.work_unit).attestations
        assert verdict.attestation_digest is not None
        envelope = book.export_attestation(verdict.attestation_digest[:20])
        exported = CliRunner().invoke(
            app, ["attestation", "export", verdict.attestation_digest, *db]
        )
        assert exported.exit_code == 0 and exported.stdout_bytes == envelope + b"\n"
        file = tmp_path / "envelope.json"
        file.write_bytes(envelope)
        check = book.verify_envelope(envelope)
        assert check.ok and check.subject == built.work_unit
        _same(check.to_json(), _cli("attestation", "verify-envelope", str(file), *db))
    with open_ledger(built.db, dry_run=True) as trial:
        imported = trial.import_envelope(json.loads(envelope))  # its value or its bytes
    assert [s.status for s in imported] == ["present"]
    _same(
        [s.to_json() for s in imported],
        _cli("attestation", "import", str(file), "--dry-run", *db),
    )


def test_copy_and_migrate_are_the_commands_json(built: Built, tmp_path: Path) -> None:
    with open_ledger(built.db, readonly=True) as book:
        api = book.copy_to(tmp_path / "api.db")
        size = book.stats().entries
    cli = _cli("copy", str(built.db), str(tmp_path / "cli.db"))
    _same({**api.to_json(), "dst": str(tmp_path / "cli.db")}, cli)
    assert api.copied == size and api.roots == {built.cp_size: api.roots[built.cp_size]}
    _same(migrate_ledger(built.db).to_json(), _cli("migrate", "--db", str(built.db)))
    init_ledger(tmp_path / "other.db")
    with open_ledger(tmp_path / "api.db", readonly=True) as twin:
        with pytest.raises(RuleViolation) as same:
            twin.copy_to(tmp_path / "api.db")  # a ledger onto itself
        assert same.value.exit_code == 4
        with pytest.raises(RuleViolation, match="another ledger"):
            twin.copy_to(tmp_path / "other.db")


def test_witness_results_are_the_commands_json(built: Built, tmp_path: Path) -> None:
    """Two witnesses of the same log, one driven through the API, one through the
    command: the same answers (a cosignature's time and signature aside)."""
    api_state, cli_state = tmp_path / "api.json", tmp_path / "cli.json"
    created = create_witness(api_state, "witness.example/api", [built.log_key])
    by_cli = _cli(
        "witness",
        "init",
        "witness.example/cli",
        "--state",
        str(cli_state),
        "--log-key",
        built.log_key,
    )
    assert set(by_cli) == set(created.to_json()) and by_cli["logs"] == list(created.logs)
    note = tmp_path / "checkpoint.note"
    note.write_bytes(built.cp_note)
    cosigned = cosign_checkpoint(api_state, built.cp_note)
    cli = _cli("witness", "cosign", str(note), "--state", str(cli_state))
    assert {
        k: v for k, v in cosigned.to_json().items() if k not in ("timestamp", "cosignature")
    } == {k: v for k, v in cli.items() if k not in ("timestamp", "cosignature")}
    assert cosigned.size == built.cp_size
    _same(witness_state(cli_state).to_json(), _cli("witness", "show", "--state", str(cli_state)))
    latest = CliRunner().invoke(app, ["witness", "latest", "--state", str(cli_state)])
    assert latest.exit_code == 0 and latest.stdout_bytes == latest_cosigned(cli_state)
    assert latest_cosigned(api_state).startswith(built.cp_note)
    with pytest.raises(WitnessError) as stale:
        cosign_checkpoint(api_state, built.cp_note, b"old 0\n")  # not what it last cosigned
    assert stale.value.exit_code == 4


def test_every_result_is_a_frozen_dataclass() -> None:
    """Every public class with a ``to_json`` (a result) is a frozen dataclass."""
    import cohorts.api
    import ledger.api
    import ledger.api.witness
    import verifiers.api

    checked = 0
    for module in (ledger.api, ledger.api.witness, cohorts.api, verifiers.api):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and hasattr(value, "to_json"):
                assert dataclasses.is_dataclass(value), name
                assert value.__dataclass_params__.frozen, name  # type: ignore[attr-defined]
                checked += 1
    assert checked >= 40
    assert "ImportSummary" in ledger.api.__all__


def test_an_intoto_export_is_the_commands(built: Built) -> None:
    """Ed25519 signatures are deterministic: the API's envelope is the command's bytes."""
    key = built.db.parent / "verifier.key"
    done = CliRunner().invoke(
        app, ["export", "intoto", built.result, "--key", str(key), "--db", str(built.db)]
    )
    assert done.exit_code == 0, done.output
    with open_ledger(built.db, readonly=True) as book:
        envelope = book.export_intoto(built.result, load_signer(key))
    assert done.stdout_bytes == envelope + b"\n"
    assert json.loads(envelope)["payloadType"] == "application/vnd.in-toto+json"


def test_show_notes_come_from_the_plugin_with_no_setup(built: Built) -> None:
    with open_ledger(built.db, readonly=True) as book:
        notes = book.get(built.result).notes
        assert notes and notes[0].startswith("verdict passed (accept_candidate), v0.4")
        assert book.get(built.work_unit).notes == ()
        assert book.get(built.result, notes=False).notes == ()


def test_a_bundle_exported_by_the_api_verifies_offline(built: Built) -> None:
    with open_ledger(built.db, readonly=True) as book:
        exported = book.export_bundle(built.result)
    verified = verify_bundle(exported.data, built.log_key)
    assert verified.subject.digest == built.result
    assert verified.checkpoint.size == built.cp_size


# -- documents are held to the byte rules -------------------------------------------------


def _work_unit() -> dict[str, Any]:
    value: dict[str, Any] = json.loads((FIXTURE_DIR / "work-unit.json").read_bytes())
    return value


def test_a_value_and_its_bytes_are_the_same_record() -> None:
    raw = (FIXTURE_DIR / "work-unit.json").read_bytes()
    assert prepare_document(json.loads(raw)) == prepare_document(raw)
    with_float = _work_unit()
    with_float["version"] = 1.0  # an integral double: the legacy digest keeps it
    from_text = prepare_document(json.dumps(with_float).encode())
    assert prepare_document(with_float) == from_text
    assert from_text.legacy_digest != prepare_document(raw).legacy_digest


@pytest.mark.parametrize(
    ("change", "error"),
    [
        ({"tags": (1, 2)}, InputError),  # a tuple is not a JSON array
        ({3: "x"}, InputError),  # nor is an int key a JSON member name
        ({"score": float("nan")}, InputError),
        ({"big": 2**60}, IntegerRangeError),
        ({"text": "\udc80"}, LoneSurrogateError),
        ({"when": object()}, InputError),
    ],
)
def test_a_value_json_would_change_is_refused(change: dict[Any, Any], error: type) -> None:
    value: dict[Any, Any] = {**_work_unit(), **change}
    with pytest.raises(error) as caught:
        prepare_document(value)
    assert caught.value.exit_code == 3


def test_a_blob_must_be_bytes() -> None:
    with pytest.raises(InputError):
        prepare_document({"a": 1}, "blob")
    assert prepare_document(b"\xff\x00", "blob").kind == "blob"


# -- the admission policy: the package's by default, the core's by name --------------------


def _burned_cohort() -> dict[str, Any]:
    value: dict[str, Any] = json.loads((TOY / "cohort-v1.json").read_bytes())
    assert value["stage"] == "burned"
    return value


def test_a_plain_open_applies_the_package_policy(tmp_path: Path) -> None:
    """No install call: a governed cohort record without the authority is refused."""
    init_ledger(tmp_path / "l.db")
    with open_ledger(tmp_path / "l.db") as book:
        with pytest.raises(AdmissionRefused) as refused:
            book.append(_burned_cohort())
        assert refused.value.exit_code == 4
        assert book.stats().entries == 0


def test_the_generic_core_alone_is_an_explicit_choice(tmp_path: Path) -> None:
    init_ledger(tmp_path / "l.db")
    with open_ledger(tmp_path / "l.db", policy=CORE_ONLY) as book:
        assert book.policy is CORE_ONLY
        assert book.append(_burned_cohort()).new


def test_errors_carry_their_exit_codes(tmp_path: Path) -> None:
    with pytest.raises(NotFound) as missing:
        open_ledger(tmp_path / "none.db")
    assert missing.value.exit_code == 3
    init_ledger(tmp_path / "l.db")
    with open_ledger(tmp_path / "l.db") as book:
        assert isinstance(book, Ledger)
        with pytest.raises(NotFound):
            book.get("sha256:" + "0" * 64)


# -- cohorts: a successor draft and the browse database -------------------------------------


def test_a_draft_and_an_index_are_the_commands_json(tmp_path: Path) -> None:
    from cohorts.api import (
        browse_app,
        build_index,
        burn,
        default_browse_file,
        draft_successor,
        freeze,
    )
    from cohorts.errors import CohortInputError, LifecycleError

    db = tmp_path / "toy.db"
    init_ledger(db)
    with open_ledger(db) as book:
        book.append_many(
            [p.read_bytes() for p in sorted((TOY / "work-units").glob("*.json"))]
            + [p.read_bytes() for p in sorted((TOY / "evaluators").glob("*.json"))]
        )
        freeze(book, TOY / "cohort-v1.json")
        with pytest.raises(LifecycleError) as not_burned:
            draft_successor(book, "example/toy-v1", successor_id="x/y", out=tmp_path / "early")
        assert not_burned.value.exit_code == 4 and not (tmp_path / "early").exists()
        burn(book, "example/toy-v1", reason="Exact-line plans reject legitimate fixes.")
        drafted = draft_successor(
            book,
            "example/toy-v1",
            successor_id="example/toy-v3",
            out=tmp_path / "api",
            plan_version="0.3",
        )
        with pytest.raises(CohortInputError):
            draft_successor(
                book,
                "example/toy-v1",
                successor_id="x/y",
                out=tmp_path / "bad",
                removed=["no-equals-sign"],
            )
    cli = _cli(
        "cohort",
        "draft-successor",
        "example/toy-v1",
        "--id",
        "example/toy-v3",
        "-o",
        str(tmp_path / "cli"),
        "--plan-version",
        "0.3",
        "--db",
        str(db),
    )
    _same({**drafted.to_json(), "out": str(tmp_path / "cli")}, cli)
    for rel in ["cohort.json", *drafted.draft.plans]:
        assert (tmp_path / "api" / rel).read_bytes() == (tmp_path / "cli" / rel).read_bytes()

    with open_ledger(db, readonly=True) as book:
        indexed = build_index(book, tmp_path / "api.browse.db")
        assert default_browse_file(db) == tmp_path / "toy.browse.db"
    cli = _cli("index", "--db", str(db), "--out", str(tmp_path / "cli.browse.db"))
    _same({**indexed.to_json(), "out": str(tmp_path / "cli.browse.db")}, cli)
    assert indexed.new_entries == indexed.size > 0
    assert browse_app(indexed.out, ledger=db) is not None
    with pytest.raises(NotFound) as missing:
        browse_app(tmp_path / "none.browse.db")
    assert missing.value.exit_code == 3
