"""Hostile input: every case fails cleanly, with its exit code and one error line, and the
ledger does not change.

The corpus is ``tests/hostile/`` with ``MANIFEST.json`` (file -> command, exit code, error
substring). Cases that need the file system in a particular state — a 100 MB document,
read-only and full databases, key files with real keys, symlinks, FIFOs, corrupt ledger
files — are built at test time below. "Unchanged" means the entry count and a hash over
every row of every table (and the schema, triggers included) are identical.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import json
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import ledger.store.sqlite as sqlite_store
from ledger.cli import app

HERE = Path(__file__).resolve().parent
HOSTILE = HERE / "hostile"
MANIFEST = json.loads((HOSTILE / "MANIFEST.json").read_text("utf-8"))
CASES: list[dict[str, Any]] = MANIFEST["cases"]
ROOT = HERE.parent
CORPUS = ROOT.parent / "shared" / "reference" / "idkmesh"
PROVLEDGER = ROOT / ".venv" / "bin" / "provledger"
WORK_UNIT = CORPUS / "examples" / "work-units" / "phase0-smoke.work-unit.json"

CHILD_ENV = {**os.environ, "PROVLEDGER_NO_PROGRESS": "1"}
CHILD_ENV.pop("PROVLEDGER_DB", None)


def fingerprint(db: Path) -> tuple[int, str]:
    """(entry count, SHA-256 over the schema and every row of every table)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        digest = hashlib.sha256()
        for name, sql in conn.execute(
            "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name"
        ):
            digest.update(f"{name}\0{sql}\0".encode())
        tables = [
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
            )
        ]
        for table in tables:
            rows = sorted(repr(row) for row in conn.execute(f'SELECT * FROM "{table}"'))
            digest.update(f"{table}\0{len(rows)}\0".encode())
            for row in rows:
                digest.update(row.encode() + b"\0")
        (count,) = conn.execute("SELECT count(*) FROM entries").fetchone()
        return int(count), digest.hexdigest()
    finally:
        conn.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ledger with blobs, the corpus work-unit when present, and a checkpoint."""
    from ledger.cli.core import authority_key_path, log_key_path
    from ledger.create import initialise
    from ledger.log.checkpoints import make_checkpoint
    from ledger.store.prepared import prepare_blob, prepare_json
    from ledger.store.sqlite import open_store
    from ledger.trust.keys import load_private_key

    db = tmp_path_factory.mktemp("hostile-template") / "ledger.db"
    initialise(db, None, log_key_path(db), authority_key_path(db))
    items = [prepare_blob(f"baseline {i}\n".encode()) for i in range(3)]
    if WORK_UNIT.is_file():
        items.append(prepare_json(WORK_UNIT.read_bytes()))
    with open_store(db) as store:
        store.append_many(items)
        make_checkpoint(store, load_private_key(log_key_path(db)))
        # One entry past the checkpoint, so `checkpoint` has something to write.
        store.append_many([prepare_blob(b"after the checkpoint\n")])
    assert not Path(f"{db}-wal").exists()
    return db


@pytest.fixture
def ledger(template: Path, tmp_path: Path) -> Path:
    """A private copy of the template ledger with its keys."""
    db = tmp_path / "ledger.db"
    shutil.copyfile(template, db)
    for suffix in (".log.key", ".log.key.pub", ".authority.key", ".authority.key.pub"):
        src = template.with_name(template.name + suffix)
        shutil.copy2(src, db.with_name(db.name + suffix))
    return db


def _one_error_line(stderr: str) -> None:
    assert stderr.startswith("error: "), stderr
    assert stderr.endswith("\n") and stderr.count("\n") == 1, stderr
    assert "Traceback" not in stderr


def _case_id(case: dict[str, Any]) -> str:
    return str(case["file"])


def _params() -> list[Any]:
    params = []
    for case in CASES:
        marks = []
        if case.get("known_bug"):
            marks.append(pytest.mark.xfail(reason=case["known_bug"], strict=True))
        params.append(pytest.param(case, id=_case_id(case), marks=marks))
    return params


def test_manifest_covers_every_file_and_enough_cases() -> None:
    listed = {case["file"] for case in CASES}
    present = {
        p.relative_to(HOSTILE).as_posix()
        for p in HOSTILE.rglob("*")
        if p.is_file() and p.name != "MANIFEST.json"
    }
    assert listed == present
    assert len(CASES) >= 40
    for case in CASES:
        assert set(case) >= {"file", "command", "exit", "error", "why"}, case


@pytest.mark.parametrize("case", _params())
def test_hostile_case(case: dict[str, Any], ledger: Path, tmp_path: Path) -> None:
    source = HOSTILE / case["file"]
    data = source.read_bytes()
    if case["command"] == ["@diff"]:
        _diff_case(case, data)
        return
    path = tmp_path / source.name
    path.write_bytes(data)
    if "mode" in case:
        path.chmod(int(case["mode"], 8))
    args = [
        str(path) if a == "{file}" else data.decode("utf-8") if a == "{text}" else a
        for a in case["command"]
    ]
    before = fingerprint(ledger)
    result = CliRunner().invoke(app, [*args, "--db", str(ledger)])
    assert isinstance(result.exception, SystemExit | None), repr(result.exception)
    assert result.exit_code == case["exit"], (result.stdout, result.stderr)
    if case["exit"] == 0:
        assert result.stderr == ""
    elif case["exit"] != 2:
        _one_error_line(result.stderr)
        assert result.stdout == ""
        assert case["error"] in result.stderr, result.stderr
    assert fingerprint(ledger) == before


def _diff_case(case: dict[str, Any], data: bytes) -> None:
    from verifiers.diff import parse_patch
    from verifiers.errors import DiffError

    with pytest.raises(DiffError) as caught:
        parse_patch(data)
    assert caught.value.exit_code == case["exit"]
    message = str(caught.value)
    assert "\n" not in message
    assert case["error"] in message, message


# --------------------------------------------------------------------------- subprocess


def _run(args: list[str], preexec: Callable[[], None] | None = None, **kw: Any) -> Any:
    if not PROVLEDGER.exists():
        pytest.skip(f"console script absent: {PROVLEDGER} (run scripts/test.sh to make .venv)")
    return subprocess.run(
        [str(PROVLEDGER), *args],
        capture_output=True,
        env=kw.pop("env", CHILD_ENV),
        preexec_fn=preexec,
        check=False,
        timeout=120,
        **kw,
    )


def test_hundred_megabyte_document_is_refused_by_size(ledger: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as out:
        out.write(b'{"schema_version": "0.2", "objective": "')
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            out.write(chunk)
        out.write(b'", "validators": []}')
    before = fingerprint(ledger)
    result = _run(["append", "--db", str(ledger), str(big)])
    assert result.returncode == 3
    _one_error_line(result.stderr.decode())
    assert "document too large" in result.stderr.decode()
    assert fingerprint(ledger) == before


def _without_dac_override() -> Callable[[], None] | None:
    """A preexec hook so root is subject to file modes (drops CAP_DAC_*), else None."""
    if os.geteuid() != 0 or not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    pr_capbset_drop, cap_dac_override, cap_dac_read_search = 24, 1, 2

    def drop() -> None:
        for cap in (cap_dac_override, cap_dac_read_search):
            if libc.prctl(pr_capbset_drop, cap, 0, 0, 0) != 0:
                raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")

    return drop


def _probe_readonly(path: Path, preexec: Callable[[], None] | None) -> bool:
    """True when a child really cannot write ``path`` (root that cannot drop caps can)."""
    try:
        probe = subprocess.run(
            [sys.executable, "-c", f"open({str(path)!r}, 'ab')"],
            preexec_fn=preexec,
            capture_output=True,
            check=False,
        )
    except subprocess.SubprocessError:  # prctl refused: no CAP_SETPCAP in this container
        return False
    return probe.returncode != 0


def test_read_only_database_file(ledger: Path, tmp_path: Path) -> None:
    doc = tmp_path / "blob.bin"
    doc.write_bytes(b"a new blob")
    ledger.chmod(0o444)
    preexec = _without_dac_override()
    try:
        if not _probe_readonly(ledger, preexec):
            pytest.skip("cannot make a file read-only for this user (root with CAP_DAC_OVERRIDE)")
        before = fingerprint(ledger)
        for args in (
            ["append", "--kind", "blob", str(doc)],
            ["checkpoint"],
        ):
            result = _run([*args, "--db", str(ledger)], preexec)
            assert result.returncode == 3, result.stderr
            _one_error_line(result.stderr.decode())
            assert "read-only database" in result.stderr.decode()
        # Readers still work on a read-only file.
        for args in (["log", "--json"], ["stats", "--json"], ["verify", "--json"]):
            result = _run([*args, "--db", str(ledger)], preexec)
            assert result.returncode == 0 and result.stderr == b"", result.stderr
        assert fingerprint(ledger) == before
    finally:
        ledger.chmod(0o644)


def _settle(db: Path) -> None:
    """Close the last connection cleanly so SQLite removes the -wal and -shm files."""
    conn = sqlite3.connect(db)
    conn.execute("SELECT count(*) FROM entries").fetchone()
    conn.close()
    assert not Path(f"{db}-wal").exists() and not Path(f"{db}-shm").exists()


def test_read_only_directory(ledger: Path, tmp_path: Path) -> None:
    doc = tmp_path.parent / f"{tmp_path.name}-blob.bin"
    doc.write_bytes(b"a new blob")
    before = fingerprint(ledger)
    _settle(ledger)
    preexec = _without_dac_override()
    tmp_path.chmod(0o555)
    try:
        if not _probe_readonly(tmp_path / "probe", preexec):
            pytest.skip("cannot make a directory read-only for this user")
        result = _run(["append", "--kind", "blob", str(doc), "--db", str(ledger)], preexec)
        assert result.returncode == 3
        _one_error_line(result.stderr.decode())
        assert "read-only database" in result.stderr.decode()
        # Readers need no -shm file when the ledger has no -wal: they read it as immutable.
        for args in (["log", "--json"], ["stats", "--json"], ["verify", "--json"]):
            result = _run([*args, "--db", str(ledger)], preexec)
            assert result.returncode == 0 and result.stderr == b"", result.stderr
        log = json.loads(_run(["log", "--json", "--db", str(ledger)], preexec).stdout)
        assert len(log) == before[0]
    finally:
        tmp_path.chmod(0o755)
    assert fingerprint(ledger) == before


def _page_count(db: Path) -> int:
    conn = sqlite3.connect(db)
    try:
        return int(conn.execute("PRAGMA page_count").fetchone()[0])
    finally:
        conn.close()


def test_full_database_refuses_cleanly(
    ledger: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    small = tmp_path / "small.bin"
    small.write_bytes(b"fits")
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(256 * 1024))
    before = fingerprint(ledger)
    capped = functools.partial(sqlite_store.open_store, max_page_count=_page_count(ledger))
    monkeypatch.setattr(sqlite_store, "open_store", capped)
    runner = CliRunner()
    # One transaction: the small blob that would fit is not written either.
    result = runner.invoke(
        app, ["append", "--kind", "blob", str(small), str(big), "--db", str(ledger)]
    )
    assert result.exit_code == 3, result.output
    _one_error_line(result.stderr)
    assert "full" in result.stderr
    assert fingerprint(ledger) == before
    monkeypatch.undo()
    # With room again the ledger takes both and stays verifiable.
    ok = runner.invoke(app, ["append", "--kind", "blob", str(small), str(big), "--db", str(ledger)])
    assert ok.exit_code == 0, ok.output
    assert runner.invoke(app, ["verify", "--db", str(ledger)]).exit_code == 0


def test_full_database_in_a_subprocess(ledger: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(256 * 1024))
    before = fingerprint(ledger)
    # The CLI's own entry point in a fresh interpreter, its store capped at the current size.
    code = (
        "import functools, sys\n"
        "import ledger.store.sqlite as s\n"
        f"s.open_store = functools.partial(s.open_store, max_page_count={_page_count(ledger)})\n"
        "from ledger.cli import main\n"
        "sys.argv = ['provledger', *sys.argv[1:]]\n"
        "main()\n"
    )
    args = ["append", "--kind", "blob", str(big), "--db", str(ledger)]
    result = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "python"), "-c", code, *args],
        capture_output=True,
        env=CHILD_ENV,
        check=False,
    )
    assert result.returncode == 3
    _one_error_line(result.stderr.decode())
    assert "database or disk is full" in result.stderr.decode()
    assert fingerprint(ledger) == before


# --------------------------------------------------------------------------- keys


def _checkpoint_with(ledger: Path, key: Path) -> Any:
    return CliRunner().invoke(app, ["checkpoint", "--log-key", str(key), "--db", str(ledger)])


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660, 0o777])
def test_real_key_with_loose_permissions(ledger: Path, mode: int) -> None:
    key = ledger.with_name(ledger.name + ".log.key")
    key.chmod(mode)
    before = fingerprint(ledger)
    result = _checkpoint_with(ledger, key)
    assert result.exit_code == 3
    _one_error_line(result.stderr)
    assert "accessible by others" in result.stderr
    assert fingerprint(ledger) == before
    key.chmod(0o600)
    assert _checkpoint_with(ledger, key).exit_code == 0


def test_key_of_another_log_is_refused(ledger: Path, tmp_path: Path) -> None:
    from ledger.trust.keys import generate_key_file

    other = tmp_path / "other.key"
    generate_key_file(other)
    before = fingerprint(ledger)
    result = _checkpoint_with(ledger, other)
    assert result.exit_code == 4
    _one_error_line(result.stderr)
    assert "public half differs" in result.stderr
    assert fingerprint(ledger) == before


def test_encrypted_key_without_and_with_wrong_passphrase(ledger: Path, tmp_path: Path) -> None:
    from ledger.errors import KeyFileError
    from ledger.trust.keys import generate_key_file, load_private_key

    key = tmp_path / "encrypted.key"
    generate_key_file(key, passphrase=b"correct horse battery staple")
    before = fingerprint(ledger)
    result = _checkpoint_with(ledger, key)
    assert result.exit_code == 3
    _one_error_line(result.stderr)
    assert "is encrypted, got no passphrase" in result.stderr
    assert fingerprint(ledger) == before
    for wrong in (b"wrong", b"correct horse battery stapl", b"\x00" * 64, "é".encode()):
        with pytest.raises(KeyFileError, match="cannot be decrypted"):
            load_private_key(key, wrong)
    assert load_private_key(key, b"correct horse battery staple") is not None


def test_oversized_fifo_and_symlinked_key_files(ledger: Path, tmp_path: Path) -> None:
    before = fingerprint(ledger)
    huge = tmp_path / "huge.key"
    huge.write_bytes(b"-----BEGIN PRIVATE KEY-----\n" + b"A" * 70000)
    huge.chmod(0o600)
    fifo = tmp_path / "fifo.key"
    os.mkfifo(fifo, 0o600)
    loose = tmp_path / "loose.pem"
    shutil.copyfile(ledger.with_name(ledger.name + ".log.key"), loose)
    loose.chmod(0o644)
    link = tmp_path / "link.key"
    link.symlink_to(loose)
    for key, expected in (
        (huge, "too large"),
        (fifo, "not a regular file"),
        (link, "accessible by others"),
        (tmp_path, "not a regular file"),
        (tmp_path / "missing.key", "cannot be read"),
    ):
        result = _checkpoint_with(ledger, key)
        assert result.exit_code == 3, (key, result.output)
        _one_error_line(result.stderr)
        assert expected in result.stderr
    assert fingerprint(ledger) == before


# --------------------------------------------------------------------------- files, symlinks


def test_fifo_and_directory_inputs_do_not_hang(ledger: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "input.json"
    os.mkfifo(fifo)
    before = fingerprint(ledger)
    for target in (fifo, tmp_path):
        result = CliRunner().invoke(app, ["append", str(target), "--db", str(ledger)])
        assert result.exit_code == 3
        _one_error_line(result.stderr)
        assert "input file not found" in result.stderr
    assert fingerprint(ledger) == before


def test_symlinks_out_of_a_candidate_root(tmp_path: Path) -> None:
    from ledger.confined import list_tree, read_in_root

    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("not for verifiers\n")
    root = tmp_path / "candidate"
    (root / "src").mkdir(parents=True)
    (root / "src" / "ok.txt").write_text("fine\n")
    (root / "link-file").symlink_to(secret)
    (root / "link-dir").symlink_to(outside, target_is_directory=True)
    (root / "src" / "up").symlink_to("../..", target_is_directory=True)
    (root / "abs").symlink_to("/etc/hostname")
    os.mkfifo(root / "pipe")

    assert read_in_root(root, "src/ok.txt", max_bytes=100).status == "read"
    for locator, status in (
        ("link-file", "symlink"),
        ("link-dir/secret.txt", "symlink"),
        ("src/up/outside/secret.txt", "symlink"),
        ("abs", "symlink"),
        ("pipe", "not_regular"),
        ("../outside/secret.txt", "unsafe_locator"),
        ("/etc/hostname", "unsafe_locator"),
        ("src/./ok.txt", "unsafe_locator"),
        ("src\\ok.txt", "unsafe_locator"),
        ("", "unsafe_locator"),
        ("missing.txt", "missing"),
    ):
        seen = read_in_root(root, locator, max_bytes=100)
        assert seen.status == status, (locator, seen)
        assert seen.data is None
    listing = list_tree(root)
    assert listing.files == ("src/ok.txt",)
    assert set(listing.problems) == {
        "symlink link-file",
        "symlink link-dir",
        "symlink src/up",
        "symlink abs",
        "not a regular file pipe",
    }
    # The candidate root itself being a symlink is fine: its real path is the root.
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    assert read_in_root(alias, "src/ok.txt", max_bytes=100).status == "read"


# --------------------------------------------------------------------------- corrupt ledgers


@pytest.mark.parametrize(
    ("name", "make", "expected"),
    [
        ("empty", lambda db: db.write_bytes(b""), "not a provledger ledger"),
        ("text", lambda db: db.write_text("hello\n" * 100), "not a database"),
        ("truncated", lambda db: db.write_bytes(db.read_bytes()[:4096]), "malformed"),
        ("plain-sqlite", lambda db: _plain_sqlite(db), "not a provledger ledger"),
    ],
)
def test_corrupt_or_foreign_ledger_files(
    ledger: Path, name: str, make: Callable[[Path], None], expected: str
) -> None:
    make(ledger)
    snapshot = ledger.read_bytes()
    for args in (["log"], ["stats"], ["verify"], ["append", "--kind", "blob", "-"]):
        result = CliRunner().invoke(app, [*args, "--db", str(ledger)], input=b"x")
        assert isinstance(result.exception, SystemExit | None), (args, repr(result.exception))
        assert result.exit_code == 3, (name, args, result.output)
        _one_error_line(result.stderr)
        assert expected in result.stderr or "database" in result.stderr, result.stderr
    assert ledger.read_bytes() == snapshot


def _plain_sqlite(db: Path) -> None:
    db.unlink()
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE t(x)")
    conn.commit()
    conn.close()


def test_database_path_with_uri_characters(tmp_path: Path) -> None:
    """'#' and '?' in a ledger path must not make readers open (and create) another file."""
    runner = CliRunner()
    for name in ("led#1.db", "q?x.db", "pct%41.db", "sp ace.db"):
        db = tmp_path / name
        assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
        blob = runner.invoke(app, ["append", "--kind", "blob", "-", "--db", str(db)], input=b"b")
        assert blob.exit_code == 0, blob.output
        log = runner.invoke(app, ["log", "--json", "--db", str(db)])
        assert log.exit_code == 0, log.output
        assert len(json.loads(log.stdout)) == 1
    leftovers = {p.name for p in tmp_path.iterdir() if not stat.S_ISREG(p.stat().st_mode)}
    assert not leftovers
    names = {p.name for p in tmp_path.iterdir()}
    assert not names & {"led", "q", "pctA.db"}, names


# --------------------------------------------------------------------------- through the CLI

PATCH_WORK_UNIT = CORPUS / "examples" / "work-units" / "patch-verifier-smoke.work-unit.json"
PATCH_PLAN = CORPUS / "verification" / "fixtures" / "patch-smoke-evaluator-plan-v0.2.json"
PATCH_MANIFEST = CORPUS / "examples" / "verifier" / "patch" / "good" / "result-manifest.json"
PATCH_GOOD = CORPUS / "examples" / "verifier" / "patch" / "good" / "changes.patch"


def _has_command(*names: str) -> bool:
    result = CliRunner().invoke(app, [*names, "--help"])
    return result.exit_code == 0


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _candidate(tmp_path: Path, name: str, patch: bytes | None) -> tuple[Path, Path]:
    """A candidate root holding ``patch`` and its logs, and a manifest naming their digests."""
    root = tmp_path / name
    root.mkdir()
    logs = {"stdout.txt": b"worker output\n", "stderr.txt": b""}
    for locator, data in logs.items():
        (root / locator).write_bytes(data)
    manifest = json.loads(PATCH_MANIFEST.read_bytes())
    if patch is not None:
        (root / "changes.patch").write_bytes(patch)
        manifest["produced_artifacts"][0]["digest"] = _sha(patch)
    for log in manifest["logs"]:
        log["digest"] = _sha(logs[log["locator"]])
    path = tmp_path / f"{name}.manifest.json"
    path.write_text(json.dumps(manifest))
    return root, path


def _run_verifier(ledger: Path, key: Path, root: Path, manifest: Path) -> Any:
    return CliRunner().invoke(
        app,
        [
            "run-verifier",
            "--work-unit",
            str(PATCH_WORK_UNIT),
            "--plan",
            str(PATCH_PLAN),
            "--manifest",
            str(manifest),
            "--candidate-root",
            str(root),
            "--key",
            str(key),
            "--db",
            str(ledger),
            "--json",
        ],
    )


def _failed_checks(result: Any) -> str:
    report = json.loads(result.stdout)
    return " ".join(c["summary"] for c in report["checks"] if c["status"] != "passed")


@pytest.fixture
def verifier_setup(ledger: Path, tmp_path: Path) -> Path:
    if not PATCH_GOOD.is_file():
        pytest.skip(f"reference corpus absent: {CORPUS} (it lives in ../shared, outside the repo)")
    if not _has_command("run-verifier"):
        pytest.skip("command not yet available: provledger run-verifier")
    from ledger.trust.keys import generate_key_file

    key = tmp_path / "verifier.key"
    generate_key_file(key)
    # Only a registered verifier may sign the results (admission refuses other keys).
    plan = json.loads(PATCH_PLAN.read_text())["verifier"]
    args = ["identity", "register", "--verifier-id", plan["id"], "--adapter", plan["adapter"]]
    args += ["--adapter-version", plan["adapter_version"], "--public-key", f"{key}.pub"]
    result = CliRunner().invoke(app, [*args, "--db", str(ledger)])
    assert result.exit_code == 0, result.output
    return key


def test_hostile_patches_through_run_verifier(
    ledger: Path, tmp_path: Path, verifier_setup: Path
) -> None:
    """Each structurally invalid patch fails the review (exit 1), never anything else."""
    good_root, good_manifest = _candidate(tmp_path, "good", PATCH_GOOD.read_bytes())
    baseline = _run_verifier(ledger, verifier_setup, good_root, good_manifest)
    assert baseline.exit_code == 0, baseline.output  # the setup itself is sound
    patches = [case for case in CASES if case["command"] == ["@diff"]]
    assert len(patches) >= 20
    for n, case in enumerate(patches):
        data = (HOSTILE / case["file"]).read_bytes()
        root, manifest = _candidate(tmp_path, f"case-{n}", data)
        result = _run_verifier(ledger, verifier_setup, root, manifest)
        assert isinstance(result.exception, SystemExit | None), (case, repr(result.exception))
        assert result.exit_code == 1, (case["file"], result.output)
        assert "Traceback" not in result.stderr
        assert "structure" in _failed_checks(result), (case["file"], _failed_checks(result))


@pytest.mark.parametrize("shape", ["file-link", "dir-link"])
def test_symlinked_artifact_outside_the_candidate_root_is_not_read(
    ledger: Path, tmp_path: Path, verifier_setup: Path, shape: str
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = PATCH_GOOD.read_bytes() + b"+outside the root\n"
    (outside / "changes.patch").write_bytes(secret)
    root, manifest_path = _candidate(tmp_path, "candidate", None)
    manifest = json.loads(manifest_path.read_text())
    manifest["produced_artifacts"][0]["digest"] = _sha(secret)  # the lie a worker would tell
    if shape == "file-link":
        (root / "changes.patch").symlink_to(outside / "changes.patch")
    else:
        (root / "sub").symlink_to(outside, target_is_directory=True)
        manifest["produced_artifacts"][0]["locator"] = "sub/changes.patch"
    manifest_path.write_text(json.dumps(manifest))
    result = _run_verifier(ledger, verifier_setup, root, manifest_path)
    assert result.exit_code == 1, result.output
    assert "artifact-digest" in _failed_checks(result)
    from ledger.store.sqlite import open_store

    with open_store(ledger, readonly=True) as store:
        assert store.get(_sha(secret)) is None, "bytes from outside the root were stored"


def test_wrong_passphrase_through_sign(ledger: Path, tmp_path: Path) -> None:
    if not _has_command("sign"):
        pytest.skip("command not yet available: provledger sign")
    from ledger.trust.keys import generate_key_file

    key = tmp_path / "signer.key"
    generate_key_file(key, passphrase=b"the right one")
    with sqlite3.connect(f"file:{ledger}?mode=ro", uri=True) as conn:
        (subject,) = conn.execute("SELECT digest FROM entries WHERE seq = 0").fetchone()
    conn.close()
    before = fingerprint(ledger)
    runner = CliRunner()
    for env, expected in (
        ({"PROVLEDGER_TEST_PW": "the wrong one"}, "cannot be decrypted"),
        ({"PROVLEDGER_TEST_PW": "the right on"}, "cannot be decrypted"),
        ({"PROVLEDGER_TEST_PW": ""}, "empty"),
        ({}, "unset"),
    ):
        args = ["sign", subject, "--key", str(key), "--passphrase-env", "PROVLEDGER_TEST_PW"]
        result = runner.invoke(app, [*args, "--db", str(ledger)], env=env)
        assert result.exit_code == 3, result.output
        _one_error_line(result.stderr)
        assert expected in result.stderr
    assert fingerprint(ledger) == before


def _import_tree(tmp_path: Path) -> tuple[Path, bytes]:
    """An IDKMesh-shaped folder, and bytes that live outside it."""
    tree = tmp_path / "tree"
    (tree / "benchmarks").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = b"outside the imported folder\n"
    (outside / "secret.txt").write_bytes(secret)
    return tree, secret


def _import(ledger: Path, tree: Path) -> Any:
    return CliRunner().invoke(app, ["import", "idkmesh", str(tree), "--db", str(ledger), "--json"])


def _stored(ledger: Path, digest: str) -> bool:
    from ledger.store.sqlite import open_store

    with open_store(ledger, readonly=True) as store:
        return store.get(digest) is not None


@pytest.mark.parametrize(
    ("entry", "target", "refused"),
    [
        ("benchmarks/notes.txt", "outside/secret.txt", "benchmarks/notes.txt, got a symlink"),
        ("examples", "outside", "examples, got a symlink"),  # a directory link
        ("benchmarks/pipe.json", None, "benchmarks/pipe.json, got not a regular file"),
    ],
    ids=["file-link", "directory-link", "fifo"],
)
def test_import_refuses_what_is_not_a_regular_file(
    ledger: Path, tmp_path: Path, entry: str, target: str | None, refused: str
) -> None:
    """The whole import is refused, with one line, before anything is written; a FIFO
    does not block it."""
    tree, secret = _import_tree(tmp_path)
    (tree / "benchmarks" / "a.txt").write_bytes(b"inside\n")
    if target is None:
        os.mkfifo(tree / entry)
    else:
        (tree / entry).symlink_to(tmp_path / target, target_is_directory=target == "outside")
    before = fingerprint(ledger)
    result = _import(ledger, tree)
    assert result.exit_code == 3, result.output
    _one_error_line(result.stderr)
    assert f"import file {refused}" in result.stderr
    assert not _stored(ledger, _sha(secret)) and fingerprint(ledger) == before


def test_hostile_lines_through_import_jsonl(ledger: Path, tmp_path: Path) -> None:
    """Every hostile JSON case as one line among valid ones: rejected by line number, the
    valid lines imported in order, exit 3."""
    if not _has_command("import", "jsonl"):
        pytest.skip("command not yet available: provledger import jsonl")
    hostile = [
        case
        for case in CASES
        if case["file"].startswith("json/")
        and case["command"] == ["append", "{file}"]
        and not case.get("known_bug")
        and b"\n" not in (HOSTILE / case["file"]).read_bytes().rstrip(b"\n")
        and (HOSTILE / case["file"]).read_bytes().strip(b" \t\r\n")
    ]
    assert len(hostile) >= 30
    valid: list[bytes] = []
    if WORK_UNIT.is_file():
        template = json.loads(WORK_UNIT.read_bytes())
        for i in range(len(hostile) + 1):
            doc = dict(template, id=f"{template['id']}/hostile-{i}")
            valid.append(json.dumps(doc).encode())
    lines: list[bytes] = []
    expected: dict[int, str] = {}
    for i, case in enumerate(hostile):
        if valid:
            lines.append(valid[i])
        lines.append((HOSTILE / case["file"]).read_bytes().rstrip(b"\n"))
        expected[len(lines)] = case["error"]
    if valid:
        lines.append(valid[-1])
    source = tmp_path / "hostile.jsonl"
    source.write_bytes(b"\n".join(lines) + b"\n")
    before = fingerprint(ledger)
    result = CliRunner().invoke(app, ["import", "jsonl", str(source), "--db", str(ledger)])
    assert isinstance(result.exception, SystemExit | None), repr(result.exception)
    assert result.exit_code == 3, result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: line ")]
    assert len(errors) == len(expected), result.stderr
    for line in errors:
        number = int(line.removeprefix("error: line ").split(":", 1)[0])
        assert expected[number] in line, (number, line)
    from ledger.store.sqlite import open_store

    with open_store(ledger, readonly=True) as store:
        added = [e.digest for e in store.entries(since=before[0])]
    from ledger.store.prepared import prepare_json

    assert added == [prepare_json(v).digest for v in valid]


def test_huge_integer_line_does_not_abort_import_jsonl(ledger: Path, tmp_path: Path) -> None:
    if not _has_command("import", "jsonl"):
        pytest.skip("command not yet available: provledger import jsonl")
    source = tmp_path / "huge.jsonl"
    source.write_bytes(b'{"x": ' + b"9" * 5000 + b"}\n")
    result = CliRunner().invoke(app, ["import", "jsonl", str(source), "--db", str(ledger)])
    assert isinstance(result.exception, SystemExit | None), repr(result.exception)
    assert result.exit_code == 3
    assert result.stderr.startswith("error: line 1: ")


def test_oversized_blob_is_refused_before_reading(ledger: Path, tmp_path: Path) -> None:
    """A blob over the size limit is refused (exit 3) and the ledger is unchanged."""
    from ledger.encoding.canonical import DEFAULT_MAX_BYTES

    big = tmp_path / "big.bin"
    with big.open("wb") as handle:
        handle.truncate(DEFAULT_MAX_BYTES + 1)
    before = fingerprint(ledger)
    result = CliRunner().invoke(app, ["append", "--kind", "blob", str(big), "--db", str(ledger)])
    assert result.exit_code == 3, result.output
    assert "too large" in result.stderr
    assert fingerprint(ledger) == before
