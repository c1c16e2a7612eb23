"""The strict unified-diff parser: structure rules, precise errors, and totality."""

from __future__ import annotations

import contextlib
import difflib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifiers.diff import READING_0_1_0, RULES, ParsedDiff, parse_patch
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


def error(text: str | bytes, *, old: bool = False) -> DiffError:
    """The refusal of ``text`` (by release 0.1.0's reading when ``old``)."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    with pytest.raises(DiffError) as info:
        if old:
            parse_patch(data, READING_0_1_0)
        else:
            parse_patch(data)
    assert info.value.rule in RULES
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
            "diff --git a/x b/x\n--- a/x\nold mode 100644\n",
            3,
            "'old mode",
            "'+++ PATH'",
            "header-order",
        ),
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
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1234567890123456,2 +1 @@\n",
            4,
            "line number '1234567890123456' of 16 digits",
            "at most 15 digits",
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
    try:
        parse_patch(data)
    except DiffError as exc:
        assert exc.rule in RULES


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


# ----------------------------------------------------------- git's path semantics
# Each test below is named in docs/VERIFIERS.md ("Diff structure").

MOD = "--- {a}\n+++ {b}\n@@ -1 +1 @@\n-old\n+new\n"


def section(header: str, a: str, b: str, extra: str = "") -> str:
    return f"diff --git {header}\n{extra}" + MOD.format(a=a, b=b)


def test_prefixless_header_is_refused_not_judged_as_written() -> None:
    # git apply -p1 would write x.py (and .github/x): the path judged must be git's.
    for path in ("tools/x.py", "src/.github/x"):
        exc = error(section(f"{path} {path}", path, path))
        assert exc.rule == "missing-prefix", str(exc)
        assert exc.patch_line == 1
    exc = error(section("a/tools/x.py b/tools/x.py", "tools/x.py", "tools/x.py"))
    assert (exc.rule, exc.patch_line) == ("missing-prefix", 2)
    exc = error(section("a/tools/x.py b/tools/x.py", "a/tools/x.py", "tools/x.py"))
    assert (exc.rule, exc.patch_line) == ("missing-prefix", 3)


def test_prefixed_path_is_the_path_git_writes() -> None:
    diff = parse(section("a/a/b.txt b/a/b.txt", "a/a/b.txt", "b/a/b.txt"))
    assert diff.written_paths == diff.changed_paths == ("a/b.txt",)


def test_b_prefix_on_the_old_side_is_refused() -> None:
    exc = error(section("a/x b/x", "b/x", "b/x"))
    assert (exc.rule, exc.patch_line) == ("missing-prefix", 2)
    exc = error(section("a/x b/x", "a/x", "a/x"))
    assert (exc.rule, exc.patch_line) == ("missing-prefix", 3)


def test_nbsp_before_a_path_is_part_of_the_name() -> None:
    exc = error(section("a/x b/x", "\u00a0a/x", "b/x"))
    assert exc.rule == "missing-prefix" and "'\\xa0a/x'" in exc.found
    exc = error(section("\u00a0a/x b/x", "a/x", "b/x"))
    assert exc.rule == "missing-prefix"


@pytest.mark.parametrize("path", ["./x", "x/", "x//y", "x/./y", "x/../y", "/x", ".."])
def test_dot_slash_trailing_slash_and_empty_components_are_refused(path: str) -> None:
    exc = error(section(f"a/{path} b/{path}", f"a/{path}", f"b/{path}"))
    assert exc.rule == "path" and exc.patch_line == 1, str(exc)


@pytest.mark.parametrize("path", [".git/config", "d/.GIT", "d/.git.", "d/.git /x", "GIT~1/x"])
def test_dot_git_components_are_refused_as_git_does(path: str) -> None:
    exc = error(section(f"a/{path} b/{path}", f"a/{path}", f"b/{path}"))
    assert exc.rule == "dot-git", str(exc)


def test_header_and_side_lines_must_agree() -> None:
    # git ignores the header when ---/+++ are present and writes y: refuse the lie.
    exc = error(section("a/x b/x", "a/y", "b/y"))
    assert (exc.rule, exc.patch_line) == ("path-mismatch", 1)
    exc = error(section("a/x b/x", "a/x", "b/y"))
    assert exc.rule == "path-mismatch"


def test_rename_and_copy_lines_must_agree_with_the_header() -> None:
    lie = "rename from evil\nrename to y\n"
    exc = error(section("a/x b/y", "a/x", "b/y", lie))
    assert (exc.rule, exc.patch_line) == ("path-mismatch", 2)
    exc = error(section("a/x b/y", "a/x", "b/y", "copy from x\ncopy to z\n"))
    assert (exc.rule, exc.patch_line) == ("path-mismatch", 3)
    exc = error(section("a/x b/y", "a/x", "b/y", "rename from x\n"))
    assert exc.rule == "extended-header"
    exc = error(section("a/x b/y", "a/x", "b/y", "rename from x\nrename to y\ncopy from x\n"))
    assert exc.rule == "extended-header"
    ok = parse(section("a/x b/y", "a/x", "b/y", "rename from x\nrename to y\n"))
    assert ok.files[0].operation == "rename" and ok.written_paths == ("x", "y")
    copy = parse(section("a/x b/y", "a/x", "b/y", "copy from x\ncopy to y\n"))
    # A copy writes y only; its source x stays in the scope check (its content is copied).
    assert copy.written_paths == ("y",) and copy.changed_paths == ("x", "y")
    # Different names without rename lines: git applies it as a rename.
    implied = parse(section("a/x b/y", "a/x", "b/y"))
    assert implied.files[0].operation == "rename" and implied.written_paths == ("x", "y")


def test_rename_to_dev_null_is_refused() -> None:
    text = "diff --git a/X b/Y\n--- a/X\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
    exc = error(text)
    assert (exc.rule, exc.patch_line) == ("dev-null", 3), str(exc)
    exc = error(text.replace("--- a/X", "deleted file mode 100644\n--- a/X"))
    assert (exc.rule, exc.patch_line) == ("path-mismatch", 1), str(exc)
    exc = error(text.replace("--- a/X", "rename from X\nrename to Y\n--- a/X"))
    assert exc.rule == "dev-null" and "rename" in exc.found, str(exc)
    exc = error(
        text.replace("--- a/X", "rename from X\nrename to Y\ndeleted file mode 100644\n--- a/X")
    )
    assert exc.rule == "extended-header", str(exc)


def test_dev_null_only_for_a_real_creation_or_deletion() -> None:
    create = "diff --git a/n b/n\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n"
    assert error(create).rule == "dev-null"  # git would read and write 'dev/null'
    created = parse(create.replace("--- /dev/null", "new file mode 100644\n--- /dev/null"))
    assert created.files[0].operation == "create" and created.written_paths == ("n",)
    delete = "diff --git a/g b/g\n--- a/g\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    assert error(delete).rule == "dev-null"
    assert error(delete.replace("--- a/g", "new file mode 100644\n--- a/g")).rule == "dev-null"
    with_old = "diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n"
    assert error(with_old + "@@ -1 +1 @@\n-x\n+y\n").rule == "dev-null"
    assert error(with_old.replace("--- /dev/null", "--- a/n") + "@@ -0,0 +1 @@\n+y\n").rule == (
        "dev-null"
    )


def test_file_modes_other_than_regular_files_are_refused() -> None:
    for mode in ("120000", "160000", "100664", "0"):
        text = (
            f"diff --git a/n b/n\nnew file mode {mode}\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+x\n"
        )
        assert error(text).rule == "mode"
    assert parse(section("a/x b/x", "a/x", "b/x", "old mode 100644\nnew mode 100755\n"))


def test_quoted_names_are_unquoted_as_git_does() -> None:
    utf8 = '"a/\\303\\251t\\303\\251.txt" "b/\\303\\251t\\303\\251.txt"'
    diff = parse(section(utf8, *utf8.split(" ")))
    assert diff.written_paths == ("\u00e9t\u00e9.txt",)
    quote = '"a/quo\\"te" "b/quo\\"te"'
    assert parse(section(quote, *quote.split(" "))).written_paths == ('quo"te',)
    mixed = parse(section('a/x "b/x"', '"a/x"', "b/x\t"))
    assert mixed.written_paths == ("x",)
    # A tab or backslash is what git would write, but not a path we judge.
    tab = '"a/x\\ty" "b/x\\ty"'
    assert error(section(tab, *tab.split(" "))).rule == "path-character"
    bad = '"a/x\\qy" "b/x\\qy"'
    assert error(section(bad, *bad.split(" "))).rule == "header-paths"
    raw = '"a/\\377" "b/\\377"'
    assert error(section(raw, *raw.split(" "))).rule == "path-character"


def test_unquoted_names_with_spaces_are_read_as_git_does() -> None:
    # git writes such names unquoted; ---/+++ names end at a TAB, not at a space.
    diff = parse(section("a/foo bar b/foo bar", "a/foo bar\t", "b/foo bar\t"))
    assert diff.written_paths == ("foo bar",)
    ambiguous = "a/x b/y b/z"  # x -> 'y b/z' or 'x b/y' -> z: ---/+++ decide
    assert parse(section(ambiguous, "a/x b/y", "b/z")).written_paths == ("x b/y", "z")
    assert parse(section(ambiguous, "a/x", "b/y b/z")).written_paths == ("x", "y b/z")
    exc = error(section("a/foo bar b/foo bar", "a/foo", "b/foo"))
    assert exc.rule == "path-mismatch"
    # A trailing space belongs to the name (git), so it no longer matches the header.
    assert error(section("a/x b/x", "a/x ", "b/x ")).rule == "path-mismatch"


def test_crlf_is_refused_naming_crlf() -> None:
    exc = error(SIMPLE.replace("\n", "\r\n").encode())
    assert exc.rule == "crlf" and "CRLF" in exc.found and exc.patch_line == 1
    exc = error(SIMPLE.replace("new line", "new\rline").encode())
    assert exc.rule == "crlf" and exc.patch_line == 8


def test_nul_byte_is_refused() -> None:
    exc = error(SIMPLE.replace("new line", "new\x00line").encode())
    assert (exc.rule, exc.patch_line) == ("nul", 8)


def test_whitespace_only_line_before_the_first_section_is_refused() -> None:
    for junk in (" \n", "\t\n", "\u00a0\n"):
        exc = error(junk + SIMPLE)
        assert (exc.rule, exc.patch_line) == ("outside-section", 1)
    assert parse("\n\n" + SIMPLE).changed_paths == ("src/app.py",)


def test_non_ascii_hunk_numbers_are_refused() -> None:
    for digit in ("\u0661", "\uff11", "\u00b9"):
        exc = error(SIMPLE.replace("@@ -1,3 +1,3 @@", f"@@ -{digit},3 +1,3 @@"))
        assert (exc.rule, exc.patch_line) == ("hunk-header", 5)


def test_zero_length_hunk_is_refused() -> None:
    exc = error(
        SIMPLE.replace(
            "@@ -1,3 +1,3 @@\n first\n-old line\n+new line\n third\n", "@@ -0,0 +0,0 @@\n"
        )
    )
    assert (exc.rule, exc.patch_line) == ("hunk-range", 5)


def test_repeated_or_misplaced_no_newline_markers_are_refused() -> None:
    base = "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n"
    marker = "\\ No newline at end of file\n"
    assert parse(base + " a\n-b\n" + marker + "+c\n" + marker)
    exc = error(base + " a\n-b\n" + marker + marker + "+c\n")
    assert (exc.rule, exc.patch_line) == ("no-newline-marker", 8)
    exc = error(base + " a\n" + marker + "-b\n+c\n")
    assert (exc.rule, exc.patch_line) == ("no-newline-marker", 7)
    exc = error(base + "-a\n" + marker + " b\n+c\n")
    assert (exc.rule, exc.patch_line) == ("no-newline-marker", 7)
    tail = base + " a\n b\n" + marker + "@@ -5 +5 @@\n-x\n+y\n"
    assert error(tail).rule == "no-newline-marker"


def test_blank_line_after_a_hunk_is_accepted_but_not_between_hunks() -> None:
    assert parse(SIMPLE + "\n\n").changed_paths == ("src/app.py",)
    two = SIMPLE + "\n" + "diff --git a/g b/g\n--- a/g\n+++ b/g\n@@ -1 +1 @@\n-a\n+b\n"
    assert parse(two).changed_paths == ("g", "src/app.py")
    exc = error(SIMPLE + "\n@@ -9 +9 @@\n-a\n+b\n")
    assert (exc.rule, exc.patch_line) == ("blank-line", 11)


def test_unicode_line_separators_stay_inside_one_line() -> None:
    seps = "\u2028\u2029\x0b\x0c\x1c\x1d\x1e\x85"
    text = SIMPLE.replace("+new line", f"+new{seps}line")
    (line,) = parse(text).added_lines
    assert line.text == f"new{seps}line" and line.number == 2


def test_removed_line_starting_with_dashes_is_a_removed_line() -> None:
    text = SIMPLE.replace("-old line", "--- old line").replace("+new line", "++++ new")
    f = parse(text).files[0]
    assert [x.text for x in f.removed] == ["-- old line"]
    assert [x.text for x in f.added] == ["+++ new"]


@pytest.mark.parametrize("path", ["x\\\\y", "x\\ty", "x\\001y", "x\\177y"])
def test_backslash_and_control_characters_in_paths_are_refused(path: str) -> None:
    quoted = f'"a/{path}" "b/{path}"'
    exc = error(section(quoted, *quoted.split(" ")))
    assert (exc.rule, exc.patch_line) == ("path-character", 1), str(exc)
    assert error(section("a/x\\y b/x\\y", "a/x\\y", "b/x\\y")).rule == "path-character"


def test_repeated_and_contradictory_extended_headers_are_refused() -> None:
    index = "index 1111111..2222222 100644\n"
    exc = error(section("a/x b/x", "a/x", "b/x", index + index))
    assert (exc.rule, exc.patch_line) == ("extended-header", 3)
    both = "new file mode 100644\ndeleted file mode 100644\n"
    assert error(section("a/x b/x", "/dev/null", "b/x", both)).rule == "extended-header"
    renew = "rename from x\nrename to y\nnew file mode 100644\n"
    assert error(section("a/x b/y", "/dev/null", "b/y", renew)).rule == "extended-header"


# ------------------------------------------------- read as git reads them (release 0.2.0)
# Release 0.1.0 refused each of these; its reading is kept for results it recorded.


@pytest.mark.parametrize(
    ("header", "old_rule"),
    [
        ("a/x  b/x", "path-mismatch"),
        ("a/x\tb/x", "header-paths"),
        (" a/x b/x", "missing-prefix"),
        ("\t a/x \t b/x", "missing-prefix"),
        ('"a/x"  "b/x"', "missing-prefix"),
        ('a/x \t"b/x"', "header-paths"),
    ],
)
def test_blank_runs_in_the_header_are_read_as_git_reads_them(header: str, old_rule: str) -> None:
    text = section(header, "a/x", "b/x")
    assert parse(text).written_paths == ("x",)
    assert error(text, old=True).rule == old_rule
    # The runs separate names; the names must still be the ---/+++ names.
    assert error(section(header.replace("b/x", "b/y"), "a/x", "b/x")).rule == "path-mismatch"
    # A name may end with a space: the ---/+++ names pick the reading.
    spaced = parse(section("a/x   b/x ", "a/x \t", "b/x \t"))
    assert spaced.written_paths == ("x ",)


def test_hunks_at_line_zero_are_anchored_at_line_one_as_git_does() -> None:
    for hunk, body, numbers in (
        ("@@ -0,1 +0,1 @@", "-a\n+b\n", [(1, "b"), (1, "a")]),
        ("@@ -0,2 +0,2 @@", "-a\n+b\n c\n", [(1, "b"), (1, "a")]),
        ("@@ -0,2 +1,2 @@", " c\n-a\n+b\n", [(2, "b"), (2, "a")]),
    ):
        text = f"diff --git a/x b/x\n--- a/x\n+++ b/x\n{hunk}\n{body}"
        diff = parse(text)
        assert [(x.number, x.text) for x in diff.added_lines + diff.removed_lines] == numbers
        assert diff.files[0].hunks[0].old_start == 0  # recorded as written
        exc = error(text, old=True)
        assert (exc.rule, exc.patch_line) == ("hunk-range", 4)
    # A hunk of no lines at all is still refused (git: "corrupt patch").
    assert error("diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -0,0 +0,0 @@\n").rule == "hunk-range"


def test_hunk_numbers_of_up_to_15_digits_are_read() -> None:
    def text(number: str) -> str:
        return f"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -{number},2 +{number},2 @@\n-a\n+b\n c\n"

    for digits in (13, 15):
        number = "9" * digits
        (line,) = parse(text(number)).added_lines
        assert line.number == int(number) < 2**53
        assert error(text(number), old=True).rule == "hunk-header"
    assert parse(text("0" * 20 + "7")).added_lines[0].number == 7  # leading zeros
    exc = error(text("1" + "0" * 15))
    assert (exc.rule, exc.patch_line) == ("hunk-range", 4) and "16 digits" in exc.found
    assert error(text("1" + "0" * 15), old=True).rule == "hunk-header"
    # Thousands of digits are refused before any conversion (int() stops at 4300).
    assert error(text("9" * 10_000)).rule == "hunk-range"
    assert error(text("0" * 10_000 + "1"), old=True).rule == "hunk-header"
    assert parse(text("0" * 10_000 + "1")).added_lines[0].number == 1


def test_a_timestamp_after_a_side_name_is_not_part_of_it() -> None:
    stamp = "\t2024-01-01 00:00:00.000000000 +0000"
    diff = parse(section("a/f.txt b/f.txt", "a/f.txt" + stamp, "b/f.txt" + stamp))
    assert diff.written_paths == ("f.txt",)


def test_shell_quote_characters_are_part_of_a_name() -> None:
    assert parse(section("a/it's b/it's", "a/it's", "b/it's")).written_paths == ("it's",)
    # git strips the first component of "'a/f.txt'" and writes "f.txt'": not judged.
    exc = error(section("'a/f.txt' 'b/f.txt'", "'a/f.txt'", "'b/f.txt'"))
    assert (exc.rule, exc.patch_line) == ("missing-prefix", 1)


@pytest.mark.parametrize(
    "names",
    [
        "a/x" + " b/x" * 50_000,  # 50,000 readings, each ~100 KB long if built
        "a/x" + " " * 200_000 + "b/x",  # one run of blanks: 200,000 readings (git's)
        "a/x" + " \t" * 100_000,  # blanks and no b/: no reading at all
    ],
)
def test_a_header_with_many_readings_costs_memory_linear_in_its_length(names: str) -> None:
    """A hostile header must not make the parser list every reading of its names
    (that cost the square of its length: 80 KB of ' b/x' took 1.5 GB)."""
    import tracemalloc

    text = f"diff --git {names}\n--- a/x\n+++ b/y\n@@ -1 +1 @@\n-a\n+b\n"
    for old in (False, True):
        tracemalloc.start()
        try:
            exc = error(text, old=old)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert exc.rule in ("path-mismatch", "header-paths", "missing-prefix"), str(exc)
        assert peak < 20 * len(text), peak
