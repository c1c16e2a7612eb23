"""Behavioral runs cannot fill the host, and a patch that cannot apply is still evidence.

The attacks: a patch of many ``copy from``/``copy to`` sections duplicates a large file of
the source tree once per section (a 4 MB patch wrote 1.2 GB to the host's /tmp before
the sandbox started); a patch creating ``a.txt/x`` where ``a.txt`` is a file made the run
exit 3 and record nothing, though the docs promise evidence with ``patch_applied: false``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_sandbox_escape import needs_sandbox
from typer.testing import CliRunner

from ledger.cli import app
from ledger.store.sqlite import open_store
from verifiers.diff import parse_patch
from verifiers.errors import PatchApplyError
from verifiers.patch_apply import (
    DIRECTORY_BYTES,
    PATCHED_TREE_BYTES,
    TreeBudget,
    apply_patch,
    tree_bytes,
)

LINE = b"x" * ((1 << 16) - 1) + b"\n"  # long lines: few for the applier to split


def _source(root: Path, big_bytes: int) -> Path:
    root.mkdir()
    (root / "big.txt").write_bytes(b"head\n" + LINE * (big_bytes // len(LINE)))
    (root / "a.txt").write_bytes(b"a file, not a directory\n")
    return root


def _amplifier(copies: int) -> bytes:
    """``copies`` sections, each copying big.txt (about 130 bytes of patch per copy)."""
    return "".join(
        f"diff --git a/big.txt b/c{i}.txt\nsimilarity index 99%\ncopy from big.txt\n"
        f"copy to c{i}.txt\n--- a/big.txt\n+++ b/c{i}.txt\n@@ -1 +1 @@\n-head\n+copy {i}\n"
        for i in range(copies)
    ).encode()


UNAPPLIABLE = b"diff --git a/a.txt/x b/a.txt/x\nnew file mode 100644\n--- /dev/null\n+++ b/a.txt/x\n@@ -0,0 +1 @@\n+below a file\n"  # noqa: E501


def test_an_amplifying_patch_stops_at_the_budget(tmp_path: Path) -> None:
    tree = _source(tmp_path / "tree", 1 << 20)
    patch = _amplifier(300)  # about 39 KB asking for about 300 MiB
    budget = TreeBudget(total_bytes=8 << 20)
    with pytest.raises(PatchApplyError, match=r"at most 8388608 bytes \(the patched-tree budget\)"):
        apply_patch(tree, parse_patch(patch), budget)
    # Refused before the write that would pass it: the tree never held more.
    assert (1 << 20) * 7 <= tree_bytes(tree) <= budget.total_bytes
    # One file past the per-file limit is refused the same way.
    with pytest.raises(PatchApplyError, match="in one file of the patched tree"):
        apply_patch(tree, parse_patch(_amplifier(1)), TreeBudget(file_bytes=1000))


def test_a_filesystem_refusal_is_a_patch_apply_error(tmp_path: Path) -> None:
    tree = _source(tmp_path / "tree", 4096)
    with pytest.raises(PatchApplyError, match=r"Not a directory at 'a.txt/x'"):
        apply_patch(tree, parse_patch(UNAPPLIABLE))


def _plan(path: Path) -> Path:
    plan = {
        "id": "bounds",
        "timeout_seconds": 10,
        "probes": [{"id": "runs", "argv": ["{python}", "-c", "pass"], "expect": "accept"}],
    }
    path.write_text(json.dumps(plan))
    return path


EXE = Path(sys.executable).parent / "provledger"


def _args(db: Path, tree: Path, patch: Path, plan: Path) -> list[str]:
    args = ["behavioral", "run", "--source-tree", str(tree), "--patch", str(patch)]
    return [*args, "--probes", str(plan), "--db", str(db), "--json"]


def _run(runner: CliRunner, db: Path, tree: Path, patch: Path, plan: Path) -> dict[str, object]:
    result = runner.invoke(app, [*_args(db, tree, patch, plan), "--unsandboxed"])
    # Not applied: every probe is not_run, so no expectation is met (exit 1), and the
    # evidence is recorded all the same.
    assert result.exit_code == 1, (result.stdout, result.stderr)
    info: dict[str, object] = json.loads(result.stdout)
    _recorded(db, info)
    return info


def _recorded(db: Path, info: dict[str, object]) -> dict[str, object]:
    """The stored evidence of a run whose patch was not applied."""
    with open_store(db, readonly=True) as store:
        digest = info["evidence_digest"]
        assert isinstance(digest, str)
        stored = store.get(digest)
        assert stored is not None and stored.kind == "behavioral-evidence"
        evidence = json.loads(stored.data)
    assert evidence["patch_applied"] is False and evidence["patched_tree_digest"] is None
    assert [p["status"] for p in evidence["probes"]] == ["not_run"]
    assert isinstance(evidence, dict)
    return evidence


def test_unappliable_and_amplifying_patches_are_recorded_as_not_applied(
    tmp_path: Path, ledger_path: Path, runner: CliRunner
) -> None:
    tree = _source(tmp_path / "tree", 8 << 20)
    plan = _plan(tmp_path / "plan.json")
    unappliable = tmp_path / "unappliable.patch"
    unappliable.write_bytes(UNAPPLIABLE)
    info = _run(runner, ledger_path, tree, unappliable, plan)
    assert "Not a directory at 'a.txt/x'" in str(info["apply_error"])
    # 20 copies of an 8 MiB file would be 168 MiB: the budget (128 MiB) stops it.
    amplifier = tmp_path / "amplifier.patch"
    amplifier.write_bytes(_amplifier(20))
    info = _run(runner, ledger_path, tree, amplifier, plan)
    assert f"at most {PATCHED_TREE_BYTES} bytes (the patched-tree budget)" in str(
        info["apply_error"]
    )


def test_directories_the_patch_creates_count_against_the_budget(tmp_path: Path) -> None:
    """Deep paths create thousands of directories per file section: each one is charged."""
    tree = _source(tmp_path / "tree", 4096)
    deep = "/".join(["d"] * 500)
    patch = "".join(
        f"diff --git a/{deep}/{i}.txt b/{deep}/{i}.txt\nnew file mode 100644\n"
        f"--- /dev/null\n+++ b/{deep}/{i}.txt\n@@ -0,0 +1 @@\n+x\n"
        for i in range(3)
    ).encode()
    budget = TreeBudget(total_bytes=DIRECTORY_BYTES * 400)
    with pytest.raises(PatchApplyError, match="the patched-tree budget"):
        apply_patch(tree, parse_patch(patch), budget)
    assert not (tree / "d").exists()  # refused before the first directory was made
    apply_patch(tree, parse_patch(patch), TreeBudget(total_bytes=DIRECTORY_BYTES * 600))
    assert (tree / deep / "2.txt").read_bytes() == b"x\n"  # 500 directories, made once


@needs_sandbox
def test_the_installed_cli_records_both_in_the_sandbox(tmp_path: Path, ledger_path: Path) -> None:
    """The real CLI in a subprocess with the bubblewrap sandbox (no --unsandboxed): both
    patches are evidence of a confined run, and the host's temporary folder is left empty."""
    if not EXE.exists():
        pytest.skip(f"installed console script missing: {EXE}")
    tree = _source(tmp_path / "tree", 8 << 20)
    plan = _plan(tmp_path / "plan.json")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "TMPDIR": str(scratch)}
    cases = {
        "unappliable": (UNAPPLIABLE, "Not a directory at 'a.txt/x'"),
        "amplifier": (_amplifier(20), f"at most {PATCHED_TREE_BYTES} bytes (the patched-tree"),
    }
    for name, (body, why) in cases.items():
        patch = tmp_path / f"{name}.patch"
        patch.write_bytes(body)
        cmd = [str(EXE), *_args(ledger_path, tree, patch, plan)]
        run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert run.returncode == 1, (name, run.stdout, run.stderr)
        info = json.loads(run.stdout)
        assert why in info["apply_error"], (name, info)
        evidence = _recorded(ledger_path, info)
        environment = evidence["environment"]
        assert isinstance(environment, dict) and environment["sandbox"]["confined"] is True
        assert list(scratch.iterdir()) == []  # the patched copy is gone with the run
