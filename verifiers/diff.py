"""Strict unified-diff parser (git style), following upstream IDKMesh's structural rules.

Invariants of a parsed patch:
- the bytes are UTF-8 without BOM, NUL or carriage return; lines end with ``\\n``;
- every non-blank line belongs to a ``diff --git a/X b/Y`` section whose header splits
  (shell-style) into exactly two paths, neither ``/dev/null``;
- paths lose an ``a/`` / ``b/`` prefix and are relative, non-empty, without ``.``,
  ``..`` or empty components;
- between the header and ``---`` only git's extended header lines appear (so binary
  patches fail); ``--- `` then ``+++ `` follow, each one path or ``/dev/null``, equal to
  the header's path for that side, not both ``/dev/null``;
- each section has at least one hunk ``@@ -a[,b] +c[,d] @@``; counts default to 1;
  hunk lines start with space, ``-`` or ``+`` or are exactly
  ``\\ No newline at end of file``; the old and new counts come out exactly;
- blank lines are tolerated only outside hunk bodies and headers.

``parse_patch`` returns a ``ParsedDiff`` or raises ``DiffError``; no other exception
escapes for any input bytes.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from typing import Literal

from verifiers.errors import DiffError

NO_NEWLINE_MARKER = "\\ No newline at end of file"
DEV_NULL = "/dev/null"

_EXTENDED_HEADERS = (
    "index ",
    "old mode ",
    "new mode ",
    "new file mode ",
    "deleted file mode ",
    "similarity index ",
    "dissimilarity index ",
    "rename from ",
    "rename to ",
    "copy from ",
    "copy to ",
)
_HUNK_RE = re.compile(
    r"@@ -([0-9]{1,12})(?:,([0-9]{1,12}))? \+([0-9]{1,12})(?:,([0-9]{1,12}))? @@(?: .*)?\Z",
    re.ASCII | re.DOTALL,
)

Op = Literal[" ", "-", "+"]


@dataclass(frozen=True)
class ChangedLine:
    """An added (new-side number) or removed (old-side number) line of one file."""

    path: str
    number: int
    text: str
    patch_line: int


@dataclass(frozen=True)
class HunkLine:
    """One body line of a hunk; ``no_newline`` when followed by the no-newline marker."""

    op: Op
    text: str
    no_newline: bool = False


@dataclass(frozen=True)
class Hunk:
    """A hunk header's ranges, its patch line and its body lines in order."""

    old_start: int
    old_count: int
    new_start: int
    new_count: int
    patch_line: int
    lines: tuple[HunkLine, ...]


@dataclass(frozen=True)
class FileDiff:
    """One ``diff --git`` section. ``old_path``/``new_path`` are None for ``/dev/null``."""

    header_old: str
    header_new: str
    old_path: str | None
    new_path: str | None
    extended_headers: tuple[str, ...]
    hunks: tuple[Hunk, ...]
    added: tuple[ChangedLine, ...]
    removed: tuple[ChangedLine, ...]
    patch_line: int

    @property
    def paths(self) -> tuple[str, ...]:
        """The distinct repository paths this section touches (both sides of a rename)."""
        if self.header_old == self.header_new:
            return (self.header_old,)
        return (self.header_old, self.header_new)


@dataclass(frozen=True)
class ParsedDiff:
    """A structurally valid patch: its sections in patch order."""

    files: tuple[FileDiff, ...]

    @property
    def added_lines(self) -> tuple[ChangedLine, ...]:
        return tuple(line for f in self.files for line in f.added)

    @property
    def removed_lines(self) -> tuple[ChangedLine, ...]:
        return tuple(line for f in self.files for line in f.removed)

    @property
    def changed_paths(self) -> tuple[str, ...]:
        """Sorted distinct paths of all sections."""
        return tuple(sorted({p for f in self.files for p in f.paths}))


def _show(line: str) -> str:
    return repr(line if len(line) <= 60 else line[:57] + "...")


def decode_patch(data: bytes) -> str:
    """Strict UTF-8 text of a patch; refuses empty input, BOM, NUL and CR."""
    if not data:
        raise DiffError(0, "0 bytes", "a non-empty unified diff", "empty patch")
    if data.startswith(b"\xef\xbb\xbf"):
        raise DiffError(1, "a UTF-8 byte order mark", "'diff --git' at offset 0", "patch has a BOM")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DiffError(
            line,
            f"byte 0x{data[exc.start]:02x} at offset {exc.start}",
            "UTF-8 text",
            "patch is not UTF-8",
        ) from None
    for char, name in (("\x00", "NUL byte (binary content)"), ("\r", "carriage return (CRLF)")):
        pos = text.find(char)
        if pos >= 0:
            line = text.count("\n", 0, pos) + 1
            raise DiffError(line, f"a {name}", "LF-terminated text", "patch is not plain text")
    return text


