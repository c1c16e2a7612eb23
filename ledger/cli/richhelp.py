"""typer's rich help and error rendering, without the modules it names but never uses here.

``typer.rich_utils`` renders every ``--help`` page and usage error. At import it also
binds ``rich.markdown.Markdown`` (markdown-it, pygments: used only when a command's
``rich_markup_mode`` is ``"markdown"``) and ``rich.traceback.Traceback`` (rich.pretty,
attrs: used only for pretty exception pages). This CLI uses neither: help is in
``"rich"`` markup mode and pretty exceptions are off. Importing them costs ~0.6x of the
whole ``import typer, rich.console`` start-up, so ``install()`` registers
``typer.rich_utils`` to be executed with both names bound to stand-ins that import the
real class on first use (``Deferred``): if they are ever needed they behave exactly as
before, one import later. Nothing else in the module changes, so the help text and
styles are typer's own (``tests/test_cli_startup.py`` compares the rendered help of every
command with and without this; ``tests/test_help_pages.py`` compares every page with
the pages recorded before).

Two more modules the help path loads but does not use are deferred the same way:
``fractions`` (with ``decimal``), which ``rich.table`` loads through rich's ratio helper
for ``ratio_resolve`` (rich's ``Layout``, never a table or panel): ``rich.table`` is
imported first with its own stand-in; and ``rich._emoji_codes``, the 3,600-entry
emoji table that rich's markup and ``Console`` load on their first ``:name:``
replacement even when the text has no ``:name:`` in it: ``_emoji_replace`` is wrapped
so that a text rich's own emoji pattern does not match is returned as it is (what the
replacement returns for it) without loading the table (``skip_plain_emoji``).

``install()`` changes nothing when ``typer.rich_utils`` is already imported or absent.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from importlib.abc import Loader
    from importlib.machinery import ModuleSpec

RICH_UTILS = "typer.rich_utils"


def _markdown() -> Any:
    from rich.markdown import Markdown

    return Markdown


def _traceback() -> Any:
    from rich.traceback import Traceback

    return Traceback


def _fraction() -> Any:
    from fractions import Fraction

    return Fraction


#: module -> the names ``typer.rich_utils`` imports from it at module level, each with
#: the function that imports the real one.
DEFERRED: dict[str, dict[str, Callable[[], Any]]] = {
    "rich.markdown": {"Markdown": _markdown},
    "rich.traceback": {"Traceback": _traceback},
}

#: The same for ``rich.table`` (whose ratio helper imports ``fractions``), imported first
#: with its own stand-in, in place only while it and the modules it loads first execute
#: (``rich.box``, ``rich.padding`` and the ratio helper; only the last uses ``Fraction``).
DEFERRED_BY_TABLE: dict[str, dict[str, Callable[[], Any]]] = {"fractions": {"Fraction": _fraction}}


class Deferred(type):
    """A stand-in class: calls and attribute reads go to the real class, imported then.

    It is a class (not a function) so that ``Markdown | Text`` in annotations typer
    evaluates at import still works.
    """

    _real: Callable[[], Any]

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        return cls._real()(*args, **kwargs)

    def __getattr__(cls, attr: str) -> Any:
        return getattr(cls._real(), attr)


def _stand_in(module: str, names: dict[str, Callable[[], Any]]) -> types.ModuleType:
    stand_in = types.ModuleType(module, "stand-in while typer.rich_utils is imported")
    for name, real in names.items():
        setattr(stand_in, name, Deferred(name, (), {"_real": staticmethod(real)}))
    return stand_in


class _StandIns:
    """Stand-in modules in ``sys.modules`` for the duration of a ``with`` block."""

    def __init__(self, deferred: dict[str, dict[str, Callable[[], Any]]]) -> None:
        self.deferred = deferred
        self.placed: dict[str, types.ModuleType] = {}

    def __enter__(self) -> None:
        self.placed = {
            name: _stand_in(name, names)
            for name, names in self.deferred.items()
            if name not in sys.modules
        }
        sys.modules.update(self.placed)

    def __exit__(self, *exc: object) -> None:
        # The stand-ins leave: a later ``import rich.markdown`` gets the real module.
        for name, stand_in in self.placed.items():
            if sys.modules.get(name) is stand_in:
                del sys.modules[name]


class _LightLoader:
    """Executes ``typer.rich_utils`` with stand-ins for the deferred modules."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        if "rich.table" not in sys.modules:
            with _StandIns(DEFERRED_BY_TABLE):
                import rich.table  # noqa: F401
        with _StandIns(DEFERRED):
            self.loader.exec_module(module)
        skip_plain_emoji()


def skip_plain_emoji() -> None:
    """Wrap the ``_emoji_replace`` that ``rich.markup`` and ``rich.console`` call in
    ``plain_emoji_replace`` (once; a module not imported, or a rich whose function has
    no compiled pattern to reuse, is left alone)."""
    for name in ("rich.markup", "rich.console"):
        owner = sys.modules.get(name)
        real = getattr(owner, "_emoji_replace", None)
        if real is None or hasattr(real, "__wrapped__"):
            continue
        pattern = _emoji_pattern(real)
        if pattern is not None:
            setattr(owner, "_emoji_replace", plain_emoji_replace(real, pattern))  # noqa: B010


def _emoji_pattern(real: Callable[..., str]) -> re.Pattern[str] | None:
    """The pattern ``real`` substitutes with: its last default, ``_emoji_sub``, is the
    ``sub`` method of a compiled pattern (rich 10 to 15)."""
    defaults = getattr(real, "__defaults__", None) or (None,)
    pattern = getattr(defaults[-1], "__self__", None)
    return pattern if isinstance(pattern, re.Pattern) else None


def plain_emoji_replace(real: Callable[..., str], pattern: re.Pattern[str]) -> Callable[..., str]:
    """``real`` (rich's ``_emoji_replace``), except that a text in which ``pattern`` (the
    one ``real`` substitutes with) finds no ``:name:`` is returned unchanged, as ``real``
    returns it, without importing the emoji table ``real`` imports on every call."""

    @functools.wraps(real)
    def replace(text: str, *args: Any, **kwargs: Any) -> str:
        if len(args) < 2 and "_emoji_sub" not in kwargs and pattern.search(text) is None:
            return text
        return real(text, *args, **kwargs)

    return replace


def install() -> None:
    """Make the first use of ``typer.rich_utils`` (by anyone) execute the light one.

    The module is registered unexecuted (``importlib.util.LazyLoader``, the standard
    library's lazy-import recipe): a command that renders no help pays nothing for it.
    """
    if RICH_UTILS in sys.modules:
        return
    spec = importlib.util.find_spec(RICH_UTILS)
    if spec is None or spec.loader is None:
        return
    lazy = importlib.util.LazyLoader(cast("Loader", _LightLoader(spec.loader)))
    spec.loader = lazy
    module = importlib.util.module_from_spec(spec)
    sys.modules[RICH_UTILS] = module
    lazy.exec_module(module)
    parent, _, child = RICH_UTILS.rpartition(".")
    setattr(sys.modules[parent], child, module)
