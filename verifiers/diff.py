"""Strict unified-diff parser (git syntax); it sees exactly the paths ``git apply`` writes.

Invariants of a parsed patch (each refusal names its rule, ``DiffError.rule``; the
rules and where they are stricter than git or upstream IDKMesh are in
docs/VERIFIERS.md):
- the bytes are UTF-8 without BOM, NUL or carriage return; lines end with ``\\n``;
- every non-blank line belongs to a ``diff --git a/X b/Y`` section;
- every path is spelled as git spells it: ``a/`` (old side) or ``b/`` (new side)
  prefix, then the path, unquoted or C-style quoted (``"a/x\\ty"``); the path after
  the prefix is what ``git apply`` (default ``-p1``) writes. It is relative, without
  empty, ``.``, ``..`` or ``.git`` components, backslashes or control characters;
- the header's two paths, the ``---``/``+++`` paths and ``rename``/``copy`` lines all
  agree; ``/dev/null`` stands on the old side only with ``new file mode`` and on the
  new side only with ``deleted file mode``, and then the header names one path (a
  rename is never a creation or deletion); file modes are 100644 or 100755;
- between the header and ``---`` only git's extended header lines appear, each at most
  once (so binary patches fail); ``--- `` then ``+++ `` follow;
- each section has at least one hunk ``@@ -a[,b] +c[,d] @@``; counts default to 1;
  a hunk has at least one line; hunk lines start with space, ``-`` or ``+``, or are exactly
  ``\\ No newline at end of file`` right after the last line of a side of the hunk;
  the old and new counts come out exactly;
- a creation has no old lines, a deletion no new ones;
- empty lines are tolerated only before, between and after sections.

``parse_patch`` returns a ``ParsedDiff`` or raises ``DiffError``; no other exception
escapes for any input bytes.

A ``DiffReading`` names the few places where releases of the verifiers read patches
differently (``verifiers.releases``; docs/VERIFIERS.md, "Verifier releases"). A
recorded VerificationResult names its release and is re-run with that release's
reading, so a released reading never changes: a new reading is a new release.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from verifiers.errors import DiffError

# Every ``DiffError.rule`` (documented in docs/VERIFIERS.md, "Diff structure").
RULES = frozenset(
    {
        "empty",
        "bom",
        "encoding",
        "nul",
        "crlf",
        "outside-section",
        "no-section",
        "header-paths",
        "missing-prefix",
        "path",
        "path-character",
        "dot-git",
        "path-mismatch",
        "dev-null",
        "mode",
        "extended-header",
        "header-order",
        "no-hunk",
        "hunk-header",
        "hunk-range",
        "hunk-line",
        "hunk-count",
        "no-newline-marker",
        "blank-line",
    }
)
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
    r"@@ -([0-9]+)(?:,([0-9]+))? \+([0-9]+)(?:,([0-9]+))? @@(?: .*)?\Z",
    re.ASCII | re.DOTALL,
)
# Header separators: one space (release 0.1.0), or runs of spaces and TABs as git reads
# them (release 0.2.0).
_SEP_STRICT = re.compile(r" ")
_SEP_GIT = re.compile(r"[ \t]+")


@dataclass(frozen=True)
class DiffReading:
    """How one release of the verifiers (``name``, ``verifiers.releases``) reads the
    points where it once differed from git.

    ``line_zero_with_lines``: ``@@ -0,N`` (N > 0) is read as git reads it, anchored at
    the file's first line (its lines are numbered from 1); otherwise ``hunk-range``.
    ``number_digits``: hunk numbers longer than this are refused (``hunk-header`` when
    ``long_numbers_rule`` is that, else ``hunk-range``); leading zeros count only when
    ``count_leading_zeros``. Line numbers are recorded in observations as RFC 8785
    integers, which are exact only below 2**53: 15 significant digits stay below it.
    ``header_whitespace``: the header's names may be preceded and separated by runs of
    spaces and TABs (git), not only by one space.
    """

    name: str
    line_zero_with_lines: bool
    number_digits: int
    count_leading_zeros: bool
    long_numbers_rule: str
    header_whitespace: bool


READING_0_1_0 = DiffReading("0.1.0", False, 12, True, "hunk-header", False)
READING_0_2_0 = DiffReading("0.2.0", True, 15, False, "hunk-range", True)
CURRENT_READING = READING_0_2_0

Op = Literal[" ", "-", "+"]
Operation = Literal["modify", "create", "delete", "rename", "copy"]


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
    """One ``diff --git`` section. ``old_path``/``new_path`` are None for ``/dev/null``;
    ``header_old``/``header_new`` are the agreed paths (equal unless rename, copy or a
    modification written under a new name, which git applies as a rename)."""

    header_old: str
    header_new: str
    old_path: str | None
    new_path: str | None
    extended_headers: tuple[str, ...]
    hunks: tuple[Hunk, ...]
    added: tuple[ChangedLine, ...]
    removed: tuple[ChangedLine, ...]
    patch_line: int
    operation: Operation = "modify"

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths the scope check judges: every path written, plus a copy's source
        (whose content the copy carries)."""
        if self.header_old == self.header_new:
            return (self.header_old,)
        return (self.header_old, self.header_new)

    @property
    def written_paths(self) -> tuple[str, ...]:
        """The paths ``git apply`` creates, changes or removes for this section."""
        if self.operation == "copy":
            return (self.header_new,)
        return self.paths


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
        """Sorted distinct paths of all sections (``FileDiff.paths``): the scope check's input."""
        return tuple(sorted({p for f in self.files for p in f.paths}))

    @property
    def written_paths(self) -> tuple[str, ...]:
        """Sorted distinct paths ``git apply`` writes (``FileDiff.written_paths``)."""
        return tuple(sorted({p for f in self.files for p in f.written_paths}))


