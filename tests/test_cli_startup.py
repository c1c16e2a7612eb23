"""Start-up: what help pages and read commands load, and that the start-up shortcut
(``ledger.cli.coercion``: plain parameter values processed without pydantic, through
click's public ``process_value``) changes no output. Help pages are typer's own renderer,
as any typer app's are. Costs are measured by ``scripts/bench_start.py`` (against a
minimal typer app); nothing here is timed.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import pytest
import typer
import typer.main
from bench_corpus import write_corpus
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ledger.cli import COMMANDS, app
from ledger.cli.lazy import Lazy, LazySubgroup

ROOT = Path(__file__).resolve().parents[1]
EXE = Path(sys.executable).parent / "provledger"

#: Never needed to print help or to read: validation, signatures, typer's pydantic
#: coercion, the real click (typer carries its own). (typer's help renderer, which every
#: typer app's help page loads, brings markdown and pretty tracebacks: a read needs
#: neither, ``READ_HEAVY``.)
HEAVY = ("jsonschema", "cryptography", "pydantic", "click")
READ_HEAVY = (*HEAVY, "rich.markdown", "rich.traceback", "markdown_it", "pygments")

# Modules only appending needs (``ledger.store.prepared`` and what it loads).
WRITE_PATH = {
    "ledger.store.prepared",
    "ledger.schema.validation",
    "ledger.schema._compiled",
    "ledger.schema.loader",
    "ledger.store.bulk",
}


def _entries(
    table: Mapping[str, Lazy | LazySubgroup], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], Lazy]]:
    for name, entry in table.items():
        if isinstance(entry, LazySubgroup):
            yield from _entries(entry.commands, (*prefix, name))
        else:
            yield (*prefix, name), entry


ENTRIES = list(_entries(COMMANDS))
COMMAND_MODULES = sorted({entry.target.partition(":")[0] for _, entry in ENTRIES})


def _module_of(path: tuple[str, ...]) -> str:
    return dict(ENTRIES)[path].target.partition(":")[0]


def _loaded(args: list[str], cwd: Path = ROOT) -> tuple[set[str], str]:
    """Run ``provledger ARGS`` in a fresh interpreter: the modules it loaded, its stdout."""
    code = (
        "import sys\n"
        f"sys.argv = ['provledger', *{args!r}]\n"
        "from ledger.cli import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    code = exc.code\nelse:\n    code = 0\n"
        "modules = sorted(sys.modules)\n"
        "import json\n"
        "sys.stderr.write('\\nMODULES ' + json.dumps([code, modules]))\n"
    )
    env = {**os.environ, "COLUMNS": "100"}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, env=env
    )
    status, modules = json.loads(proc.stderr.rpartition("\nMODULES ")[2])
    assert status == 0, proc.stderr
    return set(modules), proc.stdout


def _heavy(modules: set[str], heavy: tuple[str, ...] = HEAVY) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in heavy))


def test_root_help_loads_no_heavy_module_and_no_command_module() -> None:
    modules, out = _loaded(["--help"])
    assert "Commands" in out
    assert _heavy(modules) == []
    assert sorted(set(COMMAND_MODULES) & modules) == []
    assert sorted(m for m in modules if m.split(".")[0] in ("cohorts", "verifiers")) == []
    assert "json" not in modules


@functools.cache
def _imports_of(module: str) -> frozenset[str]:
    """The command modules that importing ``module`` alone loads (itself included)."""
    code = f"import json, sys\nimport {module}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True
    ).stdout
    return frozenset(set(json.loads(out)) & set(COMMAND_MODULES))


@pytest.mark.parametrize("path", [path for path, _ in ENTRIES], ids=" ".join)
def test_command_help_loads_its_own_module_only(path: tuple[str, ...]) -> None:
    modules, out = _loaded([*path, "--help"])
    assert "Usage:" in out
    assert _heavy(modules) == []
    own = _module_of(path)
    assert own in modules
    assert set(COMMAND_MODULES) & modules == _imports_of(own)
    # IDKMesh's plug-ins are installed when a command runs, not for its help page.
    assert "ledger.trust.admission" not in modules
    # Nor is anything a command needs only once it runs: json, the store, the log.
    needed_later = sorted(
        m for m in modules if m == "json" or m.startswith(("ledger.store", "ledger.log"))
    )
    assert needed_later == ["ledger.store", "ledger.store.location"]


@pytest.fixture(scope="module")
def small_ledger(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A ledger of 30 benchmark-corpus objects and the digest of a VerificationResult."""
    from ledger.store.sqlite import open_store
    from ledger.trust.keys import Ed25519Signer

    work = tmp_path_factory.mktemp("startup")
    db = work / "ledger.db"
    runner = CliRunner()
    assert runner.invoke(app, ["init", "--db", str(db)]).exit_code == 0
    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    write_corpus(work / "corpus.jsonl", 30, 7, signer)
    result = runner.invoke(app, ["import", "jsonl", str(work / "corpus.jsonl"), "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert runner.invoke(app, ["checkpoint", "--db", str(db)]).exit_code == 0
    with open_store(db, readonly=True) as store:
        digest = next(o.digest for o in store.by_kind("verification-result"))
    return db, digest


@pytest.mark.parametrize(
    "args",
    [
        ["show", "{digest}"],
        ["show", "{digest}", "--json"],
        ["proof", "inclusion", "{digest}"],
        ["stats"],
        ["proof", "consistency", "3", "30"],
    ],
    ids=" ".join,
)
def test_read_commands_load_no_heavy_module(
    small_ledger: tuple[Path, str], args: list[str]
) -> None:
    db, digest = small_ledger
    modules, out = _loaded([a.format(digest=digest) for a in args] + ["--db", str(db)])
    assert out
    assert _heavy(modules, READ_HEAVY) == []
    # Nor the write path: preparing objects loads the schema checks (generated code
    # compiled per schema) and the canonical encoder's fast paths.
    assert sorted(modules & WRITE_PATH) == []


def test_idkmesh_notes_come_from_the_plugin_when_show_runs(small_ledger: tuple[Path, str]) -> None:
    # The installed entry point, a fresh process: only the CLI's own set-up installs the
    # VerificationResult note (its stand-in imports cohorts when `show` calls it).
    db, digest = small_ledger
    out = subprocess.run(
        [EXE, "show", digest, "--db", str(db)], capture_output=True, text=True, check=True
    ).stdout
    assert any(line.startswith("note") and "verdict" in line for line in out.splitlines())
    shown = subprocess.run(
        [EXE, "show", digest, "--db", str(db), "--json"], capture_output=True, text=True
    )
    assert any("verdict" in note for note in json.loads(shown.stdout)["notes"])


# -- plain coercion is typer's coercion ------------------------------------------------

_probe = typer.Typer()


@_probe.command()
def _probe_command(
    text: Annotated[str, typer.Option("--text")] = "",
    count: Annotated[int | None, typer.Option("--count")] = None,
    bounded: Annotated[int | None, typer.Option("--bounded", min=1, max=50)] = None,
    path: Annotated[Path | None, typer.Option("--path")] = None,
    existing: Annotated[
        Path | None, typer.Option("--existing", exists=True, dir_okay=False, resolve_path=True)
    ] = None,
    many: Annotated[list[str] | None, typer.Option("--many")] = None,
    flag: Annotated[bool, typer.Option("--flag")] = False,
) -> None:
    pass


def _outcome(process: Any, ctx: Any, value: Any) -> tuple[str, Any]:
    try:
        return ("value", process(ctx, value))
    except Exception as exc:
        return ("error", (type(exc).__name__, str(getattr(exc, "message", exc))))


def _pairs() -> dict[str, tuple[Any, Any, Any, Any]]:
    """Parameter name -> (param, a context, the CLI's process_value, typer's own)."""
    from ledger.cli.coercion import fast_coercion

    command = typer.main.get_command(_probe)
    typers = {p.name: p for p in typer.main.get_command(_probe).params}  # left as typer made them
    fast_coercion(command.params)
    ctx = typer.Context(command)  # type: ignore[arg-type]
    pairs = {}
    for param in command.params:
        if param.name in {"install_completion", "show_completion"}:
            continue
        # The shortcut is in force (the flag's own process_value keeps bools as they are).
        assert type(param.process_value).__name__ == "PlainValues", param.name
        pairs[param.name] = (param, ctx, param.process_value, typers[param.name].process_value)
    return pairs


PAIRS = _pairs()

_values = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="0123456789-+_ .e\u0663", max_size=8),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.integers(min_value=-100, max_value=100),
    st.booleans(),
    st.none(),
)


