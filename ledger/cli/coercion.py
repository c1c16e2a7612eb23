"""Parameter values of the plain types processed without pydantic; typer's own rules kept.

typer (0.2x) coerces every non-flag parameter through a pydantic ``TypeAdapter`` built
when the parameter is first processed, so any command line with a ``--db`` (even
``provledger show --help``: the root's ``--db`` is processed first) imports pydantic
and builds adapters, which costs about as much CPU as importing typer and rich. For the
plain types the CLI uses (``str``, ``list[str]``, ``bool``, ``int`` with bounds, ``Path``)
and options with their own ``parser`` (``--db``), ``fast_coercion`` gives each parameter
a ``process_value`` (click's public ``Parameter.process_value(ctx, value)``, which click
calls for every parameter it parses) that computes the value directly and then does what
typer's does after coercing: the missing-value check and the parameter's callback.

Only public names are used: ``process_value``, ``multiple``, ``nargs``, ``required``,
``value_is_missing`` and ``callback`` of click's ``Parameter``; ``type_descriptor``
(``annotation``, ``file_annotation``, ``parameter_info``) of typer's parameters; and
``typer.models.ParameterInfo``. No private module or attribute of typer or click.

Invariant: ``PlainValues`` returns a value only where it is the value typer's own
``process_value`` would return; for anything else (an integer that is not plain decimal
or is out of bounds, an empty path, a path check that fails, a missing required value,
a type not listed here) it calls typer's own ``process_value``, so every refusal and its
message are typer's. A typer whose parameters differ in shape is left as it is.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

if TYPE_CHECKING:
    from typer.models import ParameterInfo

#: The only integer spellings decided here: plain decimal, no sign but ``-``, no
#: leading zeros, no whitespace or underscores, at most 18 digits. (Compiled by ``re``
#: on first use and cached there: a help page never parses an integer.)
_PLAIN_INT = r"-?(?:0|[1-9][0-9]{0,17})\Z"

#: A value converted directly, or ``_Defer`` raised: typer's own processing decides.
Convert = Callable[[object], object]


class _Defer(Exception):
    """Not decided here: typer's own processing decides (and words any refusal)."""


class _Descriptor(Protocol):
    """What typer says of a parameter's type (``param.type_descriptor``)."""

    @property
    def annotation(self) -> object: ...
    @property
    def file_annotation(self) -> object: ...
    @property
    def parameter_info(self) -> ParameterInfo: ...


class _Param(Protocol):
    """The public attributes of click's ``Parameter`` that processing a value reads."""

    @property
    def multiple(self) -> bool: ...
    @property
    def nargs(self) -> int: ...
    @property
    def required(self) -> bool: ...
    @property
    def callback(self) -> Callable[[object, object, object], object] | None: ...
    def value_is_missing(self, value: object) -> bool: ...


#: click's ``Parameter.process_value(ctx, value)``, bound to its parameter.
ProcessValue = Callable[[object, object], object]


def _str(value: object) -> object:
    if type(value) is str:
        return value
    raise _Defer


def _str_list(value: object) -> object:
    if isinstance(value, list | tuple) and all(type(v) is str for v in value):
        return list(value)
    raise _Defer


def _bool(value: object) -> object:
    if type(value) is bool:
        return value
    raise _Defer


def _int(lo: float | None, hi: float | None) -> Convert:
    def convert(value: object) -> object:
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


def _path(info: ParameterInfo) -> Convert:
    def convert(value: object) -> object:
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


def _refused(path: Path, info: ParameterInfo) -> bool:
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


def _parsed(parser: Callable[[str], object]) -> Convert:
    """An option with its own ``parser`` (``--db``: a file or a postgresql:// URL): as
    typer, every value (a given string, or the default) goes through the parser and what
    it returns is the value; a parser that raises leaves the refusal to typer."""

    def convert(value: object) -> object:
        try:
            return parser(value)  # type: ignore[arg-type]  # typer passes any value too
        except Exception as exc:
            raise _Defer from exc

    return convert


def _converter(descriptor: _Descriptor) -> Convert | None:
    """The direct conversion for this parameter, or None (typer's processing only)."""
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


class PlainValues:
    """A parameter's ``process_value`` for plain values: typer's own steps (multi-value
    and None rules, coercion, the missing-value check, the callback) with the coercion
    computed directly; anything not decided here goes to typer's own ``process_value``.

    Written out rather than made a dataclass, whose generated methods cost every process
    that builds a command (each help page) ~0.5 ms.
    """

    __slots__ = ("convert", "param", "typer_own")

    def __init__(self, param: _Param, convert: Convert, typer_own: ProcessValue) -> None:
        self.param = param
        self.convert = convert
        self.typer_own = typer_own

    def __call__(self, ctx: object, value: object) -> object:
        param = self.param
        multi_value = param.multiple or param.nargs == -1
        if value is None:
            converted: object = () if multi_value else None
        elif multi_value and isinstance(value, str):
            return self.typer_own(ctx, value)  # typer refuses that one
        else:
            try:
                converted = self.convert(value)
            except _Defer:
                return self.typer_own(ctx, value)
        if param.required and param.value_is_missing(converted):
            return self.typer_own(ctx, value)  # typer raises the missing-parameter error
        if param.callback is not None:
            converted = param.callback(ctx, param, converted)
        return converted


def fast_coercion(params: Iterable[object]) -> None:
    """Give each plain-typed parameter a ``PlainValues`` as its ``process_value`` (a
    parameter already given one, or of another shape, is left as it is)."""
    for param in params:
        own = getattr(param, "process_value", None)
        descriptor = getattr(param, "type_descriptor", None)
        if own is None or descriptor is None or isinstance(own, PlainValues):
            continue
        try:
            convert = _converter(descriptor)
            for name in ("multiple", "nargs", "required", "callback", "value_is_missing"):
                getattr(param, name)  # the shape PlainValues reads, checked up front
        except AttributeError:
            # A typer whose parameters changed shape: leave every parameter to typer's
            # own processing (slower start, same behavior) rather than fail.
            return
        if convert is not None:
            plain = PlainValues(cast(_Param, param), convert, own)
            setattr(param, "process_value", plain)  # noqa: B010 (an instance's own method)
