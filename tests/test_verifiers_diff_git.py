"""Differential test: the diff parser against real ``git apply``.

A seeded generator writes git-style patches (modify, create, delete, rename, copy,
names with spaces, quoting, non-ASCII, Unicode separators, missing newlines) and
mutates them (prefix lies, header lies, ``/dev/null`` lies, hunk counts, markers,
CRLF, junk lines, odd paths). Each patch is applied by ``git apply --check``,
``git apply --numstat -z`` and ``git apply`` in a temporary repository holding the
pre-image files. The parser must agree with git on every case:

- both accept: the paths the parser says are written are exactly the paths whose
  bytes git created, changed or removed;
- the parser accepts, git refuses: never;
- git accepts, the parser refuses: only by a rule listed in docs/VERIFIERS.md under
  "Where the parser refuses what git applies".
"""

from __future__ import annotations

import difflib
import os
import random
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from verifiers.diff import RULES, parse_patch
from verifiers.errors import DiffError

GIT = shutil.which("git")
DOC = Path(__file__).resolve().parents[1] / "docs" / "VERIFIERS.md"
CASES = 360

# Paths a patch may touch: plain, nested, git-prefix look-alikes, spaces, non-ASCII,
# characters git quotes; ODD ones the parser refuses (control character, backslash)
# are drawn rarely so that they do not hide the other mutations.
POOL = (
    "src/app.py",
    "dir/sub/f.txt",
    "a",
    "b/c.txt",
    "a/b.txt",
    "foo bar.txt",
    "sp ace/x y.md",
    "\u00e9t\u00e9/\u00fc.txt",
    'quo"te.txt',
    "-dash.txt",
    "x\u00a0nbsp.txt",
)
ODD = ("tab\there.txt", "back\\slash.txt", "new\nline.txt")
WORDS = (
    "alpha",
    "b\u00eata",
    "sep\u2028arated",
    "para\u2029graph",
    "vt\x0bff\x0c",
    "nel\x85",
    "-- dashes",
    "++ plus",
    "@@ at",
    "diff --git a/x b/x",
    "\\ fake marker",
    "",
    "  spaced  ",
)


def git_quote(name: str) -> str:
    """``name`` as git writes it in a patch (quote.c, core.quotePath on)."""
    raw = name.encode("utf-8")
    if not any(b < 0x20 or b == 0x7F or b >= 0x80 or b in b'"\\' for b in raw):
        return name
    named = {7: "a", 8: "b", 9: "t", 10: "n", 11: "v", 12: "f", 13: "r", 34: '"', 92: "\\"}
    out = []
    for b in raw:
        if b in named:
            out.append("\\" + named[b])
        elif b < 0x20 or b >= 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(chr(b))
    return '"' + "".join(out) + '"'


@dataclass
class Section:
    op: str  # modify | create | delete | rename | copy | newname
    old: str
    new: str
    old_lines: list[str]
    new_lines: list[str]
    eol: bool  # both sides end with a newline
    lines: list[str] = field(default_factory=list)
    # Other paths a lie may name as the old side: given the old content in the
    # pre-image, so that git's verdict turns on the patch, not on a missing file.
    aliases: set[str] = field(default_factory=set)


@dataclass
class Case:
    seed: int
    files: dict[str, bytes]
    patch: bytes
    mutations: list[str]


def _content(rng: random.Random) -> list[str]:
    return [f"{i} {rng.choice(WORDS)}" for i in range(rng.randint(1, 7))]


def _changed(rng: random.Random, old: list[str]) -> list[str]:
    new = list(old)
    for k in range(rng.randint(1, 2)):
        kind = rng.choice(("replace", "insert", "delete"))
        i = rng.randrange(len(new)) if new else 0
        if kind == "replace" and new:
            new[i] = f"new {k} {rng.choice(WORDS)}"
        elif kind == "delete" and len(new) > 1:
            del new[i]
        else:
            new.insert(i, f"added {k} {rng.choice(WORDS)}")
    if new == old:
        new.append("appended")
    return new


def _hunks(old: list[str], new: list[str], eol: bool, context: int) -> list[str]:
    def text(lines: list[str]) -> list[str]:
        out = [x + "\n" for x in lines]
        if out and not eol:
            out[-1] = out[-1][:-1]
        return out

    lines: list[str] = []
    for raw in list(difflib.unified_diff(text(old), text(new), n=context))[2:]:
        if raw.endswith("\n"):
            lines.append(raw[:-1])
        else:
            lines += [raw, "\\ No newline at end of file"]
    return lines


