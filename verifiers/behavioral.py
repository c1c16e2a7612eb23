"""Behavioral channel: evaluator-owned probes run against a patched copy of a tree.

This channel is separate from the metadata verifiers: it never reads, builds or
changes a VerificationResult, and its evidence is its own ledger-native object
(``behavioral-evidence`` v0.1, schema ``schemas/behavioral-evidence-v0.1.schema.json``).
Unlike the metadata verifiers it *does* execute candidate code, so:

- the evaluator-owned source tree is copied (regular files and directories only) to a
  fresh temporary directory and the patch is applied there by ``patch_apply`` (pure
  Python, strict, no fuzz, within the patched-tree byte budget ``TreeBudget``); the
  original tree is never written; a patch that cannot apply is evidence too;
- probes are argv lists run without a shell, with ``cwd`` = the copy, stdin closed,
  a timeout (the whole process group is killed on expiry) and an environment of
  exactly ``PATH`` (inherited) and ``HOME`` (an empty temporary directory): no other
  variable, so no inherited credentials;
- probes run inside the bubblewrap sandbox of ``verifiers.sandbox`` (namespaces, no
  host directories, no network, resource limits, timeout enforced from outside); without
  a working sandbox ``run_probes`` refuses (``SandboxUnavailable``, exit 4) unless the
  caller passes ``unsandboxed=True``, which the evidence records as ``"confined": false``;
- argv placeholders ``{python}``, ``{tree}``, ``{outside}`` and ``{home}`` are replaced
  by an interpreter visible to the probe and the work directories (inside the sandbox:
  ``/sandbox/tree``, ``/sandbox/outside``, ``/sandbox/home``); the evidence records the
  templates, so it holds no temporary paths and is reproducible when the probed program is;
- stdout and stderr go to files (bounded by the file-size limit inside the sandbox) and
  only their digests and sizes are recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ledger.bounded import DOCUMENT_LIMIT, read_bounded
from ledger.confined import list_tree, locator_problem
from ledger.encoding.canonical import canonicalize
from ledger.encoding.digest import canonical_digest, sha256_digest
from verifiers.diff import parse_patch
from verifiers.errors import DiffError, PatchApplyError, ProbeError
from verifiers.model.json import at, str_list
from verifiers.patch_apply import apply_patch
from verifiers.sandbox import (
    HOME,
    OUTSIDE,
    TREE,
    UNCONFINED,
    Limits,
    ProbeCgroup,
    Sandbox,
    SandboxFile,
    cgroup_available,
    find_sandbox,
    sandbox_python,
)
from verifiers.sandbox import PATH as SANDBOX_PATH

KIND = "behavioral-evidence"
SCHEMA_VERSION = "0.1"
Expect = Literal["accept", "reject"]
_CHUNK = 1 << 16


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


def load_probe_plan(value: object) -> ProbePlan:
    """Read a probe plan object; a malformed plan raises ``ProbeError``."""

    def bad(what: str, got: object, expected: str) -> ProbeError:
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
        argv = str_list(at(item, "argv"))
        pid, expect = at(item, "id"), at(item, "expect")
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
    files = {
        rel: sha256_digest(read_bounded(root / rel, DOCUMENT_LIMIT, "source tree file"))
        for rel in listing.files
    }
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


def _digest_file(fd: int) -> tuple[str, int]:
    """sha256 and size of a whole output file, streamed (bounded memory)."""
    hasher = hashlib.sha256()
    size = 0
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, _CHUNK):
        hasher.update(chunk)
        size += len(chunk)
    return "sha256:" + hasher.hexdigest(), size


def _resolvable(command: str, tree: Path, sandboxed: bool) -> bool:
    """Whether ``command`` names an executable the probe can start, checked on the host
    side the sandbox mirrors (``/usr`` and the patched copy), so a typo or a shell line
    is ``failed_to_start`` rather than an exit code."""
    if "/" not in command:
        dirs = SANDBOX_PATH if sandboxed else os.environ.get("PATH", os.defpath)
        return any(os.access(os.path.join(d, command), os.X_OK) for d in dirs.split(":") if d)
    if not command.startswith("/"):
        return (tree / command).is_file()
    if not sandboxed:
        return os.access(command, os.X_OK)
    if command.startswith(TREE + "/"):
        return (tree / command.removeprefix(TREE + "/")).is_file()
    return command.startswith(("/usr/", "/bin/", "/sbin/")) and os.access(command, os.X_OK)


@dataclass
class _Run:
    """How probes are started: inside a sandbox (``sandbox`` set) or unconfined."""

    sandbox: Sandbox | None
    tree: Path
    work: Path
    env: Mapping[str, str]
    files: list[SandboxFile]
    directories: list[str]
    limits: Limits
    use_cgroup: bool


def _run_one(probe: Probe, argv: list[str], run: _Run, timeout: float) -> dict[str, object]:
    record: dict[str, object] = {"id": probe.id, "argv": list(probe.argv), "expect": probe.expect}

    def not_started(error: str) -> dict[str, object]:
        return {
            **record,
            "status": "failed_to_start",
            "exit_code": None,
            "error": error,
            "expectation_met": False,
        }

    if not _resolvable(argv[0], run.tree, run.sandbox is not None):
        return not_started("FileNotFoundError: No such file or directory")
    flags = os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    out_fd = os.open(run.work / "stdout", flags, 0o600)
    err_fd = os.open(run.work / "stderr", flags, 0o600)
    status_r, status_w = os.pipe()
    try:
        if run.sandbox is not None:
            for f in run.files:  # bwrap reads each descriptor to its end: rewind
                os.lseek(f.fd, 0, os.SEEK_SET)
            cmd = run.sandbox.command(
                argv, limits=run.limits, directories=run.directories, files=run.files
            )
            cmd[1:1] = ["--json-status-fd", str(status_w)]
            cgroup = ProbeCgroup.create(run.limits) if run.use_cgroup else None
            extra: dict[str, Any] = {  # Popen keyword arguments, each of its own type
                "pass_fds": (status_w, *(f.fd for f in run.files)),
                **run.sandbox.popen_kwargs(cgroup),
            }
            env: Mapping[str, str] = {}
        else:
            cgroup = None
            cmd, extra, env = argv, {"cwd": run.tree}, run.env
        try:
            proc = subprocess.Popen(
                cmd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out_fd,
                stderr=err_fd,
                shell=False,
                close_fds=True,
                start_new_session=True,
                **extra,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            if cgroup is not None:
                cgroup.kill_and_remove()
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)
            return not_started(f"{type(exc).__name__}: {reason}")
        os.close(status_w)
        status_w = -1
        try:
            proc.wait(timeout=timeout)
            status = "completed" if proc.returncode >= 0 else "signalled"
        except subprocess.TimeoutExpired:
            # Kill the whole session from outside; in the sandbox the PID namespace and
            # --die-with-parent take every process of the probe with bwrap.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.kill()
            proc.wait()
            status = "timed_out"
        if cgroup is not None:  # nothing of the probe survives it, whatever it did
            cgroup.kill_and_remove()
        if run.sandbox is not None and status == "completed":
            started, exit_code = _bwrap_status(status_r)
            if not started:
                os.lseek(err_fd, 0, os.SEEK_SET)
                message = os.read(err_fd, 500).decode("utf-8", "replace")
                return not_started("sandbox: " + (" ".join(message.split()) or "did not start"))
            if exit_code is not None:
                proc.returncode = exit_code
        out_digest, out_size = _digest_file(out_fd)
        err_digest, err_size = _digest_file(err_fd)
    finally:
        for fd in (out_fd, err_fd, status_r, status_w):
            if fd >= 0:
                os.close(fd)
    code = proc.returncode if status == "completed" else None
    met = code is not None and ((code == 0) if probe.expect == "accept" else (code != 0))
    if status == "signalled":
        record["signal"] = -proc.returncode
    return {
        **record,
        "status": status,
        "exit_code": code,
        "stdout_digest": out_digest,
        "stdout_bytes": out_size,
        "stderr_digest": err_digest,
        "stderr_bytes": err_size,
        "expectation_met": met,
    }


def _bwrap_status(fd: int) -> tuple[bool, int | None]:
    """(the probe started, its exit code) from bwrap's ``--json-status-fd`` stream."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError):
        while len(data) < 1 << 16 and (chunk := os.read(fd, 4096)):
            data += chunk
    started, code = False, None
    for line in data.decode("utf-8", "replace").splitlines():
        with contextlib.suppress(ValueError):
            item = json.loads(line)
            if isinstance(item, dict):
                started = started or "child-pid" in item
                if isinstance(item.get("exit-code"), int):
                    code = item["exit-code"]
    return started, code


