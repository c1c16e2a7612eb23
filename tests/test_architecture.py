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
- ``docs/DESIGN.md`` names only what exists: its dotted names, paths, layout tree,
  ``store.`` methods and the functions and classes it writes in backticks.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ledger", "verifiers", "cohorts")
EDGE = ("verifiers", "cohorts")
# ledger.cli.lazy loads the command table; ledger.plugins loads the entry points.
DYNAMIC_IMPORT_ALLOWED = {"ledger.cli.lazy", "ledger.plugins"}


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
    """Not of a dependency either (``typer._coercion``, ``rich._ratio``): none is allowed."""
    found = [f"{imp.source}:{imp.line} {use}" for imp in IMPORTS for use in _private_uses(imp)]
    assert found == []


def test_the_private_check_catches_the_known_cases() -> None:
    def uses(source: str, target: str, *names: str) -> list[str]:
        return _private_uses(Import(source, target, names, 1, False))

    assert uses("ledger.schema._compiled", "jsonschema._utils", "equal")
    assert uses("ledger.cli.coercion", "typer._coercion", "RuntimeParam")
    assert uses("ledger.cli.richhelp", "rich._ratio")
    assert uses("ledger.store.prepared", "ledger.encoding._fast", "parse_encode")
    assert uses("ledger.store.prepared", "ledger.encoding", "_fast")
    assert not uses("ledger.encoding.canonical", "ledger.encoding", "_fast")
    assert not uses("ledger.encoding.canonical", "ledger.encoding._fast", "Encoded")


#: A private module or attribute of a framework the CLI and the web pages build on.
_FRAMEWORK_PRIVATE = re.compile(r"(typer|click|rich|datasette)(\.[A-Za-z0-9]\w*)*\._[A-Za-z]")


