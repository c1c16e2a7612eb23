"""CLI start-up cost against a minimal typer app, in one run.

The floor is the least any typer CLI with provledger's global option pays for a help
page: ``FLOOR_APP``, a typer app with one ``--db`` option and one command, printing its
``--help`` with the same interpreter. Runs, interleaved in every round: the floor, the
import of typer and rich alone (for reference), ``provledger --help``, ``provledger
COMMAND --help`` for every command and sub-command of the command table, and the read
commands ``show`` (human and ``--json``), ``proof inclusion`` and ``stats`` on a ledger.
Each sample is the child's user + system CPU time (``os.wait4``); a case's figure is the
median over the rounds, and its ratio that median over the floor's median in the same
run. Limits: ``--help`` and ``show`` 1.2x (provledger pays for its own commands, no more),
the other help pages 1.5x, the other read commands 2x.

A first round is run and discarded: it writes the bytecode caches (``PYTHONDONTWRITEBYTECODE``
is removed from the children's environment, as an installed CLI has its ``.pyc`` files)
and warms the page cache.

Usage::

    .venv/bin/python scripts/bench_start.py                      # 20,000-object ledger
    .venv/bin/python scripts/bench_start.py --db ledger.db --rounds 15 --json
    .venv/bin/python scripts/bench_start.py --objects 50 --rounds 1    # smoke

Exit status 0 whatever the ratios (a benchmark, not a test); ``--check`` exits 1 when a
case is over its limit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

HELP_LIMIT = 1.5
READ_LIMIT = 2.0
#: ``provledger --help`` and ``show``: the cases a user meets first.
FIRST_LIMIT = 1.2
IMPORT_CODE = "import typer, rich.console"
FLOOR_CODE = IMPORT_CODE  # what scripts/bench.py's start-up rows compare with
#: The floor: a minimal typer app with provledger's global option (``--db``).
FLOOR_APP = '''from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True)


@app.callback()
def root(
    db: Annotated[
        Path | None, typer.Option("--db", help="Ledger file or postgresql:// URL.")
    ] = None,
) -> None:
    """A minimal typer app with provledger's global option."""


@app.command()
def show(ref: str) -> None:
    """Show one object."""
    typer.echo(ref)