def _sandbox_inputs(tree: Path, outside: Path) -> tuple[list[SandboxFile], list[str]]:
    """Open descriptors for every file the sandbox receives, and its directories."""
    files: list[SandboxFile] = []
    directories: set[str] = set()
    try:
        for base, dest_root, read_only in ((tree, TREE, False), (outside, OUTSIDE, True)):
            for rel in list_tree(base).files:
                fd = os.open(base / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                mode = 0o755 if os.fstat(fd).st_mode & 0o100 else 0o644
                files.append(SandboxFile(fd, f"{dest_root}/{rel}", mode, read_only))
                parts = rel.split("/")[:-1]
                for i in range(1, len(parts) + 1):
                    directories.add(f"{dest_root}/{'/'.join(parts[:i])}")
    except BaseException:
        for f in files:
            os.close(f.fd)
        raise
    _ensure_descriptors(len(files) + 16)
    return files, sorted(directories, key=lambda d: (d.count("/"), d))


def _ensure_descriptors(needed: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        if hard != resource.RLIM_INFINITY and hard < needed:
            raise ProbeError(
                f"source tree too large for the sandbox, got {needed} descriptors needed,"
                f" expected at most {hard}"
            )
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))


def run_probes(
    source_tree: Path,
    patch: bytes,
    plan: ProbePlan,
    *,
    python: str | None = None,
    verification_result_digest: str | None = None,
    unsandboxed: bool = False,
) -> dict[str, object]:
    """Apply ``patch`` to a copy of ``source_tree``, run the plan's probes, return the
    ``behavioral-evidence`` object. A patch that does not parse or apply yields evidence
    with ``patch_applied: false`` and every probe ``not_run``.

    Probes run in the bubblewrap sandbox (``verifiers.sandbox``); without a working one
    this raises ``SandboxUnavailable`` before anything runs. ``unsandboxed=True`` is the
    explicit way past, and the evidence says ``"confined": false``.
    """
    sandbox = None if unsandboxed else find_sandbox()
    limits = Limits.for_timeout(plan.timeout_seconds)
    source_digest = tree_digest(source_tree)
    inner_python = sandbox_python(python) if sandbox is not None else python or sys.executable
    use_cgroup = sandbox is not None and cgroup_available(limits)
    evidence: dict[str, object] = {
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
            "network_isolated": sandbox is not None,
            "candidate_code_executed": True,
            "sandbox": (
                dict(UNCONFINED)
                if sandbox is None
                else sandbox.settings(limits, inner_python, use_cgroup)
            ),
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
        if sandbox is not None:
            values = {"{python}": inner_python, "{tree}": TREE, "{outside}": OUTSIDE}
            values["{home}"] = HOME
        else:
            values = {
                "{python}": inner_python,
                "{tree}": str(tree),
                "{outside}": str(outside),
                "{home}": str(home),
            }
        files, directories = (
            _sandbox_inputs(tree, outside) if sandbox and apply_error is None else ([], [])
        )
        env = {"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)}
        run = _Run(sandbox, tree, work, env, files, directories, limits, use_cgroup)
        records: list[dict[str, object]] = []
        try:
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
                records.append(_run_one(probe, argv, run, plan.timeout_seconds))
        finally:
            for f in files:
                os.close(f.fd)
    met = sum(1 for r in records if r["expectation_met"])
    evidence["probes"] = records
    evidence["summary"] = {
        "probe_count": len(records),
        "expectations_met": met,
        "all_expectations_met": met == len(records),
    }
    return evidence


def evidence_bytes(evidence: Mapping[str, object]) -> bytes:
    """The canonical (RFC 8785) bytes of a behavioral-evidence object."""
    return canonicalize(evidence)
