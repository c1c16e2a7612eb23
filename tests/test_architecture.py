"""The dependency rule, machine-checked over the source (AST, no imports executed).

- ``ledger`` never imports ``verifiers`` or ``cohorts``, except its CLI composition root
  (``ledger/cli/``), which mounts them; not even for type checking.
- No import cycle among the modules of ``ledger``, ``verifiers`` and ``cohorts``
  (imports under ``if TYPE_CHECKING:`` do not run, so they do not count for cycles).
- No module imports a private name (a ``_``-prefixed module or attribute) of another
  package: ``jsonschema._utils``, or ``ledger.encoding._fast`` from outside
  ``ledger.encoding``.
- No module uses ``__import__`` or ``importlib`` to hide an import edge from this test,
  except the lazy command table (``ledger/cli/lazy.py``) and the plug-in loader.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ledger", "verifiers", "cohorts")
EDGE = ("verifiers", "cohorts")
# ledger.cli.lazy loads the command table.
DYNAMIC_IMPORT_ALLOWED = {"ledger.cli.lazy"}
# The one private seam of a dependency in use: ledger.cli.coercion pre-seeds typer's
# per-parameter coercion (typer >= 0.2x builds a pydantic adapter for every parameter).
# It does nothing on a typer without the seam, and tests/test_cli_startup.py fails if
# typer's coercion comes back on the start-up path or gives another value.
PRIVATE_SEAMS_ALLOWED = {
    ("ledger.cli.coercion", "typer._coercion"),
    ("ledger.cli.coercion", "typer._param_types"),
    # ledger.cli.richhelp executes rich._ratio with a stand-in for fractions (help pages
    # lay out no Layout); tests/test_cli_startup.py checks its Fraction is the real one.
    ("ledger.cli.richhelp", "rich._ratio"),
}


@dataclass(frozen=True)
class Import:
    source: str  # importing module
    target: str  # imported module (or module.attribute for ``from m import a``)
    names: tuple[str, ...]  # names taken by ``from m import ...``
    line: int
    type_only: bool


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "fixtures" in path.relative_to(ROOT).parts:
                continue
            found[_module_name(path)] = path
    return found


MODULES = _modules()


def _is_type_checking(test: ast.expr) -> bool:
    return ast.unparse(test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING")


def _imports(name: str, path: Path) -> list[Import]:
    is_package = path.name == "__init__.py"
    out: list[Import] = []

    def visit(node: ast.AST, type_only: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                visit(child, True)
            for child in node.orelse:
                visit(child, type_only)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                out.append(Import(name, alias.name, (), node.lineno, type_only))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            names = tuple(a.name for a in node.names)
            out.append(Import(name, base, names, node.lineno, type_only))
        for child in ast.iter_child_nodes(node):
            visit(child, type_only)

    visit(ast.parse(path.read_text("utf-8")), False)
    return out


IMPORTS = [imp for name, path in MODULES.items() for imp in _imports(name, path)]


def _internal_targets(imp: Import) -> list[str]:
    """The internal modules an import statement loads (``from pkg import mod`` -> pkg.mod)."""
    targets = []
    if imp.target in MODULES:
        targets.append(imp.target)
    for name in imp.names:
        if f"{imp.target}.{name}" in MODULES:
            targets.append(f"{imp.target}.{name}")
    return targets


def test_ledger_does_not_import_the_idkmesh_edge() -> None:
    found = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in IMPORTS
        if imp.source.split(".")[0] == "ledger"
        and not imp.source.startswith("ledger.cli")
        and imp.target.split(".")[0] in EDGE
    ]
    assert found == []


def test_the_protocol_model_sits_below_both_edge_packages() -> None:
    """``verifiers.model`` imports only ``ledger`` and itself; ``verifiers`` never imports
    ``cohorts`` (cohorts builds on the verifiers' protocol model, not the reverse)."""
    found = [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in IMPORTS
        if imp.source.split(".")[0] == "verifiers" and imp.target.split(".")[0] == "cohorts"
    ]
    found += [
        f"{imp.source}:{imp.line} imports {imp.target}"
        for imp in IMPORTS
        if imp.source.startswith("verifiers.model")
        and imp.target.split(".")[0] in PACKAGES
        and not imp.target.startswith(("ledger", "verifiers.model"))
    ]
    assert found == []
    assert any(
        imp.target.startswith("verifiers.model")
        for imp in IMPORTS
        if imp.source.startswith("cohorts.")
    )


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def connect(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return out


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in MODULES}
    for imp in IMPORTS:
        if not imp.type_only:
            graph[imp.source].update(t for t in _internal_targets(imp) if t != imp.source)
    return graph


def test_no_import_cycle() -> None:
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_cycles() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _package_of(module: str) -> str:
    """The package a module belongs to: its parent (a package is its own)."""
    return (
        module if MODULES.get(module, Path()).name == "__init__.py" else module.rpartition(".")[0]
    )


def _private_uses(imp: Import) -> list[str]:
    found = []
    parts = imp.target.split(".")
    private_at = next(
        (i for i, p in enumerate(parts) if p.startswith("_") and p != "__future__"), None
    )
    if private_at is not None:
        owner = ".".join(parts[:private_at])
        if not _package_of(imp.source).startswith(owner) or owner == "":
            found.append(imp.target)
    for name in imp.names:
        if name.startswith("_") and not name.startswith("__"):
            owner = _package_of(imp.target) if imp.target in MODULES else imp.target
            if not _package_of(imp.source).startswith(owner):
                found.append(f"{imp.target}.{name}")
    return found


def test_no_private_name_of_another_package() -> None:
    found = [
        f"{imp.source}:{imp.line} {use}"
        for imp in IMPORTS
        if (imp.source, imp.target) not in PRIVATE_SEAMS_ALLOWED
        for use in _private_uses(imp)
    ]
    assert found == []


def test_the_private_check_catches_the_known_cases() -> None:
    def uses(source: str, target: str, *names: str) -> list[str]:
        return _private_uses(Import(source, target, names, 1, False))

    assert uses("ledger.schema._compiled", "jsonschema._utils", "equal")
    assert uses("ledger.store.prepared", "ledger.encoding._fast", "parse_encode")
    assert uses("ledger.store.prepared", "ledger.encoding", "_fast")
    assert not uses("ledger.encoding.canonical", "ledger.encoding", "_fast")
    assert not uses("ledger.encoding.canonical", "ledger.encoding._fast", "Encoded")


def test_no_hidden_import_edges() -> None:
    found = []
    for name, path in MODULES.items():
        if name in DYNAMIC_IMPORT_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in (
                "__import__",
                "importlib.import_module",
                "import_module",
            ):
                found.append(f"{name}:{node.lineno}")
    assert found == []