app()
'''


@dataclass(frozen=True)
class Case:
    """One command line to time: ``kind`` is "floor", "reference", "help" or "read"."""

    name: str
    argv: tuple[str, ...]
    kind: str


@dataclass
class Result:
    name: str
    kind: str
    argv: list[str]
    samples_ms: list[float] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)
    median_ms: float = 0.0
    min_ms: float = 0.0
    ratio: float = 0.0
    limit: float | None = None
    ok: bool = True


def command_paths(
    table: Mapping[str, Any] | None = None, prefix: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    """Every command and sub-command path of the CLI's table, in table order."""
    from ledger.cli import COMMANDS
    from ledger.cli.lazy import LazySubgroup

    for name, entry in (COMMANDS if table is None else table).items():
        path = (*prefix, name)
        yield path
        if isinstance(entry, LazySubgroup):
            yield from command_paths(entry.commands, path)
            continue
        command = entry.load(name)
        yield from _click_subcommands(command, path)


def _click_subcommands(command: Any, prefix: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield (*prefix, name)
        yield from _click_subcommands(sub, (*prefix, name))


def sample_digest(db: Path) -> str:
    """A VerificationResult near the middle of the log (``show`` then prints its notes)."""
    from ledger.store.sqlite import open_store

    with open_store(db, readonly=True) as store:
        size = store.size()
        if size == 0:
            raise SystemExit(f"error: ledger {db} is empty, expected entries to read")
        fallback = None
        for seq in range(size // 2, size):
            obj = store.get_by_seq(seq)
            if obj is None:
                continue
            fallback = fallback or obj.digest
            if obj.kind == "verification-result":
                return obj.digest
        if fallback is None:
            raise SystemExit(f"error: ledger {db} has no readable entry past seq {size // 2}")
        return fallback


def cases(
    exe: Path, python: Path, db: Path | None, digest: str | None, floor_app: Path
) -> list[Case]:
    """The floor, every help page and (with a ledger) the read commands."""
    found = [
        Case("floor: minimal typer app --help", (str(python), str(floor_app), "--help"), "floor"),
        Case("import typer, rich.console", (str(python), "-c", IMPORT_CODE), "reference"),
    ]
    found.append(Case("--help", (str(exe), "--help"), "help"))
    for path in command_paths():
        found.append(Case(" ".join(path) + " --help", (str(exe), *path, "--help"), "help"))
    if db is not None and digest is not None:
        at = ("--db", str(db))
        found += [
            Case("show DIGEST", (str(exe), "show", digest, *at), "read"),
            Case("show DIGEST --json", (str(exe), "show", digest, *at, "--json"), "read"),
            Case("proof inclusion DIGEST", (str(exe), "proof", "inclusion", digest, *at), "read"),
            Case("stats", (str(exe), "stats", *at), "read"),
        ]
    return found


def child_cpu_ms(argv: Sequence[str], env: Mapping[str, str]) -> tuple[float, int]:
    """User + system CPU of one child process, in ms, and its exit code."""
    proc = subprocess.Popen(
        list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=dict(env)
    )
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (usage.ru_utime + usage.ru_stime) * 1000.0, proc.returncode


def child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed CLI runs from its .pyc files
    env.setdefault("PROVLEDGER_NO_PROGRESS", "1")
    env["COLUMNS"] = "80"
    return env


def measure(found: Sequence[Case], rounds: int, warmup: bool = True) -> list[Result]:
    """Run every case once per round, interleaved; summarise against the floor."""
    env = child_env()
    results = [Result(c.name, c.kind, list(c.argv)) for c in found]
    if warmup:
        for case in found:
            child_cpu_ms(case.argv, env)
    for _ in range(rounds):
        for case, result in zip(found, results, strict=True):
            ms, code = child_cpu_ms(case.argv, env)
            result.samples_ms.append(round(ms, 2))
            result.exit_codes.append(code)
    floor = next(r for r in results if r.kind == "floor")
    floor_ms = statistics.median(floor.samples_ms)
    for result in results:
        result.median_ms = round(statistics.median(result.samples_ms), 2)
        result.min_ms = round(min(result.samples_ms), 2)
        result.ratio = round(result.median_ms / floor_ms, 3) if floor_ms else 0.0
        result.limit = limit_of(result)
        result.ok = all(code == 0 for code in result.exit_codes) and (
            result.limit is None or result.ratio <= result.limit
        )
    return results


def limit_of(result: Result) -> float | None:
    """The case's limit: ``--help`` and ``show`` 1.2x, other help 1.5x, other reads 2x."""
    if result.name in ("--help", "show DIGEST", "show DIGEST --json"):
        return FIRST_LIMIT
    return {"help": HELP_LIMIT, "read": READ_LIMIT}.get(result.kind)


def build_ledger(work: Path, objects: int, seed: int, exe: Path) -> Path:
    """``provledger init`` + ``import jsonl`` of the benchmark corpus + ``checkpoint``."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_corpus import write_corpus

    from ledger.trust.keys import Ed25519Signer

    db = work / "ledger.db"

    def cli(*args: str) -> None:
        subprocess.run([str(exe), *args, "--db", str(db)], stdout=subprocess.DEVNULL, check=True)

    cli("init")
    signer = Ed25519Signer.from_file(db.with_name(db.name + ".authority.key"))
    jsonl = work / "corpus.jsonl"
    write_corpus(jsonl, objects, seed, signer)
    cli("import", "jsonl", str(jsonl))
    cli("checkpoint")
    return db


def report(results: Sequence[Result]) -> str:
    lines = [f"{'case':44} {'median ms':>10} {'min ms':>8} {'ratio':>6} {'limit':>6}  ok"]
    for r in results:
        limit = "" if r.limit is None else f"{r.limit:.1f}x"
        lines.append(
            f"{r.name[:44]:44} {r.median_ms:10.1f} {r.min_ms:8.1f} {r.ratio:5.2f}x {limit:>6}"
            f"  {'yes' if r.ok else 'NO'}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> dict[str, Any]:
    python = Path(args.python)
    exe = Path(args.provledger) if args.provledger else python.parent / "provledger"
    with tempfile.TemporaryDirectory(prefix="bench-start-") as tmp:
        db = args.db
        if db is None and args.objects > 0:
            db = build_ledger(Path(tmp), args.objects, args.seed, exe)
        digest = None if db is None else sample_digest(db)
        floor_app = Path(tmp) / "floor_app.py"
        floor_app.write_text(FLOOR_APP, "utf-8")
        found = cases(exe, python, db, digest, floor_app)
        results = measure(found, args.rounds, warmup=not args.no_warmup)
        entries = None
        if db is not None:
            from ledger.store.sqlite import open_store

            with open_store(db, readonly=True) as store:
                entries = store.size()
    return {
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
            "load_average": list(os.getloadavg()),
        },
        "versions": {name: version(name) for name in ("typer", "rich", "provledger")},
        "rounds": args.rounds,
        "ledger_entries": entries,
        "limits": {"first": FIRST_LIMIT, "help": HELP_LIMIT, "read": READ_LIMIT},
        "floor": FLOOR_APP,
        "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]),
        "results": [asdict(r) for r in results],
        "ok": all(r.ok for r in results),
    }


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", type=Path, help="an existing ledger for the read commands")
    parser.add_argument(
        "--objects",
        type=int,
        default=20_000,
        help="without --db: build a ledger of this many corpus objects (0: no read commands)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=9, help="samples per case (median)")
    parser.add_argument("--no-warmup", action="store_true", help="skip the discarded first round")
    parser.add_argument("--python", default=sys.executable, help="interpreter of the floor")
    parser.add_argument("--provledger", help="the CLI (default: next to --python)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 when a case is over its limit")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    result = run(args)
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2) + "\n")
    else:
        print(report([Result(**r) for r in result["results"]]))
        print(
            f"typer {result['versions']['typer']}, rich {result['versions']['rich']},"
            f" {result['rounds']} rounds, ledger entries {result['ledger_entries']},"
            f" load average {result['machine']['load_average'][0]:.2f}"
        )
    return 1 if args.check and not result["ok"] else 0


if __name__ == "__main__":
    sys.exit(main())
