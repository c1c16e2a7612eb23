"""Every difference from upstream IDKMesh and from git: one row each, three verdicts.

``ROWS`` was written from reading upstream's verifier code (github.com/MSKazemi/idkmesh:
``experiments/local_verifier.py``, whose ``parse_unified_diff`` every patch plan version
uses, the substring and transition verifiers, ``evaluator_plan_runner.py``); none of it
is copied here. For each row:

- ``upstream`` is upstream's verdict on the case: ``passed``, ``failed`` or ``raises``
  (its verifier stops with an exception and writes no result), as its code reads;
- ``ours`` is provledger's verdict, computed here by a full ``evaluate`` of the case
  under the current release; ``before`` is release 0.1.0's verdict when it differs
  (a recorded result is re-run under the release it names: both must hold);
- ``git`` is ``git apply --check``'s answer on the case's pre-image when git is the judge
  of the patch (``git_says``: text git prints that shows how it read the path).

The table in docs/VERIFIERS.md ("Differences from upstream IDKMesh and from git") lists
the same rows with the same verdicts and tests (``test_the_doc_table_is_this_table``):
when a row changes, the doc changes with it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from test_verifiers_diff_git import GIT, GitRepo
from test_verifiers_diff_git import Case as GitCase
from test_verifiers_runner import Case, json_case

from ledger.encoding.digest import canonical_digest, legacy_digest
from ledger.errors import CanonicalFormError
from verifiers.errors import SovereigntyError
from verifiers.releases import CURRENT, RELEASES
from verifiers.runner import VerificationOutcome

DOC = Path(__file__).resolve().parents[1] / "docs" / "VERIFIERS.md"
OLD = "cohort = load_json((ROOT / args.cohort).resolve())"
NEW = "cohort = load_json(resolve_repo_file(args.cohort))"
CTX = "return cohort"
PRE = f"{OLD}\n{CTX}\n"
BODY = f"-{OLD}\n+{NEW}\n {CTX}\n"


def section(
    name: str = "f.txt",
    *,
    header: str | None = None,
    minus: str | None = None,
    plus: str | None = None,
    ext: str = "",
    hunk: str = "@@ -1,2 +1,2 @@",
    body: str = BODY,
) -> str:
    """One git-style section; every part can be replaced by the row's variant."""
    header = f"a/{name} b/{name}" if header is None else header
    minus = f"a/{name}" if minus is None else minus
    plus = f"b/{name}" if plus is None else plus
    return f"diff --git {header}\n{ext}--- {minus}\n+++ {plus}\n{hunk}\n{body}"


# A second section that the row is about, after a base section that meets the v0.4 rule.
NEW_FILE = "diff --git a/n.txt b/n.txt\n{ext}--- /dev/null\n+++ b/n.txt\n{hunk}\n{body}"


@dataclass(frozen=True)
class Built:
    """A case ready to judge: the verifier inputs, and git's inputs when git judges."""

    case: Case
    git: GitCase | None


Make = Callable[[Path], Built]


def open_scope(case: Case, allowed: tuple[str, ...]) -> None:
    """Scope ``allowed`` for every path; the plan and manifest re-bound to the WorkUnit."""
    case.wu["constraints"]["allowed_paths"] = list(allowed)
    case.wu["constraints"]["forbidden_paths"] = []
    case.wu["permissions"]["filesystem_write"] = list(allowed)
    digest = canonical_digest(case.wu)
    case.plan["binding"]["work_unit_digest"] = digest
    case.manifest["provenance"]["work_unit_digest"] = digest


def patch_row(
    text: str,
    files: dict[str, str | bytes] | None = None,
    *,
    allowed: tuple[str, ...] = ("*",),
    crlf: bool = False,
) -> Make:
    """A v0.4 candidate patch ``text`` (pre-image ``files``, default f.txt)."""
    data = text.encode("utf-8")
    pre = {"f.txt": PRE} if files is None else files
    tree = {k: v.encode("utf-8") if isinstance(v, str) else v for k, v in pre.items()}
    if crlf:
        data = data.replace(b"\n", b"\r\n")
        tree = {k: v.replace(b"\n", b"\r\n") for k, v in tree.items()}

    def make(tmp: Path) -> Built:
        case = Case(tmp)
        open_scope(case, allowed)
        case.write("candidate.patch", data)
        return Built(case, GitCase(0, tree, data, []))

    return make