def _split_header(rest: str, line_no: int, what: str) -> list[str]:
    try:
        return shlex.split(rest, comments=False, posix=True)
    except ValueError as exc:
        raise DiffError(line_no, f"{_show(rest)} ({exc})", f"shell-style {what}") from None


def _check_path(path: str, line_no: int) -> str:
    if not path:
        raise DiffError(line_no, "an empty path", "a relative repository path")
    if path.startswith("/"):
        raise DiffError(line_no, f"absolute path {_show(path)}", "a relative repository path")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise DiffError(
                line_no,
                f"path {_show(path)} with component {part!r}",
                "no empty, '.' or '..' components",
            )
    return path


def _strip(token: str, prefix: str) -> str:
    return token[len(prefix) :] if token.startswith(prefix) else token


class _Parser:
    """Line-by-line state machine; each ``_on_*`` method handles one state."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines
        self.files: list[FileDiff] = []
        # Current section.
        self.header_old = ""
        self.header_new = ""
        self.section_line = 0
        self.extended: list[str] = []
        self.old_path: str | None = None
        self.new_path: str | None = None
        self.hunks: list[Hunk] = []
        self.added: list[ChangedLine] = []
        self.removed: list[ChangedLine] = []
        # Current hunk.
        self.hunk_header: tuple[int, int, int, int, int] = (0, 0, 0, 0, 0)
        self.body: list[HunkLine] = []
        self.old_left = 0
        self.new_left = 0
        self.old_no = 0
        self.new_no = 0
        self.marker_ok = False

    # -- sections -----------------------------------------------------------------

    def _start_section(self, line: str, no: int) -> None:
        tokens = _split_header(line[len("diff --git ") :], no, "'a/X b/Y' header paths")
        if len(tokens) != 2:
            raise DiffError(no, f"{len(tokens)} paths in {_show(line)}", "exactly two paths")
        if DEV_NULL in tokens:
            raise DiffError(no, f"{DEV_NULL} in {_show(line)}", "real paths in the header")
        self.header_old = _check_path(_strip(tokens[0], "a/"), no)
        self.header_new = _check_path(_strip(tokens[1], "b/"), no)
        self.section_line = no
        self.extended = []
        self.hunks = []
        self.added = []
        self.removed = []

    def _side_path(self, line: str, no: int, marker: str, prefix: str, header: str) -> str | None:
        if not line.startswith(marker):
            raise DiffError(no, _show(line), repr(marker + "PATH"))
        tokens = _split_header(line[len(marker) :], no, f"'{marker}' path")
        if len(tokens) != 1:
            raise DiffError(
                no, f"{len(tokens)} paths in {_show(line)}", f"one path after {marker!r}"
            )
        if tokens[0] == DEV_NULL:
            return None
        path = _check_path(_strip(tokens[0], prefix), no)
        if path != header:
            raise DiffError(no, f"path {_show(path)}", f"the header's path {_show(header)}")
        return path

    def _finish_section(self) -> None:
        self.files.append(
            FileDiff(
                header_old=self.header_old,
                header_new=self.header_new,
                old_path=self.old_path,
                new_path=self.new_path,
                extended_headers=tuple(self.extended),
                hunks=tuple(self.hunks),
                added=tuple(self.added),
                removed=tuple(self.removed),
                patch_line=self.section_line,
            )
        )

    # -- hunks --------------------------------------------------------------------

    def _start_hunk(self, line: str, no: int) -> None:
        m = _HUNK_RE.match(line)
        if m is None:
            raise DiffError(no, _show(line), "a hunk header '@@ -a[,b] +c[,d] @@'")
        a, b, c, d = (int(g) if g is not None else 1 for g in m.groups())
        for start, count, side in ((a, b, "old"), (c, d, "new")):
            if count > 0 and start == 0:
                raise DiffError(no, f"{side} range {start},{count}", "line numbers from 1")
        if b == 0 and d == 0:
            raise DiffError(no, _show(line), "a hunk with at least one line")
        self.hunk_header = (a, b, c, d, no)
        self.body = []
        self.old_left, self.new_left = b, d
        self.old_no, self.new_no = a, c
        self.marker_ok = False

    def _hunk_line(self, line: str, no: int) -> None:
        op: Op
        if line.startswith(" "):
            op, ok = " ", self.old_left > 0 and self.new_left > 0
        elif line.startswith("-"):
            op, ok = "-", self.old_left > 0
        elif line.startswith("+"):
            op, ok = "+", self.new_left > 0
        else:
            raise DiffError(
                no,
                _show(line),
                f"a hunk line starting with ' ', '-' or '+' ({self.old_left} old and"
                f" {self.new_left} new lines still due)",
            )
        if not ok:
            raise DiffError(
                no,
                f"{_show(line)} with {self.old_left} old and {self.new_left} new lines left",
                "hunk body lines within the header's counts",
            )
        text = line[1:]
        if op != "+":
            if op == "-":
                self.removed.append(ChangedLine(self.header_old, self.old_no, text, no))
            self.old_no += 1
            self.old_left -= 1
        if op != "-":
            if op == "+":
                self.added.append(ChangedLine(self.header_new, self.new_no, text, no))
            self.new_no += 1
            self.new_left -= 1
        self.body.append(HunkLine(op, text))
        self.marker_ok = True

    def _marker(self, no: int) -> None:
        if not self.marker_ok or not self.body:
            raise DiffError(no, repr(NO_NEWLINE_MARKER), "the marker right after a hunk line")
        last = self.body[-1]
        self.body[-1] = HunkLine(last.op, last.text, no_newline=True)
        self.marker_ok = False

    def _finish_hunk(self) -> None:
        a, b, c, d, no = self.hunk_header
        self.hunks.append(Hunk(a, b, c, d, no, tuple(self.body)))

    # -- driver -------------------------------------------------------------------

    def run(self) -> ParsedDiff:
        state = "section"  # section | header | plus | first_hunk | body | after_hunk
        n = len(self.lines)
        for index, line in enumerate(self.lines):
            no = index + 1
            if state == "body":
                if line == NO_NEWLINE_MARKER:
                    self._marker(no)
                else:
                    self._hunk_line(line, no)
                if self.old_left == 0 and self.new_left == 0:
                    state = "after_hunk"
                continue
            if state == "after_hunk":
                if line == NO_NEWLINE_MARKER:
                    self._marker(no)
                    continue
                self._finish_hunk()
                self.marker_ok = False
                if line == "":
                    state = "section_or_hunk"
                    continue
                if line.startswith("@@"):
                    self._start_hunk(line, no)
                    state = "body"
                    continue
                self._finish_section()
                state = "section"
            if state == "section_or_hunk":
                if line == "":
                    continue
                if line.startswith("@@"):
                    self._start_hunk(line, no)
                    state = "body"
                    continue
                self._finish_section()
                state = "section"
            if state == "section":
                if line == "":
                    continue
                if not line.startswith("diff --git "):
                    raise DiffError(
                        no,
                        f"{_show(line)} outside any section"
                        if not self.files
                        else f"{_show(line)} after a complete hunk",
                        "'diff --git a/PATH b/PATH'" + (" or '@@'" if self.files else ""),
                    )
                self._start_section(line, no)
                state = "header"
            elif state == "header":
                if line.startswith("--- "):
                    self.old_path = self._side_path(line, no, "--- ", "a/", self.header_old)
                    state = "plus"
                elif line.startswith(_EXTENDED_HEADERS):
                    self.extended.append(line)
                else:
                    raise DiffError(
                        no,
                        _show(line),
                        "a git extended header (index, mode, rename, copy, similarity) or '--- '",
                    )
            elif state == "plus":
                self.new_path = self._side_path(line, no, "+++ ", "b/", self.header_new)
                if self.old_path is None and self.new_path is None:
                    raise DiffError(no, "/dev/null on both sides", "at least one real file")
                state = "first_hunk"
            elif state == "first_hunk":
                if not line.startswith("@@"):
                    raise DiffError(no, _show(line), "a hunk header '@@ -a[,b] +c[,d] @@'")
                self._start_hunk(line, no)
                state = "body"
        end = n + 1
        if state == "body":
            raise DiffError(
                end,
                f"end of patch with {self.old_left} old and {self.new_left} new lines"
                " still due in the hunk",
                "hunk bodies matching their header counts",
            )
        if state in ("header", "plus"):
            raise DiffError(end, "end of patch inside a section header", "'--- ' and '+++ ' lines")
        if state == "first_hunk":
            raise DiffError(end, "a section without hunks", "at least one '@@' hunk")
        if state in ("after_hunk", "section_or_hunk"):
            if state == "after_hunk":
                self._finish_hunk()
            self._finish_section()
        if not self.files:
            raise DiffError(end, "no 'diff --git' section", "at least one file section")
        return ParsedDiff(tuple(self.files))


def parse_patch(data: bytes) -> ParsedDiff:
    """Parse patch bytes under the module invariants; raise ``DiffError`` otherwise."""
    lines = decode_patch(data).split("\n")
    if lines[-1] == "":
        lines.pop()
    return _Parser(lines).run()
