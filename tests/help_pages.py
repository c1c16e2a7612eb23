"""Every help page (and a few usage errors) of the installed ``provledger``, as a user sees
them: one fresh process per page, piped (no terminal, 80 columns) and as at a terminal
(100 columns, ``TERM`` set, colour forced through ``FORCE_COLOR``).

``tests/vectors/cli_help/pages.json`` holds these pages as rendered before the start-up
work on the help path; ``tests/test_help_pages.py`` renders them again and requires every
byte to be the same. To record the pages anew (after a deliberate change of help text)::

    .venv/bin/python tests/help_pages.py --write tests/vectors/cli_help/pages.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from pathlib import Path
from typing import Any

from bench_start import command_paths

#: mode -> the environment it adds (its own keys are removed from the caller's first).
MODES: dict[str, dict[str, str]] = {
    "piped": {"COLUMNS": "80", "TERM": "dumb"},
    "terminal": {"COLUMNS": "100", "TERM": "xterm-256color", "FORCE_COLOR": "1"},
}
_CLEARED = (
    "COLUMNS",
    "LINES",
    "TERM",
    "FORCE_COLOR",
    "NO_COLOR",
    "PY_COLORS",
    "TTY_COMPATIBLE",
    "TTY_INTERACTIVE",
    "TERMINAL_WIDTH",
    "GITHUB_ACTIONS",
    "_TYPER_FORCE_DISABLE_TERMINAL",
    "COLORTERM",
    "JUPYTER_COLUMNS",
    "JUPYTER_LINES",
)

#: Usage errors: rendered by the same machinery as the help pages.
USAGE_ERRORS = (
    ("log", "--limit", "x"),
    ("verfy",),
    ("proof",),
    ("cohort", "brun"),
    ("witness", "add-log"),
)


def argvs() -> list[tuple[str, ...]]:
    pages: list[tuple[str, ...]] = [("--help",), ("-h",)]
    pages += [(*path, "--help") for path in command_paths()]
    return pages + list(USAGE_ERRORS)


def environment(mode: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED}
    env = {k: v for k, v in env.items() if not k.startswith("PROVLEDGER_")}
    return {**env, **MODES[mode]}


def render(exe: Path, argv: tuple[str, ...], mode: str, cwd: Path) -> dict[str, Any]:
    """One page, from a fresh process: its exit status, stdout and stderr."""
    proc = subprocess.run(
        [str(exe), *argv], capture_output=True, text=True, env=environment(mode), cwd=cwd
    )
    return {"exit": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}


def render_all(
    exe: Path, pages: list[tuple[str, ...]] | None = None, workers: int = 2
) -> dict[str, dict[str, dict[str, Any]]]:
    """mode -> page (its argv joined by spaces) -> what ``render`` returns."""
    pages = argvs() if pages is None else pages
    jobs = [(mode, argv) for mode in MODES for argv in pages]
    with (
        tempfile.TemporaryDirectory(prefix="help-pages-") as tmp,
        ThreadPoolExecutor(workers) as pool,
    ):
        done = list(pool.map(lambda job: render(exe, job[1], job[0], Path(tmp)), jobs))
    found: dict[str, dict[str, dict[str, Any]]] = {mode: {} for mode in MODES}
    for (mode, argv), page in zip(jobs, done, strict=True):
        found[mode][" ".join(argv)] = page
    return found


def versions() -> dict[str, str]:
    return {name: version(name) for name in ("typer", "rich")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--exe", type=Path, default=Path(sys.executable).parent / "provledger")
    parser.add_argument("--write", type=Path, required=True, help="the JSON file to write")
    parser.add_argument("--source", default="", help="what rendered the pages (e.g. a commit)")
    args = parser.parse_args(argv)
    record = {
        "about": "provledger help pages and usage errors, one process each (tests/help_pages.py)",
        "source": args.source,
        "versions": versions(),
        "modes": MODES,
        "pages": render_all(args.exe),
    }
    args.write.parent.mkdir(parents=True, exist_ok=True)
    args.write.write_text(json.dumps(record, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
