"""The pure-Python patch applier used by the behavioral channel."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verifiers.diff import parse_patch
from verifiers.errors import PatchApplyError
from verifiers.patch_apply import apply_patch

LINE = st.text(
    alphabet=st.characters(codec="utf-8", blacklist_characters="\n\r\x00"),
    max_size=8,
)


def git_diff(path: str, old: list[str], new: list[str], context: int = 3) -> bytes:
    body = "".join(
        difflib.unified_diff(
            [x + "\n" for x in old], [x + "\n" for x in new], f"a/{path}", f"b/{path}", n=context
        )
    )
    return (f"diff --git a/{path} b/{path}\n" + body).encode("utf-8")


@settings(max_examples=200, deadline=None)
@given(st.lists(LINE, max_size=15), st.lists(LINE, max_size=15), st.integers(0, 3))
def test_difflib_patches_reproduce_the_new_file(
    tmp_path_factory: pytest.TempPathFactory, old: list[str], new: list[str], context: int
) -> None:
    if old == new:
        return
    root = tmp_path_factory.mktemp("tree")
    (root / "d").mkdir()
    (root / "d" / "f.txt").write_text("".join(x + "\n" for x in old), encoding="utf-8")
    assert apply_patch(root, parse_patch(git_diff("d/f.txt", old, new, context))) == ("d/f.txt",)
    assert (root / "d" / "f.txt").read_text(encoding="utf-8") == "".join(x + "\n" for x in new)


def test_context_mismatch_is_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("a\nB\nc\n")
    patch = git_diff("f", ["a", "b", "c"], ["a", "x", "c"])
    with pytest.raises(PatchApplyError, match=r"patch line 6, got 'B' at old line 2, expected 'b'"):
        apply_patch(tmp_path, parse_patch(patch))


def test_missing_file_and_existing_new_file_are_refused(tmp_path: Path) -> None:
    with pytest.raises(PatchApplyError, match="no file 'f'"):
        apply_patch(tmp_path, parse_patch(git_diff("f", ["a"], ["b"])))
    (tmp_path / "n").write_text("x\n")
    new = b"diff --git a/n b/n\nnew file mode 100644\n--- /dev/null\n+++ b/n\n@@ -0,0 +1 @@\n+y\n"
    with pytest.raises(PatchApplyError, match="existing file 'n'"):
        apply_patch(tmp_path, parse_patch(new))


def test_new_delete_rename_and_no_newline(tmp_path: Path) -> None:
    (tmp_path / "gone").write_text("bye\n")
    (tmp_path / "old").write_text("keep\nend")
    patch = (
        b"diff --git a/sub/new b/sub/new\nnew file mode 100644\n--- /dev/null\n+++ b/sub/new\n"
        b"@@ -0,0 +1,2 @@\n+hello\n+world\n\\ No newline at end of file\n"
        b"diff --git a/gone b/gone\ndeleted file mode 100644\n--- a/gone\n+++ /dev/null\n"
        b"@@ -1 +0,0 @@\n-bye\n"
        b"diff --git a/old b/moved\nrename from old\nrename to moved\n--- a/old\n+++ b/moved\n"
        b"@@ -1,2 +1,2 @@\n keep\n-end\n\\ No newline at end of file\n+end\n"
    )
    touched = apply_patch(tmp_path, parse_patch(patch))
    assert touched == ("sub/new", "gone", "moved", "old")
    assert (tmp_path / "sub" / "new").read_bytes() == b"hello\nworld"
    assert not (tmp_path / "gone").exists() and not (tmp_path / "old").exists()
    assert (tmp_path / "moved").read_bytes() == b"keep\nend\n"


def test_writes_through_symlinks_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_text("a\n")
    root = tmp_path / "root"
    root.mkdir()
    os.symlink(outside, root / "link")
    with pytest.raises(PatchApplyError, match="symlink at 'link/f'"):
        apply_patch(root, parse_patch(git_diff("link/f", ["a"], ["b"])))
    assert (outside / "f").read_text() == "a\n"


def test_overlapping_hunks_are_refused(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("a\nb\nc\n")
    patch = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -2 +2 @@\n-b\n+B\n@@ -1 +1 @@\n-a\n+A\n"
    with pytest.raises(PatchApplyError, match="ordered hunks"):
        apply_patch(tmp_path, parse_patch(patch))


def test_a_hunk_at_line_zero_applies_at_the_first_line_as_git_does(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("one\ntwo\n")
    patch = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,2 +0,2 @@\n-one\n+ONE\n two\n"
    assert apply_patch(tmp_path, parse_patch(patch)) == ("f",)
    assert (tmp_path / "f").read_text() == "ONE\ntwo\n"
