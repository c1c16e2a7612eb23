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
command with and without this).

``install()`` changes nothing when ``typer.rich_utils`` is already imported or absent.
"""

from __future__ import annotations

import importlib.util
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


#: module -> the names ``typer.rich_utils`` imports from it at module level, each with
#: the function that imports the real one.
DEFERRED: dict[str, dict[str, Callable[[], Any]]] = {
    "rich.markdown": {"Markdown": _markdown},
    "rich.traceback": {"Traceback": _traceback},
}


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


class _LightLoader:
    """Executes ``typer.rich_utils`` with stand-ins for the deferred modules."""

    def __init__(self, loader: Loader) -> None:
        self.loader = loader

    def create_module(self, spec: ModuleSpec) -> types.ModuleType | None:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        placed = {
            name: _stand_in(name, names)
            for name, names in DEFERRED.items()
            if name not in sys.modules
        }
        sys.modules.update(placed)
        try:
            self.loader.exec_module(module)
        finally:
            # The stand-ins leave: a later ``import rich.markdown`` gets the real module.
            for name, stand_in in placed.items():
                if sys.modules.get(name) is stand_in:
                    del sys.modules[name]


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
