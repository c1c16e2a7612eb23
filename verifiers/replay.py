"""Re-judgement: re-run the verifier a VerificationResult names on the inputs it names.

A signature shows who said a verdict, never whether it is true. ``replay`` recomputes
the verdict from the inputs the result itself names, with the verifier version it
names, and compares the recomputed bytes with the stored ones:

- **reproduced**: the recomputed result is byte for byte the stored one;
- **differs**: it is not; the report names every differing member (JSON paths), or
  the rule by which this verifier refuses those inputs;
- **cannot replay**: an input is missing (named, with its digest), or this build
  has no verifier of the version the result names, or no release of the verifiers
  of the one it names (``verifiers.releases``; a result written by upstream's
  verifier names none).

The re-run uses the release the result names (``release_of(result).version``): a
release's verdicts never change, so a result recorded by an older release re-derives
its own bytes.

Inputs come from an ``Inputs`` lookup (the ledger, or a bundle's carried inputs):
the WorkUnit (``provenance.work_unit_digest``), the EvaluatorPlan
(``provenance.verifier_config_digest``), the ResultManifest
(``provenance.result_manifest_digest``), each by either digest scheme, and the worker
files the verifier reads, as blobs by the digest the manifest declares: the candidate
artifact (the plan's ``candidate_artifact_id``) and every log. Other declared
artifacts are written when present and otherwise left out (the verifiers do not read
them). The candidate root is rebuilt in a temporary directory from those bytes.

What is compared: every byte. The only members a run takes from outside its inputs
are the two clock readings (``started_at``, ``finished_at``) and what derives from
them (``resources.wall_seconds``); the replay reads the clock back from the stored
result, so they compare equal. When a stored reading cannot be read back, those three
members are left out of the comparison and the report says so (``uncompared``). A
result carries no run id and no host-specific field (``verifiers.runner``), so
nothing else may legitimately differ.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol

from ledger.confined import locator_problem
from ledger.encoding.canonical import parse_strict
from ledger.encoding.digest import legacy_digest, sha256_digest
from ledger.errors import LedgerError
from verifiers.errors import SovereigntyError, VerifierError
from verifiers.model import EvaluatorPlan, ResultManifest, VerificationResult, WorkUnit
from verifiers.model.json import as_str, at
from verifiers.registry import spec_for
from verifiers.releases import release_of
from verifiers.sovereignty import Validate

Status = Literal["reproduced", "differs", "cannot_replay"]
STATUS_TEXT: Mapping[Status, str] = {
    "reproduced": "reproduced",
    "differs": "DIFFERS",
    "cannot_replay": "cannot replay",
}
#: Members a run takes from the clock (read back from the stored result).
CLOCK_MEMBERS = ("started_at", "finished_at", "resources.wall_seconds")
MAX_PATHS = 40


@dataclass(frozen=True)
class Input:
    """One stored input: its kind, its stored bytes and, for JSON, its value as first
    parsed (float hints applied, so upstream's legacy digest recomputes)."""

    kind: str
    data: bytes
    value: object = None


class Inputs(Protocol):
    """Where replay finds inputs: by ledger digest, or (documents) by legacy digest.
    ``where`` names the source in reports ("the ledger", "the bundle")."""

    @property
    def where(self) -> str: ...

    def find(self, digest: str) -> Input | None: ...


class MemoryInputs:
    """``Inputs`` over (kind, bytes) pairs held in memory (a bundle's inputs)."""

    where = "the bundle"

    def __init__(self, items: Sequence[tuple[str, bytes]]) -> None:
        self._by: dict[str, Input] = {}
        for kind, data in items:
            value: object = None
            if kind != "blob":
                try:
                    value = parse_strict(data)
                except LedgerError:
                    value = None
            item = Input(kind, data, value)
            self._by.setdefault(sha256_digest(data), item)
            if isinstance(value, Mapping):
                self._by.setdefault(legacy_digest(value), item)

    def find(self, digest: str) -> Input | None:
        return self._by.get(digest)


@dataclass(frozen=True)
class Needed:
    """One input a replay needs: what it is and the digest that names it."""

    role: str  # "work unit", "evaluator plan", "result manifest", "candidate", "log"
    name: str
    digest: str | None
    locator: str | None = None

    def text(self) -> str:
        name = "" if self.name in ("", "?", "None") else f" {self.name}"
        where = f" ({self.locator})" if self.locator else ""
        return f"{self.role}{name}{where} {self.digest or '(no digest recorded)'}"


@dataclass(frozen=True)
class Replay:
    """The outcome of one re-judgement."""

    status: Status
    reason: str
    verifier: str
    differing: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    uncompared: tuple[str, ...] = ()
    recomputed_digest: str | None = None

    @property
    def ok(self) -> bool:
        return self.status == "reproduced"

    def to_json(self) -> dict[str, object]:
        return {
            "status": self.status,
            "reason": self.reason,
            "verifier": self.verifier,
            "differing": list(self.differing),
            "missing": list(self.missing),
            "uncompared": list(self.uncompared),
            "recomputed_digest": self.recomputed_digest,
        }

    def line(self) -> str:
        return f"{STATUS_TEXT[self.status]}: {self.reason}"


def _verifier_text(result: VerificationResult) -> str:
    vid, adapter, version = result.verifier
    return f"{vid} {adapter} {version}"


def needed(result: VerificationResult, inputs: Inputs) -> list[tuple[Needed, Input | None]]:
    """Every input the replay of ``result`` needs, and what ``inputs`` holds for it."""
    out: list[tuple[Needed, Input | None]] = []
    docs = (
        ("work unit", "work-unit", as_str(result.work_unit_digest), result.work_unit_id),
        (
            "evaluator plan",
            "evaluator-plan",
            as_str(result.verifier_config_digest),
            at(result.value, "extensions", "org.idkmesh.evaluator_plan.id"),
        ),
        (
            "result manifest",
            "result-manifest",
            as_str(result.result_manifest_digest),
            result.result_manifest_id,
        ),
    )
    for role, kind, digest, name in docs:
        found = inputs.find(digest) if digest else None
        if found is not None and (found.kind != kind or not isinstance(found.value, Mapping)):
            found = None
        out.append((Needed(role, str(name or "?"), digest), found))
    manifest = out[2][1]
    plan = out[1][1]
    if manifest is None or not isinstance(manifest.value, Mapping):
        return out
    candidate_id = at(plan.value, "candidate_artifact_id") if plan is not None else None
    for artifact in ResultManifest.of(manifest.value).produced_artifacts:
        role = "candidate" if artifact.get("id") == candidate_id else "artifact"
        out.append(_file(role, artifact.get("id"), artifact, inputs))
    for log in ResultManifest.of(manifest.value).logs:
        out.append(_file("log", log.get("type"), log, inputs))
    return out


def _file(
    role: str, name: object, entry: Mapping[str, object], inputs: Inputs
) -> tuple[Needed, Input | None]:
    digest = as_str(entry.get("digest"))
    found = inputs.find(digest) if digest else None
    if found is not None and sha256_digest(found.data) != digest:
        found = None  # a document found by its legacy digest is not the file's bytes
    return Needed(role, str(name), digest, as_str(entry.get("locator"))), found


def input_digests(result_bytes: bytes, inputs: Inputs) -> list[str]:
    """The ledger digests of every stored input the replay of ``result_bytes`` needs
    (what ``bundle export --with-inputs`` carries)."""
    result = VerificationResult.parse(result_bytes)
    out = []
    for _need, found in needed(result, inputs):
        if found is not None:
            out.append(sha256_digest(found.data))
    return list(dict.fromkeys(out))


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _clock(result: VerificationResult) -> tuple[Callable[[], datetime], tuple[str, ...]]:
    """A clock reading back the stored start and finish, and what cannot be compared
    (all three clock members, when a stored reading is not an RFC 3339 time)."""
    readings = []
    for member in ("started_at", "finished_at"):
        text = as_str(result.value.get(member))
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
        except ValueError:
            moment = None
        if moment is None or moment.utcoffset() is None:
            return (lambda: _EPOCH), CLOCK_MEMBERS
        readings.append(moment)
    ticks: Iterator[datetime] = iter(readings)
    return (lambda: next(ticks, readings[-1])), ()


def replay(result_bytes: bytes, inputs: Inputs, validate: Validate) -> Replay:
    """Re-judge the stored VerificationResult ``result_bytes`` (see the module docstring)."""
    result = VerificationResult.parse(result_bytes)
    verifier = _verifier_text(result)
    found = needed(result, inputs)
    missing = [need.text() for need, item in found if item is None and need.role != "artifact"]
    if missing:
        return Replay(
            "cannot_replay",
            f"{inputs.where} lacks {len(missing)} input(s): {'; '.join(missing)}",
            verifier,
            missing=tuple(missing),
        )
    work_unit, plan, manifest = (item for _need, item in found[:3])
    assert work_unit is not None and plan is not None and manifest is not None
    plan_doc = EvaluatorPlan.of(plan.value)
    spec = spec_for(plan_doc.schema_version)
    named = result.verifier
    if spec is None or (spec.verifier_id, spec.adapter, spec.adapter_version) != named:
        have = (
            "none" if spec is None else f"{spec.verifier_id} {spec.adapter} {spec.adapter_version}"
        )
        return Replay(
            "cannot_replay",
            f"this build has no verifier {verifier} for plan v{plan_doc.schema_version},"
            f" got {have}, expected the version the result names",
            verifier,
        )
    try:
        # A release's verdicts never change (verifiers.releases): the result is re-run
        # by the release it names, so a verdict of an older release re-derives itself.
        judged_by = release_of(result.value).version
    except SovereigntyError as exc:
        return Replay(
            "cannot_replay",
            f"this build has no release of the verifiers the result names ({exc})",
            verifier,
        )
    clock, uncompared = _clock(result)
    manifest_doc = ResultManifest.of(manifest.value)
    recorded_manifest = as_str(result.result_manifest_digest)
    with tempfile.TemporaryDirectory(prefix="provledger-replay-") as tmp:
        root = Path(tmp) / "candidate"
        root.mkdir()
        for need, item in found[3:]:
            if item is None or need.locator is None or locator_problem(need.locator):
                continue
            target = root.joinpath(*need.locator.split("/"))
            try:
                if target.exists():
                    continue  # a second entry at one locator: the first is what a run read
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(item.data)
            except OSError:
                # Locators a file system cannot hold together (a file where another
                # entry needs a folder, a name too long): a run could not have read them
                # either; the verifier sees them missing.
                continue
        from verifiers.runner import evaluate

        try:
            outcome = evaluate(
                WorkUnit.of(work_unit.value).value,
                plan_doc.value,
                manifest_doc.value,
                root,
                None,
                None,
                plan_digest=str(result.verifier_config_digest),
                clock=clock,
                validate=validate,
                manifest_digest=None
                if recorded_manifest == manifest_doc.digest
                else recorded_manifest,
                release_version=judged_by,
            )
        except SovereigntyError as exc:
            return Replay(
                "differs",
                f"{verifier} refuses these inputs ({exc.code}: {exc}), the stored result"
                " claims a verdict on them",
                verifier,
                differing=("(verdict refused)",),
            )
        except VerifierError as exc:
            return Replay("differs", f"{verifier} fails on these inputs: {exc}", verifier)
    if outcome.result_bytes == result_bytes:
        return Replay(
            "reproduced",
            f"{verifier} recomputes the stored bytes exactly ({outcome.result_digest})",
            verifier,
            recomputed_digest=outcome.result_digest,
        )
    paths = [
        p
        for p in differing_paths(result.value, outcome.result)
        if not any(p == u or p.startswith(f"{u}.") for u in uncompared)
    ]
    if not paths:
        return Replay(
            "reproduced",
            f"{verifier} recomputes the stored result; {', '.join(uncompared)} not compared"
            " (the stored clock readings cannot be read back)",
            verifier,
            uncompared=uncompared,
            recomputed_digest=outcome.result_digest,
        )
    shown = ", ".join(paths[:MAX_PATHS]) + (", ..." if len(paths) > MAX_PATHS else "")
    return Replay(
        "differs",
        f"{verifier} on the stored inputs gives {outcome.status}"
        f" ({outcome.recommendation}), {len(paths)} member(s) differ: {shown}",
        verifier,
        differing=tuple(paths),
        uncompared=uncompared,
        recomputed_digest=outcome.result_digest,
    )


def differing_paths(stored: object, recomputed: object, path: str = "") -> list[str]:
    """JSON paths (``a.b[2].c``) where the two values differ, leaves first found."""
    if isinstance(stored, Mapping) and isinstance(recomputed, Mapping):
        out: list[str] = []
        for key in sorted(set(stored) | set(recomputed)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in stored or key not in recomputed:
                out.append(sub)
            else:
                out += differing_paths(stored[key], recomputed[key], sub)
        return out
    if isinstance(stored, list) and isinstance(recomputed, list) and len(stored) == len(recomputed):
        out = []
        for index, (a, b) in enumerate(zip(stored, recomputed, strict=True)):
            out += differing_paths(a, b, f"{path}[{index}]")
        return out
    same = type(stored) is type(recomputed) and stored == recomputed
    return [] if same else [path or "(document)"]


def replay_carried(
    kind: str, data: bytes, carried: Sequence[tuple[str, bytes]]
) -> dict[str, object]:
    """Re-judge a bundle's subject from the inputs the bundle carries (no database):
    ``bundle verify --replay``. A subject that is no VerificationResult cannot replay."""
    if kind != "verification-result":
        return Replay("cannot_replay", f"a {kind} is no verdict to re-judge", "none").to_json()
    from ledger.schema.validation import validate

    return replay(data, MemoryInputs(carried), validate).to_json()
