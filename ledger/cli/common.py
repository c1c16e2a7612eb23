"""Shared CLI plumbing: the one place errors become exit codes, options, output.

Exit codes: 0 ok; 1 a check found a problem; 2 usage; 3 bad input or not found;
4 refused by ledger rules; 70 internal error (a bug: any other exception).
``ProvGroup.invoke`` is the one handler: every ``LedgerError`` exits with its class's
``exit_code`` and prints one line ``error: ...`` on stderr (a ``Reported`` outcome prints
nothing more: the command already did); ``PROVLEDGER_DEBUG=1`` re-raises an internal
error so its traceback is shown.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import Console
from typer.core import TyperGroup

from ledger.cli.coercion import fast_coercion
from ledger.errors import LedgerError, Reported
from ledger.store.location import DbLocation, SQLitePath, parse_location

INTERNAL_ERROR = 70  # EX_SOFTWARE (sysexits.h)


def fail_line(message: str) -> str:
    """One-line error text: newlines folded so stderr stays one line per error.

    Undecodable bytes in the message (a non-UTF-8 file name) become ``\\xNN`` escapes,
    so reporting an error never fails itself.
    """
    from ledger.files import safe_text

    return "error: " + " ".join(safe_text(message).split())


#: click's objects as typer builds them (a context, a command, a parameter list, an
#: exception). typer 0.2x runs on its own copy of click, shipped as a private module, so
#: they are named here by role and used through click's documented attributes only.
Context = Any
Command = Any  # (as above)
Params = Any  # (as above)


def _sqlite_errors() -> tuple[type[BaseException], ...]:
    """``sqlite3.Error`` once sqlite3 is loaded (an ``except`` clause evaluates this only
    when an exception reaches it; before sqlite3 is imported none of its errors exist)."""
    sqlite3 = sys.modules.get("sqlite3")
    return () if sqlite3 is None else (sqlite3.Error,)


def _framework_exceptions() -> tuple[type[BaseException], ...]:
    """Exceptions click and typer use for control flow (usage errors, exits, aborts).
    typer may carry its own copy of click, whose exceptions derive from typer's public
    ``TyperException``: the public modules name them all.

    Only modules already imported are looked at: an exception of a module that was
    never imported cannot have been raised (and importing click costs start-up time).
    """
    found: list[type[BaseException]] = []
    for module_name in ("click.exceptions", "typer.exceptions"):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name in ("ClickException", "TyperException", "Exit", "Abort"):
            cls = getattr(module, name, None)
            if isinstance(cls, type) and issubclass(cls, BaseException):
                found.append(cls)
    return tuple(found)


def _usage_exceptions() -> tuple[tuple[type[BaseException], ...], type[BaseException]]:
    """(the exceptions click raises for a usage error, the ``Abort`` typer raises), named
    through public modules: typer 0.2x runs on its own copy of click, whose exceptions
    derive from ``typer.exceptions.TyperException``; an older typer runs on click."""
    from typer.exceptions import Abort, TyperException

    errors: list[type[BaseException]] = [TyperException]
    click = sys.modules.get("click.exceptions")
    if click is not None:
        errors.append(click.ClickException)
    return tuple(errors), Abort


def usage_line(exc: Any) -> str:  # click's usage error
    """A click usage error as one ``error:`` line naming the command, what was wrong and
    the command's usage (``provledger log --bogus``: ``error: provledger log: no such
    option: --bogus (usage: provledger log [OPTIONS]; -h for help)``)."""
    message = " ".join(str(exc.format_message()).split()).rstrip(".")
    message = message[:1].lower() + message[1:]
    ctx = getattr(exc, "ctx", None)
    if ctx is None:
        return fail_line(message)
    usage = " ".join(ctx.get_usage().split())
    usage = usage.removeprefix("Usage:").strip()
    return fail_line(f"{ctx.command_path}: {message} (usage: {usage}; -h for help)")


class ProvGroup(TyperGroup):
    """Command group mapping every ``LedgerError`` to its exit code.

    Help text is tidied here, once for every command: value types are shown as
    TEXT / PATH / INTEGER (never Python type names), flags show no type, and each
    command's help ends with its example from ``ledger.cli.examples``.
    """

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,  # click's own signature: keyword arguments and result untyped there
    ) -> Any:  # (as above)
        """Run the command line; a usage error (unknown command or option, bad or missing
        value) is one line ``error: ...`` on stderr, exit 2, like every other error.

        click and typer would draw a usage banner and a framed message over several
        lines; parsing happens before ``invoke``, so it is mapped here, around it.
        """
        run = functools.partial(
            super().main,
            args,
            prog_name,
            complete_var,
            standalone_mode=False,
            windows_expand_args=windows_expand_args,
            **extra,
        )
        if not standalone_mode:
            return run()
        errors, abort = _usage_exceptions()
        try:
            code = run()
        except errors as exc:
            # A group run without a subcommand has printed its help page already: typer's
            # renderer prints it, so the error carries no text of its own.
            if str(getattr(exc, "format_message", str)()).strip():
                typer.echo(usage_line(exc), err=True)
            sys.exit(getattr(exc, "exit_code", 2))
        except abort:
            typer.echo(fail_line("aborted, got end of input, expected an answer"), err=True)
            sys.exit(1)
        # Without standalone mode click returns the exit code of an ``Exit`` (a command's
        # own return value is None: none of ours returns one).
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: Context) -> Any:  # what the command returns
        try:
            return super().invoke(ctx)
        except LedgerError as exc:
            if not isinstance(exc, Reported):
                typer.echo(fail_line(str(exc)), err=True)
            ctx.exit(exc.exit_code)
        except _sqlite_errors() as exc:
            typer.echo(
                fail_line(f"database error, got '{exc}', expected a usable ledger"), err=True
            )
            ctx.exit(3)
        except BrokenPipeError:
            # The reader stopped reading (`provledger log | head`): it has what it wanted,
            # which is no error of ours: quiet, exit 0 (as `yes | head` ends for the user).
            stdout_closed()
            ctx.exit(0)
        except OSError as exc:
            what = "output" if exc.filename is None else os.fsdecode(exc.filename)
            typer.echo(
                fail_line(f"cannot use {what}, got '{exc.strerror or exc}', expected success"),
                err=True,
            )
            ctx.exit(3)
        except _framework_exceptions():
            raise  # usage errors and explicit exits keep click's and typer's own handling
        except Exception as exc:  # the one place a bug becomes exit 70
            if os.environ.get("PROVLEDGER_DEBUG") == "1":
                raise
            if type(exc).__module__.startswith("psycopg"):
                # A server error the PostgreSQL store did not name (it names the ones it
                # expects): like sqlite3.Error above, without importing the optional driver.
                text = " ".join(str(exc).split())
                typer.echo(
                    fail_line(f"database error, got '{text}', expected a usable ledger"), err=True
                )
                ctx.exit(3)
            typer.echo(
                fail_line(
                    f"internal error, got {type(exc).__name__}: {exc}, expected none"
                    " (a bug; PROVLEDGER_DEBUG=1 shows the traceback)"
                ),
                err=True,
            )
            ctx.exit(INTERNAL_ERROR)
        finally:
            restore_db_env(ctx)
        return None

    def get_params(self, ctx: Context) -> Params:
        return _prepared(super().get_params(ctx))

    def get_command(self, ctx: Context, cmd_name: str) -> Command:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None and not getattr(cmd, "_provledger_tidy", False):
            from ledger.cli.examples import example_for

            _prepared(cmd.params)
            if not isinstance(cmd, TyperGroup):
                own = cmd.get_params
                # The help option is made per context: tidy it as it is made.
                setattr(cmd, "get_params", lambda c: _prepared(own(c)))  # noqa: B010
                setattr(cmd, "invoke", _after_setup(cmd.invoke))  # noqa: B010
            path = [*ctx.command_path.split()[1:], cmd_name]
            example = example_for(" ".join(path))
            text = reflow(cmd.help or "")
            if example is not None and not isinstance(cmd, TyperGroup):
                text = text.rstrip() + f"\n\nExample: {example}"
            cmd.help = text
            cmd._provledger_tidy = True  # type: ignore[attr-defined]
        return cmd


def stdout_closed() -> None:
    """The reader of stdout went away: send what is still buffered, and anything written
    later, to /dev/null, so neither this process nor its exit complains."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)