def _show(line: str) -> str:
    return repr(line if len(line) <= 60 else line[:57] + "...")


def decode_patch(data: bytes) -> str:
    """Strict UTF-8 text of a patch; refuses empty input, BOM, NUL and CR."""
    if not data:
        raise DiffError(0, "0 bytes", "a non-empty unified diff", "empty patch", rule="empty")
    if data.startswith(b"\xef\xbb\xbf"):
        raise DiffError(
            1, "a UTF-8 byte order mark", "'diff --git' at offset 0", "patch has a BOM", rule="bom"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DiffError(
            line,
            f"byte 0x{data[exc.start]:02x} at offset {exc.start}",
            "UTF-8 text",
            "patch is not UTF-8",
            rule="encoding",
        ) from None
    for char, name, rule in (
        ("\x00", "NUL byte (binary content)", "nul"),
        ("\r", "carriage return (CRLF line ending)", "crlf"),
    ):
        pos = text.find(char)
        if pos >= 0:
            line = text.count("\n", 0, pos) + 1
            raise DiffError(
                line, f"a {name}", "LF-terminated text", "patch is not plain text", rule=rule
            )
    return text


# Git's C-style quoting (quote.c unquote_c_style): these escapes and \[0-3][0-7][0-7].
_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, "\\": 92, '"': 34}
_OCTAL = re.compile(r"[0-3][0-7][0-7]")
# Components git's verify_path refuses to write (core.protectNTFS is on by default).
_DOT_GIT = re.compile(r"(?:\.git|git~1)[. ]*", re.IGNORECASE)
_CONTROL = re.compile(r"[\x00-\x1f\x7f\\]")
_MODE = re.compile(r"100644|100755")


def _unquote(text: str, no: int) -> tuple[str, str]:
    """The quoted name at the start of ``text`` (``'"'``) and the text after it."""
    out = bytearray()
    i = 1
    while i < len(text):
        ch = text[i]
        if ch == '"':
            try:
                return out.decode("utf-8"), text[i + 1 :]
            except UnicodeDecodeError:
                raise DiffError(
                    no, f"quoted name {_show(text[: i + 1])}", "a UTF-8 path", rule="path-character"
                ) from None
        if ch == "\\":
            esc = text[i + 1 : i + 2]
            if esc in _ESCAPES:
                out.append(_ESCAPES[esc])
                i += 2
                continue
            if _OCTAL.fullmatch(text[i + 1 : i + 4]):
                out.append(int(text[i + 1 : i + 4], 8))
                i += 4
                continue
            raise DiffError(
                no,
                f"escape {_show(text[i : i + 4])} in a quoted name",
                "git's C-style escapes (\\t, \\n, \\\", \\\\, \\ooo, ...)",
                rule="header-paths",
            )
        out += ch.encode("utf-8")
        i += 1
    raise DiffError(
        no, f"unterminated quoted name {_show(text)}", "a closing '\"'", rule="header-paths"
    )


