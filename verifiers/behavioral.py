"""Behavioural channel: evaluator-owned probes run against a patched copy of a tree.

This channel is separate from the metadata verifiers: it never reads, builds or
changes a VerificationResult, and its evidence is its own ledger-native object
(``behavioral-evidence`` v0.1, schema ``schemas/behavioral-evidence-v0.1.schema.json``).
Unlike the metadata verifiers it *does* execute candidate code, so:

- the evaluator-owned source tree is copied (regular files and directories only) to a
  fresh temporary directory and the patch is applied there by ``patch_apply`` (pure
  Python, strict, no fuzz); the original tree is never written;
- probes are argv lists run without a shell, with ``cwd`` = the copy, stdin closed,
  a timeout (the whole process group is killed on expiry) and an environment of
  exactly ``PATH`` (inherited) and ``HOME`` (an empty temporary directory): no other
  variable, so no inherited credentials;
- argv placeholders ``{python}``, ``{tree}``, ``{outside}`` and ``{home}`` are replaced
  by the interpreter and the work directories; the evidence records the templates, so
  it holds no temporary paths and is reproducible when the probed program is;
- work-directory layout: ``<tmp>/tree`` (patched copy), ``<tmp>/outside`` (files the
  plan places outside the tree, copied from the unpatched tree), ``<tmp>/home``.
Network access is not isolated here; the evidence says so.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ledger.encoding.canonical import canonicalize
from ledger.encoding.digest import canonical_digest, sha256_digest
from verifiers.candidate import list_tree, locator_problem
from verifiers.diff import parse_patch
from verifiers.errors import DiffError, PatchApplyError, ProbeError
from verifiers.fields import get, str_list
from verifiers.patch_apply import apply_patch

KIND = "behavioral-evidence"
SCHEMA_VERSION = "0.1"
PLACEHOLDERS = ("{python}", "{tree}", "{outside}", "{home}")
Expect = Literal["accept", "reject"]


@dataclass(frozen=True)
class Probe:
    """One evaluator-owned command. ``reject``: must exit non-zero; ``accept``: zero."""

    id: str
    argv: tuple[str, ...]
    expect: Expect


@dataclass(frozen=True)
class ProbePlan:
    """Evaluator-owned probes; ``digest`` is the RFC 8785 digest of the plan JSON."""

    id: str
    timeout_seconds: float
    outside_files: tuple[tuple[str, str], ...]
    probes: tuple[Probe, ...]
    digest: str


def load_probe_plan(value: Any) -> ProbePlan:
    """Read a probe plan object; a malformed plan raises ``ProbeError``."""

    def bad(what: str, got: Any, expected: str) -> ProbeError:
        return ProbeError(f"bad probe plan {what}, got {got!r}, expected {expected}")

    if not isinstance(value, Mapping):
        raise bad("document", type(value).__name__, "an object")
    plan_id = value.get("id")
    if not isinstance(plan_id, str) or not plan_id:
        raise bad("id", plan_id, "a non-empty string")
    timeout = value.get("timeout_seconds")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 3600:
        raise bad("timeout_seconds", timeout, "a number in (0, 3600]")
    outside = value.get("outside_files", {})
    if not isinstance(outside, Mapping):
        raise bad("outside_files", outside, "an object of name -> tree path")
    pairs = []
    for name, source in sorted(outside.items()):
        if not isinstance(source, str) or locator_problem(name) or locator_problem(source):
            raise bad("outside_files entry", {name: source}, "safe relative paths")
        pairs.append((name, source))
    raw = value.get("probes")
    if not isinstance(raw, list) or not raw:
        raise bad("probes", raw, "a non-empty list")
    probes = []
    for item in raw:
        argv = str_list(get(item, "argv"))
        pid, expect = get(item, "id"), get(item, "expect")
        if not isinstance(pid, str) or not pid or not argv or not argv[0]:
            raise bad("probe", item, "an id and a non-empty argv list of strings")
        if expect not in ("accept", "reject"):
            raise bad(f"probe {pid} expect", expect, "'accept' or 'reject'")
        probes.append(Probe(pid, tuple(argv), expect))
    if len({p.id for p in probes}) != len(probes):
        raise bad("probe ids", [p.id for p in probes], "unique ids")
    return ProbePlan(plan_id, float(timeout), tuple(pairs), tuple(probes), canonical_digest(value))


def tree_digest(root: Path) -> str:
    """RFC 8785 digest of ``{"files": {path: sha256}}`` over the tree's regular files."""
    listing = list_tree(root)
    if listing.problems:
        raise ProbeError(
            f"source tree not plain, got {list(listing.problems)[:3]}, expected regular files only"
        )
    files = {rel: sha256_digest((root / rel).read_bytes()) for rel in listing.files}
    return canonical_digest({"files": files})