def candidate_file(kind: str, *, json_plan: bool) -> Make:
    """The candidate (or a file beside it) is a FIFO, a symlink or missing."""

    def make(tmp: Path) -> Built:
        case = json_case(tmp) if json_plan else Case(tmp)
        name = "candidate.json" if json_plan else "candidate.patch"
        target = case.root / name
        if kind == "fifo-candidate":
            target.unlink()
            os.mkfifo(target)
        elif kind == "missing":
            target.unlink()
        elif kind == "symlink-candidate":  # to a regular file inside the root
            target.rename(case.root / "real.patch")
            target.symlink_to("real.patch")
        elif kind == "symlink-beside":
            (case.root / "link").symlink_to(name)
        elif kind == "fifo-beside":
            os.mkfifo(case.root / "pipe")
        return Built(case, None)

    return make


def json_row(required: dict[str, Any], candidate: bytes) -> Make:
    def make(tmp: Path) -> Built:
        case = json_case(tmp, candidate)
        case.plan["required_json"] = required
        return Built(case, None)

    return make


@dataclass(frozen=True)
class Row:
    id: str
    upstream: str
    ours: str
    git: str | None
    tests: tuple[str, ...]
    make: Make = field(repr=False)
    before: str | None = None
    git_says: str = ""


ROWS: tuple[Row, ...] = (
    # --- paths -----------------------------------------------------------------------
    Row(
        "no-prefix",
        "passed",
        "failed (`missing-prefix`)",
        "applies",
        (
            "test_prefixless_header_is_refused_not_judged_as_written",
            "test_prefixless_patch_fails_and_is_recorded_as_failed",
            "test_src_github_header_under_src_allow_list_fails",
        ),
        patch_row(
            section(header="tools/x.py tools/x.py", minus="tools/x.py", plus="tools/x.py"),
            {"x.py": PRE},
        ),
        git_says="x.py",
    ),
    Row(
        "b-prefix-old-side",
        "passed",
        "failed (`missing-prefix`)",
        "applies",
        ("test_b_prefix_on_the_old_side_is_refused",),
        patch_row(section(minus="b/f.txt")),
    ),
    Row(
        "nbsp",
        "passed",
        "failed (`missing-prefix`)",
        "applies",
        ("test_nbsp_before_a_path_is_part_of_the_name",),
        patch_row(section(minus="\u00a0a/f.txt")),
    ),
    Row(
        "dot-slash",
        "passed",
        "failed (`path`)",
        "refuses",
        ("test_dot_slash_trailing_slash_and_empty_components_are_refused",),
        patch_row(section("./f.txt")),
    ),
    Row(
        "trailing-slash",
        "passed",
        "failed (`path`)",
        "refuses",
        ("test_dot_slash_trailing_slash_and_empty_components_are_refused",),
        patch_row(section("f.txt/")),
    ),
    Row(
        "dot-git",
        "passed",
        "failed (`dot-git`)",
        "refuses",
        ("test_dot_git_components_are_refused_as_git_does",),
        patch_row(
            section()
            + NEW_FILE.replace("n.txt", ".git/hooks/pre-commit").format(
                ext="new file mode 100755\n", hunk="@@ -0,0 +1 @@", body="+exit 0\n"
            )
        ),
    ),
    Row(
        "dev-null-without-mode",
        "passed",
        "failed (`dev-null`)",
        "refuses",
        ("test_dev_null_only_for_a_real_creation_or_deletion",),
        patch_row(section() + NEW_FILE.format(ext="", hunk="@@ -0,0 +1 @@", body="+x\n")),
        git_says="dev/null",
    ),
    Row(
        "c-quoted-name",
        "failed",
        "passed",
        "applies",
        ("test_quoted_names_are_unquoted_as_git_does",),
        patch_row(
            section(
                header='"a/\\303\\251.txt" "b/\\303\\251.txt"',
                minus='"a/\\303\\251.txt"',
                plus='"b/\\303\\251.txt"',
            ),
            {"\u00e9.txt": PRE},
            allowed=("\u00e9.txt",),
        ),
    ),
    Row(
        "spaces-in-names",
        "failed",
        "passed",
        "applies",
        ("test_unquoted_names_with_spaces_are_read_as_git_does",),
        patch_row(
            section("foo bar.txt", minus="a/foo bar.txt\t", plus="b/foo bar.txt\t"),
            {"foo bar.txt": PRE},
        ),
    ),
    Row(
        "apostrophe-in-name",
        "failed",
        "passed",
        "applies",
        ("test_shell_quote_characters_are_part_of_a_name",),
        patch_row(section("it's.txt"), {"it's.txt": PRE}),
    ),
    Row(
        "shell-quoted-names",
        "passed",
        "failed (`missing-prefix`)",
        "refuses",
        ("test_shell_quote_characters_are_part_of_a_name",),
        patch_row(section(header="'a/f.txt' 'b/f.txt'", minus="'a/f.txt'", plus="'b/f.txt'")),
        git_says="f.txt'",
    ),
    Row(
        "trailing-space",
        "passed",
        "failed (`path-mismatch`)",
        "refuses",
        ("test_unquoted_names_with_spaces_are_read_as_git_does",),
        patch_row(section(minus="a/f.txt ", plus="b/f.txt ")),
        git_says="f.txt : No such file",
    ),
    Row(
        "timestamp-after-name",
        "failed",
        "passed",
        "applies",
        ("test_a_timestamp_after_a_side_name_is_not_part_of_it",),
        patch_row(
            section(
                minus="a/f.txt\t2024-01-01 00:00:00.000000000 +0000",
                plus="b/f.txt\t2024-01-01 00:00:00.000000000 +0000",
            )
        ),
    ),
    Row(
        "control-character",
        "passed",
        "failed (`path-character`)",
        "applies",
        (
            "test_quoted_names_are_unquoted_as_git_does",
            "test_backslash_and_control_characters_in_paths_are_refused",
        ),
        patch_row(
            section(
                header='"a/x\\ty.txt" "b/x\\ty.txt"', minus='"a/x\\ty.txt"', plus='"b/x\\ty.txt"'
            ),
            {"x\ty.txt": PRE},
        ),
    ),
    Row(
        "backslash",
        "passed",
        "failed (`path-character`)",
        "applies",
        ("test_backslash_and_control_characters_in_paths_are_refused",),
        patch_row(section("x\\y.txt"), {"x\\y.txt": PRE}),
    ),
    # --- section headers ---------------------------------------------------------------
    Row(
        "header-two-spaces",
        "passed",
        "passed",
        "applies",
        ("test_blank_runs_in_the_header_are_read_as_git_reads_them",),
        patch_row(section(header="a/f.txt  b/f.txt")),
        before="failed (`path-mismatch`)",
    ),
    Row(
        "header-tab",
        "passed",
        "passed",
        "applies",
        ("test_blank_runs_in_the_header_are_read_as_git_reads_them",),
        patch_row(section(header="a/f.txt\tb/f.txt")),
        before="failed (`header-paths`)",
    ),
    Row(
        "header-leading-spaces",
        "passed",
        "passed",
        "applies",
        ("test_blank_runs_in_the_header_are_read_as_git_reads_them",),
        patch_row(section(header=" a/f.txt b/f.txt")),
        before="failed (`missing-prefix`)",
    ),
    Row(
        "rename-lines-disagree",
        "passed",
        "failed (`path-mismatch`)",
        "refuses",
        ("test_rename_and_copy_lines_must_agree_with_the_header",),
        patch_row(
            section(
                header="a/f.txt b/g.txt",
                minus="a/f.txt",
                plus="b/g.txt",
                ext="rename from evil.txt\nrename to g.txt\n",
            ),
            {"f.txt": PRE, "evil.txt": PRE},
        ),
    ),
    Row(
        "repeated-extended-header",
        "passed",
        "failed (`extended-header`)",
        "applies",
        ("test_repeated_and_contradictory_extended_headers_are_refused",),
        patch_row(section(ext="index 1111111..2222222 100644\nindex 1111111..2222222 100644\n")),
    ),
    Row(
        "creation-with-old-lines",
        "passed",
        "failed (`dev-null`)",
        "refuses",
        ("test_dev_null_only_for_a_real_creation_or_deletion",),
        patch_row(
            section()
            + NEW_FILE.format(ext="new file mode 100644\n", hunk="@@ -1 +1 @@", body="-x\n+y\n")
        ),
    ),
    Row(
        "symlink-mode",
        "passed",
        "failed (`mode`)",
        "applies",
        ("test_file_modes_other_than_regular_files_are_refused",),
        patch_row(
            section()
            + NEW_FILE.format(
                ext="new file mode 120000\n",
                hunk="@@ -0,0 +1 @@",
                body="+/etc/passwd\n\\ No newline at end of file\n",
            )
        ),
    ),
    # --- bytes and lines ---------------------------------------------------------------
    Row(
        "crlf",
        "passed",
        "failed (`crlf`)",
        "applies",
        ("test_crlf_is_refused_naming_crlf",),
        patch_row(section(), crlf=True),
    ),
    Row(
        "nul",
        "passed",
        "failed (`nul`)",
        "applies",
        ("test_nul_byte_is_refused",),
        patch_row(section(body=f"-{OLD}\n+{NEW}\x00\n {CTX}\n")),
    ),
    Row(
        "whitespace-line-before",
        "passed",
        "failed (`outside-section`)",
        "applies",
        ("test_whitespace_only_line_before_the_first_section_is_refused",),
        patch_row(" \n" + section()),
    ),
    Row(
        "blank-line-after-hunk",
        "failed",
        "passed",
        "applies",
        ("test_blank_line_after_a_hunk_is_accepted_but_not_between_hunks",),
        patch_row(section() + "\n"),
    ),
    Row(
        "unicode-line-separator",
        "failed",
        "passed",
        "applies",
        ("test_unicode_line_separators_stay_inside_one_line",),
        patch_row(section(body=f"-{OLD}\n+{NEW}\u2028# note\n {CTX}\n")),
    ),
    Row(
        "removed-line-starting-with-dashes",
        "failed",
        "passed",
        "applies",
        ("test_removed_line_starting_with_dashes_is_a_removed_line",),
        patch_row(section(body=f"--- {OLD}\n+{NEW}\n {CTX}\n"), {"f.txt": f"-- {OLD}\n{CTX}\n"}),
    ),
    # --- hunks -------------------------------------------------------------------------
    Row(
        "non-ascii-hunk-number",
        "passed",
        "failed (`hunk-header`)",
        "refuses",
        ("test_non_ascii_hunk_numbers_are_refused",),
        patch_row(section(hunk="@@ -\u0661,2 +\u0661,2 @@")),
    ),
    Row(
        "zero-length-hunk",
        "passed",
        "failed (`hunk-range`)",
        "refuses",
        ("test_zero_length_hunk_is_refused",),
        patch_row(section(hunk="@@ -0,0 +0,0 @@\n@@ -1,2 +1,2 @@")),
    ),
    Row(
        "hunk-at-line-zero-1",
        "passed",
        "passed",
        "applies",
        ("test_hunks_at_line_zero_are_anchored_at_line_one_as_git_does",),
        patch_row(section(hunk="@@ -0,1 +0,1 @@", body=f"-{OLD}\n+{NEW}\n"), {"f.txt": f"{OLD}\n"}),
        before="failed (`hunk-range`)",
    ),
    Row(
        "hunk-at-line-zero-2",
        "passed",
        "passed",
        "applies",
        ("test_hunks_at_line_zero_are_anchored_at_line_one_as_git_does",),
        patch_row(section(hunk="@@ -0,2 +0,2 @@")),
        before="failed (`hunk-range`)",
    ),
    Row(
        "hunk-number-13-digits",
        "passed",
        "passed",
        "applies",
        ("test_hunk_numbers_of_up_to_15_digits_are_read",),
        patch_row(section(hunk="@@ -1000000000000,2 +1000000000000,2 @@")),
        before="failed (`hunk-header`)",
    ),
    Row(
        "hunk-number-16-digits",
        "passed",
        "failed (`hunk-range`)",
        "applies",
        ("test_hunk_numbers_of_up_to_15_digits_are_read",),
        patch_row(section(hunk="@@ -1000000000000000,2 +1000000000000000,2 @@")),
        before="failed (`hunk-header`)",
    ),
    Row(
        "repeated-no-newline-marker",
        "passed",
        "failed (`no-newline-marker`)",
        "applies",
        ("test_repeated_or_misplaced_no_newline_markers_are_refused",),
        patch_row(
            section(body=f"-{OLD}\n+{NEW}\n {CTX}\n" + "\\ No newline at end of file\n" * 2),
            {"f.txt": f"{OLD}\n{CTX}"},
        ),
    ),
    # --- the candidate file --------------------------------------------------------------
    Row(
        "patch-candidate-fifo",
        "raises",
        "failed (`artifact-digest`)",
        None,
        ("test_special_candidate_files_are_failed_checks",),
        candidate_file("fifo-candidate", json_plan=False),
    ),
    Row(
        "patch-candidate-missing",
        "raises",
        "failed (`artifact-digest`)",
        None,
        ("test_unsafe_or_missing_locators_fail_without_reading",),
        candidate_file("missing", json_plan=False),
    ),
    Row(
        "patch-candidate-symlink",
        "passed",
        "failed (`artifact-digest`)",
        None,
        ("test_symlinks_are_refused",),
        candidate_file("symlink-candidate", json_plan=False),
    ),
    # --- EvaluatorPlan v0.1 (JSON) -------------------------------------------------------
    Row(
        "json-true-for-1",
        "passed",
        "failed (`independent-acceptance`)",
        None,
        ("test_json_equal_is_type_aware",),
        json_row({"answer": 1, "status": "ready"}, b'{"answer": true, "status": "ready"}'),
    ),
    Row(
        "json-duplicate-names",
        "passed",
        "failed (`independent-acceptance`)",
        None,
        ("test_json_verifier_rejects",),
        json_row(
            {"answer": 42, "status": "ready"}, b'{"answer": 41, "answer": 42, "status": "ready"}'
        ),
    ),
    Row(
        "json-integer-beyond-2-53",
        "passed",
        "refused (`SOV-INPUT-CANONICAL`)",
        None,
        (
            "test_a_document_beyond_i_json_is_a_sovereignty_refusal",
            "test_a_number_beyond_i_json_is_bad_input_in_the_cli",
        ),
        json_row(
            {"answer": 2**60 + 1, "status": "ready"},
            b'{"answer": 1152921504606846977, "status": "ready"}',
        ),
    ),
    Row(
        "json-candidate-fifo",
        "raises",
        "failed (`artifact-digest`)",
        None,
        ("test_special_candidate_files_are_failed_checks",),
        candidate_file("fifo-candidate", json_plan=True),
    ),
    Row(
        "json-candidate-missing",
        "raises",
        "failed (`artifact-digest`)",
        None,
        ("test_special_candidate_files_are_failed_checks",),
        candidate_file("missing", json_plan=True),
    ),
    Row(
        "json-symlink-in-root",
        "raises",
        "failed (`candidate-scope`)",
        None,
        ("test_special_candidate_files_are_failed_checks",),
        candidate_file("symlink-beside", json_plan=True),
    ),
    Row(
        "json-fifo-in-root",
        "passed",
        "failed (`candidate-scope`)",
        None,
        ("test_special_candidate_files_are_failed_checks",),
        candidate_file("fifo-beside", json_plan=True),
    ),
)


