"""Calibration: how each plan version judges known-good and known-bad candidates.

A fixture directory (default ``verifiers/fixtures/calibration``, see its ``calibration.json``)
names a WorkUnit, EvaluatorPlans, candidates with their ground truth (``good`` or
``bad``) and, optionally, behavioral probes. ``calibration_table`` evaluates every
candidate under every plan with the ordinary runner and classifies each verdict:
a good candidate rejected is a false negative, a bad one accepted a false positive.
The project's Task 001 fixture reproduces the known story: v0.2 (exact line) rejects
the repair and accepts the decoy; v0.3 (added substring) accepts both; v0.4 (added
and removed substrings) accepts the repair (removed 1 of 1) and rejects the decoy
(removed 0 of 1).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from ledger.bounded import DOCUMENT_LIMIT, PATCH_LIMIT, read_bounded
from ledger.encoding.canonical import parse_strict
from ledger.encoding.digest import canonical_digest
from verifiers.behavioral import load_probe_plan, run_probes
from verifiers.errors import VerifierError
from verifiers.model import EvaluatorPlan, ResultManifest
from verifiers.model.json import as_map, at, maps
from verifiers.runner import Clock, VerificationOutcome, evaluate
from verifiers.sovereignty import Validate

# Package data (pyproject.toml), so an installed wheel has it too.
FIXTURE_DIR = Path(__file__).resolve().parent / "fixtures" / "calibration"
Truth = Literal["good", "bad"]
Verdict = Literal["true_accept", "true_reject", "false_negative", "false_positive"]


def fixed_clock() -> datetime:
    """A constant clock: calibration output is reproducible byte for byte."""
    return datetime(2026, 1, 1, tzinfo=UTC)


def _load(path: Path) -> Any:  # decoded bytes: the checks below read it field by field
    try:
        return parse_strict(read_bounded(path, DOCUMENT_LIMIT, "calibration file"))
    except OSError as exc:
        raise VerifierError(
            f"cannot read calibration file {path}, got {exc.strerror}, expected a JSON file"
        ) from None


@dataclass(frozen=True)
class CalibrationRow:
    """One (plan, candidate) verdict with the counts that explain it."""

    plan_id: str
    plan_version: str
    plan_digest: str
    candidate: str
    truth: Truth
    status: str
    recommendation: str
    summary: str
    metrics: dict[str, int]
    expected_status: str | None
    result_digest: str

    @property
    def verdict(self) -> Verdict:
        accepted = self.status == "passed"
        if self.truth == "good":
            return "true_accept" if accepted else "false_negative"
        return "false_positive" if accepted else "true_reject"

    @property
    def matches_expectation(self) -> bool | None:
        """Whether the plan's declared expectation held (None when it declares none)."""
        return None if self.expected_status is None else self.expected_status == self.status

    def as_json(self) -> dict[str, object]:
        return {
            "plan_id": self.plan_id,
            "plan_version": self.plan_version,
            "plan_digest": self.plan_digest,
            "candidate": self.candidate,
            "truth": self.truth,
            "status": self.status,
            "recommendation": self.recommendation,
            "verdict": self.verdict,
            "summary": self.summary,
            "metrics": self.metrics,
            "expected_status": self.expected_status,
            "matches_expectation": self.matches_expectation,
            "verification_result_digest": self.result_digest,
        }


@dataclass(frozen=True)
class CalibrationTable:
    rows: tuple[CalibrationRow, ...]
    outcomes: tuple[VerificationOutcome, ...]

    def row(self, plan_version: str, candidate: str) -> CalibrationRow:
        for row in self.rows:
            if row.plan_version == plan_version and row.candidate == candidate:
                return row
        raise KeyError((plan_version, candidate))

    def as_json(self) -> list[dict[str, object]]:
        return [row.as_json() for row in self.rows]

    def render(self) -> str:
        """A plain-text table, one line per (plan, candidate)."""
        lines = [f"{'plan':<6} {'candidate':<10} {'status':<7} {'verdict':<15} summary"]
        for r in self.rows:
            lines.append(
                f"v{r.plan_version:<5} {r.candidate:<10} {r.status:<7} {r.verdict:<15} {r.summary}"
            )
        return "\n".join(lines)