_SETUP = "provledger.setup"


def setup_before_commands(ctx: Context, setup: Callable[[], None]) -> None:
    """Run ``setup`` once a command is about to run, in this invocation only.

    A command runs after every argument of every level is parsed, so ``--help`` and
    usage errors never pay for it (the composition root's plug-ins install here).
    """
    ctx.meta[_SETUP] = setup  # click shares ``meta`` with every sub-context


def _after_setup(invoke: Callable[[Context], object]) -> Callable[[Context], object]:
    def run(ctx: Context) -> object:
        setup = ctx.meta.pop(_SETUP, None)
        if setup is not None:
            setup()
        return invoke(ctx)

    return run


DB_ENV = "PROVLEDGER_DB"
_SAVED_ENV = "provledger.saved_db_env"


def set_db_env(ctx: Context, db: DbLocation) -> None:
    """The global ``--db`` (before the subcommand): every command's ``--db`` default.

    Set through ``PROVLEDGER_DB`` for this invocation only; ``--db`` after the
    subcommand still wins. Restored when the invocation ends (``restore_db_env``).
    """
    ctx.meta[_SAVED_ENV] = (os.environ.get(DB_ENV),)
    os.environ[DB_ENV] = db.arg


def restore_db_env(ctx: Context) -> None:
    saved = ctx.meta.pop(_SAVED_ENV, None)
    if saved is None:
        return
    if saved[0] is None:
        os.environ.pop(DB_ENV, None)
    else:
        os.environ[DB_ENV] = saved[0]


