"""Evaluator Sovereignty: every rule has its own code, fails closed, before any reading."""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from ledger.encoding.digest import canonical_digest, legacy_digest
from ledger.errors import KindError, LedgerError, RuleViolation, SchemaError
from ledger.schema.validation import validate
from verifiers import checks as checks_module
from verifiers.errors import SovereigntyError, VerifierError
from verifiers.runner import evaluate
from verifiers.sovereignty import check_post_evaluation, check_pre_evaluation

FIX = Path(__file__).resolve().parents[1] / "verifiers" / "fixtures" / "calibration"
Docs = dict[str, Any]


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def permissive(kind: str, version: str, obj: Any) -> None:
    """A validator that accepts anything: the verifiers must still not crash."""


@pytest.fixture
def docs(tmp_path: Path) -> Docs:
    root = tmp_path / "candidate"
    shutil.copytree(FIX / "candidates" / "repair", root)
    return {
        "wu": load(FIX / "work-unit.json"),
        "plan": load(FIX / "plans" / "evaluator-plan-v0.4.json"),
        "manifest": load(FIX / "manifests" / "repair.result-manifest.json"),
        "root": root,
        "plan_path": tmp_path / "plan.json",
        "output_path": tmp_path / "out" / "result.json",
        "plan_digest": None,
        "validate": validate,
    }


def pre(d: Docs) -> Any:
    return check_pre_evaluation(
        d["wu"],
        d["plan"],
        d["manifest"],
        candidate_root=d["root"],
        plan_path=d["plan_path"],
        output_path=d["output_path"],
        plan_digest=d["plan_digest"] or canonical_digest(d["plan"]),
        validate=d["validate"],
    )


def rebind(d: Docs) -> None:
    """Point plan and manifest at the (changed) WorkUnit's digest."""
    digest = canonical_digest(d["wu"])
    d["plan"]["binding"]["work_unit_digest"] = digest
    d["manifest"]["provenance"]["work_unit_digest"] = digest


def set_validators(d: Docs, ids: list[str]) -> None:
    d["wu"]["validators"] = [{"id": i, "type": "review", "required": True} for i in ids]
    d["plan"]["required_validator_ids"] = ids
    d["manifest"]["verification_request"]["expected_validator_ids"] = ids
    rebind(d)


def other_revision(d: Docs) -> None:
    d["wu"]["provenance"]["source_revision"] = "other-rev"
    rebind(d)


def symlinked_plan(d: Docs) -> None:
    target = d["root"] / "plan.json"
    target.write_text("{}")
    os.symlink(target, d["plan_path"])


def symlinked_output(d: Docs) -> None:
    os.symlink(d["root"], d["output_path"].parent)


