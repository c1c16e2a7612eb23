"""Burn notices: the ledger-native record that a cohort's outcomes were seen.

A burn notice (kind ``burn-notice``, schema 0.1, ``schemas/burn-notice-v0.1.schema.json``)
names the burned cohort and its unchanged definition digest under both schemes, says
why it burned, which task outcomes are excluded from claims, which tasks may never again
be presented as untouched held-out evidence, and points at successors, prose notices and
the observations that exposed the problem. Lists are sorted so equal facts give equal
bytes and therefore equal digests.

Upstream keeps the same facts in ``extensions["org.idkmesh.phase_b2"].burn`` of the
burned cohort (members ``reason``, ``observed_task``, ``observed_solution_pr``,
``observed_solution_merge_commit``, ``successor_issue``); ``burn_facts_from_extensions``
reads them. The observed task is the one never to be held out again: its solution is
known. Excluded outcomes are the tasks whose ``evidence.status`` is ``excluded``, with
their recorded ``exclusion_reason``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from cohorts.definition import DefinitionDigests, definition_digests, recorded_definition_digest
from cohorts.errors import CohortInputError, DefinitionError, GateError
from cohorts.findings import CohortFinding, error, errors, warning
from cohorts.upstream import PHASE_B2_NAMESPACE
from verifiers.model import CohortView
from verifiers.model.json import as_int, as_map, as_str, maps, shown

KIND = "burn-notice"
SCHEMA_VERSION = "0.1"

ReferenceRel = Literal["successor", "notice", "observation"]
ReferenceType = Literal["issue", "pull_request", "commit", "cohort", "document", "uri"]

_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})\Z"
)


@dataclass(frozen=True)
class TaskReason:
    """A task id with the reason it is listed (excluded outcome or held-out ban)."""

    task: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"task": self.task, "reason": self.reason}


@dataclass(frozen=True)
class Reference:
    """A pointer from a burn notice: ``rel`` says why, ``type`` how to read ``ref``.

    ``digest`` pins content where there is some (a prose notice's bytes, a successor
    cohort's definition digest); ``repository`` scopes issue/PR numbers and commits.
    """

    rel: ReferenceRel
    type: ReferenceType
    ref: str
    digest: str | None = None
    repository: str | None = None

    def to_json(self) -> dict[str, str]:
        out = {"rel": self.rel, "type": self.type, "ref": self.ref}
        if self.digest is not None:
            out["digest"] = self.digest
        if self.repository is not None:
            out["repository"] = self.repository
        return out


def check_timestamp(value: str) -> str:
    """``value`` if it is an RFC 3339 date-time with offset, else ``CohortInputError``."""
    ok = bool(_RFC3339.match(value))
    if ok:
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            ok = False
    if not ok:
        raise CohortInputError(
            f"malformed timestamp, got {shown(value)}, expected RFC 3339 like 2026-01-31T12:00:00Z"
        )
    return value


def _ref_key(ref: Mapping[str, str]) -> tuple[str, ...]:
    return (ref["rel"], ref["type"], ref["ref"], ref.get("digest", ""), ref.get("repository", ""))


def build_burn_notice(
    *,
    cohort_id: str,
    definition_digest: DefinitionDigests,
    reason: str,
    issued_at: str | None,
    excluded_outcomes: Iterable[TaskReason] = (),
    never_again_held_out: Iterable[TaskReason] = (),
    references: Iterable[Reference] = (),
    extensions: Mapping[str, object] | None = None,
) -> dict[str, object]:
    """The burn-notice object. Duplicates are dropped and lists sorted (stable bytes)."""
    if not cohort_id or not reason:
        raise CohortInputError(
            f"burn notice incomplete, got cohort_id {shown(cohort_id)} and reason"
            f" {shown(reason)}, expected both non-empty"
        )
    notice: dict[str, object] = {
        "provledger_kind": KIND,
        "schema_version": SCHEMA_VERSION,
        "cohort_id": cohort_id,
        "definition_digest": definition_digest.to_json(),
        "reason": reason,
        "excluded_outcomes": _task_list(excluded_outcomes, "excluded_outcomes"),
        "never_again_held_out": _task_list(never_again_held_out, "never_again_held_out"),
        "references": sorted(
            {_ref_key(r.to_json()): r.to_json() for r in references}.values(), key=_ref_key
        ),
    }
    if issued_at is not None:
        notice["issued_at"] = check_timestamp(issued_at)
    if extensions:
        notice["extensions"] = copy.deepcopy(dict(extensions))
    return notice


def _task_list(items: Iterable[TaskReason], what: str) -> list[dict[str, str]]:
    by_task: dict[str, TaskReason] = {}
    for item in items:
        other = by_task.get(item.task)
        if other is not None and other.reason != item.reason:
            raise CohortInputError(
                f"{what} lists task {item.task} twice, got reasons {shown(other.reason)} and"
                f" {shown(item.reason)}, expected one reason per task"
            )
        by_task[item.task] = item
    return [by_task[task].to_json() for task in sorted(by_task)]


def burn_notice_for(
    cohort: Mapping[str, object],
    *,
    reason: str,
    issued_at: str,
    never_again_held_out: Iterable[TaskReason] = (),
    references: Iterable[Reference] = (),
    excluded_outcomes: Iterable[TaskReason] | None = None,
) -> dict[str, object]:
    """A burn notice for ``cohort``; excluded outcomes default to its excluded tasks."""
    try:
        digests = definition_digests(cohort)
    except DefinitionError as exc:
        raise CohortInputError(f"cannot burn a cohort without a definition: {exc}") from None
    return build_burn_notice(
        cohort_id=str(CohortView.of(cohort).id),
        definition_digest=digests,
        reason=reason,
        issued_at=issued_at,
        excluded_outcomes=excluded_tasks(cohort)
        if excluded_outcomes is None
        else excluded_outcomes,
        never_again_held_out=never_again_held_out,
        references=references,
    )


def excluded_tasks(cohort: Mapping[str, object]) -> tuple[TaskReason, ...]:
    """Tasks whose ``evidence.status`` is ``excluded``, with their exclusion reason."""
    out: list[TaskReason] = []
    for task in CohortView.of(cohort).tasks:
        if task.evidence_status != "excluded":
            continue
        task_id = as_str(task.id)
        if task_id is None:
            continue
        reason = task.exclusion_reason or "excluded by the cohort"
        out.append(TaskReason(task_id, reason))
    return tuple(out)


def _repository(cohort: Mapping[str, object]) -> str | None:
    repos = [task.source_repository for task in CohortView.of(cohort).tasks]
    if repos and all(isinstance(r, str) and r == repos[0] for r in repos):
        return str(repos[0])
    return None


@dataclass(frozen=True)
class BurnFacts:
    """Burn facts as upstream records them in a burned cohort's extensions."""

    cohort_id: str
    stage: str | None
    recorded_definition_digest: str | None
    definition_digest: DefinitionDigests
    reason: str
    observed_task: str | None
    observed_solution_pr: int | None
    observed_solution_merge_commit: str | None
    successor_issue: int | None
    repository: str | None
    excluded_outcomes: tuple[TaskReason, ...]
    never_again_held_out: tuple[TaskReason, ...]
    namespace: str = PHASE_B2_NAMESPACE
    raw: Mapping[str, object] = field(default_factory=dict, compare=False)

    def references(self) -> tuple[Reference, ...]:
        """Successor and observation references implied by the facts."""
        refs: list[Reference] = []
        if self.successor_issue is not None:
            refs.append(
                Reference("successor", "issue", str(self.successor_issue), None, self.repository)
            )
        if self.observed_solution_pr is not None:
            refs.append(
                Reference(
                    "observation",
                    "pull_request",
                    str(self.observed_solution_pr),
                    None,
                    self.repository,
                )
            )
        if self.observed_solution_merge_commit is not None:
            refs.append(
                Reference(
                    "observation",
                    "commit",
                    self.observed_solution_merge_commit,
                    None,
                    self.repository,
                )
            )
        return tuple(refs)

    def to_notice(
        self, *, issued_at: str | None, references: Iterable[Reference] = ()
    ) -> dict[str, object]:
        """The burn-notice object; ``references`` adds e.g. the prose notice's digest.

        ``issued_at`` None leaves the date out (upstream recorded none)."""
        return build_burn_notice(
            cohort_id=self.cohort_id,
            definition_digest=self.definition_digest,
            reason=self.reason,
            issued_at=issued_at,
            excluded_outcomes=self.excluded_outcomes,
            never_again_held_out=self.never_again_held_out,
            references=(*self.references(), *references),
            extensions={self.namespace: {"burn": dict(self.raw)}},
        )


def burn_facts_from_extensions(
    cohort: Mapping[str, object], namespace: str = PHASE_B2_NAMESPACE
) -> BurnFacts | None:
    """Read ``extensions[namespace].burn``; None when the cohort records no burn facts.

    Raises ``CohortInputError`` when the member exists but is not an object with a
    non-empty string ``reason``, or when the cohort's definition cannot be computed.
    """
    view = CohortView.of(cohort)
    burn = view.extension(namespace, "burn")
    if burn is None:
        return None
    if not isinstance(burn, Mapping) or not as_str(burn.get("reason")):
        raise CohortInputError(
            f"burn facts malformed at $.extensions[{namespace!r}].burn, got {shown(burn)},"
            " expected an object with a non-empty reason"
        )
    try:
        digests = definition_digests(cohort)
    except DefinitionError as exc:
        raise CohortInputError(f"burned cohort has no computable definition: {exc}") from None
    observed = as_str(burn.get("observed_task"))
    pr = as_int(burn.get("observed_solution_pr"))
    commit = as_str(burn.get("observed_solution_merge_commit"))
    never_again: tuple[TaskReason, ...] = ()
    if observed is not None:
        never_again = (TaskReason(observed, _observed_reason(pr, commit)),)
    return BurnFacts(
        cohort_id=str(view.id),
        stage=as_str(view.stage),
        recorded_definition_digest=recorded_definition_digest(cohort),
        definition_digest=digests,
        reason=str(burn["reason"]),
        observed_task=observed,
        observed_solution_pr=pr,
        observed_solution_merge_commit=commit,
        successor_issue=as_int(burn.get("successor_issue")),
        repository=_repository(cohort),
        excluded_outcomes=excluded_tasks(cohort),
        never_again_held_out=never_again,
        namespace=namespace,
        raw=copy.deepcopy(dict(burn)),
    )


#: Members of upstream burn facts that may carry the burn date (first valid one wins).
BURN_DATE_KEYS = ("burned_at", "burn_date", "issued_at", "date")


def upstream_burn_date(facts: BurnFacts) -> str | None:
    """Upstream's own burn date as RFC 3339, or None when its facts record none.

    A bare ``YYYY-MM-DD`` becomes midnight UTC of that day; anything else that is not a
    valid RFC 3339 date-time is ignored rather than guessed at.
    """
    for key in BURN_DATE_KEYS:
        value = as_str(facts.raw.get(key))
        if value is None:
            continue
        bare_day = re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value)
        candidate = value + "T00:00:00Z" if bare_day else value
        try:
            return check_timestamp(candidate)
        except CohortInputError:
            continue
    return None


