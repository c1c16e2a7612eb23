"""A command group whose subcommands are imported only when one of them runs.

The group holds a static table, command name -> ``Lazy("package.module:attr", help)``
(or ``LazyGroup`` for a nested group). ``--help`` lists the table's one-line help texts
without importing anything; resolving a name to run it imports that one module and
builds the command (a ``typer.Typer`` sub-app becomes a group, a function a command).
The table is data, so a reader (and mypy, through the test that loads every entry)
sees every edge of the command tree in one place.
"""

from __future__ import annotations

import copy
import functools
import importlib
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from types import MappingProxyType
from typing import Any, NamedTuple

import typer
import typer.main
from typer.core import TyperCommand

from ledger.cli.common import Command, Context, ProvGroup

#: click's help formatter (see ``ledger.cli.common.Context``).
Formatter = Any


class Lazy(NamedTuple):
    """A command or sub-app: ``target`` is ``"module:attr"``, ``help`` its one-line help.

    (An immutable ``NamedTuple`` rather than a frozen dataclass: this module is imported
    by every process, and a dataclass's generated methods cost ~0.5 ms each to make.)
    """

    target: str
    help: str

    def load(self, name: str) -> Command:
        """Import the target and build its click command, named ``name``."""
        module_name, _, attr = self.target.partition(":")
        obj = getattr(importlib.import_module(module_name), attr)
        if isinstance(obj, typer.Typer):
            command: Command = typer_group(obj)
        else:
            single = typer.Typer(add_completion=False)
            single.command(name)(obj)
            command = typer.main.get_command(single)
        command.name = name
        return command


class LazyCommands(MutableMapping[str, Command]):
    """A group's ``commands``: name -> command, each built the first time it is read.

    Names (iteration, ``len``, ``in``, ``keys()``) never build anything, so resolving one
    subcommand, "did you mean" and listing names cost one command or none; reading a
    value (``[name]``, ``get``, ``items()``, ``values()``) builds that command once.
    """

    def __init__(self, builders: Mapping[str, Callable[[], Command]]) -> None:
        self._pending = dict(builders)
        self._built: dict[str, Command] = {}
        self._order = list(builders)

    def __getitem__(self, name: str) -> Command:
        built = self._built.get(name)
        if built is None:
            build = self._pending[name]  # KeyError for a name the group does not have
            built = self._built[name] = build()
            del self._pending[name]
        return built

    def __setitem__(self, name: str, command: Command) -> None:
        if name not in self:
            self._order.append(name)
        self._pending.pop(name, None)
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self._pending.pop(name, None)
        self._built.pop(name, None)
        self._order.remove(name)

    def __contains__(self, name: object) -> bool:
        return name in self._pending or name in self._built

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)


def typer_group(app: typer.Typer) -> Command:
    """``typer.main.get_group(app)``, except that each command is built (its signature
    read, its parameters made) only when the group first reads it (``LazyCommands``).

    The group itself (options, help, callback) is typer's own, built from a copy of
    ``app`` without commands; each command is typer's ``get_command_from_info`` with
    the arguments ``get_group`` passes, under the name ``get_group`` files it under, in
    the same order. A sub-app with nested sub-apps is left to typer entirely.
    """
    if app.registered_groups:
        return typer.main.get_group(app)
    shell = copy.copy(app)
    shell.registered_commands = []
    group = typer.main.get_group(shell)
    builders: dict[str, Callable[[], Command]] = {}
    for info in app.registered_commands:
        name = info.name or typer.main.get_command_name(info.callback.__name__)  # type: ignore[union-attr]
        if name:
            builders[name] = functools.partial(
                typer.main.get_command_from_info,
                command_info=info,
                pretty_exceptions_short=app.pretty_exceptions_short,
                rich_markup_mode=app.rich_markup_mode,
            )
    group.commands = LazyCommands(builders)
    return group


class LazySubgroup(NamedTuple):
    """A nested group built from its own table (e.g. ``import`` with one importer each)."""

    help: str
    commands: Mapping[str, Lazy | LazySubgroup] = MappingProxyType({})

    def load(self, name: str) -> Command:
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
        self,
        *,
        table: Mapping[str, Lazy | LazySubgroup] | None = None,
        **kw: Any,  # click's Group options, passed on as they are
    ) -> None:
        super().__init__(**kw)
        if table is not None:
            self.table = table
        self._rendering_help = False
        self._loaded: set[str] = set()
        for name, entry in self.table.items():
            self.commands.setdefault(name, TyperCommand(name, help=entry.help))

    def get_command(self, ctx: Context, cmd_name: str) -> Command:
        entry = self.table.get(cmd_name)
        if entry is not None and cmd_name not in self._loaded and not self._rendering_help:
            self.commands[cmd_name] = entry.load(cmd_name)
            self._loaded.add(cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_help(self, ctx: Context, formatter: Formatter) -> None:
        self._rendering_help = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._rendering_help = False
