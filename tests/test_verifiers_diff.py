"""The strict unified-diff parser: structure rules, precise errors, and totality."""

from __future__ import annotations

import contextlib
import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifiers.diff import ParsedDiff, parse_patch
from verifiers.errors import DiffError, VerifierError

HEADER = "diff --git a/src/app.py b/src/app.py\nindex 1111111..2222222 100644\n"
SIMPLE = (
    HEADER + "--- a/src/app.py\n+++ b/src/app.py\n"
    "@@ -1,3 +1,3 @@\n"
    " first\n"
    "-old line\n"
    "+new line\n"
    " third\n"
)


def parse(text: str) -> ParsedDiff:
    return parse_patch(text.encode("utf-8"))


def error(text: str | bytes) -> DiffError:
    data = text.encode("utf-8") if isinstance(text, str) else text
    with pytest.raises(DiffError) as info:
        parse_patch(data)
    return info.value


def test_simple_patch_line_numbers() -> None:
    diff = parse(SIMPLE)
    (f,) = diff.files
    assert (f.old_path, f.new_path) == ("src/app.py", "src/app.py")
    assert [(x.number, x.text, x.patch_line) for x in f.added] == [(2, "new line", 8)]
    assert [(x.number, x.text, x.patch_line) for x in f.removed] == [(2, "old line", 7)]
    assert diff.changed_paths == ("src/app.py",)
    assert f.extended_headers == ("index 1111111..2222222 100644",)


def test_line_numbers_follow_each_side_across_hunks() -> None:
    text = (
        "diff --git a/f b/f\n--- a/f\n+++ b/f\n"
        "@@ -10,2 +10,3 @@ def context():\n"
        " a\n+b\n c\n"
        "@@ -20,3 +21,1 @@\n"
        "-x\n-y\n z\n"
    )
    f = parse(text).files[0]
    assert [(x.number, x.text) for x in f.added] == [(11, "b")]
    assert [(x.number, x.text) for x in f.removed] == [(20, "x"), (21, "y")]
    assert [(h.old_start, h.old_count, h.new_start, h.new_count) for h in f.hunks] == [
        (10, 2, 10, 3),
        (20, 3, 21, 1),
    ]