# --------------------------------------------------------------------------- verdicts


# The order in which patch_common.run_patch makes its sub-checks.
PIPELINE = (
    "artifact-digest",
    "size",
    "structure",
    "non-empty",
    "scope",
    "logs",
    "worker-status",
    "semantic",
)


def _first_failure(out: VerificationOutcome) -> str:
    """The first check that failed; for a patch plan the first failed sub-check of
    ``independent-review``, and the diff rule when that is the structure check."""
    result = out.result
    failed = [c for c in result["checks"] if c["status"] == "failed"]
    if failed[0]["id"] != "independent-review":
        return failed[0]["id"]
    subs = json.loads(failed[0]["diagnostics"])  # canonical JSON: keys sorted
    first = next(n for n in PIPELINE if not subs[n]["passed"])
    if first == "structure":
        semantic = next(e for e in out.evidence if e.id == "patch-semantic-observation")
        assert semantic.body is not None
        return str(json.loads(semantic.body)["structure"]["error"].get("rule", first))
    return str(first)


def provledger_verdict(built: Built, release: str) -> str:
    plan = built.case.plan
    try:
        plan_digest = canonical_digest(plan)
    except CanonicalFormError:  # the row about numbers beyond I-JSON: upstream's digest
        plan_digest = legacy_digest(plan)
    try:
        out = built.case.run(release_version=release, plan_digest=plan_digest)
    except SovereigntyError as exc:
        return f"refused (`{exc.code}`)"
    return "passed" if out.passed else f"failed (`{_first_failure(out)}`)"


