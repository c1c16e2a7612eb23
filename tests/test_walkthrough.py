"""docs/WALKTHROUGH.md is executable: every ``console`` block runs with the installed
``provledger`` on the real corpus, and the lines it shows must appear, in order.

Block grammar: ``$ provledger ARGS`` runs a command, and nothing else may (the whole
lineage, burn to replay, uses ``provledger`` commands only; ``$IDKMESH``/``$FIXTURES``/
``$EXAMPLES`` and captured ``$NAME``s expanded, an argument holding ``*`` globbed in the
working directory); the
lines after it are expected output (stdout and stderr together), ``<...>`` matching
any text within a line, ``<$NAME>`` a word captured for later commands, and ``...``
standing for lines left out; ``[exit N]`` is the expected exit code (0 when absent).
"""

from __future__ import annotations

import glob
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "WALKTHROUGH.md"
EXE = Path(sys.executable).with_name("provledger")


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)
    exit_code: int = 0


def steps(text: str) -> list[Step]:
    out: list[Step] = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            if line.startswith("$ "):
                assert line.startswith("$ provledger "), f"not a provledger command: {line}"
                out.append(Step(line[2:]))
            elif (m := re.fullmatch(r"\[exit (\d+)\]", line)) is not None:
                out[-1].exit_code = int(m.group(1))
            else:
                out[-1].expected.append(line)
    return out


def line_pattern(expected: str) -> re.Pattern[str]:
    out: list[str] = []
    for piece in re.split(r"(<\.\.\.>|<\$[A-Z_]+>)", expected):
        if piece == "<...>":
            out.append(".*?")
        elif piece.startswith("<$") and piece.endswith(">"):
            out.append(f"(?P<{piece[2:-1]}>\\S+)")
        else:
            out.append(re.escape(piece))
    return re.compile("".join(out))


def missing_lines(
    expected: list[str], actual: list[str], captured: dict[str, str] | None = None
) -> list[str]:
    """Expected lines not found in order (``...`` lets any lines pass between).

    Words matched by ``<$NAME>`` go into ``captured``.
    """
    missing: list[str] = []
    at = 0
    for want in expected:
        if want == "...":
            continue
        pattern = line_pattern(want)
        for index in range(at, len(actual)):
            if (m := pattern.fullmatch(actual[index].rstrip())) is not None:
                if captured is not None:
                    captured.update(m.groupdict())
                at = index + 1
                break
        else:
            missing.append(want)
    return missing


def expand(command: str, values: dict[str, str], cwd: Path) -> list[str]:
    """The argv of ``command``: ``$NAME``s replaced, ``*`` arguments globbed in ``cwd``."""
    out: list[str] = []
    for arg in shlex.split(command):
        for name in sorted(values, key=len, reverse=True):
            arg = arg.replace(f"${name}", values[name])
        if "*" in arg:
            out += sorted(glob.glob(arg, root_dir=cwd))
        else:
            out.append(arg)
    return out


def test_line_patterns_can_fail() -> None:
    assert missing_lines(["a <...> c"], ["a b c"]) == []
    assert missing_lines(["a <...> c"], ["a b d"]) == ["a <...> c"]
    assert missing_lines(["x", "y"], ["y", "x"]) == ["y"]  # order matters
    got: dict[str, str] = {}
    assert missing_lines(["id: <$ID> ok"], ["id: sha256:ab ok"], got) == []
    assert got == {"ID": "sha256:ab"}
    assert missing_lines(["id: <$ID> ok"], ["id: two words ok"], got) == ["id: <$ID> ok"]


def test_walkthrough_runs_as_written(corpus: Path, tmp_path: Path) -> None:
    if not EXE.exists():
        pytest.skip(f"provledger is not installed next to {sys.executable}")
    env = {
        **os.environ,
        "IDKMESH": str(corpus),
        "FIXTURES": str(ROOT / "verifiers" / "fixtures"),
        "EXAMPLES": str(ROOT / "examples"),
        "PROVLEDGER_NO_PROGRESS": "1",
        "COLUMNS": "80",
    }
    env.pop("PROVLEDGER_DB", None)
    values = {
        "IDKMESH": env["IDKMESH"],
        "FIXTURES": env["FIXTURES"],
        "EXAMPLES": env["EXAMPLES"],
    }
    plan = steps(DOC.read_text("utf-8"))
    assert len(plan) >= 15
    for step in plan:
        args = expand(step.command, values, tmp_path)
        done = subprocess.run(
            [str(EXE), *args[1:]],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        actual = (done.stdout + done.stderr).splitlines()
        assert done.returncode == step.exit_code, (step.command, done.stderr)
        assert "Traceback" not in done.stderr
        assert missing_lines(step.expected, actual, values) == [], (step.command, done.stdout)