def test_counts_default_to_one_and_new_and_deleted_files() -> None:
    text = (
        "diff --git a/new.txt b/new.txt\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n"
        "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n"
        "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    )
    new, gone = parse(text).files
    assert (new.old_path, new.new_path) == (None, "new.txt")
    assert [(x.number, x.text) for x in new.added] == [(1, "hello")]
    assert (gone.old_path, gone.new_path) == ("gone.txt", None)
    assert [(x.number, x.text) for x in gone.removed] == [(1, "bye")]


def test_rename_paths_both_count_as_changed() -> None:
    text = (
        "diff --git a/old.py b/pkg/new.py\nsimilarity index 90%\n"
        "rename from old.py\nrename to pkg/new.py\n"
        "--- a/old.py\n+++ b/pkg/new.py\n@@ -1 +1 @@\n-a\n+b\n"
    )
    assert parse(text).changed_paths == ("old.py", "pkg/new.py")


def test_no_newline_marker_and_blank_lines_between_sections() -> None:
    text = (
        "\n" + "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n"
        "\\ No newline at end of file\n+b\n\\ No newline at end of file\n\n"
        "diff --git a/g b/g\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-c\n+d"  # no final newline
    )
    f, g = parse(text).files
    assert [line.no_newline for line in f.hunks[0].lines] == [True, True]
    assert g.added[0].text == "d"


def test_quoted_header_paths_split_shell_style() -> None:
    text = 'diff --git "a/sp ace" "b/sp ace"\n--- "a/sp ace"\n+++ "b/sp ace"\n@@ -1 +1 @@\n-a\n+b\n'
    assert parse(text).changed_paths == ("sp ace",)


@pytest.mark.parametrize(
    ("text", "line", "found", "expected", "rule"),
    [
        ("hello\n", 1, "'hello' outside any section", "diff --git", "outside-section"),
        ("diff --git a/x\n", 1, "one name", "two names", "header-paths"),
        (
            "diff --git a/x b/x c\n--- a/x\n+++ b/x\n",
            1,
            "'x' -> 'x c' disagreeing",
            "the header 'a/x b/x'",
            "path-mismatch",
        ),
        ('diff --git "a/x b/x\n', 1, "unterminated quoted name", "closing", "header-paths"),
        ("diff --git a/x /dev/null\n", 1, "without the", "a/PATH b/PATH", "missing-prefix"),
        ("diff --git a//etc/passwd b//etc/passwd\n", 1, "absolute path", "relative", "path"),
        ("diff --git a/../x b/../x\n", 1, "component '..'", "no empty", "path"),
        ("diff --git a/./x b/./x\n", 1, "component '.'", "no empty", "path"),
        ("diff --git a/ b/\n", 1, "an empty path", "relative", "path"),
        (
            "diff --git a/x b/x\nBinary files a/x and b/x differ\n",
            2,
            "'Binary files",
            "extended",
            "extended-header",
        ),
        (
            "diff --git a/x b/x\nGIT binary patch\n",
            2,
            "'GIT binary patch'",
            "extended",
            "extended-header",
        ),
        ("diff --git a/x b/x\n\n--- a/x\n", 2, "''", "extended header", "extended-header"),
        (
            "diff --git a/x b/x\n--- a/y\n+++ b/y\n",
            1,
            "disagreeing with '---'/'+++' 'y' -> 'y'",
            "the header 'a/y b/y'",
            "path-mismatch",
        ),
        ("diff --git a/x b/x\n--- a/x\n--- a/x\n", 3, "'--- a/x'", "'+++ PATH'", "header-order"),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/z\n",
            1,
            "disagreeing with '---'/'+++' 'x' -> 'z'",
            "the header 'a/x b/z'",
            "path-mismatch",
        ),
        (
            "diff --git a/x b/x\n--- /dev/null\n+++ /dev/null\n",
            3,
            "both sides",
            "one real",
            "dev-null",
        ),
        ("diff --git a/x b/x\n--- a/x\n+++ b/x\n", 4, "without hunks", "at least one", "no-hunk"),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\nfoo\n",
            4,
            "'foo'",
            "hunk header",
            "extended-header",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1\n",
            4,
            "'@@ -1 +1'",
            "hunk header",
            "hunk-header",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,2 +1 @@\n",
            4,
            "old range 0,2",
            "from 1",
            "hunk-range",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,0 +0,0 @@\n",
            4,
            "'@@",
            "at least one",
            "hunk-range",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n",
            6,
            "1 new",
            "counts",
            "hunk-count",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n",
            6,
            "0 old",
            "counts",
            "hunk-count",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n\n+b\n",
            6,
            "''",
            "' ', '-'",
            "hunk-line",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n*a\n",
            5,
            "'*a'",
            "' ', '-'",
            "hunk-line",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n+c\n",
            7,
            "'+c' after",
            "@@",
            "outside-section",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1,2 +1 @@\n-a\n+b\n+c\n",
            7,
            "'+c' with 1 old and 0 new lines left",
            "within the header's counts",
            "hunk-count",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n-b\n",
            6,
            "'-b' with 0 old and 2 new lines left",
            "within the header's counts",
            "hunk-count",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n c\n",
            6,
            "' c' with 0 old and 2 new lines left",
            "within the header's counts",
            "hunk-count",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n\\ No newline at end of file\n",
            5,
            "No newline",
            "right after",
            "no-newline-marker",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\n\\ nope\n",
            8,
            "nope",
            "@@",
            "outside-section",
        ),
        (
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -\u0661 +1 @@\n",
            4,
            "@@",
            "hunk header",
            "hunk-header",
        ),
    ],
)
def test_malformed_patches_name_line_found_and_expected(
    text: str, line: int, found: str, expected: str, rule: str
) -> None:
    exc = error(text)
    assert exc.rule == rule, str(exc)
    assert exc.patch_line == line, str(exc)
    assert found in exc.found, str(exc)
    assert expected in exc.expected, str(exc)
    assert str(exc) == f"{exc.what} at patch line {line}, got {exc.found}, expected {exc.expected}"
    assert isinstance(exc, VerifierError) and exc.exit_code == 3