def _observed_reason(pr: int | None, commit: str | None) -> str:
    parts = ["outcome observed before the burn; its solution is known"]
    if pr is not None:
        parts.append(f"pull request #{pr}")
    if commit is not None:
        parts.append(f"merge commit {commit}")
    return ", ".join(parts)


def check_burn_notice(
    cohort: Mapping[str, object], notice: Mapping[str, object]
) -> list[CohortFinding]:
    """Does ``notice`` truthfully describe burning ``cohort``? All problems, never raises."""
    found: list[CohortFinding] = []
    view = CohortView.of(cohort)
    if notice.get("provledger_kind") != KIND or notice.get("schema_version") != SCHEMA_VERSION:
        found.append(
            error(
                "burn.notice.kind",
                f"not a burn notice, got kind {shown(notice.get('provledger_kind'))} version"
                f" {shown(notice.get('schema_version'))}, expected {KIND} {SCHEMA_VERSION}",
            )
        )
    if notice.get("cohort_id") != view.id:
        found.append(
            error(
                "burn.notice.cohort",
                f"burn notice names another cohort, got {shown(notice.get('cohort_id'))},"
                f" expected {shown(view.id)}",
            )
        )
    stage = view.stage
    if stage not in ("frozen", "burned"):
        found.append(
            error(
                "burn.stage",
                f"only a frozen cohort can burn, got stage {shown(stage)},"
                " expected frozen or burned",
            )
        )
    found += _notice_definition(cohort, notice)
    task_ids = {as_str(t.id) for t in view.tasks}
    listed: set[str] = set()
    for member in ("excluded_outcomes", "never_again_held_out"):
        for item in maps(notice.get(member)):
            task = as_str(item.get("task"))
            if member == "excluded_outcomes" and task is not None:
                listed.add(task)
            if task not in task_ids:
                found.append(
                    error(
                        "burn.notice.task",
                        f"burn notice {member} names an unknown task, got {shown(task)},"
                        " expected a task of the cohort",
                        task,
                    )
                )
    for excluded in excluded_tasks(cohort):
        if excluded.task not in listed:
            found.append(
                warning(
                    "burn.exclusion.unlisted",
                    f"task excluded in the cohort but not in the burn notice, got"
                    f" {excluded.task}, expected it among excluded_outcomes",
                    excluded.task,
                )
            )
    return found