def _check_path(path: str, line_no: int) -> str:
    """``path`` as git would write it, or a refusal naming why it cannot be judged."""
    if not path:
        raise DiffError(line_no, "an empty path", "a relative repository path", rule="path")
    bad = _CONTROL.search(path)
    if bad:
        raise DiffError(
            line_no,
            f"path {_show(path)} with {bad.group()!r}",
            "no backslash or control character",
            rule="path-character",
        )
    if path.startswith("/"):
        raise DiffError(
            line_no, f"absolute path {_show(path)}", "a relative repository path", rule="path"
        )
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise DiffError(
                line_no,
                f"path {_show(path)} with component {part!r}",
                "no empty, '.' or '..' components",
                rule="path",
            )
        if _DOT_GIT.fullmatch(part):
            raise DiffError(
                line_no,
                f"path {_show(path)} with component {part!r}",
                "no '.git' component (git refuses to write there)",
                rule="dot-git",
            )
    return path


def _prefixed(name: str, prefix: str, line_no: int) -> str:
    """The path after git's ``-p1`` prefix, which must be exactly ``prefix``."""
    if not name.startswith(prefix):
        raise DiffError(
            line_no,
            f"path {_show(name)} without the {prefix!r} prefix",
            f"'{prefix}PATH' (git apply strips the first component, whatever it is)",
            rule="missing-prefix",
        )
    return _check_path(name[len(prefix) :], line_no)


def _side_name(rest: str, prefix: str, line_no: int) -> str | None:
    """The path of a ``---``/``+++`` line (git: up to a TAB), None for ``/dev/null``."""
    if rest.startswith('"'):
        name, tail = _unquote(rest, line_no)
        if tail and not tail.startswith("\t"):
            raise DiffError(
                line_no,
                f"{_show(tail)} after the quoted name",
                "end of line or a TAB",
                rule="header-paths",
            )
    else:
        name = rest.split("\t", 1)[0]
        if name == DEV_NULL:
            return None
    return _prefixed(name, prefix, line_no)


@dataclass(frozen=True)
class _Header:
    """The names of a ``diff --git`` line, which the ``---``/``+++`` names must be one
    reading of: ``fixed`` when there is one reading (quoted names, or unquoted ones that
    split one way), else the unquoted ``text`` ``a/X<sep>b/Y`` with several.

    The readings are never all built: a header has as many as it has blanks before a
    ``b/``, each about as long as the line, so listing them costs the square of its length
    (80 KB of `` b/x`` once took 1.5 GB).
    """

    text: str
    fixed: tuple[str, str] | None
    loose: bool

    def reads(self, old: str, new: str) -> bool:
        """Whether ``a/old<sep>b/new`` is this header."""
        if self.fixed is not None:
            return self.fixed == (old, new)
        head, tail, text = f"a/{old}", f"b/{new}", self.text
        if len(head) + len(tail) >= len(text):
            return False
        if not (text.startswith(head) and text.endswith(tail)):
            return False
        gap = text[len(head) : len(text) - len(tail)]
        return gap == " " or (self.loose and not gap.strip(" \t"))

    def first(self, n: int) -> list[tuple[str, str]]:
        """The first ``n`` readings, in the order of their separators."""
        if self.fixed is not None:
            return [self.fixed]
        return list(itertools.islice(_readings(self.text, self.loose), n))


def _gaps(text: str, loose: bool) -> Iterator[tuple[int, int]]:
    """(start, end) of each separator before a ``b/`` in an unquoted ``a/...`` header:
    one space, or (``loose``) a whole run of spaces and TABs. One pass over the text."""
    if not text.startswith("a/"):
        return
    blanks = " \t" if loose else " "
    i, n = 2, len(text)
    while i < n:
        if text[i] not in blanks:
            i += 1
            continue
        j = i + 1
        while loose and j < n and text[j] in blanks:
            j += 1
        if text.startswith("b/", j):
            yield i, j
        i = j


