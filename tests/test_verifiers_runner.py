"""The runner and the per-version verifiers on the project's own calibration fixture.

Every worker-controlled defect must become a failed check in a schema-valid
VerificationResult (never an exception); the same inputs and clock give the same bytes.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker

from ledger.encoding.digest import canonical_digest, legacy_digest, sha256_digest
from ledger.schema.validation import validate
from verifiers.errors import SovereigntyError
from verifiers.runner import BEHAVIORAL_CLAIM_KEY, VerificationOutcome, evaluate, rfc3339
from verifiers.v0_1_json import json_equal

FIX = Path(__file__).resolve().parents[1] / "verifiers" / "fixtures" / "calibration"
CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "reference" / "idkmesh"
PATCH_EVIDENCE = [
    "candidate-patch-hash",
    "log-integrity-observation",
    "patch-scope-observation",
    "patch-semantic-observation",
    "worker-status-observation",
]


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def clock() -> datetime:
    return datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


@dataclass
class Case:
    tmp: Path
    candidate: str = "repair"
    version: str = "0.4"
    wu: dict[str, Any] = field(init=False)
    plan: dict[str, Any] = field(init=False)
    manifest: dict[str, Any] = field(init=False)
    root: Path = field(init=False)

    def __post_init__(self) -> None:
        self.wu = load(FIX / "work-unit.json")
        self.plan = load(FIX / "plans" / f"evaluator-plan-v{self.version}.json")
        self.manifest = load(FIX / "manifests" / f"{self.candidate}.result-manifest.json")
        self.root = self.tmp / "candidate"
        shutil.copytree(FIX / "candidates" / self.candidate, self.root)

    def write(self, name: str, data: bytes, *, declare: bool = True) -> None:
        """Replace a candidate file; update its declared digest unless told not to."""
        (self.root / name).write_bytes(data)
        if declare:
            for item in [*self.manifest["produced_artifacts"], *self.manifest["logs"]]:
                if item["locator"] == name:
                    item["digest"] = sha256_digest(data)

    def run(self, **kw: Any) -> VerificationOutcome:
        args: dict[str, Any] = {"clock": clock, "validate": validate, **kw}
        if "plan_digest" not in args:
            args["plan_digest"] = canonical_digest(self.plan)
        return evaluate(
            self.wu,
            self.plan,
            self.manifest,
            self.root,
            self.tmp / "plan.json",
            self.tmp / "out" / "result.json",
            **args,
        )


def check(outcome: VerificationOutcome, check_id: str) -> dict[str, Any]:
    return next(c for c in outcome.result["checks"] if c["id"] == check_id)


def subchecks(outcome: VerificationOutcome) -> dict[str, dict[str, Any]]:
    diag: dict[str, dict[str, Any]] = json.loads(
        check(outcome, "independent-review")["diagnostics"]
    )
    return diag


def body(outcome: VerificationOutcome, evidence_id: str) -> Any:
    (item,) = [e for e in outcome.evidence if e.id == evidence_id]
    assert item.body is not None
    assert item.digest == sha256_digest(item.body)
    return json.loads(item.body)


def assert_valid(result: dict[str, Any]) -> None:
    validate("verification-result", "0.1", result)
    upstream = CORPUS / "schemas" / "verification-result-v0.1.schema.json"
    if upstream.is_file():
        v = Draft202012Validator(load(upstream), format_checker=FormatChecker())
        assert not list(v.iter_errors(result))


# --------------------------------------------------------------------------- passing path


def test_repair_passes_v04_with_upstream_shaped_result(tmp_path: Path) -> None:
    case = Case(tmp_path)
    out = case.run()
    result = out.result
    assert_valid(result)
    assert (out.status, out.recommendation, out.exit_code) == ("passed", "accept_candidate", 0)
    assert result["decision_support"]["recommendation"] == "accept_candidate"
    assert [c["id"] for c in result["checks"]] == case.plan["required_validator_ids"]
    assert all(c["required"] and c["status"] == "passed" for c in result["checks"])
    assert check(out, "independent-review")["evidence_ids"] == [
        *PATCH_EVIDENCE,
        "added-substring-semantic-observation",
        "removed-substring-semantic-observation",
    ]
    assert check(out, "result-manifest-schema")["evidence_ids"] == ["result-manifest-canonical"]
    prov = result["provenance"]
    assert prov["verifier_config_digest"] == canonical_digest(case.plan)
    assert prov["work_unit_digest"] == case.plan["binding"]["work_unit_digest"]
    assert prov["result_manifest_digest"] == canonical_digest(case.manifest)
    assert result["extensions"][BEHAVIORAL_CLAIM_KEY] is False
    assert result["verifier"] == case.plan["verifier"]
    assert result["metrics"]["matched_removed_substring_count"] == 1
    assert result["metrics"]["required_removed_substring_count"] == 1
    assert out.result_digest == sha256_digest(out.result_bytes)
    assert out.summary == "matched added substrings: 1 of 1; matched removed substrings: 1 of 1"


def test_evidence_records_where_each_substring_matched(tmp_path: Path) -> None:
    out = Case(tmp_path).run()
    removed = body(out, "removed-substring-semantic-observation")
    assert removed["summary"] == "matched removed substrings: 1 of 1"
    (rec,) = removed["matches"]
    assert rec["required"] == "(ROOT / args.cohort).resolve()"
    assert (rec["matched"], rec["occurrences"]) == (True, 2)
    first = rec["first_match"]
    assert first["file"] == "tools/cohort_tool.py"
    assert first["text"] == "    cohort = load_json((ROOT / args.cohort).resolve())"
    source = (FIX / "source" / "tools" / "cohort_tool.py").read_text().splitlines()
    assert source[first["line"] - 1] == first["text"]  # old-side line number
    added = body(out, "added-substring-semantic-observation")
    assert added["matches"][0]["first_match"]["line"] == first["line"]  # new-side, same spot
    semantic = body(out, "patch-semantic-observation")
    assert semantic["structure"]["valid"] is True
    assert len(semantic["observed_removed_lines"]) == 2


def test_inputs_list_candidate_and_logs_with_digests(tmp_path: Path) -> None:
    case = Case(tmp_path)
    out = case.run()
    by_locator = {i.locator: i for i in out.inputs}
    assert set(by_locator) == {"candidate.patch", "stdout.txt", "stderr.txt"}
    for name, item in by_locator.items():
        data = (case.root / name).read_bytes()
        assert (item.data, item.digest, item.size) == (data, sha256_digest(data), len(data))
    assert by_locator["candidate.patch"].role == "candidate"
    assert by_locator["stdout.txt"].role == "log"
    assert {digest for digest, _ in out.observations} <= {e.digest for e in out.evidence}


def test_same_inputs_and_clock_give_the_same_bytes(tmp_path: Path) -> None:
    case = Case(tmp_path)
    first, second = case.run(), case.run()
    assert first.result_bytes == second.result_bytes
    later = case.run(clock=lambda: datetime(2027, 5, 6, 7, 8, 9, 123, tzinfo=UTC))
    assert later.result_bytes != first.result_bytes
    a, b = first.result, later.result
    for key in ("started_at", "finished_at"):
        a.pop(key), b.pop(key)
    assert a == b


def test_clock_readings_become_timestamps_and_wall_seconds(tmp_path: Path) -> None:
    ticks = iter([datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 1, 0, 0, 2, 500000, UTC)])
    result = Case(tmp_path).run(clock=lambda: next(ticks)).result
    assert result["started_at"] == "2026-01-01T00:00:00Z"
    assert result["finished_at"] == "2026-01-01T00:00:02.500000Z"
    assert result["resources"]["wall_seconds"] == 2.5
    with pytest.raises(Exception, match="aware datetime"):
        rfc3339(datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("version", "candidate", "status", "extra"),
    [
        ("0.2", "repair", "failed", []),
        ("0.2", "decoy", "passed", []),
        ("0.3", "decoy", "passed", ["added-substring-semantic-observation"]),
    ],
)
def test_each_version_names_its_own_evidence(
    tmp_path: Path, version: str, candidate: str, status: str, extra: list[str]
) -> None:
    out = Case(tmp_path, candidate, version).run()
    assert_valid(out.result)
    assert out.status == status
    assert check(out, "independent-review")["evidence_ids"] == PATCH_EVIDENCE + extra
    semantic = body(out, "patch-semantic-observation")
    if version == "0.2":
        (rec,) = semantic["exact_line_matches"]
        assert rec["matched"] is (candidate == "decoy")
        if candidate == "decoy":
            assert rec["first_match"]["text"] == "resolve_repo_file(args.cohort"


# --------------------------------------------------------------------------- failed checks


def failing(out: VerificationOutcome, *names: str) -> None:
    assert_valid(out.result)
    assert (out.status, out.recommendation, out.exit_code) == ("failed", "reject_candidate", 1)
    failed = {k for k, v in subchecks(out).items() if not v["passed"]}
    assert set(names) <= failed, failed
    assert check(out, "independent-review")["status"] == "failed"
    assert check(out, "result-manifest-schema")["status"] == "passed"


def test_tampered_candidate_fails_artifact_digest(tmp_path: Path) -> None:
    case = Case(tmp_path)
    case.write(
        "candidate.patch", (case.root / "candidate.patch").read_bytes() + b" \n", declare=False
    )
    out = case.run()
    failing(out, "artifact-digest")
    assert any(f["category"] == "provenance" for f in out.result["findings"])


@pytest.mark.parametrize(
    "locator", ["../candidate.patch", "/etc/passwd", "./candidate.patch", "a//b", "missing"]
)
def test_unsafe_or_missing_locators_fail_without_reading(tmp_path: Path, locator: str) -> None:
    case = Case(tmp_path)
    case.manifest["produced_artifacts"][0]["locator"] = locator
    out = case.run()
    failing(out, "artifact-digest", "structure", "semantic")
    assert not [i for i in out.inputs if i.role == "candidate"]
    hash_item = next(e for e in out.result["evidence"] if e["id"] == "candidate-patch-hash")
    assert hash_item["locator"] == "inline://candidate-patch-hash"


def test_symlinks_are_refused(tmp_path: Path) -> None:
    case = Case(tmp_path)
    outside = tmp_path / "secret.patch"
    shutil.copy(case.root / "candidate.patch", outside)
    (case.root / "candidate.patch").unlink()
    os.symlink(outside, case.root / "candidate.patch")
    failing(case.run(), "artifact-digest")
    case2 = Case(tmp_path / "2")
    (tmp_path / "2" / "logs").mkdir()
    shutil.move(case2.root / "stdout.txt", tmp_path / "2" / "logs" / "stdout.txt")
    os.symlink(tmp_path / "2" / "logs", case2.root / "logdir")
    case2.manifest["logs"][0]["locator"] = "logdir/stdout.txt"
    out = case2.run()
    failing(out, "logs")
    assert "directory 'logdir' is a symlink" in json.dumps(body(out, "log-integrity-observation"))


def test_missing_artifact_entry_fails(tmp_path: Path) -> None:
    case = Case(tmp_path)
    case.manifest["produced_artifacts"][0]["id"] = "something-else"
    failing(case.run(), "artifact-digest", "structure")


def test_oversized_patch_fails_size(tmp_path: Path) -> None:
    case = Case(tmp_path)
    case.plan["backend"]["max_candidate_bytes"] = 100
    out = case.run()
    failing(out, "size", "structure", "artifact-digest")
    # Reading stops at the plan's limit: nothing hashed or kept, the size comes from fstat.
    assert not [i for i in out.inputs if i.role == "candidate"]
    size = (case.root / "candidate.patch").stat().st_size
    assert subchecks(out)["size"]["summary"] == f"candidate is {size} bytes, limit 100"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", "empty patch"),
        (b"not a diff\n", "outside any section"),
        (
            b"diff --git a/tools/cohort_tool.py b/tools/cohort_tool.py\nBinary files differ\n",
            "extended header",
        ),
    ],
)
def test_malformed_patch_is_a_failed_check(tmp_path: Path, data: bytes, reason: str) -> None:
    case = Case(tmp_path)
    case.write("candidate.patch", data)
    out = case.run()
    failing(out, "structure", "semantic", "scope")
    error = body(out, "patch-semantic-observation")["structure"]["error"]
    assert reason in error["message"]


def test_context_only_patch_is_empty(tmp_path: Path) -> None:
    case = Case(tmp_path)
    case.write(
        "candidate.patch",
        b"diff --git a/tools/cohort_tool.py b/tools/cohort_tool.py\n"
        b"--- a/tools/cohort_tool.py\n+++ b/tools/cohort_tool.py\n@@ -1 +1 @@\n #!/usr/bin/env\n",
    )
    out = case.run()
    failing(out, "non-empty")
    assert subchecks(out)["structure"]["passed"]  # a section of context lines is valid


def test_scope_violations_are_reported_per_path(tmp_path: Path) -> None:
    case = Case(tmp_path)
    extra = (
        b"diff --git a/cohorts/demo.cohort.json b/cohorts/demo.cohort.json\n"
        b"--- a/cohorts/demo.cohort.json\n+++ b/cohorts/demo.cohort.json\n"
        b"@@ -1 +1 @@\n-{\n+{ \n"
    )
    case.write("candidate.patch", (case.root / "candidate.patch").read_bytes() + extra)
    out = case.run()
    failing(out, "scope")
    violations = body(out, "patch-scope-observation")["violations"]
    assert {(v["path"], v["rule"]) for v in violations} == {
        ("cohorts/demo.cohort.json", "forbidden_paths"),
        ("cohorts/demo.cohort.json", "allowed_paths"),
        ("cohorts/demo.cohort.json", "filesystem_write"),
    }
    assert {f.get("path") for f in out.result["findings"] if f["category"] == "scope"} == {
        "cohorts/demo.cohort.json"
    }


def test_scope_matching_is_case_sensitive(tmp_path: Path) -> None:
    case = Case(tmp_path)
    data = (case.root / "candidate.patch").read_bytes().replace(b"cohort_tool", b"Cohort_tool")
    case.write("candidate.patch", data)
    failing(case.run(), "scope")


def logs_case(tmp_path: Path, mutate: str) -> Case:
    case = Case(tmp_path)
    logs = case.manifest["logs"]
    if mutate == "missing-file":
        (case.root / "stdout.txt").unlink()
    elif mutate == "digest":
        case.write("stdout.txt", b"tampered\n", declare=False)
    elif mutate == "no-digest":
        del logs[0]["digest"]
    elif mutate == "duplicate-locator":
        logs.append(dict(logs[0], type="other"))
    elif mutate == "type-missing":
        del logs[1]
    elif mutate == "type-twice":
        case.write("extra.txt", b"x\n")
        logs.append({"type": "stdout", "locator": "extra.txt", "digest": sha256_digest(b"x\n")})
    elif mutate == "too-large":
        case.plan["backend"]["max_log_bytes"] = 5
    elif mutate == "fifo":
        (case.root / "stdout.txt").unlink()
        os.mkfifo(case.root / "stdout.txt")
    return case


@pytest.mark.parametrize(
    ("mutate", "problem"),
    [
        ("missing-file", "missing"),
        ("digest", "digest sha256:"),
        ("no-digest", "no declared digest"),
        ("duplicate-locator", "not unique"),
        ("type-missing", "'stderr' appears 0 times"),
        ("type-twice", "'stdout' appears 2 times"),
        ("too-large", "limit 5"),
        ("fifo", "not_regular"),
    ],
)
def test_log_integrity_problems(tmp_path: Path, mutate: str, problem: str) -> None:
    out = logs_case(tmp_path, mutate).run()
    failing(out, "logs")
    problems = body(out, "log-integrity-observation")["problems"]
    assert any(problem in p for p in problems), problems


def test_worker_status_must_be_succeeded(tmp_path: Path) -> None:
    case = Case(tmp_path)
    case.manifest["status"] = "failed"
    out = case.run()
    failing(out, "worker-status")
    assert body(out, "worker-status-observation") == {"worker_status": "failed"}


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.one_of(
        st.binary(max_size=300),
        st.text(alphabet="diff --gitab/+-@ 0123456789,\n\\", max_size=300).map(str.encode),
    )
)
def test_any_candidate_bytes_give_a_schema_valid_result(tmp_path: Path, data: bytes) -> None:
    case = Case(Path(tempfile.mkdtemp(dir=tmp_path)))
    case.write("candidate.patch", data)
    out = case.run()
    assert_valid(out.result)
    assert out.status in ("passed", "failed")


# --------------------------------------------------------------------------- v0.1 JSON


def json_case(tmp_path: Path, candidate: bytes = b'{"answer": 42, "status": "ready"}\n') -> Case:
    case = Case(tmp_path)
    ids = ["artifact-digest", "candidate-scope", "independent-acceptance"]
    case.wu["validators"] = [{"id": i, "type": "test", "required": True} for i in ids]
    digest = canonical_digest(case.wu)
    case.plan = {
        "schema_version": "0.1",
        "id": "provledger/test/json-plan",
        "binding": dict(case.plan["binding"], work_unit_digest=digest),
        "visibility": "public",
        "execution_mode": "metadata_only",
        "verifier": {
            "id": "idkmesh-local-verifier",
            "type": "system",
            "adapter": "deterministic-json-verifier",
            "adapter_version": "0.1",
        },
        "required_validator_ids": ids,
        "candidate_artifact_id": "candidate-result",
        "allowed_files": ["candidate.json"],
        "max_candidate_bytes": 4096,
        "required_json": {"answer": 42, "status": "ready"},
        "policy": case.plan["policy"],
    }
    shutil.rmtree(case.root)
    case.root.mkdir()
    (case.root / "candidate.json").write_bytes(candidate)
    case.manifest["provenance"]["work_unit_digest"] = digest
    case.manifest["verification_request"]["expected_validator_ids"] = ids
    case.manifest["logs"] = []
    case.manifest["produced_artifacts"] = [
        {
            "id": "candidate-result",
            "type": "test_result",
            "locator": "candidate.json",
            "digest": sha256_digest(candidate),
        }
    ]
    return case


def json_statuses(out: VerificationOutcome) -> dict[str, str]:
    assert_valid(out.result)
    return {c["id"]: c["status"] for c in out.result["checks"]}


def test_json_verifier_accepts_the_expected_value(tmp_path: Path) -> None:
    out = json_case(tmp_path, b'{"status":"ready","answer":42.0}').run()
    assert out.status == "passed"
    assert [e["id"] for e in out.result["evidence"]] == [
        "candidate-artifact-hash",
        "candidate-scope-observation",
        "acceptance-observation",
    ]


@pytest.mark.parametrize(
    ("candidate", "extra_file", "failed"),
    [
        (b'{"answer": 41, "status": "ready"}', None, "independent-acceptance"),
        (b'{"answer": 42, "status": "ready", "x": 1}', None, "independent-acceptance"),
        (b'{"answer": 42, "answer": 42, "status": "ready"}', None, "independent-acceptance"),
        (b"not json", None, "independent-acceptance"),
        (b'{"answer": 42, "status": "ready"}', "other.txt", "candidate-scope"),
    ],
)
def test_json_verifier_rejects(
    tmp_path: Path, candidate: bytes, extra_file: str | None, failed: str
) -> None:
    case = json_case(tmp_path, candidate)
    if extra_file:
        (case.root / extra_file).write_text("x")
    statuses = json_statuses(case.run())
    assert statuses[failed] == "failed"
    assert list(statuses.values()).count("failed") == 1


def test_json_equal_is_type_aware() -> None:
    assert json_equal({"a": [1, 2.0]}, {"a": [1.0, 2]})
    assert not json_equal(True, 1) and not json_equal(0, False)
    assert not json_equal(None, False) and not json_equal("1", 1)
    assert not json_equal({"a": 1}, {"a": 1, "b": 2}) and not json_equal([1], [1, 1])


def test_upstream_json_smoke_passes_with_legacy_binding(corpus: Path) -> None:
    wu = load(corpus / "examples/work-units/local-verifier-smoke.work-unit.json")
    plan_path = corpus / "verification/fixtures/verifier-smoke-evaluator-plan.json"
    plan = load(plan_path)
    manifest = load(corpus / "examples/verifier/good/result-manifest.json")
    out = evaluate(
        wu,
        plan,
        manifest,
        corpus / "examples/verifier/good/candidate-root",
        plan_path,
        None,
        plan_digest=canonical_digest(plan),
        clock=clock,
        validate=validate,
    )
    assert out.status == "passed"
    assert out.sovereignty.work_unit_binding.scheme == "legacy"
    assert out.sovereignty.work_unit_binding.digest != canonical_digest(wu)
    assert out.result["provenance"]["work_unit_digest"] == plan["binding"]["work_unit_digest"]
    schemes = out.result["extensions"]["org.provledger.verifier.digest_schemes"]
    assert schemes["plan_binding_work_unit"] == "legacy"
    assert_valid(out.result)
    bad = copy.deepcopy(manifest)
    bad["produced_artifacts"][0]["digest"] = "sha256:" + "0" * 64
    out = evaluate(
        wu,
        plan,
        bad,
        corpus / "examples/verifier/good/candidate-root",
        plan_path,
        None,
        plan_digest=canonical_digest(plan),
        clock=clock,
        validate=validate,
    )
    assert json_statuses(out)["artifact-digest"] == "failed"


# ------------------------------------------------- inputs upstream's verifier raises on


def test_special_candidate_files_are_failed_checks(tmp_path: Path) -> None:
    """A FIFO, a symlink or a missing file where the worker's files are is the worker's
    defect: a failed check in a recorded result (upstream's verifier raises instead, or
    for a FIFO beside a JSON candidate does not see it)."""
    patch = Case(tmp_path / "patch")
    (patch.root / "candidate.patch").unlink()
    os.mkfifo(patch.root / "candidate.patch")
    out = patch.run()  # opened with O_NONBLOCK: a FIFO without a writer never blocks
    failing(out, "artifact-digest", "structure")
    assert "not_regular" in json.dumps(body(out, "patch-semantic-observation"))
    for kind, failed in (
        ("fifo-candidate", {"artifact-digest", "candidate-scope", "independent-acceptance"}),
        ("missing", {"artifact-digest", "candidate-scope", "independent-acceptance"}),
        ("symlink-beside", {"candidate-scope"}),
        ("fifo-beside", {"candidate-scope"}),
    ):
        case = json_case(tmp_path / kind)
        target = case.root / "candidate.json"
        if kind == "fifo-candidate":
            target.unlink()
            os.mkfifo(target)
        elif kind == "missing":
            target.unlink()
        elif kind == "symlink-beside":
            (case.root / "link").symlink_to("candidate.json")
        else:
            os.mkfifo(case.root / "pipe")
        statuses = json_statuses(case.run())
        assert {k for k, v in statuses.items() if v == "failed"} == failed, kind


@pytest.mark.parametrize("where", ["plan", "work_unit", "manifest"])
def test_a_document_beyond_i_json_is_a_sovereignty_refusal(tmp_path: Path, where: str) -> None:
    """The one error type for an unusable verifier input is SovereigntyError (here
    SOV-INPUT-CANONICAL), never a CanonicalFormError from deep inside."""
    case = json_case(tmp_path)
    doc = {"plan": case.plan, "work_unit": case.wu, "manifest": case.manifest}[where]
    doc.setdefault("extensions", {})["org.test.big"] = 2**60 + 1
    if where == "plan":
        case.plan["required_json"] = {"answer": 2**60 + 1}
    with pytest.raises(SovereigntyError) as info:
        case.run(plan_digest=legacy_digest(case.plan))
    assert info.value.code == "SOV-INPUT-CANONICAL"
    assert "1152921504606846977" in str(info.value) and info.value.exit_code == 4
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(100_000):  # deeper than any recursion limit
        inner["a"] = {}
        inner = inner["a"]
    doc["extensions"]["org.test.big"] = deep
    case.plan["required_json"] = {"answer": 42}
    with pytest.raises(SovereigntyError, match=r"SOV-INPUT-CANONICAL.*recursion limit"):
        case.run(plan_digest="sha256:" + "0" * 64)
