"""Parameter values of the plain types coerced without pydantic; typer's own rules kept.

typer (0.2x) coerces every non-flag parameter through a pydantic ``TypeAdapter`` built
when the parameter is first processed, so any command line with a ``--db`` (even
``provledger show --help``: the root's ``--db`` is processed first) imports pydantic
and builds adapters, which costs about as much CPU as importing typer and rich. For the
plain types the CLI uses (``str``, ``list[str]``, ``bool``, ``int`` with bounds, ``Path``)
and options with their own ``parser`` (``--db``), ``fast_coercion`` pre-seeds typer's lazy
per-parameter coercion (the parameter's ``_runtime_param``, which typer's
``get_runtime_param`` otherwise builds on first use) with ``Plain``, which computes the
value directly. No private module of typer is imported: the seam is that one attribute
and the ``coerce`` method typer calls on it.

Invariant: ``Plain`` returns a value only where it is the value typer's coercion would
return; for anything else (an integer that is not plain decimal or is out of bounds, an
empty path, a path check that fails, a type not listed here) it hands the value to
typer's own coercion, so every refusal and its message are typer's. On a typer without
this seam (older releases, which build no adapters) nothing is changed.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

#: The only integer spellings decided here: plain decimal, no sign but ``-``, no
#: leading zeros, no whitespace or underscores, at most 18 digits. (Compiled by ``re``
#: on first use and cached there: a help page never parses an integer.)
_PLAIN_INT = r"-?(?:0|[1-9][0-9]{0,17})\Z"


class _Defer(Exception):
    """Not decided here: typer's own coercion decides (and words any refusal)."""


def _str(value: Any, param: Any, ctx: Any) -> Any:
    if type(value) is str:
        return value
    raise _Defer


def _str_list(value: Any, param: Any, ctx: Any) -> Any:
    if isinstance(value, (list, tuple)) and all(type(v) is str for v in value):
        return list(value)
    raise _Defer


def _bool(value: Any, param: Any, ctx: Any) -> Any:
    if type(value) is bool:
        return value
    raise _Defer


def _int(lo: float | None, hi: float | None) -> Callable[[Any, Any, Any], Any]:
    def convert(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) is int:
            number = value
        elif type(value) is str and re.match(_PLAIN_INT, value):
            number = int(value)
        else:
            raise _Defer
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            raise _Defer
        return number

    return convert


def _path(info: Any) -> Callable[[Any, Any, Any], Any]:
    def convert(value: Any, param: Any, ctx: Any) -> Any:
        if type(value) is str and value and "\x00" not in value:
            path = Path(value)
        elif isinstance(value, Path):
            path = value  # as typer: a Path value is taken as it is
        else:
            raise _Defer
        # typer's own checks (exists, file/dir, readable, writable) pass as they are; a
        # path any of them would refuse, or one typer would resolve or read as "-", is
        # left to typer, which words the refusal.
        if info.resolve_path or info.allow_dash or _refused(path, info):
            raise _Defer
        return path

    return convert


def _refused(path: Path, info: Any) -> bool:
    """Would typer's path checks refuse ``path`` (``exists``, ``file_okay``, ``dir_okay``,
    ``readable``, ``writable``, as typer applies them)?"""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return bool(info.exists)
    return bool(
        (not info.file_okay and stat.S_ISREG(st.st_mode))
        or (not info.dir_okay and stat.S_ISDIR(st.st_mode))
        or (info.readable and not os.access(path, os.R_OK))
        or (info.writable and not os.access(path, os.W_OK))
    )


def _parsed(parser: Callable[[Any], Any]) -> Callable[[Any, Any, Any], Any]:
    """An option with its own ``parser`` (``--db``: a file or a postgresql:// URL): as
    typer, every value (a given string, or the default) goes through the parser and what
    it returns is the value; a parser that raises leaves the refusal to typer."""

    def convert(value: Any, param: Any, ctx: Any) -> Any:
        try:
            return parser(value)
        except Exception as exc:
            raise _Defer from exc

    return convert


def _converter(descriptor: Any) -> Callable[[Any, Any, Any], Any] | None:
    """The direct conversion for this parameter, or None (typer's coercion only)."""
    info = descriptor.parameter_info
    if descriptor.file_annotation is not None:
        return None
    if info.parser is not None:
        return _parsed(info.parser)
    annotation = descriptor.annotation
    if annotation is str:
        return _str
    if annotation == list[str]:
        return _str_list
    if annotation is bool:
        return _bool
    if annotation is int and not info.clamp:
        return _int(info.min, info.max)
    if annotation is Path and info.path_type is None:
        return _path(info)
    return None


class Plain:
    """What typer asks of a parameter's coercion (``coerce``), computed directly.

    typer's own rules for None and multi-value parameters are kept; a value ``convert``
    does not decide goes to the coercion typer builds for the parameter
    (``get_runtime_param``), as if this were never installed. Written out rather than
    made a dataclass, whose generated methods cost every process that builds a command
    (each help page) ~0.5 ms.
    """

    __slots__ = ("convert",)

    def __init__(self, convert: Callable[[Any, Any, Any], Any]) -> None:
        self.convert = convert

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        multi_value = param.multiple or param.nargs == -1
        if value is None:
            return () if multi_value else None
        if not (multi_value and isinstance(value, str)):  # typer refuses that one
            try:
                return self.convert(value, param, ctx)
            except _Defer:
                pass
        param._runtime_param = None
        try:
            typer_own = param.get_runtime_param()
        finally:
            param._runtime_param = self
        return typer_own.coerce(value, param=param, ctx=ctx)


def fast_coercion(params: Iterable[Any]) -> None:
    """Pre-seed typer's coercion of each plain-typed parameter with ``Plain`` (a typer
    whose parameters have no lazy per-parameter coercion is left as it is)."""
    for param in params:
        descriptor = getattr(param, "type_descriptor", None)
        if (
            descriptor is None
            or not hasattr(param, "get_runtime_param")
            or getattr(param, "_runtime_param", False) is not None
        ):
            continue
        try:
            convert = _converter(descriptor)
        except AttributeError:
            # A typer whose descriptors changed shape: leave every parameter to typer's
            # own coercion (slower start, same behavior) rather than fail.
            return
        if convert is not None:
            param._runtime_param = Plain(convert)
