"""Every help page and usage error of the installed CLI is byte for byte what it was
before the help path was made cheaper (``tests/vectors/cli_help/pages.json``, recorded by
``tests/help_pages.py`` from the tree before that work), piped and at a terminal.

The record depends on typer's and rich's layout: with other versions than the recorded
ones the comparison is skipped (``tests/test_cli_startup.py`` still compares the light
rendering with typer's own on any version).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from help_pages import MODES, argvs, render_all, versions

RECORD = Path(__file__).resolve().parent / "vectors" / "cli_help" / "pages.json"
EXE = Path(sys.executable).parent / "provledger"


def _record() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(RECORD.read_text())
    return loaded


def test_the_record_covers_every_command_in_both_modes() -> None:
    record = _record()
    assert set(record["pages"]) == set(MODES)
    expected = {" ".join(argv) for argv in argvs()}
    for mode in MODES:
        assert set(record["pages"][mode]) == expected, mode
    assert "\x1b[" in record["pages"]["terminal"]["--help"]["stdout"]
    assert "\x1b[" not in record["pages"]["piped"]["--help"]["stdout"]


def test_every_page_is_unchanged() -> None:
    record = _record()
    if record["versions"] != versions():
        pytest.skip(f"recorded with {record['versions']}, installed {versions()}")
    now = render_all(EXE)
    for mode in MODES:
        changed = sorted(
            page for page, seen in now[mode].items() if seen != record["pages"][mode][page]
        )
        assert changed == [], f"{mode}: {changed}"