def reflow(text: str) -> str:
    """Join the lines of each paragraph (docstring line breaks are not layout)."""
    paragraphs = [" ".join(p.split()) for p in text.strip().split("\n\n")]
    return "\n\n".join(p for p in paragraphs if p)


def _no_type(ctx: Context) -> None:
    return None


def _type_name(annotation: Any, desc: Any) -> str:  # typer's parameter info, untyped
    if desc.is_choice:
        return "[" + "|".join(str(c) for c in desc.choices or ()) + "]"
    if desc.is_path:
        return "PATH"
    inner = annotation
    if desc.is_list:
        args = getattr(annotation, "__args__", ())
        inner = args[0] if args else str
    if inner is int or desc.is_ranged:
        return "INTEGER"
    if inner is float:
        return "NUMBER"
    if inner is bool:
        return "BOOLEAN"
    return "TEXT"


def _prepared(params: Params) -> Params:
    """Tidy metavars, and coerce plain-typed values without pydantic (``ledger.cli.coercion``)."""
    fast_coercion(params)
    return tidy_params(params)


def tidy_params(params: Params) -> Params:
    """Give every parameter a plain metavar (TEXT, PATH, INTEGER...; none for flags)."""
    for param in params:
        if getattr(param, "param_type_name", "") == "argument":
            setattr(param, "display_type_rich", _no_type)  # noqa: B010
        if getattr(param, "metavar", None) is not None:
            continue
        if getattr(param, "is_flag", False):
            param.metavar = ""
            continue
        desc = getattr(param, "type_descriptor", None)
        if desc is None:
            continue
        if getattr(param, "param_type_name", "") == "argument":
            param.metavar = (param.name or "value").upper()
            # The argument's name already says what it is; no Python type beside it.
            setattr(param, "display_type_rich", _no_type)  # noqa: B010
            continue
        param.metavar = _type_name(desc.annotation, desc)
    return params


def new_app(help_text: str) -> typer.Typer:
    """A typer app with the project's settings (no completion, no locals in tracebacks)."""
    return typer.Typer(
        help=help_text,
        cls=ProvGroup,
        add_completion=False,
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
    )


DbOption = Annotated[
    DbLocation,
    typer.Option(
        "--db",
        envvar="PROVLEDGER_DB",
        parser=parse_location,
        help="Ledger file, or a postgresql:// URL (default ./ledger.db, or $PROVLEDGER_DB).",
        show_default=False,
    ),
]
#: Every command's ``--db`` default: ``./ledger.db`` (``PROVLEDGER_DB`` wins over it).
DEFAULT_DB: DbLocation = SQLitePath(Path("ledger.db"))
JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout.")]
DryRunOption = Annotated[
    bool,
    typer.Option(
        "--dry-run",
        help="Run every check and print what would be written; write nothing (same exit code).",
    ),
]


def dry_run_note(dry_run: bool) -> None:
    """On a dry run, say on stderr that nothing was written (stdout stays parseable)."""
    if dry_run:
        typer.echo("dry run: nothing written", err=True)