@pytest.fixture(scope="module")
def git_repo(tmp_path_factory: pytest.TempPathFactory) -> GitRepo | None:
    if GIT is None:
        return None
    return GitRepo(tmp_path_factory.mktemp("git") / "repo")


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_each_row_gives_its_verdicts(row: Row, tmp_path: Path, git_repo: GitRepo | None) -> None:
    built = row.make(tmp_path)
    assert provledger_verdict(built, CURRENT.version) == row.ours
    assert provledger_verdict(built, "0.1.0") == (row.before or row.ours)
    assert (built.git is None) == (row.git is None)
    if built.git is not None:
        if git_repo is None:
            pytest.skip("git is not installed (CI installs it)")
        verdict = git_repo.judge(built.git)
        assert ("applies" if verdict.applies else "refuses") == row.git, verdict.error
        shown = " ".join(verdict.numstat) + verdict.error
        assert row.git_says in shown, shown


def test_every_release_is_run_by_the_table() -> None:
    # Only two releases exist; a third needs its own column of verdicts here.
    assert list(RELEASES) == ["0.1.0", CURRENT.version] and CURRENT.version == "0.2.0"


# --------------------------------------------------------------------------- the doc


def doc_rows() -> dict[str, list[str]]:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Differences from upstream IDKMesh and from git")
    end = text.index("\n## ", start + 1)
    rows = {}
    for line in text[start:end].splitlines():
        m = re.match(r"^\| `([a-z0-9-]+)` \|(.*)\|$", line)
        if m:
            rows[m.group(1)] = [cell.strip() for cell in m.group(2).split(" | ")]
    return rows