def _section(rng: random.Random, op: str, old: str, new: str) -> Section:
    old_lines = [] if op == "create" else _content(rng)
    new_lines = [] if op == "delete" else _changed(rng, old_lines)
    eol = op in ("create", "delete") or rng.random() < 0.8
    s = Section(op, old, new, old_lines, new_lines, eol)
    a, b = git_quote(f"a/{old}"), git_quote(f"b/{new}")
    s.lines.append(f"diff --git {a} {b}")
    if op == "create":
        s.lines.append("new file mode 100644")
    elif op == "delete":
        s.lines.append("deleted file mode 100644")
    elif op in ("rename", "copy"):
        s.lines += [
            "similarity index 75%",
            f"{op} from {git_quote(old)}",
            f"{op} to {git_quote(new)}",
        ]
    if rng.random() < 0.5:
        s.lines.append("index 1234567..89abcde" + ("" if op in ("create", "delete") else " 100644"))
    s.lines.append("--- " + ("/dev/null" if op == "create" else a))
    s.lines.append("+++ " + ("/dev/null" if op == "delete" else b))
    s.lines += _hunks(old_lines, new_lines, eol, rng.choice((1, 3)))
    return s


# --------------------------------------------------------------------------- mutations
# Each mutation edits the patch lines of one section (or the whole patch) in place.

Mutation = Callable[[random.Random, list[Section]], None]


def _find(lines: list[str], start: str) -> int | None:
    hits = [i for i, x in enumerate(lines) if x.startswith(start)]
    return hits[0] if hits else None


def _replace_name(line: str, old_prefixed: str, new_prefixed: str) -> str:
    return line.replace(git_quote(old_prefixed), git_quote(new_prefixed), 1)


