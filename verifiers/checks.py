"""Version-independent observations of a candidate: artifact, size, scope, logs, status.

Each function returns a ``SubCheck``: a verdict, a one-line summary, a JSON observation
and findings. None raises for bad candidate data; a worker-controlled problem is a
failed sub-check, recorded, never an exception.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from ledger.confined import FileObservation, read_in_root
from verifiers.model import ResultManifest, WorkUnit
from verifiers.model.json import at, str_list
from verifiers.report import InputArtifact, ResultFinding


@dataclass(frozen=True)
class SubCheck:
    """One observation that feeds a required validator's verdict."""

    name: str
    passed: bool
    summary: str
    observation: Mapping[str, object]
    findings: tuple[ResultFinding, ...] = ()


@dataclass(frozen=True)
class ArtifactRead:
    """The manifest entry chosen as candidate and what was observed at its locator."""

    artifact_id: str
    entry: Mapping[str, object] | None
    problem: str | None
    file: FileObservation | None

    @property
    def data(self) -> bytes | None:
        return self.file.data if self.file is not None else None

    @property
    def locator(self) -> str:
        loc = at(self.entry, "locator")
        return loc if isinstance(loc, str) else ""

    @property
    def declared_digest(self) -> str | None:
        value = at(self.entry, "digest")
        return value if isinstance(value, str) else None

    def as_input(self) -> InputArtifact | None:
        f = self.file
        if f is None or not f.observed or f.digest is None or f.size is None:
            return None
        media = at(self.entry, "media_type")
        return InputArtifact(
            role="candidate",
            name=self.artifact_id,
            locator=f.locator,
            digest=f.digest,
            size=f.size,
            data=f.data,
            media_type=media if isinstance(media, str) else "application/octet-stream",
        )

    def as_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "artifact_id": self.artifact_id,
            "selection_problem": self.problem,
            "declared_digest": self.declared_digest,
        }
        if self.file is not None:
            out.update(self.file.as_json())
        return out


def read_artifact(
    manifest: ResultManifest, artifact_id: str, root: Path, *, max_bytes: int
) -> ArtifactRead:
    """Select the single produced artifact with ``artifact_id`` and observe its bytes."""
    entries = [a for a in manifest.produced_artifacts if a.get("id") == artifact_id]
    if len(entries) != 1:
        return ArtifactRead(
            artifact_id,
            None,
            f"{len(entries)} produced artifacts with id {artifact_id!r}, expected exactly 1",
            None,
        )
    entry = entries[0]
    locator = at(entry, "locator")
    if not isinstance(locator, str):
        return ArtifactRead(artifact_id, entry, "artifact has no string locator", None)
    return ArtifactRead(artifact_id, entry, None, read_in_root(root, locator, max_bytes=max_bytes))


def artifact_digest_check(art: ArtifactRead) -> SubCheck:
    """Observed sha256 of the candidate bytes equals the manifest's declared digest."""
    f = art.file
    observed = f.digest if f is not None and f.observed else None
    passed = observed is not None and observed == art.declared_digest
    if art.problem is not None:
        summary = f"candidate artifact not selected: {art.problem}"
    elif f is not None and not f.observed:
        summary = f"candidate artifact unreadable ({f.status}: {f.detail})"
    elif passed:
        summary = "observed candidate sha256 matches the ResultManifest"
    else:
        summary = f"observed candidate digest {observed}, declared {art.declared_digest}"
    finding = ResultFinding(
        "high", "provenance", f"Candidate artifact: {summary}.", art.locator or None
    )
    findings = () if passed else (finding,)
    return SubCheck(
        "artifact-digest",
        passed,
        summary,
        {"declared_digest": art.declared_digest, "observed_digest": observed, "matches": passed},
        findings,
    )


def size_check(art: ArtifactRead, max_bytes: int) -> SubCheck:
    """The candidate is at most ``max_bytes`` long (an unreadable one fails)."""
    f = art.file
    # A too_large observation knows its size (fstat) but was never read to the end.
    size = f.size if f is not None and f.status in ("read", "too_large") else None
    passed = size is not None and size <= max_bytes
    summary = (
        f"candidate is {size} bytes, limit {max_bytes}"
        if size is not None
        else "candidate size unknown (not read)"
    )
    findings = () if passed else (ResultFinding("medium", "policy", f"Candidate size: {summary}."),)
    return SubCheck(
        "size",
        passed,
        summary,
        {"bytes": size, "max_bytes": max_bytes, "within_limit": passed},
        findings,
    )


def worker_status_check(manifest: ResultManifest) -> SubCheck:
    """The worker reports ``status: succeeded``."""
    status = manifest.at("status")
    passed = status == "succeeded"
    summary = f"worker status {status!r}" + ("" if passed else ", expected 'succeeded'")
    findings = () if passed else (ResultFinding("high", "policy", f"Worker {summary}."),)
    return SubCheck("worker-status", passed, summary, {"worker_status": status}, findings)