def _notice_definition(
    cohort: Mapping[str, object], notice: Mapping[str, object]
) -> list[CohortFinding]:
    try:
        digests = definition_digests(cohort)
    except DefinitionError as exc:
        return [error("burn.notice.definition", f"cohort definition not computable: {exc}")]
    stated = as_map(notice.get("definition_digest"))
    found: list[CohortFinding] = []
    if stated.get("legacy") != digests.legacy or stated.get("jcs") != digests.jcs:
        found.append(
            error(
                "burn.notice.definition",
                f"burn notice definition digest drift, got {shown(stated.get('legacy'))},"
                f" expected {digests.legacy}",
            )
        )
    recorded = recorded_definition_digest(cohort)
    if recorded is not None and recorded not in digests:
        found.append(
            error(
                "burn.notice.definition",
                f"burned cohort's recorded definition digest drifted, got {recorded},"
                f" expected {digests.legacy}",
            )
        )
    return found


def require_burnable(
    cohort: Mapping[str, object], notice: Mapping[str, object]
) -> list[CohortFinding]:
    """``check_burn_notice``, raising ``GateError`` with every error when any failed."""
    found = check_burn_notice(cohort, notice)
    failed = errors(found)
    if failed:
        raise GateError("burn", failed)
    return found


def never_again_tasks(notice: Mapping[str, object]) -> frozenset[str]:
    """Task ids a burn notice bans from ever being held-out evidence again."""
    return frozenset(
        t for t in (as_str(i.get("task")) for i in maps(notice.get("never_again_held_out"))) if t
    )