def emit_json(value: object) -> None:
    """Print JSON with sorted keys: the documented, stable output form.

    The output is always UTF-8. Text read from a damaged ledger may hold lone surrogates
    (undecodable bytes); they are written as ``\\uDCxx`` escapes, which read back as the
    same string, instead of as raw bytes that are not UTF-8.
    """
    import json

    text = json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)
    sys.stdout.write(json_escape_surrogates(text) + "\n")


#: ``emit_json_rows`` writes (and flushes) its first rows after this many, then in batches.
JSON_FIRST_ROWS = 64
JSON_BATCH_ROWS = 2000


def emit_json_rows(rows: Iterable[Mapping[str, object]]) -> None:
    """Print a JSON array of objects as ``emit_json`` would, written as the rows come.

    The text is exactly ``emit_json(list(rows))``'s (indent 2, sorted keys), so a reader
    cannot tell streamed output from the other; the first ``JSON_FIRST_ROWS`` rows are
    flushed at once (the first line of a long listing does not wait for the last), then
    every ``JSON_BATCH_ROWS``: no more rows are read than are about to be written. A row
    of plain members (str, int, bool, None) is written by the C string encoder, without
    the pure-Python indenting encoder ``indent`` selects.
    """
    import itertools

    iterator = iter(rows)
    head = list(itertools.islice(iterator, JSON_FIRST_ROWS))
    if not head:
        sys.stdout.write("[]\n")
        return
    sys.stdout.write("[\n")
    chunk, separator = head, ""
    while chunk:
        text = separator + ",\n".join(_json_row(row) for row in chunk)
        sys.stdout.write(json_escape_surrogates(text))
        sys.stdout.flush()
        separator = ",\n"
        chunk = list(itertools.islice(iterator, JSON_BATCH_ROWS))
    sys.stdout.write("\n]\n")


def _json_row(row: Mapping[str, object]) -> str:
    """One member of a JSON array as ``json.dumps(array, indent=2, sort_keys=True,
    ensure_ascii=False)`` writes it (surrogates not yet escaped)."""
    import json
    import json.encoder

    members: list[str] = []
    for key in sorted(row):
        value = row[key]
        if value is None:
            text = "null"
        elif value is True or value is False:
            text = "true" if value else "false"
        elif isinstance(value, str):
            text = json.encoder.encode_basestring(value)
        elif type(value) is int:
            text = int.__repr__(value)
        else:
            members = []
            break
        members.append(f"    {json.encoder.encode_basestring(key)}: {text}")
    if not members:  # an empty object, or a member that is not plain: the encoder's text
        whole = json.dumps(row, indent=2, sort_keys=True, ensure_ascii=False)
        return "\n".join("  " + line for line in whole.split("\n"))
    return "  {\n" + ",\n".join(members) + "\n  }"


_SURROGATE = "[\ud800-\udfff]"  # compiled by ``re`` when first used (and cached there)


def json_escape_surrogates(text: str) -> str:
    """JSON text with every lone surrogate (only possible inside its strings) escaped."""
    if text.isascii():
        return text
    return re.sub(_SURROGATE, lambda m: f"\\u{ord(m.group()):04x}", text)


def interactive() -> bool:
    """True when progress may be drawn (stderr is a terminal)."""
    return sys.stderr.isatty() and os.environ.get("PROVLEDGER_NO_PROGRESS") is None