MUTATIONS: list[tuple[str, Callable[[Docs], object], str]] = [
    ("SOV-INPUT-TYPE", lambda d: d.update(plan=[]), "got list"),
    ("SOV-PLAN-VERSION", lambda d: d["plan"].update(schema_version="0.9"), "got 0.9"),
    ("SOV-SCHEMA-WORK-UNIT", lambda d: d["wu"].pop("objective"), "work-unit fails"),
    ("SOV-SCHEMA-RESULT-MANIFEST", lambda d: d["manifest"].update(extra=1), "result-manifest"),
    ("SOV-SCHEMA-PLAN", lambda d: d["plan"]["backend"].pop("required_removed_substrings"), "plan"),
    (
        "SOV-PLAN-BACKEND",
        lambda d: (
            d.update(validate=permissive),
            d["plan"]["backend"].pop("required_removed_substrings"),
        ),
        "required_removed_substrings",
    ),
    (
        "SOV-PLAN-BACKEND",
        lambda d: (d.update(validate=permissive), d["plan"]["backend"].update(type="zip")),
        "got zip, expected unified_diff",
    ),
    (
        "SOV-PLAN-VERIFIER",
        lambda d: (
            d.update(validate=permissive),
            d["plan"]["verifier"].update(adapter_version="0.2.0"),
        ),
        "'adapter_version': '0.2.0'",
    ),
    (
        "SOV-PLAN-EXECUTION-MODE",
        lambda d: (d.update(validate=permissive), d["plan"].update(execution_mode="sandbox")),
        "got sandbox, expected metadata_only",
    ),
    (
        "SOV-PLAN-POLICY",
        lambda d: (
            d.update(validate=permissive),
            d["plan"]["policy"].update(require_verifier_distinct_from_worker=False),
        ),
        "require_verifier_distinct_from_worker",
    ),
    (
        "SOV-BINDING-WORK-UNIT-ID",
        lambda d: d["plan"]["binding"].update(work_unit_id="other/unit"),
        "got other/unit, expected provledger/calibration/task-001-cohort-path-boundary",
    ),
    (
        "SOV-BINDING-WORK-UNIT-VERSION",
        lambda d: d["plan"]["binding"].update(work_unit_version=2),
        "got 2, expected 1",
    ),
    (
        "SOV-BINDING-DIGEST",
        lambda d: d["plan"]["binding"].update(work_unit_digest="sha256:" + "a" * 64),
        "got sha256:aaaa",
    ),
    (
        "SOV-BINDING-SOURCE-REVISION",
        other_revision,
        "got provledger-calibration-task001-v1, expected other-rev",
    ),
    (
        "SOV-MANIFEST-SOURCE-REVISION",
        lambda d: d["manifest"]["provenance"].update(source_revision="rev-2"),
        "got rev-2, expected provledger-calibration-task001-v1",
    ),
    (
        "SOV-MANIFEST-WORK-UNIT-ID",
        lambda d: d["manifest"].update(work_unit_id="other/unit"),
        "got other/unit",
    ),
    (
        "SOV-MANIFEST-WORK-UNIT-VERSION",
        lambda d: d["manifest"].update(work_unit_version=3),
        "got 3, expected 1",
    ),
    (
        "SOV-MANIFEST-WORK-UNIT-DIGEST",
        lambda d: d["manifest"]["provenance"].update(work_unit_digest="sha256:" + "b" * 64),
        "got sha256:bbbb",
    ),
    (
        "SOV-REQUIRED-VALIDATORS",
        lambda d: d["plan"].update(required_validator_ids=["result-manifest-schema", "extra"]),
        "missing ['independent-review'], extra ['extra']",
    ),
    (
        "SOV-BACKEND-VALIDATORS",
        lambda d: set_validators(d, ["result-manifest-schema", "independent-review", "lint"]),
        "missing ['lint']",
    ),
    (
        "SOV-MANIFEST-VALIDATORS",
        lambda d: d["manifest"]["verification_request"].update(
            expected_validator_ids=["result-manifest-schema"]
        ),
        "misses ['independent-review']",
    ),
    (
        "SOV-VERIFIER-IS-WORKER",
        lambda d: d["manifest"]["worker"].update(id="idkmesh-local-verifier"),
        "got idkmesh-local-verifier",
    ),
    ("SOV-CANDIDATE-ROOT", lambda d: d.update(root=d["root"] / "nope"), "existing directory"),
    (
        "SOV-PLAN-INSIDE-CANDIDATE-ROOT",
        lambda d: d.update(plan_path=d["root"] / "plan.json"),
        "plan file is inside",
    ),
    ("SOV-PLAN-INSIDE-CANDIDATE-ROOT", symlinked_plan, "plan file is inside"),
    (
        "SOV-OUTPUT-INSIDE-CANDIDATE-ROOT",
        lambda d: d.update(output_path=d["root"] / "new" / "result.json"),
        "output location is inside",
    ),
    ("SOV-OUTPUT-INSIDE-CANDIDATE-ROOT", symlinked_output, "output location is inside"),
    ("SOV-PLAN-DIGEST", lambda d: d.update(plan_digest="sha256:" + "c" * 64), "got sha256:cccc"),
    ("SOV-PLAN-DIGEST", lambda d: d.update(plan_digest="md5:abc"), "got md5:abc"),
]


@pytest.mark.parametrize(
    ("code", "mutate", "shown"),
    MUTATIONS,
    ids=[f"{c}-{i}" for i, (c, _, _) in enumerate(MUTATIONS)],
)
def test_each_rule_refuses_with_its_code(
    docs: Docs, code: str, mutate: Callable[[Docs], object], shown: str
) -> None:
    mutate(docs)
    with pytest.raises(SovereigntyError) as info:
        pre(docs)
    exc = info.value
    assert exc.code == code, str(exc)
    assert shown in str(exc), str(exc)
    assert str(exc).startswith(f"{code}: ") and ", got " in str(exc) and ", expected " in str(exc)
    assert exc.exit_code == 4
    assert isinstance(exc, VerifierError) and isinstance(exc, RuleViolation)
    assert isinstance(exc, LedgerError)


def test_all_rules_pass_on_the_fixture_and_are_recorded(docs: Docs) -> None:
    report = pre(docs)
    codes = {code for code, _, _ in MUTATIONS} - {"SOV-INPUT-TYPE"}
    assert codes <= set(report.checked) | {"SOV-INPUT-TYPE"}
    assert report.required_validators == ("result-manifest-schema", "independent-review")
    assert report.spec.plan_schema_version == "0.4"
    assert report.as_json()["work_unit_binding"]["scheme"] == "rfc8785"