@settings(max_examples=400, deadline=None)
@given(name=st.sampled_from(sorted(PAIRS)), value=_values)
def test_plain_coercion_gives_typers_value_or_typers_refusal(name: str, value: Any) -> None:
    param, ctx, plain, own = PAIRS[name]
    if param.multiple:
        value = () if value is None else (value,) if not isinstance(value, str) else (value, value)
    assert _outcome(plain, ctx, value) == _outcome(own, ctx, value)


def test_plain_coercion_checks_paths_as_typer_does(tmp_path: Path) -> None:
    _param, ctx, plain, own = PAIRS["existing"]
    file = tmp_path / "f.txt"
    file.write_text("x")
    for value in (str(file), str(tmp_path), str(tmp_path / "missing"), "", str(file) + "/"):
        assert _outcome(plain, ctx, value) == _outcome(own, ctx, value), value
    assert _outcome(plain, ctx, str(file)) == ("value", file.resolve())


def test_the_cli_parameters_use_plain_coercion() -> None:
    from ledger.cli.coercion import PlainValues, fast_coercion

    root = typer.main.get_command(app)
    log = root.get_command(typer.Context(root, info_name="provledger"), "log")  # type: ignore[attr-defined]
    plain = {p.name for p in log.params if isinstance(p.process_value, PlainValues)}
    assert {"db", "limit", "since", "json_out"} <= plain
    before = {p.name: p.process_value for p in log.params}
    fast_coercion(log.params)  # idempotent: parameters already given one are left alone
    assert {p.name: p.process_value for p in log.params} == before