@contextmanager
def progress(
    total: int | None, label: str, enabled: bool = True, unit: str = "objects"
) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; draws a rich bar only on a terminal and when enabled.

    ``unit`` "bytes" shows MB done / total and MB/s; any other unit shows
    ``done/total <unit>`` and ``<unit>/s``.
    """
    if not (enabled and interactive()):
        yield lambda _n: None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        Task,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )
    from rich.text import Text

    class Rate(ProgressColumn):
        def render(self, task: Task) -> Text:
            speed = task.finished_speed or task.speed
            return Text(f"{speed:,.0f} {unit}/s" if speed else f"- {unit}/s")

    columns: list[ProgressColumn] = [TextColumn(label), BarColumn()]
    if unit == "bytes":
        columns += [DownloadColumn(), TransferSpeedColumn()]
    else:
        columns += [MofNCompleteColumn(), TextColumn(unit), Rate()]
    with Progress(
        *columns,
        TimeRemainingColumn(),
        transient=True,
        console=_stderr_console(),
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def _stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


#: Width used when stdout is not a terminal: wide enough that no value is ever wrapped
#: or cut (rich otherwise assumes 80 columns and truncates table cells).
PIPE_WIDTH = 1_000_000


def console() -> Console:
    """A rich console on stdout for human output.

    Markup is off: every string printed is shown as it is, so user text can never be
    read as markup (styled output builds ``rich.text.Text`` explicitly, escaping user
    text). Not a terminal: no colour, no wrapping, no truncation (a huge width).
    """
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich would exit 1; a reader that stopped reading is no failure (``ProvGroup``).
            self.quiet = True
            raise BrokenPipeError

    if sys.stdout.isatty():
        return _Console(highlight=False, soft_wrap=True, markup=False)
    return _Console(highlight=False, soft_wrap=True, width=PIPE_WIDTH, no_color=True, markup=False)


def plain_lines(lines: Iterable[str]) -> None:
    """Write text lines as they are: no markup, no wrapping, nothing cut."""
    sys.stdout.write("".join(line + "\n" for line in lines))


def table(headers: Sequence[str], rows: Iterable[Sequence[str]]) -> None:
    """A table of plain strings, every cell whole (``ledger.cli.tables``): folded on a
    terminal, one line per row on a pipe; never read as markup."""
    from ledger.cli.tables import stream_table

    stream_table(headers, [rows], streamed=False)


def read_verifier_key(value: str, origin: Callable[[], str | None] | None = None) -> str:
    """A signed-note verifier key given inline, or as the path of a file holding it.

    A path that exists must be a regular UTF-8 text file of at most ``KEY_LIMIT`` bytes
    (a FIFO, device, directory or binary file is refused with exit 3); anything else is
    taken as the key itself. The file may also be the PEM public key ``init`` writes
    beside the log key (``<db>.log.key.pub``): a verifier key is the log's name plus its
    public key, so the name is then ``origin()`` (the log the key is to check: the
    ledger's, or the checkpoint's in a bundle). Signatures must still verify under the
    given public key; only the name is taken from what is checked. Without ``origin``
    (a witness has no ledger to ask), the name is the origin of the SQLite ledger the
    file was written beside (``<db>`` for ``<db>.log.key.pub``).
    """
    from ledger.bounded import KEY_LIMIT
    from ledger.files import read_text_file

    path = Path(value)
    text = (
        read_text_file(path, "verifier key", KEY_LIMIT).strip()
        if os.path.lexists(path)
        else value.strip()
    )
    if not text.startswith("-----BEGIN"):
        return text
    from ledger.errors import InputError
    from ledger.log.note import verifier_key
    from ledger.trust.keys import load_public_key

    name = origin() if origin is not None else _origin_beside(path)
    if not name:
        raise InputError(
            f"verifier key {value}, got a PEM public key and no log origin to name it with,"
            " expected the verifier key `provledger init` printed (name+keyid+key) or the"
            " <db>.log.key.pub file beside its ledger <db>"
        )
    return verifier_key(name, load_public_key(text))


LOG_KEY_PUB = ".log.key.pub"


def _origin_beside(path: Path) -> str | None:
    """The origin of the SQLite ledger ``<db>`` that ``init`` wrote ``path`` (named
    ``<db>.log.key.pub``) beside; None when there is none."""
    if not path.name.endswith(LOG_KEY_PUB) or path.name == LOG_KEY_PUB:
        return None
    db = path.with_name(path.name[: -len(LOG_KEY_PUB)])
    return ledger_origin(SQLitePath(db)) if db.is_file() else None


def ledger_origin(db: DbLocation) -> str | None:
    """The ledger's log origin (its checkpoints' name), read from a read-only store."""
    from ledger.store.backends import open_store

    with open_store(db, readonly=True) as store:
        return store.get_meta("origin")


def read_input(name: str, max_bytes: int | None = None, what: str = "document") -> bytes:
    """Bytes of a file argument; ``-`` is standard input. Missing files are NotFound.

    ``max_bytes`` (default: the document size limit) is enforced before the whole input
    is held in memory (``ledger.bounded``), so an oversized file costs nothing.
    """
    from ledger.bounded import DOCUMENT_LIMIT, read_bounded, read_stream
    from ledger.errors import NotFound

    limit = DOCUMENT_LIMIT if max_bytes is None else max_bytes
    if name == "-":
        return read_stream(sys.stdin.buffer, limit, what)
    if not Path(name).is_file():
        raise NotFound(f"input file not found, got {name}, expected a readable file")
    return read_bounded(name, limit, what)