def test_nothing_is_read_when_a_rule_fails(docs: Docs, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_: Any, **__: Any) -> Any:
        raise AssertionError("candidate read before sovereignty passed")

    monkeypatch.setattr(checks_module, "read_in_root", boom)
    docs["manifest"]["worker"]["id"] = "idkmesh-local-verifier"
    with pytest.raises(SovereigntyError, match="SOV-VERIFIER-IS-WORKER"):
        evaluate(
            docs["wu"],
            docs["plan"],
            docs["manifest"],
            docs["root"],
            docs["plan_path"],
            docs["output_path"],
            plan_digest=canonical_digest(docs["plan"]),
            clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
            validate=validate,
        )


def test_documented_validator_errors_are_refusals(docs: Docs) -> None:
    for error in (SchemaError("schema violation at $"), KindError("no schema for work-unit 9")):

        def complaining(kind: str, version: str, obj: Any, error: Exception = error) -> None:
            raise error

        docs["validate"] = complaining
        with pytest.raises(SovereigntyError, match=r"SOV-SCHEMA-WORK-UNIT: ") as info:
            pre(docs)
        assert type(error).__name__ in str(info.value)


@pytest.mark.parametrize("crash", [RuntimeError, KeyError, TypeError, AttributeError])
def test_a_crashing_validator_is_a_bug_not_a_refusal(docs: Docs, crash: type[Exception]) -> None:
    def broken(kind: str, version: str, obj: Any) -> None:
        raise crash("validator crashed")

    docs["validate"] = broken
    with pytest.raises(crash, match="validator crashed") as info:
        pre(docs)
    assert not isinstance(info.value, SovereigntyError)


def test_binding_digest_accepts_either_scheme_and_records_which(docs: Docs) -> None:
    docs["wu"]["requirements"]["resources"]["cpu_cores_min"] = 1.0  # legacy "1.0", JCS "1"
    legacy, jcs = legacy_digest(docs["wu"]), canonical_digest(docs["wu"])
    assert legacy != jcs
    for digest, scheme in ((legacy, "legacy"), (jcs, "rfc8785")):
        docs["plan"]["binding"]["work_unit_digest"] = digest
        docs["manifest"]["provenance"]["work_unit_digest"] = jcs
        report = pre(docs)
        assert report.work_unit_binding.scheme == scheme
        assert report.work_unit_binding.schemes == (scheme,)
        assert report.manifest_work_unit.scheme == "rfc8785"
    docs["plan"]["binding"]["work_unit_digest"] = "sha256:" + "d" * 64
    with pytest.raises(SovereigntyError) as info:
        pre(docs)
    assert f"{jcs} (rfc8785) or {legacy} (legacy)" in str(info.value)


def test_undeclared_work_unit_revision_is_not_compared(docs: Docs) -> None:
    del docs["wu"]["provenance"]["source_revision"]
    rebind(docs)
    assert "SOV-BINDING-SOURCE-REVISION" in pre(docs).checked


def test_permissive_validator_with_garbage_never_crashes(docs: Docs) -> None:
    docs["validate"] = permissive
    garbage_values: list[Any] = [None, 3, "x", [], {"a": 1}]
    for garbage in garbage_values:
        for key in ("backend", "binding", "verifier", "policy", "required_validator_ids"):
            d = copy.deepcopy(docs)
            d["plan"][key] = garbage
            with pytest.raises(SovereigntyError):
                pre(d)
        for key in ("validators", "provenance", "version", "id"):
            d = copy.deepcopy(docs)
            d["wu"][key] = garbage
            with pytest.raises(SovereigntyError):
                pre(d)


def post_docs(docs: Docs) -> tuple[Any, dict[str, Any]]:
    report = pre(docs)
    out = evaluate(
        docs["wu"],
        docs["plan"],
        docs["manifest"],
        docs["root"],
        docs["plan_path"],
        docs["output_path"],
        plan_digest=canonical_digest(docs["plan"]),
        clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
        validate=validate,
    )
    return report, out.result


@pytest.mark.parametrize(
    ("code", "tamper"),
    [
        ("SOV-POST-VERIFIER", lambda r: r["verifier"].update(adapter_version="0.1.1")),
        ("SOV-POST-REQUIRED-CHECKS", lambda r: r["checks"].pop()),
        ("SOV-POST-REQUIRED-CHECKS", lambda r: r["checks"].append(dict(r["checks"][0]))),
        ("SOV-POST-REQUIRED-CHECKS", lambda r: r["checks"][0].update(required=False)),
        (
            "SOV-POST-CONFIG-DIGEST",
            lambda r: r["provenance"].update(verifier_config_digest="sha256:" + "e" * 64),
        ),
        ("SOV-POST-SCHEMA", lambda r: r.update(unexpected=True)),
    ],
)
def test_post_evaluation_rules(docs: Docs, code: str, tamper: Callable[[Any], None]) -> None:
    report, result = post_docs(docs)
    check_post_evaluation(report, docs["plan"], result, validate=validate)
    tamper(result)
    with pytest.raises(SovereigntyError) as info:
        check_post_evaluation(report, docs["plan"], result, validate=validate)
    assert info.value.code == code