@pytest.mark.parametrize(
    ("data", "line", "found"),
    [
        (b"", 0, "0 bytes"),
        (b"\xef\xbb\xbfdiff --git a/x b/x\n", 1, "byte order mark"),
        (b"diff --git a/x b/x\n\xff\n", 2, "0xff at offset 19"),
        (SIMPLE.replace("\n", "\r\n").encode(), 1, "carriage return"),
        (SIMPLE.encode().replace(b"third", b"th\x00rd"), 9, "NUL"),
        (b"\n\n\n", 4, "no 'diff --git' section"),
    ],
)
def test_unreadable_bytes(data: bytes, line: int, found: str) -> None:
    exc = error(data)
    assert exc.patch_line == line
    assert found in exc.found


def test_hunk_header_may_carry_section_text_but_not_garbage() -> None:
    ok = SIMPLE.replace("@@ -1,3 +1,3 @@", "@@ -1,3 +1,3 @@ def main():")
    assert parse(ok).files[0].added[0].text == "new line"
    assert error(SIMPLE.replace("@@ -1,3 +1,3 @@", "@@ -1,3 +1,3 @@x")).patch_line == 5


# --------------------------------------------------------------------------- properties

LINE = st.text(
    alphabet=st.characters(codec="utf-8", blacklist_characters="\n\r\x00"),
    max_size=12,
)


def git_diff(path: str, old: list[str], new: list[str], context: int) -> str:
    body = "".join(
        difflib.unified_diff(
            [x + "\n" for x in old], [x + "\n" for x in new], f"a/{path}", f"b/{path}", n=context
        )
    )
    return f"diff --git a/{path} b/{path}\n" + body


@settings(max_examples=300, deadline=None)
@given(st.lists(LINE, max_size=12), st.lists(LINE, max_size=12), st.integers(0, 3))
def test_difflib_output_parses_to_the_exact_changes(
    old: list[str], new: list[str], context: int
) -> None:
    text = git_diff("pkg/mod.py", old, new, context)
    if old == new:  # difflib writes no ---/+++ lines for equal inputs
        assert error(text).found == "end of patch inside a section header"
        return
    f = parse(text).files[0]
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    removed, added = [], []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op in ("replace", "delete"):
            removed += [(i + 1, old[i]) for i in range(i1, i2)]
        if op in ("replace", "insert"):
            added += [(j + 1, new[j]) for j in range(j1, j2)]
    assert [(x.number, x.text) for x in f.removed] == removed
    assert [(x.number, x.text) for x in f.added] == added


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_give_a_result_or_diff_error(data: bytes) -> None:
    with contextlib.suppress(DiffError):
        parse_patch(data)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="diff --gitab/+-@ 0123456789,\n\\NoewlinFf", max_size=300))
def test_diff_like_text_gives_a_result_or_diff_error(text: str) -> None:
    with contextlib.suppress(DiffError):
        parse_patch(text.encode("utf-8"))


MUTATIONS = st.sampled_from(["delete", "insert", "replace", "dup_line", "drop_line", "swap"])


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_mutated_valid_diffs_give_a_result_or_diff_error(data: st.DataObject) -> None:
    base = (
        SIMPLE + "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n"
        "@@ -0,0 +1,2 @@\n+x\n+y\n\\ No newline at end of file\n"
    ).encode("utf-8")
    buf = bytearray(base)
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(MUTATIONS)
        pos = data.draw(st.integers(0, max(0, len(buf) - 1)))
        if kind == "delete" and buf:
            del buf[pos]
        elif kind == "insert":
            buf.insert(pos, data.draw(st.sampled_from(b" +-@\\\n\r\x00\xffab/.")))
        elif kind == "replace" and buf:
            buf[pos] = data.draw(st.integers(0, 255))
        else:
            lines = bytes(buf).split(b"\n")
            i = data.draw(st.integers(0, len(lines) - 1))
            if kind == "dup_line":
                lines.insert(i, lines[i])
            elif kind == "drop_line":
                del lines[i]
            else:
                j = data.draw(st.integers(0, len(lines) - 1))
                lines[i], lines[j] = lines[j], lines[i]
            buf = bytearray(b"\n".join(lines))
    with contextlib.suppress(DiffError):
        parse_patch(bytes(buf))