def test_a_changed_typer_seam_falls_back_to_typers_own_coercion() -> None:
    # A future typer whose parameters are of another shape must cost start-up time,
    # not correctness: such parameters are left to typer.
    from types import SimpleNamespace

    from ledger.cli import coercion

    def own(ctx: Any, value: Any) -> Any:
        return value

    no_descriptor = SimpleNamespace(process_value=own)
    reshaped = SimpleNamespace(
        type_descriptor=SimpleNamespace(annotation=str),  # no parameter_info
        process_value=own,
    )
    no_attributes = SimpleNamespace(
        type_descriptor=PAIRS["text"][0].type_descriptor, process_value=own
    )  # no multiple, nargs...
    coercion.fast_coercion([no_descriptor, reshaped, no_attributes])
    assert no_descriptor.process_value is own and reshaped.process_value is own
    assert no_attributes.process_value is own


def test_a_value_plain_coercion_leaves_to_typer_gets_typers_refusal() -> None:
    param, ctx, plain, own = PAIRS["count"]
    assert _outcome(plain, ctx, "0x10") == _outcome(own, ctx, "0x10")
    assert _outcome(plain, ctx, "0x10")[0] == "error"  # typer's refusal, typer's words
    assert param.process_value is plain


def test_the_seam_uses_no_private_name() -> None:
    """ledger.cli.coercion reads only public names of typer's and click's objects."""
    import ast

    source = (ROOT / "ledger" / "cli" / "coercion.py").read_text("utf-8")
    private = [
        node.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
    ]
    strings = [
        node.value
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("_")
        and not node.value.startswith("__")
    ]
    assert private == [] and strings == []


def test_errors_of_modules_imported_late_still_map_to_their_exit_codes() -> None:
    # ProvGroup names sqlite3.Error and click's exceptions only once they are imported;
    # an error raised by a command that imported sqlite3 itself is still exit 3.
    from ledger.cli.common import new_app

    probe = new_app("probe")

    @probe.command()
    def broken() -> None:
        import sqlite3

        raise sqlite3.OperationalError("disk I/O error")

    @probe.command()
    def fine() -> None:
        pass

    result = CliRunner().invoke(probe, ["broken"])
    assert result.exit_code == 3
    assert (
        result.stderr == "error: database error, got 'disk I/O error', expected a usable ledger\n"
    )
    usage = CliRunner().invoke(probe, ["fine", "--no-such-option"])
    assert usage.exit_code == 2 and "no such option" in usage.output
    assert usage.output.startswith("error: ") and len(usage.output.splitlines()) == 1


# -- sub-apps build only the command that runs ------------------------------------------


def _shape(value: Any, depth: int = 0) -> Any:
    """A comparable picture of a click object: its attributes, callables by name."""
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if isinstance(value, (list, tuple)):
        return [_shape(v, depth) for v in value]
    if isinstance(value, dict):
        return {k: _shape(v, depth) for k, v in value.items()}
    if (callable(value) and not hasattr(value, "__dict__")) or isinstance(value, type):
        return getattr(value, "__qualname__", repr(value))
    if depth > 3 or not hasattr(value, "__dict__"):
        return type(value).__qualname__
    if callable(value) and hasattr(value, "__wrapped__"):
        return "wraps " + value.__wrapped__.__qualname__
    if callable(value) and not hasattr(value, "params"):
        return getattr(value, "__qualname__", type(value).__qualname__)
    fields = {k: v for k, v in vars(value).items() if k != "commands"}
    return {"type": type(value).__qualname__} | {
        k: _shape(v, depth + 1) for k, v in sorted(fields.items())
    }


def _target(entry: Lazy) -> Any:
    module, _, attr = entry.target.partition(":")
    return getattr(importlib.import_module(module), attr)


SUB_APPS = [path for path, entry in ENTRIES if isinstance(_target(entry), typer.Typer)]