def _readings(text: str, loose: bool) -> Iterator[tuple[str, str]]:
    """Every (old, new) reading: with a run of blanks, the old name may end in any part
    of it (names may end with spaces); the ``---``/``+++`` names pick one."""
    for start, end in _gaps(text, loose):
        for i in range(start, end) if loose else (start,):
            yield text[2:i], text[end + 2 :]


def _header_names(rest: str, line_no: int, reading: DiffReading) -> _Header:
    """The names of ``a/X b/Y`` (unquoted names may hold spaces, so a header can be
    split more than one way; the ``---``/``+++`` lines pick the one).

    With ``reading.header_whitespace`` the names may be preceded and separated by runs of
    spaces and TABs, as git reads them; otherwise by exactly one space."""
    loose = reading.header_whitespace
    sep = _SEP_GIT if loose else _SEP_STRICT
    if loose:
        rest = rest.lstrip(" \t")
    if rest.startswith('"') or '"' in rest:
        if rest.startswith('"'):
            first, tail = _unquote(rest, line_no)
            gap = sep.match(tail)
            if gap is None:
                raise DiffError(
                    line_no, _show(rest), "two names separated by a space", rule="header-paths"
                )
            tail = tail[gap.end() :]
        else:
            quote = re.search(sep.pattern + '"', rest)
            if quote is None:
                raise DiffError(
                    line_no,
                    f"'\"' inside the unquoted name {_show(rest)}",
                    "a name quoted as a whole",
                    rule="header-paths",
                )
            first, tail = rest[: quote.start()], rest[quote.end() - 1 :]
        if tail.startswith('"'):
            second, after = _unquote(tail, line_no)
            if after:
                raise DiffError(
                    line_no,
                    f"{_show(after)} after the second name",
                    "end of line",
                    rule="header-paths",
                )
        else:
            second = tail
        fixed = (_prefixed(first, "a/", line_no), _prefixed(second, "b/", line_no))
        return _Header(rest, fixed, loose)
    count = sum(end - start if loose else 1 for start, end in _gaps(rest, loose))
    if count == 1:
        old, new = next(_readings(rest, loose))
        return _Header(rest, (_check_path(old, line_no), _check_path(new, line_no)), loose)
    if count == 0:
        if sep.search(rest) is None:
            raise DiffError(
                line_no, f"one name in {_show(rest)}", "two names 'a/X b/Y'", rule="header-paths"
            )
        raise DiffError(
            line_no,
            f"header names {_show(rest)} without the 'a/' and 'b/' prefixes",
            "'a/PATH b/PATH' (git apply strips the first component, whatever it is)",
            rule="missing-prefix",
        )
    return _Header(rest, None, loose)