def test_the_doc_table_is_this_table() -> None:
    documented = doc_rows()
    assert list(documented) == [r.id for r in ROWS]
    for row in ROWS:
        case, upstream, ours, git, decision, tests = documented[row.id]
        assert case and decision, row.id
        assert upstream.split(":")[0] == row.upstream, (row.id, upstream)
        expected = row.ours if row.before is None else f"{row.ours}; 0.1.0: {row.before}"
        assert ours == expected, (row.id, ours, expected)
        assert git.split(" ")[0] == (row.git or "-"), (row.id, git)
        assert set(re.findall(r"`(test_[a-z0-9_]+)`", tests)) == set(row.tests), row.id


def test_every_named_test_exists() -> None:
    here = Path(__file__).resolve().parent
    defined = {
        name
        for path in here.glob("test_*.py")
        for name in re.findall(r"^def (test_[a-z0-9_]+)\(", path.read_text(), re.MULTILINE)
    }
    named = {t for row in ROWS for t in row.tests}
    assert named <= defined, named - defined


def test_rows_are_kept_short_and_distinct() -> None:
    assert len({r.id for r in ROWS}) == len(ROWS)
    assert all(r.upstream in ("passed", "failed", "raises") for r in ROWS)
    # A row is a difference: from upstream, from git, or from release 0.1.0.
    for r in ROWS:
        ours = r.ours.split(" ")[0]
        git_differs = r.git is not None and (r.git == "applies") != (ours == "passed")
        assert r.upstream != ours or git_differs or r.before, r.id
