"""A command group whose subcommands are imported only when one of them runs.

The group holds a static table, command name -> ``Lazy("package.module:attr", help)``
(or ``LazyGroup`` for a nested group). ``--help`` lists the table's one-line help texts
without importing anything; resolving a name to run it imports that one module and
builds the command (a ``typer.Typer`` sub-app becomes a group, a function a command).
The table is data, so a reader (and mypy, through the test that loads every entry)
sees every edge of the command tree in one place.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import typer
import typer.main
from typer.core import TyperCommand

from ledger.cli.common import ProvGroup


@dataclass(frozen=True)
class Lazy:
    """A command or sub-app: ``target`` is ``"module:attr"``, ``help`` its one-line help."""

    target: str
    help: str

    def load(self, name: str) -> Any:
        """Import the target and build its click command, named ``name``."""
        module_name, _, attr = self.target.partition(":")
        obj = getattr(importlib.import_module(module_name), attr)
        if isinstance(obj, typer.Typer):
            command: Any = typer.main.get_group(obj)
        else:
            single = typer.Typer(add_completion=False)
            single.command(name)(obj)
            command = typer.main.get_command(single)
        command.name = name
        return command


@dataclass(frozen=True)
class LazySubgroup:
    """A nested group built from its own table (e.g. ``import`` with one importer each)."""

    help: str
    commands: Mapping[str, Lazy | LazySubgroup] = field(default_factory=dict)

    def load(self, name: str) -> Any:
        return LazyCommandGroup(
            name=name, help=self.help, table=self.commands, no_args_is_help=True
        )


class LazyCommandGroup(ProvGroup):
    """A ``ProvGroup`` whose commands come from ``table`` and load on first use.

    ``self.commands`` starts with a placeholder per name (so listings, usage errors and
    "did you mean" suggestions see every name in table order); a placeholder is replaced
    by the real command the first time the name is resolved outside help rendering.
    """

    table: Mapping[str, Lazy | LazySubgroup] = {}

    def __init__(
        self, *, table: Mapping[str, Lazy | LazySubgroup] | None = None, **kw: Any
    ) -> None:
        super().__init__(**kw)
        if table is not None:
            self.table = table
        self._rendering_help = False
        self._loaded: set[str] = set()
        for name, entry in self.table.items():
            self.commands.setdefault(name, TyperCommand(name, help=entry.help))

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        entry = self.table.get(cmd_name)
        if entry is not None and cmd_name not in self._loaded and not self._rendering_help:
            self.commands[cmd_name] = entry.load(cmd_name)
            self._loaded.add(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._rendering_help = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._rendering_help = False