@dataclass(frozen=True)
class Fixture:
    """The parsed ``calibration.json`` of a fixture directory."""

    root: Path
    index: dict[str, object]

    @classmethod
    def load(cls, root: Path = FIXTURE_DIR) -> Fixture:
        index = _load(root / "calibration.json")
        if not isinstance(index, dict):
            raise VerifierError(f"bad calibration index in {root}, got non-object, expected object")
        return cls(root, index)

    def path(self, *keys: str) -> Path:
        value = at(self.index, *keys)
        if not isinstance(value, str):
            raise VerifierError(
                f"calibration index lacks {'.'.join(keys)}, got {value!r}, expected a path"
            )
        return self.root / value

    def file_of(self, entry: Mapping[str, object], key: str) -> Path:
        """The fixture file an entry names under ``key`` (a path relative to the root)."""
        value = entry.get(key)
        if not isinstance(value, str):
            raise VerifierError(
                f"calibration entry {entry.get('name')!r} lacks {key}, got {value!r},"
                " expected a path"
            )
        return self.root / value

    @property
    def candidates(self) -> list[Mapping[str, object]]:
        return list(maps(self.index.get("candidates")))

    @property
    def plan_paths(self) -> list[Path]:
        value = self.index.get("plans")
        return [self.root / str(p) for p in value] if isinstance(value, list) else []


def calibration_table(
    fixture_dir: Path = FIXTURE_DIR,
    *,
    validate: Validate,
    clock: Clock = fixed_clock,
) -> CalibrationTable:
    """Evaluate every fixture candidate under every fixture plan (module docstring)."""
    fixture = Fixture.load(fixture_dir)
    work_unit = _load(fixture.path("work_unit"))
    rows: list[CalibrationRow] = []
    outcomes: list[VerificationOutcome] = []
    for plan_path in fixture.plan_paths:
        plan = _load(plan_path)
        plan_digest = canonical_digest(plan)
        expected = at(plan, "extensions", "org.provledger.calibration", "expected_status")
        for cand in fixture.candidates:
            name = str(cand["name"])
            manifest = _load(fixture.file_of(cand, "manifest"))
            outcome = evaluate(
                work_unit,
                plan,
                manifest,
                fixture.file_of(cand, "root"),
                plan_path,
                None,
                plan_digest=plan_digest,
                clock=clock,
                validate=validate,
            )
            result = outcome.result
            want = expected.get(name) if isinstance(expected, dict) else None
            rows.append(
                CalibrationRow(
                    plan_id=str(plan.get("id")),
                    plan_version=outcome.plan_schema_version,
                    plan_digest=plan_digest,
                    candidate=name,
                    truth="good" if cand.get("truth") == "good" else "bad",
                    status=outcome.status,
                    recommendation=outcome.recommendation,
                    summary=outcome.summary,
                    metrics={
                        k: v
                        for k, v in as_map(result.get("metrics")).items()
                        if k.startswith(("matched_", "required_")) and isinstance(v, int)
                    },
                    expected_status=want if isinstance(want, str) else None,
                    result_digest=outcome.result_digest,
                )
            )
            outcomes.append(outcome)
    return CalibrationTable(tuple(rows), tuple(outcomes))


def behavioral_table(
    fixture_dir: Path = FIXTURE_DIR, *, python: str | None = None
) -> dict[str, dict[str, object]]:
    """Behavioral evidence per candidate: the fixture's probes on its source tree."""
    fixture = Fixture.load(fixture_dir)
    plan = load_probe_plan(_load(fixture.path("probes")))
    source = fixture.path("source_tree")
    plans = fixture.plan_paths
    artifact_id = EvaluatorPlan.of(_load(plans[0])).candidate_artifact_id if plans else None
    out: dict[str, dict[str, object]] = {}
    for cand in fixture.candidates:
        manifest = ResultManifest.of(_load(fixture.file_of(cand, "manifest")))
        artifacts = manifest.produced_artifacts
        locators = [a.get("locator") for a in artifacts if a.get("id") == artifact_id]
        if len(locators) != 1 or not isinstance(locators[0], str):
            raise VerifierError(
                f"calibration candidate {cand.get('name')!r} has {len(locators)} artifacts"
                f" with id {artifact_id!r}, expected exactly 1"
            )
        patch = read_bounded(fixture.file_of(cand, "root") / locators[0], PATCH_LIMIT, "patch")
        out[str(cand["name"])] = run_probes(source, patch, plan, python=python)
    return out