def _patterns(work_unit: WorkUnit, *path: str) -> list[str]:
    return str_list(work_unit.at(*path)) or []


def scope_check(paths: Sequence[str] | None, work_unit: WorkUnit) -> SubCheck:
    """Each changed path avoids ``forbidden_paths`` and matches ``allowed_paths`` and
    ``filesystem_write`` (``fnmatchcase``; an empty allow-list allows nothing)."""
    forbidden = _patterns(work_unit, "constraints", "forbidden_paths")
    allowed = _patterns(work_unit, "constraints", "allowed_paths")
    writable = _patterns(work_unit, "permissions", "filesystem_write")
    violations: list[dict[str, str | None]] = []
    for path in paths or ():
        for pattern in forbidden:
            if fnmatchcase(path, pattern):
                violations.append({"path": path, "rule": "forbidden_paths", "pattern": pattern})
        if not any(fnmatchcase(path, p) for p in allowed):
            violations.append({"path": path, "rule": "allowed_paths", "pattern": None})
        if not any(fnmatchcase(path, p) for p in writable):
            violations.append({"path": path, "rule": "filesystem_write", "pattern": None})
    if paths is None:
        passed, summary = False, "changed paths unknown: the patch did not parse"
    elif not paths:
        passed, summary = False, "no changed paths"
    else:
        passed = not violations
        summary = f"{len(paths)} changed path(s), {len(violations)} scope violation(s)"
    findings = tuple(
        ResultFinding(
            "high",
            "scope",
            f"Changed path violates {v['rule']}"
            + (f" (matches {v['pattern']!r})" if v["pattern"] else " (no pattern matches)")
            + ".",
            v["path"],
        )
        for v in violations
    )
    if paths is None:
        findings = (ResultFinding("high", "scope", "Scope cannot be checked: " + summary + "."),)
    observation = {
        "changed_paths": list(paths) if paths is not None else None,
        "forbidden_paths": forbidden,
        "allowed_paths": allowed,
        "filesystem_write": writable,
        "violations": violations,
    }
    return SubCheck("scope", passed, summary, observation, findings)


def logs_check(
    manifest: ResultManifest,
    root: Path,
    *,
    max_log_bytes: int,
    required_types: Sequence[str],
) -> tuple[SubCheck, tuple[InputArtifact, ...]]:
    """Every log: unique locator, declared digest, regular file in the root, sha256
    matches, size <= ``max_log_bytes``; each required type appears exactly once."""
    raw = manifest.at("logs")
    logs = raw if isinstance(raw, list) else []
    problems: list[str] = []
    records: list[dict[str, object]] = []
    inputs: list[InputArtifact] = []
    locator_counts = Counter(at(log, "locator") for log in logs)
    type_counts: Counter[str] = Counter()
    for index, log in enumerate(logs, start=1):
        locator = at(log, "locator")
        log_type = at(log, "type")
        declared = at(log, "digest")
        record: dict[str, object] = {"index": index, "type": log_type, "declared_digest": declared}
        if isinstance(log_type, str):
            type_counts[log_type] += 1
        if not isinstance(locator, str):
            problems.append(f"log {index}: no string locator")
            records.append(record)
            continue
        if locator_counts[locator] > 1:
            problems.append(f"log {index}: locator {locator!r} is not unique")
        if not isinstance(declared, str):
            problems.append(f"log {index}: no declared digest")
        obs = read_in_root(root, locator, max_bytes=max_log_bytes)
        record.update(obs.as_json())
        matches = obs.observed and obs.digest == declared
        record["matches"] = matches
        record["within_limit"] = obs.status == "read"
        if not obs.observed:
            problems.append(f"log {index} ({locator}): {obs.status}: {obs.detail}")
        elif obs.status == "too_large":
            problems.append(f"log {index} ({locator}): {obs.size} bytes, limit {max_log_bytes}")
        if obs.observed and not matches:
            problems.append(f"log {index} ({locator}): digest {obs.digest}, declared {declared}")
        if obs.observed and obs.digest is not None and obs.size is not None:
            inputs.append(
                InputArtifact(
                    "log",
                    log_type if isinstance(log_type, str) else "other",
                    locator,
                    obs.digest,
                    obs.size,
                    obs.data,
                    "text/plain",
                )
            )
        records.append(record)
    coverage: list[str] = []
    for required in required_types:
        if type_counts[required] != 1:
            coverage.append(f"required log type {required!r} appears {type_counts[required]} times")
    problems.extend(coverage)
    passed = not problems
    summary = (
        f"{len(logs)} log(s) verified, required types {list(required_types)} each present once"
        if passed
        else f"{len(problems)} log problem(s): {problems[0]}"
    )
    findings = tuple(ResultFinding("high", "provenance", f"Log integrity: {p}.") for p in problems)
    observation = {
        "logs": records,
        "required_log_types": list(required_types),
        "observed_type_counts": dict(sorted(type_counts.items())),
        "problems": problems,
    }
    return SubCheck("logs", passed, summary, observation, findings), tuple(inputs)
