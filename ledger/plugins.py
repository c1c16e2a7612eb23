"""This distribution's own plug-ins: the entry points the provledger package declares.

The generic core knows no IDKMesh rule; what the package adds to it is declared in
``pyproject.toml`` as entry points of the ``provledger`` distribution, one group per
seam (``provledger.policy``: admission rules; ``provledger.notes``: what ``show`` says
about an object of a kind; ``provledger.browse``: the browse projection check;
``provledger.replay``: what a bundle carries for a replay, and the replay). Every caller,
the CLI and a Python program alike, gets them through here, with no set-up call.

Only this distribution's entry points count: another installed package cannot change
what a ledger admits or reports by registering one.

They are read from the distribution's ``entry_points.txt`` (the PyPA entry-points file
format: INI sections named by group, ``name = module:attr`` lines), found the way
``importlib.metadata.distribution`` finds a distribution: the first ``sys.path``
directory that holds ``provledger-*.dist-info`` or ``provledger*.egg-info``. Importing
``importlib.metadata`` costs ~35 ms of CPU (it loads ``email`` and ``zipfile``), a fifth
of a read command's start-up; this reader costs a directory listing per ``sys.path``
entry. ``tests/test_api.py`` checks it against ``importlib.metadata``.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from dataclasses import dataclass
from functools import cache
from typing import Final

from ledger.errors import NotFound

DISTRIBUTION: Final = "provledger"

#: Groups of the seams (the values each entry point names are documented with the seam).
POLICY_GROUP: Final = "provledger.policy"
NOTES_GROUP: Final = "provledger.notes"
BROWSE_GROUP: Final = "provledger.browse"
REPLAY_GROUP: Final = "provledger.replay"

_METADATA_DIR = re.compile(r"(?P<name>[^-]+?)(-[^-]*)?\.(dist-info|egg-info)\Z")


class PluginUnavailable(NotFound):
    """The distribution's metadata is missing, or names no plug-in where one is needed."""


@dataclass(frozen=True)
class Plugin:
    """One entry point: ``value`` is ``module:attr`` (``attr`` may be dotted)."""

    group: str
    name: str
    value: str

    def load(self) -> object:
        """Import the module and return the attribute the entry point names."""
        module_name, _, attr = self.value.partition(":")
        target: object = importlib.import_module(module_name.strip())
        for part in attr.strip().split(".") if attr.strip() else ():
            target = getattr(target, part)
        return target


def _normalized(name: str) -> str:
    # PEP 503 names, as the metadata directory spells them (``-`` is not allowed there).
    return re.sub(r"[-_.]+", "_", name).lower()


def _metadata_dir() -> str | None:
    """The first ``sys.path`` directory's metadata directory of this distribution."""
    wanted = _normalized(DISTRIBUTION)
    for entry in sys.path:
        directory = entry or "."
        try:
            names = sorted(os.listdir(directory))
        except OSError:  # not a directory (a zip file, a missing entry)
            continue
        for name in names:
            match = _METADATA_DIR.match(name)
            if match is not None and _normalized(match["name"]) == wanted:
                return os.path.join(directory, name)
    return None


def parse_entry_points(text: str) -> tuple[Plugin, ...]:
    """Entry points of an ``entry_points.txt`` (sections are groups), in file order."""
    found: list[Plugin] = []
    group: str | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line[1:-1].strip()
            continue
        name, sep, value = line.partition("=")
        if group is not None and sep:
            found.append(Plugin(group, name.strip(), value.strip()))
    return tuple(found)


@cache
def _entry_points() -> tuple[Plugin, ...] | None:
    """Every entry point of this distribution (read once per process), or None when no
    metadata is found (the package is not installed)."""
    directory = _metadata_dir()
    if directory is None:
        return None
    try:
        with open(os.path.join(directory, "entry_points.txt"), encoding="utf-8") as file:
            return parse_entry_points(file.read())
    except FileNotFoundError:
        return ()


def plugins(group: str) -> tuple[Plugin, ...]:
    """This distribution's entry points of ``group``, sorted by name.

    ``PluginUnavailable`` (exit 3) when the distribution's metadata cannot be found (a
    source tree that was never installed: ``pip install .``)."""
    found = _entry_points()
    if found is None:
        raise PluginUnavailable(
            f"plug-ins, got no installed {DISTRIBUTION} distribution, expected its metadata"
            " (install the package: pip install .)"
        )
    return tuple(sorted((p for p in found if p.group == group), key=lambda p: p.name))


def plugin(group: str, name: str) -> Plugin | None:
    """The entry point ``name`` of ``group``, or None."""
    return next((p for p in plugins(group) if p.name == name), None)


def required(group: str, name: str) -> object:
    """What the entry point ``name`` of ``group`` names, loaded; ``PluginUnavailable``
    (exit 3) when the distribution declares none."""
    found = plugin(group, name)
    if found is None:
        raise PluginUnavailable(
            f"plug-in {group} {name}, got none declared, expected the package's"
            " (install the package: pip install .)"
        )
    return found.load()