def _copy_tree(src: Path, dst: Path) -> None:
    listing = list_tree(src)
    if listing.problems:
        raise ProbeError(
            f"source tree not plain, got {list(listing.problems)[:3]}, expected regular files only"
        )
    dst.mkdir(parents=True)
    for rel in listing.files:
        target = dst / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / rel, target)


def _substitute(argv: tuple[str, ...], values: Mapping[str, str]) -> list[str]:
    out = []
    for arg in argv:
        for key, value in values.items():
            arg = arg.replace(key, value)
        out.append(arg)
    return out


def _run_one(
    probe: Probe, argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> dict[str, Any]:
    record: dict[str, Any] = {"id": probe.id, "argv": list(probe.argv), "expect": probe.expect}
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            shell=False,
            close_fds=True,
            start_new_session=True,
        )
    except OSError as exc:
        return {
            **record,
            "status": "failed_to_start",
            "exit_code": None,
            "error": f"{type(exc).__name__}: {exc.strerror}",
            "expectation_met": False,
        }
    try:
        out, err = proc.communicate(timeout=timeout)
        status = "completed" if proc.returncode >= 0 else "signalled"
    except subprocess.TimeoutExpired:
        # The probe may have started children; kill the whole session it leads.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            # A grandchild left the session and holds the pipes: stop reading.
            proc.kill()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
            proc.wait()
            out, err = b"", b""
        status = "timed_out"
    code = proc.returncode if status == "completed" else None
    met = code is not None and ((code == 0) if probe.expect == "accept" else (code != 0))
    if status == "signalled":
        record["signal"] = -proc.returncode
    return {
        **record,
        "status": status,
        "exit_code": code,
        "stdout_digest": sha256_digest(out),
        "stdout_bytes": len(out),
        "stderr_digest": sha256_digest(err),
        "stderr_bytes": len(err),
        "expectation_met": met,
    }


def run_probes(
    source_tree: Path,
    patch: bytes,
    plan: ProbePlan,
    *,
    python: str | None = None,
    verification_result_digest: str | None = None,
) -> dict[str, Any]:
    """Apply ``patch`` to a copy of ``source_tree``, run the plan's probes, return the
    ``behavioral-evidence`` object. A patch that does not parse or apply yields evidence
    with ``patch_applied: false`` and every probe ``not_run``."""
    source_digest = tree_digest(source_tree)
    evidence: dict[str, Any] = {
        "provledger_kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "probe_plan_id": plan.id,
        "probe_plan_digest": plan.digest,
        "candidate_digest": sha256_digest(patch),
        "source_tree_digest": source_digest,
        "environment": {
            "variables": ["HOME", "PATH"],
            "shell": False,
            "timeout_seconds": plan.timeout_seconds,
            "network_isolated": False,
            "candidate_code_executed": True,
        },
        "affects_metadata_result": False,
    }
    if verification_result_digest is not None:
        evidence["verification_result_digest"] = verification_result_digest
    with tempfile.TemporaryDirectory(prefix="provledger-behavioral-") as tmp:
        work = Path(os.path.realpath(tmp))
        tree, outside, home = work / "tree", work / "outside", work / "home"
        _copy_tree(source_tree, tree)
        outside.mkdir()
        home.mkdir()
        for name, source in plan.outside_files:
            target = outside / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source_tree / source, target)
        apply_error: str | None = None
        try:
            apply_patch(tree, parse_patch(patch))
        except (DiffError, PatchApplyError) as exc:
            apply_error = str(exc)
        evidence["patch_applied"] = apply_error is None
        evidence["apply_error"] = apply_error
        evidence["patched_tree_digest"] = tree_digest(tree) if apply_error is None else None
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)}
        values = {
            "{python}": python or sys.executable,
            "{tree}": str(tree),
            "{outside}": str(outside),
            "{home}": str(home),
        }
        records = []
        for probe in plan.probes:
            if apply_error is not None:
                records.append(
                    {
                        "id": probe.id,
                        "argv": list(probe.argv),
                        "expect": probe.expect,
                        "status": "not_run",
                        "exit_code": None,
                        "expectation_met": False,
                    }
                )
                continue
            argv = _substitute(probe.argv, values)
            records.append(_run_one(probe, argv, tree, env, plan.timeout_seconds))
    met = sum(1 for r in records if r["expectation_met"])
    evidence["probes"] = records
    evidence["summary"] = {
        "probe_count": len(records),
        "expectations_met": met,
        "all_expectations_met": met == len(records),
    }
    return evidence


def evidence_bytes(evidence: Mapping[str, Any]) -> bytes:
    """The canonical (RFC 8785) bytes of a behavioural-evidence object."""
    return canonicalize(evidence)