def m_strip_prefix(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    where = rng.choice(("header-a", "header-b", "minus", "plus", "all"))
    for i, line in enumerate(s.lines):
        if line.startswith("diff --git ") and where in ("header-a", "all"):
            s.lines[i] = _replace_name(line, f"a/{s.old}", s.old)
        if line.startswith("diff --git ") and where in ("header-b", "all"):
            s.lines[i] = s.lines[i][: len("diff --git ")] + _replace_name(
                s.lines[i][len("diff --git ") :], f"b/{s.new}", s.new
            )
        if line.startswith("--- ") and where in ("minus", "all"):
            s.lines[i] = _replace_name(line, f"a/{s.old}", s.old)
        if line.startswith("+++ ") and where in ("plus", "all"):
            s.lines[i] = _replace_name(line, f"b/{s.new}", s.new)


def m_swap_prefix(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    other = rng.choice(("b/", "c/", "x/", "a/a/"))
    for i, line in enumerate(s.lines):
        if line.startswith("--- ") and line != "--- /dev/null":
            s.lines[i] = _replace_name(line, f"a/{s.old}", f"{other}{s.old}")
        elif line.startswith("+++ ") and line != "+++ /dev/null" and rng.random() < 0.5:
            s.lines[i] = _replace_name(line, f"b/{s.new}", f"{other}{s.new}")


def m_header_lie(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    liar = rng.choice(POOL[:6])
    side = rng.choice(("a", "b", "both"))
    if side != "b":
        s.aliases.add(liar)
    a = git_quote(f"a/{liar if side in ('a', 'both') else s.old}")
    b = git_quote(f"b/{liar if side in ('b', 'both') else s.new}")
    s.lines[0] = f"diff --git {a} {b}"


def m_side_lie(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    liar = rng.choice(POOL[:6])
    marker = rng.choice(("--- ", "+++ ", "both"))
    if marker != "+++ ":
        s.aliases.add(liar)
    for i, line in enumerate(s.lines):
        if line.startswith("--- ") and marker in ("--- ", "both") and line != "--- /dev/null":
            s.lines[i] = "--- " + git_quote(f"a/{liar}")
        if line.startswith("+++ ") and marker in ("+++ ", "both") and line != "+++ /dev/null":
            s.lines[i] = "+++ " + git_quote(f"b/{liar}")


def m_ext_lie(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    liar = rng.choice(POOL[:6])
    s.aliases.add(liar)  # harmless when it lands on the new side: we refuse every ext lie
    i = _find(s.lines, "rename ") or _find(s.lines, "copy ")
    if i is None:
        i = 1
        s.lines.insert(i, f"rename {rng.choice(('from', 'to'))} {git_quote(liar)}")
        return
    word = s.lines[i].split(" ")[0]
    s.lines[i + rng.randint(0, 1)] = f"{word} {rng.choice(('from', 'to'))} {git_quote(liar)}"


def m_dev_null(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    side = rng.choice(("--- ", "+++ "))
    i = _find(s.lines, side)
    assert i is not None
    s.lines[i] = side + "/dev/null"
    if rng.random() < 0.3:  # also claim the mode, leaving other lies in place
        s.lines.insert(1, "new file mode 100644" if side == "--- " else "deleted file mode 100644")


def m_drop_mode(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    s.lines = [x for x in s.lines if not x.startswith(("new file mode", "deleted file mode"))]


def m_count(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    hunks = [i for i, x in enumerate(s.lines) if x.startswith("@@ ")]
    i = rng.choice(hunks)
    m = re.match(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)", s.lines[i])
    assert m is not None
    a, b, c, d = (int(g) if g is not None else 1 for g in m.groups()[:4])
    if rng.random() < 0.5:
        b = max(0, b + rng.choice((-1, 1)))
    else:
        d = max(0, d + rng.choice((-1, 1)))
    s.lines[i] = f"@@ -{a},{b} +{c},{d} @@{m.group(5)}"


def m_marker(rng: random.Random, secs: list[Section]) -> None:
    """A repeated marker, or one before a line of the side it ended (a structural lie;
    a marker after a hunk's last line would be a lie about the file's content)."""
    s = rng.choice(secs)
    markers = [i for i, x in enumerate(s.lines) if x.startswith("\\ ")]
    before_context = [
        i
        for i in range(1, len(s.lines) - 1)
        if s.lines[i][:1] in (" ", "-", "+")
        and not s.lines[i].startswith(("--- ", "+++ "))
        and s.lines[i + 1].startswith(" ")
    ]
    spots = markers + before_context
    if spots:
        s.lines.insert(rng.choice(spots) + 1, "\\ No newline at end of file")


def m_blank(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    where = rng.choice(("end", "before-hunk", "in-header", "start"))
    if where == "end":
        s.lines.append("")
    elif where == "start":
        s.lines.insert(0, rng.choice(("", " ", "\t", "  ")))
    elif where == "before-hunk":
        hunks = [i for i, x in enumerate(s.lines) if x.startswith("@@ ")]
        s.lines.insert(rng.choice(hunks[1:] or hunks), "")
    else:
        s.lines.insert(1, "")


def m_junk(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    junk = rng.choice(
        ("Here is my fix:", "junk", "-- ", "2.39.5", "Binary files a/x and b/x differ")
    )
    where = rng.choice(("start", "end", "header"))
    if where == "start":
        s.lines.insert(0, junk)
    elif where == "end":
        s.lines.append(junk)
    else:
        s.lines.insert(1, junk)


def m_odd_path(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    form = rng.choice(("./{}", "{}/", "{}//x", ".git/{}", "d/.GIT", "sub/git~1/{}", "../{}"))
    odd = form.format(s.new.replace("/", "_"))
    for i, line in enumerate(s.lines):
        for old, new in ((f"a/{s.old}", f"a/{odd}"), (f"b/{s.new}", f"b/{odd}")):
            line = line.replace(git_quote(old), git_quote(new))
        for word in ("rename", "copy"):
            for d, p in (("from", s.old), ("to", s.new)):
                if line == f"{word} {d} {git_quote(p)}":
                    line = f"{word} {d} {git_quote(odd)}"
        s.lines[i] = line


def m_nbsp(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    marker = rng.choice(("--- ", "+++ ", "diff --git "))
    i = _find(s.lines, marker)
    assert i is not None
    s.lines[i] = marker + "\u00a0" + s.lines[i][len(marker) :]


def m_hunk_header(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    hunks = [i for i, x in enumerate(s.lines) if x.startswith("@@ ")]
    i = rng.choice(hunks)
    kind = rng.choice(("zero", "arabic", "suffix", "section", "line-zero", "long"))
    if kind == "zero":
        s.lines[i] = "@@ -0,0 +0,0 @@"
    elif kind == "line-zero":  # git anchors a hunk at line 0 where one at line 1 is
        s.lines[i] = s.lines[i].replace("@@ -1,", "@@ -0,").replace(" +1,", " +0,")
    elif kind == "long":  # 13 to 16 digits: git looks for the hunk's lines from the end
        shift = 10 ** rng.choice((12, 14, 15))
        s.lines[i] = re.sub(
            r"([-+])(\d+)", lambda m: f"{m.group(1)}{int(m.group(2)) + shift}", s.lines[i], count=2
        )
    elif kind == "arabic":
        s.lines[i] = re.sub(r"\d", "\u0661", s.lines[i], count=1)
    elif kind == "suffix":
        s.lines[i] += "x"
    else:
        s.lines[i] += " def f():"


def m_header_blank(rng: random.Random, secs: list[Section]) -> None:
    """Runs of blanks before or between the header's names (git reads them)."""
    s = rng.choice(secs)
    a, b = git_quote(f"a/{s.old}"), git_quote(f"b/{s.new}")
    if s.lines[0] == f"diff --git {a} {b}":
        before, between = rng.choice((("", "  "), ("", "\t"), (" ", " "), ("\t ", " \t ")))
        s.lines[0] = f"diff --git {before}{a}{between}{b}"


def m_quote(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    bad = rng.random() < 0.4
    for i, line in enumerate(s.lines):
        for marker, name in (("--- ", f"a/{s.old}"), ("+++ ", f"b/{s.new}")):
            if line == marker + git_quote(name):
                q = git_quote(name)
                q = q if q.startswith('"') else f'"{q}"'
                s.lines[i] = marker + (q[:-1] + '\\q"' if bad else q)
        if line.startswith("diff --git ") and rng.random() < 0.5:
            a, b = git_quote(f"a/{s.old}"), git_quote(f"b/{s.new}")
            a = a if a.startswith('"') else f'"{a}"'
            s.lines[i] = f"diff --git {a} {b}"


def m_tab(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    tail = rng.choice(("\t", "\t2026-01-01 00:00:00.000000000 +0000", " "))
    for i, line in enumerate(s.lines):
        if line.startswith(("--- ", "+++ ")):
            s.lines[i] = line + tail


def m_ext_header(rng: random.Random, secs: list[Section]) -> None:
    s = rng.choice(secs)
    line = rng.choice(
        (
            "old mode 100644",
            "new mode 100755",
            "new file mode 120000",
            "index 1234567..89abcde 100644",
            "dissimilarity index 10%",
            "rename old x",
        )
    )
    s.lines.insert(rng.randint(1, 2), line)


MUTATIONS: dict[str, Mutation] = {
    "strip-prefix": m_strip_prefix,
    "swap-prefix": m_swap_prefix,
    "header-lie": m_header_lie,
    "side-lie": m_side_lie,
    "ext-lie": m_ext_lie,
    "dev-null": m_dev_null,
    "drop-mode": m_drop_mode,
    "count": m_count,
    "marker": m_marker,
    "blank": m_blank,
    "junk": m_junk,
    "odd-path": m_odd_path,
    "nbsp": m_nbsp,
    "hunk-header": m_hunk_header,
    "header-blank": m_header_blank,
    "quote": m_quote,
    "tab": m_tab,
    "ext-header": m_ext_header,
    "crlf": lambda rng, secs: None,  # applied to the bytes in make_case
}


def make_case(seed: int) -> Case:
    rng = random.Random(f"diff-vs-git-{seed}")
    names = rng.sample(POOL, 6)
    if rng.random() < 0.1:
        names[rng.randrange(2)] = rng.choice(ODD)
    # "a" and "a/b.txt" cannot both be files: keep one of each such pair.
    taken: list[str] = []
    for name in names:
        if not any(name.startswith(t + "/") or t.startswith(name + "/") for t in taken):
            taken.append(name)
    secs: list[Section] = []
    for _ in range(rng.randint(1, 2)):
        op = rng.choice(("modify", "modify", "create", "delete", "rename", "copy", "newname"))
        if op in ("rename", "copy", "newname") and len(taken) >= 2:
            old, new = taken.pop(), taken.pop()
        else:
            op = op if op not in ("rename", "copy", "newname") else "modify"
            if not taken:
                break
            old = new = taken.pop()
        secs.append(_section(rng, "rename" if op == "newname" else op, old, new))
        if op == "newname":  # a/X b/Y with ---/+++ and no rename lines: git renames
            secs[-1].lines = [x for x in secs[-1].lines if not x.startswith(("rename ", "sim"))]
    crlf_files = False
    mutations: list[str] = []
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        name = rng.choice(sorted(MUTATIONS))
        mutations.append(name)
        MUTATIONS[name](rng, secs)
    files: dict[str, bytes] = {}
    created = {s.new for s in secs if s.op == "create"}
    old = [s for s in secs if s.op != "create"]
    wanted = [(s, s.old) for s in old] + [(s, a) for s in old for a in sorted(s.aliases)]
    for sec, path in wanted:
        clash = any(
            path == f or path.startswith(f + "/") or f.startswith(path + "/")
            for f in files.keys() | created
        )
        if not clash:
            content = "".join(x + "\n" for x in sec.old_lines).encode("utf-8")
            files[path] = content if sec.eol else content[:-1]
    text = "".join(x + "\n" for s in secs for x in s.lines)
    if "crlf" in mutations:
        text = text.replace("\n", "\r\n")
        crlf_files = rng.random() < 0.5
    if crlf_files:
        files = {k: v.replace(b"\n", b"\r\n") for k, v in files.items()}
    return Case(seed, files, text.encode("utf-8"), mutations)


# --------------------------------------------------------------------------- git side


@dataclass(frozen=True)
class GitVerdict:
    applies: bool
    written: frozenset[str]
    numstat: tuple[str, ...]
    error: str


def _snapshot(root: Path) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root and ".git" in dirnames:
            dirnames.remove(".git")
        for name in filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(root).as_posix()
            out[rel] = (
                b"symlink:" + os.readlink(path).encode() if path.is_symlink() else path.read_bytes()
            )
    return out


class GitRepo:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root.parent),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "LC_ALL": "C",
        }
        root.mkdir()
        self._git("init", "-q", ".")

    def _git(self, *args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        assert GIT is not None
        return subprocess.run(
            [GIT, *args], cwd=self.root, env=self.env, input=stdin, capture_output=True, check=False
        )

    def judge(self, case: Case) -> GitVerdict:
        for entry in self.root.iterdir():
            if entry.name != ".git":
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
        for rel, data in case.files.items():
            path = self.root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        check = self._git("apply", "--check", "-", stdin=case.patch)
        if check.returncode != 0:
            return GitVerdict(False, frozenset(), (), check.stderr.decode("utf-8", "replace"))
        numstat = self._git("apply", "--numstat", "-z", "-", stdin=case.patch)
        fields = numstat.stdout.decode("utf-8", "surrogateescape").split("\0")
        names = tuple(f.split("\t")[-1] for f in fields if f.count("\t") == 2)
        before = _snapshot(self.root)
        applied = self._git("apply", "-", stdin=case.patch)
        if applied.returncode != 0:  # --check passed but writing failed: git refuses
            return GitVerdict(False, frozenset(), (), applied.stderr.decode("utf-8", "replace"))
        after = _snapshot(self.root)
        written = frozenset(
            p for p in before.keys() | after.keys() if before.get(p) != after.get(p)
        )
        return GitVerdict(True, written, names, "")


# --------------------------------------------------------------------------- the test


def documented_stricter_rules() -> set[str]:
    """Rule names in the doc table of refusals where git would apply the patch."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index("### Where the parser refuses what git applies")
    end = text.index("\n#", start + 1)
    return set(re.findall(r"^\| `([a-z-]+)` \|", text[start:end], re.MULTILINE))


def test_the_doc_lists_exactly_the_parser_rules() -> None:
    source = (Path(__file__).resolve().parents[1] / "verifiers" / "diff.py").read_text()
    raised = set(re.findall(r'rule="([a-z-]+)"', source)) | {"nul", "crlf", "no-hunk"}
    assert raised == RULES
    text = DOC.read_text(encoding="utf-8")
    table = text[text.index("### Rules") : text.index("### CRLF")]
    first_cells = re.findall(r"^\| ((?:`[a-z-]+`(?:, )?)+) \|", table, re.MULTILINE)
    assert {r for cell in first_cells for r in re.findall(r"`([a-z-]+)`", cell)} == RULES
    documented = documented_stricter_rules()
    assert documented and documented <= RULES, documented - RULES


def test_every_test_the_diff_doc_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Diff structure") : text.index("## Evaluator Sovereignty")]
    named = set(re.findall(r"`(test_[a-z0-9_]+)`", section))
    tests = Path(__file__).resolve().parent
    defined = {
        name
        for path in tests.glob("test_*.py")
        for name in re.findall(r"^def (test_[a-z0-9_]+)\(", path.read_text(), re.MULTILINE)
    }
    assert len(named) >= 20 and named <= defined, named - defined


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_parser_agrees_with_git_apply(tmp_path: Path) -> None:
    repo = GitRepo(tmp_path / "repo")
    allowed = documented_stricter_rules()
    outcomes: Counter[str] = Counter()
    stricter: Counter[str] = Counter()
    problems: list[str] = []
    for seed in range(CASES):
        case = make_case(seed)
        git = repo.judge(case)
        try:
            parsed = parse_patch(case.patch)
        except DiffError as exc:
            assert exc.rule in RULES, exc.rule
            if git.applies:
                stricter[exc.rule] += 1
                outcomes["git-only"] += 1
                if exc.rule not in allowed:
                    problems.append(f"seed {seed} {case.mutations}: undocumented refusal {exc}")
            else:
                outcomes["both-refuse"] += 1
            continue
        if not git.applies:
            problems.append(f"seed {seed} {case.mutations}: accepted, git refused: {git.error}")
            continue
        outcomes["both-accept"] += 1
        ours = set(parsed.written_paths)
        if ours != git.written:
            problems.append(f"seed {seed} {case.mutations}: paths {ours} vs git {set(git.written)}")
        if not set(git.numstat) <= ours:
            problems.append(f"seed {seed} {case.mutations}: numstat {git.numstat} vs {ours}")
    assert not problems, "\n".join(problems[:20]) + f"\n({len(problems)} problems)"
    # The generator must exercise every verdict, and the refusals the issue is about.
    assert outcomes["both-accept"] >= CASES // 4, outcomes
    assert outcomes["both-refuse"] >= CASES // 10, outcomes
    for rule in ("missing-prefix", "path-mismatch", "dev-null", "crlf", "outside-section"):
        assert stricter[rule] > 0, (rule, stricter)


@pytest.mark.skipif(GIT is None, reason="git is not installed")
def test_what_git_diff_writes_parses_to_the_paths_it_changes(tmp_path: Path) -> None:
    """Patches written by git itself (rename detection, quoting, names with spaces,
    missing final newlines) are accepted and name exactly the changed files."""
    repo = GitRepo(tmp_path / "repo")

    def git(*args: str) -> bytes:
        proc = repo._git(*args)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    files = {
        "foo bar.txt": "one\ntwo\nthree\nfour\nfive\n",
        "\u00e9t\u00e9/\u00fc.txt": "a\nb\nc\nd\ne\nf\n",
        'quo"te.txt': "x\ny\n",
        "gone.txt": "bye\n",
        "keep/no-eol.txt": "last line",
    }
    for name, text in files.items():
        path = repo.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "base")
    (repo.root / "sp ace").mkdir()
    git("mv", "\u00e9t\u00e9/\u00fc.txt", "sp ace/renamed \u00fc.txt")
    (repo.root / "sp ace" / "renamed \u00fc.txt").write_text("a\nb\nc\nd\ne\nF\n")
    (repo.root / "foo bar.txt").write_text("one\nTWO\nthree\nfour\nfive\n")
    (repo.root / 'quo"te.txt').write_text("x\ny\nz\n")
    (repo.root / "keep" / "no-eol.txt").write_text("last line changed")
    (repo.root / "new dir").mkdir()
    (repo.root / "new dir" / "n.txt").write_text("new\n")
    (repo.root / "gone.txt").unlink()
    git("add", "-A")
    patch = git("diff", "--cached", "-M", "HEAD")
    parsed = parse_patch(patch)
    assert parsed.written_paths == tuple(
        sorted(
            {
                "foo bar.txt",
                "\u00e9t\u00e9/\u00fc.txt",
                "sp ace/renamed \u00fc.txt",
                'quo"te.txt',
                "gone.txt",
                "keep/no-eol.txt",
                "new dir/n.txt",
            }
        )
    )
    ops = {f.header_new: f.operation for f in parsed.files}
    assert ops["sp ace/renamed \u00fc.txt"] == "rename"
    assert ops["gone.txt"] == "delete" and ops["new dir/n.txt"] == "create"