class _Parser:
    """Line-by-line state machine over a patch's lines."""

    def __init__(self, lines: list[str], reading: DiffReading) -> None:
        self.lines = lines
        self.reading = reading
        self.files: list[FileDiff] = []
        # Current section.
        self.header = _Header("", None, False)
        self.header_old = ""
        self.header_new = ""
        self.section_line = 0
        self.extended: list[str] = []
        self.ext: dict[str, tuple[str, int]] = {}
        self.old_path: str | None = None
        self.new_path: str | None = None
        self.old_line = 0
        self.operation: Operation = "modify"
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
        self.old_closed = False
        self.new_closed = False

    # -- sections -----------------------------------------------------------------

    def _start_section(self, line: str, no: int) -> None:
        self.header = _header_names(line[len("diff --git ") :], no, self.reading)
        self.section_line = no
        self.extended = []
        self.ext = {}
        self.hunks = []
        self.added = []
        self.removed = []
        self.old_closed = self.new_closed = False

    def _extended(self, line: str, no: int) -> None:
        """Record one extended header line; each kind at most once, modes git's file modes."""
        kind = next(h for h in _EXTENDED_HEADERS if line.startswith(h))
        if kind in self.ext:
            raise DiffError(
                no,
                f"a second {kind.strip()!r} line (first at patch line {self.ext[kind][1]})",
                "each extended header at most once",
                rule="extended-header",
            )
        value = line[len(kind) :]
        if kind.endswith("mode ") and not _MODE.fullmatch(value):
            raise DiffError(
                no,
                f"{kind.strip()} {_show(value)}",
                "a regular file mode 100644 or 100755 (no symlinks, submodules)",
                rule="mode",
            )
        self.ext[kind] = (value, no)
        self.extended.append(line)

    def _operation(self, no: int) -> Operation:
        """The section's kind from its extended headers, refusing contradictory ones."""
        kinds = [k.strip() for k in self.ext]
        groups = [
            g
            for g in ("new file mode", "deleted file mode", "rename", "copy")
            if any(k.startswith(g) for k in kinds)
        ]
        if len(groups) > 1:
            raise DiffError(
                no,
                f"extended headers {' and '.join(repr(g) for g in groups)}",
                "at most one of creation, deletion, rename or copy",
                rule="extended-header",
            )
        for group in ("rename", "copy"):
            have = [k for k in (f"{group} from ", f"{group} to ") if k in self.ext]
            if len(have) == 1:
                raise DiffError(
                    no,
                    f"{have[0].strip()!r} without its partner line",
                    f"both '{group} from' and '{group} to'",
                    rule="extended-header",
                )
        if "new file mode " in self.ext:
            return "create"
        if "deleted file mode " in self.ext:
            return "delete"
        if "rename from " in self.ext:
            return "rename"
        if "copy from " in self.ext:
            return "copy"
        return "modify"

    def _ext_path(self, kind: str) -> str:
        """The path of a ``rename``/``copy`` line (git: no prefix, the whole rest of the line)."""
        value, no = self.ext[kind]
        if value.startswith('"'):
            name, tail = _unquote(value, no)
            if tail:
                raise DiffError(
                    no, f"{_show(tail)} after the quoted name", "end of line", rule="header-paths"
                )
            return _check_path(name, no)
        return _check_path(value, no)

    def _agree(self, no: int) -> None:
        """Header, ``---``/``+++`` and rename/copy lines name the same paths (checked at
        the ``+++`` line, patch line ``no``)."""
        op = self.operation = self._operation(no)
        old, new = self.old_path, self.new_path
        if old is None and new is None:
            raise DiffError(
                no, "/dev/null on both sides", "at least one real file", rule="dev-null"
            )
        if old is None and op != "create":
            raise DiffError(
                self.old_line,
                "'--- /dev/null' without 'new file mode'",
                "/dev/null only for a creation (git would read a file named 'dev/null')",
                rule="dev-null",
            )
        if new is None and op != "delete":
            raise DiffError(
                no,
                "'+++ /dev/null' without 'deleted file mode'"
                + (" in a rename or copy" if op in ("rename", "copy") else ""),
                "/dev/null only for a deletion (a rename is never a deletion)",
                rule="dev-null",
            )
        if op == "create" and old is not None:
            raise DiffError(
                self.old_line,
                f"old path {_show(old)} with 'new file mode'",
                "'--- /dev/null'",
                rule="dev-null",
            )
        if op == "delete" and new is not None:
            raise DiffError(
                no,
                f"new path {_show(new)} with 'deleted file mode'",
                "'+++ /dev/null'",
                rule="dev-null",
            )
        want_old = old if old is not None else new
        want_new = new if new is not None else old
        assert want_old is not None and want_new is not None
        if not self.header.reads(want_old, want_new):
            if old is None or new is None:
                expected = f"the header 'a/{want_old} b/{want_new}' (one path: no rename)"
            else:
                expected = f"the header 'a/{want_old} b/{want_new}'"
            raise DiffError(
                self.section_line,
                "header paths "
                + " or ".join(f"{_show(a)} -> {_show(b)}" for a, b in self.header.first(3))
                + f" disagreeing with '---'/'+++' {_show(want_old)} -> {_show(want_new)}",
                expected,
                rule="path-mismatch",
            )
        if op in ("rename", "copy"):
            for kind, path in ((f"{op} from ", want_old), (f"{op} to ", want_new)):
                named = self._ext_path(kind)
                if named != path:
                    raise DiffError(
                        self.ext[kind][1],
                        f"{kind.strip()} {_show(named)}",
                        f"the section's path {_show(path)}",
                        rule="path-mismatch",
                    )
            if want_old == want_new:
                raise DiffError(
                    self.ext[f"{op} from "][1],
                    f"{op} of {_show(want_old)} onto itself",
                    "two different paths",
                    rule="path-mismatch",
                )
        self.header_old, self.header_new = want_old, want_new
        if op == "modify" and want_old != want_new:
            self.operation = "rename"  # git applies it as one: the old path is removed

    def _side_path(self, line: str, no: int, marker: str, prefix: str) -> str | None:
        if not line.startswith(marker):
            raise DiffError(no, _show(line), repr(marker + "PATH"), rule="header-order")
        return _side_name(line[len(marker) :], prefix, no)

    def _finish_section(self) -> None:
        for hunk in self.hunks:
            # git: "new file depends on old contents" / "deleted file still has contents".
            if (self.operation == "create" and hunk.old_count) or (
                self.operation == "delete" and hunk.new_count
            ):
                side = "old" if self.operation == "create" else "new"
                raise DiffError(
                    hunk.patch_line,
                    f"{side} lines in a hunk of a {self.operation}d file",
                    "'@@ -0,0 +1,N @@' for a creation, '@@ -1,N +0,0 @@' for a deletion",
                    rule="dev-null",
                )
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
                operation=self.operation,
            )
        )

    # -- hunks --------------------------------------------------------------------

    def _start_hunk(self, line: str, no: int) -> None:
        m = _HUNK_RE.match(line)
        reading = self.reading
        numbers = m.groups() if m is not None else ()
        too_long = [
            g
            for g in numbers
            if g is not None
            and len(g if reading.count_leading_zeros else g.lstrip("0")) > reading.number_digits
        ]
        if m is None or (too_long and reading.long_numbers_rule == "hunk-header"):
            raise DiffError(
                no, _show(line), "a hunk header '@@ -a[,b] +c[,d] @@'", rule="hunk-header"
            )
        if too_long:
            raise DiffError(
                no,
                f"line number {_show(too_long[0])} of {len(too_long[0].lstrip('0'))} digits",
                f"at most {reading.number_digits} digits (line numbers are recorded as"
                " RFC 8785 integers, exact only below 2**53)",
                rule="hunk-range",
            )
        if self.old_closed or self.new_closed:
            raise DiffError(
                no,
                f"{_show(line)} after '{NO_NEWLINE_MARKER}'",
                "no hunk past the end of the file",
                rule="no-newline-marker",
            )
        # Leading zeros stripped first: int() refuses strings of more than 4300 digits.
        a, b, c, d = (int(g.lstrip("0") or "0") if g is not None else 1 for g in numbers)
        if not reading.line_zero_with_lines:
            for start, count, side in ((a, b, "old"), (c, d, "new")):
                if count > 0 and start == 0:
                    raise DiffError(
                        no,
                        f"{side} range {start},{count}",
                        "line numbers from 1",
                        rule="hunk-range",
                    )
        if b == 0 and d == 0:
            raise DiffError(no, _show(line), "a hunk with at least one line", rule="hunk-range")
        self.hunk_header = (a, b, c, d, no)
        self.body = []
        self.old_left, self.new_left = b, d
        # git anchors a hunk starting at line 0 at the file's first line.
        self.old_no, self.new_no = max(a, 1), max(c, 1)
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
                rule="hunk-line",
            )
        if not ok:
            raise DiffError(
                no,
                f"{_show(line)} with {self.old_left} old and {self.new_left} new lines left",
                "hunk body lines within the header's counts",
                rule="hunk-count",
            )
        if (op != "+" and self.old_closed) or (op != "-" and self.new_closed):
            raise DiffError(
                no,
                f"{_show(line)} after '{NO_NEWLINE_MARKER}' ended that side",
                "no line after the last line of a file",
                rule="no-newline-marker",
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
            raise DiffError(
                no,
                repr(NO_NEWLINE_MARKER),
                "the marker once, right after a hunk line",
                rule="no-newline-marker",
            )
        last = self.body[-1]
        self.body[-1] = HunkLine(last.op, last.text, no_newline=True)
        # The marked line is the last of its side(s): nothing of that side may follow.
        if last.op != "+":
            self.old_closed = True
        if last.op != "-":
            self.new_closed = True
        self.marker_ok = False

    def _finish_hunk(self) -> None:
        a, b, c, d, no = self.hunk_header
        self.hunks.append(Hunk(a, b, c, d, no, tuple(self.body)))

    # -- driver -------------------------------------------------------------------

    def _stray(self, line: str, no: int, *, after_hunk: bool = False) -> DiffError:
        return DiffError(
            no,
            f"{_show(line)} after a complete hunk"
            if after_hunk
            else f"{_show(line)} outside any section",
            "'diff --git a/PATH b/PATH'" + (" or '@@'" if after_hunk else ""),
            rule="outside-section",
        )

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
                if not line.startswith("diff --git "):
                    raise self._stray(line, no, after_hunk=True)
                self._finish_section()
                state = "section"
            if state == "section_or_hunk":
                if line == "":
                    continue
                if line.startswith("@@"):
                    # git ends the section at the blank line and then refuses the hunk
                    # ("patch fragment without header").
                    raise DiffError(
                        no,
                        f"{_show(line)} after a blank line",
                        "the section's hunks without blank lines between them",
                        rule="blank-line",
                    )
                if not line.startswith("diff --git "):
                    raise self._stray(line, no, after_hunk=True)
                self._finish_section()
                state = "section"
            if state == "section":
                if line == "":
                    continue
                if not line.startswith("diff --git "):
                    raise self._stray(line, no)
                self._start_section(line, no)
                state = "header"
            elif state == "header":
                if line.startswith("--- "):
                    self.old_line = no
                    self.old_path = self._side_path(line, no, "--- ", "a/")
                    state = "plus"
                elif line.startswith(_EXTENDED_HEADERS):
                    self._extended(line, no)
                else:
                    raise DiffError(
                        no,
                        _show(line),
                        "a git extended header (index, mode, rename, copy, similarity) or '--- '",
                        rule="extended-header",
                    )
            elif state == "plus":
                self.new_path = self._side_path(line, no, "+++ ", "b/")
                self._agree(no)
                state = "first_hunk"
            elif state == "first_hunk":
                if not line.startswith("@@"):
                    # git skips unknown lines here; a new section means this one has no hunk.
                    rule = "no-hunk" if line.startswith("diff --git ") else "extended-header"
                    raise DiffError(
                        no, _show(line), "a hunk header '@@ -a[,b] +c[,d] @@'", rule=rule
                    )
                self._start_hunk(line, no)
                state = "body"
        end = n + 1
        if state == "body":
            raise DiffError(
                end,
                f"end of patch with {self.old_left} old and {self.new_left} new lines"
                " still due in the hunk",
                "hunk bodies matching their header counts",
                rule="hunk-count",
            )
        if state in ("header", "plus"):
            raise DiffError(
                end,
                "end of patch inside a section header",
                "'--- ' and '+++ ' lines",
                rule="header-order",
            )
        if state == "first_hunk":
            raise DiffError(
                end, "a section without hunks", "at least one '@@' hunk", rule="no-hunk"
            )
        if state in ("after_hunk", "section_or_hunk"):
            if state == "after_hunk":
                self._finish_hunk()
            self._finish_section()
        if not self.files:
            raise DiffError(
                end, "no 'diff --git' section", "at least one file section", rule="no-section"
            )
        return ParsedDiff(tuple(self.files))


def parse_patch(data: bytes, reading: DiffReading = CURRENT_READING) -> ParsedDiff:
    """Parse patch bytes under the module invariants as ``reading`` reads them; raise
    ``DiffError`` otherwise."""
    lines = decode_patch(data).split("\n")
    if lines[-1] == "":
        lines.pop()
    return _Parser(lines, reading).run()
