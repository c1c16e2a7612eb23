"""A strict, pure-Python applier for a parsed unified diff (no fuzz, no offsets).

Invariants:
- hunks apply at exactly their header positions, in order, without overlap; every
  context and removed line must equal the file's line; otherwise ``PatchApplyError``;
- files are UTF-8 text; ``\\ No newline at end of file`` markers are honoured;
- writes stay inside ``root``: no path through a symlink, nothing outside the real root;
- a section with ``/dev/null`` as new path deletes the file (its result must be empty);
  a rename writes the new path and removes the old one; mode lines are ignored;
- the patched tree stays within a :class:`TreeBudget`, checked before every write: at
  most ``total_bytes`` in all its files together (each directory the patch creates
  counted as ``DIRECTORY_BYTES``) and ``file_bytes`` in any one, so
  ``copy from``/``copy to`` sections (each duplicating a whole file for a few bytes of
  patch) cannot fill the disk the copy lives on;
- every way a patch can fail to apply, a file system refusal included (a file where
  the patch needs a directory), is ``PatchApplyError``, never another exception.
Used only by the behavioral channel, on a throw-away copy of an evaluator-owned tree.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ledger.bounded import DOCUMENT_LIMIT
from verifiers.diff import FileDiff, ParsedDiff
from verifiers.errors import PatchApplyError

Line = tuple[str, bool]  # text, followed by a newline

# The patched tree must fit the sandbox's /sandbox tmpfs (256 MiB, verifiers.sandbox)
# with room left for what the probes write; every file is read back under the document
# limit (its digest goes into the evidence).
PATCHED_TREE_BYTES: Final = 128 << 20
# What a directory the patch creates is charged: a file system block, so that deep paths
# (thousands of directories for one file) cannot fill the disk's inodes for free.
DIRECTORY_BYTES: Final = 4096


@dataclass(frozen=True)
class TreeBudget:
    """The most a patched tree may hold: all files together, and any one file."""

    total_bytes: int = PATCHED_TREE_BYTES
    file_bytes: int = DOCUMENT_LIMIT


def tree_bytes(root: Path) -> int:
    """Bytes in the regular files under ``root`` (symlinks not followed)."""
    total = 0
    for base, _dirs, files in os.walk(root):
        for name in files:
            info = os.lstat(os.path.join(base, name))
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
    return total


def _missing_directories(path: Path) -> int:
    """How many directories writing ``path`` creates."""
    count, parent = 0, path.parent
    while not os.path.lexists(parent):
        count, parent = count + 1, parent.parent
    return count


def _size(path: Path) -> int:
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return 0
    return info.st_size if stat.S_ISREG(info.st_mode) else 0


def _fail(patch_line: int, found: str, expected: str) -> PatchApplyError:
    return PatchApplyError(
        f"patch does not apply at patch line {patch_line}, got {found}, expected {expected}"
    )


def _target(root: Path, rel: str, patch_line: int) -> Path:
    """``root/rel`` after checking no existing component is a symlink or escapes."""
    current = root
    for part in rel.split("/"):
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            break
        if stat.S_ISLNK(info.st_mode):
            raise _fail(patch_line, f"symlink at {rel!r}", "plain files and directories")
    real = Path(os.path.realpath(current))
    if not real.is_relative_to(root):
        raise _fail(patch_line, f"path {rel!r} outside the tree", "a path inside the tree")
    return root / rel


def _read_lines(path: Path, rel: str, patch_line: int) -> list[Line]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise _fail(patch_line, f"no file {rel!r}", "the file the patch modifies") from None
    except OSError as exc:
        raise _fail(patch_line, f"unreadable {rel!r} ({exc.strerror})", "a readable file") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise _fail(patch_line, f"non-UTF-8 bytes in {rel!r}", "a UTF-8 text file") from None
    parts = text.split("\n")
    if parts[-1] == "":
        parts.pop()
        return [(p, True) for p in parts]
    return [(p, True) for p in parts[:-1]] + [(parts[-1], False)]


def apply_file(old: list[Line], section: FileDiff) -> list[Line]:
    """The new content of one file section, applied to its old lines."""
    out: list[Line] = []
    pos = 0
    for hunk in section.hunks:
        # A hunk whose old lines start at line 0 is anchored at line 1, as git does.
        start = max(hunk.old_start, 1) - 1 if hunk.old_count > 0 else hunk.old_start
        if start < pos or start > len(old):
            raise _fail(
                hunk.patch_line,
                f"hunk at old line {hunk.old_start} ({len(old)} lines, next free {pos + 1})",
                "ordered hunks inside the file",
            )
        out.extend(old[pos:start])
        index = start
        for offset, line in enumerate(hunk.lines, start=1):
            where = hunk.patch_line + offset
            if line.op in (" ", "-"):
                if index >= len(old) or old[index][0] != line.text:
                    found = repr(old[index][0][:60]) if index < len(old) else "end of file"
                    raise _fail(where, f"{found} at old line {index + 1}", repr(line.text[:60]))
                index += 1
            if line.op in (" ", "+"):
                out.append((line.text, not line.no_newline))
        pos = index
    out.extend(old[pos:])
    return out


def _render(lines: list[Line]) -> bytes:
    return "".join(text + ("\n" if newline else "") for text, newline in lines).encode("utf-8")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def apply_patch(root: Path, diff: ParsedDiff, budget: TreeBudget | None = None) -> tuple[str, ...]:
    """Apply every section of ``diff`` to the tree at ``root``; return touched paths.

    Sections apply one after another (a later section sees earlier results). A write
    that would take the tree past ``budget`` (default :class:`TreeBudget`) is refused
    before a byte is written. On ``PatchApplyError`` the tree may be partly modified (but
    within the budget): use a throw-away copy.
    """
    real_root = Path(os.path.realpath(root))
    limits = TreeBudget() if budget is None else budget
    total = tree_bytes(real_root)
    touched: list[str] = []
    for section in diff.files:
        no = section.patch_line
        try:
            total = _apply_section(real_root, section, limits, total, touched)
        except OSError as exc:
            where = section.header_new if section.new_path is not None else section.header_old
            raise _fail(
                no, f"{exc.strerror or exc} at {where!r}", "a path the patch can write"
            ) from None
    return tuple(touched)


def _apply_section(
    real_root: Path, section: FileDiff, budget: TreeBudget, total: int, touched: list[str]
) -> int:
    """Apply one section; return the tree's new total size."""
    no = section.patch_line
    if section.old_path is None:
        target = _target(real_root, section.header_new, no)
        if os.path.lexists(target):
            raise _fail(no, f"existing file {section.header_new!r}", "a new file")
        old: list[Line] = []
    else:
        source = _target(real_root, section.old_path, no)
        old = _read_lines(source, section.old_path, no)
    new = apply_file(old, section)
    if section.new_path is None:
        if new:
            raise _fail(no, f"{len(new)} lines left in a deleted file", "an empty result")
        gone = _target(real_root, section.header_old, no)
        freed = _size(gone)
        os.unlink(gone)
        touched.append(section.header_old)
        return total - freed
    data = _render(new)
    target = _target(real_root, section.new_path, no)
    is_copy = any(h.startswith("copy from ") for h in section.extended_headers)
    moved = section.old_path is not None and section.old_path != section.new_path and not is_copy
    after = total - _size(target) + len(data) + DIRECTORY_BYTES * _missing_directories(target)
    if moved:
        assert section.old_path is not None
        after -= _size(_target(real_root, section.old_path, no))
    if len(data) > budget.file_bytes:
        raise _fail(
            no,
            f"{len(data)} bytes for {section.new_path!r}",
            f"at most {budget.file_bytes} bytes in one file of the patched tree",
        )
    if after > budget.total_bytes:
        raise _fail(
            no,
            f"a patched tree of {after} bytes",
            f"at most {budget.total_bytes} bytes (the patched-tree budget)",
        )
    _write(target, data)
    touched.append(section.new_path)
    if moved:
        assert section.old_path is not None
        os.unlink(_target(real_root, section.old_path, no))
        touched.append(section.old_path)
    return after