@pytest.mark.parametrize("path", SUB_APPS, ids=" ".join)
def test_a_lazy_sub_app_group_is_typers_group(path: tuple[str, ...]) -> None:
    from ledger.cli.lazy import LazyCommands, typer_group

    sub_app = _target(dict(ENTRIES)[path])
    lazy, own = typer_group(sub_app), typer.main.get_group(sub_app)
    assert isinstance(lazy.commands, LazyCommands)
    assert list(lazy.commands) == list(own.commands) and len(lazy.commands) > 0
    assert _shape(lazy) == _shape(own)
    first = next(iter(lazy.commands))
    assert first in lazy.commands and "no-such" not in lazy.commands
    assert lazy.commands._built == {}  # names alone build nothing
    assert _shape(lazy.commands[first]) == _shape(own.commands[first])
    assert list(lazy.commands._built) == [first]  # reading one builds that one
    for name in own.commands:
        assert _shape(lazy.commands.get(name)) == _shape(own.commands[name]), name
    assert lazy.commands.get("no-such") is None


def test_lazy_commands_is_a_mutable_mapping() -> None:
    from ledger.cli.lazy import LazyCommands

    built: list[str] = []

    def maker(name: str) -> Any:
        return lambda: built.append(name) or f"<{name}>"

    commands = LazyCommands({"a": maker("a"), "b": maker("b")})
    commands["c"] = "<c>"
    commands["a"] = "<a2>"  # replacing keeps the place
    assert list(commands) == ["a", "b", "c"] and len(commands) == 3
    assert dict(commands.items()) == {"a": "<a2>", "b": "<b>", "c": "<c>"}
    assert built == ["b"]
    del commands["b"]
    assert list(commands) == ["a", "c"] and "b" not in commands
    with pytest.raises(KeyError):
        del commands["b"]
    with pytest.raises(KeyError):
        commands["b"]


# -- the garbage collector is paused for start-up only ----------------------------------

_GC_PROBE = """
import contextlib, gc, io, json, sys
{before}
import ledger.cli, typer.core
seen = {{}}


def command_probe():
    seen["command runs"] = gc.isenabled()


# Run last of what runs once a command is about to run (the list is popped from its end).
ledger.cli._BEFORE_COMMAND.insert(0, command_probe)
for cls in (typer.core.TyperCommand, typer.core.TyperGroup):
    def help_probe(self, ctx, formatter, _own=cls.format_help):
        seen["help renders"] = gc.isenabled()
        return _own(self, ctx, formatter)
    cls.format_help = help_probe
sys.argv = ["provledger", *json.loads(sys.argv[1])]
from ledger.entry import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        main()
    except SystemExit as exc:
        seen["exit"] = exc.code
seen["at exit"] = gc.isenabled()
print(json.dumps(seen, sort_keys=True))
"""


def _gc_seen(args: list[str], before: str = "") -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _GC_PROBE.format(before=before), json.dumps(args)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout
    seen: dict[str, Any] = json.loads(out)
    return seen


def test_the_collector_is_paused_for_a_help_page_and_resumed_for_a_command(
    tmp_path: Path,
) -> None:
    missing = str(tmp_path / "missing.db")
    assert _gc_seen(["verify", "--help"]) == {
        "help renders": False,
        "exit": 0,
        "at exit": False,
    }
    assert _gc_seen(["cohort", "--help"])["help renders"] is False
    assert _gc_seen(["stats", "--db", missing]) == {
        "command runs": True,
        "exit": 3,
        "at exit": True,
    }
    # A collector the caller disabled stays disabled.
    assert _gc_seen(["stats", "--db", missing], before="import gc; gc.disable()") == {
        "command runs": False,
        "exit": 3,
        "at exit": False,
    }


def test_the_console_script_is_the_entry_module() -> None:
    from importlib.metadata import entry_points

    [script] = entry_points(group="console_scripts", name="provledger")
    assert script.value == "ledger.entry:main"
    out = subprocess.run(
        [sys.executable, "-m", "ledger", "--version"], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0 and out.stdout.startswith("provledger ")


# -- patterns compiled on first use are the same patterns -------------------------------


@settings(max_examples=300, deadline=None)
@given(
    text=st.one_of(
        st.text(),
        st.lists(st.sampled_from(["a", "\u00e9", "\ud800", "\udfff", "\udc80", '"', "\\"])).map(
            "".join
        ),
    )
)
def test_surrogate_escaping_is_the_compiled_patterns(text: str) -> None:
    import re

    from ledger.cli.common import json_escape_surrogates

    compiled = re.compile("[\ud800-\udfff]")
    expected = text if text.isascii() else compiled.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    assert json_escape_surrogates(text) == expected


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.integers(-(10**20), 10**20).map(str), st.text(max_size=8)))
def test_plain_integer_spelling_is_the_compiled_patterns(value: str) -> None:
    import re

    from ledger.cli.coercion import _PLAIN_INT

    compiled = re.compile(r"-?(?:0|[1-9][0-9]{0,17})\Z")
    assert bool(re.match(_PLAIN_INT, value)) == bool(compiled.match(value))