def _framework_private_names(source: str) -> list[str]:
    """Private names of typer, click, rich or Datasette that ``source`` spells out
    without importing them: as text (``sys.modules.get("typer._click.exceptions")``)
    or as an attribute (``typer._click``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
        elif isinstance(node, ast.Attribute):
            text = ast.unparse(node)
        elif (
            isinstance(node, ast.Call)
            and ast.unparse(node.func) in ("getattr", "hasattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            text = f"{ast.unparse(node.args[0])}.{node.args[1].value}"  # getattr(typer, "_x")
        else:
            continue
        if _FRAMEWORK_PRIVATE.match(text):
            found.append(text)
    return found


def test_no_private_name_of_a_framework_is_spelled_out() -> None:
    """Reaching a private module through ``sys.modules`` or an attribute is a private
    seam as much as importing it is."""
    found = [
        f"{name}: {text}"
        for name, path in MODULES.items()
        for text in _framework_private_names(path.read_text("utf-8"))
    ]
    assert found == []


def test_the_framework_check_catches_the_known_cases() -> None:
    assert _framework_private_names('sys.modules.get("typer._click.exceptions")')
    assert _framework_private_names("x = typer._click.core")
    assert _framework_private_names('m = "rich._emoji_codes"')
    assert _framework_private_names('getattr(typer.core, "_click", None)')
    assert not _framework_private_names('sys.modules.get("typer.exceptions")')
    assert not _framework_private_names("x = typer.core.TyperGroup")


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


# -- the admission policy is a value: no module holds policy state ----------------------

#: Modules that define, compose or apply the admission policy.
POLICY_MODULES = (
    "ledger.trust.admission",
    "ledger.trust.policy",
    "ledger.trust.refusal",
    "ledger.trust.judgement",
    "ledger.trust.identity",
    "ledger.audit.replay",
    "ledger.trust.standing",
    "ledger.store.prefix",
    "cohorts.admission",
    "cohorts.standing",
    "verifiers.attestation_policy",
)
#: Calls whose result cannot be changed in place.
IMMUTABLE_CALLS = {"frozenset", "tuple", "MappingProxyType", "re.compile", "get_args", "Final"}
CACHES = {"cache", "lru_cache", "functools.cache", "functools.lru_cache", "cached_property"}


def _frozen_classes() -> set[str]:
    """Names of every ``@dataclass(frozen=True)`` class in our packages."""
    found = set()
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.ClassDef) and any(
                "frozen=True" in ast.unparse(d) for d in node.decorator_list
            ):
                found.add(node.name)
    return found


def _policy_state(source: str, frozen: set[str]) -> list[str]:
    """Mutable state a module keeps: module-level values that can change in place,
    ``global`` rebinding, memo caches, and assignments to attributes of module-level
    names (``_Installed.policy = x``)."""
    tree = ast.parse(source)
    found = []
    module_names = set()
    for node in tree.body:
        targets = []
        if isinstance(node, ast.ClassDef):
            module_names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            module_names.update((a.asname or a.name).split(".")[0] for a in node.names)
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        module_names.update(t.id for t in targets if isinstance(t, ast.Name))
        if not _immutable(value, frozen):
            found.append(f"{node.lineno}: {ast.unparse(node)[:60]}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.append(f"{node.lineno}: global {', '.join(node.names)}")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in node.decorator_list:
                name = ast.unparse(d.func if isinstance(d, ast.Call) else d)
                if name in CACHES:
                    found.append(f"{node.lineno}: @{name} {node.name}")
            for sub in ast.walk(node):
                for target in getattr(sub, "targets", [getattr(sub, "target", None)]):
                    base = target
                    while isinstance(base, ast.Attribute | ast.Subscript):
                        base = base.value
                    if (
                        target is not base
                        and isinstance(base, ast.Name)
                        and base.id in module_names
                    ):
                        found.append(f"{sub.lineno}: {ast.unparse(target)} assigned")
    return found


def _immutable(value: ast.expr, frozen: set[str]) -> bool:
    if isinstance(value, ast.Constant | ast.Name | ast.Attribute | ast.BinOp | ast.JoinedStr):
        return True
    if isinstance(value, ast.Tuple):
        return all(_immutable(e, frozen) for e in value.elts)
    if isinstance(value, ast.Subscript):  # a type alias: Literal[...], tuple[...]
        return True
    if isinstance(value, ast.Call):
        name = ast.unparse(value.func)
        return name in IMMUTABLE_CALLS or name in frozen
    return False


def test_no_module_level_mutable_policy_state() -> None:
    frozen = _frozen_classes()
    found = {
        name: state
        for name in POLICY_MODULES
        if (state := _policy_state(MODULES[name].read_text("utf-8"), frozen))
    }
    assert found == {}
    # Nothing installs a policy or looks one up from a module.
    names = {
        node.name
        for name in POLICY_MODULES
        for node in ast.walk(ast.parse(MODULES[name].read_text("utf-8")))
        if isinstance(node, ast.FunctionDef)
    }
    assert names & {"install", "current_policy"} == set()


def test_the_policy_state_check_catches_the_known_cases() -> None:
    frozen = {"Frozen"}
    assert _policy_state("class R: ...\n_REGISTRY = R()\n", frozen)
    assert _policy_state("_FACTORIES = []\n", frozen)
    assert _policy_state("_KNOWN = {'a': 1}\n", frozen)
    assert _policy_state("x = None\ndef install(p):\n    global x\n    x = p\n", frozen)
    assert _policy_state("class _I:\n    p = None\ndef f(v):\n    _I.p = v\n", frozen)
    assert _policy_state("from x import policy\ndef f(v):\n    policy.current = v\n", frozen)
    assert _policy_state("import functools\n@functools.cache\ndef load(): ...\n", frozen)
    assert not _policy_state("A = Frozen()\nB = (1, 'x')\nC = frozenset({1})\n", frozen)
    assert not _policy_state("def f(self):\n    self.x = 1\n", frozen)


# --- docs/DESIGN.md names only what exists ---------------------------------------------

DESIGN = ROOT / "docs" / "DESIGN.md"
# Names DESIGN.md may write in backticks that are not the project's (typing, builtins).
NOT_OURS = {"Any"}
TOP_DIRS = ("ledger", "verifiers", "cohorts", "schemas", "docs", "tests", "scripts")
# DESIGN.md's flows name the core's subpackages without ``ledger.``.
CORE_PACKAGES = ("store", "encoding", "schema", "log", "audit", "cli", "trust")
# ``store.x`` in DESIGN.md's snippets is a method of an open store, not ``ledger.store.x``.
STORE_CLASSES = (
    ("ledger/store/base.py", ("Store", "LedgerReader", "AuditSource")),
    ("ledger/store/sqlstore.py", ("SQLStore",)),
    ("ledger/store/sqlite.py", ("SQLiteStore",)),
)


def _binds(node: ast.AST) -> set[str]:
    """Names one statement binds: a def, a class, an assignment, an import."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Assign):
        return {t.id for t in node.targets if isinstance(t, ast.Name)}
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return {node.target.id}
    if isinstance(node, ast.ImportFrom | ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return set()


def _bound_names(body: list[ast.stmt]) -> set[str]:
    """Names a module or class body binds (inside ``if``/``try`` blocks too)."""
    names: set[str] = set()
    for node in body:
        names |= _binds(node)
        if isinstance(node, ast.If | ast.Try):
            names |= _bound_names(node.body)
    return names


def _module_file(dotted: str) -> Path | None:
    path = ROOT / dotted.replace(".", "/")
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _resolves(dotted: str) -> bool:
    """``pkg.module.name`` or ``pkg.module.Class.member``: the module exists and binds
    the name (read from the source, nothing imported)."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        file = _module_file(".".join(parts[:cut]))
        if file is not None:
            break
    else:
        return False
    rest = parts[cut:]
    body = ast.parse(file.read_text("utf-8")).body
    for name in rest:
        if name not in _bound_names(body):
            return False
        owner = next((n for n in body if isinstance(n, ast.ClassDef) and n.name == name), None)
        body = owner.body if owner is not None else []
    return True


def _store_members() -> set[str]:
    members: set[str] = set()
    for file, classes in STORE_CLASSES:
        for node in ast.parse((ROOT / file).read_text("utf-8")).body:
            if isinstance(node, ast.ClassDef) and node.name in classes:
                members |= _bound_names(node.body)
    return members


def _defined_anywhere() -> set[str]:
    """Every name a module of the three packages defines, at any depth."""
    names: set[str] = set()
    for path in MODULES.values():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if not isinstance(node, ast.ImportFrom | ast.Import):
                names |= _binds(node)
    return names


def _design_missing(text: str) -> list[str]:
    """What DESIGN.md names that does not exist: dotted names, paths, the files of its
    tree, ``store.`` methods, and names it writes as a call or a class."""
    missing: list[str] = []
    blocks = re.findall(r"```[a-z]*\n(.*?)```", text, re.S)
    spans = re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text, flags=re.S))
    store_members = _store_members()
    defined = _defined_anywhere() | NOT_OURS
    for span in [*spans, *blocks]:
        for dotted in re.findall(r"\b((?:ledger|verifiers|cohorts)(?:\.\w+)+)", span):
            if not _resolves(dotted):
                missing.append(dotted)
        for path in re.findall(rf"\b((?:{'|'.join(TOP_DIRS)})/[\w./*-]*)", span):
            if not list(ROOT.glob(path.rstrip("."))):
                missing.append(path)
    from ledger.store import postgres_schema

    source = "\n".join(path.read_text("utf-8") for path in MODULES.values())
    # Trigger names the schema builds from parts (never written whole in the source).
    source += "\n".join(name for _t, name, _op in postgres_schema.trigger_names())
    for span in spans:
        name = re.match(r"([A-Za-z_]\w*)(\(|$)", span.strip())
        if name and (name[1][0].isupper() or name[2]) and name[1] not in defined:
            missing.append(name[1])
        # A bare snake_case name (a function, a trigger, a view) is at least in the source.
        elif re.fullmatch(r"[a-z]\w*_\w*", span) and not re.search(rf"\b{span}\b", source):
            missing.append(span)
    tree, *flows = blocks
    for flow in flows:
        # The flows write the core's modules relative to ``ledger``, and open stores as ``store``.
        for name in re.findall(rf"(?<![\w.])(?:{'|'.join(CORE_PACKAGES)})(?:\.\w+)+", flow):
            first, second = name.split(".")[:2]
            if first == "store" and _module_file(f"ledger.store.{second}") is None:
                if second not in store_members:
                    missing.append(name)
            elif not _resolves(f"ledger.{name}"):
                missing.append(name)
    missing += _tree_missing(tree)
    return missing


def _tree_missing(tree: str) -> list[str]:
    """Files the layout tree lists (``dir/`` lines nest by indentation; every ``*.py`` on
    a line lives in the directory of the entry above it)."""
    missing = []
    dirs: list[tuple[int, Path]] = [(-1, ROOT)]
    for line in tree.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        while dirs[-1][0] >= indent:
            dirs.pop()
        if first.endswith("/"):
            dirs.append((indent, dirs[-1][1] / first))
            if not dirs[-1][1].is_dir():
                missing.append(str(dirs[-1][1].relative_to(ROOT)))
            continue
        for name in re.findall(r"\b\w+\.py\b", line):
            if not (dirs[-1][1] / name).is_file():
                missing.append(str((dirs[-1][1] / name).relative_to(ROOT)))
    return missing


def test_design_names_only_what_exists() -> None:
    assert _design_missing(DESIGN.read_text("utf-8")) == []


def test_the_design_check_finds_what_is_gone() -> None:
    text = DESIGN.read_text("utf-8")
    assert _design_missing(text.replace("`plan_rows`", "`plan_rows_gone`")) == ["plan_rows_gone"]
    gone = [
        "```\nledger/\n  gone.py   x\n```",
        "`ledger.cli.logcmds.set_browse_check` `ledger/store/gone.py` `StoreGone`",
        "```\n  -> store.prepared.prepare_gone(raw)\n  -> store.append_gone([])\n```",
    ]
    found = _design_missing("\n".join(gone))
    assert found == [
        "ledger.cli.logcmds.set_browse_check",
        "ledger/store/gone.py",
        "StoreGone",
        "store.prepared.prepare_gone",
        "store.append_gone",
        "ledger/gone.py",
    ], found


def test_one_spelling_of_behavioral() -> None:
    """The CLI command, the stored kind ``behavioral-evidence`` and its keys spell it so;
    code, messages and docs follow (stored example data is left as recorded)."""
    british = "behavio" + "ur"  # written in two parts so this file does not match itself
    places = [*MODULES.values(), *ROOT.glob("docs/*.md"), ROOT / "README.md"]
    places += [*ROOT.glob("schemas/*.json"), *ROOT.glob("scripts/*"), *ROOT.glob("tests/*.py")]
    found = [
        str(path.relative_to(ROOT))
        for path in places
        if path.is_file() and british in path.read_text("utf-8", "replace").lower()
    ]
    assert found == []


def _uncommented_any(source: str) -> list[int]:
    """Lines that name ``typing.Any`` (as ``Any`` or ``typing.Any``) in code, with no comment
    on the same line nor a comment line just above saying which boundary it is.

    A named alias (``Decoded = Any``) counts like any other line: its comment is said once,
    and the lines that use the alias no longer name ``Any``. Imports, prose in docstrings and
    comments do not name it in code, so they are not counted."""
    named = {
        node.lineno
        for node in ast.walk(ast.parse(source))
        if (isinstance(node, ast.Name) and node.id == "Any")
        or (isinstance(node, ast.Attribute) and ast.unparse(node) == "typing.Any")
    }
    comments = {
        token.start[0]
        for token in tokenize.generate_tokens(io.StringIO(source).readline)
        if token.type == tokenize.COMMENT
    }
    lines = source.splitlines()
    comment_lines = {n for n in comments if lines[n - 1].lstrip().startswith("#")}
    return sorted(n for n in named if n not in comments and n - 1 not in comment_lines)


def test_any_only_at_a_boundary_that_says_so() -> None:
    # ``Any`` switches the type checker off: where it stays (decoded bytes, a driver's or a
    # framework's untyped value, a third-party callback), a comment says which boundary.
    found = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in MODULES.values()
        for line in _uncommented_any(path.read_text(encoding="utf-8"))
    ]
    assert found == [], "Any with no comment naming its boundary:\n" + "\n".join(found)


def test_the_any_check_catches_an_uncommented_any() -> None:
    source = (
        "from typing import Any\n"
        "import typing\n"
        '"""Any prose is not code."""\n'
        "def f(x: Any) -> None: ...\n"  # 4: caught
        "Row = dict[str, Any]  # a driver's row\n"
        "# psycopg's connection, untyped\n"
        "Connection = Any\n"
        "y: typing.Any = 1\n"  # 8: caught
        "z: int = 1  # a comment on a line of code does not cover the next line\n"
        'v: Any = "#"\n'  # 10: caught (a # in a string is no comment)
        "w: Any = 2  # the decoder's value\n"
        "u: Any = 3\n"  # 12: caught
    )
    assert _uncommented_any(source) == [4, 8, 10, 12]
